/**
 * Takeovers between `cairn worker` processes on one host, on PostgreSQL and SQLite:
 * - a worker SIGKILLed while it holds 100 threads: another worker process sees its
 *   process is gone and completes all of them long before their 30 s leases expire;
 * - (PostgreSQL) a worker SIGSTOPped past its lease and then continued is alive, so
 *   nothing is taken from it early; once its leases expired the others take over, and
 *   when it wakes its late commits are refused (LeaseLostError), no step is lost and
 *   no keyed effect is applied twice, as an HTTP server counting requests per
 *   idempotency key sees it.
 * The precise takeover times are measured by `npm run bench:scale`; the bounds here
 * are generous, for a loaded machine.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sqlite } from '../../dist/engines/sqlite/index.js';
import type { Engine } from '../../src/contracts/engine.js';
import { PG_URL } from '../helpers/postgres.js';
// @ts-expect-error the fixture is plain JS
import { createApp, closeExternal } from '../fixtures/worker-app.mjs';
import { startEffectServer, type EffectServer } from './effect-server.js';
import { engineOn, dropFreshSchemas, freshSchema, killLeftoverWorkers, sleep, startWorker, waitForCompletion, type WorkerProcess } from './worker-setup.js';

afterEach(() => killLeftoverWorkers());

let admin: pg.Pool;
/** A fresh one per test: derived keys repeat across databases (same thread ids, same steps). */
let effects: EffectServer;
const dirs: string[] = [];
beforeAll(() => {
  admin = new pg.Pool({ connectionString: PG_URL, max: 2 });
});
beforeEach(async () => {
  effects = await startEffectServer();
});
afterEach(() => effects.close());
afterAll(async () => {
  await dropFreshSchemas(admin);
  await admin.end();
  await closeExternal();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** One database under test: its engine, the `--db` flags of its workers, and how many running threads a pid holds. */
interface Target {
  engine: Engine;
  dbFlags: string[];
  schema: string;
  heldBy(pid: number): Promise<number>;
  close(): Promise<void>;
}

async function target(kind: 'postgres' | 'sqlite', label: string): Promise<Target> {
  const schema = await freshSchema(admin, label);
  if (kind === 'postgres') {
    const engine = engineOn(schema);
    return {
      engine,
      schema,
      dbFlags: ['--db', `${PG_URL}#${schema}`],
      heldBy: async (pid) =>
        (await admin.query(`SELECT count(*)::int AS n FROM "${schema}".cairn_threads WHERE owner_pid = $1 AND status = 'running' AND run_id IS NOT NULL`, [pid])).rows[0].n,
      close: () => engine.close(),
    };
  }
  const dir = mkdtempSync(join(tmpdir(), 'cairn-takeover-'));
  dirs.push(dir);
  const file = join(dir, 'cairn.db');
  const engine = sqlite(file) as unknown as Engine;
  await engine.checkpointer.listThreads({ limit: 1 }); // creates the file and its tables
  const reader = new Database(file, { readonly: true, fileMustExist: true });
  reader.pragma('busy_timeout = 5000');
  return {
    engine,
    schema,
    dbFlags: ['--db', file],
    heldBy: async (pid) =>
      (reader.prepare(`SELECT count(*) AS n FROM cairn_threads WHERE owner_pid = ? AND status = 'running' AND run_id IS NOT NULL`).get(pid) as { n: number }).n,
    close: async () => {
      reader.close();
      await engine.close();
    },
  };
}

async function submit(t: Target, count: number, steps: number): Promise<void> {
  process.env.WORKER_SCHEMA = t.schema;
  process.env.WORKER_STEPS = String(steps);
  const app = createApp(t.engine);
  for (let i = 0; i < count; i++) await app.submit({ thread: `t${String(i).padStart(3, '0')}`, input: { n: 0 } });
}

async function until(what: string, check: () => Promise<boolean>, deadlineMs: number): Promise<void> {
  const deadline = Date.now() + deadlineMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await sleep(20);
  }
}

/** Every thread completed along one line of positions, `steps` steps each, and each step's effect was applied under one key. */
async function expectEveryStepOnce(t: Target, count: number, steps: number, keys: readonly string[]): Promise<void> {
  const threads = await t.engine.checkpointer.listThreads({ limit: 10_000 });
  expect(threads).toHaveLength(count);
  const used: string[] = [];
  for (const thread of threads) {
    expect(thread.status).toBe('completed');
    const positions = await t.engine.checkpointer.getPositions(thread.id, '', { from: 0, to: 10_000 });
    expect(positions.map((p) => p.parent)).toEqual(positions.map((p) => (p.seq === 0 ? null : p.seq - 1)));
    expect(positions).toHaveLength(steps + 1);
    const effectsOfThread = (await t.engine.ledger.list(thread.id)).filter((entry) => entry.kind === 'effect');
    expect(effectsOfThread.every((entry) => entry.status === 'done')).toBe(true);
    used.push(...effectsOfThread.map((entry) => entry.key));
  }
  // One key per step (a re-execution used the same key), and the server applied exactly those.
  expect(used).toHaveLength(count * steps);
  expect([...keys].sort()).toEqual([...used].sort());
}

const LEASE_MS = 30_000;

describe.each(['postgres', 'sqlite'] as const)('a SIGKILLed worker on %s', (kind) => {
  it('another worker process takes its 100 threads over as soon as its process is gone, not when the 30 s leases expire', async () => {
    const t = await target(kind, `kill100${kind}`);
    const THREADS = 100;
    const STEPS = 3;
    try {
      await submit(t, THREADS, STEPS);
      const common = { WORKER_STEPS: String(STEPS), WORKER_LEASE_MS: String(LEASE_MS), WORKER_EFFECT_URL: effects.url };
      // A poll of a minute: only the dead holder's detection can hand the threads over in time.
      const args = ['--concurrency', String(THREADS), '--lease-ms', String(LEASE_MS), '--max-connections', '8', '--poll-ms', '60000'];
      // The victim's first step never ends: it holds every thread when it dies.
      const victim = startWorker(t.schema, { ...common, WORKER_STEP_MS: '600000' }, args, t.dbFlags);
      await until('the victim holds every thread', async () => (await t.heldBy(victim.child.pid!)) === THREADS, 30_000);
      const rescuer: WorkerProcess = startWorker(t.schema, { ...common, WORKER_STEP_MS: '2' }, args, t.dbFlags);
      await sleep(1_500); // the rescuer is up and idle, watching the victim's process
      expect(await t.heldBy(victim.child.pid!)).toBe(THREADS);
      victim.child.kill('SIGKILL');
      const killedAt = Date.now();
      await victim.exited;
      expect(await waitForCompletion(t.engine, THREADS, LEASE_MS + 10_000)).toBe(THREADS);
      const tookMs = Date.now() - killedAt;
      // Before any of the leases could expire (detection is ~50 ms after the death; the rest is
      // the work itself, slow on a loaded machine), and with a poll of a minute nothing else wakes the rescuer.
      expect(tookMs).toBeLessThan(LEASE_MS - 5_000);
      await until('the rescuer reports every thread', async () => rescuer.reports.length >= THREADS, 10_000);
      expect(rescuer.reports.filter((r) => r.status === 'completed')).toHaveLength(THREADS);
      console.log(`[${kind}] SIGKILL with ${THREADS} threads held → all completed by another worker in ${tookMs} ms`);
      rescuer.child.kill('SIGTERM');
      expect(await rescuer.exited).toBe(0);
      await expectEveryStepOnce(t, THREADS, STEPS, effects.applied);
    } finally {
      await t.close();
    }
  });
});

describe('a SIGSTOPped worker on postgres', () => {
  it('keeps its threads while alive and within its lease; once continued past it, its late commits are refused, no step is lost and no effect applied twice', async () => {
    const t = await target('postgres', 'stop');
    const THREADS = 20;
    const STEPS = 10;
    const PAUSE_LEASE_MS = 1_000;
    try {
      await submit(t, THREADS, STEPS);
      const env = { WORKER_STEPS: String(STEPS), WORKER_STEP_MS: '300', WORKER_LEASE_MS: String(PAUSE_LEASE_MS), WORKER_EFFECT_URL: effects.url };
      const args = ['--concurrency', String(THREADS), '--lease-ms', String(PAUSE_LEASE_MS), '--max-connections', '8'];
      const sleeper = startWorker(t.schema, env, args, t.dbFlags);
      await until('the sleeper holds every thread', async () => (await t.heldBy(sleeper.child.pid!)) === THREADS, 30_000);
      const other = startWorker(t.schema, env, args, t.dbFlags);
      await sleep(1_200); // the other worker is up and watching
      sleeper.child.kill('SIGSTOP');
      // Alive (only stopped): within its lease nothing is taken from it.
      await sleep(PAUSE_LEASE_MS / 3);
      expect(await t.heldBy(sleeper.child.pid!)).toBe(THREADS);
      expect(other.reports).toEqual([]);
      // Past its lease the other worker takes over; the sleeper wakes only after it finished them all.
      expect(await waitForCompletion(t.engine, THREADS, 30_000)).toBe(THREADS);
      sleeper.child.kill('SIGCONT');
      await until('the continued worker reports on every thread it held', async () => sleeper.reports.length >= THREADS, 30_000);
      sleeper.child.kill('SIGTERM');
      other.child.kill('SIGTERM');
      expect(await Promise.all([sleeper.exited, other.exited])).toEqual([0, 0]);
      // Every commit the sleeper tried after waking was refused: its leases were lost.
      expect(sleeper.reports.map((r) => r.error)).toEqual(Array(THREADS).fill('ERR_LEASE_LOST'));
      await until('the other worker reports every thread', async () => other.reports.length >= THREADS, 10_000);
      expect(other.reports.filter((r) => r.status === 'completed')).toHaveLength(THREADS);
      const applied = effects.applied;
      await expectEveryStepOnce(t, THREADS, STEPS, applied);
      // A request the sleeper had in flight may arrive twice for one key: the key absorbs it.
      const duplicates = applied.filter((key) => (effects.requests.get(key) ?? 0) > 1);
      expect(duplicates.length).toBeLessThanOrEqual(THREADS);
    } finally {
      await t.close();
    }
  });
});
