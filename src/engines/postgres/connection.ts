/**
 * @module engines/postgres/connection
 * One pool shared by the engine's checkpointer, ledger and store: lazy open
 * (driver, pool, migrations), schema-qualified table names, prepared statements,
 * and wrapping of driver errors.
 *
 * The pool is reached only through three entry points, each named by its operation:
 * {@link PostgresConnection.query} (one statement), {@link PostgresConnection.transaction}
 * (several, on one connection) and {@link PostgresConnection.listen} (a dedicated
 * LISTEN connection). Every driver error leaves them as an {@link EngineError} naming
 * the operation, its SQLSTATE and a fix, with the driver's error as `cause`.
 *
 * Every statement names its tables with the schema (`"schema".cairn_threads`)
 * rather than setting `search_path` on each connection: a pool passed in by the
 * user keeps its own `search_path` for the user's own queries, nothing depends on
 * per-connection state (so a connection replaced by the pool, or a transaction-mode
 * pooler in between, cannot silently point cairn at another schema), and two
 * engines on two schemas can share one pool.
 */
import { createHash } from 'node:crypto';
import { POSTGRES_LISTEN_RETRY_MS, POSTGRES_POOL_MAX } from '../../defaults.js';
import { CairnError, DatabaseFromFutureError, DatabaseNotFoundError, DatabaseOutdatedError, EngineError, InvalidKeyError, InvalidOptionError } from '../../errors.js';
import { Lifecycle } from '../../internal/lifecycle.js';
import { checkTenant } from '../../artifacts/refs.js';
import { createPool, type PoolClientLike, type PoolLike } from './driver.js';
import { migrate, POSTGRES_MIGRATIONS, quoteIdent } from './migrations.js';
import { TENANT_SETTING } from './row-level-security.js';
import { checkOptionKeys } from '../../internal/option-keys.js';

/** Options of `postgres(url, options)`: the schema, the pool, read-only opening, the tenant. */
export interface PostgresOptions {
  /**
   * Schema holding cairn's tables; created (with the tables) on first use if missing (never with `readOnly`).
   * Default `public`. Letters, digits and `_`, starting with a letter or `_`, at most 63.
   */
  schema?: string;
  /** Size of the pool the engine creates from a connection string. Default 10. Ignored for a pool you pass in. */
  max?: number;
  /** `application_name` of the pool the engine creates (seen in pg_stat_activity). Default `cairn`. */
  applicationName?: string;
  /**
   * Open for reading only: the schema must exist and hold cairn's tables with every
   * migration this cairn knows. Nothing is created or migrated; a missing schema or
   * tables is {@link DatabaseNotFoundError}, an older schema {@link DatabaseOutdatedError}.
   * (A schema migrated by a newer cairn is {@link DatabaseFromFutureError}, opened for
   * reading or not.) For inspection tools. (Writes are not refused by the engine: use a role without
   * write privileges for that.)
   *
   * @example `const engine = postgres(url, { schema: 'cairn', readOnly: true });`
   */
  readOnly?: boolean;
  /**
   * Scope the engine to one tenant: every statement it sends runs with `cairn.tenant`
   * set to it, which is what the row-level security policies of
   * {@link enableRowLevelSecurity} compare every row with (under a role without
   * `BYPASSRLS`, the engine sees and writes that tenant's rows only). A thread it
   * creates without a tenant gets this one; creating or taking a thread of another
   * tenant is {@link TenantMismatchError}.
   *
   * On a pool the engine creates (a connection string) the setting is a startup
   * option of each of the pool's connections, which only this engine uses: it costs
   * nothing per statement. On a pool you pass in, which others may share, each
   * statement runs in a transaction that sets it with `set_config(..., true)`
   * (gone at COMMIT or ROLLBACK, so the connection goes back to the pool without it):
   * two more round trips per statement. Pass a pool behind a transaction-mode pooler
   * (PgBouncer), which does not keep startup options. 1 to 256 characters, no control characters.
   *
   * @example `const acme = postgres('postgres://tenant_app@db/app', { schema: 'cairn', tenant: 'acme' });`
   */
  tenant?: string;
}

const POSTGRES_OPTION_KEYS: readonly (keyof PostgresOptions)[] = ['schema', 'max', 'applicationName', 'readOnly', 'tenant'];

/**
 * `postgres(url, options)`, checked before anything connects: a misspelt `readonly` or
 * `tennant` would open for writing, or unscoped to the tenant the caller meant.
 */
