/**
 * @module engines/sqlite/sqlite-store
 * The cross-thread store on SQLite. Every put is one IMMEDIATE transaction that
 * reads the current version and writes the next, so compare-and-set holds across
 * processes sharing the file. A deleted item keeps its row (flagged) so that its
 * version never goes backwards.
 */
import type { PutOptions, Store, StoreItem } from '../../contracts/store.js';
import { decode, encode } from '../../codec/tagged-json.js';
import { VersionConflictError } from '../../errors.js';
import { checkStoreKey, decodeNamespace, encodeNamespace } from '../../internal/keys.js';
import type { SqliteConnection } from './connection.js';

interface Row {
  ns: string;
  key: string;
  value: string;
  version: number;
  deleted: number;
  last_write_key: string | null;
  created_at: number;
  updated_at: number;
}

function toItem<T>(row: Row): StoreItem<T> {
  return {
    namespace: decodeNamespace(row.ns),
    key: row.key,
    value: decode<T>(row.value, `store item ${row.key}`),
    version: row.version,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export class SqliteStore implements Store {
  readonly engine = 'sqlite';

  constructor(private readonly conn: SqliteConnection) {}

  private row(ns: string, key: string): Row | undefined {
    return this.conn.stmt('SELECT * FROM cairn_store WHERE ns = ? AND key = ?').get(ns, key) as Row | undefined;
  }

  async get<T>(namespace: string[], key: string): Promise<StoreItem<T> | null> {
    const ns = encodeNamespace(namespace);
    checkStoreKey(key);
    const row = this.conn.run('store.get', () => this.row(ns, key));
    return row && !row.deleted ? toItem<T>(row) : null;
  }

  async put<T>(namespace: string[], key: string, value: T, options: PutOptions = {}): Promise<StoreItem<T>> {
    const ns = encodeNamespace(namespace);
    checkStoreKey(key);
    const text = encode(value, `store ${namespace.join('/')}/${key}`);
    return this.conn.writeTransaction('store.put', () => {
          const row = this.row(ns, key);
          const live = row && !row.deleted ? row : undefined;
          if (live && options.idempotencyKey !== undefined && live.last_write_key === options.idempotencyKey) return toItem<T>(live);
          const current = live?.version ?? 0;
          if (options.ifVersion !== undefined && options.ifVersion !== current) {
            throw new VersionConflictError(namespace, key, options.ifVersion, current, { engine: this.engine });
          }
          const now = Date.now();
          this.conn
            .stmt(
              `INSERT INTO cairn_store (ns, key, value, version, deleted, last_write_key, created_at, updated_at) VALUES (?, ?, ?, 1, 0, ?, ?, ?)
               ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value, version = version + 1, deleted = 0,
                 last_write_key = excluded.last_write_key, updated_at = excluded.updated_at,
                 created_at = CASE WHEN deleted THEN excluded.created_at ELSE created_at END`,
            )
            .run(ns, key, text, options.idempotencyKey ?? null, now, now);
          return toItem<T>(this.row(ns, key)!);
    });
  }

  async delete(namespace: string[], key: string, options: { ifVersion?: number } = {}): Promise<boolean> {
    const ns = encodeNamespace(namespace);
    checkStoreKey(key);
    return this.conn.writeTransaction('store.delete', () => {
          const row = this.row(ns, key);
          const current = row && !row.deleted ? row.version : 0;
          if (options.ifVersion !== undefined && options.ifVersion !== current) {
            throw new VersionConflictError(namespace, key, options.ifVersion, current, { engine: this.engine });
          }
          if (!row || row.deleted) return false;
          this.conn.stmt(`UPDATE cairn_store SET deleted = 1, value = 'null', last_write_key = NULL, updated_at = ? WHERE ns = ? AND key = ?`).run(Date.now(), ns, key);
          return true;
    });
  }

  async list(prefix: string[], options: { limit?: number } = {}): Promise<StoreItem[]> {
    const ns = encodeNamespace(prefix);
    // A prefix scan as a range on the primary key. A stored namespace ends with the
    // separator U+001F, so everything under `ns` sorts in [ns, ns with its last
    // U+001F raised to U+0020): bounded at label boundaries, whatever the labels hold.
    const upper = ns === '' ? null : ns.slice(0, -1) + '\u0020';
    const rows = this.conn.run('store.list', () =>
      this.conn
        .stmt('SELECT * FROM cairn_store WHERE ns >= ? AND (? IS NULL OR ns < ?) AND deleted = 0 ORDER BY ns, key LIMIT ?')
        .all(ns, upper, upper, options.limit ?? -1) as Row[],
    );
    return rows.map((row) => toItem(row));
  }
}
