/**
 * @module runtime/position
 * The body of a position (what a step boundary records besides the fixed
 * columns) and the chain hash over a whole position.
 */
import type { ArtifactRef } from '../contracts/artifact-store.js';
import type { Checkpointer, PositionItem, StoredPosition } from '../contracts/checkpointer.js';
import { chainHash, sha256Hex } from '../codec/hash.js';

/**
 * How one field changed at a position.
 * - `set`: the field's new value (replace and custom reducers, runtime fields).
 * - `append`: this position appended `append` items (stored once, as items).
 * - `reset`: the field's whole list is the `reset` items this position stored (a
 *   fork patch, or a rebase onto a new schema version).
 */
export type FieldChange = { set: unknown } | { append: number } | { reset: number };

/**
 * Why a position exists: a run's `input`, a superstep (`step`), a pause before nodes
 * (`interrupt`), an answer to an interrupt (`resume`), or a new branch (`fork`).
 */
export type PositionKind = 'input' | 'step' | 'interrupt' | 'resume' | 'fork';

/** A pause waiting for `app.resume({ thread, answer | input })`. */
export interface PendingInterrupt {
  /**
   * Unique in the thread: `<seq the step started from>:<task>:call:<n>` for an
   * `await ctx.interrupt(...)` call, `<seq>:<task>:<n>` for `ctx.interruptAfter(...)`,
   * `<seq>:before:<node>` / `<seq>:after:<task>` for declared pauses.
   */
  id: string;
  node: string;
  /** Raised inside the node (`ctx.interrupt`, `ctx.interruptAfter`), or declared before / after it. */
  when: 'inside' | 'before' | 'after';
  payload: unknown;
  /**
   * Set for an `await ctx.interrupt(...)` call, which stopped its node: the task, the
   * call's index in it and the key its answer is recorded under. `resume({ answer })`
   * re-executes the node and the same call resolves to the answer.
   */
  task?: string;
  call?: number;
  key?: string;
  /**
   * Set when the interrupt was raised inside a child run (`node` is then the subgraph
   * node): the child's namespace, and the interrupt's id there. The id here is
   * `<ns>#<child id>`; `resume` with it answers the child, which goes on where it stopped.
   */
  ns?: string;
  child?: string;
  /**
   * For an `await ctx.interrupt(payload, { answer })` call whose schema describes
   * itself (zod 4 does): a JSON Schema (draft 2020-12) of the answer it accepts, so a
   * tool without the graph's code (the web inspector) can build a form for it. The
   * answer is still checked by the schema in code when the thread resumes.
   */
  answerSchema?: Record<string, unknown>;
}

/**
 * A node stopped at `ctx.sleep` / `ctx.sleepUntil` (`sleep`) or `ctx.waitFor` (`signal`):
 * the thread is `waiting` until `until` (a sleep's wake time, a wait's timeout; null
 * for a wait without one) or, for a signal wait, until a signal named `name` arrives.
 */
export interface PendingWait {
  /** Unique in the thread: `<seq the step started from>:<task>:call:<n>` (with a child run's `<ns>#` before it). */
  id: string;
  node: string;
  task: string;
  kind: 'sleep' | 'signal';
  /** Key the wait's result is recorded under once it resolves. */
  key: string;
  call: number;
  /** ms since the epoch. */
  until: number | null;
  /** The signal a `signal` wait takes. */
  name?: string;
  /** Set when the wait is inside a child run (`node` is then the subgraph node). */
  ns?: string;
}

/**
 * A finished task's result as it is stored: in a pending write (a sibling was still
 * running) and in a suspended step (a child run waits for an answer). Reused as it
 * is when the superstep goes on, so the task does not run again.
 */
export interface StoredTaskResult {
  /** The node's writes (for a subgraph node: its child's mapped result). */
  writes: Record<string, unknown> | undefined;
  records: CallRef[];
  effects: CallRef[];
  /** Payloads the node passed to `ctx.interruptAfter`, in call order. */
  interrupts: unknown[];
  /** Store reads it made with validateAtCommit: checked again before the step commits. */
  reads?: { namespace: string[]; key: string; version: number }[];
  /** A subgraph node's child namespace. */
  child?: string;
}

/**
 * A superstep that stopped part-way because a child run was interrupted: the seq it
 * started from (its records, effects and child namespaces stay keyed by it) and the
 * results of its tasks that had finished, which are not run again.
 */
export interface SuspendedStep {
  origin: number;
  tasks: Record<string, StoredTaskResult>;
  /**
   * Answers given to the `await ctx.interrupt(...)` calls of this superstep, by the
   * call's key (codec text): the re-executed call resolves to its answer.
   */
  answers?: Record<string, string>;
}

/** A record or effect a step used, as referenced from its position (the values live in the ledger). */
export interface CallRef {
  key: string;
  name: string;
  /** sha256 of the encoded outcome. */
  digest: string;
  /**
   * Set for an effect whose intent had no outcome when this step ran it (an earlier
   * try stopped between the two): how recovery settled it. `probe_found`: the probe
   * found it, it did not run again; `probe_absent_reran`: the probe did not find it,
   * it ran again with the same key; `reran`: it had no probe and ran again. Told by
   * the try that committed the step: when an earlier try of the same step recovered
   * the effect and then failed elsewhere, the committing try was served its outcome
   * and records none.
   */
  recovery?: EffectRecoveryDecision;
}

