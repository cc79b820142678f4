/**
 * @module inspect/history
 * A thread's history: its positions, newest first, each told as what its step did
 * (the nodes, the fields it changed, the recorded outputs and effects it used, the
 * artifacts it wrote, the interrupts it left pending), not as the state it left. A
 * pure function over the {@link Checkpointer}, shared by `app.history()` and
 * `cairn history`, so both give the same entries.
 *
 * @example
 * ```ts
 * const page = await threadHistory(engine.checkpointer, 'cust_42', { limit: 20 });
 * const older = await threadHistory(engine.checkpointer, 'cust_42', { beforeSeq: page.at(-1)!.seq, limit: 20 });
 * ```
 */
import type { ArtifactRef } from '../contracts/artifact-store.js';
import type { Checkpointer } from '../contracts/checkpointer.js';
import { decode } from '../codec/tagged-json.js';
import { ThreadNotFoundError } from '../errors.js';
import type { PendingInterrupt, PositionBody } from '../runtime/position.js';

/** One entry of a thread's history. */
export interface PositionInfo {
  seq: number;
  parent: number | null;
  step: number;
  kind: string;
  nodes: string[];
  next: string[];
  attempt: number;
  schemaVersion: number;
  createdAt: number;
  /** Field name → `set` | `append:n` | `reset:n`. */
  changes: Record<string, string>;
  records: { key: string; name: string }[];
  effects: { key: string; name: string }[];
  /** Artifact refs this position wrote (in set values or appended items). */
  artifacts: ArtifactRef[];
  /** Interrupts pending once this position is the head. */
  interrupts: PendingInterrupt[];
  /** Who wrote a resume or fork position. */
  actor?: string;
  /** Namespaces of the child runs (subgraph nodes) of this step: pass one as `ns` to history or stateAt. */
  children: string[];
  hash: string;
}

/** Which page of a thread's history {@link threadHistory} reads. */
export interface HistoryPage {
  /** The checkpoint namespace: '' (default) for the root graph, a child run's (`research:0@4`) for a subgraph's positions. */
  ns?: string;
  /** Only positions with a lower seq: the last seq of the previous page. */
  beforeSeq?: number;
  /** At most this many positions. */
  limit?: number;
}

/**
 * Positions of the thread (of child run `ns`, if given), newest first (highest seq
 * first, every branch included). ThreadNotFoundError for a missing thread; a
 * namespace the thread does not have reads as no positions.
 *
 * @example
 * ```ts
 * const [latest] = await threadHistory(engine.checkpointer, 'cust_42', { limit: 1 });
 * for (const [field, change] of Object.entries(latest.changes)) console.log(latest.seq, latest.nodes, field, change); // change: 'set', 'append:1'…
 * ```
 */
export async function threadHistory(cp: Checkpointer, threadId: string, options: HistoryPage = {}): Promise<PositionInfo[]> {
  if (!(await cp.getThread(threadId))) throw new ThreadNotFoundError(threadId, { engine: cp.engine });
  const { ns = '', ...range } = options;
  const positions = await cp.listPositions(threadId, ns, range);
  return positions.map((p) => {
    const body = decode<PositionBody>(p.body, `position ${p.seq} of thread ${threadId}`);
    const changes: Record<string, string> = {};
    for (const [name, change] of Object.entries(body.changes)) {
      changes[name] = 'set' in change ? 'set' : 'append' in change ? `append:${change.append}` : `reset:${change.reset}`;
    }
    return {
      seq: p.seq,
      parent: p.parent,
      step: p.step,
      kind: body.kind,
      nodes: body.nodes,
      next: body.next,
      attempt: body.attempt,
      schemaVersion: p.schemaVersion,
      createdAt: p.createdAt,
      changes,
      records: (body.records ?? []).map(({ key, name }) => ({ key, name })),
      effects: (body.effects ?? []).map(({ key, name }) => ({ key, name })),
      artifacts: body.artifacts ?? [],
      interrupts: body.interrupts ?? [],
      ...(body.actor !== undefined ? { actor: body.actor } : {}),
      children: body.children ?? [],
      hash: p.hash,
    };
  });
}
