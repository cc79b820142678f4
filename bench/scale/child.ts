/**
 * @module bench/scale/child
 * One contender process of `bench:scale`, started by run.ts with an IPC channel:
 * `cairn` (a cairn Worker), `dbos` (a DBOS Transact executor dequeuing the same
 * workflow), `dbos-setup` (creates DBOS's system tables and the queue, then exits) or
 * `raw` (concurrent 1 KB INSERTs). Each connects, says `ready`, starts on `go`, tells
 * the parent of every finished thread (`done`), and on `report` stops and sends what
 * it measured: step start times per thread, statements sent, Node CPU. It keeps its
 * connections open until `exit`, so the parent can read the database's CPU first.
 *
 * Configured by one JSON argument (see {@link ChildConfig}).
 */
import { hostname } from 'node:os';
import { Worker } from '../../dist/index.js';
import { postgres } from '../../dist/engines/postgres/index.js';
import type { Engine } from '../../dist/contracts/engine.js';
import { makeMessage } from '../workload.js';
import { countingPool } from './counting-pool.js';
import { applyEffect } from './effect-server.js';
import { buildScaleApp } from './workflow.js';

export interface ChildConfig {
  mode: 'cairn' | 'dbos' | 'dbos-setup' | 'raw';
  url: string;
  /** cairn: the engine's schema; dbos: the system schema; raw: the table's schema. */
  schema: string;
  steps: number;
  concurrency: number;
  poolSize: number;
  effectUrl: string;
  /** DBOS queue poll, ms. */
  dbosPollMs?: number;
  /** raw: rows this process inserts. */
  rows?: number;
  leaseMs?: number;
}

export interface ChildReport {
  /** Per thread (or raw loop), the absolute times (ms) each step started, then the time it finished. */
  timelines: number[][];
  statements: number;
  cpuMs: number;
  /** Resident set size when `go` arrived and the highest seen since (sampled every 50 ms), bytes. */
  rssAtGoBytes: number;
  peakRssBytes: number;
}

export type ChildMessage = { type: 'ready' } | { type: 'done'; id: string } | { type: 'report'; report: ChildReport } | { type: 'error'; message: string };
export type ParentMessage = { type: 'go' } | { type: 'report' } | { type: 'exit' };

const config = JSON.parse(process.argv[2]!) as ChildConfig;
const now = () => performance.timeOrigin + performance.now();
const send = (message: ChildMessage) => process.send!(message);
const timelines = new Map<string, number[]>();
const mark = (id: string) => {
  let line = timelines.get(id);
  if (!line) timelines.set(id, (line = []));
  line.push(now());
};

interface Contender {
  start(): Promise<void> | void;
  stop(): Promise<void>;
  close(): Promise<void>;
}

const counted = countingPool(config.url, config.poolSize, `cairn-scale-${config.mode}`);

async function cairnContender(): Promise<Contender> {
  const engine = postgres(counted.pool, { schema: config.schema }) as unknown as Engine;
  const app = buildScaleApp({ engine, steps: config.steps, effectUrl: config.effectUrl, leaseMs: config.leaseMs, onStep: (id) => mark(id) });
  await engine.checkpointer.listThreads({ limit: 1 }); // connected, schema checked
  const worker = new Worker(app, {
    concurrency: config.concurrency,
    onRun: (report) => {
      if (report.status === 'completed') {
        mark(report.threadId);
        send({ type: 'done', id: report.threadId });
      } else send({ type: 'error', message: `${report.threadId}: ${report.status ?? report.error} ${report.message ?? ''}` });
    },
    onError: (error) => send({ type: 'error', message: String(error) }),
  });
  let running: Promise<void> | undefined;
  return {
    start: () => {
      running = worker.run();
    },
    stop: async () => {
      await worker.stop();
      await running;
    },
    close: () => engine.close(),
  };
}

