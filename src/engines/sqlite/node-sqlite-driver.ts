/**
 * @module engines/sqlite/node-sqlite-driver
 * Node's built-in `node:sqlite` (`DatabaseSync`, Node 22.13+ without a flag) dressed
 * as the better-sqlite3 subset the engine speaks ({@link SqliteDatabase}), so one
 * connection and one set of statements run on either driver.
 *
 * What differs, and how it is bridged:
 * - rows are null-prototype objects and BLOBs `Uint8Array`s: rows become plain objects,
 *   BLOBs `Buffer`s (a view, no copy), as better-sqlite3 returns them;
 * - no `raw()`/`pluck()`: `setReturnArrays` (Node 22.16+; `Object.values` before it);
 * - no `pragma()`: a `PRAGMA` statement; no `transaction()`: BEGIN/COMMIT/ROLLBACK
 *   statements, with savepoints when nested, rolled back on a throw as better-sqlite3 does;
 * - errors are `{ code: 'ERR_SQLITE_ERROR', errcode, errstr }`: they leave as
 *   {@link SqliteDriverError} with better-sqlite3's `code` (`SQLITE_BUSY`...) and
 *   node's error as `cause`. Node's own argument errors (`ERR_INVALID_ARG_TYPE`) too,
 *   so that every driver error has better-sqlite3's shape.
 */
import { createRequire } from 'node:module';
import type { SqliteDatabase, SqliteStatement, SqliteTransaction } from './sqlite-database.js';
import { sqliteCodeName } from './sqlite-codes.js';

/** What cairn uses of a node:sqlite `StatementSync` (typed here: cairn's types never import node:sqlite's). */
export interface NodeSqliteStatementHandle {
  run(...params: unknown[]): { changes: number | bigint; lastInsertRowid: number | bigint };
  get(...params: unknown[]): unknown;
  all(...params: unknown[]): unknown[];
  iterate(...params: unknown[]): Iterator<unknown>;
  /** Node 22.16+. */
  setReturnArrays?(enabled: boolean): void;
}

/** What cairn uses of a node:sqlite `DatabaseSync`. Pass your own handle to `sqlite(db)`. */
export interface NodeSqliteDatabaseHandle {
  prepare(sql: string): NodeSqliteStatementHandle;
  exec(sql: string): void;
  close(): void;
  /** Node 22.15+. */
  readonly isOpen?: boolean;
  /** Node 22.16+. */
  readonly isTransaction?: boolean;
  /** Node 22.16+. */
  location?(): string | null;
}

type DatabaseSyncConstructor = new (path: string, options?: { readOnly?: boolean; timeout?: number }) => NodeSqliteDatabaseHandle;

/**
 * A SQLite error from node:sqlite in better-sqlite3's shape: `code` is the SQLite
 * name of its extended result code (`SQLITE_BUSY`, `SQLITE_IOERR_FSYNC`...), node's
 * error is the `cause`.
 */
export class SqliteDriverError extends Error {
  /** `SQLITE_<NAME>` for SQLite's errors; undefined for node's argument errors. */
  readonly code: string | undefined;
  /** SQLite's extended result code, when SQLite reported the error. */
  readonly errcode: number | undefined;

  constructor(cause: unknown) {
    const error = cause as { message?: unknown; code?: unknown; errcode?: unknown } | null;
    super(typeof error?.message === 'string' ? error.message : String(cause), { cause });
    this.name = 'SqliteError';
    this.errcode = typeof error?.errcode === 'number' ? error.errcode : undefined;
    this.code = this.errcode !== undefined ? sqliteCodeName(this.errcode) : undefined;
  }
}

/** Runs a node:sqlite call, its errors as {@link SqliteDriverError}. */
function call<T>(fn: () => T): T {
  try {
    return fn();
  } catch (error) {
    throw new SqliteDriverError(error);
  }
}