function checkPostgresOptions(options: PostgresOptions): void {
  const refuse = (message: string) => {
    throw new InvalidOptionError(`postgres: ${message}`, { place: { engine: 'postgres' } });
  };
  checkOptionKeys('postgres', options, POSTGRES_OPTION_KEYS, { engine: 'postgres' });
  const { max, applicationName, readOnly } = options;
  if (max !== undefined && (typeof max !== 'number' || !Number.isSafeInteger(max) || max < 1)) refuse(`max must be a whole number of connections, 1 or more, not ${String(max)}.`);
  if (applicationName !== undefined && typeof applicationName !== 'string') refuse(`applicationName must be a string, not ${JSON.stringify(applicationName)}.`);
  if (readOnly !== undefined && typeof readOnly !== 'boolean') refuse(`readOnly must be true or false, not ${JSON.stringify(readOnly)}.`);
}

/** A connection string as messages show it: the password masked. */
export function maskUrl(url: string): string {
  return url.replace(/^([a-z][a-z0-9+.-]*:\/\/[^:/@]*):[^@/]*@/i, '$1:***@');
}

/**
 * Statements that may be sent again when the connection died under them (a server
 * restart, pg_terminate_backend, a network blip): reads, and writes that are
 * insert-if-absent or set-to-a-value, so a second delivery changes nothing. A step
 * commit has its own recovery (it checks whether it landed).
 */
const RESENDABLE = new Set(['ledger.write', 'ledger.writeOutcome', 'ledger.discardRecords', 'renewLease', 'releaseThread', 'putPendingWrite', 'putSnapshot', 'consumeSignal']);

/** True when a driver error means the connection was lost, not that the statement was refused. */
export function isConnectionLoss(error: unknown): boolean {
  const target = (error as { cause?: unknown })?.cause ?? error;
  const code = (target as { code?: unknown })?.code;
  if (typeof code === 'string' && (/^08/.test(code) || ['57P01', '57P02', '57P03', 'ECONNRESET', 'EPIPE', 'ECONNREFUSED'].includes(code))) return true;
  const message = target instanceof Error ? target.message : '';
  return /Connection terminated|connection is closed|Client has encountered a connection error/i.test(message);
}

/**
 * SQLSTATEs after which the same statement may succeed when sent again: a statement or
 * lock timeout or cancel (57014, 55P03), a serialization or deadlock conflict (40001,
 * 40P01), too many connections (53300), a server starting or shutting down (57P01-57P03).
 */
const TRANSIENT = new Set(['57014', '55P03', '40001', '40P01', '53300', '57P01', '57P02', '57P03']);

/** True when a driver error is worth trying again: the connection was lost, or the server refused for now (see TRANSIENT). */
export function isTransient(error: unknown): boolean {
  const target = (error as { cause?: unknown })?.cause ?? error;
  const code = (target as { code?: unknown })?.code;
  return isConnectionLoss(error) || (typeof code === 'string' && (TRANSIENT.has(code) || code === 'ETIMEDOUT'));
}

/** Schema-qualified names of cairn's tables. */
export interface PostgresTables {
  threads: string;
  heads: string;
  positions: string;
  items: string;
  /** Item packs (migration 12). */
  packs: string;
  snapshots: string;
  pending: string;
  failures: string;
  ledger: string;
  store: string;
  signals: string;
}

/** A query runner bound to one connection, inside a transaction. */
export type TransactionQuery = (text: string, values?: unknown[]) => Promise<unknown[]>;

