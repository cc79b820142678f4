/**
 * Record meta on databases made before it (migration 8 on SQLite and PostgreSQL): an
 * old database opens, its ledger entries read with no meta, and new records written
 * there keep theirs.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { migrate as migratePostgres, postgres, POSTGRES_MIGRATIONS } from '../../src/engines/postgres/index.js';
import { openDatabase } from '../../src/engines/sqlite/driver.js';
import { migrate as migrateSqlite, sqlite, SQLITE_MIGRATIONS } from '../../src/engines/sqlite/index.js';
import type { Engine } from '../../src/contracts/engine.js';
import { PG_URL, usePostgresSchema } from '../helpers/postgres.js';
import { tempDir } from '../helpers/temp-dirs.js';

const LEDGER_ROW = `'old-rec', 'record', 'model', '', 0, 'n', 'n:0', 0, NULL, 'done', '"hello"', 1700000000000, 1700000000000`;

/** What an engine opened on a database from before record meta reads and writes. */
async function goesOn(engine: Engine): Promise<void> {
  const old = await engine.ledger.get('old', 'old-rec');
  expect(old).toMatchObject({ key: 'old-rec', kind: 'record', name: 'model', outcome: '"hello"', status: 'done' });
  expect(old).not.toHaveProperty('meta');
  expect(await engine.ledger.list('old')).toEqual([old]);
  const meta = { kind: 'model' as const, model: 'm', usage: { inputTokens: 3 }, latencyMs: 4 };
  await engine.ledger.writeRecord({ threadId: 'old', key: 'new-rec', kind: 'record', name: 'model', ns: '', seq: 0, node: 'n', task: 'n:0', call: 1, argsDigest: null, createdAt: 1_700_000_000_001, outcome: '"again"', meta });
  expect((await engine.ledger.get('old', 'new-rec'))?.meta).toEqual(meta);
}

describe('migration 8 on a database from before record meta', () => {
  it('SQLite: old entries read with no meta; new ones keep theirs', async () => {
    const file = join(tempDir('cairn-meta-'), 'old.db');
    const raw = openDatabase(file, 1000);
    migrateSqlite(raw, SQLITE_MIGRATIONS.filter((m) => m.id < 8));
    raw.exec(`INSERT INTO cairn_threads (tid, id, kind, status, attempts, metadata, epoch, created_at, updated_at) VALUES (1, 'old', 'task', 'completed', 1, '{}', 1, 1, 1)`);
    raw.exec(`INSERT INTO cairn_ledger (tid, key, kind, name, ns, seq, node, task, call, args_digest, status, outcome, created_at, completed_at) VALUES (1, ${LEDGER_ROW})`);
    raw.close();
    const engine = sqlite(file);
    try {
      await goesOn(engine);
    } finally {
      await engine.close();
    }
  });

  const pg = usePostgresSchema();

  it('PostgreSQL: old entries read with no meta; new ones keep theirs', async () => {
    const schema = `${pg.schema}_old`;
    await migratePostgres(pg.pool, schema, POSTGRES_MIGRATIONS.filter((m) => m.id < 8));
    const old = postgres(PG_URL, { schema, max: 1 });
    await pg.pool.query(`INSERT INTO "${schema}".cairn_threads (id, kind, status, attempts, metadata, epoch, created_at, updated_at) VALUES ('old', 'task', 'completed', 1, '{}', 1, 1, 1)`);
    await pg.pool.query(
      `INSERT INTO "${schema}".cairn_ledger (tid, key, kind, name, ns, seq, node, task, call, args_digest, status, outcome, created_at, completed_at)
       SELECT tid, ${LEDGER_ROW} FROM "${schema}".cairn_threads`,
    );
    try {
      await goesOn(old);
    } finally {
      await old.close();
      await pg.pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    }
  });
});