async function dbosContender(setupOnly: boolean): Promise<Contender> {
  const { DBOS } = await import('@dbos-inc/dbos-sdk');
  DBOS.setConfig({
    name: 'cairn-scale-bench',
    systemDatabaseUrl: config.url,
    systemDatabasePool: counted.pool,
    systemDatabaseSchemaName: config.schema,
    logLevel: 'error',
    executorID: `bench-${hostname()}-${process.pid}`,
    applicationVersion: 'bench',
  });
  const steps = config.steps;
  DBOS.registerWorkflow(
    async (id: string) => {
      for (let i = 0; i < steps; i++) {
        mark(id);
        await DBOS.runStep(
          async () => {
            await applyEffect(config.effectUrl, `${id}:${i}`);
            return makeMessage(i);
          },
          { name: 'step' },
        );
      }
      mark(id);
      send({ type: 'done', id });
    },
    { name: 'scaleWorkflow' },
  );
  const launch = async () => {
    await DBOS.launch();
    await DBOS.registerQueue('scale', { workerConcurrency: config.concurrency, minPollingIntervalMs: config.dbosPollMs ?? 20, onConflict: 'always_update' });
  };
  if (setupOnly) {
    await launch();
    await DBOS.shutdown();
    return { start: () => undefined, stop: async () => undefined, close: async () => undefined };
  }
  return { start: launch, stop: () => DBOS.shutdown(), close: async () => undefined };
}

async function rawContender(): Promise<Contender> {
  const table = `"${config.schema}".raw`;
  const rows = config.rows ?? 0;
  let stopped = false;
  const loops: Promise<void>[] = [];
  await counted.pool.query('SELECT 1');
  return {
    start: () => {
      for (let loop = 0; loop < config.concurrency; loop++) {
        const share = Math.floor(rows / config.concurrency) + (loop < rows % config.concurrency ? 1 : 0);
        const id = `${process.pid}-${loop}`;
        loops.push(
          (async () => {
            for (let i = 0; i < share && !stopped; i++) {
              mark(id);
              await counted.pool.query({ name: 'raw-insert', text: `INSERT INTO ${table} (body) VALUES ($1)`, values: [JSON.stringify(makeMessage(i))] });
            }
            mark(id);
            send({ type: 'done', id });
          })(),
        );
      }
    },
    stop: async () => {
      stopped = true;
      await Promise.all(loops);
    },
    close: async () => undefined,
  };
}

async function main(): Promise<void> {
  const contender =
    config.mode === 'cairn' ? await cairnContender() : config.mode === 'raw' ? await rawContender() : await dbosContender(config.mode === 'dbos-setup');
  if (config.mode === 'dbos-setup') {
    await counted.pool.end();
    process.exit(0);
  }
  let cpu: NodeJS.CpuUsage;
  let statementsAtGo = 0;
  let rssAtGo = 0;
  let peakRss = 0;
  setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage.rss())), 50).unref();
  let running = false;
  process.on('message', (message: ParentMessage) => {
    void (async () => {
      if (message.type === 'go') {
        cpu = process.cpuUsage();
        statementsAtGo = counted.statements();
        rssAtGo = peakRss = process.memoryUsage.rss();
        running = true;
        await contender.start();
      } else if (message.type === 'report') {
        running = false;
        await contender.stop();
        const used = process.cpuUsage(cpu);
        send({ type: 'report', report: { timelines: [...timelines.values()], statements: counted.statements() - statementsAtGo, cpuMs: (used.user + used.system) / 1000, rssAtGoBytes: rssAtGo, peakRssBytes: Math.max(peakRss, process.memoryUsage.rss()) } });
      } else if (message.type === 'exit') {
        // Whatever happens below, the process ends (a pool waiting for a client would hold it).
        setTimeout(() => process.exit(0), 5_000).unref();
        if (running) await contender.stop();
        await contender.close();
        await counted.pool.end().catch(() => undefined);
        process.exit(0);
      }
    })().catch((error: unknown) => {
      send({ type: 'error', message: String((error as Error).stack ?? error) });
      process.exit(1);
    });
  });
  send({ type: 'ready' });
}

main().catch((error: unknown) => {
  process.send?.({ type: 'error', message: String((error as Error).stack ?? error) });
  process.exit(1);
});
