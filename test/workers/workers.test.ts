/**
 * Workers on PostgreSQL, as separate `cairn worker` processes: they share the
 * runnable threads, take over a SIGKILLed worker's threads once its lease expires,
 * hand threads over at once on SIGTERM, and wake on NOTIFY rather than a poll.
 */
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { PG_URL } from '../helpers/postgres.js';
// @ts-expect-error the fixture is plain JS
import { createApp, closeExternal } from '../fixtures/worker-app.mjs';
import { engineOn, dropFreshSchemas, freshSchema, killLeftoverWorkers, sleep, startWorker, waitForCompletion } from './worker-setup.js';

afterEach(() => killLeftoverWorkers());
import { Worker } from '../../dist/index.js';
import type { Engine } from '../../src/contracts/engine.js';

let admin: pg.Pool;
beforeAll(() => {
  admin = new pg.Pool({ connectionString: PG_URL, max: 2 });
});
afterAll(async () => {
  await dropFreshSchemas(admin);
  await admin.end();
  await closeExternal();
});

async function submitThreads(engine: Engine, schema: string, count: number, steps: number): Promise<void> {
  process.env.WORKER_SCHEMA = schema;
  process.env.WORKER_STEPS = String(steps);
  const app = createApp(engine);
  for (let i = 0; i < count; i++) await app.submit({ thread: `t${String(i).padStart(3, '0')}`, input: { n: 0 } });
}

/** Every thread: a linear chain 0..head, n = steps, and each step's effect ran once. */
async function expectCleanRuns(engine: Engine, schema: string, count: number, steps: number): Promise<void> {
  const threads = await engine.checkpointer.listThreads({ limit: 10_000 });
  expect(threads).toHaveLength(count);
  for (const thread of threads) {
    expect(thread.status).toBe('completed');
    const positions = await engine.checkpointer.getPositions(thread.id, '', { from: 0, to: 10_000 });
    expect(positions.map((p) => p.parent)).toEqual(positions.map((p) => (p.seq === 0 ? null : p.seq - 1)));
    expect(positions).toHaveLength(steps + 1);
  }
  const { rows } = await admin.query(`SELECT count(*)::int AS runs, count(DISTINCT key)::int AS keys FROM "${schema}".effect_runs`);
  expect(rows[0]).toEqual({ runs: count * steps, keys: count * steps });
}

