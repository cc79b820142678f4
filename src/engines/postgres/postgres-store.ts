/**
 * @module engines/postgres/postgres-store
 * The cross-thread store on PostgreSQL. A write is one transaction that first locks
 * the rows of its items, in (namespace, key) order so that two batches never
 * deadlock, then decides and writes each operation on what it locked: at READ
 * COMMITTED a concurrent writer of the same item waits for the lock and then sees
 * this write, so compare-and-set holds across processes and machines. An item that
 * does not exist yet is first created as an absent placeholder (a tombstone at
 * version 0), so that "absent" can be locked too. Deleted and expired items keep
 * their row, so versions never go backwards.
 *
 * Search filters use jsonb operators on the value's JSON view (`cairn_json`, see the
 * migrations) with the path as a bound `text[]` and the operand as a bound jsonb or
 * text: the SQL text only ever holds fixed fragments and parameter numbers.
 */
import type { StoreCapabilities, StoreOpResult } from '../../contracts/store.js';
import { InvalidKeyError } from '../../errors.js';
import { MAX_STORE_KEY_BYTES } from '../../internal/keys.js';
import { overwriteRowOf, prefixUpperBound, storedRowOf, type OverwriteSqlRow, type StoreSqlRow } from '../../internal/sql-rows.js';
import { BaseStore, type NamespaceRows, type ScanQuery } from '../../store/base-store.js';
import type { Condition } from '../../store/filter.js';
import { decide, type OverwriteRow, type PreparedOp, type StoredRow } from '../../store/rows.js';
import { sqlState, type PostgresConnection, type TransactionQuery } from './connection.js';
import { quoteIdent } from './migrations.js';

/**
 * One condition as SQL over `d.doc` (the value as jsonb). `$n` placeholders number
 * from `params.length + 1`; every path and operand is a parameter.
 */
function conditionSql(c: Condition, params: unknown[]): string {
  const param = (value: unknown, cast: string) => {
    params.push(value);
    return `$${params.length}::${cast}`;
  };
  const at = () => `(d.doc #> ${param(c.path, 'text[]')})`;
  switch (c.op) {
    case '$exists':
      return `${at()} IS ${c.value ? 'NOT ' : ''}NULL`;
    case '$eq':
      return `${at()} = ${param(JSON.stringify(c.value), 'jsonb')}`;
    case '$ne':
      // A missing path (NULL) is "not equal".
      return `${at()} IS DISTINCT FROM ${param(JSON.stringify(c.value), 'jsonb')}`;
    case '$in':
      return `${at()} IN (SELECT jsonb_array_elements(${param(JSON.stringify(c.value), 'jsonb')}))`;
    default: {
      const operator = { $gt: '>', $gte: '>=', $lt: '<', $lte: '<=' }[c.op];
      if (typeof c.value === 'number') {
        // jsonb orders numbers numerically; the type test keeps other types out.
        const path = param(c.path, 'text[]');
        return `(jsonb_typeof(d.doc #> ${path}) = 'number' AND (d.doc #> ${path}) ${operator} ${param(JSON.stringify(c.value), 'jsonb')})`;
      }
      // Strings in code point order (jsonb would use the database's collation).
      const path = param(c.path, 'text[]');
      return `(jsonb_typeof(d.doc #> ${path}) = 'string' AND (d.doc #>> ${path}) COLLATE "C" ${operator} ${param(c.value, 'text')})`;
    }
  }
}

/**
 * The store contract on PostgreSQL. `postgres(...)` builds one.
 *
 * @example `const store = new PostgresStore(new PostgresConnection(pool, { schema: 'cairn' }));`
 */
export class PostgresStore extends BaseStore {
  readonly engine = 'postgres';
  readonly capabilities: StoreCapabilities = { ttl: true, sweep: true, filters: true, crossProcess: true };
  private readonly sql: ReturnType<typeof statements>;

  constructor(private readonly conn: PostgresConnection) {
    super(conn.lifecycle);
    this.sql = statements(conn);
  }

  protected async readRow(ns: string, key: string): Promise<StoredRow | null> {
    const [row] = await this.conn.query<StoreSqlRow>('store.get', this.sql.get, [ns, key]);
    return row ? storedRowOf(row) : null;
  }

