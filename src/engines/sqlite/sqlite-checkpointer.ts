/**
 * @module engines/sqlite/sqlite-checkpointer
 * The thread log on SQLite. Every write that changes a thread is one IMMEDIATE
 * transaction fenced by the lease (`run_id` + `epoch` in the WHERE clause), so
 * two processes on one file can never both advance a thread.
 */
import type {
  AcquireRequest,
  ClaimRequest,
  AttemptFailure,
  Checkpointer,
  CheckpointerCapabilities,
  HeadAnchor,
  PendingWrite,
  PositionItem,
  RangeItem,
  SeqRange,
  StepCommit,
  StoredPosition,
  ThreadPatch,
} from '../../contracts/checkpointer.js';
import { comparePositionItems } from '../../contracts/checkpointer.js';
import type { DeleteThreadOptions, DeleteThreadResult, ThreadLease, ThreadQuery, ThreadRecord, ThreadStatus } from '../../contracts/threads.js';
import { HeadMovedError, LeaseLostError, PositionNotFoundError, ThreadBusyError, ThreadNotFoundError } from '../../errors.js';
import { crashPoint } from '../../internal/crash-points.js';
import { checkThreadId } from '../../internal/keys.js';
import { describeHolder, holderIsLive } from '../../internal/lease.js';
import { PIN_NAMESPACE_STORED, threadPinSuffix } from '../../internal/pins.js';
import { normalizeIfStatus, normalizeThreadQuery } from '../../internal/thread-query.js';
import type { SqliteConnection } from './connection.js';

interface ThreadRow {
  tid: number;
  id: string;
  kind: string;
  status: string;
  head: number | null;
  attempts: number;
  tenant: string | null;
  metadata: string;
  last_error: string | null;
  run_id: string | null;
  owner_pid: number | null;
  owner_host: string | null;
  lease_until: number | null;
  epoch: number;
  created_at: number;
  updated_at: number;
  /** Creation time of the head position (the thread row is not rewritten per step). */
  head_at: number | null;
}

type PositionRow = [number, number | null, number, number, number, number, string, Buffer];

/** A thread row with its root namespace's anchored head and the head's time. */
const THREAD_SELECT = `
  SELECT t.*, h.seq AS head, h.created_at AS head_at FROM cairn_threads t
  LEFT JOIN cairn_heads h ON h.tid = t.tid AND h.ns = ''`;

const POSITION_COLUMNS = 'seq, parent, segment, step, schema_version, created_at, body, hash';

/**
 * The statements of a step commit and of a head read, built once: `stmt()` finds a
 * prepared statement by its text, and a text built anew at every call is hashed anew.
 */
