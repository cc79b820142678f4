/**
 * @module engines/sqlite/sqlite-store
 * The cross-thread store on SQLite. Every write is one IMMEDIATE transaction (the
 * write lock is taken at BEGIN, so the rows it reads are the latest and stay so
 * until COMMIT): compare-and-set and batches hold across processes sharing the file.
 * A deleted or expired item keeps its row (a tombstone) so that its version never
 * goes backwards.
 *
 * Search filters become `json_type` / `json_extract` calls whose JSON paths and
 * operands are bound parameters; the SQL text only ever holds fixed fragments.
 */
import type { StoreCapabilities, StoreOpResult } from '../../contracts/store.js';
import { overwriteRowOf, prefixUpperBound, storedRowOf, type OverwriteSqlRow, type StoreSqlRow } from '../../internal/sql-rows.js';
import { BaseStore, type NamespaceRows, type ScanQuery } from '../../store/base-store.js';
import type { Condition } from '../../store/filter.js';
import { decide, type OverwriteRow, type PreparedOp, type StoredRow } from '../../store/rows.js';
import type { SqliteConnection, SqliteQueries } from './connection.js';

const LIVE = 'deleted = 0 AND (expires_at IS NULL OR expires_at > ?)';

/** SQLite's JSON path for a validated label list: `$.a.b` (labels are plain identifiers). */
function jsonPath(path: string[]): string {
  return '$.' + path.join('.');
}

/**
 * One condition as SQL over the `value` column, 0 or 1 (never NULL, so NOT works).
 * `json_type` tells JSON types apart (json_extract maps true to 1 and a string "1" to '1').
 */
function conditionSql(c: Condition, params: unknown[]): string {
  const path = jsonPath(c.path);
  const type = () => {
    params.push(path);
    return 'json_type(value, ?)';
  };
  const extract = () => {
    params.push(path);
    return 'json_extract(value, ?)';
  };
  const equal = (v: string | number | boolean | null): string => {
    if (v === null) return `coalesce(${type()} = 'null', 0)`;
    if (typeof v === 'boolean') return `coalesce(${type()} = '${v ? 'true' : 'false'}', 0)`;
    const kind = typeof v === 'number' ? `${type()} IN ('integer', 'real')` : `${type()} = 'text'`;
    const sql = `coalesce(${kind} AND ${extract()} = ?, 0)`;
    params.push(v);
    return sql;
  };
  switch (c.op) {
    case '$exists':
      return `(${type()} IS ${c.value ? 'NOT ' : ''}NULL)`;
    case '$eq':
      return equal(c.value);
    case '$ne':
      return `NOT ${equal(c.value)}`;
    case '$in':
      return `(${c.value.map(equal).join(' OR ')})`;
    default: {
      const operator = { $gt: '>', $gte: '>=', $lt: '<', $lte: '<=' }[c.op];
      const kind = typeof c.value === 'number' ? `${type()} IN ('integer', 'real')` : `${type()} = 'text'`;
      const sql = `coalesce(${kind} AND ${extract()} ${operator} ?, 0)`;
      params.push(c.value);
      return sql;
    }
  }
}

/**
 * The store contract on SQLite. `sqlite(...)` builds one.
 *
 * @example `const store = new SqliteStore(new SqliteConnection('./cairn.db'));`
 */
export class SqliteStore extends BaseStore {
  readonly engine = 'sqlite';
  readonly capabilities: StoreCapabilities = { ttl: true, sweep: true, filters: true, crossProcess: true };

  constructor(private readonly conn: SqliteConnection) {
    super(conn.lifecycle);
  }

  private row(q: SqliteQueries, ns: string, key: string): StoredRow | null {
    const row = q.stmt('SELECT * FROM cairn_store WHERE ns = ? AND key = ?').get(ns, key) as StoreSqlRow | undefined;
    return row ? storedRowOf(row) : null;
  }

  protected async readRow(ns: string, key: string): Promise<StoredRow | null> {
    return this.conn.read('store.get', (q) => this.row(q, ns, key));
  }

