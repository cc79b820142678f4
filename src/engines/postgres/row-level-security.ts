/**
 * @module engines/postgres/row-level-security
 * Tenant isolation on a shared PostgreSQL, opt-in: {@link enableRowLevelSecurity}
 * puts a policy on every cairn table that holds rows of a tenant, with row-level
 * security enabled and forced (the tables' owner is subject to it too), so that a
 * role without `BYPASSRLS` sees and writes only the rows of the tenant its
 * connection names in `cairn.tenant`, and nothing at all when it names none.
 *
 * Which rows are a tenant's:
 * - a thread's row (`cairn_threads.tenant`) and every row the thread owns (heads,
 *   positions, items, snapshots, pending writes, failures, ledger, signals), each
 *   carrying its thread's tenant (migration 9; copied from the thread row at insert);
 *   a row of a thread without a tenant belongs to no tenant and no tenant sees it;
 * - a store item (and its overwrite records) under `['tenant', <tenant>, ...]`, and
 *   an item of cairn's own namespaces (`['cairn', ...]`) keyed `tenant:<tenant,
 *   URI-encoded>/...`, as the artifact pins of a tenant's artifacts are; every other
 *   store item is shared: readable and writable by a connection with any tenant set
 *   (cairn keeps its graph descriptions there), by none without.
 *
 * A write must stay in its tenant: a new or changed row must be the connection's
 * tenant's, and a row a thread owns must belong to one of that tenant's threads.
 * `cairn_migrations` holds no tenant's data and gets no policy.
 */
import { EngineError } from '../../errors.js';
import { createPool, type PoolLike } from './driver.js';
import { migrate, quoteIdent, underSchemaLock } from './migrations.js';

/** The setting policies compare rows with: the tenant of the connection's work (`postgres(url, { tenant })` sets it). */
export const TENANT_SETTING = 'cairn.tenant';

/** The name of cairn's policy on each of its tables. */
export const TENANT_POLICY = 'cairn_tenant_isolation';

/**
 * The connection's tenant as a policy reads it: NULL when none is set, and when a
 * transaction-local setting has ended (the server then reports '' for the rest of
 * the session), so that an unset tenant never equals anything.
 */
const CURRENT_TENANT = `nullif(current_setting('${TENANT_SETTING}', true), '')`;

/** The tables whose rows belong to a thread (by `tid`) and carry its tenant. */
const THREAD_OWNED = ['cairn_heads', 'cairn_positions', 'cairn_items', 'cairn_item_packs', 'cairn_snapshots', 'cairn_pending', 'cairn_failures', 'cairn_ledger', 'cairn_signals'] as const;

/** The store's tables: a row's tenant is its namespace's (see the module documentation). */
const STORE_TABLES = ['cairn_store', 'cairn_store_overwrites'] as const;

/** Every table {@link enableRowLevelSecurity} puts a policy on. */
export const TENANT_TABLES: readonly string[] = ['cairn_threads', ...THREAD_OWNED, ...STORE_TABLES];

/** One table's policy: what a row must satisfy to be seen (USING) and to be written (WITH CHECK). */
function policyOf(s: string, table: string): { using: string; check: string } {
  if (table === 'cairn_threads') return { using: `tenant = ${CURRENT_TENANT}`, check: `tenant = ${CURRENT_TENANT}` };
  if ((STORE_TABLES as readonly string[]).includes(table)) {
    // Shared rows (no tenant) need some tenant set; coalesce calls the function once.
    const own = `coalesce(${s}.cairn_store_tenant(ns, key), ${CURRENT_TENANT}) = ${CURRENT_TENANT}`;
    return { using: own, check: own };
  }
  // Reading is one comparison per row. Writing also looks the thread up (under the
  // threads' own policy, so only the tenant's threads are found): a tenant cannot put
  // rows under another tenant's thread, where they would collide with that thread's keys.
  return {
    using: `tenant = ${CURRENT_TENANT}`,
    check: `tenant = ${CURRENT_TENANT} AND EXISTS (SELECT 1 FROM ${s}.cairn_threads t WHERE t.tid = ${table}.tid)`,
  };
}

/** Options of {@link enableRowLevelSecurity} and {@link disableRowLevelSecurity}. */
export interface RowLevelSecurityOptions {
  /** The schema of cairn's tables. Default `public`. */
  schema?: string;
}

/** What {@link enableRowLevelSecurity} did. */
export interface RowLevelSecurityReport {
  schema: string;
  /** The tables that now have the policy, with row-level security enabled and forced. */
  tables: string[];
  /** Rows a thread owns whose tenant was filled in from their thread (written before migration 9, or by an older cairn). */
  backfilled: number;
}

/**
 * Turns tenant isolation on for a schema (migrating it first): on every table that
 * holds a tenant's rows, a policy comparing each row's tenant with the connection's
 * `cairn.tenant`, and `ENABLE` + `FORCE ROW LEVEL SECURITY`. One transaction under the
 * schema's migration lock; safe to run again (it replaces the policies and fills in
 * the tenant of rows that lack it). Run it as the tables' owner (or a superuser).
 *
 * Afterwards: a tenant's engine (`postgres(url, { tenant })`) on a role without
 * `BYPASSRLS` sees its tenant's rows only; cross-tenant work (workers claiming any
 * tenant's threads, the CLI, the inspector, garbage collection, retention) needs a
 * role with `BYPASSRLS` or a superuser. The owner is not enough: FORCE subjects it
 * to the policies too, so that the role an application connects as cannot read
 * around them by owning the tables.
 *
 * @example
 * ```ts
 * import { enableRowLevelSecurity } from 'cairn/postgres';
 * await enableRowLevelSecurity('postgres://owner@db/app', { schema: 'cairn' });
 * ```
 */
