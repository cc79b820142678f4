/**
 * The database server drops the workers' connections (pg_terminate_backend, again
 * and again) while they run: every run completes, and no effect reaches the
 * external system twice.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Worker } from '../../dist/index.js';
import { PG_URL } from '../helpers/postgres.js';
// @ts-expect-error the fixture is plain JS
import { createApp, closeExternal } from '../fixtures/worker-app.mjs';
import { engineOn, dropFreshSchemas, freshSchema, sleep, waitForCompletion } from './worker-setup.js';

let admin: pg.Pool;
beforeAll(() => {
  admin = new pg.Pool({ connectionString: PG_URL, max: 2, application_name: 'cairn-test-admin' });
});
afterAll(async () => {
  await dropFreshSchemas(admin);
  await admin.end();
  await closeExternal();
});

describe('connections killed from the server side', () => {
  it('runs complete and no effect is duplicated while pg_terminate_backend hits the workers', async () => {
    const schema = await freshSchema(admin, 'terminate');
    const appName = `cairn-terminate-${process.pid}`;
    process.env.WORKER_SCHEMA = schema;
    process.env.WORKER_STEPS = '15';
    process.env.WORKER_STEP_MS = '5';
    const submitter = engineOn(schema);
    const app = createApp(submitter);
    const THREADS = 20;
    for (let i = 0; i < THREADS; i++) await app.submit({ thread: `k${i}`, input: { n: 0 } });

    const engines = [engineOn(schema, appName), engineOn(schema, appName)];
    // Open them (schema checked) before the killing starts: what is under test is running, not opening.
    await Promise.all(engines.map((e) => e.checkpointer.getThread('none')));
    const errors: string[] = [];
    const workers = engines.map(
      (engine) => new Worker(createApp(engine, { leaseMs: 2000 }), { concurrency: 5, pollMs: 200, onRun: (r: { error?: string }) => r.error && errors.push(r.error) }),
    );
    const running = workers.map((w) => w.run());
    let killed = 0;
    let stop = false;
    const killer = (async () => {
      while (!stop) {
        await sleep(120);
        const { rowCount } = await admin.query(`SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1`, [appName]);
        killed += rowCount ?? 0;
      }
    })();
    try {
      expect(await waitForCompletion(submitter, THREADS, 90_000)).toBe(THREADS);
    } finally {
      stop = true;
      await killer;
      await Promise.all(workers.map((w) => w.stop()));
      await Promise.all(running);
    }
    expect(killed).toBeGreaterThan(5);
    for (const thread of await submitter.checkpointer.listThreads({ limit: 100 })) {
      expect((await app.getState({ thread: thread.id })).n).toBe(15);
      expect((await app.verify({ thread: thread.id })).ok).toBe(true);
    }
    const { rows } = await admin.query(`SELECT count(*)::int AS runs, count(DISTINCT key)::int AS keys FROM "${schema}".effect_runs`);
    expect(rows[0]).toEqual({ runs: THREADS * 15, keys: THREADS * 15 });
    await Promise.all([...engines, submitter].map((e) => e.close()));
    // Runs the killing interrupted were picked up again, not lost: say how many, for the record.
    console.log(`[terminate] ${killed} connections killed; ${errors.length} runs ended early and were resumed (${[...new Set(errors)].join(', ')})`);
  });
});
