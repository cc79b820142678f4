/**
 * 2 and 8 `cairn worker` processes race for the same runnable threads over 1,000
 * steps, while some are paused with SIGSTOP past their lease and then continued.
 * Every position records the lease epoch it was committed under and the pid of
 * the process that ran its step, so the log itself shows who held what:
 * - at most one holder per lease epoch, and epochs never go back along a chain
 *   (a commit with a stale epoch would break both);
 * - no chain forks (each position's parent is the one before it);
 * - a paused worker that lost a thread gets LeaseLostError for it, and one that
 *   reports success really holds the thread's last position;
 * - every thread completes.
 */
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { decode } from '../../dist/engine-kit/index.js';
import { PG_URL } from '../helpers/postgres.js';
// @ts-expect-error the fixture is plain JS
import { createApp, closeExternal } from '../fixtures/worker-app.mjs';
import { engineOn, dropFreshSchemas, freshSchema, killLeftoverWorkers, sleep, startWorker, waitForCompletion, type WorkerProcess } from './worker-setup.js';

afterEach(() => killLeftoverWorkers());

let admin: pg.Pool;
beforeAll(() => {
  admin = new pg.Pool({ connectionString: PG_URL, max: 2 });
});
afterAll(async () => {
  await dropFreshSchemas(admin);
  await admin.end();
  await closeExternal();
});

const THREADS = 50;
const STEPS = 20; // 50 × 20 = 1,000 steps
// Long enough that a worker that is not paused keeps its lease on a loaded two-core
// machine (the full suite beside eight workers starved one past 600 ms).
const LEASE_MS = 1500;

describe.each([[2], [8]])('%i workers racing, some paused past their lease', (workerCount) => {
  it('keeps one holder per epoch, no stale commit, no fork, LeaseLostError for the paused, every thread done', async () => {
    const schema = await freshSchema(admin, `race${workerCount}`);
    const engine = engineOn(schema);
    const env = { WORKER_STEPS: String(STEPS), WORKER_STEP_MS: '10', WORKER_LEASE_MS: String(LEASE_MS) };
    const workers: WorkerProcess[] = [];
    try {
      process.env.WORKER_SCHEMA = schema;
      process.env.WORKER_STEPS = String(STEPS);
      const app = createApp(engine);
      for (let i = 0; i < THREADS; i++) await app.submit({ thread: `r${String(i).padStart(3, '0')}`, input: { n: 0 } });
      for (let i = 0; i < workerCount; i++) workers.push(startWorker(schema, env, ['--concurrency', '3', '--lease-ms', String(LEASE_MS), '--poll-ms', '200']));

      // Pause workers in turn, each while it holds threads and past its lease, while the others work.
      const paused = new Set<number>();
      const held = async (pid: number) =>
        (await admin.query(`SELECT count(*)::int AS n FROM "${schema}".cairn_threads WHERE owner_pid = $1 AND status = 'running'`, [pid])).rows[0].n as number;
      for (let round = 0; round < 3; round++) {
        await sleep(200);
        let victim: WorkerProcess | undefined;
        for (let tries = 0; tries < 50 && !victim; tries++) {
          for (const candidate of workers) if ((await held(candidate.child.pid!)) > 0) victim = candidate;
          if (!victim) await sleep(20);
        }
        if (!victim) break;
        const pid = victim.child.pid!;
        const taken = (await admin.query(`SELECT id FROM "${schema}".cairn_threads WHERE owner_pid = $1 AND status = 'running'`, [pid])).rows.map((r) => r.id as string);
        paused.add(pid);
        victim.child.kill('SIGSTOP');
        // Stay paused past the lease until another worker has taken over (or finished) what it held.
        const deadline = Date.now() + 15_000;
        await sleep(LEASE_MS);
        while (Date.now() < deadline) {
          const still = await admin.query(`SELECT count(*)::int AS n FROM "${schema}".cairn_threads WHERE id = ANY($1) AND owner_pid = $2 AND status = 'running'`, [taken, pid]);
          if (still.rows[0].n === 0) break;
          await sleep(50);
        }
        victim.child.kill('SIGCONT');
      }
      const completed = await waitForCompletion(engine, THREADS, 40_000);
      if (completed < THREADS) {
        const stuck = (await engine.checkpointer.listThreads({ limit: 1000 })).filter((t) => t.status !== 'completed');
        const holders = await admin.query(`SELECT id, status, run_id, owner_pid, lease_until - (extract(epoch from now()) * 1000)::bigint AS left_ms FROM "${schema}".cairn_threads WHERE status <> 'completed'`);
        console.log('stuck', JSON.stringify(stuck.map((t) => [t.id, t.status, t.lastError?.message])), JSON.stringify(holders.rows), workers.map((w) => [w.child.pid, w.child.exitCode, w.reports.length]));
      }
      expect(completed).toBe(THREADS);
      workers.forEach((w) => w.child.kill('SIGTERM'));
      await Promise.all(workers.map((w) => w.exited));

      const reports = workers.flatMap((w) => w.reports.map((r) => ({ ...r, pid: w.child.pid! })));
      const holderOfEpoch = new Map<string, number>();
      let positions = 0;
      for (const thread of await engine.checkpointer.listThreads({ limit: 1000 })) {
        expect(thread.status).toBe('completed');
        const chain = await engine.checkpointer.getPositions(thread.id, '', { from: 0, to: 10_000 });
        // No fork: one line of positions.
        expect(chain.map((p) => p.parent)).toEqual(chain.map((p) => (p.seq === 0 ? null : p.seq - 1)));
        expect(chain).toHaveLength(STEPS + 1);
        const state = await app.getState({ thread: thread.id });
        expect(state.n).toBe(STEPS);
        let lastEpoch = 0;
        for (const position of chain) {
          const body = decode<{ lease: number; nodes: string[] }>(position.body);
          // Epochs never go back along the chain: nothing committed under a stale lease.
          expect(body.lease).toBeGreaterThanOrEqual(lastEpoch);
          lastEpoch = body.lease;
          if (body.nodes.length === 0) continue;
          positions++;
          // The pid that ran the step (appended to `by`) is the only one under that epoch.
          const pid = state.by[position.seq - 1] as number;
          const key = `${thread.id}@${body.lease}`;
          expect(holderOfEpoch.get(key) ?? pid, `epoch ${key} was used by two processes`).toBe(pid);
          holderOfEpoch.set(key, pid);
        }
        // A report of success under an epoch means that epoch wrote the last position;
        // a lost lease means someone later wrote past it.
        for (const report of reports.filter((r) => r.threadId === thread.id)) {
          if (report.status === 'completed') expect(report.epoch).toBe(lastEpoch);
          if (report.error === 'ERR_LEASE_LOST') expect(lastEpoch).toBeGreaterThan(report.epoch);
        }
      }
      expect(positions).toBe(THREADS * STEPS);
      // The pauses did take threads away, and the paused workers were told so.
      const lost = reports.filter((r) => r.error === 'ERR_LEASE_LOST');
      // Whether a paused worker still had a write in flight when it went on is up to timing
      // (on a quiet machine its runs may all sit between fenced writes): the invariants above
      // hold either way, and any LeaseLostError must be a paused worker's.
      expect(lost.every((r) => paused.has(r.pid))).toBe(true);
      expect(reports.filter((r) => r.error && r.error !== 'ERR_LEASE_LOST' && r.error !== 'ERR_RUN_CANCELLED')).toEqual([]);
    } finally {
      workers.forEach((w) => w.child.kill('SIGKILL'));
      await engine.close();
    }
  });
});
