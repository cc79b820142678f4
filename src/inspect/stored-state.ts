/**
 * @module inspect/stored-state
 * A position's state as stored, for tools that do not have the application's code
 * (`cairn show`, a web inspector): the fields written at the position's own schema
 * version, not upcast, with no derived fields. Loaded like any read (the chain from
 * the nearest snapshot checked link by link), so what it returns was proved by the
 * chain. Applications read through `app.getState` / `app.stateAt`, which upcast and
 * add derived fields.
 *
 * @example
 * ```ts
 * const head = await storedState(engine.checkpointer, 'cust_42');
 * const third = await storedState(engine.checkpointer, 'cust_42', { seq: 2 });
 * console.log(third.schemaVersion, third.next, third.state);
 * ```
 */
import type { Checkpointer } from '../contracts/checkpointer.js';
import { PositionNotFoundError } from '../errors.js';
import { materialize } from '../runtime/materialize.js';
import { namespaceHead } from './walk.js';

/** What {@link storedState} returns. */
export interface StoredState {
  thread: string;
  /** The child run's namespace; absent for the root graph. */
  ns?: string;
  seq: number;
  /** The schema version the position was written with: the state's version. */
  schemaVersion: number;
  /** The nodes the next step runs (empty: the run reached END). */
  next: string[];
  /** The stored fields, as stored: not upcast, no derived fields. */
  state: Record<string, unknown>;
}

/** Which position {@link storedState} reads. */
export interface StoredStateOptions {
  /** The checkpoint namespace: '' (default) for the root graph, a child run's for a subgraph's state. */
  ns?: string;
  /** The position; default the namespace's head. */
  seq?: number;
}

/**
 * The state of a thread at position `seq` (default: the head) of namespace `ns`, as
 * stored. ThreadNotFoundError for a missing thread, NamespaceNotFoundError for a
 * namespace it does not have, PositionNotFoundError for a seq it does not have (or a
 * thread with no position yet); CorruptRecordError when the chain does not prove the
 * rows.
 *
 * @example
 * ```ts
 * const { seq, state } = await storedState(engine.checkpointer, 't1', { ns: 'research:0@4' });
 * ```
 */
export async function storedState(cp: Checkpointer, threadId: string, options: StoredStateOptions = {}): Promise<StoredState> {
  const ns = options.ns ?? '';
  const head = await namespaceHead(cp, threadId, ns);
  if (head === null) throw new PositionNotFoundError(threadId, options.seq ?? 0, { engine: cp.engine });
  const loaded = await materialize(cp, undefined, threadId, ns, options.seq ?? head);
  return { thread: threadId, ...(ns ? { ns } : {}), seq: loaded.position.seq, schemaVersion: loaded.storedVersion, next: loaded.body.next, state: loaded.state };
}
