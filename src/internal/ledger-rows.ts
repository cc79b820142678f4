/**
 * @module internal/ledger-rows
 * The ledger's row shape, shared by the SQL engines: the columns they select and
 * the conversion to a {@link LedgerEntry} (PostgreSQL returns bigints as strings,
 * SQLite as numbers; both go through `Number`).
 */
import type { LedgerEntry, NewLedgerEntry, RecordMeta } from '../contracts/ledger.js';

/** A ledger row as the SQL engines select it. */
export interface LedgerRow {
  key: string;
  kind: 'effect' | 'record';
  name: string;
  ns: string;
  seq: number | string;
  node: string;
  task: string;
  call: number;
  args_digest: string | null;
  status: 'intent' | 'done';
  outcome: string | null;
  created_at: number | string;
  completed_at: number | string | null;
  /** JSON of the entry's {@link RecordMeta}, or null (and null on databases from before the column). */
  meta: string | null;
}

/** The columns of {@link LedgerRow}, in order. */
export const LEDGER_COLUMNS = 'key, kind, name, ns, seq, node, task, call, args_digest, status, outcome, created_at, completed_at, meta';

export function ledgerEntryOf(threadId: string, row: LedgerRow): LedgerEntry {
  return {
    threadId,
    key: row.key,
    kind: row.kind,
    name: row.name,
    ns: row.ns,
    seq: Number(row.seq),
    node: row.node,
    task: row.task,
    call: Number(row.call),
    argsDigest: row.args_digest,
    status: row.status,
    outcome: row.outcome,
    createdAt: Number(row.created_at),
    completedAt: row.completed_at === null ? null : Number(row.completed_at),
    ...metaOf(row.meta),
  };
}

/**
 * The entry's meta from its column. Meta describes a record and is never served, so a
 * value that no longer parses (edited by hand) leaves the entry without one rather
 * than making the thread unreadable; its digest-bound outcome is what runs depend on.
 */
function metaOf(text: string | null | undefined): { meta?: RecordMeta } {
  if (text === null || text === undefined) return {};
  try {
    return { meta: JSON.parse(text) as RecordMeta };
  } catch {
    return {};
  }
}

/** The values of a new entry in {@link LEDGER_COLUMNS} order; a done entry's `completedAt` defaults to its `createdAt`. */
export function ledgerRowValues(entry: NewLedgerEntry, status: 'intent' | 'done', outcome: string | null, completedAt: number = entry.createdAt): unknown[] {
  return [
    entry.key,
    entry.kind,
    entry.name,
    entry.ns,
    entry.seq,
    entry.node,
    entry.task,
    entry.call,
    entry.argsDigest,
    status,
    outcome,
    entry.createdAt,
    status === 'done' ? completedAt : null,
    entry.meta ? JSON.stringify(entry.meta) : null,
  ];
}