const SQL = {
  threadById: `${THREAD_SELECT} WHERE t.id = ?`,
  fenceAndHead: `SELECT t.tid, t.status, (SELECT seq FROM cairn_heads WHERE tid = t.tid AND ns = ?) AS head
    FROM cairn_threads t WHERE t.id = ? AND t.run_id = ? AND t.epoch = ?`,
  insertPosition: `INSERT INTO cairn_positions (tid, ns, ${POSITION_COLUMNS}, items_from, items_count) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  insertAnchor: 'INSERT INTO cairn_heads (tid, ns, seq, hash, created_at) VALUES (?, ?, ?, ?, ?)',
  moveAnchor: 'UPDATE cairn_heads SET seq = ?, hash = ?, created_at = ? WHERE tid = ? AND ns = ?',
  head: 'SELECT h.seq, h.hash FROM cairn_threads t JOIN cairn_heads h ON h.tid = t.tid AND h.ns = ? WHERE t.id = ?',
  position: `SELECT ${POSITION_COLUMNS} FROM cairn_positions WHERE tid = ? AND ns = ? AND seq = ?`,
  positions: `SELECT ${POSITION_COLUMNS} FROM cairn_positions WHERE tid = ? AND ns = ? AND seq BETWEEN ? AND ? ORDER BY seq`,
} as const;

/** A thread's `updatedAt` in SQL, as {@link toThread} computes it (the row is not rewritten per step). */
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
} as const;

/** One metadata equality as a json_each test: the key and the value are parameters. */
function metadataClause(value: string | number | boolean | null): { sql: string; params: unknown[] } {
  const member = 'EXISTS (SELECT 1 FROM json_each(t.metadata) m WHERE m.key = ? AND';
  if (value === null) return { sql: `${member} m.type = 'null')`, params: [] };
  if (typeof value === 'boolean') return { sql: `${member} m.type = ?)`, params: [value ? 'true' : 'false'] };
  if (typeof value === 'number') return { sql: `${member} m.type IN ('integer', 'real') AND m.atom = ?)`, params: [value] };
  return { sql: `${member} m.type = 'text' AND m.atom = ?)`, params: [value] };
}

function toThread(row: ThreadRow): ThreadRecord {
  return {
    id: row.id,
    kind: row.kind as ThreadRecord['kind'],
    status: row.status as ThreadRecord['status'],
    head: row.head,
    attempts: row.attempts,
    tenant: row.tenant,
    metadata: JSON.parse(row.metadata) as Record<string, unknown>,
    lastError: row.last_error === null ? null : (JSON.parse(row.last_error) as ThreadRecord['lastError']),
    createdAt: row.created_at,
    updatedAt: Math.max(row.updated_at, row.head_at ?? 0),
  };
}

function toPosition(ns: string, row: PositionRow): StoredPosition {
  return {
    ns,
    seq: row[0],
    parent: row[1],
    segment: row[2],
    step: row[3],
    schemaVersion: row[4],
    createdAt: row[5],
    body: row[6],
    hash: row[7].toString('hex'),
  };
}

/** `(seq BETWEEN ? AND ?) OR ...` for n ranges, with its parameters. */
function rangeClause(ranges: SeqRange[], column = 'seq'): { sql: string; params: number[] } {
  if (ranges.length === 0) return { sql: '0', params: [] };
  return {
    sql: ranges.map(() => `${column} BETWEEN ? AND ?`).join(' OR '),
    params: ranges.flatMap((r) => [r.from, r.to]),
  };
}

export class SqliteCheckpointer implements Checkpointer {
  readonly engine = 'sqlite';
  /** No wake-ups: SQLite cannot tell another process that a thread became runnable (workers poll). */
  readonly capabilities: CheckpointerCapabilities = { claims: true, wakeUps: false, leaseExpiry: true };

  constructor(private readonly conn: SqliteConnection) {}

  private threadRow(threadId: string): ThreadRow | undefined {
    return this.conn.stmt(SQL.threadById).get(threadId) as ThreadRow | undefined;
  }

  /** Throws LeaseLostError unless `lease` still holds the thread; returns its tid. */
  private fence(lease: ThreadLease): number {
    const held = this.conn.stmt('SELECT tid FROM cairn_threads WHERE id = ? AND run_id = ? AND epoch = ?').pluck().get(lease.threadId, lease.runId, lease.epoch) as
      | number
      | undefined;
    if (held === undefined) throw new LeaseLostError(lease.threadId, { engine: this.engine });
    return held;
  }

  private write<T>(what: string, fn: () => T): T {
    return this.conn.writeTransaction(what, fn);
  }

  async getThread(threadId: string): Promise<ThreadRecord | null> {
    const row = this.conn.run('getThread', () => this.threadRow(threadId));
    return row ? toThread(row) : null;
  }

  async listThreads(query: ThreadQuery = {}): Promise<ThreadRecord[]> {
    const q = normalizeThreadQuery(query);
    const where: string[] = [];
    const params: unknown[] = [];
    const add = (sql: string, ...values: unknown[]) => {
      where.push(sql);
      params.push(...values);
    };
    if (q.statuses) add(`t.status IN (${q.statuses.map(() => '?').join(', ')})`, ...q.statuses);
    if (q.kinds) add(`t.kind IN (${q.kinds.map(() => '?').join(', ')})`, ...q.kinds);
    if (q.tenant === null) add('t.tenant IS NULL');
    else if (q.tenant !== undefined) add('t.tenant = ?', q.tenant);
    for (const [key, value] of q.metadata) {
      const clause = metadataClause(value);
      add(clause.sql, key, ...clause.params);
    }
    if (q.created.from !== null) add('t.created_at >= ?', q.created.from);
    if (q.created.to !== null) add('t.created_at < ?', q.created.to);
    if (q.updated.from !== null) add(`${UPDATED_AT} >= ?`, q.updated.from);
    // updated_at never exceeds updatedAt, so the indexed column bounds it from above too.
    if (q.updated.to !== null) add(`t.updated_at < ? AND ${UPDATED_AT} < ?`, q.updated.to, q.updated.to);
    if (q.after && q.order === 'updatedAt') add(`(${UPDATED_AT} < ? OR (${UPDATED_AT} = ? AND t.id > ?))`, q.after.updatedAt, q.after.updatedAt, q.after.id);
    else if (q.after) add('t.id > ?', q.after.id);
    const order = q.order === 'updatedAt' ? `${UPDATED_AT} DESC, t.id` : 't.id';
    const sql = `${THREAD_SELECT} ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY ${order} LIMIT ?`;
    params.push(q.limit ?? -1);
    // Prepared per call, not cached: the filters make many shapes of this text.
    return this.conn.run('listThreads', () => (this.conn.prepare(sql).all(...params) as ThreadRow[]).map(toThread));
  }

  async deleteThread(threadId: string, options: DeleteThreadOptions = {}): Promise<DeleteThreadResult> {
    const ifStatus = normalizeIfStatus(options.ifStatus);
    // One IMMEDIATE transaction: nothing can take the lease, commit or write the ledger
    // between the check and the last delete (ledger writes find the thread by id in the
    // statement that inserts, so a late one finds no thread rather than leaving an orphan).
    return this.write('deleteThread', () => {
      const row = this.conn
        .stmt('SELECT tid, status, run_id, owner_pid, owner_host, lease_until, epoch FROM cairn_threads WHERE id = ?')
        .get(threadId) as Pick<ThreadRow, 'tid' | 'status' | 'run_id' | 'owner_pid' | 'owner_host' | 'lease_until' | 'epoch'> | undefined;
      if (!row) return { deleted: false, threadId, reason: 'missing' } as const;
      const now = Date.now();
      const holder = { runId: row.run_id, pid: row.owner_pid, host: row.owner_host, leaseUntil: row.lease_until };
      if (options.lease) {
        if (row.run_id !== options.lease.runId || row.epoch !== options.lease.epoch) throw new LeaseLostError(threadId, { engine: this.engine });
      } else if (holderIsLive(holder, now)) throw new ThreadBusyError(threadId, describeHolder(holder), { engine: this.engine });
      const status = row.status as ThreadStatus;
      if (ifStatus && !ifStatus.includes(status)) return { deleted: false, threadId, reason: 'status', status } as const;

      const removed = { positions: 0, items: 0, snapshots: 0, pendingWrites: 0, failures: 0, ledgerEntries: 0, pins: 0 };
      removed.items = this.conn
        .stmt(`DELETE FROM cairn_items WHERE rowid IN (SELECT i.rowid FROM cairn_positions p JOIN ${ITEMS_OF_POSITIONS} WHERE p.tid = ? AND p.items_count > 0)`)
        .run(row.tid).changes;
      for (const [kind, table] of Object.entries(THREAD_TABLES) as [keyof typeof THREAD_TABLES, string][]) {
        removed[kind] = this.conn.stmt(`DELETE FROM ${table} WHERE tid = ?`).run(row.tid).changes;
      }
      this.conn.stmt('DELETE FROM cairn_heads WHERE tid = ?').run(row.tid);
      // The thread's pins, live or already unpinned (a tombstone row), and their overwrite records.
      const suffix = threadPinSuffix(threadId);
      const pinKeys = 'ns = ? AND substr(key, ?) = ?';
      const pin = [PIN_NAMESPACE_STORED, -suffix.length, suffix];
      removed.pins = this.conn
        .stmt(`SELECT count(*) FROM cairn_store WHERE ${pinKeys} AND deleted = 0 AND (expires_at IS NULL OR expires_at > ?)`)
        .pluck()
        .get(...pin, now) as number;
      this.conn.stmt(`DELETE FROM cairn_store_overwrites WHERE ${pinKeys}`).run(...pin);
      this.conn.stmt(`DELETE FROM cairn_store WHERE ${pinKeys}`).run(...pin);
      this.conn
        .stmt('INSERT INTO cairn_thread_tids (id, last) VALUES (0, ?) ON CONFLICT (id) DO UPDATE SET last = max(last, excluded.last)')
        .run(row.tid);
      this.conn.stmt('DELETE FROM cairn_threads WHERE tid = ?').run(row.tid);
      return { deleted: true, threadId, removed } as const;
    });
  }

  async listFailures(threadId: string): Promise<AttemptFailure[]> {
    const tid = this.conn.tid(threadId);
    if (tid === undefined) return [];
    const rows = this.conn.stmt('SELECT body FROM cairn_failures WHERE tid = ? ORDER BY id').pluck().all(tid) as string[];
    return rows.map((body) => JSON.parse(body) as AttemptFailure);
  }

  async acquireThread(threadId: string, request: AcquireRequest): Promise<ThreadLease> {
    checkThreadId(threadId);
    const { owner, leaseMs } = request;
    return this.write('acquireThread', () => {
      const now = Date.now();
      const row = this.threadRow(threadId);
      if (!row) {
        if (!request.create) throw new ThreadNotFoundError(threadId, { engine: this.engine });
        const createdAt = request.create.createdAt ?? now;
        this.conn
          .stmt(
            `INSERT INTO cairn_threads (tid, id, kind, status, attempts, tenant, metadata, run_id, owner_pid, owner_host, lease_until, epoch, created_at, updated_at)
             VALUES (${NEXT_TID}, ?, ?, 'running', 0, ?, ?, ?, ?, ?, ?, 1, ?, ?)`,
          )
          .run(threadId, request.create.kind, request.create.tenant, JSON.stringify(request.create.metadata), owner.runId, owner.pid, owner.host, now + leaseMs, createdAt, request.create.updatedAt ?? createdAt);
      } else {
        const holder = { runId: row.run_id, pid: row.owner_pid, host: row.owner_host, leaseUntil: row.lease_until };
        if (holderIsLive(holder, now)) throw new ThreadBusyError(threadId, describeHolder(holder), { engine: this.engine });
        this.conn
          .stmt('UPDATE cairn_threads SET run_id = ?, owner_pid = ?, owner_host = ?, lease_until = ?, epoch = epoch + 1 WHERE tid = ?')
          .run(owner.runId, owner.pid, owner.host, now + leaseMs, row.tid);
      }
      const granted = this.threadRow(threadId)!;
      return { threadId, runId: owner.runId, epoch: granted.epoch, expiresAt: granted.lease_until!, thread: toThread(granted) };
    });
  }

  async claimThreads(request: ClaimRequest): Promise<ThreadLease[]> {
    const { owner, leaseMs, limit, graph } = request;
    return this.write('claimThreads', () => {
      const now = Date.now();
      // The IMMEDIATE transaction makes claims from several processes take turns.
      const candidates = this.conn
        .stmt(
          `SELECT tid, id, run_id, owner_pid, owner_host, lease_until FROM cairn_threads
           WHERE status = 'running' AND (? IS NULL OR json_extract(metadata, '$.graph') = ?) ORDER BY updated_at, tid`,
        )
        .all(graph ?? null, graph ?? null) as { tid: number; id: string; run_id: string | null; owner_pid: number | null; owner_host: string | null; lease_until: number | null }[];
      const leases: ThreadLease[] = [];
      for (const row of candidates) {
        if (leases.length >= limit) break;
        if (holderIsLive({ runId: row.run_id, pid: row.owner_pid, host: row.owner_host, leaseUntil: row.lease_until }, now)) continue;
        this.conn
          .stmt('UPDATE cairn_threads SET run_id = ?, owner_pid = ?, owner_host = ?, lease_until = ?, epoch = epoch + 1 WHERE tid = ?')
          .run(owner.runId, owner.pid, owner.host, now + leaseMs, row.tid);
        const granted = this.threadRow(row.id)!;
        leases.push({ threadId: row.id, runId: owner.runId, epoch: granted.epoch, expiresAt: granted.lease_until!, thread: toThread(granted) });
      }
      return leases;
    });
  }

  async nextLeaseExpiry(graph?: string): Promise<number | null> {
    const at = this.conn
      .stmt(`SELECT min(lease_until) FROM cairn_threads WHERE status = 'running' AND run_id IS NOT NULL AND (? IS NULL OR json_extract(metadata, '$.graph') = ?)`)
      .pluck()
      .get(graph ?? null, graph ?? null) as number | null;
    return at ?? null;
  }

  async renewLease(lease: ThreadLease, leaseMs: number): Promise<ThreadLease> {
    const expiresAt = Date.now() + leaseMs;
    const { changes } = this.conn.run('renewLease', () =>
      this.conn.stmt('UPDATE cairn_threads SET lease_until = ? WHERE id = ? AND run_id = ? AND epoch = ?').run(expiresAt, lease.threadId, lease.runId, lease.epoch),
    );
    if (changes !== 1) throw new LeaseLostError(lease.threadId, { engine: this.engine });
    return { ...lease, expiresAt };
  }

  async releaseThread(lease: ThreadLease): Promise<void> {
    this.conn.run('releaseThread', () =>
      this.conn
        .stmt('UPDATE cairn_threads SET run_id = NULL, owner_pid = NULL, owner_host = NULL, lease_until = NULL WHERE id = ? AND run_id = ? AND epoch = ?')
        .run(lease.threadId, lease.runId, lease.epoch),
    );
  }

  async updateThread(lease: ThreadLease, patch: ThreadPatch): Promise<ThreadRecord> {
    return this.write('updateThread', () => {
      const tid = this.fence(lease);
      const now = Date.now();
      this.conn
        .stmt(
          `UPDATE cairn_threads SET status = coalesce(?, status), attempts = attempts + ?,
             last_error = CASE WHEN ? THEN ? ELSE last_error END, updated_at = ? WHERE tid = ?`,
        )
        .run(
          patch.status ?? null,
          patch.attempts ?? 0,
          patch.lastError !== undefined ? 1 : 0,
          patch.lastError ? JSON.stringify(patch.lastError) : null,
          patch.updatedAt ?? now,
          tid,
        );
      if (patch.failure) this.conn.stmt('INSERT INTO cairn_failures (tid, body) VALUES (?, ?)').run(tid, JSON.stringify(patch.failure));
      return toThread(this.threadRow(lease.threadId)!);
    });
  }

  async commitStep(lease: ThreadLease, commit: StepCommit): Promise<void> {
    const { position, items } = commit;
    this.write('commitStep', () => {
      // The IMMEDIATE transaction holds SQLite's write lock, so nothing can take the
      // lease or add a position between these reads and the inserts below.
      // The fence and the namespace's head in one statement.
      const held = this.conn
        .stmt(SQL.fenceAndHead)
        .get(position.ns, lease.threadId, lease.runId, lease.epoch) as { tid: number; status: string; head: number | null } | undefined;
      if (!held) throw new LeaseLostError(lease.threadId, { engine: this.engine });
      const { tid, head } = held;
      if (head !== commit.expectedHead || position.seq !== (head ?? -1) + 1) {
        throw new HeadMovedError(lease.threadId, commit.expectedHead, head, { engine: this.engine });
      }
      // The items first, in (field, index) order, so that rowid order is index order
      // within each field (getItems reads them in rowid order); the position records
      // where they start.
      const hash = Buffer.from(position.hash, 'hex');
      let itemsFrom: number | bigint | null = null;
      if (items.length) {
        const insert = this.conn.stmt('INSERT INTO cairn_items (tid, ns, field, seq, idx, body) VALUES (?, ?, ?, ?, ?, ?)');
        const ordered = items.length > 1 ? [...items].sort(comparePositionItems) : items;
        for (const item of ordered) {
          const { lastInsertRowid } = insert.run(tid, position.ns, item.field, position.seq, item.index, item.text);
          itemsFrom ??= lastInsertRowid;
        }
      }
      this.conn
        .stmt(SQL.insertPosition)
        .run(
          tid,
          position.ns,
          position.seq,
          position.parent,
          position.segment,
          position.step,
          position.schemaVersion,
          position.createdAt,
          position.body,
          hash,
          itemsFrom,
          items.length,
        );
      // The anchor moves with the head: an update in place once it exists (a plain update
      // by key costs a third of an upsert), an insert for the namespace's first position.
      if (head === null) {
        this.conn
          .stmt(SQL.insertAnchor)
          .run(tid, position.ns, position.seq, hash, position.createdAt);
      } else {
        this.conn
          .stmt(SQL.moveAnchor)
          .run(position.seq, hash, position.createdAt, tid, position.ns);
      }
      if (commit.snapshot !== undefined) {
        this.conn.stmt('INSERT INTO cairn_snapshots (tid, ns, seq, body) VALUES (?, ?, ?, ?)').run(tid, position.ns, position.seq, commit.snapshot);
        crashPoint('inside-snapshot');
      }
      if (position.parent !== null) {
        this.conn.stmt('DELETE FROM cairn_pending WHERE tid = ? AND ns = ? AND base_seq = ?').run(tid, position.ns, position.parent);
      }
      // The thread row changes only when the status does (start and end of a run).
      if (position.ns === '' && held.status !== commit.status) {
        this.conn.stmt('UPDATE cairn_threads SET status = ?, updated_at = ? WHERE tid = ?').run(commit.status, Date.now(), tid);
      }
    });
  }

  async putSnapshot(lease: ThreadLease, snapshot: { ns: string; seq: number; text: string }): Promise<void> {
    this.write('putSnapshot', () => {
      const tid = this.fence(lease);
      const exists = this.conn.stmt('SELECT 1 FROM cairn_positions WHERE tid = ? AND ns = ? AND seq = ?').pluck().get(tid, snapshot.ns, snapshot.seq);
      if (exists === undefined) throw new PositionNotFoundError(lease.threadId, snapshot.seq, { engine: this.engine });
      this.conn.stmt('INSERT OR REPLACE INTO cairn_snapshots (tid, ns, seq, body) VALUES (?, ?, ?, ?)').run(tid, snapshot.ns, snapshot.seq, snapshot.text);
    });
  }

  async putPendingWrite(lease: ThreadLease, write: PendingWrite): Promise<void> {
    this.write('putPendingWrite', () => {
      const tid = this.fence(lease);
      this.conn
        .stmt('INSERT OR REPLACE INTO cairn_pending (tid, ns, base_seq, task, body) VALUES (?, ?, ?, ?, ?)')
        .run(tid, write.ns, write.baseSeq, write.task, write.body);
    });
  }

  async getPendingWrites(threadId: string, ns: string, baseSeq: number): Promise<PendingWrite[]> {
    const tid = this.conn.tid(threadId);
    if (tid === undefined) return [];
    const rows = this.conn.stmt('SELECT task, body FROM cairn_pending WHERE tid = ? AND ns = ? AND base_seq = ? ORDER BY task').all(tid, ns, baseSeq) as {
      task: string;
      body: string;
    }[];
    return rows.map((r) => ({ ns, baseSeq, task: r.task, body: r.body }));
  }

  async getPosition(threadId: string, ns: string, seq: number): Promise<StoredPosition | null> {
    const tid = this.conn.tid(threadId);
    if (tid === undefined) return null;
    const row = this.conn.stmt(SQL.position).raw().get(tid, ns, seq) as PositionRow | undefined;
    return row ? toPosition(ns, row) : null;
  }

  async getPositions(threadId: string, ns: string, range: SeqRange): Promise<StoredPosition[]> {
    const tid = this.conn.tid(threadId);
    if (tid === undefined) return [];
    const rows = this.conn
      .stmt(SQL.positions)
      .raw()
      .all(tid, ns, range.from, range.to) as PositionRow[];
    return rows.map((row) => toPosition(ns, row));
  }

  async getHead(threadId: string, ns: string): Promise<HeadAnchor | null> {
    const row = this.conn.run('getHead', () =>
      this.conn
        .stmt(SQL.head)
        .raw()
        .get(ns, threadId),
    ) as [number, Buffer] | undefined;
    return row ? { seq: row[0], hash: row[1].toString('hex') } : null;
  }

  async listNamespaces(threadId: string): Promise<string[]> {
    const tid = this.conn.tid(threadId);
    if (tid === undefined) return [];
    // Both walk a (tid, ns, ...) primary key (BINARY collation: UTF-8 byte order); the
    // union also names a namespace whose positions are gone but whose anchor is not.
    return this.conn
      .stmt('SELECT ns FROM cairn_heads WHERE tid = ? UNION SELECT DISTINCT ns FROM cairn_positions WHERE tid = ? ORDER BY ns')
      .pluck()
      .all(tid, tid) as string[];
  }

  async listPositions(threadId: string, ns: string, page: { beforeSeq?: number; limit?: number } = {}): Promise<StoredPosition[]> {
    const tid = this.conn.tid(threadId);
    if (tid === undefined) return [];
    const rows = this.conn
      .stmt(`SELECT ${POSITION_COLUMNS} FROM cairn_positions WHERE tid = ? AND ns = ? AND seq < ? ORDER BY seq DESC LIMIT ?`)
      .raw()
      .all(tid, ns, page.beforeSeq ?? Number.MAX_SAFE_INTEGER, page.limit ?? -1) as PositionRow[];
    return rows.map((row) => toPosition(ns, row));
  }

  async getSnapshot(threadId: string, ns: string, ranges: SeqRange[]): Promise<{ seq: number; text: string } | null> {
    const tid = this.conn.tid(threadId);
    if (tid === undefined) return null;
    const where = rangeClause(ranges);
    const row = this.conn
      .stmt(`SELECT seq, body FROM cairn_snapshots WHERE tid = ? AND ns = ? AND (${where.sql}) ORDER BY seq DESC LIMIT 1`)
      .get(tid, ns, ...where.params) as { seq: number; body: string } | undefined;
    return row ? { seq: row.seq, text: row.body } : null;
  }

  async getSnapshots(threadId: string, ns: string, range: SeqRange): Promise<{ seq: number; text: string }[]> {
    const tid = this.conn.tid(threadId);
    if (tid === undefined) return [];
    const rows = this.conn.stmt('SELECT seq, body FROM cairn_snapshots WHERE tid = ? AND ns = ? AND seq BETWEEN ? AND ? ORDER BY seq').all(tid, ns, range.from, range.to) as {
      seq: number;
      body: string;
    }[];
    return rows.map((row) => ({ seq: row.seq, text: row.body }));
  }

  async getItems(threadId: string, ns: string, field: string, ranges: SeqRange[]): Promise<string[]> {
    const tid = this.conn.tid(threadId);
    if (tid === undefined) return [];
    const where = rangeClause(ranges, 'p.seq');
    // Walks the positions in seq order and, inside each, its items by ascending rowid,
    // which commitStep made index order. Ordering by seq alone lets SQLite stream the
    // rows without a sorter per position (3 ms of a 5000-item load).
    return this.conn
      .stmt(`SELECT i.body FROM cairn_positions p JOIN ${ITEMS_OF_POSITIONS} WHERE p.tid = ? AND p.ns = ? AND p.items_count > 0 AND (${where.sql}) AND i.field = ? ORDER BY p.seq`)
      .pluck()
      .all(tid, ns, ...where.params, field) as string[];
  }

  async getPositionItems(threadId: string, ns: string, seq: number, fields: readonly string[]): Promise<PositionItem[]> {
    const tid = this.conn.tid(threadId);
    if (tid === undefined) return [];
    const rows = this.conn
      .stmt(`SELECT i.field, i.idx, i.body FROM cairn_positions p JOIN ${ITEMS_OF_POSITIONS} WHERE p.tid = ? AND p.ns = ? AND p.seq = ? ORDER BY i.idx`)
      .all(tid, ns, seq) as { field: string; idx: number; body: string }[];
    return fields.flatMap((field) => rows.filter((r) => r.field === field).map((r) => ({ field, index: r.idx, text: r.body })));
  }

  async getRangeItems(threadId: string, ns: string, range: SeqRange): Promise<RangeItem[]> {
    const tid = this.conn.tid(threadId);
    if (tid === undefined) return [];
    // Items of one position are consecutive rows inserted in (field, index) order, so
    // rowid order within a position is the order the chain hashes them in.
    const rows = this.conn
      .stmt(`SELECT p.seq, i.field, i.idx, i.body FROM cairn_positions p JOIN ${ITEMS_OF_POSITIONS} WHERE p.tid = ? AND p.ns = ? AND p.items_count > 0 AND p.seq BETWEEN ? AND ? ORDER BY p.seq, i.rowid`)
      .raw()
      .all(tid, ns, range.from, range.to) as [number, string, number, string][];
    return rows.map(([seq, field, index, text]) => ({ seq, field, index, text }));
  }

  async close(): Promise<void> {
    this.conn.close();
  }
}
