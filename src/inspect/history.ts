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
import type { Checkpointer, StoredPosition } from '../contracts/checkpointer.js';
import { decode } from '../codec/tagged-json.js';
import type { EffectRecoveryDecision, PendingInterrupt, PositionBody } from '../runtime/position.js';
import { namespaceHead } from './walk.js';

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
  /** The effects the step used; `recovery` says how an effect found in doubt was settled (probe found it, or it ran again). */
  effects: { key: string; name: string; recovery?: EffectRecoveryDecision }[];
  /** Artifact refs this position wrote (in set values or appended items). */
  artifacts: ArtifactRef[];
  /** Interrupts pending once this position is the head. */
  interrupts: PendingInterrupt[];
  /** Resume positions: the id of the interrupt this position answered. */
  answered?: string;
  /** Who wrote a resume or fork position. */
  actor?: string;
  /** What the thread waits for once this position is the head (a sleep or a signal), when the runtime recorded any. */
  waits?: WaitInfo[];
  /** Namespaces of the child runs (subgraph nodes) of this step: pass one as `ns` to history or stateAt. */
  children: string[];
  hash: string;
}

/** A wait a position records: a timer (`sleep`, until a time) or a named signal (`signal`). */
export interface WaitInfo {
  id: string;
  node: string;
  task: string;
  kind: 'sleep' | 'signal';
  key: string;
  /** When a sleep ends (ms since the epoch); null for a signal without a timeout. */
  until: number | null;
  name?: string;
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
 * first, every branch included). ThreadNotFoundError for a missing thread;
 * NamespaceNotFoundError for a namespace the thread does not have.
 *
 * @example
 * ```ts
 * const [latest] = await threadHistory(engine.checkpointer, 'cust_42', { limit: 1 });
 * for (const [field, change] of Object.entries(latest.changes)) console.log(latest.seq, latest.nodes, field, change); // change: 'set', 'append:1'…
 * ```
 */
export async function threadHistory(cp: Checkpointer, threadId: string, options: HistoryPage = {}): Promise<PositionInfo[]> {
  const { ns = '', ...range } = options;
  await namespaceHead(cp, threadId, ns);
  const positions = await cp.listPositions(threadId, ns, range);
  return positions.map((p) => positionInfo(p, threadId));
}

/**
 * One stored position as a history entry: its body decoded and told as what its step did.
 *
 * @example
 * ```ts
 * const info = positionInfo((await engine.checkpointer.getPosition('cust_42', '', 3))!, 'cust_42');
 * ```
 */
export function positionInfo(p: StoredPosition, threadId: string): PositionInfo {
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
    effects: (body.effects ?? []).map(({ key, name, recovery }) => ({ key, name, ...(recovery ? { recovery } : {}) })),
    artifacts: body.artifacts ?? [],
    interrupts: body.interrupts ?? [],
    ...(body.answered !== undefined ? { answered: body.answered } : {}),
    ...(body.actor !== undefined ? { actor: body.actor } : {}),
    // Waits are recorded by runtimes that have them; older positions have none.
    ...((body as { waits?: WaitInfo[] }).waits?.length ? { waits: (body as { waits?: WaitInfo[] }).waits! } : {}),
    children: body.children ?? [],
    hash: p.hash,
  };
}

/** An interrupt a resume answered: where it was raised, its payload, and who answered it at which position. */
export interface AnsweredInterrupt extends PendingInterrupt {
  /** The resume position that answered it. */
  answeredAt: number;
  /** Who answered (the resume's actor). */
  actor: string | null;
}

/** What {@link threadInterrupts} returns. */
export interface ThreadInterrupts {
  /** Interrupts pending at the position (what a resume there would answer). */
  pending: PendingInterrupt[];
  /** Interrupts answered at or before the position, oldest first, with who answered them. */
  answered: AnsweredInterrupt[];
}

/**
 * The interrupts of a thread at position `seq` (default the head) of namespace `ns`:
 * those pending there, and those answered on its branch up to it, with the actor of
 * each answer.
 * ThreadNotFoundError for a missing thread, NamespaceNotFoundError for a namespace it does not have.
 *
 * @example
 * ```ts
 * const { pending, answered } = await threadInterrupts(engine.checkpointer, 'post');
 * for (const a of answered) console.log(a.id, a.payload, 'answered by', a.actor);
 * ```
 */
export async function threadInterrupts(cp: Checkpointer, threadId: string, options: { ns?: string; seq?: number } = {}): Promise<ThreadInterrupts> {
  await namespaceHead(cp, threadId, options.ns ?? '');
  // Positions after `seq` are on no branch that leads to it.
  const page = options.seq !== undefined ? { beforeSeq: options.seq + 1 } : {};
  return interruptsOf(threadId, await cp.listPositions(threadId, options.ns ?? '', page), options.seq);
}

/**
 * {@link threadInterrupts} from the namespace's positions (newest first, as
 * `listPositions` gives them), at `seq` (default the newest). For a caller that has
 * read the positions already.
 *
 * @example
 * ```ts
 * const { pending } = interruptsOf('post', await cp.listPositions('post', ''));
 * ```
 */
export function interruptsOf(threadId: string, positions: readonly StoredPosition[], seq?: number): ThreadInterrupts {
  const bySeq = new Map(positions.map((p) => [p.seq, p]));
  const upTo = seq ?? positions[0]?.seq ?? -1;
  // The branch that leads to the position: other branches' answers are not its history.
  const branch: StoredPosition[] = [];
  for (let p = bySeq.get(upTo); p; p = p.parent === null ? undefined : bySeq.get(p.parent)) branch.unshift(p);
  // Only bodies that can hold an interrupt or an answer are decoded (most steps have
  // neither, and decoding every body was most of the cost on a long thread): a body
  // is canonical JSON, where a key is written with its quotes, and a string value
  // cannot hold an unescaped quote, so a body without either text has neither key.
  const bodyOf = (p: StoredPosition): PositionBody | null =>
    p.body.includes('"interrupts"') || p.body.includes('"answered"') ? decode<PositionBody>(p.body, `position ${p.seq} of thread ${threadId}`) : null;
  const raised = new Map<string, PendingInterrupt>();
  const answered: AnsweredInterrupt[] = [];
  let pending: PendingInterrupt[] = [];
  for (const p of branch) {
    const body = bodyOf(p);
    if (p.seq === upTo) pending = body?.interrupts ?? [];
    if (!body) continue;
    for (const i of body.interrupts ?? []) raised.set(i.id, i);
    if (body.answered !== undefined) {
      const i = raised.get(body.answered) ?? { id: body.answered, node: '-', when: 'inside' as const, payload: undefined };
      answered.push({ ...i, answeredAt: p.seq, actor: body.actor ?? null });
    }
  }
  return { pending, answered };
}
