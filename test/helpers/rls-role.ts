/**
 * A real restricted role for row-level security tests: `LOGIN NOSUPERUSER NOBYPASSRLS`
 * with row privileges on the file's schema (what an application connects as), and
 * the policies enabled on the schema. Roles are cluster-wide: each file makes its
 * own, with a unique name, and drops it after.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll } from 'vitest';
import { enableRowLevelSecurity } from '../../src/engines/postgres/index.js';
import { PG_URL, type PostgresTestSchema } from './postgres.js';

export interface RestrictedRole {
  readonly name: string;
  /** The test database as the role (trust auth: no password). */
  readonly url: string;
  /** A pool of the role's connections (set once `beforeAll` ran). */
  readonly pool: pg.Pool;
  /** `fn` on one connection of the role, in a transaction with `cairn.tenant` set (null: none), rolled back. */
  asTenant<T>(tenant: string | null, fn: (client: pg.PoolClient) => Promise<T>): Promise<T>;
  /** The SQLSTATE `sql` fails with as the role in `tenant` (undefined: it did not fail). */
  refusal(tenant: string | null, sql: string, values?: unknown[]): Promise<string | undefined>;
}

/** Registers the role on `db`'s schema: created and the policies enabled in `beforeAll`, dropped in `afterAll`. Call after `usePostgresSchema()`. */
export function useRestrictedRole(db: PostgresTestSchema): RestrictedRole {
  const name = `cairn_rls_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  const url = PG_URL.replace(/^(postgres(?:ql)?:\/\/)[^@/]*@/, `$1${name}@`);
  let pool: pg.Pool | undefined;

  const role: RestrictedRole = {
    name,
    url,
    get pool() {
      if (!pool) throw new Error('useRestrictedRole(): the pool exists only inside tests (after beforeAll)');
      return pool;
    },
    async asTenant(tenant, fn) {
      const client = await role.pool.connect();
      try {
        await client.query('BEGIN');
        if (tenant !== null) await client.query(`SELECT set_config('cairn.tenant', $1, true)`, [tenant]);
        return await fn(client);
      } finally {
        await client.query('ROLLBACK');
        client.release();
      }
    },
    refusal(tenant, sql, values = []) {
      return role.asTenant(tenant, (client) => client.query(sql, values).then(() => undefined, (error: { code?: string }) => error.code));
    },
  };

  beforeAll(async () => {
    const s = `"${db.schema}"`;
    await db.pool.query(`CREATE ROLE ${name} LOGIN NOSUPERUSER NOBYPASSRLS`);
    await db.pool.query(`GRANT USAGE ON SCHEMA ${s} TO ${name}`);
    await db.pool.query(`GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA ${s} TO ${name}`);
    await db.pool.query(`GRANT USAGE ON ALL SEQUENCES IN SCHEMA ${s} TO ${name}`);
    pool = new pg.Pool({ connectionString: url, max: 3 });
    pool.on('error', () => undefined);
    await enableRowLevelSecurity(db.pool, { schema: db.schema });
  });

  afterAll(async () => {
    await pool?.end();
    // The schema is dropped by its helper; the role's grants go with DROP OWNED.
    await db.pool.query(`DROP OWNED BY ${name}`).catch(() => undefined);
    await db.pool.query(`DROP ROLE IF EXISTS ${name}`);
  });

  return role;
}