describe('cairn worker on PostgreSQL', () => {
  it('two worker processes share the runnable threads and every step runs once', async () => {
    const schema = await freshSchema(admin, 'share');
    const engine = engineOn(schema);
    try {
      await submitThreads(engine, schema, 30, 5);
      const workers = [0, 1].map(() => startWorker(schema, { WORKER_STEPS: '5' }, ['--concurrency', '3']));
      expect(await waitForCompletion(engine, 30, 30_000)).toBe(30);
      workers.forEach((w) => w.child.kill('SIGTERM'));
      expect(await Promise.all(workers.map((w) => w.exited))).toEqual([0, 0]);
      await expectCleanRuns(engine, schema, 30, 5);
      // Both took part.
      expect(workers.every((w) => w.reports.some((r) => r.status === 'completed'))).toBe(true);
    } finally {
      await engine.close();
    }
  });

  it('the old --postgres <url> --schema <name> flags still run a worker, each with a one-line deprecation notice', async () => {
    const schema = await freshSchema(admin, 'oldflags');
    const engine = engineOn(schema);
    try {
      await submitThreads(engine, schema, 3, 2);
      const worker = startWorker(schema, { WORKER_STEPS: '2' }, [], ['--postgres', PG_URL, '--schema', schema]);
      expect(await waitForCompletion(engine, 3, 30_000)).toBe(3);
      worker.child.kill('SIGTERM');
      expect(await worker.exited).toBe(0);
      await expectCleanRuns(engine, schema, 3, 2);
      const notices = worker.stderr().split('\n').filter((line) => line.includes('deprecated'));
      expect(notices).toEqual(['[cairn] --postgres is deprecated: use --db <url>#<schema>.', '[cairn] --schema is deprecated: use --db <url>#<schema>.']);
    } finally {
      await engine.close();
    }
  });

  it("takes over a SIGKILLed worker's threads when its lease expires; effects in flight are probed, not repeated", async () => {
    const schema = await freshSchema(admin, 'kill');
    const engine = engineOn(schema);
    try {
      await submitThreads(engine, schema, 8, 20);
      const env = { WORKER_STEPS: '20', WORKER_STEP_MS: '50', WORKER_LEASE_MS: '800' };
      const victim = startWorker(schema, env, ['--concurrency', '8', '--lease-ms', '800']);
      await sleep(700);
      victim.child.kill('SIGKILL');
      await victim.exited;
      const heldAtDeath = (await engine.checkpointer.listThreads({ status: 'running', limit: 100 })).length;
      expect(heldAtDeath).toBeGreaterThan(0);
      const rescuer = startWorker(schema, env, ['--concurrency', '8', '--lease-ms', '800']);
      expect(await waitForCompletion(engine, 8, 30_000)).toBe(8);
      rescuer.child.kill('SIGTERM');
      await rescuer.exited;
      await expectCleanRuns(engine, schema, 8, 20);
    } finally {
      await engine.close();
    }
  });

  it('on SIGTERM a worker releases its threads and another continues them at once, without waiting for the lease', async () => {
    const schema = await freshSchema(admin, 'term');
    const engine = engineOn(schema);
    try {
      await submitThreads(engine, schema, 4, 40);
      const env = { WORKER_STEPS: '40', WORKER_STEP_MS: '50', WORKER_LEASE_MS: '60000' };
      const first = startWorker(schema, env, ['--concurrency', '4', '--lease-ms', '60000']);
      // Until the first worker holds the threads (its SIGTERM handler is installed by then).
      while ((await admin.query(`SELECT count(*)::int AS n FROM "${schema}".cairn_threads WHERE owner_pid = $1`, [first.child.pid])).rows[0].n < 4) await sleep(20);
      const second = startWorker(schema, env, ['--concurrency', '4', '--lease-ms', '60000']);
      await sleep(300);
      first.child.kill('SIGTERM');
      expect(await first.exited).toBe(0);
      const stoppedAt = Date.now();
      expect(await waitForCompletion(engine, 4, 20_000)).toBe(4);
      // Far sooner than the 60 s lease: the leases were released, not left to expire.
      expect(Date.now() - stoppedAt).toBeLessThan(15_000);
      expect(first.reports.some((r) => r.error === 'ERR_RUN_CANCELLED')).toBe(true);
      second.child.kill('SIGTERM');
      await second.exited;
      await expectCleanRuns(engine, schema, 4, 40);
    } finally {
      await engine.close();
    }
  });

  it('an idle worker wakes on NOTIFY: a submitted run and a detached resume start at once, not on the next poll', async () => {
    const schema = await freshSchema(admin, 'wake');
    const engine = engineOn(schema);
    process.env.WORKER_SCHEMA = schema;
    process.env.WORKER_STEPS = '2';
    const app = createApp(engine);
    const done: string[] = [];
    const worker = new Worker(createApp(engineOn(schema)), { concurrency: 2, pollMs: 60_000, onRun: (r: { threadId: string }) => done.push(r.threadId) });
    const running = worker.run();
    try {
      await sleep(300);
      const start = Date.now();
      await app.submit({ thread: 'late', input: { n: 0 } });
      while (!done.includes('late') && Date.now() - start < 10_000) await sleep(5);
      expect(done).toContain('late');
      // Far sooner than the 60 s poll (a loaded machine can take a few seconds to run it).
      expect(Date.now() - start).toBeLessThan(15_000);
    } finally {
      await worker.stop();
      await running;
      await worker.app.engine.close();
      await engine.close();
    }
  });
});