/** What to do about a connection, authentication or privilege failure (socket error codes and SQLSTATEs), or "". */
function connectHint(error: unknown): string {
  const code = (error as { code?: string }).code ?? '';
  if (['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'ECONNRESET', 'EHOSTUNREACH'].includes(code)) {
    return ' Check the host and port in the connection string, and that PostgreSQL is running.';
  }
  if (code === '28P01' || code === '28000') return ' Check the user and password in the connection string.';
  if (code === '3D000') return ' The database does not exist: create it (createdb) or fix the connection string.';
  if (code === '42501') return ' The user lacks a privilege: grant CREATE on the database (to create the schema) or on the schema.';
  return '';
}

/**
 * Refuses a source that is neither a URL nor a pool: `postgres({ connectionString })`,
 * pg's own config shape, used to fail at the first query with "pool.connect is not a
 * function". A pool passed in is never ended here (its owner ends it), so `end` is not asked for.
 */
function checkPool(source: unknown): void {
  if (source === null || typeof source !== 'object') throw notAPool(source === null ? 'null' : typeof source, '');
  const pool = source as Partial<Record<keyof PoolLike | 'connectionString', unknown>>;
  if (typeof pool.query === 'function' && typeof pool.connect === 'function') return;
  const hint = typeof pool.connectionString === 'string' ? ': pass the connectionString itself, postgres(url, { schema, … })' : '';
  throw notAPool(Array.isArray(pool) ? 'an array' : 'an object that is not a pool', hint);
}

function notAPool(got: string, hint: string): InvalidOptionError {
  return new InvalidOptionError(`postgres(source): pass a postgres:// URL or a pg.Pool (query, connect), got ${got}${hint}.`, { place: { engine: 'postgres' } });
}

/**
 * Refuses, at once, a connection string the driver would misread: `not a url` is taken
 * as a host name relative to a base and fails later as "getaddrinfo ENOTFOUND base".
 * A `postgres://` or `postgresql://` URL (or the driver's `socket:` form) passes.
 */
function checkUrl(url: string): void {
  let protocol: string | undefined;
  try {
    protocol = new URL(url).protocol;
  } catch {
    protocol = undefined;
  }
  if (protocol !== 'postgres:' && protocol !== 'postgresql:' && protocol !== 'socket:') {
    throw new InvalidOptionError(
      `postgres(url): ${JSON.stringify(maskUrl(url))} does not parse as a PostgreSQL URL: write postgres://user:password@host:port/database (or pass a pg.Pool).`,
      { place: { engine: 'postgres' } },
    );
  }
}

/**
 * The pool, schema and lifecycle shared by one engine's checkpointer, ledger and store.
 *
 * @example `const conn = new PostgresConnection('postgres://app@db/app', { schema: 'cairn', max: 20 });`
 */
export class PostgresConnection {
  readonly lifecycle: Lifecycle;
  readonly schema: string;
  readonly tables: PostgresTables;
  /** The tenant every statement runs as (`cairn.tenant`), or null for an engine not scoped to one. */
  readonly tenant: string | null;
  private pool: PoolLike | undefined;
  private readonly ownsPool: boolean;
  /** `BEGIN`, and the transaction-local tenant setting when each transaction must set it (a pool passed in). */
  private readonly begin: string;
  private readonly names = new Map<string, string>();

  constructor(
    private readonly source: string | PoolLike,
    private readonly options: PostgresOptions = {},
  ) {
    this.ownsPool = typeof source === 'string';
    checkPostgresOptions(options);
    if (typeof source === 'string') checkUrl(source);
    else checkPool(source);
    this.lifecycle = new Lifecycle('postgres', { open: () => this.open(), close: () => this.end() });
    this.schema = options.schema ?? 'public';
    if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(this.schema)) {
      throw new InvalidKeyError(`schema name ${JSON.stringify(this.schema)} is not a plain identifier (letters, digits, _; at most 63).`, {
        place: { engine: 'postgres' },
      });
    }
    if (options.tenant !== undefined) checkTenant(options.tenant);
    this.tenant = options.tenant ?? null;
    this.begin = this.tenant !== null && !this.ownsPool ? `BEGIN; SELECT set_config('${TENANT_SETTING}', ${quoteLiteral(this.tenant)}, true)` : 'BEGIN';
    const s = quoteIdent(this.schema);
    this.tables = {
      threads: `${s}.cairn_threads`,
      heads: `${s}.cairn_heads`,
      positions: `${s}.cairn_positions`,
      items: `${s}.cairn_items`,
      packs: `${s}.cairn_item_packs`,
      snapshots: `${s}.cairn_snapshots`,
      pending: `${s}.cairn_pending`,
      failures: `${s}.cairn_failures`,
      ledger: `${s}.cairn_ledger`,
      store: `${s}.cairn_store`,
      signals: `${s}.cairn_signals`,
    };
  }

  /** The pool, opened (driver loaded, schema migrated) on first use. A failed open is retried by the next call. */
  private async use(): Promise<PoolLike> {
    await this.lifecycle.use();
    return this.pool!;
  }

  private async open(): Promise<void> {
    let pool: PoolLike | undefined;
    try {
      const settings: Record<string, string> = this.tenant === null ? {} : { [TENANT_SETTING]: this.tenant };
      pool = typeof this.source === 'string' ? createPool(this.source, this.options.max ?? POSTGRES_POOL_MAX, this.options.applicationName ?? 'cairn', settings) : this.source;
      this.pool = pool;
      // Migrating is idempotent (checked under an advisory lock): a connection lost
      // in the middle is tried again on a fresh one.
      for (let attempt = 0; ; attempt++) {
        try {
          if (this.options.readOnly) await this.checkSchema(pool);
          else await migrate(pool, this.schema, POSTGRES_MIGRATIONS, this.location);
          break;
        } catch (error) {
          if (attempt >= 3 || !isConnectionLoss(error)) throw error;
          await new Promise((resolve) => setTimeout(resolve, 50 * (attempt + 1)));
        }
      }
      if (this.tenant !== null && this.ownsPool) await this.checkTenantSetting(pool);
    } catch (error) {
      if (this.ownsPool) {
        this.pool = undefined;
        await pool?.end().catch(() => undefined);
      }
      if (CairnError.is(error)) throw error;
      throw new EngineError(`opening schema ${this.schema} failed${codeOf(error)}: ${sentence(error)}${connectHint(error)}`, {
        cause: error,
        place: { engine: 'postgres' },
        retryable: isTransient(error),
      });
    }
  }

  /** Where this engine looks, as messages name it: `postgres://user:***@host/db#schema`. */
  get location(): string {
    return typeof this.source === 'string' ? `${maskUrl(this.source)}#${this.schema}` : `schema ${this.schema} of the pool passed in`;
  }

  /**
   * A tenant's pool: its connections must carry the setting. A pooler that drops
   * startup options would leave them without it, and every policy would then hide
   * everything: said here, at open, rather than as an empty database.
   */
  private async checkTenantSetting(pool: PoolLike): Promise<void> {
    const [row] = (await pool.query({ text: `SELECT current_setting('${TENANT_SETTING}', true) AS tenant` })).rows as { tenant: string | null }[];
    if (row?.tenant !== this.tenant) {
      throw new EngineError(
        `the connections of ${this.location} do not carry ${TENANT_SETTING} = ${JSON.stringify(this.tenant)} (they have ${JSON.stringify(row?.tenant ?? null)}): ` +
          `a pooler in between drops startup options. Pass a pool instead (postgres(pool, { tenant })): each statement then sets the tenant in its own transaction.`,
        { place: { engine: 'postgres' } },
      );
    }
  }

  /** A read-only open: the schema and its migrations table must exist, with every migration this cairn knows. */
  private async checkSchema(pool: PoolLike): Promise<void> {
    const place = { engine: 'postgres' };
    const s = quoteIdent(this.schema);
    const found = (
      await pool.query({
        text: `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1::text) AS schema, to_regclass($2::text) IS NOT NULL AS migrations`,
        values: [this.schema, `${s}.cairn_migrations`],
      })
    ).rows[0] as { schema: boolean; migrations: boolean };
    if (!found.schema) throw new DatabaseNotFoundError(this.location, `there is no schema "${this.schema}" in this database.`, place);
    if (!found.migrations) throw new DatabaseNotFoundError(this.location, `schema "${this.schema}" holds no cairn tables.`, place);
    const rows = ((await pool.query({ text: `SELECT id, name FROM ${s}.cairn_migrations ORDER BY id` })).rows as { id: number; name: string }[]).map((row) => ({ id: Number(row.id), name: row.name }));
    const applied = new Set(rows.map((row) => row.id));
    const known = POSTGRES_MIGRATIONS.map((m) => m.id);
    const latest = Math.max(...known);
    const newer = rows.filter((row) => !known.includes(row.id));
    if (newer.length) throw new DatabaseFromFutureError(this.location, newer.map((row) => row.id), latest, place, newer.at(-1)!.name);
    const missing = known.filter((id) => !applied.has(id));
    if (missing.length) throw new DatabaseOutdatedError(this.location, missing, latest, place);
  }

  /**
   * Runs one statement (one round trip) and returns its rows. Static statements are
   * prepared once per connection under a name derived from their text; pass
   * `prepare: false` for text built per call, so it does not pile up prepared plans.
   */
  async query<R>(what: string, text: string, values: unknown[] = [], prepare = true): Promise<R[]> {
    const pool = await this.use();
    const resendable = RESENDABLE.has(what) || /^\s*SELECT\b/i.test(text);
    const config = prepare ? { name: this.nameOf(text), text, values } : { text, values };
    for (let attempt = 0; ; attempt++) {
      try {
        // A tenant on a shared pool: the statement in a transaction that sets it (see PostgresOptions.tenant).
        if (this.begin !== 'BEGIN') return (await this.withinTransaction(pool, (client) => client.query(config))).rows as R[];
        const result = await pool.query(config);
        return result.rows as R[];
      } catch (error) {
        // The pool replaces a dead connection: one that was lost under a resendable
        // statement gets the statement again, a few times, on a fresh one.
        if (resendable && attempt < 3 && isConnectionLoss(error) && !this.lifecycle.isClosed) {
          await new Promise((resolve) => setTimeout(resolve, 20 * (attempt + 1)));
          continue;
        }
        throw this.wrap(what, error);
      }
    }
  }

  /**
   * Runs `work`, then VACUUMs cairn's tables in this schema (with their TOAST tables):
   * dead tuples are pruned and their space made reusable. `vacuum: 'full'` rewrites
   * each table into new files instead (an exclusive lock per table while it runs).
   * A user without the privilege to vacuum gets the report's word for it, not an error.
   */
  async purging<T>(work: () => Promise<T>, options: { vacuum?: boolean | 'full' } = {}): Promise<{ result: T; purge: { done: string[]; remains: string[] } }> {
    const result = await work();
    const done: string[] = [];
    const remains: string[] = [];
    const mode = options.vacuum === false ? null : options.vacuum === 'full' ? 'VACUUM (FULL)' : 'VACUUM';
    if (mode) {
      // VACUUM skips a table the role may not vacuum with a warning, not an error (a
      // tenant's role under row-level security owns none): ask first, so that the
      // report does not count those as vacuumed.
      const tables = await this.query<{ name: string; may: boolean }>(
        'list tables',
        `SELECT tablename AS name, (SELECT rolsuper FROM pg_roles WHERE rolname = current_user)
           OR pg_has_role(current_user, tableowner, 'USAGE')
           OR pg_has_role(current_user, (SELECT datdba FROM pg_database WHERE datname = current_database()), 'USAGE') AS may
         FROM pg_tables WHERE schemaname = $1 AND tablename LIKE 'cairn\\_%' ORDER BY tablename`,
        [this.schema],
      );
      const failed: string[] = [];
      const notOwned = tables.filter((t) => !t.may).map((t) => t.name);
      if (notOwned.length) failed.push(`${notOwned.join(', ')} (this role may not vacuum them: run VACUUM as their owner)`);
      let vacuumed = 0;
      for (const { name } of tables.filter((t) => t.may)) {
        try {
          await this.query('vacuum', `${mode} ${quoteIdent(this.schema)}.${quoteIdent(name)}`, [], false);
          vacuumed++;
        } catch (error) {
          failed.push(`${name} (${(error as Error).message})`);
        }
      }
      done.push(`${mode} of ${vacuumed} cairn tables in schema ${this.schema}`);
      if (failed.length) remains.push(`not vacuumed: ${failed.join('; ')}: dead tuples stay until autovacuum reaches them`);
    } else remains.push('not vacuumed: dead tuples stay in the table files until VACUUM reuses their space');
    if (mode !== 'VACUUM (FULL)') remains.push('VACUUM prunes dead tuples but does not overwrite every freed byte of a page: vacuum: "full" rewrites the tables into new files');
    remains.push('the WAL segments, archived WAL, replicas and backups taken before keep earlier versions of the rows');
    return { result, purge: { done, remains } };
  }

  /** Runs `fn` in a transaction on one connection (BEGIN ... COMMIT, ROLLBACK on any error). */
  async transaction<T>(what: string, fn: (query: TransactionQuery) => Promise<T>): Promise<T> {
    const pool = await this.use();
    let client: PoolClientLike;
    try {
      client = await pool.connect();
    } catch (error) {
      throw this.wrap(what, error);
    }
    // See migrate(): a held connection's death is reported by the query that fails.
    // The listener goes when the connection goes back, or pooled connections collect them.
    const ignore = () => undefined;
    client.on?.('error', ignore);
    const query: TransactionQuery = async (text, values = []) => (await client.query({ name: this.nameOf(text), text, values })).rows;
    try {
      return await this.inTransaction(client, () => fn(query));
    } catch (error) {
      throw this.wrap(what, error);
    } finally {
      client.off?.('error', ignore);
    }
  }

  /** `fn` on a connection of `pool`, in a transaction (see {@link inTransaction}); driver errors as they came. */
  private async withinTransaction<T>(pool: PoolLike, fn: (client: PoolClientLike) => Promise<T>): Promise<T> {
    const client = await pool.connect();
    const ignore = () => undefined;
    client.on?.('error', ignore);
    try {
      return await this.inTransaction(client, () => fn(client));
    } finally {
      client.off?.('error', ignore);
    }
  }

  /**
   * BEGIN (with the tenant's transaction-local setting when the pool is shared), `fn`,
   * COMMIT; ROLLBACK on any error. Releases the connection: destroyed, not pooled,
   * when it cannot even roll back.
   */
  private async inTransaction<T>(client: PoolClientLike, fn: () => Promise<T>): Promise<T> {
    let broken = false;
    try {
      await client.query({ text: this.begin });
      const result = await fn();
      await client.query({ text: 'COMMIT' });
      return result;
    } catch (error) {
      broken = await client.query({ text: 'ROLLBACK' }).then(
        () => false,
        () => true,
      );
      throw error;
    } finally {
      client.release(broken);
    }
  }

  /**
   * Listens on `channel` on a dedicated connection (closed, never pooled, when dropped)
   * and calls `listener` with each notification's payload. A connection the server
   * drops is replaced in the background, as is a first one that cannot be had: until
   * then notifications are missed, so callers keep a timer of their own. Resolves to
   * the function that stops listening.
   */
  async listen(channel: string, listener: (payload: string) => void): Promise<() => Promise<void>> {
    const pool = await this.use();
    let stopped = false;
    let current: { drop: () => boolean } | undefined;
    const retry = (ms: number) => {
      if (!stopped && !this.lifecycle.isClosed) setTimeout(() => void listen(), ms).unref();
    };
    // Exactly one listening connection at a time: every way out goes through `drop`, once.
    const listen = async (): Promise<void> => {
      if (stopped) return;
      let client: PoolClientLike;
      try {
        client = await pool.connect();
      } catch {
        return retry(POSTGRES_LISTEN_RETRY_MS.connect);
      }
      let dropped = false;
      const drop = () => {
        if (dropped) return false;
        dropped = true;
        if (current?.drop === drop) current = undefined;
        client.release(true);
        return true;
      };
      client.on?.('notification', (message) => message.payload && listener(message.payload));
      client.on?.('error', () => drop() && retry(POSTGRES_LISTEN_RETRY_MS.listen));
      try {
        await client.query({ text: `LISTEN ${quoteIdent(channel)}` });
      } catch {
        if (drop()) retry(POSTGRES_LISTEN_RETRY_MS.listen);
        return;
      }
      if (dropped) return;
      current = { drop };
      if (stopped) drop();
    };
    await listen();
    return async () => {
      stopped = true;
      current?.drop();
    };
  }

  /** A driver error as EngineError (purpose and SQLSTATE in the message, original as cause); cairn errors pass through. */
  private wrap(what: string, error: unknown): Error {
    if (CairnError.is(error)) return error;
    return new EngineError(`${what} failed${codeOf(error)}: ${sentence(error)}${connectHint(error)}`, {
      cause: error,
      place: { engine: 'postgres' },
      retryable: isTransient(error),
    });
  }

  private nameOf(text: string): string {
    let name = this.names.get(text);
    if (name === undefined) {
      name = `cairn_${createHash('sha1').update(text).digest('hex').slice(0, 20)}`;
      this.names.set(text, name);
    }
    return name;
  }

  /** Closes the engine (every later call throws EngineClosedError); ends the pool only if the engine created it. */
  close(): Promise<void> {
    return this.lifecycle.close();
  }

  private async end(): Promise<void> {
    const pool = this.pool;
    this.pool = undefined;
    if (pool && this.ownsPool) await pool.end();
  }
}

/** `text` as an SQL string literal (quotes doubled; backslashes doubled behind E, whatever standard_conforming_strings says). */
function quoteLiteral(text: string): string {
  const quoted = `'${text.replace(/'/g, "''").replace(/\\/g, '\\\\')}'`;
  return text.includes('\\') ? `E${quoted}` : quoted;
}

/** The error's message as a sentence (one final period). */
function sentence(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return /[.!?]$/.test(message) ? message : `${message}.`;
}

function codeOf(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code ? ` (${code})` : '';
}

/** The SQLSTATE of a wrapped driver error, if any. */
export function sqlState(error: unknown): string | undefined {
  const cause = (error as { cause?: { code?: unknown } } | null)?.cause;
  return typeof cause?.code === 'string' ? cause.code : undefined;
}

/** The constraint a wrapped driver error names, if any. */
export function constraintOf(error: unknown): string | undefined {
  const cause = (error as { cause?: { constraint?: unknown } } | null)?.cause;
  return typeof cause?.constraint === 'string' ? cause.constraint : undefined;
}