  protected async applyOps(ops: PreparedOp[], now: number): Promise<StoreOpResult[]> {
    const what = ops.length === 1 ? `store.${ops[0]!.kind}` : 'store.batch';
    try {
      return await this.conn.transaction(what, async (query) => {
        const rows = await this.lock(query, ops);
        const results: StoreOpResult[] = [];
        for (const [index, op] of ops.entries()) {
          const id = `${op.ns}\u0000${op.key}`;
          const step = decide(op, rows.get(id)!, now, this.engine, index);
          if (step.kind === 'write') {
            const r = step.row;
            await query(this.sql.write, [r.ns, r.key, r.value, r.version, r.deleted, r.lastWriteKey, r.createdAt, r.updatedAt, r.expiresAt]);
            rows.set(id, r);
            const o = step.overwrite;
            if (o) {
              await query(this.sql.overwrite, [o.ns, o.key, o.operation, o.expectedVersion, o.overwritten?.version ?? null, o.overwritten?.value ?? null, o.overwritten?.updatedAt ?? null, o.version, o.at]);
            }
          }
          results.push(step.result);
        }
        return results;
      });
    } catch (error) {
      if (sqlState(error) === '54000') {
        const op = ops[0]!;
        throw new InvalidKeyError(
          `namespace ${JSON.stringify(op.namespace)} and key ${JSON.stringify(op.key.slice(0, 40))}... are too long for a PostgreSQL index entry ` +
            `(about 2,700 bytes of UTF-8 together): shorten them.`,
          { cause: error, place: { engine: this.engine } },
        );
      }
      throw error;
    }
  }