export async function enableRowLevelSecurity(source: string | PoolLike, options: RowLevelSecurityOptions = {}): Promise<RowLevelSecurityReport> {
  const schema = options.schema ?? 'public';
  const s = quoteIdent(schema);
  return withSchemaLock(source, schema, async (query) => {
    let backfilled = 0;
    for (const table of TENANT_TABLES) {
      // Not forced while the tenants are filled in: the owner reads every row (and the
      // statements below see what they update), then forced again before the commit.
      await query(`ALTER TABLE ${s}.${table} NO FORCE ROW LEVEL SECURITY`);
    }
    for (const table of THREAD_OWNED) {
      const rows = await query(`
        UPDATE ${s}.${table} c SET tenant = t.tenant FROM ${s}.cairn_threads t
        WHERE c.tid = t.tid AND c.tenant IS DISTINCT FROM t.tenant RETURNING 1`);
      backfilled += rows.length;
    }
    for (const table of TENANT_TABLES) {
      const { using, check } = policyOf(s, table);
      await query(`DROP POLICY IF EXISTS ${TENANT_POLICY} ON ${s}.${table}`);
      await query(`CREATE POLICY ${TENANT_POLICY} ON ${s}.${table} AS PERMISSIVE FOR ALL TO PUBLIC USING (${using}) WITH CHECK (${check})`);
      await query(`ALTER TABLE ${s}.${table} ENABLE ROW LEVEL SECURITY`);
      await query(`ALTER TABLE ${s}.${table} FORCE ROW LEVEL SECURITY`);
    }
    return { schema, tables: [...TENANT_TABLES], backfilled };
  });
}

/**
 * Turns tenant isolation off again: drops cairn's policies and disables row-level
 * security on its tables. The tenant columns stay (and stay filled in).
 *
 * @example `await disableRowLevelSecurity(ownerUrl, { schema: 'cairn' });`
 */
export async function disableRowLevelSecurity(source: string | PoolLike, options: RowLevelSecurityOptions = {}): Promise<{ schema: string; tables: string[] }> {
  const schema = options.schema ?? 'public';
  const s = quoteIdent(schema);
  return withSchemaLock(source, schema, async (query) => {
    for (const table of TENANT_TABLES) {
      await query(`DROP POLICY IF EXISTS ${TENANT_POLICY} ON ${s}.${table}`);
      await query(`ALTER TABLE ${s}.${table} NO FORCE ROW LEVEL SECURITY`);
      await query(`ALTER TABLE ${s}.${table} DISABLE ROW LEVEL SECURITY`);
    }
    return { schema, tables: [...TENANT_TABLES] };
  });
}

/**
 * Which of cairn's tables have row-level security enabled and forced with cairn's
 * policy: `on` (all), `off` (none) or `partial`.
 *
 * @example `if ((await rowLevelSecurityStatus(pool, { schema: 'cairn' })) !== 'on') throw new Error('tenants are not isolated');`
 */
export async function rowLevelSecurityStatus(source: string | PoolLike, options: RowLevelSecurityOptions = {}): Promise<'on' | 'off' | 'partial'> {
  const schema = options.schema ?? 'public';
  const pool = typeof source === 'string' ? createPool(source, 1) : source;
  try {
    const { rows } = await pool.query({
      text: `
        SELECT count(*) FILTER (WHERE c.relrowsecurity AND c.relforcerowsecurity
          AND EXISTS (SELECT 1 FROM pg_policy p WHERE p.polrelid = c.oid AND p.polname = $3::text)) AS isolated
        FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = $1::text AND c.relname = ANY($2::text[])`,
      values: [schema, [...TENANT_TABLES], TENANT_POLICY],
    });
    const isolated = Number((rows[0] as { isolated: string }).isolated);
    return isolated === TENANT_TABLES.length ? 'on' : isolated === 0 ? 'off' : 'partial';
  } finally {
    if (typeof source === 'string') await pool.end();
  }
}

/** `fn` in one transaction on a migrated schema, under the schema's migration lock; the pool is ended if made here. */
async function withSchemaLock<T>(source: string | PoolLike, schema: string, fn: (query: (text: string) => Promise<unknown[]>) => Promise<T>): Promise<T> {
  const pool = typeof source === 'string' ? createPool(source, 1) : source;
  try {
    await migrate(pool, schema);
    return await underSchemaLock(pool, schema, (client) => fn(async (text) => (await client.query({ text })).rows)).catch((error: unknown) => {
      const code = (error as { code?: unknown }).code;
      throw new EngineError(
        `changing row-level security on schema ${schema} failed${typeof code === 'string' ? ` (${code})` : ''}: ${(error as Error).message}` +
          (code === '42501' ? ' Run it as the owner of cairn\'s tables, or a superuser.' : ''),
        { cause: error, place: { engine: 'postgres' } },
      );
    });
  } finally {
    if (typeof source === 'string') await pool.end();
  }
}
