/**
 * @module engines/sqlite/driver
 * The SQLite driver, typed structurally (so cairn's public types never import
 * better-sqlite3's) and loaded lazily (so `import 'cairn'` loads no native module).
 */
import { createRequire } from 'node:module';
import { DriverMissingError } from '../../errors.js';

/** What cairn uses of a better-sqlite3 `Database`. Pass your own handle to `sqlite(db)`. */
export interface SqliteDatabase {
  prepare(sql: string): SqliteStatement;
  exec(sql: string): unknown;
  pragma(source: string, options?: { simple?: boolean }): unknown;
  transaction<F extends (...args: never[]) => unknown>(fn: F): SqliteTransaction<F>;
  close(): unknown;
  readonly open: boolean;
  readonly name: string;
}

export interface SqliteStatement {
  run(...params: unknown[]): { changes: number; lastInsertRowid: number | bigint };
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  iterate(...params: unknown[]): IterableIterator<unknown>;
  raw(toggle?: boolean): SqliteStatement;
  pluck(toggle?: boolean): SqliteStatement;
}

export type SqliteTransaction<F extends (...args: never[]) => unknown> = F & {
  immediate: F;
  deferred: F;
  exclusive: F;
};

type DatabaseConstructor = new (path: string, options?: { timeout?: number; readonly?: boolean; fileMustExist?: boolean }) => SqliteDatabase;

/**
 * Opens a database file with better-sqlite3, loading the driver on first use.
 * `readOnly`: opened read-only, and a missing file is an error instead of a new database.
 */
export function openDatabase(path: string, busyTimeoutMs: number, options: { readOnly?: boolean } = {}): SqliteDatabase {
  let Database: DatabaseConstructor;
  try {
    Database = createRequire(import.meta.url)('better-sqlite3') as DatabaseConstructor;
  } catch (cause) {
    throw new DriverMissingError(
      'the SQLite engine needs the better-sqlite3 driver: run `npm install better-sqlite3@12` (version 13 needs Node 22).',
      { cause, place: { engine: 'sqlite' } },
    );
  }
  return new Database(path, { timeout: busyTimeoutMs, ...(options.readOnly ? { readonly: true, fileMustExist: true } : {}) });
}
