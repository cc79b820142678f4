/**
 * @module engines/sqlite/sqlite-database
 * The database handle the SQLite engine speaks to: the subset of better-sqlite3's
 * `Database` it uses. better-sqlite3 handles are used as they are; node:sqlite's are
 * adapted to it (see node-sqlite-driver.ts).
 */

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

/** What cairn uses of a better-sqlite3 `Statement`. */
export interface SqliteStatement {
  run(...params: unknown[]): { changes: number; lastInsertRowid: number | bigint };
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  iterate(...params: unknown[]): IterableIterator<unknown>;
  raw(toggle?: boolean): SqliteStatement;
  pluck(toggle?: boolean): SqliteStatement;
}

/** What better-sqlite3's `db.transaction(fn)` returns: `fn` in a transaction, with its BEGIN variants. */
export type SqliteTransaction<F extends (...args: never[]) => unknown> = F & {
  immediate: F;
  deferred: F;
  exclusive: F;
};
