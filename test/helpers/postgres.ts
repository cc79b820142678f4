/**
 * The local PostgreSQL for engine tests: one fresh schema per test file
 * (`cairn_test_<time>_<random>`), emptied before each engine a test asks for, dropped
 * after the file. The server is 127.0.0.1:5432, database `test`, trust auth;
 * `CAIRN_TEST_PG_URL` points elsewhere. An unreachable server FAILS the file with
 * a message saying so: these tests never skip (CI must run them; `.ci/run` starts
 * the server).
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, beforeEach } from 'vitest';
import type { Engine } from '../../src/contracts/engine.js';
import { migrate, postgres, type PostgresOptions } from '../../src/engines/postgres/index.js';

export const PG_URL = process.env.CAIRN_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

const TABLES = ['threads', 'heads', 'positions', 'items', 'item_packs', 'snapshots', 'pending', 'failures', 'ledger', 'store', 'store_overwrites'];

export interface PostgresTestSchema {
  readonly url: string;
  /** The file's schema (set once `beforeAll` ran). */
  readonly schema: string;
  /** A pool on the test database, for setup and direct reads (set once `beforeAll` ran). */
  readonly pool: pg.Pool;
  /** Deletes every row of the schema's tables. */
  empty(): Promise<void>;
  /**
   * A fresh engine on the emptied schema: on its own pool from the URL (the engine ends it
   * on close), or on `pool` when given (the engine must leave it open).
   */
  engine(options?: { pool?: pg.Pool } & PostgresOptions): Promise<Engine>;
}

/** Registers the file's schema: created in `beforeAll`, dropped in `afterAll`. Call at the top level of a test file. */
export function usePostgresSchema(): PostgresTestSchema {
  let pool: pg.Pool | undefined;
  let schema = '';

  const api: PostgresTestSchema = {
    url: PG_URL,
    get schema() {
      return schema;
    },
    get pool() {
      if (!pool) throw new Error('usePostgresSchema(): the pool exists only inside tests (after beforeAll)');
      return pool;
    },
    async empty() {
      await api.pool.query(TABLES.map((t) => `DELETE FROM "${schema}".cairn_${t};`).join(' '));
    },
    async engine(options = {}) {
      await api.empty();
      const { pool: shared, ...rest } = options;
      return postgres(shared ?? PG_URL, { schema, ...rest });
    },
  };

  let unreachable: Error | undefined;

  beforeAll(async () => {
    pool = new pg.Pool({ connectionString: PG_URL, max: 4, connectionTimeoutMillis: 5_000 });
    pool.on('error', () => undefined);
    try {
      await pool.query('SELECT 1');
    } catch (error) {
      await pool.end().catch(() => undefined);
      pool = undefined;
      // Thrown again before every test (below), so each one FAILS with this message
      // rather than being reported as skipped, as a failing beforeAll would leave them.
      unreachable = new Error(
        `PostgreSQL is not reachable at ${PG_URL.replace(/:[^:@/]*@/, ':***@')} (${(error as Error).message}). ` +
          `These tests must run, never skip: start the server (.ci/run does: pg_ctlcluster <version> main start) ` +
          `or set CAIRN_TEST_PG_URL to a database this user may create schemas in.`,
        { cause: error },
      );
      return;
    }
    await sweepAbandoned(pool);
    schema = `cairn_test_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
    await migrate(pool, schema);
  });

  beforeEach(() => {
    if (unreachable) throw unreachable;
  });

  afterAll(async () => {
    if (!pool) return;
    try {
      if (schema) await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    } finally {
      await pool.end();
    }
  });

  return api;
}

/** Schemas of test runs that were killed before their afterAll: older than this, they are dropped. */
const ABANDONED_AFTER_MS = 6 * 60 * 60 * 1000;

/** Drops `cairn_test_<time>_...` schemas left by runs killed mid-file, so the test database does not fill up. */
async function sweepAbandoned(pool: pg.Pool): Promise<void> {
  const { rows } = await pool.query<{ nspname: string }>(`SELECT nspname FROM pg_namespace WHERE nspname LIKE 'cairn\\_test\\_%'`);
  for (const { nspname } of rows) {
    const born = parseInt(/^cairn_test_([0-9a-z]+)_/.exec(nspname)?.[1] ?? '', 36);
    if (Number.isFinite(born) && Date.now() - born > ABANDONED_AFTER_MS) await pool.query(`DROP SCHEMA IF EXISTS "${nspname}" CASCADE`);
  }
}
