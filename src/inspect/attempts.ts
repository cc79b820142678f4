/**
 * @module inspect/attempts
 * A thread's attempts as a story: every run start and every node retry is one
 * attempt of the same thread, numbered 1, 2, 3... by the thread's
 * attempt counter. {@link threadAttempts} tells, for each attempt, how it ended
 * (the error, the node and the seq it failed at, and when), or what it committed
 * and how the thread stood after it. A pure function over the {@link Checkpointer},
 * shared by `app.attempts()` and `cairn attempts`.
 *
 * How attempts are told apart from the stored rows: a failure is recorded with the
 * attempt that made it; a position carries the attempt of the run that committed it
 * (`attempt` in its body: the run's first attempt), and the seq of a failure is the
 * position its step started from, so a position belongs to the attempt after the
 * newest failure of its run that came before it (seqs grow with time: the head is
 * always the highest). A retry's attempt is the failed one's plus one, and so is a
 * run started again after a failure.
 *
 * @example
 * ```ts
 * const { attempts } = await threadAttempts(engine.checkpointer, 'cust_42');
 * for (const a of attempts) console.log(a.attempt, a.outcome, a.node, a.seq, a.error?.message);
 * ```
 */
import type { AttemptFailure, Checkpointer, StoredPosition } from '../contracts/checkpointer.js';
import type { ThreadRecord } from '../contracts/threads.js';
import { decode } from '../codec/tagged-json.js';
import { ThreadNotFoundError } from '../errors.js';
import type { PositionBody, PositionKind } from '../runtime/position.js';

/**
 * How an attempt ended:
 * - `failed`: it raised an error (a node failure, retried or not, or a run's failure);
 * - `completed` / `interrupted`: its run reached END / paused for a person;
 * - `running`: the newest attempt of a thread that is running (or stopped by a crash and waiting for `run()`);
 * - `needs_attention`: it left an at-most-once effect in doubt;
 * - `waiting`: the newest attempt of a thread whose node waits for a time or a signal;
 * - `continued`: it stopped part-way without an error (a crash, a cancellation, a lost
 *   lease, or `submit()` handing the thread to a worker) and a later attempt went on.
 */
export type AttemptOutcome = 'failed' | 'completed' | 'interrupted' | 'running' | 'needs_attention' | 'waiting' | 'continued';

/** A position an attempt committed. */
export interface CommittedPosition {
  seq: number;
  kind: PositionKind;
  nodes: string[];
  at: number;
}

/** One attempt of a thread. */
export interface AttemptInfo {
  /** 1-based, the thread's attempt counter when it started. */
  attempt: number;
  outcome: AttemptOutcome;
  /**
   * Where it stopped or what it did, comma-joined, or null:
   * - failed: the node that failed;
   * - continued, running: the node(s) it was running when it stopped (or is running):
   *   the next nodes of the last position it committed, or of the newest one before it
   *   when it committed none;
   * - otherwise: the node(s) of the first step it committed.
   */
  node: string | null;
  /** The seq of that position: the one its step started from (failed, continued, running), or the first step it committed. */
  seq: number | null;
  /** The error that ended it (failed, or a thread left failed / needing attention by it), or null. */
  error: { code: string; message: string } | null;
  /** Failed: when. Continued, running: when that position committed. Otherwise: when its first step committed; null when it committed nothing. */
  at: number | null;
  /** Positions it committed, oldest first (input, steps, interrupts, answers). */
  committed: CommittedPosition[];
  /** Every failure recorded with this attempt (parallel tasks may fail in one attempt). */
  failures: AttemptFailure[];
}

/** A thread's story as attempts: every run start and node retry, with how each ended. */
export interface ThreadAttempts {
  thread: ThreadRecord;
  attempts: AttemptInfo[];
}

const BATCH = 500;

/**
 * The story of a thread's attempts, oldest first. Reads every root position's body
 * (in batches of 500) and the thread's failures. Throws ThreadNotFoundError.
 *
 * @example
 * ```ts
 * const { attempts } = await threadAttempts(engine.checkpointer, 'cust_42');
 * for (const a of attempts) console.log(a.attempt, a.outcome, a.error?.message);
 * ```
 */
export async function threadAttempts(cp: Checkpointer, threadId: string): Promise<ThreadAttempts> {
  const thread = await cp.getThread(threadId);
  if (!thread) throw new ThreadNotFoundError(threadId, { engine: cp.engine });
  const failures = await cp.listFailures(threadId);
  const stored: StoredPosition[] = [];
  for (let from = 0; thread.head !== null && from <= thread.head; from += BATCH) {
    stored.push(...(await cp.getPositions(threadId, '', { from, to: Math.min(thread.head, from + BATCH - 1) })));
  }
  return attemptsOf(thread, failures, stored);
}

