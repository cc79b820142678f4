/**
 * @module engines/sqlite/connection
 * One SQLite connection shared by the engine's checkpointer, ledger and store:
 * lazy open (pragmas, migrations), a prepared-statement cache, the thread id →
 * internal key map, and wrapping of driver errors.
 *
 * Statements run only inside the connection's two entry points, {@link SqliteConnection.read}
 * and {@link SqliteConnection.write} (an IMMEDIATE transaction), each named by its
 * operation. Every driver error leaves as an {@link EngineError} naming that operation
 * and the statement, with the driver's error as `cause`: the statements the
 * {@link SqliteQueries} hand out wrap their own calls, the entry points wrap what runs
 * inside them (BEGIN and COMMIT included), and the lazy open wraps its own.
 */
import { statSync } from 'node:fs';
import { SQLITE_BUSY_TIMEOUT_MS, SQLITE_MMAP_BYTES, SQLITE_PAGE_SIZE } from '../../defaults.js';
import { CairnError, DatabaseFromFutureError, DatabaseNotFoundError, DatabaseOutdatedError, EngineError, InvalidOptionError } from '../../errors.js';
import { Lifecycle } from '../../internal/lifecycle.js';
import { asSqliteDatabase, driverOf, openDatabase, type SqliteDatabase, type SqliteDriverName, type SqliteHandle, type SqliteStatement } from './driver.js';
import { migrate, SQLITE_MIGRATIONS } from './migrations.js';
import { checkOptionKeys } from '../../internal/option-keys.js';

/** Options of `sqlite(path, options)`: durability, read-only opening, timeouts and the memory map. */
export interface SqliteOptions {
  /**
   * `full` (default): WAL with `synchronous=FULL`: a committed step survives power loss.
   * `normal`: WAL with `synchronous=NORMAL`: faster; a committed step survives a crash of
   * the process but the last commits may be lost on power loss or an OS crash.
   */
  durability?: 'full' | 'normal';
  /** How long a writer waits for another connection's write lock, ms. Default 5000. */
  busyTimeoutMs?: number;
  /**
   * How much of the file SQLite reads through a memory map instead of `read()` calls,
   * bytes (`PRAGMA mmap_size`). Default 256 MiB: loading a long thread reads every
   * page of its items, and the map saves a system call and a copy per page (a fifth
   * of a 5,000-item load). Writes still go through the WAL. 0 turns it off, e.g. on a
   * filesystem where a failing disk should be an error rather than a SIGBUS.
   */
  mmapBytes?: number;
  /**
   * Page size of a file this open creates, bytes: a power of two from 512 to 65536.
   * Default 4096 (SQLite's). A file that exists keeps its own. Larger pages pack
   * items of about 1 KB (a chat message) better: with 8192, seven to a page instead of
   * three, 9 % fewer bytes for a LangGraph thread of 5,000 messages in the bench, for about 5 %
   * more time per step (each commit writes its pages whole to the WAL).
   *
   * @example `const engine = sqlite('./cairn.db', { pageSize: 8192 });`
   */
  pageSize?: number;
  /**
   * Open for reading only: the file must exist and hold a cairn database with every
   * migration this cairn knows. Nothing is created, migrated or written (writes fail
   * with EngineError); a missing file or database is {@link DatabaseNotFoundError}, an
   * older one {@link DatabaseOutdatedError}. (A database migrated by a newer cairn is
   * {@link DatabaseFromFutureError}, opened for reading or not.) For inspection tools.
   *
   * @example `const engine = sqlite('./cairn.db', { readOnly: true });`
   */
  readOnly?: boolean;
  /**
   * The driver a path is opened with: `'better-sqlite3'` (native; install it beside
   * cairn) or `'node:sqlite'` (built into Node 22.13+). Default: the
   * `CAIRN_SQLITE_DRIVER` environment variable if set, else better-sqlite3 when it
   * loads on this Node, else node:sqlite. Ignored for a handle passed in.
   *
   * @example `const engine = sqlite('./cairn.db', { driver: 'node:sqlite' });`
   */
  driver?: SqliteDriverName;
}

const SQLITE_OPTION_KEYS: readonly (keyof SqliteOptions)[] = ['durability', 'busyTimeoutMs', 'mmapBytes', 'pageSize', 'readOnly', 'driver'];

/**
 * `sqlite(file, options)`, checked before anything is opened: a misspelt
 * `durabilty: 'normal'` or `durability: 'fast'` would open with synchronous=FULL, a
 * misspelt `readonly: true` would open for writing and migrate the file.
 */
