/**
 * @module engines/sqlite/connection
 * One SQLite connection shared by the engine's checkpointer, ledger and store:
 * lazy open (pragmas, migrations), a prepared-statement cache, the thread id →
 * internal key map, and wrapping of driver errors.
 */
import { CairnError, EngineError } from '../../errors.js';
import { Lifecycle } from '../../internal/lifecycle.js';
import { openDatabase, type SqliteDatabase, type SqliteStatement } from './driver.js';
import { migrate } from './migrations.js';

export interface SqliteOptions {
  /**
   * `full` (default): WAL with `synchronous=FULL`: a committed step survives power loss.
   * `normal`: WAL with `synchronous=NORMAL`: faster; a committed step survives a crash of
   * the process but the last commits may be lost on power loss or an OS crash.
   */
  durability?: 'full' | 'normal';
  /** How long a writer waits for another connection's write lock, ms. Default 5000. */
  busyTimeoutMs?: number;
}

export class SqliteConnection {
  readonly lifecycle: Lifecycle;
  private handle: SqliteDatabase | undefined;
  private readonly statements = new Map<string, SqliteStatement>();
  private readonly ownsHandle: boolean;
  /** One transaction wrapper, created once: better-sqlite3 builds its BEGIN/COMMIT machinery per wrapper. */
  private transactor: ((fn: () => unknown) => unknown) & { immediate: (fn: () => unknown) => unknown } | undefined;

  constructor(
    source: string | SqliteDatabase,
    private readonly options: SqliteOptions = {},
  ) {
    this.ownsHandle = typeof source === 'string';
    this.lifecycle = new Lifecycle('sqlite', () => {
      const db = typeof source === 'string' ? openDatabase(source, options.busyTimeoutMs ?? 5000) : source;
      db.pragma('journal_mode = WAL');
      db.pragma(`synchronous = ${this.options.durability === 'normal' ? 'NORMAL' : 'FULL'}`);
      db.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 5000}`);
      migrate(db);
      this.handle = db;
    });
  }

  /** The open database (opening it on first use). */
  get db(): SqliteDatabase {
    this.lifecycle.useSync();
    return this.handle!;
  }

  /** A cached prepared statement. */
  stmt(sql: string): SqliteStatement {
    this.lifecycle.useSync();
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  /**
   * Internal key of a thread, or undefined if it does not exist. Looked up every time
   * (one primary-key probe): a thread deleted and created again, by this process or
   * another, gets a new tid, and tids are never reused.
   */
  tid(threadId: string): number | undefined {
    return this.stmt('SELECT tid FROM cairn_threads WHERE id = ?').pluck().get(threadId) as number | undefined;
  }

  /** Runs `fn` in an IMMEDIATE transaction (the write lock is taken at BEGIN, so reads inside see the latest commit). */
  writeTransaction<T>(what: string, fn: () => T): T {
    this.lifecycle.useSync();
    this.transactor ??= this.db.transaction((inner: () => unknown) => inner()) as never;
    return this.run(what, () => this.transactor!.immediate(fn) as T);
  }

  /** Runs `fn`, turning driver errors into EngineError (cause kept); cairn errors pass through. */
  run<T>(what: string, fn: () => T): T {
    try {
      return fn();
    } catch (error) {
      if (CairnError.is(error)) throw error;
      const code = (error as { code?: string }).code;
      throw new EngineError(`${what} failed${code ? ` (${code})` : ''}: ${(error as Error).message}`, {
        cause: error,
        place: { engine: 'sqlite' },
      });
    }
  }

  close(): void {
    if (!this.lifecycle.close()) return;
    this.statements.clear();
    if (this.handle && this.ownsHandle && this.handle.open) this.handle.close();
  }
}
