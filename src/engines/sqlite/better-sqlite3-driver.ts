/**
 * @module engines/sqlite/better-sqlite3-driver
 * better-sqlite3, loaded on first use and probed once: its JavaScript loads on any
 * Node, but its native module only on the Node it was compiled for (another Node
 * throws ERR_DLOPEN_FAILED / a NODE_MODULE_VERSION mismatch at the first `new
 * Database`). The probe opens an in-memory database so that such a build counts as
 * "cannot be loaded", and the default driver choice can move on quietly.
 */
import { createRequire } from 'node:module';
import type { SqliteDatabase } from './sqlite-database.js';

type DatabaseConstructor = new (path: string, options?: { timeout?: number; readonly?: boolean; fileMustExist?: boolean }) => SqliteDatabase;

let loaded: { Database: DatabaseConstructor } | { error: unknown } | undefined;

/** better-sqlite3's `Database`, with its native module proven to load, or why it cannot be. */
export function loadBetterSqlite3(): { Database: DatabaseConstructor } | { error: unknown } {
  if (loaded) return loaded;
  try {
    const Database = createRequire(import.meta.url)('better-sqlite3') as DatabaseConstructor;
    new Database(':memory:').close();
    loaded = { Database };
  } catch (error) {
    loaded = { error };
  }
  return loaded;
}

/** Opens `path` with better-sqlite3 (which must have loaded: see {@link loadBetterSqlite3}). */
export function openBetterSqlite3(Database: DatabaseConstructor, path: string, busyTimeoutMs: number, options: { readOnly?: boolean }): SqliteDatabase {
  return new Database(path, { timeout: busyTimeoutMs, ...(options.readOnly ? { readonly: true, fileMustExist: true } : {}) });
}
