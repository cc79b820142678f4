/**
 * @module bench/postgres
 *
 * The step commit on PostgreSQL (issue: "one round trip per step"): the same
 * append workload through cairn's `postgres` engine on the local server, beside
 * the raw limit — one 1 KB row inserted per autocommitted statement on the same
 * pool — measured in the same run. Round trips are counted by wrapping the pool
 * the engine is given (every `query` and every checked-out client's `query`).
 * Reported: ms per step (mean of the last 100 steps, median-of-3 runs), round
 * trips per step, and the ratio to the raw insert.
 */
import pg from 'pg';
import { postgres } from '../dist/engines/postgres/index.js';
import { CAIRN_THREAD_ID, buildCairnApp } from './cairn-graph.js';
import { makeMessage } from './workload.js';

export const PG_URL = process.env.CAIRN_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export interface PostgresBenchResult {
  n: number;
  rawInsertMs: number;
  cairnStepMs: number;
  roundTripsPerStep: number;
  ratio: number;
  settings: string;
}

/** A pool whose every statement is counted. */
function countingPool(pool: pg.Pool, counter: { queries: number }) {
  return {
    query: (config: unknown) => {
      counter.queries++;
      return pool.query(config as pg.QueryConfig);
    },
    connect: async () => {
      const client = await pool.connect();
      return {
        query: (config: unknown) => {
          counter.queries++;
          return client.query(config as pg.QueryConfig);
        },
        release: (error?: Error | boolean) => client.release(error),
        on: (event: string, listener: (...args: unknown[]) => void) => client.on(event as 'error', listener),
      };
    },
  };
}

const mean = (values: number[]) => values.reduce((a, b) => a + b, 0) / values.length;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function rawInsert(pool: pg.Pool, schema: string, n: number): Promise<number> {
  await pool.query(`CREATE TABLE "${schema}".raw (id bigserial PRIMARY KEY, body text NOT NULL)`);
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const body = JSON.stringify(makeMessage(i));
    const start = performance.now();
    await pool.query({ name: `raw-insert-${schema}`, text: `INSERT INTO "${schema}".raw (body) VALUES ($1)`, values: [body] });
    times.push(performance.now() - start);
  }
  return mean(times.slice(-100));
}

async function cairnSteps(pool: pg.Pool, schema: string, n: number): Promise<{ ms: number; roundTrips: number }> {
  const counter = { queries: 0 };
  const engine = postgres(countingPool(pool, counter) as never, { schema });
  const stamps: number[] = [];
  const queriesAt: number[] = [];
  const app = buildCairnApp({
    engine,
    n,
    onEvent: (event) => {
      if (event.type === 'step.commit' && event.nodes.length) {
        stamps.push(performance.now());
        queriesAt.push(counter.queries);
      }
    },
  });
  await app.run({ thread: CAIRN_THREAD_ID });
  await engine.close();
  const steps = stamps.slice(1).map((t, i) => t - stamps[i]!);
  const trips = queriesAt.slice(1).map((q, i) => q - queriesAt[i]!);
  return { ms: mean(steps.slice(-100)), roundTrips: mean(trips) };
}

/** Runs raw inserts and cairn steps on fresh schemas, three times each, interleaved. */
export async function benchPostgres(n = 1000): Promise<PostgresBenchResult> {
  const pool = new pg.Pool({ connectionString: PG_URL, max: 4 });
  const schemas: string[] = [];
  const fresh = async () => {
    const schema = `cairn_bench_${Date.now()}_${Math.random().toString(36).slice(2, 8)}`;
    await pool.query(`CREATE SCHEMA "${schema}"`);
    schemas.push(schema);
    return schema;
  };
  try {
    const raw: number[] = [];
    const steps: number[] = [];
    let roundTrips = 0;
    for (let round = 0; round < 3; round++) {
      raw.push(await rawInsert(pool, await fresh(), n));
      const cairn = await cairnSteps(pool, await fresh(), n);
      steps.push(cairn.ms);
      roundTrips = cairn.roundTrips;
    }
    const settings = (await pool.query(`SELECT current_setting('synchronous_commit') AS s, current_setting('server_version') AS v`)).rows[0] as { s: string; v: string };
    const rawInsertMs = median(raw);
    const cairnStepMs = median(steps);
    return { n, rawInsertMs, cairnStepMs, roundTripsPerStep: roundTrips, ratio: cairnStepMs / rawInsertMs, settings: `PostgreSQL ${settings.v}, synchronous_commit=${settings.s}` };
  } finally {
    for (const schema of schemas) await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await pool.end();
  }
}

if (process.argv[1]?.endsWith("bench/postgres.ts")) {
  const result = await benchPostgres(Number(process.argv[2] ?? 1000));
  console.log(JSON.stringify(result, null, 2));
}
