/**
 * @module store/rows
 * The storage-independent heart of every store engine: what a stored row is, what
 * one operation of a transaction asks, and {@link decide}, which turns (operation,
 * current row) into the row to write, a conflict, or nothing. Engines only read
 * rows and write the rows `decide` returns, inside their own transaction, so the
 * rules (versions never backwards, idempotent retries, expiry as absence, lastWins
 * records) are written once and hold the same on every engine.
 *
 * @example
 * ```ts
 * const step = decide(op, await readRowForUpdate(op.ns, op.key), now, 'sqlite', index);
 * if (step.kind === 'write') upsert(step.row);
 * ```
 */
import type { OverwriteRecord, StoreItem, StoreOpResult } from '../contracts/store.js';
import { decode } from '../codec/tagged-json.js';
import { InvalidOptionError, VersionConflictError } from '../errors.js';
import { decodeNamespace } from '../internal/keys.js';

/** A row as engines keep it: deleted and expired items stay as rows so that versions never go backwards. */
export interface StoredRow {
  /** Encoded namespace (see `encodeNamespace`). */
  ns: string;
  key: string;
  /** Tagged JSON text of the value (`null` for a tombstone). */
  value: string;
  version: number;
  deleted: boolean;
  lastWriteKey: string | null;
  createdAt: number;
  updatedAt: number;
  expiresAt: number | null;
}

/** One operation of a transaction, validated and encoded. */
export type PreparedOp =
  | {
      kind: 'put';
      namespace: string[];
      ns: string;
      key: string;
      text: string;
      ifVersion: number | undefined;
      idempotencyKey: string | null;
      /** Lifetime in ms from the transaction's `now`, or null. */
      ttlMs: number | null;
      /** `overwrite`: a version mismatch writes anyway and records what it replaced (lastWins). */
      onConflict: 'reject' | 'overwrite';
    }
  | { kind: 'delete'; namespace: string[]; ns: string; key: string; ifVersion: number | undefined; onConflict: 'reject' | 'overwrite' }
  | { kind: 'check'; namespace: string[]; ns: string; key: string; version: number };

/** An overwrite record before it has an id. */
export interface OverwriteDraft {
  ns: string;
  key: string;
  operation: 'put' | 'delete';
  expectedVersion: number;
  overwritten: { value: string; version: number; updatedAt: number } | null;
  version: number;
  at: number;
}

/** A stored overwrite record. */
export interface OverwriteRow extends OverwriteDraft {
  id: number;
}

/** What one operation does to its row. */
export type Step =
  | { kind: 'keep'; result: StoreOpResult }
  | { kind: 'write'; row: StoredRow; result: StoreOpResult; overwrite: OverwriteDraft | null };

/** The op index of each conflict raised by {@link decide}, so a caller can settle it by the namespace's merge rule. */
export const conflictIndex = new WeakMap<VersionConflictError, number>();

/** True when the row holds a value that has not expired at `now`. */
export function isLive(row: StoredRow | null | undefined, now: number): row is StoredRow {
  return !!row && !row.deleted && (row.expiresAt === null || row.expiresAt > now);
}

export function toItem<T>(row: StoredRow): StoreItem<T> {
  return {
    namespace: decodeNamespace(row.ns),
    key: row.key,
    value: decode<T>(row.value, `store item ${row.key}`),
    version: row.version,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    expiresAt: row.expiresAt,
  };
}

export function toOverwriteRecord(row: OverwriteRow): OverwriteRecord {
  return {
    id: row.id,
    namespace: decodeNamespace(row.ns),
    key: row.key,
    operation: row.operation,
    expectedVersion: row.expectedVersion,
    overwritten: row.overwritten
      ? { value: decode(row.overwritten.value, `overwritten value of ${row.key}`), version: row.overwritten.version, updatedAt: row.overwritten.updatedAt }
      : null,
    version: row.version,
    at: row.at,
  };
}

function conflict(op: PreparedOp, expected: number, actual: number, engine: string, index: number): never {
  const error = new VersionConflictError(op.namespace, op.key, expected, actual, { engine });
  conflictIndex.set(error, index);
  throw error;
}

/**
 * Decides what operation `op` (the `index`-th of its transaction) does to `row`, the
 * item's current row read inside the transaction (locked where the engine needs it).
 * Throws {@link VersionConflictError} on a conflict the op does not overwrite.
 */
export function decide(op: PreparedOp, row: StoredRow | null, now: number, engine: string, index: number): Step {
  const live = isLive(row, now) ? row : null;
  const current = live?.version ?? 0;
  if (op.kind === 'check') {
    if (op.version !== current) conflict(op, op.version, current, engine, index);
    return { kind: 'keep', result: null };
  }
  if (op.kind === 'put') {
    if (live && op.idempotencyKey !== null && live.lastWriteKey === op.idempotencyKey) return { kind: 'keep', result: toItem(live) };
    const mismatch = op.ifVersion !== undefined && op.ifVersion !== current;
    if (mismatch && op.onConflict === 'reject') conflict(op, op.ifVersion!, current, engine, index);
    const next: StoredRow = {
      ns: op.ns,
      key: op.key,
      value: op.text,
      // From the row's version even when deleted or expired: versions never go backwards.
      version: (row?.version ?? 0) + 1,
      deleted: false,
      lastWriteKey: op.idempotencyKey,
      createdAt: live ? live.createdAt : now,
      updatedAt: now,
      expiresAt: op.ttlMs === null ? null : now + op.ttlMs,
    };
    const overwrite: OverwriteDraft | null = mismatch
      ? {
          ns: op.ns,
          key: op.key,
          operation: 'put',
          expectedVersion: op.ifVersion!,
          overwritten: live ? { value: live.value, version: live.version, updatedAt: live.updatedAt } : null,
          version: next.version,
          at: now,
        }
      : null;
    return { kind: 'write', row: next, result: toItem(next), overwrite };
  }
  const mismatch = op.ifVersion !== undefined && op.ifVersion !== current;
  if (mismatch && op.onConflict === 'reject') conflict(op, op.ifVersion!, current, engine, index);
  if (!live) return { kind: 'keep', result: false };
  const tombstone: StoredRow = { ...live, value: 'null', deleted: true, lastWriteKey: null, updatedAt: now, expiresAt: null };
  const overwrite: OverwriteDraft | null = mismatch
    ? {
        ns: op.ns,
        key: op.key,
        operation: 'delete',
        expectedVersion: op.ifVersion!,
        overwritten: { value: live.value, version: live.version, updatedAt: live.updatedAt },
        version: live.version,
        at: now,
      }
    : null;
  return { kind: 'write', row: tombstone, result: true, overwrite };
}

/** Where a page ended, as an opaque string. */
export function encodeCursor(row: { ns: string; key: string }): string {
  return Buffer.from(JSON.stringify([row.ns, row.key]), 'utf8').toString('base64url');
}

export function decodeCursor(cursor: string): { ns: string; key: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    parsed = undefined;
  }
  if (!Array.isArray(parsed) || parsed.length !== 2 || typeof parsed[0] !== 'string' || typeof parsed[1] !== 'string') {
    throw new InvalidOptionError(`cursor ${JSON.stringify(cursor.slice(0, 40))} is not one a search returned: pass the page's cursor as it is.`);
  }
  return { ns: parsed[0], key: parsed[1] };
}