function checkSqliteOptions(options: SqliteOptions): void {
  const refuse = (message: string) => {
    throw new InvalidOptionError(`sqlite: ${message}`, { place: { engine: 'sqlite' } });
  };
  checkOptionKeys('sqlite', options, SQLITE_OPTION_KEYS, { engine: 'sqlite' });
  const { durability, busyTimeoutMs, mmapBytes, readOnly } = options;
  if (durability !== undefined && durability !== 'full' && durability !== 'normal') refuse(`durability must be 'full' or 'normal', not ${JSON.stringify(durability)}.`);
  if (busyTimeoutMs !== undefined && (typeof busyTimeoutMs !== 'number' || !Number.isSafeInteger(busyTimeoutMs) || busyTimeoutMs < 0)) refuse(`busyTimeoutMs must be a whole number of milliseconds, 0 or more, not ${String(busyTimeoutMs)}.`);
  if (mmapBytes !== undefined && (typeof mmapBytes !== 'number' || !Number.isSafeInteger(mmapBytes) || mmapBytes < 0)) refuse(`mmapBytes must be a whole number of bytes, 0 or more, not ${String(mmapBytes)}.`);
  if (readOnly !== undefined && typeof readOnly !== 'boolean') refuse(`readOnly must be true or false, not ${JSON.stringify(readOnly)}.`);
  pageSizeOf(options.pageSize);
}

/** The page size option, checked: a power of two from 512 to 65536 (SQLite would ignore anything else without a word). */
function pageSizeOf(size: number | undefined): number {
  if (size === undefined) return SQLITE_PAGE_SIZE;
  if (!Number.isInteger(size) || size < 512 || size > 65536 || (size & (size - 1)) !== 0) {
    throw new InvalidOptionError(`pageSize must be a power of two from 512 to 65536 bytes, not ${String(size)}.`, { place: { engine: 'sqlite' } });
  }
  return size;
}

/** True for SQLite's "another connection holds the lock" codes (SQLITE_BUSY and its extended codes). */
function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
}

