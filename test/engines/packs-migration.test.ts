/**
 * Item packs on PostgreSQL schemas made before them (migration 12): the table is added,
 * and a schema already under row-level security gets the new table's policy with it (enabled and forced), so that a tenant still sees
 * only its own packs without enableRowLevelSecurity being run again.
 */
import { describe, expect, it } from 'vitest';
import { enableRowLevelSecurity, migrate as migratePostgres, POSTGRES_MIGRATIONS } from '../../src/engines/postgres/index.js';
import { usePostgresSchema } from '../helpers/postgres.js';

const pg = usePostgresSchema();

describe('item packs on an older PostgreSQL schema', () => {
  it('a schema under row-level security gets the packs table with its policy, enabled and forced', async () => {
    const schema = `${pg.schema}_packs`;
    try {
      // Row-level security turned on at migration 11, as enableRowLevelSecurity did then.
      await migratePostgres(pg.pool, schema, POSTGRES_MIGRATIONS.filter((m) => m.id < 12));
      for (const table of ['cairn_threads', 'cairn_items']) {
        await pg.pool.query(`ALTER TABLE "${schema}".${table} ENABLE ROW LEVEL SECURITY`);
        await pg.pool.query(`ALTER TABLE "${schema}".${table} FORCE ROW LEVEL SECURITY`);
      }
      await migratePostgres(pg.pool, schema, POSTGRES_MIGRATIONS);
      const { rows } = await pg.pool.query(`SELECT relrowsecurity AS enabled, relforcerowsecurity AS forced FROM pg_class WHERE oid = '"${schema}".cairn_item_packs'::regclass`);
      expect(rows).toEqual([{ enabled: true, forced: true }]);
      const policies = await pg.pool.query(`SELECT policyname, qual FROM pg_policies WHERE schemaname = $1 AND tablename = 'cairn_item_packs'`, [schema]);
      expect(policies.rows.map((r: { policyname: string }) => r.policyname)).toEqual(['cairn_tenant_isolation']);
      expect(policies.rows[0].qual).toContain("current_setting('cairn.tenant'");
      // enableRowLevelSecurity (run again) puts the same policy on it, and lists the table.
      const report = await enableRowLevelSecurity(pg.pool, { schema });
      expect(report.tables).toContain('cairn_item_packs');
    } finally {
      await pg.pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    }
  });

  it('a schema without row-level security gets the table with none', async () => {
    const schema = `${pg.schema}_plain`;
    try {
      await migratePostgres(pg.pool, schema, POSTGRES_MIGRATIONS.filter((m) => m.id < 12));
      await migratePostgres(pg.pool, schema, POSTGRES_MIGRATIONS);
      const { rows } = await pg.pool.query(`SELECT relrowsecurity AS enabled FROM pg_class WHERE oid = '"${schema}".cairn_item_packs'::regclass`);
      expect(rows).toEqual([{ enabled: false }]);
    } finally {
      await pg.pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    }
  });
});