/** A BLOB as better-sqlite3 returns it: a Buffer over the same memory. */
function value(v: unknown): unknown {
  return v instanceof Uint8Array && !Buffer.isBuffer(v) ? Buffer.from(v.buffer, v.byteOffset, v.byteLength) : v;
}

type Shape = 'object' | 'raw' | 'pluck';

/** A `StatementSync` with better-sqlite3's `raw()`/`pluck()` and row shapes. */
class NodeSqliteStatement implements SqliteStatement {
  private shape: Shape = 'object';
  /** The handle returns arrays (setReturnArrays is on). */
  private arrays = false;

  constructor(private readonly inner: NodeSqliteStatementHandle) {}

  run(...params: unknown[]): { changes: number; lastInsertRowid: number | bigint } {
    const result = call(() => this.inner.run(...params));
    return { changes: Number(result.changes), lastInsertRowid: result.lastInsertRowid };
  }

  get(...params: unknown[]): unknown {
    const row = call(() => this.inner.get(...params));
    return row === undefined ? undefined : this.row(row);
  }

  all(...params: unknown[]): unknown[] {
    const rows = call(() => this.inner.all(...params));
    for (let i = 0; i < rows.length; i++) rows[i] = this.row(rows[i]);
    return rows;
  }

  *iterate(...params: unknown[]): IterableIterator<unknown> {
    const rows = call(() => this.inner.iterate(...params));
    try {
      for (;;) {
        const next = call(() => rows.next());
        if (next.done) return;
        yield this.row(next.value);
      }
    } finally {
      // A consumer that stops early ends the statement: it would hold its read snapshot until reused.
      rows.return?.();
    }
  }

  // As better-sqlite3: raw(true) and pluck(true) exclude each other; (false) turns off only its own.
  raw(toggle = true): SqliteStatement {
    return this.use(toggle ? 'raw' : this.shape === 'raw' ? 'object' : this.shape);
  }

  pluck(toggle = true): SqliteStatement {
    return this.use(toggle ? 'pluck' : this.shape === 'pluck' ? 'object' : this.shape);
  }

  private use(shape: Shape): this {
    this.shape = shape;
    const arrays = shape !== 'object';
    if (arrays !== this.arrays && this.inner.setReturnArrays) {
      this.inner.setReturnArrays(arrays);
      this.arrays = arrays;
    }
    return this;
  }

  private row(row: unknown): unknown {
    if (this.shape === 'object') {
      const plain: Record<string, unknown> = {};
      for (const key in row as Record<string, unknown>) plain[key] = value((row as Record<string, unknown>)[key]);
      return plain;
    }
    const cells = this.arrays ? (row as unknown[]) : Object.values(row as object);
    if (this.shape === 'pluck') return value(cells[0]);
    for (let i = 0; i < cells.length; i++) cells[i] = value(cells[i]);
    return cells;
  }
}

/** A `DatabaseSync` as the engine's {@link SqliteDatabase}. */
export class NodeSqliteDatabase implements SqliteDatabase {
  private closed = false;
  /** Transactions this adapter opened and has not ended (for nesting when the handle cannot tell). */
  private depth = 0;
  private readonly control = new Map<string, NodeSqliteStatementHandle>();

  /** `name`: the file, as messages name it (defaults to the handle's `location()`). */
  constructor(
    private readonly db: NodeSqliteDatabaseHandle,
    readonly name: string = db.location?.() ?? ':memory:',
  ) {}

  get open(): boolean {
    return this.db.isOpen ?? !this.closed;
  }

  prepare(sql: string): SqliteStatement {
    return new NodeSqliteStatement(call(() => this.db.prepare(sql)));
  }

  exec(sql: string): void {
    call(() => this.db.exec(sql));
  }

  pragma(source: string, options: { simple?: boolean } = {}): unknown {
    const statement = this.prepare(`PRAGMA ${source}`);
    return options.simple ? statement.pluck().get() : statement.all();
  }

