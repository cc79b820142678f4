/**
 * @module engines/sqlite/driver
 * The SQLite driver, typed structurally (so cairn's public types never import
 * better-sqlite3's or node:sqlite's) and loaded lazily (so `import 'cairn'` loads no
 * native module). Two drivers: better-sqlite3 (the native module, any Node ≥ 20)
 * and Node's built-in node:sqlite (Node 22.13+), the latter adapted to the
 * better-sqlite3 subset below so the engine has one code path.
 */
import { SQLITE_DRIVER_ENV, SQLITE_DRIVERS } from '../../defaults.js';
import { DriverMissingError, InvalidOptionError } from '../../errors.js';
import { loadBetterSqlite3, openBetterSqlite3 } from './better-sqlite3-driver.js';
import { isNodeSqliteHandle, loadNodeSqlite, NodeSqliteDatabase, openNodeSqlite, type NodeSqliteDatabaseHandle } from './node-sqlite-driver.js';
import type { SqliteDatabase } from './sqlite-database.js';

export type { SqliteDatabase, SqliteStatement, SqliteTransaction } from './sqlite-database.js';

/**
 * The SQLite drivers cairn runs on: `better-sqlite3` (a native module, installed
 * beside cairn) or `node:sqlite` (built into Node 22.13+).
 */
export type SqliteDriverName = (typeof SQLITE_DRIVERS)[number];

/** A database handle of either driver: a better-sqlite3 `Database` or a node:sqlite `DatabaseSync`. */
export type SqliteHandle = SqliteDatabase | NodeSqliteDatabaseHandle;

const FIX = 'run `npm install better-sqlite3@12` (version 13 needs Node 22), or use Node 22.13 or later, which has node:sqlite built in.';

function isDriverName(name: string): name is SqliteDriverName {
  return (SQLITE_DRIVERS as readonly string[]).includes(name);
}

/**
 * The driver a new connection uses: `requested` (the `driver` option) if given, else
 * `CAIRN_SQLITE_DRIVER` if set, else better-sqlite3 when its native module loads on
 * this Node, else node:sqlite when this Node has it. Throws DriverMissingError (with
 * the fix) when the chosen driver, or every driver, cannot be loaded.
 *
 * @example `chooseSqliteDriver() // 'better-sqlite3' on Node 20 with it installed`
 */
export function chooseSqliteDriver(requested?: SqliteDriverName): SqliteDriverName {
  const place = { engine: 'sqlite' };
  const forced = requested ?? (process.env[SQLITE_DRIVER_ENV] || undefined);
  if (forced !== undefined) {
    if (!isDriverName(forced)) {
      const from = requested === undefined ? `${SQLITE_DRIVER_ENV}=${forced}` : `driver "${forced}"`;
      throw new InvalidOptionError(`unknown SQLite driver (${from}): use ${SQLITE_DRIVERS.map((d) => `"${d}"`).join(' or ')}.`, { place });
    }
    const load = forced === 'better-sqlite3' ? loadBetterSqlite3() : loadNodeSqlite();
    if ('error' in load) {
      const why =
        forced === 'better-sqlite3'
          ? 'better-sqlite3 could not be loaded (not installed, or its native module was built for another Node version): run `npm install better-sqlite3@12` (or `npm rebuild better-sqlite3`), or choose driver "node:sqlite" on Node 22.13+.'
          : `this Node (${process.version}) has no node:sqlite: use Node 22.13 or later, or driver "better-sqlite3".`;
      throw new DriverMissingError(`the SQLite driver ${forced} was asked for${requested === undefined ? ` by ${SQLITE_DRIVER_ENV}` : ''}, but ${why}`, { cause: load.error, place });
    }
    return forced;
  }
  const native = loadBetterSqlite3();
  if (!('error' in native)) return 'better-sqlite3';
  const builtIn = loadNodeSqlite();
  if (!('error' in builtIn)) return 'node:sqlite';
  throw new DriverMissingError(`the SQLite engine needs a driver: better-sqlite3 could not be loaded and this Node (${process.version}) has no node:sqlite. Fix: ${FIX}`, {
    cause: native.error,
    place,
  });
}

/**
 * Opens a database file with the driver {@link chooseSqliteDriver} picks, loading it on first use.
 * `readOnly`: opened read-only, and a missing file is an error instead of a new database.
 */
export function openDatabase(path: string, busyTimeoutMs: number, options: { readOnly?: boolean; driver?: SqliteDriverName } = {}): SqliteDatabase {
  const driver = chooseSqliteDriver(options.driver);
  if (driver === 'better-sqlite3') {
    const load = loadBetterSqlite3();
    if ('error' in load) throw load.error;
    return openBetterSqlite3(load.Database, path, busyTimeoutMs, options);
  }
  const load = loadNodeSqlite();
  if ('error' in load) throw load.error;
  return openNodeSqlite(load.DatabaseSync, path, busyTimeoutMs, options);
}

/** A handle passed to `sqlite(db)` as the engine speaks to it: a node:sqlite `DatabaseSync` is adapted, a better-sqlite3 one used as it is. */
export function asSqliteDatabase(handle: SqliteHandle): SqliteDatabase {
  return isNodeSqliteHandle(handle) ? new NodeSqliteDatabase(handle) : handle;
}

/** Which driver a handle belongs to. */
export function driverOf(db: SqliteDatabase): SqliteDriverName {
  return db instanceof NodeSqliteDatabase ? 'node:sqlite' : 'better-sqlite3';
}