  /** Locks the row of every item `ops` name, in (ns, key) order, creating absent placeholders; returns them by id. */
  private async lock(query: TransactionQuery, ops: PreparedOp[]): Promise<Map<string, StoredRow>> {
    const items = new Map<string, { ns: string; key: string }>();
    for (const op of ops) items.set(`${op.ns}\u0000${op.key}`, { ns: op.ns, key: op.key });
    // Byte order of UTF-8, as the columns' COLLATE "C" sorts: one lock order for every transaction.
    const ordered = [...items.entries()].sort(([a], [b]) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    const rows = new Map<string, StoredRow>();
    for (const [id, { ns, key }] of ordered) {
      let [row] = (await query(this.sql.lock, [ns, key])) as StoreSqlRow[];
      if (!row && overKeyLimit(ns, key)) {
        // No write can create an item past MAX_STORE_KEY_BYTES (puts are refused before
        // storage), so its absence needs no lock, and its placeholder could not be indexed.
        rows.set(id, absentRow(ns, key));
        continue;
      }
      if (!row) {
        await query(this.sql.placeholder, [ns, key]);
        [row] = (await query(this.sql.lock, [ns, key])) as StoreSqlRow[];
      }
      rows.set(id, storedRowOf(row!));
    }
    return rows;
  }

  protected async scan(query: ScanQuery): Promise<StoredRow[]> {
    const params: unknown[] = [query.now];
    let where = `NOT t.deleted AND (t.expires_at IS NULL OR t.expires_at > $1::bigint)`;
    if (query.ns !== '') {
      params.push(query.ns, prefixUpperBound(query.ns));
      where += ` AND t.ns >= $2::text AND t.ns < $3::text`;
    }
    if (query.after) {
      params.push(query.after.ns, query.after.key);
      where += ` AND (t.ns, t.key) > ($${params.length - 1}::text, $${params.length}::text)`;
    }
    let from = `${this.conn.tables.store} t`;
    if (query.conditions.length) {
      // The JSON view is computed once per row, only for rows the range left.
      from += ` CROSS JOIN LATERAL (SELECT ${quoteIdent(this.conn.schema)}.cairn_json(t.value) AS doc) d`;
      for (const condition of query.conditions) where += ` AND ${conditionSql(condition, params)}`;
    }
    params.push(query.limit, query.offset);
    const text = `SELECT t.* FROM ${from} WHERE ${where} ORDER BY t.ns, t.key LIMIT $${params.length - 1}::bigint OFFSET $${params.length}::bigint`;
    // Prepared only when the text is one of the few filter-free shapes.
    const rows = await this.conn.query<StoreSqlRow>('store.search', text, params, query.conditions.length === 0);
    return rows.map(storedRowOf);
  }

  protected async scanNamespaces(ns: string, now: number): Promise<string[]> {
    const rows =
      ns === ''
        ? await this.conn.query<{ ns: string }>('store.listNamespaces', this.sql.namespacesAll, [now])
        : await this.conn.query<{ ns: string }>('store.listNamespaces', this.sql.namespaces, [now, ns, prefixUpperBound(ns)]);
    return rows.map((r) => r.ns);
  }

  protected async sweep(now: number): Promise<number> {
    return (await this.conn.query('store.sweepExpired', this.sql.sweep, [now])).length;
  }

  protected override async deleteOverwrites(ns: string, under: boolean): Promise<number> {
    const rows = under
      ? await this.conn.query('store.purgeOverwrites', this.sql.purgeOverwritesUnder, [ns, prefixUpperBound(ns)])
      : await this.conn.query('store.purgeOverwrites', this.sql.purgeOverwrites, [ns]);
    return rows.length;
  }

  protected override async scanStoredNamespaces(): Promise<string[]> {
    return (await this.conn.query<{ ns: string }>('store.listStoredNamespaces', this.sql.storedNamespaces, [])).map((r) => r.ns);
  }

  protected override async deleteNamespace(ns: string, now: number): Promise<NamespaceRows> {
    // One statement: the rows and the overwrite records go together, or neither.
    const [counts] = await this.conn.query<{ rows: string; live: string; overwrites: string }>('store.purgeNamespace', this.sql.purgeNamespace, [ns, now]);
    return { rows: Number(counts!.rows), live: Number(counts!.live), overwrites: Number(counts!.overwrites) };
  }

  protected async readOverwrites(ns: string, afterId: number, limit: number | null): Promise<OverwriteRow[]> {
    const rows =
      ns === ''
        ? await this.conn.query<OverwriteSqlRow>('store.listOverwrites', this.sql.overwritesAll, [afterId, limit])
        : await this.conn.query<OverwriteSqlRow>('store.listOverwrites', this.sql.overwrites, [afterId, limit, ns, prefixUpperBound(ns)]);
    return rows.map(overwriteRowOf);
  }
}

/** True when an item under `ns` and `key` is longer than any write may make one (see `checkStoreEntry`). */
function overKeyLimit(ns: string, key: string): boolean {
  return Buffer.byteLength(ns, 'utf8') + Buffer.byteLength(key, 'utf8') > MAX_STORE_KEY_BYTES;
}

/** What the placeholder row would hold: absent, at version 0. */
function absentRow(ns: string, key: string): StoredRow {
  return { ns, key, value: 'null', version: 0, deleted: true, lastWriteKey: null, createdAt: 0, updatedAt: 0, expiresAt: null };
}

function statements(conn: PostgresConnection) {
  const ST = conn.tables.store;
  const SO = `${quoteIdent(conn.schema)}.cairn_store_overwrites`;
  const columns = 'ns, key, value, version, deleted, last_write_key, created_at, updated_at, expires_at';
  const live = 'NOT deleted AND (expires_at IS NULL OR expires_at > $1::bigint)';
  return {
    get: `SELECT ${columns} FROM ${ST} WHERE ns = $1::text AND key = $2::text`,

    lock: `SELECT ${columns} FROM ${ST} WHERE ns = $1::text AND key = $2::text FOR UPDATE`,

    // "Absent" as a lockable row: a tombstone at version 0. A concurrent creator of the
    // same item waits here for this transaction, then finds the row and locks it.
    placeholder: `
      INSERT INTO ${ST} (${columns}) VALUES ($1::text, $2::text, 'null', 0, true, NULL, 0, 0, NULL)
      ON CONFLICT (ns, key) DO NOTHING`,

    write: `
      UPDATE ${ST} SET value = $3::text, version = $4::bigint, deleted = $5::boolean, last_write_key = $6::text,
        created_at = $7::bigint, updated_at = $8::bigint, expires_at = $9::bigint
      WHERE ns = $1::text AND key = $2::text`,

    overwrite: `
      INSERT INTO ${SO} (ns, key, operation, expected_version, overwritten_version, overwritten_value, overwritten_updated_at, version, at)
      VALUES ($1::text, $2::text, $3::text, $4::bigint, $5::bigint, $6::text, $7::bigint, $8::bigint, $9::bigint)`,

    namespaces: `SELECT DISTINCT ns FROM ${ST} WHERE ${live} AND ns >= $2::text AND ns < $3::text ORDER BY ns`,
    namespacesAll: `SELECT DISTINCT ns FROM ${ST} WHERE ${live} ORDER BY ns`,

    sweep: `
      UPDATE ${ST} SET deleted = true, value = 'null', last_write_key = NULL, updated_at = $1::bigint, expires_at = NULL
      WHERE NOT deleted AND expires_at <= $1::bigint
      RETURNING 1`,

    overwrites: `SELECT * FROM ${SO} WHERE id > $1::bigint AND ns >= $3::text AND ns < $4::text ORDER BY id LIMIT $2::bigint`,
    overwritesAll: `SELECT * FROM ${SO} WHERE id > $1::bigint ORDER BY id LIMIT $2::bigint`,
    purgeOverwrites: `DELETE FROM ${SO} WHERE ns = $1::text RETURNING 1`,
    storedNamespaces: `SELECT ns FROM ${ST} UNION SELECT ns FROM ${SO}`,
    purgeNamespace: `
      WITH items AS (DELETE FROM ${ST} WHERE ns = $1::text RETURNING deleted, expires_at),
        records AS (DELETE FROM ${SO} WHERE ns = $1::text RETURNING 1)
      SELECT (SELECT count(*) FROM items) AS rows,
        (SELECT count(*) FROM items WHERE NOT deleted AND (expires_at IS NULL OR expires_at > $2::bigint)) AS live,
        (SELECT count(*) FROM records) AS overwrites`,
    purgeOverwritesUnder: `DELETE FROM ${SO} WHERE ns >= $1::text AND ns < $2::text RETURNING 1`,
  };
}
