/**
 * @module runtime/unreleased-leases
 * Leases this process could not give up: a run ended while the database was
 * unreachable (a restart, a killed connection), so its release failed and the
 * thread stays held by this live process until the lease expires. The next run of
 * the thread in this process releases it first (a release is fenced and idempotent),
 * so a rerun once the database is back goes on at once instead of waiting out the
 * lease as ThreadBusyError. Another process's runs wait for the expiry, as they must.
 */
import type { Checkpointer } from '../contracts/checkpointer.js';
import type { ThreadLease } from '../contracts/threads.js';

const unreleased = new WeakMap<Checkpointer, Map<string, ThreadLease>>();

/** Gives `lease` up; when that fails, keeps it for {@link releaseLeftover}. Never throws. */
export async function releaseOrKeep(cp: Checkpointer, lease: ThreadLease): Promise<void> {
  try {
    await cp.releaseThread(lease);
    unreleased.get(cp)?.delete(lease.threadId);
  } catch {
    let held = unreleased.get(cp);
    if (!held) unreleased.set(cp, (held = new Map()));
    held.set(lease.threadId, lease);
  }
}

/** Releases the lease a run of this process left on `threadId` (if any, and if it has not expired); never throws. */
export async function releaseLeftover(cp: Checkpointer, threadId: string): Promise<void> {
  const lease = unreleased.get(cp)?.get(threadId);
  if (!lease) return;
  if (lease.expiresAt <= Date.now()) {
    unreleased.get(cp)?.delete(threadId);
    return;
  }
  await releaseOrKeep(cp, lease);
}