  protected async applyOps(ops: PreparedOp[], now: number): Promise<StoreOpResult[]> {
    return this.conn.write(ops.length === 1 ? `store.${ops[0]!.kind}` : 'store.batch', (q) =>
      ops.map((op, index) => {
        const step = decide(op, this.row(q, op.ns, op.key), now, this.engine, index);
        if (step.kind === 'write') {
          const r = step.row;
          q
            .stmt(
              `INSERT INTO cairn_store (ns, key, value, version, deleted, last_write_key, created_at, updated_at, expires_at)
               VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
               ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value, version = excluded.version, deleted = excluded.deleted,
                 last_write_key = excluded.last_write_key, created_at = excluded.created_at, updated_at = excluded.updated_at,
                 expires_at = excluded.expires_at`,
            )
            .run(r.ns, r.key, r.value, r.version, r.deleted ? 1 : 0, r.lastWriteKey, r.createdAt, r.updatedAt, r.expiresAt);
          const o = step.overwrite;
          if (o) {
            q
              .stmt(
                `INSERT INTO cairn_store_overwrites (ns, key, operation, expected_version, overwritten_version, overwritten_value, overwritten_updated_at, version, at)
                 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
              )
              .run(o.ns, o.key, o.operation, o.expectedVersion, o.overwritten?.version ?? null, o.overwritten?.value ?? null, o.overwritten?.updatedAt ?? null, o.version, o.at);
          }
        }
        return step.result;
      }),
    );
  }

  protected async scan(query: ScanQuery): Promise<StoredRow[]> {
    const upper = prefixUpperBound(query.ns);
    const params: unknown[] = [query.ns, upper, upper, query.now];
    let sql = `SELECT * FROM cairn_store WHERE ns >= ? AND (? IS NULL OR ns < ?) AND ${LIVE}`;
    if (query.after) {
      sql += ' AND (ns > ? OR (ns = ? AND key > ?))';
      params.push(query.after.ns, query.after.ns, query.after.key);
    }
    for (const condition of query.conditions) sql += ` AND ${conditionSql(condition, params)}`;
    sql += ' ORDER BY ns, key LIMIT ? OFFSET ?';
    params.push(query.limit ?? -1, query.offset);
    // Filtered texts vary with the filter's shape: prepared per call, not cached.
    const rows = this.conn.read('store.search', (q) => (query.conditions.length ? q.prepare(sql) : q.stmt(sql)).all(...params) as StoreSqlRow[]);
    return rows.map(storedRowOf);
  }

  protected async scanNamespaces(ns: string, now: number): Promise<string[]> {
    const upper = prefixUpperBound(ns);
    return this.conn.read('store.listNamespaces', (q) =>
      q.stmt(`SELECT DISTINCT ns FROM cairn_store WHERE ns >= ? AND (? IS NULL OR ns < ?) AND ${LIVE} ORDER BY ns`).pluck().all(ns, upper, upper, now) as string[],
    );
  }

  protected async sweep(now: number): Promise<number> {
    return this.conn.write('store.sweepExpired', (q) =>
      q
        .stmt(`UPDATE cairn_store SET deleted = 1, value = 'null', last_write_key = NULL, updated_at = ?, expires_at = NULL WHERE deleted = 0 AND expires_at <= ?`)
        .run(now, now).changes,
    );
  }

  protected override async deleteOverwrites(ns: string, under: boolean): Promise<number> {
    const upper = prefixUpperBound(ns);
    return this.conn.write('store.purgeOverwrites', (q) =>
      under
        ? q.stmt('DELETE FROM cairn_store_overwrites WHERE ns >= ? AND (? IS NULL OR ns < ?)').run(ns, upper, upper).changes
        : q.stmt('DELETE FROM cairn_store_overwrites WHERE ns = ?').run(ns).changes,
    );
  }

  protected override async scanStoredNamespaces(): Promise<string[]> {
    return this.conn.read('store.listStoredNamespaces', (q) =>
      q.stmt('SELECT ns FROM cairn_store UNION SELECT ns FROM cairn_store_overwrites ORDER BY ns').pluck().all() as string[],
    );
  }

  protected override async deleteNamespace(ns: string, now: number): Promise<NamespaceRows> {
    return this.conn.write('store.purgeNamespace', (q) => {
      const live = q.stmt(`SELECT count(*) FROM cairn_store WHERE ns = ? AND ${LIVE}`).pluck().get(ns, now) as number;
      const rows = q.stmt('DELETE FROM cairn_store WHERE ns = ?').run(ns).changes;
      const overwrites = q.stmt('DELETE FROM cairn_store_overwrites WHERE ns = ?').run(ns).changes;
      return { rows, live, overwrites };
    });
  }

  protected async readOverwrites(ns: string, afterId: number, limit: number | null): Promise<OverwriteRow[]> {
    const upper = prefixUpperBound(ns);
    const rows = this.conn.read('store.listOverwrites', (q) =>
      q
        .stmt('SELECT * FROM cairn_store_overwrites WHERE ns >= ? AND (? IS NULL OR ns < ?) AND id > ? ORDER BY id LIMIT ?')
        .all(ns, upper, upper, afterId, limit ?? -1) as OverwriteSqlRow[],
    );
    return rows.map(overwriteRowOf);
  }
}
