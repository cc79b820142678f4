/**
 * Live faults on PostgreSQL, under a run of the keyed graph (a → b → c, each step a
 * recorded value and a keyed effect counted per key by the external system):
 * - the engine's connection killed server-side (`pg_terminate_backend`) in the middle of
 *   a step commit (the commit waits on a lock the test holds, so it is in flight when
 *   its backend dies), and every connection killed between calls;
 * - a statement timeout hit by a step commit;
 * - the server restarted mid-run, and stopped under a commit, on a PRIVATE cluster
 *   (test/helpers/private-postgres.ts), never the shared one other files use.
 * Each time the run goes on, or stops with a typed error (EngineError, marked
 * retryable), and running the thread again completes it with every step once and every
 * keyed effect applied once.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/contracts/engine.js';
import { postgres } from '../../src/engines/postgres/index.js';
import { EngineError } from '../../src/errors.js';
import { withFaults, type FaultyEngine } from '../../src/testing/faults.js';
import { usePostgresSchema } from '../helpers/postgres.js';
import { startPrivateCluster, type PrivateCluster } from '../helpers/private-postgres.js';
import { External, expectEveryStepOnce, expectTypedErrors, keyedApp, runUntilComplete, type Recovery } from './keyed-graph.js';

const shared = usePostgresSchema();
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

async function until(what: string, check: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await sleep(10);
  }
}

/** Runs the thread once and then until it completes: the first run's outcome (completed, or the error it stopped with) and the recovery. */
async function runThrough(engine: Engine, external: External, thread: string): Promise<{ first: string; recovery: Recovery }> {
  const first = await keyedApp(engine, external)
    .run({ thread })
    .then(
      (result) => result.status,
      (error: unknown) => error,
    );
  if (typeof first !== 'string') {
    expectTypedErrors([first], thread);
    expect(EngineError.is(first) && (first as EngineError).retryable, `${thread}: the error says trying again may work: ${String(first)}`).toBe(true);
  }
  const recovery = first === 'completed' ? { runs: 0, errors: [], status: 'completed' } : await runUntilComplete(() => keyedApp(engine, external), thread);
  expect(recovery.status, `${thread}: ${recovery.errors.map(String).join('; ')}`).toBe('completed');
  expectTypedErrors(recovery.errors, thread);
  await expectEveryStepOnce(engine, thread, external, thread);
  return { first: typeof first === 'string' ? first : (first as { code: string }).code, recovery };
}

