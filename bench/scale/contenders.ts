/**
 * @module bench/scale/contenders
 * One throughput measurement per contender at W processes × c concurrency each, on a
 * fresh schema of the bench database: the work is queued first (cairn: submitted
 * threads; DBOS: enqueued workflows; raw: nothing to queue), the processes connect
 * and say ready, then all start at once. Throughput is counted from the first step's
 * start to the last thread's end (process start-up is not the contender's cost);
 * latency is the time from a step's start to the next one's (its work, its effect and
 * its durable checkpoint), or to the thread's end for the last step.
 */
import pg from 'pg';
import { postgres } from '../../dist/engines/postgres/index.js';
import type { Engine } from '../../dist/contracts/engine.js';
import type { ChildConfig, ChildReport } from './child.js';
import { databaseCpuMs } from './db-cpu.js';
import { allDone, ContenderProcess } from './processes.js';
import { buildScaleApp } from './workflow.js';

export interface RunShape {
  url: string;
  database: string;
  effectUrl: string;
  workers: number;
  concurrency: number;
  poolSize: number;
  threads: number;
  steps: number;
  dbosPollMs: number;
}

export interface Measurement {
  contender: 'cairn' | 'dbos' | 'raw';
  workers: number;
  concurrency: number;
  steps: number;
  seconds: number;
  stepsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  statementsPerStep: number;
  nodeCpuMsPerStep: number;
  /** Null when the server's processes cannot be read (/proc). */
  dbCpuMsPerStep: number | null;
  errors: number;
  /** The highest resident set size of any one contender process during the run, bytes, and its size at the start. */
  peakRssBytes: number;
  rssAtGoBytes: number;
}

const TIMEOUT_MS = 600_000;

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** Starts `count` processes of `config`, runs them from one `go` until `expected` are done, and measures. */
async function measure(contender: Measurement['contender'], shape: RunShape, config: ChildConfig, expected: number, steps: number): Promise<Measurement> {
  const processes = Array.from({ length: shape.workers }, () => new ContenderProcess(config));
  try {
    await Promise.all(processes.map((p) => p.ready));
    const cpuBefore = databaseCpuMs(shape.database);
    const finished = allDone(processes, expected, TIMEOUT_MS);
    for (const p of processes) p.send({ type: 'go' });
    await finished;
    const reports: ChildReport[] = await Promise.all(processes.map((p) => p.collect()));
    const cpuAfter = databaseCpuMs(shape.database);
    const lines = reports.flatMap((r) => r.timelines).filter((line) => line.length > 1);
    const first = Math.min(...lines.map((line) => line[0]!));
    const last = Math.max(...lines.map((line) => line[line.length - 1]!));
    const latencies = lines.flatMap((line) => line.slice(1).map((at, i) => at - line[i]!)).sort((a, b) => a - b);
    const seconds = (last - first) / 1000;
    return {
      contender,
      workers: shape.workers,
      concurrency: shape.concurrency,
      steps,
      seconds,
      stepsPerSecond: steps / seconds,
      p50Ms: percentile(latencies, 50),
      p99Ms: percentile(latencies, 99),
      statementsPerStep: reports.reduce((sum, r) => sum + r.statements, 0) / steps,
      nodeCpuMsPerStep: reports.reduce((sum, r) => sum + r.cpuMs, 0) / steps,
      dbCpuMsPerStep: cpuBefore === null || cpuAfter === null ? null : (cpuAfter - cpuBefore) / steps,
      errors: processes.reduce((sum, p) => sum + p.errors.length, 0),
      peakRssBytes: Math.max(...reports.map((r) => r.peakRssBytes)),
      rssAtGoBytes: Math.max(...reports.map((r) => r.rssAtGoBytes)),
    };
  } finally {
    await Promise.all(processes.map((p) => p.exit()));
  }
}

/**
 * Memory: one `Worker` process running `threads` threads at once (concurrency =
 * threads), on a pool of `poolSize` connections: its peak resident set size.
 */
export async function measureWorkerMemory(shape: RunShape): Promise<Measurement> {
  return measureCairn({ ...shape, workers: 1, concurrency: shape.threads }, `cairn_memory_${shape.threads}`);
}

function base(shape: RunShape, mode: ChildConfig['mode'], schema: string): ChildConfig {
  return { mode, url: shape.url, schema, steps: shape.steps, concurrency: shape.concurrency, poolSize: shape.poolSize, effectUrl: shape.effectUrl, dbosPollMs: shape.dbosPollMs };
}

/** The limit: W processes × c loops of autocommitted 1 KB INSERTs, as many rows as the others make steps. */
export async function measureRaw(shape: RunShape, admin: pg.Pool): Promise<Measurement> {
  const schema = `raw_w${shape.workers}`;
  await admin.query(`CREATE SCHEMA "${schema}"`);
  await admin.query(`CREATE TABLE "${schema}".raw (id bigserial PRIMARY KEY, body text NOT NULL)`);
  const rows = shape.threads * shape.steps;
  const per = Math.ceil(rows / shape.workers);
  return measure('raw', shape, { ...base(shape, 'raw', schema), rows: per }, shape.workers * shape.concurrency, per * shape.workers);
}

/** cairn: T submitted threads run by W `Worker` processes. */
export async function measureCairn(shape: RunShape, schema = `cairn_w${shape.workers}`): Promise<Measurement> {
  const engine = postgres(shape.url, { schema, max: 4 }) as unknown as Engine;
  try {
    const app = buildScaleApp({ engine, steps: shape.steps, effectUrl: shape.effectUrl });
    for (let i = 0; i < shape.threads; i++) await app.submit({ thread: `t${String(i).padStart(5, '0')}`, input: {} });
  } finally {
    await engine.close();
  }
  return measure('cairn', shape, base(shape, 'cairn', schema), shape.threads, shape.threads * shape.steps);
}

/** DBOS Transact: T workflows enqueued, dequeued by W executors with a worker concurrency of c each. */
export async function measureDbos(shape: RunShape): Promise<Measurement> {
  const schema = `dbos_w${shape.workers}`;
  const setup = new ContenderProcess(base(shape, 'dbos-setup', schema));
  setup.ready.catch(() => undefined); // it exits without a ready: its exit code says how it went
  if ((await setup.exited) !== 0) throw new Error(`DBOS setup failed: ${setup.errors.join('; ')}`);
  const { DBOSClient } = await import('@dbos-inc/dbos-sdk');
  const client = await DBOSClient.create({ systemDatabaseUrl: shape.url, systemDatabaseSchemaName: schema, applicationName: 'cairn-scale-bench', systemDatabasePoolSize: 4 });
  try {
    for (let i = 0; i < shape.threads; i++) {
      const id = `t${String(i).padStart(5, '0')}`;
      await client.enqueue({ queueName: 'scale', workflowName: 'scaleWorkflow', workflowID: id, appVersion: 'bench' }, id);
    }
  } finally {
    await client.destroy();
  }
  return measure('dbos', shape, base(shape, 'dbos', schema), shape.threads, shape.threads * shape.steps);
}
