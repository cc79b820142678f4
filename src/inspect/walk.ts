/**
 * @module inspect/walk
 * Reading a whole thread for the inspection tools. A thread's positions live in
 * namespaces ('' for the root graph, one per child run), each an independent chain
 * with its own seqs; a tool that means "the whole thread" walks every namespace
 * (`Checkpointer.listNamespaces`) and, in each, every position with this.
 */
import type { Checkpointer, StoredPosition } from '../contracts/checkpointer.js';
import { InvalidOptionError, NamespaceNotFoundError, ThreadNotFoundError } from '../errors.js';

/** Positions read per query. */
const BATCH = 500;

/**
 * Every position of one namespace, ascending by seq, every branch included (forks are
 * branches of one log, below its highest seq). Read a batch at a time, so a long
 * thread is never held in memory at once.
 */
export async function* namespacePositions(cp: Checkpointer, threadId: string, ns: string): AsyncGenerator<StoredPosition> {
  // The namespace's head is its highest seq; positions committed while we read come after it and are left out.
  const [head] = await cp.listPositions(threadId, ns, { limit: 1 });
  if (!head) return;
  for (let from = 0; from <= head.seq; from += BATCH) {
    yield* await cp.getPositions(threadId, ns, { from, to: Math.min(head.seq, from + BATCH - 1) });
  }
}

/** How a position is named in messages: `position 3`, or `position 3 of namespace sub:0@1` for a child run's. */
export function describePosition(ns: string, seq: number): string {
  return ns === '' ? `position ${seq}` : `position ${seq} of namespace ${ns}`;
}

/** The short form for reports: `seq 3` at the root (as before namespaces), `ns sub:0@1 seq 3` in a child run. */
export function seqLabel(ns: string, seq: number): string {
  return ns === '' ? `seq ${seq}` : `ns ${ns} seq ${seq}`;
}

/**
 * The head seq of namespace `ns` of a thread: the thread record's head for the root
 * graph (null while it has no position), the highest seq for a child run's.
 * ThreadNotFoundError for a missing thread; NamespaceNotFoundError, naming the
 * namespaces the thread has, for a child namespace without positions;
 * InvalidOptionError for an `ns` that is not a string. Any string is looked up: a
 * thread written through the LangGraph saver has LangGraph's namespaces, not cairn's.
 *
 * @example
 * ```ts
 * const head = await namespaceHead(engine.checkpointer, 'cust_42', 'research:0@4'); // 7
 * ```
 */
export async function namespaceHead(cp: Checkpointer, threadId: string, ns: string): Promise<number | null> {
  checkNamespaceType(ns);
  const thread = await cp.getThread(threadId);
  if (!thread) throw new ThreadNotFoundError(threadId, { engine: cp.engine });
  if (ns === '') return thread.head;
  return childHead(cp, threadId, ns);
}

/**
 * What {@link namespaceHead} checks of `ns`, for a caller that has read the thread
 * record itself: InvalidOptionError for an `ns` that is not a string,
 * NamespaceNotFoundError for a child namespace without positions. The root namespace
 * ('') always exists.
 */
export async function checkNamespace(cp: Checkpointer, threadId: string, ns: string): Promise<void> {
  checkNamespaceType(ns);
  if (ns !== '') await childHead(cp, threadId, ns);
}

function checkNamespaceType(ns: unknown): asserts ns is string {
  if (typeof ns !== 'string') throw new InvalidOptionError(`the ns option must be a string (a checkpoint namespace; '' for the root graph), got ${JSON.stringify(ns) ?? String(ns)}.`);
}

/** The highest seq of child namespace `ns`; NamespaceNotFoundError, naming the thread's namespaces, when it has none. */
async function childHead(cp: Checkpointer, threadId: string, ns: string): Promise<number> {
  const [head] = await cp.listPositions(threadId, ns, { limit: 1 });
  if (!head) throw new NamespaceNotFoundError(threadId, ns, await cp.listNamespaces(threadId), { engine: cp.engine });
  return head.seq;
}
