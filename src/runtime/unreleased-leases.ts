/**
 * @module runtime/unreleased-leases
 * Leases this process could not give up: a run ended while the database was
 * unreachable (a restart, a killed connection), so its release failed and the
 * thread stays held by this live process until the lease expires. The next run of
 * the thread in this process releases it first (a release is fenced and idempotent),
 * so a rerun once the database is back goes on at once instead of waiting out the
 * lease as ThreadBusyError. Another process's runs wait for the expiry, as they must.
 *
 * An acquire whose answer was lost (it may have taken the lease, or not) leaves no lease
 * to release: its owner is kept instead, and the next run of the thread in this process
 * asks as that owner, which the contract grants again (see `Checkpointer.acquireThread`).
 */
import type { Checkpointer } from '../contracts/checkpointer.js';
import type { LeaseOwner, ThreadLease } from '../contracts/threads.js';

const unreleased = new WeakMap<Checkpointer, Map<string, ThreadLease>>();
const unanswered = new WeakMap<Checkpointer, Map<string, LeaseOwner>>();

/** Keeps the owner of an acquire of `threadId` that failed without saying whether it took the lease. */
export function keepOwner(cp: Checkpointer, threadId: string, owner: LeaseOwner): void {
  let owners = unanswered.get(cp);
  if (!owners) unanswered.set(cp, (owners = new Map()));
  owners.set(threadId, owner);
}

/** The owner a failed acquire of `threadId` in this process asked as, if any (forgotten once returned). */
export function takeOwner(cp: Checkpointer, threadId: string): LeaseOwner | undefined {
  const owner = unanswered.get(cp)?.get(threadId);
  unanswered.get(cp)?.delete(threadId);
  return owner;
}

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
