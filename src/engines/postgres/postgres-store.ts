/**
 * @module engines/postgres/postgres-store
 * The cross-thread store on PostgreSQL. A put reads the item, decides (idempotent
 * retry, version check) and writes with a compare-and-set on the version it read;
 * at READ COMMITTED the write re-checks that condition against the latest committed
 * row, so a concurrent writer makes it write nothing and read again, never lose an
 * update. A deleted item keeps its row (flagged) so that its version never goes backwards.
 */
import type { PutOptions, Store, StoreItem } from '../../contracts/store.js';
import { decode, encode } from '../../codec/tagged-json.js';
import { EngineError, InvalidKeyError, VersionConflictError } from '../../errors.js';
import { checkStoreKey, decodeNamespace, encodeNamespace } from '../../internal/keys.js';
import { sqlState, type PostgresConnection } from './connection.js';

interface Row {
  ns: string;
  key: string;
  value: string;
  version: string;
  deleted: boolean;
  last_write_key: string | null;
  created_at: string;
  updated_at: string;
}

function toItem<T>(row: Row): StoreItem<T> {
  return {
    namespace: decodeNamespace(row.ns),
    key: row.key,
    value: decode<T>(row.value, `store item ${row.key}`),
    version: Number(row.version),
    createdAt: Number(row.created_at),
    updatedAt: Number(row.updated_at),
  };
}

/** Rounds of read-then-compare-and-set before giving up; each lost round means another writer won one. */
const MAX_ROUNDS = 1000;

/**
 * The store contract on PostgreSQL. `postgres(...)` builds one.
 *
 * @example `const store = new PostgresStore(new PostgresConnection(pool, { schema: 'cairn' }));`
 */
export class PostgresStore implements Store {
  readonly engine = 'postgres';
  private readonly sql: ReturnType<typeof statements>;

  constructor(private readonly conn: PostgresConnection) {
    this.sql = statements(conn);
  }

  private async row(what: string, ns: string, key: string): Promise<Row | undefined> {
    return (await this.conn.query<Row>(what, this.sql.get, [ns, key]))[0];
  }

  async get<T>(namespace: string[], key: string): Promise<StoreItem<T> | null> {
    const ns = encodeNamespace(namespace);
    checkStoreKey(key);
    const row = await this.row('store.get', ns, key);
    return row && !row.deleted ? toItem<T>(row) : null;
  }

  async put<T>(namespace: string[], key: string, value: T, options: PutOptions = {}): Promise<StoreItem<T>> {
    const ns = encodeNamespace(namespace);
    checkStoreKey(key);
    const text = encode(value, `store ${namespace.join('/')}/${key}`);
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const row = await this.row('store.put', ns, key);
      const live = row && !row.deleted ? row : undefined;
      if (live && options.idempotencyKey !== undefined && live.last_write_key === options.idempotencyKey) return toItem<T>(live);
      const current = live ? Number(live.version) : 0;
      if (options.ifVersion !== undefined && options.ifVersion !== current) {
        throw new VersionConflictError(namespace, key, options.ifVersion, current, { engine: this.engine });
      }
      const now = Date.now();
      const idempotencyKey = options.idempotencyKey ?? null;
      let written: Row | undefined;
      try {
        written = row
          ? (await this.conn.query<Row>('store.put', this.sql.update, [ns, key, text, idempotencyKey, now, row.version, row.deleted]))[0]
          : (await this.conn.query<Row>('store.put', this.sql.insert, [ns, key, text, idempotencyKey, now]))[0];
      } catch (error) {
        if (sqlState(error) === '54000') {
          throw new InvalidKeyError(
            `namespace ${JSON.stringify(namespace)} and key ${JSON.stringify(key.slice(0, 40))}... are too long for a PostgreSQL index entry ` +
              `(about 2,700 bytes of UTF-8 together): shorten them.`,
            { cause: error, place: { engine: this.engine } },
          );
        }
        throw error;
      }
      if (written) return toItem<T>(written);
    }
    throw new EngineError(`store.put of ${namespace.join('/')}/${key} lost ${MAX_ROUNDS} compare-and-set rounds to other writers.`, {
      place: { engine: this.engine },
    });
  }

  async delete(namespace: string[], key: string, options: { ifVersion?: number } = {}): Promise<boolean> {
    const ns = encodeNamespace(namespace);
    checkStoreKey(key);
    for (let round = 0; round < MAX_ROUNDS; round++) {
      const row = await this.row('store.delete', ns, key);
      const current = row && !row.deleted ? Number(row.version) : 0;
      if (options.ifVersion !== undefined && options.ifVersion !== current) {
        throw new VersionConflictError(namespace, key, options.ifVersion, current, { engine: this.engine });
      }
      if (!row || row.deleted) return false;
      const deleted = await this.conn.query('store.delete', this.sql.delete, [ns, key, Date.now(), row.version]);
      if (deleted.length === 1) return true;
    }
    throw new EngineError(`store.delete of ${namespace.join('/')}/${key} lost ${MAX_ROUNDS} compare-and-set rounds to other writers.`, {
      place: { engine: this.engine },
    });
  }

  async list(prefix: string[], options: { limit?: number } = {}): Promise<StoreItem[]> {
    const ns = encodeNamespace(prefix);
    // A prefix scan as a range on the primary key (byte order: the columns are COLLATE "C").
    // A stored namespace ends with the separator U+001F, so everything under `ns` sorts in
    // [ns, ns with its last U+001F raised to U+0020): bounded at label boundaries.
    const rows =
      ns === ''
        ? await this.conn.query<Row>('store.list', this.sql.listAll, [options.limit ?? null])
        : await this.conn.query<Row>('store.list', this.sql.list, [ns, ns.slice(0, -1) + '\u0020', options.limit ?? null]);
    return rows.map((row) => toItem(row));
  }
}

function statements(conn: PostgresConnection) {
  const ST = conn.tables.store;
  const columns = 'ns, key, value, version, deleted, last_write_key, created_at, updated_at';
  return {
    get: `SELECT ${columns} FROM ${ST} WHERE ns = $1::text AND key = $2::text`,

    // Absent when read: insert unless a concurrent writer created it first (then read again).
    insert: `
      INSERT INTO ${ST} (${columns}) VALUES ($1::text, $2::text, $3::text, 1, false, $4::text, $5::bigint, $5::bigint)
      ON CONFLICT (ns, key) DO NOTHING
      RETURNING ${columns}`,

    // Present when read: write only if it is still at the (version, deleted) read. Every
    // write raises the version and a delete flips the flag, so that pair never recurs.
    update: `
      UPDATE ${ST} SET value = $3::text, version = version + 1, deleted = false, last_write_key = $4::text, updated_at = $5::bigint,
        created_at = CASE WHEN deleted THEN $5::bigint ELSE created_at END
      WHERE ns = $1::text AND key = $2::text AND version = $6::bigint AND deleted = $7::boolean
      RETURNING ${columns}`,

    delete: `
      UPDATE ${ST} SET deleted = true, value = 'null', last_write_key = NULL, updated_at = $3::bigint
      WHERE ns = $1::text AND key = $2::text AND version = $4::bigint AND NOT deleted
      RETURNING 1`,

    list: `SELECT ${columns} FROM ${ST} WHERE ns >= $1::text AND ns < $2::text AND NOT deleted ORDER BY ns, key LIMIT $3::bigint`,

    listAll: `SELECT ${columns} FROM ${ST} WHERE NOT deleted ORDER BY ns, key LIMIT $1::bigint`,
  };
}
