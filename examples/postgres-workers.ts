/**
 * Runs that outgrow one process: this program submits eight threads to PostgreSQL
 * (`app.submit` commits the input and leaves the run to a worker), starts two worker
 * processes (this same file, with `WORKER_NAME` set), waits until every thread has
 * completed, stops the workers with SIGTERM (each releases its leases between
 * steps) and prints which worker ran which thread. Workers claim runnable threads
 * with `FOR UPDATE SKIP LOCKED`, each under a lease they renew, and wake on LISTEN/NOTIFY
 * when a run is submitted, so no thread runs twice and none waits for a poll. It uses
 * `$DATABASE_URL` (default: the local server, database `test`) and a schema of its own
 * (`$CAIRN_SCHEMA`, default a fresh `cairn_example_…`), dropped at the end unless
 * `$CAIRN_SCHEMA` was given.
 *
 *     npx tsx examples/postgres-workers.ts
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { z } from 'zod';
import { defineState, field, graph, START, END, Worker, type Engine } from 'cairn';
import { postgres } from 'cairn/postgres';

const url = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const ownSchema = !process.env.CAIRN_SCHEMA;
const schema = process.env.CAIRN_SCHEMA ?? `cairn_example_${Date.now().toString(36)}_${process.pid}`;
const N = 8;

const State = defineState({
  fields: {
    customerId: field.model(z.string()),
    summary: field.model(z.string().optional()),
    ranBy: field.model(z.string().optional()),
  },
});

/** The app every process builds the same way: a worker runs threads of the graph it was given. */
function createApp(engine: Engine) {
  return graph(State)
    .node('summarise', async (s, ctx) => ({
      summary: await ctx.record('model', async () => {
        await sleep(100); // a model call takes a while: both workers get threads
        return `${s.customerId}: all good`;
      }),
      ranBy: process.env.WORKER_NAME ?? 'main',
    }))
    .edge(START, 'summarise')
    .edge('summarise', END)
    .compile({ engine, name: 'summaries' });
}

if (process.env.WORKER_NAME) {
  // A worker process: run claimed threads until SIGTERM.
  const engine = postgres(url, { schema });
  const worker = new Worker(createApp(engine), { concurrency: 2 });
  process.on('SIGTERM', () => void worker.stop());
  await worker.run();
  await engine.close();
} else {
  await main();
}

async function main(): Promise<void> {
  const engine = postgres(url, { schema });
  const app = createApp(engine);
  for (let i = 1; i <= N; i++) await app.submit({ thread: `cust_${i}`, input: { customerId: `cust_${i}` } });
  console.log(`submitted ${N} threads to schema ${schema}`);

  const workers: ChildProcess[] = ['w1', 'w2'].map((name) =>
    spawn(process.execPath, [...process.execArgv, process.argv[1]!], { env: { ...process.env, WORKER_NAME: name, CAIRN_SCHEMA: schema }, stdio: 'inherit' }),
  );
  const exited = workers.map((w) => new Promise<number | null>((resolve) => w.on('exit', resolve)));

  const deadline = Date.now() + 30_000;
  let completed = 0;
  while ((completed = (await app.listThreads({ status: 'completed' })).length) < N) {
    if (Date.now() > deadline) throw new Error(`only ${completed} of ${N} threads completed in 30 s`);
    await sleep(100);
  }
  for (const w of workers) w.kill('SIGTERM');
  const codes = await Promise.all(exited);

  const ranBy: string[] = [];
  for (let i = 1; i <= N; i++) {
    const state = await app.getState({ thread: `cust_${i}` });
    ranBy.push(state.ranBy ?? '?');
    console.log(`cust_${i}  ${state.ranBy}  ${state.summary}`);
  }
  const count = (name: string) => ranBy.filter((r) => r === name).length;
  console.log(`completed: ${completed} of ${N}; by w1: ${count('w1')}, by w2: ${count('w2')}; workers exited ${codes.join(', ')}`);

  await engine.close();
  if (ownSchema) {
    const pool = new pg.Pool({ connectionString: url });
    await pool.query(`DROP SCHEMA "${schema}" CASCADE`);
    await pool.end();
  }
}
