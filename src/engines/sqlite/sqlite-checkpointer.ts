/**
 * @module engines/sqlite/sqlite-checkpointer
 * The thread log on SQLite. Every write that changes a thread is one IMMEDIATE
 * transaction fenced by the lease (`run_id` + `epoch` in the WHERE clause), so
 * two processes on one file can never both advance a thread.
 */
import {
  BaseCheckpointer,
  extendsHead,
  judgeCompaction,
  noneCompacted,
  noRowsRemoved,
  wakeAtFor,
  type CommitRefusal,
  type CompactionRefusal,
  type ConsumptionToStore,
  type HeldThread,
  type SignalToStore,
} from '../../checkpointer/base-checkpointer.js';
import type {
  AcquireRequest,
  AttemptFailure,
  CheckpointerCapabilities,
  ClaimRequest,
  CompactionRequest,
  CompactionResult,
  HeadAnchor,
  ItemPack,
  LeaseHolderQuery,
  PendingWrite,
  PositionItem,
  RangeItem,
  SeqRange,
  StepCommit,
  StoredPosition,
  ThreadPatch,
} from '../../contracts/checkpointer.js';
import { comparePositionItems } from '../../contracts/checkpointer.js';
import type { DeleteThreadResult, LeaseOwner, SignalQuery, StoredSignal, ThreadLease, ThreadRecord, ThreadStatus } from '../../contracts/threads.js';
import { ITEMS_AS_STORED, PACKS_AS_STORED, storedForm, textOfStored, type StoredItemPack } from '../../crypto/sealed-bytes.js';
import { crashPoint } from '../../internal/crash-points.js';
import { holderIsLive } from '../../internal/lease.js';
import { PIN_NAMESPACE_STORED, threadPinSuffix } from '../../internal/pins.js';
import {
  heldOf,
  POSITION_COLUMNS,
  positionOf,
  rangeClause,
  secondOf,
  SIGNAL_COLUMNS,
  signalOf,
  threadOf,
  type HolderRow,
  type PositionRow,
  type SignalRow,
  type ThreadRow,
} from '../../internal/sql-rows.js';
import { filtersOnTimeOnly, type NormalizedThreadQuery } from '../../internal/thread-query.js';
import type { SqliteConnection, SqliteQueries } from './connection.js';
import { writeCommittedEffects } from './sqlite-ledger.js';

/** A thread row as SQLite returns it. */
interface SqliteThreadRow extends ThreadRow, HolderRow {
  tid: number;
  attempts: number;
  lease_until: number | null;
  epoch: number;
}

/** A thread row with its root namespace's anchored head and the head's time. */
const THREAD_SELECT = `
  SELECT t.*, h.seq AS head, h.created_at AS head_at FROM cairn_threads t
  LEFT JOIN cairn_heads h ON h.tid = t.tid AND h.ns = ''`;

/**
 * The statements of a step commit and of a head read, built once: `stmt()` finds a
 * prepared statement by its text, and a text built anew at every call is hashed anew.
 */
/**
 * The position columns as reads select them: the chain hash as lowercase hex, made by
 * SQLite. A BLOB column costs a Buffer per row and then its hex string; a history page
 * of 1,000 positions read 1 ms (a quarter of its query) faster this way.
 */
const POSITION_SELECT = 'seq, parent, segment, step, schema_version, created_at, body, lower(hex(hash)) AS hash';

