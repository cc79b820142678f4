/**
 * @module inspect/cancel
 * Cancelling a thread from any process, with no graph code: the thread's lease is
 * taken over (`acquireThread` with `takeover`), which fences the run holding it,
 * wherever it runs: the grant's new epoch makes that run's next commit, renewal or
 * thread update throw LeaseLostError and write nothing, so it stops at its next step
 * boundary (the step in progress is not committed; what its calls recorded stays in
 * the ledger, as after a crash). Then the thread is marked `failed` with a
 * {@link ThreadCancelledError} (`ERR_THREAD_CANCELLED`, naming the actor and the
 * reason) as its last error and in its attempt history, and the lease is released.
 * Workers claim only `running` and due `waiting` threads, so none picks it up again;
 * `run({ thread })` starts a new attempt from its last position when a person wants it
 * back. Used by `cairn cancel`, `app.cancel` and the web inspector.
 *
 * @example
 * ```ts
 * const result = await cancelThread(engine, { thread: 'cust_42', actor: 'ana', reason: 'wrong customer' });
 * if (!result.cancelled) console.log(`nothing to cancel: the thread is ${result.status}`);
 * ```
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Engine } from '../contracts/engine.js';
import type { ThreadRecord, ThreadStatus } from '../contracts/threads.js';
import { LEASE_MS } from '../defaults.js';
import { ThreadCancelledError, ThreadNotFoundError } from '../errors.js';

/** Options of {@link cancelThread}. */
export interface CancelThreadOptions {
  thread: string;
  /** Who cancels it (kept in the error). Default `cancel`. */
  actor?: string;
  /** Why, in a person's words (kept in the error). */
  reason?: string;
}

/**
 * What {@link cancelThread} did: cancelled the thread (its record as it is now), or
 * left it as it was because it had already ended (`completed` or `failed`).
 */
export type CancelThreadResult =
  | { cancelled: true; thread: ThreadRecord }
  | { cancelled: false; thread: ThreadRecord; reason: 'status'; status: ThreadStatus };

/** Statuses a cancellation ends: a run under way, or a thread waiting for a time, a signal, a person or a decision. */
const CANCELLABLE: readonly ThreadStatus[] = ['running', 'waiting', 'interrupted', 'needs_attention'];

/**
 * Cancels a thread (see the module documentation): a running holder is fenced and
 * stops at its next step boundary; the thread becomes `failed` with
 * `ERR_THREAD_CANCELLED`. A thread that already ended is reported, not changed.
 * ThreadNotFoundError for a missing thread.
 *
 * @example
 * ```ts
 * import { cancelThread } from 'cairn/inspect';
 * await cancelThread(engine, { thread: 'order_7', actor: 'ops@example.com', reason: 'customer withdrew' });
 * ```
 */
export async function cancelThread(engine: Pick<Engine, 'checkpointer'>, options: CancelThreadOptions): Promise<CancelThreadResult> {
  const cp = engine.checkpointer;
  const { thread: threadId } = options;
  const actor = options.actor ?? 'cancel';
  const before = await cp.getThread(threadId);
  if (!before) throw new ThreadNotFoundError(threadId, { engine: cp.engine });
  // Checked before the takeover too, so that a thread that ended is never fenced for nothing.
  if (!CANCELLABLE.includes(before.status)) return { cancelled: false, thread: before, reason: 'status', status: before.status };
  const lease = await cp.acquireThread(threadId, { owner: { runId: `cancel:${randomUUID()}`, pid: process.pid, host: hostname() }, leaseMs: LEASE_MS, takeover: true });
  try {
    // The status as the grant read it, in its transaction: a run may have ended since.
    const status = lease.thread.status;
    if (!CANCELLABLE.includes(status)) return { cancelled: false, thread: lease.thread, reason: 'status', status };
    const error = new ThreadCancelledError(threadId, actor, options.reason, { engine: cp.engine });
    const at = Date.now();
    const failure = { code: error.code, message: error.message, attempt: lease.thread.attempts, at, ...(lease.thread.head !== null ? { seq: lease.thread.head } : {}) };
    const thread = await cp.updateThread(lease, { status: 'failed', lastError: failure, failure: { ns: '', ...failure } });
    return { cancelled: true, thread };
  } finally {
    await cp.releaseThread(lease);
  }
}