describe('connections killed server-side', () => {
  let admin: pg.Pool;
  beforeAll(() => {
    admin = new pg.Pool({ connectionString: shared.url, max: 3 });
    admin.on('error', () => undefined);
  });
  afterAll(() => admin.end());

  const backends = async (app: string, where = 'true') =>
    (await admin.query<{ pid: number }>(`SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND ${where}`, [app])).rows.map((r) => r.pid);
  const terminate = async (pids: number[]) => {
    for (const pid of pids) await admin.query('SELECT pg_terminate_backend($1)', [pid]);
  };

  it('in the middle of a step commit: the commit is sent again on a new connection and the run goes on', async () => {
    const name = `cairn-kill-commit-${process.pid}`;
    const engine = withFaults(await shared.engine({ applicationName: name }));
    const external = new External();
    try {
      // Before step b's commit: lock the thread row, so that the commit waits on it in
      // flight; kill its backend while it waits; let go of the lock.
      engine.faults.add({
        op: 'checkpointer.commitStep',
        nth: 3,
        kind: 'pass',
        before: async () => {
          const locker = await admin.connect();
          await locker.query('BEGIN');
          await locker.query(`SELECT 1 FROM "${shared.schema}".cairn_threads WHERE id = 'mid-commit' FOR UPDATE`);
          void (async () => {
            try {
              await until('the commit waits on the lock', async () => (await backends(name, `wait_event_type = 'Lock'`)).length === 1);
              await terminate(await backends(name, `wait_event_type = 'Lock'`));
            } finally {
              await locker.query('ROLLBACK');
              locker.release();
            }
          })();
        },
      });
      const { first } = await runThrough(engine, external, 'mid-commit');
      expect(engine.faults.fired).toHaveLength(1);
      console.log(`[postgres] backend killed mid-commit → the run ${first === 'completed' ? 'went on' : `stopped with ${first}`}`);
      expect(first).toBe('completed');
    } finally {
      await engine.close();
    }
  });

  it("every connection of the engine killed while a node runs, and again before the next step's first write", async () => {
    const name = `cairn-kill-all-${process.pid}`;
    const engine: FaultyEngine = withFaults(await shared.engine({ applicationName: name }));
    const external = new External();
    const killAll = async () => terminate(await backends(name));
    try {
      engine.faults.add({ op: 'ledger.writeOutcome', nth: 1, kind: 'pass', before: killAll }, { op: 'ledger.writeRecord', nth: 3, kind: 'pass', before: killAll });
      const { first } = await runThrough(engine, external, 'kill-all');
      expect(engine.faults.fired).toHaveLength(2);
      console.log(`[postgres] every connection killed twice → the run ${first === 'completed' ? 'went on' : `stopped with ${first}`}`);
    } finally {
      await engine.close();
    }
  });

  it('a statement timeout on a step commit: EngineError, retryable; a rerun completes', async () => {
    const pool = new pg.Pool({ connectionString: shared.url, max: 4, statement_timeout: 200 });
    pool.on('error', () => undefined);
    await shared.empty();
    const engine = withFaults(postgres(pool, { schema: shared.schema }));
    const external = new External();
    try {
      engine.faults.add({
        op: 'checkpointer.commitStep',
        nth: 2,
        kind: 'pass',
        before: async () => {
          const locker = await admin.connect();
          await locker.query('BEGIN');
          await locker.query(`SELECT 1 FROM "${shared.schema}".cairn_threads WHERE id = 'timeout' FOR UPDATE`);
          setTimeout(() => void locker.query('ROLLBACK').finally(() => locker.release()), 600);
        },
      });
      const { first } = await runThrough(engine, external, 'timeout');
      expect(first).toBe(EngineError.code);
    } finally {
      await engine.close();
      await pool.end();
    }
  });
});

describe('PostgreSQL restarted mid-run (a private cluster)', () => {
  let cluster: PrivateCluster;
  beforeAll(async () => {
    cluster = await startPrivateCluster();
  }, 60_000);
  afterAll(() => cluster?.destroy());

  it('restarted while a node runs: the run goes on, or stops typed and a rerun completes', async () => {
    const engine = withFaults(postgres(cluster.url, { schema: 'restart_a', max: 4 }));
    const external = new External();
    try {
      engine.faults.add({ op: 'ledger.writeOutcome', nth: 2, kind: 'pass', before: () => cluster.restart() });
      const { first } = await runThrough(engine, external, 'restart-mid-run');
      expect(engine.faults.fired).toHaveLength(1);
      console.log(`[postgres] server restarted while a node ran → the run ${first === 'completed' ? 'went on' : `stopped with ${first}`}`);
    } finally {
      await engine.close();
    }
  });

  it('stopped under a step commit and started again: the run stops with a retryable EngineError, and a rerun completes', async () => {
    const engine = withFaults(postgres(cluster.url, { schema: 'restart_b', max: 4 }));
    const external = new External();
    try {
      let back: Promise<void> | undefined;
      engine.faults.add({
        op: 'checkpointer.commitStep',
        nth: 3,
        kind: 'pass',
        before: async () => {
          await cluster.stop('fast');
          back = sleep(500).then(() => cluster.start());
        },
      });
      const first = await keyedApp(engine, external)
        .run({ thread: 'stopped-under-commit' })
        .catch((error: unknown) => error as EngineError);
      expect(EngineError.is(first), String(first)).toBe(true);
      expect((first as EngineError).retryable).toBe(true);
      await back;
      const { first: again } = await runThrough(engine, external, 'stopped-under-commit');
      expect(again).toBe('completed');
    } finally {
      await engine.close();
    }
  });
});
