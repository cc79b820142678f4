/**
 * @module cairn/postgres
 * The engine for many processes on many machines: thread log, ledger and store in
 * one PostgreSQL schema. A step commit is one statement (one round trip), fenced by
 * the lease so that a run that lost its thread can never commit over its successor,
 * safe at the default READ COMMITTED isolation. Needs `pg@8`, loaded on first use
 * (only when you pass a connection string: a pool you pass in is used as it is).
 *
 * The schema and its tables are created on first use (migrations under an advisory
 * lock, recorded in `cairn_migrations`), except with `{ readOnly: true }`, which
 * only checks they are there. `close()` ends the pool the engine created
 * from a connection string, never a pool you passed in.
 *
 * Tenants can share a schema with the database keeping them apart:
 * {@link enableRowLevelSecurity} (once, as the tables' owner) and an engine scoped to
 * each tenant, `postgres(url, { tenant })`, on a role without `BYPASSRLS`.
 *
 * @example
 * ```ts
 * import { postgres } from 'cairn/postgres';
 * const engine = postgres('postgres://app@db.internal/app', { schema: 'cairn' });
 * const app = graph(State).node(...).compile({ engine });
 * ```
 */
import type { Engine } from '../../contracts/engine.js';
import { PostgresConnection, type PostgresOptions, type PostgresTables } from './connection.js';
import type { PgQueryConfig, PgQueryResult, PoolClientLike, PoolLike } from './driver.js';
import { PostgresCheckpointer } from './postgres-checkpointer.js';
import { PostgresLedger } from './postgres-ledger.js';
import { PostgresStore } from './postgres-store.js';

export { PostgresCheckpointer, PostgresLedger, PostgresStore, PostgresConnection };
export type { PostgresOptions, PostgresTables, PoolLike, PoolClientLike, PgQueryConfig, PgQueryResult };
export { POSTGRES_MIGRATIONS, migrate } from './migrations.js';
export type { PostgresMigration } from './migrations.js';
export { enableRowLevelSecurity, disableRowLevelSecurity, rowLevelSecurityStatus, TENANT_SETTING, TENANT_POLICY, TENANT_TABLES } from './row-level-security.js';
export type { RowLevelSecurityOptions, RowLevelSecurityReport } from './row-level-security.js';

/**
 * The PostgreSQL engine on a connection string (the engine creates and ends its own
 * pool) or on your `pg.Pool` (shared, never ended by the engine).
 *
 * @example
 * ```ts
 * const engine = postgres(process.env.DATABASE_URL!, { max: 20 });
 * await using engine2 = postgres(myPool, { schema: 'tenant_a' });
 * ```
 */
export function postgres(source: string | PoolLike, options: PostgresOptions = {}): Engine {
  const conn = new PostgresConnection(source, options);
  const close = () => conn.close();
  return {
    name: 'postgres',
    checkpointer: new PostgresCheckpointer(conn),
    ledger: new PostgresLedger(conn),
    store: new PostgresStore(conn),
    purging: (work, options) => conn.purging(work, options),
    close,
    [Symbol.asyncDispose]: close,
  };
}