/**
 * The attempts of `thread` from what {@link threadAttempts} reads: its failures and its
 * root positions, oldest first. For a caller that has read the positions already.
 *
 * @example
 * ```ts
 * const positions = (await cp.listPositions('cust_42', '')).reverse();
 * const { attempts } = attemptsOf(thread, await cp.listFailures('cust_42'), positions);
 * ```
 */
export function attemptsOf(thread: ThreadRecord, failures: AttemptFailure[], stored: readonly StoredPosition[]): ThreadAttempts {
  const threadId = thread.id;
  const positions: (CommittedPosition & { runAttempt: number; next: string[]; interrupts: number })[] = [];
  for (const p of stored) {
    const body = decode<PositionBody>(p.body, `position ${p.seq} of thread ${threadId}`);
    positions.push({
      seq: p.seq,
      kind: body.kind,
      nodes: body.nodes,
      at: p.createdAt,
      runAttempt: body.attempt,
      next: body.next,
      interrupts: body.interrupts?.length ?? 0,
    });
  }

  const attemptOf = (p: (typeof positions)[number]): number => {
    // A fork is written outside any run: it belongs to the attempt it was made in.
    if (p.kind === 'fork') return p.runAttempt;
    let newest = 0;
    for (const f of failures) {
      if (f.attempt !== undefined && f.seq !== undefined && f.seq < p.seq && f.attempt >= p.runAttempt) newest = Math.max(newest, f.attempt);
    }
    return Math.max(p.runAttempt, newest + 1);
  };

  const byAttempt = new Map<number, { committed: (typeof positions)[number][]; failures: AttemptFailure[] }>();
  const entry = (n: number) => {
    let e = byAttempt.get(n);
    if (!e) byAttempt.set(n, (e = { committed: [], failures: [] }));
    return e;
  };
  for (const p of positions) entry(Math.max(1, attemptOf(p))).committed.push(p);
  for (const f of failures) entry(Math.max(1, f.attempt ?? thread.attempts)).failures.push(f);
  const last = Math.max(thread.attempts, 0, ...byAttempt.keys());

  const attempts: AttemptInfo[] = [];
  /** The newest position committed so far, by this attempt or an earlier one. */
  let reached: (typeof positions)[number] | undefined;
  for (let n = 1; n <= last; n++) {
    const { committed, failures: failed } = byAttempt.get(n) ?? { committed: [], failures: [] };
    reached = committed[committed.length - 1] ?? reached;
    // An attempt that stopped without an error stopped inside the step after the last
    // position it reached: that step's nodes and the seq it started from.
    const stoppedAt = (info: AttemptInfo) =>
      Object.assign(info, reached ? { node: reached.next.length ? reached.next.join(',') : null, seq: reached.seq, at: reached.at } : { node: null, seq: null, at: null });
    const firstStep = committed.find((p) => p.nodes.length > 0) ?? committed[0];
    const info: AttemptInfo = {
      attempt: n,
      outcome: 'continued',
      node: firstStep && firstStep.nodes.length ? firstStep.nodes.join(',') : null,
      seq: firstStep?.seq ?? null,
      error: null,
      at: firstStep?.at ?? null,
      committed: committed.map(({ seq, kind, nodes, at }) => ({ seq, kind, nodes, at })),
      failures: failed,
    };
    const ending = failed[failed.length - 1];
    if (ending) {
      // An effect left in doubt ends its attempt needing attention, not failed, once a later attempt went on too.
      const outcome: AttemptOutcome = ending.code === 'ERR_NEEDS_ATTENTION' ? 'needs_attention' : 'failed';
      Object.assign(info, { outcome, node: ending.node ?? null, seq: ending.seq ?? null, error: { code: ending.code, message: ending.message }, at: ending.at });
    } else if (n === last) {
      info.outcome = thread.status;
      if (thread.status === 'running') stoppedAt(info);
      if ((thread.status === 'failed' || thread.status === 'needs_attention') && thread.lastError) {
        const e = thread.lastError;
        Object.assign(info, { node: e.node ?? info.node, seq: e.seq ?? info.seq, error: { code: e.code, message: e.message }, at: e.at });
      }
    } else {
      const end = committed[committed.length - 1];
      if (end && end.interrupts > 0) info.outcome = 'interrupted';
      else if (end && end.next.length === 0) info.outcome = 'completed';
      else stoppedAt(info);
    }
    attempts.push(info);
  }
  return { thread, attempts };
}
