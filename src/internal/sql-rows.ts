/**
 * @module internal/sql-rows
 * The rows of the thread log and of the store as both SQL engines read them, and the
 * SQL fragments they share. PostgreSQL returns bigints as strings and hashes as hex text, SQLite numbers
 * and bytes: every conversion goes through `Number` (or hex), so the records they
 * hand out are the same.
 */
import type { SeqRange, StoredPosition } from '../contracts/checkpointer.js';
import type { StoredSignal, ThreadRecord } from '../contracts/threads.js';
import { textOfStored } from '../crypto/sealed-bytes.js';
import type { OverwriteRow, StoredRow } from '../store/rows.js';
import type { HeldThread } from './lease.js';

type Int = number | string;

/** The columns of a thread row a record is made of, with its root namespace's anchored head and that head's time. */
export interface ThreadRow {
  id: string;
  kind: string;
  status: string;
  attempts: Int;
  tenant: string | null;
  metadata: string;
  last_error: string | null;
  /** Null in rows written before migration 6. */
  wake_at: Int | null;
  created_at: Int;
  updated_at: Int;
  head: Int | null;
  /** Creation time of the head position (the thread row is not rewritten per step). */
  head_at: Int | null;
}

/**
 * The whole second of a thread's updatedAt, which both engines keep on the thread row
 * (`updated_second`, SQLite migration 12 and PostgreSQL migration 11) and index in
 * place of the head's millisecond, so that a step commit writes it at most once a
 * second. SQL's integer division of the milliseconds by 1,000, which the migrations
 * use, truncates as `Math.trunc` does; it only ever grows with the time, so a bound on
 * the time bounds the second.
 */
export function secondOf(ms: number): number {
  return Math.trunc(ms / 1000);
}

/** The lease columns of a thread row. */
export interface HolderRow {
  status: string;
  run_id: string | null;
  owner_pid: number | null;
  owner_host: string | null;
  lease_until: Int | null;
  epoch: Int;
}

/** A position row: hash as bytes (SQLite) or hex text (PostgreSQL). */
export interface PositionRow {
  seq: Int;
  parent: Int | null;
  segment: Int;
  step: Int;
  schema_version: number;
  created_at: Int;
  /** Text, or (SQLite) a sealed body as its bytes (crypto/sealed-bytes). */
  body: string | Uint8Array;
  hash: Uint8Array | string;
}

/** The columns of {@link PositionRow}, for a SELECT (PostgreSQL selects the hash as hex). */
export const POSITION_COLUMNS = 'seq, parent, segment, step, schema_version, created_at, body, hash';

const int = (value: Int | null): number | null => (value === null ? null : Number(value));

/** The record a thread row stands for. `updatedAt` counts the head position's time. */
export function threadOf(row: ThreadRow): ThreadRecord {
  return {
    id: row.id,
    kind: row.kind as ThreadRecord['kind'],
    status: row.status as ThreadRecord['status'],
    head: int(row.head),
    attempts: Number(row.attempts),
    tenant: row.tenant,
    metadata: JSON.parse(row.metadata) as Record<string, unknown>,
    lastError: row.last_error === null ? null : (JSON.parse(row.last_error) as ThreadRecord['lastError']),
    wakeAt: int(row.wake_at ?? null),
    createdAt: Number(row.created_at),
    updatedAt: Math.max(Number(row.updated_at), int(row.head_at) ?? 0),
  };
}

/** The thread as the lease rules judge it, at `now` on the engine's clock. */
export function heldOf(row: HolderRow, now: number): HeldThread {
  return {
    status: row.status as HeldThread['status'],
    holder: { runId: row.run_id, pid: row.owner_pid, host: row.owner_host, leaseUntil: int(row.lease_until) },
    epoch: Number(row.epoch),
    now,
  };
}

/** A signal row as both SQL engines select it ({@link SIGNAL_COLUMNS}). */
export interface SignalRow {
  id: Int;
  name: string;
  payload: string;
  sent_at: Int;
  consumed_by: string | null;
  consumed_at: Int | null;
}

/** The columns of {@link SignalRow}, for a SELECT. */
export const SIGNAL_COLUMNS = 'id, name, payload, sent_at, consumed_by, consumed_at';

export function signalOf(threadId: string, row: SignalRow): StoredSignal {
  return {
    threadId,
    id: Number(row.id),
    name: row.name,
    payload: row.payload,
    sentAt: Number(row.sent_at),
    consumedBy: row.consumed_by,
    consumedAt: int(row.consumed_at),
  };
}

export function positionOf(ns: string, row: PositionRow): StoredPosition {
  return {
    ns,
    seq: Number(row.seq),
    parent: int(row.parent),
    segment: Number(row.segment),
    step: Number(row.step),
    schemaVersion: row.schema_version,
    createdAt: Number(row.created_at),
    body: textOfStored(row.body),
    hash: typeof row.hash === 'string' ? row.hash : Buffer.from(row.hash.buffer, row.hash.byteOffset, row.hash.byteLength).toString('hex'),
  };
}

/**
 * `column BETWEEN a AND b OR ...` for non-empty `ranges`, with its parameters in order;
 * `placeholder(i)` writes the i-th of them (`?` for SQLite, `$n::bigint` for PostgreSQL).
 */
export function rangeClause(ranges: readonly SeqRange[], column: string, placeholder: (index: number) => string): { sql: string; params: number[] } {
  return {
    sql: ranges.map((_, i) => `${column} BETWEEN ${placeholder(2 * i)} AND ${placeholder(2 * i + 1)}`).join(' OR '),
    params: ranges.flatMap((r) => [r.from, r.to]),
  };
}

/** A store row as both SQL engines select it (`SELECT *` of `cairn_store`); `deleted` is 0/1 in SQLite. */
export interface StoreSqlRow {
  ns: string;
  key: string;
  value: string;
  version: Int;
  deleted: boolean | number;
  last_write_key: string | null;
  created_at: Int;
  updated_at: Int;
  expires_at: Int | null;
}

/** An overwrite record as both SQL engines select it (`SELECT *` of `cairn_store_overwrites`). */
export interface OverwriteSqlRow {
  id: Int;
  ns: string;
  key: string;
  operation: 'put' | 'delete';
  expected_version: Int;
  overwritten_version: Int | null;
  overwritten_value: string | null;
  overwritten_updated_at: Int | null;
  version: Int;
  at: Int;
}

export function storedRowOf(row: StoreSqlRow): StoredRow {
  return {
    ns: row.ns,
    key: row.key,
    value: row.value,
    version: Number(row.version),
    deleted: row.deleted === true || row.deleted === 1,
    lastWriteKey: row.last_write_key,
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
    expiresAt: int(row.expires_at),
  };
}

export function overwriteRowOf(row: OverwriteSqlRow): OverwriteRow {
  return {
    id: Number(row.id),
    ns: row.ns,
    key: row.key,
    operation: row.operation,
    expectedVersion: Number(row.expected_version),
    overwritten: row.overwritten_version === null ? null : { value: row.overwritten_value!, version: Number(row.overwritten_version), updatedAt: Number(row.overwritten_updated_at) },
    version: Number(row.version),
    at: Number(row.at),
  };
}

/**
 * The upper bound of a label-bounded prefix scan of stored namespaces, or null for the
 * empty prefix. A stored namespace ends with the separator U+001F, so everything under
 * `ns` sorts in [ns, ns with its last U+001F raised to U+0020): bounded at label boundaries.
 */
export function prefixUpperBound(ns: string): string | null {
  return ns === '' ? null : ns.slice(0, -1) + '\u0020';
}
