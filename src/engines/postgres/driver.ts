/**
 * @module engines/postgres/driver
 * The PostgreSQL driver, typed structurally (so cairn's public types never import
 * `pg`'s) and loaded lazily (so neither `import 'cairn'` nor `import 'cairn/postgres'`
 * loads `pg`: only the first query of an engine built from a URL does).
 */
import { createRequire } from 'node:module';
import { DriverMissingError } from '../../errors.js';

/** A query as cairn sends it: parameterised text, optionally a prepared-statement name. */
export interface PgQueryConfig {
  text: string;
  values?: unknown[];
  /** Prepared-statement name: parsed and planned once per connection, then only bound and executed. */
  name?: string;
}

/** What cairn reads of a query result. */
export interface PgQueryResult {
  /** Rows as the driver's type parsers produce them (`bigint` as a string); each reader converts its columns. */
  rows: unknown[];
  rowCount: number | null;
}

/** A connection checked out of a pool (a `pg.PoolClient`), used only for multi-statement transactions. */
export interface PoolClientLike {
  query(config: PgQueryConfig): Promise<PgQueryResult>;
  release(error?: Error | boolean): void;
  /** Used by workers' wake-ups (LISTEN): `notification` events, and `error` when the connection dies. */
  on?(event: 'notification' | 'error', listener: (message: { channel?: string; payload?: string } & Partial<Error>) => void): unknown;
  /** Removes a listener added with `on` before the connection goes back to the pool. */
  off?(event: 'notification' | 'error', listener: (message: { channel?: string; payload?: string } & Partial<Error>) => void): unknown;
}

/**
 * What cairn uses of a `pg.Pool`. Pass your own pool to `postgres(pool)`: the engine
 * shares it and never ends it.
 *
 * @example
 * ```ts
 * import pg from 'pg';
 * const engine = postgres(new pg.Pool({ connectionString: process.env.DATABASE_URL }));
 * ```
 */
export interface PoolLike {
  query(config: PgQueryConfig): Promise<PgQueryResult>;
  connect(): Promise<PoolClientLike>;
  end(): Promise<void>;
}

interface OwnedPool extends PoolLike {
  on(event: 'error', listener: (error: Error) => void): unknown;
  on(event: 'connect', listener: (client: { on(event: 'error', listener: (error: Error) => void): unknown }) => void): unknown;
}

type PoolConstructor = new (config: { connectionString: string; max: number; application_name: string; options?: string }) => OwnedPool;

/**
 * The startup option that sets `setting` to `value` on a connection for its whole
 * life (`-c name=value`, with the backslash escapes the server's option parser takes).
 */
export function settingOption(setting: string, value: string): string {
  return `-c ${setting}=${value.replace(/[\\\s]/g, (c) => `\\${c}`)}`;
}

/**
 * Creates a `pg.Pool` on a connection string, loading `pg` on first use. `settings`
 * are set on every connection as it opens (startup options): the pool's own, so no
 * connection of it is ever without them.
 */
export function createPool(connectionString: string, max: number, applicationName = 'cairn', settings: Record<string, string> = {}): PoolLike {
  let Pool: PoolConstructor;
  try {
    const pg = createRequire(import.meta.url)('pg') as { Pool: PoolConstructor };
    Pool = pg.Pool;
  } catch (cause) {
    throw new DriverMissingError('the PostgreSQL engine needs the pg driver: run `npm install pg`.', { cause, place: { engine: 'postgres' } });
  }
  const options = Object.entries(settings).map(([name, value]) => settingOption(name, value));
  let url = connectionString;
  let extra: { options?: string } = {};
  if (options.length) {
    // The driver lets what the connection string says win over the config: the settings
    // go into the string's own startup options, beside any it gives (?options=...).
    try {
      const parsed = new URL(connectionString);
      const given = parsed.searchParams.get('options');
      parsed.searchParams.set('options', [...(given ? [given] : []), ...options].join(' '));
      url = parsed.toString();
    } catch {
      // Not a URL (a socket path): the config it is.
      extra = { options: options.join(' ') };
    }
  }
  const pool = new Pool({ connectionString: url, max, application_name: applicationName, ...extra });
  // An idle connection that the server closes (restart, pg_terminate_backend) is reported
  // here; without a listener Node would crash the process. The pool drops that client and
  // the next query opens a new one, so there is nothing else to do.
  pool.on('error', () => undefined);
  // A connection the server closes while it is checked out (between the pool's idle
  // listener going and a caller's own arriving) reports it here too: the query that
  // runs on it fails and says so, so the event itself needs no handling.
  pool.on('connect', (client) => client.on('error', () => undefined));
  return pool;
}