const SQL = {
  threadById: `${THREAD_SELECT} WHERE t.id = ?`,
  fence: 'SELECT tid FROM cairn_threads WHERE id = ? AND run_id = ? AND epoch = ?',
  fenceAndHead: `SELECT t.tid, t.status, t.wake_at, t.last_signal, t.updated_at, t.updated_second, (SELECT seq FROM cairn_heads WHERE tid = t.tid AND ns = ?) AS head
    FROM cairn_threads t WHERE t.id = ? AND t.run_id = ? AND t.epoch = ?`,
  insertPosition: `INSERT INTO cairn_positions (tid, ns, ${POSITION_COLUMNS}, items_from, items_count) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  insertAnchor: 'INSERT INTO cairn_heads (tid, ns, seq, hash, created_at) VALUES (?, ?, ?, ?, ?)',
  moveAnchor: 'UPDATE cairn_heads SET seq = ?, hash = ?, created_at = ? WHERE tid = ? AND ns = ?',
  head: 'SELECT h.seq, h.hash, h.base_seq, h.base_hash FROM cairn_threads t JOIN cairn_heads h ON h.tid = t.tid AND h.ns = ? WHERE t.id = ?',
  position: `SELECT ${POSITION_SELECT} FROM cairn_positions WHERE tid = ? AND ns = ? AND seq = ?`,
  positions: `SELECT ${POSITION_SELECT} FROM cairn_positions WHERE tid = ? AND ns = ? AND seq BETWEEN ? AND ? ORDER BY seq`,
  take: 'UPDATE cairn_threads SET run_id = ?, owner_pid = ?, owner_host = ?, lease_until = ?, epoch = epoch + 1 WHERE tid = ?',
  signal: `SELECT ${SIGNAL_COLUMNS} FROM cairn_signals WHERE tid = ? AND id = ?`,
  // One text for every filter: an absent one is NULL and matches everything.
  signals: `SELECT ${SIGNAL_COLUMNS} FROM cairn_signals
    WHERE tid = ? AND (? IS NULL OR name = ?) AND (? IS NULL OR (consumed_by IS NULL) = ?) AND (? IS NULL OR consumed_by = ?) ORDER BY id`,
} as const;

/** A thread's `updatedAt` in SQL, as {@link threadOf} computes it (the row is not rewritten per step). */
const UPDATED_AT = 'max(t.updated_at, coalesce(h.created_at, 0))';

/** A fresh tid: above every live one and every deleted one (see migration 3), so a tid is never reused. */
const NEXT_TID = `(SELECT max(coalesce((SELECT max(tid) FROM cairn_threads), 0), coalesce((SELECT last FROM cairn_thread_tids WHERE id = 0), 0)) + 1)`;

/** The items of the positions a query selects as `p`: the rowid range each position points at. */
const ITEMS_OF_POSITIONS = 'cairn_items i ON i.rowid BETWEEN p.items_from AND p.items_from + p.items_count - 1';

/**
 * Tables whose rows belong to one thread, by tid: the cascade of `deleteThread` (items
 * go first, found through the positions that point at them).
 */
const THREAD_TABLES = {
  positions: 'cairn_positions',
  snapshots: 'cairn_snapshots',
  pendingWrites: 'cairn_pending',
  failures: 'cairn_failures',
  ledgerEntries: 'cairn_ledger',
  signals: 'cairn_signals',
} as const;

/** A metadata value fewer threads than this have is listed from its rows in cairn_thread_metadata; a commoner one is tested on each thread walked. */
const FEW_WITH_VALUE = 2_000;

type MetadataValue = string | number | boolean | null;

/** The test of one metadata equality on a cairn_thread_metadata row `m` (json_each's type and atom), with its parameters. */
function metadataRow(key: string, value: MetadataValue): { sql: string; params: unknown[] } {
  if (value === null) return { sql: "m.key = ? AND m.atom IS NULL AND m.type = 'null'", params: [key] };
  if (typeof value === 'boolean') return { sql: 'm.key = ? AND m.atom = ? AND m.type = ?', params: [key, value ? 1 : 0, value ? 'true' : 'false'] };
  if (typeof value === 'number') return { sql: "m.key = ? AND m.atom = ? AND m.type IN ('integer', 'real')", params: [key, value] };
  return { sql: "m.key = ? AND m.atom = ? AND m.type = 'text'", params: [key, value] };
}

/**
 * One metadata equality as a clause on thread `t`. A value few threads have (`few`)
 * gives the list of those threads (an index range, then the page sorted from them); a
 * common one is tested on each thread the id or time walk passes (an index probe),
 * which finds a page long before the walk ends. Either way no JSON is parsed.
 */
function metadataClause(key: string, value: MetadataValue, few: boolean): { sql: string; params: unknown[] } {
  const row = metadataRow(key, value);
  if (few) return { sql: `t.tid IN (SELECT m.tid FROM cairn_thread_metadata m WHERE ${row.sql})`, params: row.params };
  return { sql: `EXISTS (SELECT 1 FROM cairn_thread_metadata m WHERE ${row.sql} AND m.tid = t.tid)`, params: row.params };
}

/** Which of the query's metadata values fewer than FEW_WITH_VALUE threads have (counted up to that, on the index). */
function fewMetadataValues(db: SqliteQueries, q: NormalizedThreadQuery): Set<number> {
  const few = new Set<number>();
  q.metadata.forEach(([key, value], i) => {
    const row = metadataRow(key, value);
    const count = db.stmt(`SELECT count(*) FROM (SELECT 1 FROM cairn_thread_metadata m WHERE ${row.sql} LIMIT ?)`).pluck().get(...row.params, FEW_WITH_VALUE) as number;
    if (count < FEW_WITH_VALUE) few.add(i);
  });
  return few;
}

/**
 * The WHERE clauses of a thread query's filters (paging aside), with their parameters;
 * `updatedAt` is the SQL of the thread's updatedAt in the query that uses them;
 * `fewValues` the indexes of the metadata values few threads have ({@link fewMetadataValues}).
 */
function threadFilters(q: NormalizedThreadQuery, updatedAt: string, fewValues: Set<number>, byTime = false): { where: string[]; params: unknown[] } {
  const where: string[] = [];
  const params: unknown[] = [];
  const add = (sql: string, ...values: unknown[]) => {
    where.push(sql);
    params.push(...values);
  };
  // Walking down a time index, a status or kind is tested on each row (the unary + keeps
  // SQLite off their index): a status index would hand over every thread of that status
  // (70,000 completed ones) to sort by time, where the walk stops after a page of them.
  const few = byTime ? '+' : '';
  if (q.statuses) add(`${few}t.status IN (${q.statuses.map(() => '?').join(', ')})`, ...q.statuses);
  if (q.kinds) add(`${few}t.kind IN (${q.kinds.map(() => '?').join(', ')})`, ...q.kinds);
  if (q.tenant === null) add('t.tenant IS NULL');
  else if (q.tenant !== undefined) add('t.tenant = ?', q.tenant);
  q.metadata.forEach(([key, value], i) => {
    const clause = metadataClause(key, value, fewValues.has(i));
    add(clause.sql, ...clause.params);
  });
  // A range, not LIKE: the id index finds the first match and stops past the last.
  if (q.ids) add('t.id >= ?', q.ids.from);
  if (q.ids?.to) add('t.id < ?', q.ids.to);
  if (q.created.from !== null) add('t.created_at >= ?', q.created.from);
  if (q.created.to !== null) add('t.created_at < ?', q.created.to);
  // The row's second of updatedAt bounds it on both sides, read from the row alone (a
  // thread of another second needs no head); the exact time decides within the second.
  // Walking down the time index it also bounds the walk; otherwise the unary + keeps
  // SQLite to the walk it was given.
  const second = byTime ? 't.updated_second' : '+t.updated_second';
  if (q.updated.from !== null) add(`${second} >= ? AND ${updatedAt} >= ?`, secondOf(q.updated.from), q.updated.from);
  if (q.updated.to !== null) add(`${second} <= ? AND ${updatedAt} < ?`, secondOf(q.updated.to), q.updated.to);
  return { where, params };
}

/**
 * Fewer threads than this updated in the seconds since an `updatedAt: { from }` are
 * listed in id order from their ids in cairn_threads_by_second (sorted, then looked up
 * until the page is full); with more, walking the id index meets a page of them sooner.
 */
const FEW_SINCE = 50_000;

/** Whether fewer than FEW_SINCE threads were updated in `from`'s second or later (counted on the index, up to that). */
function fewUpdatedSince(db: SqliteQueries, from: number): boolean {
  const count = db.stmt('SELECT count(*) FROM (SELECT 1 FROM cairn_threads WHERE updated_second >= ? LIMIT ?)').pluck().get(secondOf(from), FEW_SINCE) as number;
  return count < FEW_SINCE;
}

/** `(seq BETWEEN ? AND ?) OR ...` for the ranges (never empty), with its parameters. */
const seqRanges = (ranges: readonly SeqRange[], column = 'seq') => rangeClause(ranges, column, () => '?');

/**
 * The thread log contract on SQLite. `sqlite(...)` builds one; construct it yourself
 * only to put it on a {@link SqliteConnection} shared with other parts.
 *
 * @example `const cp = new SqliteCheckpointer(new SqliteConnection('./cairn.db'));`
 */
export class SqliteCheckpointer extends BaseCheckpointer {
  readonly engine = 'sqlite';
  /** No wake-ups: SQLite cannot tell another process that a thread became runnable (workers poll). */
  readonly capabilities: CheckpointerCapabilities = { claims: true, wakeUps: false, leaseExpiry: true, leaseHolders: true, itemPacks: true };

  constructor(private readonly conn: SqliteConnection) {
    super(conn.lifecycle);
  }

  private threadRow(q: SqliteQueries, threadId: string): SqliteThreadRow | undefined {
    return q.stmt(SQL.threadById).get(threadId) as SqliteThreadRow | undefined;
  }

  /** The thread's tid while `lease` holds it, else undefined. */
  private fence(q: SqliteQueries, lease: ThreadLease): number | undefined {
    return q.stmt(SQL.fence).pluck().get(lease.threadId, lease.runId, lease.epoch) as number | undefined;
  }

  protected async readThread(threadId: string): Promise<ThreadRecord | null> {
    const row = this.conn.read('getThread', (q) => this.threadRow(q, threadId));
    return row ? threadOf(row) : null;
  }

  protected async queryThreads(q: NormalizedThreadQuery): Promise<ThreadRecord[]> {
    if (q.order === 'id') {
      return this.conn.read('listThreads', (db) => {
        const { where, params } = threadFilters(q, UPDATED_AT, fewMetadataValues(db, q));
        if (q.after) {
          where.push('t.id > ?');
          params.push(q.after.id);
        }
        const filter = where.length ? `WHERE ${where.join(' AND ')}` : '';
        // Prepared per call, not cached: the filters make many shapes of this text.
        if (q.updated.from !== null && fewUpdatedSince(db, q.updated.from)) return this.pageOfRecent(db, q, secondOf(q.updated.from), where, params);
        const sql = `${THREAD_SELECT} ${filter} ORDER BY t.id LIMIT ?`;
        return (db.prepare(sql).all(...params, q.limit ?? -1) as SqliteThreadRow[]).map(threadOf);
      });
    }
    // updatedAt is the later of the row's time and the root head's; the row keeps its
    // second (updated_second), so the walk goes down cairn_threads_by_second and sorts
    // each second's threads by their exact updatedAt, stopping with the page.
    return this.conn.read('listThreads', (db) => {
      const { where, params } = threadFilters(q, UPDATED_AT, fewMetadataValues(db, q), true);
      if (q.after) {
        // The second bounds the index range; the rest picks within its first time.
        where.push(`t.updated_second <= ? AND ${UPDATED_AT} <= ? AND (${UPDATED_AT} < ? OR t.id > ?)`);
        params.push(secondOf(q.after.updatedAt!), q.after.updatedAt, q.after.updatedAt, q.after.id);
      }
      const sql = `${THREAD_SELECT} ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY t.updated_second DESC, ${UPDATED_AT} DESC, t.id LIMIT ?`;
      return (db.prepare(sql).all(...params, q.limit ?? -1) as SqliteThreadRow[]).map(threadOf);
    });
  }

  /**
   * An id-ordered page of threads updated in `second` or later, when few are: their ids,
   * read from cairn_threads_by_second alone (no row touched) and sorted, are taken a batch
   * at a time, and each batch's threads are looked up and filtered, until the page is
   * full. Walking the id index instead could pass every older thread first. A batch is
   * two pages and a few ids (the exact time drops only threads of `second` itself) and
   * grows fourfold while the page is short; with filters other than time, which may
   * keep few of them, one batch takes every id.
   */
  private pageOfRecent(db: SqliteQueries, q: NormalizedThreadQuery, second: number, where: string[], params: unknown[]): ThreadRecord[] {
    const candidates = db.stmt('SELECT id FROM cairn_threads INDEXED BY cairn_threads_by_second WHERE updated_second >= ? AND id > ? ORDER BY id LIMIT ?').pluck();
    const lookup = db.prepare(`${THREAD_SELECT} WHERE t.id IN (SELECT value FROM json_each(?)) ${where.map((w) => `AND ${w}`).join(' ')} ORDER BY t.id`);
    const page: SqliteThreadRow[] = [];
    let after = q.after?.id ?? ''; // every id sorts after ''
    const { limit } = q;
    let batch = limit === null || !filtersOnTimeOnly(q) ? -1 : 2 * limit + 16;
    for (;;) {
      const ids = candidates.all(second, after, batch) as string[];
      if (ids.length) page.push(...(lookup.all(JSON.stringify(ids), ...params) as SqliteThreadRow[]));
      if (batch < 0 || ids.length < batch || page.length >= limit!) break;
      after = ids.at(-1)!;
      batch *= 4;
    }
    return (limit === null ? page : page.slice(0, limit)).map(threadOf);
  }

  protected async removeThread(threadId: string, judge: (held: HeldThread | null) => DeleteThreadResult | null): Promise<DeleteThreadResult> {
    // One IMMEDIATE transaction: nothing can take the lease, commit or write the ledger
    // between the check and the last delete (ledger writes find the thread by id in the
    // statement that inserts, so a late one finds no thread rather than leaving an orphan).
    return this.conn.write('deleteThread', (q) => {
      const row = q.stmt('SELECT tid, status, run_id, owner_pid, owner_host, lease_until, epoch FROM cairn_threads WHERE id = ?').get(threadId) as
        | (HolderRow & { tid: number })
        | undefined;
      const now = Date.now();
      const verdict = judge(row ? heldOf(row, now) : null);
      if (verdict || !row) return verdict ?? { deleted: false, threadId, reason: 'missing' };

      const removed = noRowsRemoved();
      removed.items = q.stmt(`DELETE FROM cairn_items WHERE rowid IN (SELECT i.rowid FROM cairn_positions p JOIN ${ITEMS_OF_POSITIONS} WHERE p.tid = ? AND p.items_count > 0)`).run(row.tid).changes;
      for (const [kind, table] of Object.entries(THREAD_TABLES) as [keyof typeof THREAD_TABLES, string][]) {
        removed[kind] = q.stmt(`DELETE FROM ${table} WHERE tid = ?`).run(row.tid).changes;
      }
      q.stmt('DELETE FROM cairn_heads WHERE tid = ?').run(row.tid);
      q.stmt('DELETE FROM cairn_item_packs WHERE tid = ?').run(row.tid);
      // The thread's pins, live or already unpinned (a tombstone row), and their overwrite records.
      const suffix = threadPinSuffix(threadId);
      const pinKeys = 'ns = ? AND substr(key, ?) = ?';
      const pin = [PIN_NAMESPACE_STORED, -suffix.length, suffix];
      removed.pins = q
        .stmt(`SELECT count(*) FROM cairn_store WHERE ${pinKeys} AND deleted = 0 AND (expires_at IS NULL OR expires_at > ?)`)
        .pluck()
        .get(...pin, now) as number;
      q.stmt(`DELETE FROM cairn_store_overwrites WHERE ${pinKeys}`).run(...pin);
      q.stmt(`DELETE FROM cairn_store WHERE ${pinKeys}`).run(...pin);
      q.stmt('INSERT INTO cairn_thread_tids (id, last) VALUES (0, ?) ON CONFLICT (id) DO UPDATE SET last = max(last, excluded.last)').run(row.tid);
      q.stmt('DELETE FROM cairn_threads WHERE tid = ?').run(row.tid);
      return { deleted: true, threadId, removed };
    });
  }

  protected async readFailures(threadId: string): Promise<AttemptFailure[]> {
    const rows = this.conn.read('listFailures', (q) => {
      const tid = q.tid(threadId);
      return tid === undefined ? [] : (q.stmt('SELECT body FROM cairn_failures WHERE tid = ? ORDER BY id').pluck().all(tid) as string[]);
    });
    return rows.map((body) => JSON.parse(body) as AttemptFailure);
  }

  protected async acquire(threadId: string, request: AcquireRequest, admit: (held: HeldThread | null) => 'create' | 'take'): Promise<ThreadLease> {
    const { owner, leaseMs } = request;
    return this.conn.write('acquireThread', (q) => {
      const now = Date.now();
      const row = this.threadRow(q, threadId);
      if (admit(row ? heldOf(row, now) : null) === 'create') {
        const create = request.create!;
        const createdAt = create.createdAt ?? now;
        const updatedAt = create.updatedAt ?? createdAt;
        q.stmt(
          `INSERT INTO cairn_threads (tid, id, kind, status, attempts, tenant, metadata, run_id, owner_pid, owner_host, lease_until, epoch, created_at, updated_at, updated_second)
           VALUES (${NEXT_TID}, ?, ?, 'running', 0, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?)`,
        ).run(threadId, create.kind, create.tenant, JSON.stringify(create.metadata), owner.runId, owner.pid, owner.host, now + leaseMs, createdAt, updatedAt, secondOf(updatedAt));
      } else {
        q.stmt(SQL.take).run(owner.runId, owner.pid, owner.host, now + leaseMs, row!.tid);
      }
      const granted = this.threadRow(q, threadId)!;
      return { threadId, runId: owner.runId, epoch: granted.epoch, expiresAt: granted.lease_until!, thread: threadOf(granted) };
    });
  }

  protected override async claim(request: ClaimRequest): Promise<ThreadLease[]> {
    const { owner, leaseMs, limit, graph } = request;
    return this.conn.write('claimThreads', (q) => {
      const now = Date.now();
      // The IMMEDIATE transaction makes claims from several processes take turns.
      // Running threads, and waiting ones that are due (through the partial index of waiting threads).
      const columns = 'tid, id, run_id, owner_pid, owner_host, lease_until, updated_at';
      const ofGraph = `(? IS NULL OR json_extract(metadata, '$.graph') = ?)`;
      const candidates = q
        .stmt(
          `SELECT ${columns} FROM cairn_threads WHERE status = 'running' AND ${ofGraph}
           UNION ALL
           SELECT ${columns} FROM cairn_threads WHERE status = 'waiting' AND wake_at <= ? AND ${ofGraph}
           ORDER BY updated_at, tid`,
        )
        .all(graph ?? null, graph ?? null, now, graph ?? null, graph ?? null) as { tid: number; id: string; run_id: string | null; owner_pid: number | null; owner_host: string | null; lease_until: number | null }[];
      const leases: ThreadLease[] = [];
      for (const row of candidates) {
        if (leases.length >= limit) break;
        if (holderIsLive({ runId: row.run_id, pid: row.owner_pid, host: row.owner_host, leaseUntil: row.lease_until }, now)) continue;
        q.stmt(SQL.take).run(owner.runId, owner.pid, owner.host, now + leaseMs, row.tid);
        const granted = this.threadRow(q, row.id)!;
        leases.push({ threadId: row.id, runId: owner.runId, epoch: granted.epoch, expiresAt: granted.lease_until!, thread: threadOf(granted) });
      }
      return leases;
    });
  }

  protected override async earliestLeaseExpiry(graph: string | undefined): Promise<number | null> {
    // A waiting thread held by a lease is claimable once both its time and the lease are up.
    const ofGraph = `(? IS NULL OR json_extract(metadata, '$.graph') = ?)`;
    const at = this.conn.read('nextLeaseExpiry', (q) =>
      q
        .stmt(
          `SELECT min(at) FROM (
             SELECT lease_until AS at FROM cairn_threads WHERE status = 'running' AND run_id IS NOT NULL AND ${ofGraph}
             UNION ALL
             SELECT CASE WHEN run_id IS NULL THEN wake_at ELSE max(wake_at, coalesce(lease_until, wake_at)) END
             FROM cairn_threads WHERE status = 'waiting' AND wake_at IS NOT NULL AND ${ofGraph})`,
        )
        .pluck()
        .get(graph ?? null, graph ?? null, graph ?? null, graph ?? null),
    ) as number | null;
    return at ?? null;
  }

  protected override async listHolders(query: LeaseHolderQuery): Promise<LeaseOwner[]> {
    // Through the status index: the threads a run can hold are running or waiting, a
    // small part of a database that keeps its finished threads.
    const rows = this.conn.read('leaseHolders', (q) =>
      q
        .stmt(
          `SELECT DISTINCT run_id, owner_pid FROM cairn_threads
           WHERE status IN ('running', 'waiting') AND run_id IS NOT NULL AND owner_host = ? AND owner_pid IS NOT NULL AND lease_until > ?
             AND (? IS NULL OR json_extract(metadata, '$.graph') = ?)`,
        )
        .all(query.host, Date.now(), query.graph ?? null, query.graph ?? null),
    ) as { run_id: string; owner_pid: number }[];
    return rows.map((row) => ({ runId: row.run_id, pid: row.owner_pid, host: query.host }));
  }

  protected async renew(lease: ThreadLease, leaseMs: number): Promise<number | null> {
    const expiresAt = Date.now() + leaseMs;
    const { changes } = this.conn.write('renewLease', (q) =>
      q.stmt('UPDATE cairn_threads SET lease_until = ? WHERE id = ? AND run_id = ? AND epoch = ?').run(expiresAt, lease.threadId, lease.runId, lease.epoch),
    );
    return changes === 1 ? expiresAt : null;
  }

  protected async release(lease: ThreadLease): Promise<void> {
    this.conn.write('releaseThread', (q) =>
      q
        .stmt('UPDATE cairn_threads SET run_id = NULL, owner_pid = NULL, owner_host = NULL, lease_until = NULL WHERE id = ? AND run_id = ? AND epoch = ?')
        .run(lease.threadId, lease.runId, lease.epoch),
    );
  }

  protected async update(lease: ThreadLease, patch: ThreadPatch): Promise<ThreadRecord | null> {
    return this.conn.write('updateThread', (q) => {
      const held = q.stmt('SELECT tid, status, wake_at, last_signal FROM cairn_threads WHERE id = ? AND run_id = ? AND epoch = ?').get(lease.threadId, lease.runId, lease.epoch) as
        | { tid: number; status: ThreadStatus; wake_at: number | null; last_signal: number }
        | undefined;
      if (!held) return null;
      const { tid } = held;
      const status = patch.status ?? held.status;
      const wakeAt = wakeAtFor(status, patch.wakeAt, held.wake_at, { seen: patch.signalsSeen, newest: held.last_signal, now: Date.now() });
      const updatedAt = patch.updatedAt ?? Date.now();
      const headAt = q.stmt("SELECT created_at FROM cairn_heads WHERE tid = ? AND ns = ''").pluck().get(tid) as number | undefined;
      q.stmt(
        `UPDATE cairn_threads SET status = ?, wake_at = ?, attempts = attempts + ?,
           last_error = CASE WHEN ? THEN ? ELSE last_error END, updated_at = ?, updated_second = ? WHERE tid = ?`,
      ).run(
        status,
        wakeAt,
        patch.attempts ?? 0,
        patch.lastError !== undefined ? 1 : 0,
        patch.lastError ? JSON.stringify(patch.lastError) : null,
        updatedAt,
        secondOf(Math.max(updatedAt, headAt ?? 0)),
        tid,
      );
      if (patch.failure) q.stmt('INSERT INTO cairn_failures (tid, body) VALUES (?, ?)').run(tid, JSON.stringify(patch.failure));
      return threadOf(this.threadRow(q, lease.threadId)!);
    });
  }

  protected async commit(lease: ThreadLease, commit: StepCommit): Promise<CommitRefusal | undefined> {
    const { position, items } = commit;
    return this.conn.write('commitStep', (q) => {
      // The IMMEDIATE transaction holds SQLite's write lock, so nothing can take the
      // lease or add a position between these reads and the inserts below.
      // The fence and the namespace's head in one statement.
      const held = q.stmt(SQL.fenceAndHead).get(position.ns, lease.threadId, lease.runId, lease.epoch) as
        | { tid: number; status: string; wake_at: number | null; last_signal: number; updated_at: number; updated_second: number; head: number | null }
        | undefined;
      if (!held) return { reason: 'lease' } as const;
      const { tid, head } = held;
      if (!extendsHead(commit, head)) return { reason: 'head', head } as const;
      // The items first, in (field, index) order, so that rowid order is index order
      // within each field (getItems reads them in rowid order); the position records
      // where they start.
      const hash = Buffer.from(position.hash, 'hex');
      let itemsFrom: number | bigint | null = null;
      if (items.length) {
        const insert = q.stmt('INSERT INTO cairn_items (tid, ns, field, seq, idx, body) VALUES (?, ?, ?, ?, ?, ?)');
        // The runtime hands them over sorted (it hashed them in that order); other callers may not.
        const ordered = inOrder(items) ? items : [...items].sort(comparePositionItems);
        for (const item of ordered) {
          const { lastInsertRowid } = insert.run(tid, position.ns, item.field, position.seq, item.index, storedForm(item.text));
          itemsFrom ??= lastInsertRowid;
        }
      }
      q.stmt(SQL.insertPosition).run(
        tid,
        position.ns,
        position.seq,
        position.parent,
        position.segment,
        position.step,
        position.schemaVersion,
        position.createdAt,
        storedForm(position.body),
        hash,
        itemsFrom,
        items.length,
      );
      // The anchor moves with the head: an update in place once it exists (a plain update
      // by key costs a third of an upsert), an insert for the namespace's first position.
      if (head === null) q.stmt(SQL.insertAnchor).run(tid, position.ns, position.seq, hash, position.createdAt);
      else q.stmt(SQL.moveAnchor).run(position.seq, hash, position.createdAt, tid, position.ns);
      if (commit.snapshot !== undefined) {
        q.stmt('INSERT INTO cairn_snapshots (tid, ns, seq, body) VALUES (?, ?, ?, ?)').run(tid, position.ns, position.seq, storedForm(commit.snapshot));
        crashPoint('inside-snapshot');
      }
      if (position.parent !== null) {
        q.stmt('DELETE FROM cairn_pending WHERE tid = ? AND ns = ? AND base_seq = ?').run(tid, position.ns, position.parent);
      }
      if (commit.effects?.length) writeCommittedEffects(q, tid, commit.effects);
      if (commit.packs?.length) {
        const insert = q.stmt('INSERT OR REPLACE INTO cairn_item_packs (tid, ns, field, from_seq, to_seq, count, body) VALUES (?, ?, ?, ?, ?, ?, ?)');
        for (const pack of commit.packs) insert.run(tid, position.ns, pack.field, pack.fromSeq, pack.toSeq, pack.count, storedForm(pack.text));
      }
      // The thread row changes only when the status or the wake time does (start and end
      // of a run, a wait), or when the thread's updatedAt, which the new head's time may
      // move, enters another second (at most once a second).
      if (position.ns === '') {
        const now = Date.now();
        const wakeAt = wakeAtFor(commit.status, commit.wakeAt ?? null, null, { seen: commit.signalsSeen, newest: held.last_signal, now });
        if (held.status !== commit.status || held.wake_at !== wakeAt) {
          q.stmt('UPDATE cairn_threads SET status = ?, wake_at = ?, updated_at = ?, updated_second = ? WHERE tid = ?').run(
            commit.status,
            wakeAt,
            now,
            secondOf(Math.max(now, position.createdAt)),
            tid,
          );
        } else {
          const second = secondOf(Math.max(held.updated_at, position.createdAt));
          if (second !== held.updated_second) q.stmt('UPDATE cairn_threads SET updated_second = ? WHERE tid = ?').run(second, tid);
        }
      }
      return undefined;
    });
  }

  protected async insertSignal(threadId: string, signal: SignalToStore): Promise<StoredSignal | null> {
    return this.conn.write('sendSignal', (q) => {
      // One update counts the id up and makes a waiting thread due (the IMMEDIATE transaction keeps other senders out).
      const now = Date.now();
      const thread = q
        .stmt(
          `UPDATE cairn_threads SET last_signal = last_signal + 1,
             wake_at = CASE WHEN status = 'waiting' THEN min(coalesce(wake_at, ?), ?) ELSE wake_at END
           WHERE id = ? RETURNING tid, last_signal`,
        )
        .get(now, now, threadId) as { tid: number; last_signal: number } | undefined;
      if (!thread) return null;
      const id = thread.last_signal;
      q.stmt('INSERT INTO cairn_signals (tid, id, name, payload, sent_at) VALUES (?, ?, ?, ?, ?)').run(thread.tid, id, signal.name, signal.payload, signal.sentAt);
      return { threadId, id, name: signal.name, payload: signal.payload, sentAt: signal.sentAt, consumedBy: null, consumedAt: null };
    });
  }

  protected async readSignals(threadId: string, query: SignalQuery): Promise<StoredSignal[]> {
    const { name = null, consumedBy = null } = query;
    const pending = query.pending === undefined ? null : query.pending ? 1 : 0;
    const rows = this.conn.read('listSignals', (q) => {
      const tid = q.tid(threadId);
      if (tid === undefined) return [];
      return q.stmt(SQL.signals).all(tid, name, name, pending, pending, consumedBy, consumedBy) as SignalRow[];
    });
    return rows.map((row) => signalOf(threadId, row));
  }

  protected async markConsumed(lease: ThreadLease, consumption: ConsumptionToStore): Promise<StoredSignal | 'lease' | 'missing'> {
    return this.conn.write('consumeSignal', (q) => {
      const tid = this.fence(q, lease);
      if (tid === undefined) return 'lease';
      const row = q.stmt(SQL.signal).get(tid, consumption.id) as SignalRow | undefined;
      if (!row) return 'missing';
      if (row.consumed_by !== null) return signalOf(lease.threadId, row);
      q.stmt('UPDATE cairn_signals SET consumed_by = ?, consumed_at = ? WHERE tid = ? AND id = ?').run(consumption.by, consumption.consumedAt, tid, consumption.id);
      return signalOf(lease.threadId, { ...row, consumed_by: consumption.by, consumed_at: consumption.consumedAt });
    });
  }

  protected async writeSnapshot(lease: ThreadLease, snapshot: { ns: string; seq: number; text: string }): Promise<'stored' | 'lease' | 'position'> {
    return this.conn.write('putSnapshot', (q) => {
      const tid = this.fence(q, lease);
      if (tid === undefined) return 'lease';
      const exists = q.stmt('SELECT 1 FROM cairn_positions WHERE tid = ? AND ns = ? AND seq = ?').pluck().get(tid, snapshot.ns, snapshot.seq);
      if (exists === undefined) return 'position';
      q.stmt('INSERT OR REPLACE INTO cairn_snapshots (tid, ns, seq, body) VALUES (?, ?, ?, ?)').run(tid, snapshot.ns, snapshot.seq, storedForm(snapshot.text));
      return 'stored';
    });
  }

  protected async writePending(lease: ThreadLease, write: PendingWrite): Promise<boolean> {
    return this.conn.write('putPendingWrite', (q) => {
      const tid = this.fence(q, lease);
      if (tid === undefined) return false;
      q.stmt('INSERT OR REPLACE INTO cairn_pending (tid, ns, base_seq, task, body) VALUES (?, ?, ?, ?, ?)').run(tid, write.ns, write.baseSeq, write.task, write.body);
      return true;
    });
  }

  protected async readPendingWrites(threadId: string, ns: string, baseSeq: number): Promise<PendingWrite[]> {
    const rows = this.conn.read('getPendingWrites', (q) => {
      const tid = q.tid(threadId);
      return tid === undefined ? [] : (q.stmt('SELECT task, body FROM cairn_pending WHERE tid = ? AND ns = ? AND base_seq = ? ORDER BY task').all(tid, ns, baseSeq) as { task: string; body: string }[]);
    });
    return rows.map((r) => ({ ns, baseSeq, task: r.task, body: r.body }));
  }

  protected override async readPendingWritesIn(threadId: string, ns: string, range: SeqRange): Promise<PendingWrite[]> {
    const rows = this.conn.read('getPendingWritesIn', (q) => {
      const tid = q.tid(threadId);
      return tid === undefined
        ? []
        : (q.stmt('SELECT base_seq, task, body FROM cairn_pending WHERE tid = ? AND ns = ? AND base_seq BETWEEN ? AND ? ORDER BY base_seq, task').all(tid, ns, range.from, range.to) as {
            base_seq: number;
            task: string;
            body: string;
          }[]);
    });
    return rows.map((r) => ({ ns, baseSeq: r.base_seq, task: r.task, body: r.body }));
  }

  protected async readPosition(threadId: string, ns: string, seq: number): Promise<StoredPosition | null> {
    const row = this.conn.read('getPosition', (q) => {
      const tid = q.tid(threadId);
      return tid === undefined ? undefined : (q.stmt(SQL.position).get(tid, ns, seq) as PositionRow | undefined);
    });
    return row ? positionOf(ns, row) : null;
  }

  protected async readPositions(threadId: string, ns: string, range: SeqRange): Promise<StoredPosition[]> {
    const rows = this.conn.read('getPositions', (q) => {
      const tid = q.tid(threadId);
      return tid === undefined ? [] : (q.stmt(SQL.positions).all(tid, ns, range.from, range.to) as PositionRow[]);
    });
    return rows.map((row) => positionOf(ns, row));
  }

  protected async readHead(threadId: string, ns: string): Promise<HeadAnchor | null> {
    const row = this.conn.read('getHead', (q) => q.stmt(SQL.head).raw().get(ns, threadId)) as [number, Buffer, number | null, Buffer | null] | undefined;
    if (!row) return null;
    const head: HeadAnchor = { seq: row[0], hash: row[1].toString('hex') };
    if (row[2] !== null && row[3] !== null) head.base = { seq: row[2], hash: row[3].toString('hex') };
    return head;
  }

  protected override async compact(lease: ThreadLease, request: CompactionRequest): Promise<CompactionResult | CompactionRefusal> {
    const { ns, base } = request;
    return this.conn.write('compactThread', (q) => {
      const tid = this.fence(q, lease);
      if (tid === undefined) return { refused: 'lease' } as const;
      const anchor = q.stmt('SELECT seq, base_seq FROM cairn_heads WHERE tid = ? AND ns = ?').get(tid, ns) as { seq: number; base_seq: number | null } | undefined;
      const stored = q.stmt('SELECT hash FROM cairn_positions WHERE tid = ? AND ns = ? AND seq = ?').pluck().get(tid, ns, base.seq) as Buffer | undefined;
      const refusal = judgeCompaction(request, anchor?.seq ?? null, anchor?.base_seq ?? null, stored ? stored.toString('hex') : null);
      if (refusal) return refusal;
      const result = noneCompacted();
      // The positions that go, one clause: below the base, or one of the dropped branches'.
      const drop = request.drop ?? [];
      const goes = (column: string) => `(${column} < ?${drop.length ? ` OR ${column} IN (SELECT value FROM json_each(?))` : ''})`;
      const goesParams = drop.length ? [base.seq, JSON.stringify(drop)] : [base.seq];
      result.items += q
        .stmt(`DELETE FROM cairn_items WHERE rowid IN (SELECT i.rowid FROM cairn_positions p JOIN ${ITEMS_OF_POSITIONS} WHERE p.tid = ? AND p.ns = ? AND ${goes('p.seq')} AND p.items_count > 0)`)
        .run(tid, ns, ...goesParams).changes;
      result.positions += q.stmt(`DELETE FROM cairn_positions WHERE tid = ? AND ns = ? AND ${goes('seq')}`).run(tid, ns, ...goesParams).changes;
      result.snapshots += q.stmt(`DELETE FROM cairn_snapshots WHERE tid = ? AND ns = ? AND ${goes('seq')}`).run(tid, ns, ...goesParams).changes;
      // A pack goes with any position it spans.
      q.stmt(
        `DELETE FROM cairn_item_packs WHERE tid = ? AND ns = ? AND (from_seq < ?${drop.length ? ' OR EXISTS (SELECT 1 FROM json_each(?) d WHERE d.value BETWEEN from_seq AND to_seq)' : ''})`,
      ).run(tid, ns, ...goesParams);
      result.pendingWrites += q.stmt(`DELETE FROM cairn_pending WHERE tid = ? AND ns = ? AND ${goes('base_seq')}`).run(tid, ns, ...goesParams).changes;
      if (request.ledger) result.ledgerEntries += q.stmt(`DELETE FROM cairn_ledger WHERE tid = ? AND ns = ? AND ${goes('seq')}`).run(tid, ns, ...goesParams).changes;
      for (const child of request.dropNamespaces ?? []) {
        const had = q.stmt('SELECT 1 FROM cairn_heads WHERE tid = ? AND ns = ? UNION SELECT 1 FROM cairn_positions WHERE tid = ? AND ns = ?').pluck().get(tid, child, tid, child);
        if (had === undefined) continue;
        result.namespaces++;
        result.items += q
          .stmt(`DELETE FROM cairn_items WHERE rowid IN (SELECT i.rowid FROM cairn_positions p JOIN ${ITEMS_OF_POSITIONS} WHERE p.tid = ? AND p.ns = ? AND p.items_count > 0)`)
          .run(tid, child).changes;
        result.positions += q.stmt('DELETE FROM cairn_positions WHERE tid = ? AND ns = ?').run(tid, child).changes;
        result.snapshots += q.stmt('DELETE FROM cairn_snapshots WHERE tid = ? AND ns = ?').run(tid, child).changes;
        result.pendingWrites += q.stmt('DELETE FROM cairn_pending WHERE tid = ? AND ns = ?').run(tid, child).changes;
        if (request.ledger) result.ledgerEntries += q.stmt('DELETE FROM cairn_ledger WHERE tid = ? AND ns = ?').run(tid, child).changes;
        q.stmt('DELETE FROM cairn_heads WHERE tid = ? AND ns = ?').run(tid, child);
        q.stmt('DELETE FROM cairn_item_packs WHERE tid = ? AND ns = ?').run(tid, child);
      }
      const putSnapshot = q.stmt('INSERT OR REPLACE INTO cairn_snapshots (tid, ns, seq, body) SELECT ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM cairn_positions WHERE tid = ? AND ns = ? AND seq = ?)');
      for (const snapshot of [{ seq: base.seq, text: request.snapshot }, ...(request.snapshots ?? [])]) putSnapshot.run(tid, ns, snapshot.seq, storedForm(snapshot.text), tid, ns, snapshot.seq);
      q.stmt('UPDATE cairn_heads SET base_seq = ?, base_hash = ? WHERE tid = ? AND ns = ?').run(base.seq, Buffer.from(base.hash, 'hex'), tid, ns);
      return result;
    });
  }

  protected async readNamespaces(threadId: string): Promise<string[]> {
    return this.conn.read('listNamespaces', (q) => {
      const tid = q.tid(threadId);
      if (tid === undefined) return [];
      // Both walk a (tid, ns, ...) primary key (BINARY collation: UTF-8 byte order); the
      // union also names a namespace whose positions are gone but whose anchor is not.
      return q.stmt('SELECT ns FROM cairn_heads WHERE tid = ? UNION SELECT DISTINCT ns FROM cairn_positions WHERE tid = ? ORDER BY ns').pluck().all(tid, tid) as string[];
    });
  }

  protected async readPositionPage(threadId: string, ns: string, page: { beforeSeq?: number; limit?: number }): Promise<StoredPosition[]> {
    const rows = this.conn.read('listPositions', (q) => {
      const tid = q.tid(threadId);
      if (tid === undefined) return [];
      return q
        .stmt(`SELECT ${POSITION_SELECT} FROM cairn_positions WHERE tid = ? AND ns = ? AND seq < ? ORDER BY seq DESC LIMIT ?`)
        .all(tid, ns, page.beforeSeq ?? Number.MAX_SAFE_INTEGER, page.limit ?? -1) as PositionRow[];
    });
    return rows.map((row) => positionOf(ns, row));
  }

  protected async readSnapshot(threadId: string, ns: string, ranges: SeqRange[]): Promise<{ seq: number; text: string } | null> {
    const where = seqRanges(ranges);
    const row = this.conn.read('getSnapshot', (q) => {
      const tid = q.tid(threadId);
      if (tid === undefined) return undefined;
      return q.stmt(`SELECT seq, body FROM cairn_snapshots WHERE tid = ? AND ns = ? AND (${where.sql}) ORDER BY seq DESC LIMIT 1`).get(tid, ns, ...where.params) as
        | { seq: number; body: string | Uint8Array }
        | undefined;
    });
    return row ? { seq: row.seq, text: textOfStored(row.body) } : null;
  }

  protected async readSnapshots(threadId: string, ns: string, range: SeqRange): Promise<{ seq: number; text: string }[]> {
    const rows = this.conn.read('getSnapshots', (q) => {
      const tid = q.tid(threadId);
      if (tid === undefined) return [];
      return q.stmt('SELECT seq, body FROM cairn_snapshots WHERE tid = ? AND ns = ? AND seq BETWEEN ? AND ? ORDER BY seq').all(tid, ns, range.from, range.to) as { seq: number; body: string | Uint8Array }[];
    });
    return rows.map((row) => ({ seq: row.seq, text: textOfStored(row.body) }));
  }

  protected async readItems(threadId: string, ns: string, field: string, ranges: SeqRange[]): Promise<string[]> {
    const bodies = this.readStoredItems(threadId, ns, field, ranges);
    for (let i = 0; i < bodies.length; i++) if (typeof bodies[i] !== 'string') bodies[i] = textOfStored(bodies[i]!);
    return bodies as string[];
  }

  /** getItems with sealed items as the bytes they are stored as (see crypto/sealed-bytes). */
  [ITEMS_AS_STORED](threadId: string, ns: string, field: string, ranges: readonly SeqRange[]): Promise<(string | Uint8Array)[]> {
    return this.lifecycle.run(async () => (ranges.length === 0 ? [] : this.readStoredItems(threadId, ns, field, ranges)));
  }

  private readStoredItems(threadId: string, ns: string, field: string, ranges: readonly SeqRange[]): (string | Uint8Array)[] {
    const where = seqRanges(ranges, 'p.seq');
    // Walks the positions in seq order and, inside each, its items by ascending rowid,
    // which commitStep made index order. Ordering by seq alone lets SQLite stream the
    // rows without a sorter per position (3 ms of a 5000-item load).
    return this.conn.read('getItems', (q) => {
      const tid = q.tid(threadId);
      if (tid === undefined) return [];
      return q
        .stmt(`SELECT i.body FROM cairn_positions p JOIN ${ITEMS_OF_POSITIONS} WHERE p.tid = ? AND p.ns = ? AND p.items_count > 0 AND (${where.sql}) AND i.field = ? ORDER BY p.seq`)
        .pluck()
        .all(tid, ns, ...where.params, field) as (string | Uint8Array)[];
    });
  }

  protected override async readItemPacks(threadId: string, ns: string, field: string, ranges: SeqRange[]): Promise<ItemPack[]> {
    return this.readStoredPacks(threadId, ns, field, ranges).map((pack) => ({ ...pack, text: textOfStored(pack.text) }));
  }

  /** getItemPacks with sealed packs as the bytes they are stored as (see crypto/sealed-bytes). */
  [PACKS_AS_STORED](threadId: string, ns: string, field: string, ranges: readonly SeqRange[]): Promise<StoredItemPack[]> {
    return this.lifecycle.run(async () => (ranges.length === 0 ? [] : this.readStoredPacks(threadId, ns, field, ranges)));
  }

  private readStoredPacks(threadId: string, ns: string, field: string, ranges: readonly SeqRange[]): StoredItemPack[] {
    const inside = ranges.map(() => '(from_seq >= ? AND to_seq <= ?)').join(' OR ');
    const bounds = ranges.flatMap((r) => [r.from, r.to]);
    return this.conn.read('getItemPacks', (q) => {
      const tid = q.tid(threadId);
      if (tid === undefined) return [];
      return q
        .stmt(`SELECT field, from_seq AS fromSeq, to_seq AS toSeq, count, body AS text FROM cairn_item_packs WHERE tid = ? AND ns = ? AND field = ? AND (${inside}) ORDER BY from_seq`)
        .all(tid, ns, field, ...bounds) as StoredItemPack[];
    });
  }

  protected async readPositionItems(threadId: string, ns: string, seq: number, fields: readonly string[]): Promise<PositionItem[]> {
    const rows = this.conn.read('getPositionItems', (q) => {
      const tid = q.tid(threadId);
      if (tid === undefined) return [];
      return q.stmt(`SELECT i.field, i.idx, i.body FROM cairn_positions p JOIN ${ITEMS_OF_POSITIONS} WHERE p.tid = ? AND p.ns = ? AND p.seq = ? ORDER BY i.idx`).all(tid, ns, seq) as {
        field: string;
        idx: number;
        body: string | Uint8Array;
      }[];
    });
    return fields.flatMap((field) => rows.filter((r) => r.field === field).map((r) => ({ field, index: r.idx, text: textOfStored(r.body) })));
  }

  protected async readRangeItems(threadId: string, ns: string, range: SeqRange): Promise<RangeItem[]> {
    // Items of one position are consecutive rows inserted in (field, index) order, so
    // rowid order within a position is the order the chain hashes them in.
    const rows = this.conn.read('getRangeItems', (q) => {
      const tid = q.tid(threadId);
      if (tid === undefined) return [];
      return q
        .stmt(`SELECT p.seq, i.field, i.idx, i.body FROM cairn_positions p JOIN ${ITEMS_OF_POSITIONS} WHERE p.tid = ? AND p.ns = ? AND p.items_count > 0 AND p.seq BETWEEN ? AND ? ORDER BY p.seq, i.rowid`)
        .raw()
        .all(tid, ns, range.from, range.to) as [number, string, number, string | Uint8Array][];
    });
    return rows.map(([seq, field, index, body]) => ({ seq, field, index, text: textOfStored(body) }));
  }
}

/** True when `items` are already in (field, index) order: one pass, no copy. */
function inOrder(items: readonly PositionItem[]): boolean {
  for (let i = 1; i < items.length; i++) if (comparePositionItems(items[i - 1]!, items[i]!) > 0) return false;
  return true;
}
