/**
 * @module cairn/sqlite
 * The embedded default engine: thread log, ledger and store in one SQLite file
 * (WAL mode). Durable by default: `synchronous=FULL`, so a committed step
 * survives power loss; `{ durability: 'normal' }` trades that for speed (a
 * process crash still loses nothing committed). Runs on better-sqlite3@12 (installed
 * beside cairn) or on Node's built-in node:sqlite (Node 22.13+), loaded on first
 * use: `{ driver }`, else `CAIRN_SQLITE_DRIVER`, else better-sqlite3 when it loads,
 * else node:sqlite. `{ readOnly: true }` opens an existing database for
 * inspection without creating, migrating or writing anything.
 *
 * @example
 * ```ts
 * import { sqlite } from 'cairn/sqlite';
 * const engine = sqlite('./cairn.db');
 * const app = graph(State).node(...).compile({ engine });
 * ```
 */
import type { Engine } from '../../contracts/engine.js';
import { SqliteConnection, type SqliteOptions, type SqliteQueries } from './connection.js';
import type { SqliteDatabase, SqliteDriverName, SqliteHandle } from './driver.js';
import type { NodeSqliteDatabaseHandle } from './node-sqlite-driver.js';
import { SqliteCheckpointer } from './sqlite-checkpointer.js';
import { SqliteLedger } from './sqlite-ledger.js';
import { SqliteStore } from './sqlite-store.js';

export { SqliteCheckpointer, SqliteLedger, SqliteStore, SqliteConnection };
export type { SqliteOptions, SqliteDatabase, SqliteQueries, SqliteDriverName, SqliteHandle, NodeSqliteDatabaseHandle };
export { chooseSqliteDriver } from './driver.js';
export { SqliteDriverError } from './node-sqlite-driver.js';
export { SQLITE_MIGRATIONS, migrate } from './migrations.js';

/**
 * The SQLite engine on a file path (or an open better-sqlite3 `Database` or node:sqlite
 * `DatabaseSync` handle, which the engine will not close). The file, its tables and
 * migrations are created on first use.
 *
 * @example
 * ```ts
 * const engine = sqlite('./cairn.db');                             // WAL, synchronous=FULL
 * const fast = sqlite('./dev.db', { durability: 'normal' });        // survives a crash, not power loss
 * const inspect = sqlite('./cairn.db', { readOnly: true });         // creates and migrates nothing
 * const builtIn = sqlite('./cairn.db', { driver: 'node:sqlite' });  // Node 22.13+, no native module
 * ```
 */
export function sqlite(source: string | SqliteHandle, options: SqliteOptions = {}): Engine {
  const conn = new SqliteConnection(source, options);
  const close = () => conn.close();
  return {
    name: 'sqlite',
    checkpointer: new SqliteCheckpointer(conn),
    ledger: new SqliteLedger(conn),
    store: new SqliteStore(conn),
    purging: (work, options) => conn.purging(work, options),
    close,
    [Symbol.asyncDispose]: close,
  };
}
