/**
 * @module runtime/position
 * The body of a position (what a step boundary records besides the fixed
 * columns) and the chain hash over a whole position.
 */
import type { PositionItem, StoredPosition } from '../contracts/checkpointer.js';
import { chainHash } from '../codec/hash.js';

/**
 * How one field changed at a position.
 * - `set`: the field's new value (replace and custom reducers, runtime fields).
 * - `append`: this position appended `append` items (stored once, as items).
 * - `reset`: the field's whole list is the `reset` items this position stored (a
 *   fork patch, or a rebase onto a new schema version).
 */
export type FieldChange = { set: unknown } | { append: number } | { reset: number };

/** Why a position exists. */
export type PositionKind = 'input' | 'step' | 'fork';

/** A record or effect a step used, as referenced from its position (the values live in the ledger). */
export interface CallRef {
  key: string;
  name: string;
  /** sha256 of the encoded outcome. */
  digest: string;
}

/** A conflict kept under `onConflict: 'lastWins'`. */
export interface ConflictRecord {
  field: string;
  writers: string[];
  kept: string;
}

export interface PositionBody {
  kind: PositionKind;
  /** Nodes that ran in this step, in graph order. */
  nodes: string[];
  attempt: number;
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
}

/** The canonical text of a position's fixed columns, as the chain hashes it. */
export function positionHeader(p: Omit<StoredPosition, 'body' | 'hash'>): string {
  return `${p.ns}|${p.seq}|${p.parent ?? ''}|${p.segment}|${p.step}|${p.schemaVersion}|${p.createdAt}`;
}

/** The chain hash of a position, given its parent's hash. */
export function hashPosition(p: Omit<StoredPosition, 'hash'>, items: readonly PositionItem[], parentHash: string): string {
  return chainHash({ parentHash, header: positionHeader(p), body: p.body, items });
}