  transaction<F extends (...args: never[]) => unknown>(fn: F): SqliteTransaction<F> {
    const wrap = (begin: string) => ((...args: never[]) => this.inTransaction(begin, () => fn(...args))) as F;
    return Object.assign(wrap('BEGIN'), { deferred: wrap('BEGIN DEFERRED'), immediate: wrap('BEGIN IMMEDIATE'), exclusive: wrap('BEGIN EXCLUSIVE') });
  }

  close(): void {
    this.closed = true;
    this.db.close();
  }

  /** Runs `fn` in a transaction begun with `begin` (a savepoint inside another), committed if it returns. */
  private inTransaction<T>(begin: string, fn: () => T): T {
    const nested = this.db.isTransaction ?? this.depth > 0;
    this.run(nested ? 'SAVEPOINT cairn' : begin);
    this.depth++;
    try {
      const result = fn();
      this.run(nested ? 'RELEASE cairn' : 'COMMIT');
      return result;
    } catch (error) {
      // SQLite may have rolled back already (an I/O error, a full disk): then there is nothing to undo.
      if (this.db.isTransaction ?? true) {
        try {
          if (nested) {
            this.run('ROLLBACK TO cairn');
            this.run('RELEASE cairn');
          } else this.run('ROLLBACK');
        } catch {
          // No transaction was left to roll back; the first error is the one to report.
        }
      }
      throw error;
    } finally {
      this.depth--;
    }
  }

  /** BEGIN/COMMIT/ROLLBACK..., prepared once. */
  private run(sql: string): void {
    let statement = this.control.get(sql);
    if (!statement) {
      statement = call(() => this.db.prepare(sql));
      this.control.set(sql, statement);
    }
    const prepared = statement;
    call(() => prepared.run());
  }
}

/**
 * node:sqlite's `DatabaseSync`, or the reason it cannot be loaded (Node 20, or a Node
 * 22 before 22.13 run without `--experimental-sqlite`). Loaded once; its
 * ExperimentalWarning is not printed: choosing the driver is cairn's job, and the
 * warning would land in every CLI command's output.
 */
export function loadNodeSqlite(): { DatabaseSync: DatabaseSyncConstructor } | { error: unknown } {
  if (loaded) return loaded;
  const emitWarning = process.emitWarning;
  process.emitWarning = function filtered(this: unknown, warning: string | Error, ...rest: unknown[]) {
    const text = typeof warning === 'string' ? warning : warning.message;
    const type = typeof rest[0] === 'string' ? rest[0] : (rest[0] as { type?: string } | undefined)?.type ?? (warning as Error).name;
    if (type === 'ExperimentalWarning' && /SQLite/i.test(text)) return;
    return (emitWarning as (...args: unknown[]) => void).call(process, warning, ...rest);
  } as typeof process.emitWarning;
  try {
    const module = createRequire(import.meta.url)('node:sqlite') as { DatabaseSync: DatabaseSyncConstructor };
    loaded = { DatabaseSync: module.DatabaseSync };
  } catch (error) {
    loaded = { error };
  } finally {
    process.emitWarning = emitWarning;
  }
  return loaded;
}

let loaded: { DatabaseSync: DatabaseSyncConstructor } | { error: unknown } | undefined;

/** Opens `path` with node:sqlite (which must have loaded: see {@link loadNodeSqlite}). */
export function openNodeSqlite(DatabaseSync: DatabaseSyncConstructor, path: string, busyTimeoutMs: number, options: { readOnly?: boolean }): SqliteDatabase {
  const db = call(() => new DatabaseSync(path, { timeout: busyTimeoutMs, ...(options.readOnly ? { readOnly: true } : {}) }));
  return new NodeSqliteDatabase(db, path);
}

/** True for a node:sqlite `DatabaseSync` handle (it has no better-sqlite3 `pragma()`). */
export function isNodeSqliteHandle(handle: SqliteDatabase | NodeSqliteDatabaseHandle): handle is NodeSqliteDatabaseHandle {
  return typeof (handle as { pragma?: unknown }).pragma !== 'function';
}