/** How the recovery of an effect in doubt went (see {@link CallRef.recovery}). */
export type EffectRecoveryDecision = 'probe_found' | 'probe_absent_reran' | 'reran';

/** A conflict kept under `onConflict: 'lastWins'`. */
export interface ConflictRecord {
  field: string;
  writers: string[];
  kept: string;
}

/** What a position stores (encoded as its body): the step's changes, the next nodes, and what the step recorded. */
export interface PositionBody {
  kind: PositionKind;
  /** Nodes that ran in this step, in graph order. */
  nodes: string[];
  attempt: number;
  /** Epoch of the lease the position was committed under (which run wrote it). */
  lease: number;
  changes: Record<string, FieldChange>;
  /** Nodes of the next superstep; empty when the run reached END. */
  next: string[];
  /** Digest of the run input (input positions), to recognise a repeated run() call. */
  input?: string;
  records?: CallRef[];
  effects?: CallRef[];
  conflicts?: ConflictRecord[];
  /** True for the first position written under a new schema version: it resets every field. */
  rebase?: boolean;
  /** Interrupts pending once this position is the head: the thread is `interrupted` until each is answered. */
  interrupts?: PendingInterrupt[];
  /** Resume positions: the interrupt this position answered. */
  answered?: string;
  /** Resume positions (and forks of them): nodes whose before-interrupts are answered, so the next superstep runs them. */
  cleared?: string[];
  /** Who wrote a resume or fork position. */
  actor?: string;
  /** Artifact refs this position wrote (in set values or appended items): history and GC read them here. */
  artifacts?: ArtifactRef[];
  /** Namespaces of the child runs this step's subgraph nodes ran (or are running, while suspended). */
  children?: string[];
  /** Interrupt and resume positions of a superstep that stopped part-way (an interrupt call, a wait, a child run's pause). */
  suspended?: SuspendedStep;
  /** Waits pending once this position is the head: the thread is `waiting` until one resolves. */
  waits?: PendingWait[];
  /**
   * What each field is at this schema version (role, reducer, schema fingerprint), on
   * the positions that start a version on a branch: a namespace's first position and
   * every rebase. A load compares it with the code's own (`SchemaDriftError`).
   */
  fields?: FieldTable;
  /** Characters of the `set` values this position stored: what a load replays (the snapshot policy's measure). */
  setBytes?: number;
}

/** What a schema version says each field is: `<role> <reducer> <schema fingerprint>` by field name. */
export type FieldTable = Record<string, string>;

/** The canonical text of a position's fixed columns, as the chain hashes it. */
export function positionHeader(p: Omit<StoredPosition, 'body' | 'hash'>): string {
  return `${p.ns}|${p.seq}|${p.parent ?? ''}|${p.segment}|${p.step}|${p.schemaVersion}|${p.createdAt}`;
}

/** The chain hash of a position, given its parent's hash. */
export function hashPosition(p: Omit<StoredPosition, 'hash'>, items: readonly PositionItem[], parentHash: string): string {
  return chainHash({ parentHash, header: positionHeader(p), body: p.body, items });
}

/** Names of the fields a position appended to (or reset), in the order the chain hashes their items. */
export function appendedFields(body: PositionBody): string[] {
  return Object.keys(body.changes)
    .filter((name) => {
      const change = body.changes[name]!;
      return 'append' in change || 'reset' in change;
    })
    .sort();
}

/** Recomputes a stored position's chain hash from its rows (header, body, items) and its parent's hash. */
export async function recomputeHash(cp: Checkpointer, threadId: string, position: StoredPosition, body: PositionBody, parentHash: string): Promise<string> {
  const fields = appendedFields(body);
  const items = fields.length ? await cp.getPositionItems(threadId, position.ns, position.seq, fields) : [];
  return hashPosition(position, items, parentHash);
}

/**
 * Snapshots are not part of the chain (they are derived data), so each carries its
 * own digest: the stored text is the sha256 of the body followed by the body. A
 * snapshot body of {@link SNAPSHOT_FORMAT} also names the chain hashes of its
 * position and of that position's parent and a digest of the items it points at, so
 * a load can trust what it holds without reading the log below it.
 */
export function sealSnapshot(body: string): string {
  return sha256Hex(body) + body;
}

/**
 * The snapshot format loads rely on. Snapshots without it (written by cairn before
 * it) are not trusted by loads, which read the log from its start instead, and are
 * replaced by the next snapshot the thread writes.
 */
export const SNAPSHOT_FORMAT = 2;

/** The body of a sealed snapshot, or null when its digest does not match. */
export function openSnapshot(text: string): string | null {
  const body = text.slice(64);
  return text.length >= 64 && sha256Hex(body) === text.slice(0, 64) ? body : null;
}
