/**
 * @module inspector/thread-overview
 * `GET /api/threads/:id`: the thread, its attempts and its interrupts at the head, from
 * one read of its root positions (the attempts and the interrupts each need all of them:
 * read twice, and in batches, they were most of the time to open a long thread).
 */
import type { Checkpointer } from '../contracts/checkpointer.js';
import type { ThreadRecord } from '../contracts/threads.js';
import { ThreadNotFoundError } from '../errors.js';
import { attemptsOf, type AttemptInfo } from '../inspect/attempts.js';
import { interruptsOf, type ThreadInterrupts } from '../inspect/history.js';

/** An attempt as the thread page shows it: the positions it committed as a count, not a list. */
export type AttemptSummary = Omit<AttemptInfo, 'committed'> & { positions: number };

/** What `GET /api/threads/:id` answers. */
export interface ThreadOverview {
  thread: ThreadRecord;
  attempts: AttemptSummary[];
  interrupts: ThreadInterrupts;
}

/**
 * The thread, its attempts (as {@link threadAttempts} tells them) and its interrupts at
 * the head (as {@link threadInterrupts}). Throws ThreadNotFoundError.
 *
 * @example
 * ```ts
 * const { thread, attempts, interrupts } = await threadOverview(engine.checkpointer, 'cust_42');
 * ```
 */
export async function threadOverview(cp: Checkpointer, threadId: string): Promise<ThreadOverview> {
  const thread = await cp.getThread(threadId);
  if (!thread) throw new ThreadNotFoundError(threadId, { engine: cp.engine });
  const [failures, newestFirst] = await Promise.all([cp.listFailures(threadId), cp.listPositions(threadId, '')]);
  // As of the record read first: a commit since then is not in its attempt count yet.
  const positions = newestFirst.filter((p) => thread.head !== null && p.seq <= thread.head);
  const { attempts } = attemptsOf(thread, failures, [...positions].reverse());
  return {
    thread,
    // The committed list is the whole history again, which the page pages through /history.
    attempts: attempts.map(({ committed, ...a }) => ({ ...a, positions: committed.length })),
    interrupts: interruptsOf(threadId, positions),
  };
}
