/**
 * @module inspect/timeline
 * A thread's positions as a tree, a page at a time: each position with the branch
 * it is on (a fork starts a branch from an older position; the branch that leads to
 * the head is marked), the failed attempts of the step that started from it, whether
 * it was committed by a retry, and whether its interrupts or waits are pending now.
 * Child runs stay where they ran: a position lists the namespaces of its step's child
 * runs, whose own timelines are read the same way with `ns`.
 *
 * A page costs what {@link threadHistory} costs for it, plus the thread's failures
 * and one position read per branch above the page's branches: never the whole
 * history. Branches are told by the positions' `segment` (the first seq of the
 * linear run a position belongs to): a new segment starts where a position's parent
 * is not the position before it (a fork).
 *
 * @example
 * ```ts
 * const page = await threadTimeline(engine.checkpointer, 'post', { limit: 50 });
 * for (const p of page.positions) console.log(p.seq, p.branch, p.failed.length ? 'failed here' : '', p.pending ? 'pending' : '');
 * const older = await threadTimeline(engine.checkpointer, 'post', { beforeSeq: page.next!, limit: 50 });
 * ```
 */
import type { AttemptFailure, Checkpointer } from '../contracts/checkpointer.js';
import type { ThreadStatus } from '../contracts/threads.js';
import { ThreadNotFoundError } from '../errors.js';
import { positionInfo, type HistoryPage, type PositionInfo } from './history.js';
import { checkNamespace } from './walk.js';

/** A failed attempt of the step that started from a position. */
export interface TimelineFailure {
  attempt: number | null;
  node: string | null;
  code: string;
  message: string;
  at: number;
}

/** One position of a {@link TimelinePage}. */
export interface TimelineEntry extends PositionInfo {
  /** The branch it is on: the seq of the branch's first position (0 for the first branch). */
  branch: number;
  /** Failed attempts of the step that started from this position, oldest first (empty when none failed). */
  failed: TimelineFailure[];
  /** How many attempts of this position's own step failed before it was committed (0: it committed first time). */
  retries: number;
  /** Its interrupts or waits are pending now: it is the namespace's head and the thread is interrupted or waiting. */
  pending: boolean;
}

/** A branch of the tree: a linear run of positions, forked from an older position (or the first branch). */
export interface TimelineBranch {
  /** Its first position's seq: the id entries refer to. */
  start: number;
  /** The position it branches from (its first position's parent), or null for the first branch. */
  forkOf: number | null;
  /** The branch `forkOf` is on, or null. */
  parentBranch: number | null;
  /** Forks between it and the first branch (0 for the first branch). */
  depth: number;
  /** The head is on it, or on a branch forked from it. */
  onHeadPath: boolean;
}

/** A page of {@link threadTimeline}. */
export interface TimelinePage {
  thread: string;
  ns: string;
  status: ThreadStatus;
  /** The namespace's head seq, or null when it has no position. */
  head: number | null;
  /** Newest first, as {@link threadHistory} gives them. */
  positions: TimelineEntry[];
  /** The branches of this page's positions and every branch they fork from. */
  branches: TimelineBranch[];
  /** The `beforeSeq` of the next (older) page, or null after the last. */
  next: number | null;
}

/** Default page size of {@link threadTimeline}. */
const PAGE = 50;

/**
 * A page of the timeline of thread `threadId` (of child run `ns`, if given), newest
 * first. ThreadNotFoundError for a missing thread, NamespaceNotFoundError for a
 * namespace it does not have.
 *
 * @example
 * ```ts
 * const { positions, branches } = await threadTimeline(engine.checkpointer, 'post', { ns: 'research:0@1' });
 * ```
 */
export async function threadTimeline(cp: Checkpointer, threadId: string, options: HistoryPage = {}): Promise<TimelinePage> {
  const thread = await cp.getThread(threadId);
  if (!thread) throw new ThreadNotFoundError(threadId, { engine: cp.engine });
  const ns = options.ns ?? '';
  await checkNamespace(cp, threadId, ns);
  const limit = options.limit ?? PAGE;
  // One more than the page, to tell whether there is a next page.
  const [rows, failures, anchor] = await Promise.all([
    cp.listPositions(threadId, ns, { limit: limit + 1, ...(options.beforeSeq !== undefined ? { beforeSeq: options.beforeSeq } : {}) }),
    cp.listFailures(threadId),
    ns === '' ? Promise.resolve(thread.head === null ? null : { seq: thread.head }) : cp.getHead(threadId, ns),
  ]);
  const page = rows.slice(0, limit);
  const head = anchor?.seq ?? null;
  const paused = thread.status === 'interrupted' || thread.status === 'waiting';

  const bySeq = new Map<number, AttemptFailure[]>();
  for (const f of failures) {
    if (f.ns !== ns || f.seq === undefined) continue;
    const list = bySeq.get(f.seq) ?? [];
    list.push(f);
    bySeq.set(f.seq, list);
  }

  const positions: TimelineEntry[] = page.map((p) => {
    const info = positionInfo(p, threadId);
    const failed = (bySeq.get(p.seq) ?? []).map((f) => ({ attempt: f.attempt ?? null, node: f.node ?? null, code: f.code, message: f.message, at: f.at }));
    // The step that committed this position started from its parent: its failures before this commit were retried.
    // A fork is written by a person, not by a step: the failures before it are another branch's.
    const retries = p.parent === null || info.kind === 'fork' ? 0 : (bySeq.get(p.parent) ?? []).filter((f) => f.at <= p.createdAt).length;
    const pending = paused && p.seq === head && (info.interrupts.length > 0 || (info.waits?.length ?? 0) > 0);
    return { ...info, branch: p.segment, failed, retries, pending };
  });

  const branches = await branchTree(cp, threadId, ns, new Set(page.map((p) => p.segment)), head);
  return { thread: threadId, ns, status: thread.status, head, positions, branches, next: rows.length > limit ? page.at(-1)!.seq : null };
}

/** The branches `starts` and every branch they fork from, up to the first; one position read per branch. */
async function branchTree(cp: Checkpointer, threadId: string, ns: string, starts: Set<number>, head: number | null): Promise<TimelineBranch[]> {
  const found = new Map<number, { forkOf: number | null; parentBranch: number | null }>();
  const resolve = async (start: number): Promise<void> => {
    for (let s: number | null = start; s !== null && !found.has(s); ) {
      const first = await cp.getPosition(threadId, ns, s);
      const forkOf = first?.parent ?? null;
      const parentBranch = forkOf === null ? null : ((await cp.getPosition(threadId, ns, forkOf))?.segment ?? null);
      found.set(s, { forkOf, parentBranch });
      s = parentBranch;
    }
  };
  for (const s of starts) await resolve(s);
  let headBranch: number | null = null;
  if (head !== null) {
    headBranch = (await cp.getPosition(threadId, ns, head))?.segment ?? null;
    if (headBranch !== null) await resolve(headBranch);
  }
  const onPath = new Set<number>();
  for (let b = headBranch; b !== null && !onPath.has(b); b = found.get(b)?.parentBranch ?? null) onPath.add(b);
  const depth = (b: number): number => {
    let d = 0;
    for (let p = found.get(b)?.parentBranch ?? null; p !== null && d < found.size; p = found.get(p)?.parentBranch ?? null) d++;
    return d;
  };
  return [...found]
    .sort(([a], [b]) => a - b)
    .map(([start, { forkOf, parentBranch }]) => ({ start, forkOf, parentBranch, depth: depth(start), onHeadPath: onPath.has(start) }));
}
