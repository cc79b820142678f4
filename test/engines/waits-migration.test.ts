/**
 * Durable waits on databases made before them (migration 6 on SQLite and PostgreSQL):
 * an existing thread opens with no wake time, takes signals and waits; and, on
 * PostgreSQL, a signal sent to a waiting thread by one engine wakes a worker listening
 * through another (NOTIFY on the runnable channel), while one sent to a running thread
 * does not.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { migrate as migratePostgres, postgres, POSTGRES_MIGRATIONS } from '../../src/engines/postgres/index.js';
import { openDatabase } from '../../src/engines/sqlite/driver.js';
import { migrate as migrateSqlite, sqlite, SQLITE_MIGRATIONS } from '../../src/engines/sqlite/index.js';
import type { Engine } from '../../src/contracts/engine.js';
import { PG_URL, usePostgresSchema } from '../helpers/postgres.js';
import { tempDir } from '../helpers/temp-dirs.js';

const owner = { runId: 'waits', pid: 4242, host: 'waits.invalid' };
const create = { kind: 'task' as const, tenant: null, metadata: {} };
const position = { ns: '', seq: 0, parent: null, segment: 0, step: 0, schemaVersion: 1, createdAt: 1_700_000_000_000, body: '{"kind":"input"}', hash: '0'.repeat(63) + '1' };
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** What an engine opened on a database from before waits does with a thread made there. */
async function goesOn(engine: Engine): Promise<void> {
  const cp = engine.checkpointer;
  expect(await cp.getThread('old')).toMatchObject({ status: 'completed', wakeAt: null });
  expect(await cp.listSignals('old')).toEqual([]);
  expect((await cp.sendSignal('old', { name: 'go', payload: '1' })).id).toBe(1);
  const lease = await cp.acquireThread('old', { owner: { ...owner, runId: 'again' }, leaseMs: 60_000 });
  await cp.commitStep(lease, { position: { ...position, seq: 1, parent: 0, step: 1, hash: '0'.repeat(63) + '2' }, items: [], status: 'waiting', wakeAt: 5, expectedHead: 0 });
  expect(await cp.getThread('old')).toMatchObject({ status: 'waiting', wakeAt: 5 });
}

describe('migration 6 on a database from before waits', () => {
  it('SQLite: the thread opens with no wake time, takes signals and waits', async () => {
    const file = join(tempDir('cairn-waits-'), 'old.db');
    const raw = openDatabase(file, 1000);
    migrateSqlite(raw, SQLITE_MIGRATIONS.filter((m) => m.id < 6));
    raw.exec(`INSERT INTO cairn_threads (tid, id, kind, status, attempts, metadata, epoch, created_at, updated_at) VALUES (1, 'old', 'task', 'completed', 1, '{}', 1, 1, 1)`);
    raw.exec(`INSERT INTO cairn_positions (tid, ns, seq, parent, segment, step, schema_version, created_at, body, hash) VALUES (1, '', 0, NULL, 0, 0, 1, 1700000000000, '{"kind":"input"}', x'${'0'.repeat(63)}1')`);
    raw.exec(`INSERT INTO cairn_heads (tid, ns, seq, hash, created_at) VALUES (1, '', 0, x'${'0'.repeat(63)}1', 1700000000000)`);
    raw.close();
    const engine = sqlite(file);
    try {
      await goesOn(engine);
    } finally {
      await engine.close();
    }
  });

  const pg = usePostgresSchema();

  it('PostgreSQL: the thread opens with no wake time, takes signals and waits', async () => {
    const schema = `${pg.schema}_old`;
    await migratePostgres(pg.pool, schema, POSTGRES_MIGRATIONS.filter((m) => m.id < 6));
    const old = postgres(PG_URL, { schema, max: 1 });
    // Written by the engine as it was: at migration 5 the tables had no wait columns.
    await pg.pool.query(`INSERT INTO "${schema}".cairn_threads (id, kind, status, attempts, metadata, epoch, created_at, updated_at) VALUES ('old', 'task', 'completed', 1, '{}', 1, 1, 1)`);
    await pg.pool.query(
      `INSERT INTO "${schema}".cairn_positions (tid, ns, seq, parent, segment, step, schema_version, created_at, body, hash)
       SELECT tid, '', 0, NULL, 0, 0, 1, 1700000000000, '{"kind":"input"}', decode('${'0'.repeat(63)}1', 'hex') FROM "${schema}".cairn_threads`,
    );
    await pg.pool.query(`INSERT INTO "${schema}".cairn_heads (tid, ns, seq, hash, created_at) SELECT tid, '', 0, decode('${'0'.repeat(63)}1', 'hex'), 1700000000000 FROM "${schema}".cairn_threads`);
    try {
      await goesOn(old);
    } finally {
      await old.close();
      await pg.pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    }
  });
});

describe('PostgreSQL: a signal wakes the workers', () => {
  const pg = usePostgresSchema();

  it("NOTIFYs the runnable channel for a waiting thread: another engine's subscribeRunnable listener hears its id; a running thread's signal is not heard", async () => {
    const sender = await pg.engine();
    const worker = await pg.engine();
    const heard: string[] = [];
    const unsubscribe = await worker.checkpointer.subscribeRunnable!((threadId) => heard.push(threadId));
    try {
      const cp = sender.checkpointer;
      for (const [id, status] of [['waits', 'waiting'], ['runs', 'running']] as const) {
        const lease = await cp.acquireThread(id, { owner: { ...owner, runId: id }, leaseMs: 60_000, create });
        await cp.commitStep(lease, { position, items: [], status, wakeAt: null, expectedHead: null });
        if (status === 'waiting') await cp.releaseThread(lease);
      }
      await cp.sendSignal('runs', { name: 'go', payload: '1' });
      await cp.sendSignal('waits', { name: 'go', payload: '1' });
      for (let i = 0; i < 200 && !heard.includes('waits'); i++) await sleep(10);
      // Notifications arrive in commit order: once the later one is heard, the earlier one would have been.
      expect(heard).toEqual(['waits']);
      const [claimed] = await worker.checkpointer.claimThreads!({ owner: { ...owner, runId: 'worker' }, leaseMs: 60_000, limit: 5 });
      expect(claimed).toMatchObject({ threadId: 'waits', thread: { status: 'waiting' } });
    } finally {
      await unsubscribe();
      await sender.close();
      await worker.close();
    }
  });
});