/** Blocks the thread for `ms` (the open is synchronous, like every call of either driver). */
function sleepSync(ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/**
 * Switches the file to WAL. Changing the journal mode needs an exclusive lock, and
 * SQLite answers SQLITE_BUSY at once (no busy handler) when another connection is
 * opening or migrating the same new file, so it is retried until the busy timeout.
 * A file already in WAL (every open but the first) is left as it is, with no lock taken.
 */
function enableWal(db: SqliteDatabase, timeoutMs: number): void {
  const deadline = Date.now() + timeoutMs;
  for (let attempt = 0; ; attempt++) {
    try {
      if (String(db.pragma('journal_mode', { simple: true })).toLowerCase() === 'wal') return;
      db.pragma('journal_mode = WAL');
      return;
    } catch (error) {
      if (!isBusy(error) || Date.now() >= deadline) throw error;
      sleepSync(Math.min(2 ** attempt, 50) * (0.5 + Math.random()));
    }
  }
}

/** A statement's SQL, shortened for a message. */
function describeSql(sql: string): string {
  const text = sql.replace(/\s+/g, ' ').trim();
  return text.length > 120 ? `${text.slice(0, 117)}...` : text;
}

/** A prepared statement whose calls turn driver errors into EngineError (`fail`: the connection's). */
class GuardedStatement implements SqliteStatement {
  constructor(
    private readonly fail: (error: unknown, sql: string) => Error,
    private readonly inner: SqliteStatement,
    private readonly sql: string,
  ) {}

  run(...params: unknown[]): { changes: number; lastInsertRowid: number | bigint } {
    try {
      return this.inner.run(...params);
    } catch (error) {
      throw this.fail(error, this.sql);
    }
  }

  get(...params: unknown[]): unknown {
    try {
      return this.inner.get(...params);
    } catch (error) {
      throw this.fail(error, this.sql);
    }
  }

  all(...params: unknown[]): unknown[] {
    try {
      return this.inner.all(...params);
    } catch (error) {
      throw this.fail(error, this.sql);
    }
  }

  *iterate(...params: unknown[]): IterableIterator<unknown> {
    let rows: IterableIterator<unknown>;
    try {
      rows = this.inner.iterate(...params);
    } catch (error) {
      throw this.fail(error, this.sql);
    }
    try {
      for (;;) {
        let next: IteratorResult<unknown>;
        try {
          next = rows.next();
        } catch (error) {
          throw this.fail(error, this.sql);
        }
        if (next.done) return;
        yield next.value;
      }
    } finally {
      // A consumer that stops early ends the driver's iteration, which otherwise keeps the statement busy.
      rows.return?.();
    }
  }

  // better-sqlite3 counts an explicit undefined as an argument (and refuses it): pass the toggle only when given.
  raw(toggle?: boolean): SqliteStatement {
    if (toggle === undefined) this.inner.raw();
    else this.inner.raw(toggle);
    return this;
  }

  pluck(toggle?: boolean): SqliteStatement {
    if (toggle === undefined) this.inner.pluck();
    else this.inner.pluck(toggle);
    return this;
  }
}

/**
 * What a read or a write runs its statements with: handed to the function given to
 * {@link SqliteConnection.read} or {@link SqliteConnection.write}, and valid only while it runs.
 */
export interface SqliteQueries {
  /** A cached prepared statement whose calls wrap driver errors. */
  stmt(sql: string): SqliteStatement;
  /** A statement prepared for this call only (for SQL text built per call), whose calls wrap driver errors. */
  prepare(sql: string): SqliteStatement;
  /**
   * Internal key of a thread, or undefined if it does not exist. Looked up every time
   * (one primary-key probe): a thread deleted and created again, by this process or
   * another, gets a new tid, and tids are never reused.
   */
  tid(threadId: string): number | undefined;
}

/**
 * The file (or handle), its statements and its lifecycle, shared by one engine's
 * checkpointer, ledger and store.
 *
 * @example
 * ```ts
 * const conn = new SqliteConnection('./cairn.db');
 * const n = conn.read('countThreads', (q) => q.stmt('SELECT count(*) FROM cairn_threads').pluck().get());
 * ```
 */
export class SqliteConnection {
  readonly lifecycle: Lifecycle;
  private handle: SqliteDatabase | undefined;
  private readonly statements = new Map<string, SqliteStatement>();
  private readonly ownsHandle: boolean;
  /** One transaction wrapper, created once: better-sqlite3 builds its BEGIN/COMMIT machinery per wrapper. */
  private transactor: ((fn: () => unknown) => unknown) & { immediate: (fn: () => unknown) => unknown } | undefined;
  /** The operation {@link read} or {@link write} is inside, named in the errors of its statements. */
  private operation: string | undefined;
  private readonly queries: SqliteQueries = {
    stmt: (sql) => this.stmt(sql),
    prepare: (sql) => this.prepare(sql),
    tid: (threadId) => this.stmt('SELECT tid FROM cairn_threads WHERE id = ?').pluck().get(threadId) as number | undefined,
  };
  /** The file, as messages name it. */
  readonly location: string;
  /** The driver this connection runs on; known once it opened (a handle passed in: at once). */
  driver: SqliteDriverName | undefined;

  constructor(
    handle: string | SqliteHandle,
    private readonly options: SqliteOptions = {},
  ) {
    // Checked at once, not at the lazy open.
    checkSqliteOptions(options);
    const source = typeof handle === 'string' ? handle : asSqliteDatabase(handle);
    this.ownsHandle = typeof source === 'string';
    this.location = typeof source === 'string' ? source : source.name;
    this.driver = typeof source === 'string' ? undefined : driverOf(source);
    this.lifecycle = new Lifecycle('sqlite', { open: () => this.open(source), close: () => this.shut() });
  }

  private open(source: string | SqliteDatabase): void {
    const timeout = this.options.busyTimeoutMs ?? SQLITE_BUSY_TIMEOUT_MS;
    const readOnly = this.options.readOnly === true;
    let db: SqliteDatabase | undefined;
    try {
      const missing = () => new DatabaseNotFoundError(this.location, 'there is no such file.', { engine: 'sqlite' });
      if (readOnly && typeof source === 'string') {
        // Checked first: the driver reports a missing folder as a plain TypeError, and a
        // folder as a disk I/O error.
        const file = statSync(source, { throwIfNoEntry: false });
        if (!file) throw missing();
        if (file.isDirectory()) throw new DatabaseNotFoundError(this.location, 'it is a folder, not a database file.', { engine: 'sqlite' });
      }
      try {
        db = typeof source === 'string' ? openDatabase(source, timeout, { readOnly, ...(this.options.driver ? { driver: this.options.driver } : {}) }) : source;
        this.driver = driverOf(db);
      } catch (error) {
        // Removed between the check and the open.
        if (readOnly && (error as { code?: unknown }).code === 'SQLITE_CANTOPEN') throw missing();
        throw error;
      }
      // First: everything below may wait for another process opening the same file.
      db.pragma(`busy_timeout = ${timeout}`);
      db.pragma(`mmap_size = ${Math.max(0, Math.floor(this.options.mmapBytes ?? SQLITE_MMAP_BYTES))}`);
      if (readOnly) this.checkSchema(db);
      else {
        // A new file only (no page written yet): an existing one keeps its page size.
        if (db.pragma('page_count', { simple: true }) === 0) db.pragma(`page_size = ${pageSizeOf(this.options.pageSize)}`);
        enableWal(db, timeout);
        db.pragma(`synchronous = ${this.options.durability === 'normal' ? 'NORMAL' : 'FULL'}`);
        migrate(db, SQLITE_MIGRATIONS, this.location);
      }
      this.handle = db;
    } catch (error) {
      if (db && this.ownsHandle && db.open) db.close();
      if (CairnError.is(error)) throw error;
      // Read-only, a file that is not SQLite is no cairn database: said as for a missing one.
      if (readOnly && (error as { code?: unknown }).code === 'SQLITE_NOTADB') {
        throw new DatabaseNotFoundError(this.location, 'the file is not a SQLite database.', { engine: 'sqlite' });
      }
      throw this.driverError(`opening ${this.location}`, error);
    }
  }

  /** A read-only open: the file must hold cairn's tables with every migration this cairn knows. */
  private checkSchema(db: SqliteDatabase): void {
    const place = { engine: 'sqlite' };
    const table = db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'cairn_migrations'`).pluck().get();
    if (table === undefined) throw new DatabaseNotFoundError(this.location, 'the file holds no cairn tables.', place);
    const rows = db.prepare('SELECT id, name FROM cairn_migrations ORDER BY id').all() as { id: number; name: string }[];
    const applied = new Set(rows.map((row) => row.id));
    const known = SQLITE_MIGRATIONS.map((m) => m.id);
    const latest = Math.max(...known);
    const newer = rows.filter((row) => !known.includes(row.id));
    if (newer.length) throw new DatabaseFromFutureError(this.location, newer.map((row) => row.id), latest, place, newer.at(-1)!.name);
    const missing = known.filter((id) => !applied.has(id));
    if (missing.length) throw new DatabaseOutdatedError(this.location, missing, latest, place);
  }

  /** The open database (opening it on first use). */
  private get db(): SqliteDatabase {
    this.lifecycle.useSync();
    return this.handle!;
  }

  private stmt(sql: string): SqliteStatement {
    this.inOperation(sql);
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  private prepare(sql: string): SqliteStatement {
    this.inOperation(sql);
    const db = this.db;
    try {
      return new GuardedStatement(this.failure, db.prepare(sql), sql);
    } catch (error) {
      throw this.fail(error, sql);
    }
  }

  /** Statements belong to a read or a write: one used after its function returned has no operation to be named by. */
  private inOperation(sql: string): void {
    if (this.operation === undefined) {
      throw new EngineError(`statement "${describeSql(sql)}" was run outside a read or a write of the connection.`, { place: { engine: 'sqlite' } });
    }
  }

  /**
   * Runs `fn` as the read `what` (opening the database on first use): driver errors of
   * its statements become EngineError naming `what` and the statement, with the driver's
   * error as `cause`; cairn errors pass through.
   */
  read<T>(what: string, fn: (q: SqliteQueries) => T): T {
    return this.run(what, () => fn(this.queries));
  }

  /**
   * Runs `fn` as the write `what` in an IMMEDIATE transaction (the write lock is taken
   * at BEGIN, so reads inside see the latest commit, and nothing else writes until
   * COMMIT); a throw rolls it back. Errors as in {@link read}.
   */
  write<T>(what: string, fn: (q: SqliteQueries) => T): T {
    return this.run(what, () => {
      const db = this.db;
      this.transactor ??= db.transaction((inner: () => unknown) => inner()) as never;
      return this.transactor!.immediate(() => fn(this.queries)) as T;
    });
  }

  private run<T>(what: string, fn: () => T): T {
    this.lifecycle.useSync();
    const outer = this.operation;
    this.operation = what;
    try {
      return fn();
    } catch (error) {
      throw this.fail(error);
    } finally {
      this.operation = outer;
    }
  }

  private readonly failure = (error: unknown, sql: string): Error => this.fail(error, sql);

  /** A driver error as EngineError naming the operation under way (and the statement); a cairn error is returned as it is. */
  private fail(error: unknown, sql?: string): Error {
    if (CairnError.is(error)) return error;
    return this.driverError(this.operation ?? 'a statement', error, sql);
  }

  private driverError(what: string, error: unknown, sql?: string): EngineError {
    const code = (error as { code?: unknown } | null)?.code;
    const text = error instanceof Error ? error.message : String(error);
    const message = /[.!?]$/.test(text) ? text : `${text}.`;
    const hint = isBusy(error)
      ? ` Another process held the database's lock for longer than the busy timeout (${this.options.busyTimeoutMs ?? SQLITE_BUSY_TIMEOUT_MS} ms): raise busyTimeoutMs, or keep transactions short.`
      : code === 'SQLITE_READONLY' && this.options.readOnly
        ? ' This engine was opened with readOnly: open it without readOnly to write.'
        : code === 'SQLITE_READONLY_DIRECTORY'
          ? // SQLite's "attempt to write" is about the -shm file, not the database: a read-only reader needs it too.
            ` Nothing was written: SQLite reads a database in WAL mode through a ${this.location}-shm file beside it, and could not create one in a folder this user cannot write. Run as a user who can write that folder, or copy the database (with its -wal file, if there is one) to a folder you can write and read the copy.`
          : '';
    return new EngineError(`${what} failed${typeof code === 'string' ? ` (${code})` : ''}: ${message}${sql ? ` In statement "${describeSql(sql)}".` : ''}${hint}`, {
      cause: error,
      place: { engine: 'sqlite' },
      // Another process held the lock: the same call may get it next time.
      retryable: isBusy(error),
    });
  }

  /**
   * Runs `work` with `secure_delete` on (SQLite overwrites what is deleted with zeros,
   * in the table, its indexes and freed pages), then checkpoints the WAL and truncates
   * it, so that neither the file nor its WAL keeps the deleted rows. With `vacuum`,
   * VACUUM then rewrites the whole file, which also drops the older versions of rows
   * updated before (it needs as much free disk as the file, and time to match).
   */
  async purging<T>(work: () => Promise<T>, options: { vacuum?: boolean | 'full' } = {}): Promise<{ result: T; purge: { done: string[]; remains: string[] } }> {
    const db = () => this.db;
    const before = this.run('secure delete', () => String(db().pragma('secure_delete', { simple: true })));
    this.run('secure delete', () => db().pragma('secure_delete = ON'));
    const done = ['secure_delete on: deleted rows, index entries and freed pages overwritten with zeros'];
    const remains: string[] = [];
    let result: T;
    try {
      result = await work();
    } finally {
      this.run('secure delete', () => db().pragma(`secure_delete = ${before === '1' ? 'ON' : 'OFF'}`));
    }
    if (options.vacuum) {
      // Safe since migration 11: items keep their rowids (an INTEGER PRIMARY KEY), which positions point at.
      this.run('vacuum', () => db().exec('VACUUM'));
      done.push('VACUUM: the file rewritten, free pages and older row versions dropped');
    }
    const [busy, frames, moved] = this.run('checkpoint', () => {
      const row = db().pragma('wal_checkpoint(TRUNCATE)') as { busy: number; log: number; checkpointed: number }[];
      return [row[0]?.busy ?? 0, row[0]?.log ?? 0, row[0]?.checkpointed ?? 0];
    });
    if (busy) remains.push(`the WAL was not truncated (another connection is reading; ${moved} of ${frames} frames checkpointed): the deleted rows' earlier page images stay in ${this.location}-wal until a checkpoint completes (PRAGMA wal_checkpoint(TRUNCATE) when readers are done)`);
    else done.push('WAL checkpointed and truncated to 0 bytes');
    if (!options.vacuum) remains.push('free space inside pages may hold older versions of rows updated or deleted before the erasure (ciphertext on an encrypted engine; in the clear without encryption): vacuum rewrites the file without them');
    remains.push('copies of the file taken before (backups, replicas, filesystem snapshots) are untouched');
    return { result, purge: { done, remains } };
  }

  /** Closes the engine: every later call throws EngineClosedError. A handle passed in is left open. */
  close(): Promise<void> {
    return this.lifecycle.close();
  }

  private shut(): void {
    this.statements.clear();
    this.transactor = undefined;
    if (this.handle && this.ownsHandle && this.handle.open) this.handle.close();
  }
}
