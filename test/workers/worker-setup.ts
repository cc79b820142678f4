/**
 * Shared by the worker tests: a schema of their own on the local PostgreSQL with an
 * `effect_runs` table standing for the external system, the worker fixture app, and
 * `cairn worker` child processes.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import pg from 'pg';
import { postgres } from '../../dist/engines/postgres/index.js';
import type { Engine } from '../../src/contracts/engine.js';
import { PG_URL } from '../helpers/postgres.js';

const root = new URL('../..', import.meta.url).pathname;
export const FIXTURE = `${root}test/fixtures/worker-app.mjs`;
export const CLI = `${root}dist/cli/main.js`;

/** Schemas {@link freshSchema} made in this file, dropped by {@link dropFreshSchemas}. */
const made = new Set<string>();

export async function freshSchema(pool: pg.Pool, label: string): Promise<string> {
  // The time in base 36, as the shared helper names its schemas: a run killed before its
  // afterAll leaves one that the next run's sweep of abandoned schemas recognises by age.
  const schema = `cairn_test_${Date.now().toString(36)}_${label}_${Math.random().toString(36).slice(2, 8)}`;
  await pool.query(`CREATE SCHEMA "${schema}"`);
  made.add(schema);
  await pool.query(`CREATE TABLE "${schema}".effect_runs (id bigserial PRIMARY KEY, key text NOT NULL, pid integer NOT NULL)`);
  return schema;
}

/** Drops every schema this file's tests made (its afterAll, before the pool ends). */
export async function dropFreshSchemas(pool: pg.Pool): Promise<void> {
  for (const schema of made) await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  made.clear();
}

export function engineOn(schema: string, applicationName?: string): Engine {
  return postgres(PG_URL, { schema, ...(applicationName ? { applicationName } : {}) }) as unknown as Engine;
}

const spawned = new Set<ChildProcess>();

/** Kills every worker process a test started and has not seen exit (a failed test must not leave them running). */
export function killLeftoverWorkers(): void {
  for (const child of spawned) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  spawned.clear();
}

export interface WorkerProcess {
  child: ChildProcess;
  reports: { threadId: string; epoch: number; status?: string; error?: string }[];
  /** What it wrote on stderr so far. */
  stderr: () => string;
  exited: Promise<number | null>;
}

/** Starts `cairn worker` on the fixture app, on `schema` (`dbFlags` name the database another way). */
export function startWorker(schema: string, env: Record<string, string>, args: string[] = [], dbFlags = ['--db', `${PG_URL}#${schema}`]): WorkerProcess {
  const child = spawn(process.execPath, [CLI, 'worker', ...dbFlags, '--app', FIXTURE, '--json', ...args], {
    env: { ...process.env, WORKER_SCHEMA: schema, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  spawned.add(child);
  const reports: WorkerProcess['reports'] = [];
  let buffer = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    buffer += chunk;
    let newline: number;
    while ((newline = buffer.indexOf('\n')) >= 0) {
      const line = buffer.slice(0, newline).trim();
      buffer = buffer.slice(newline + 1);
      if (line) reports.push(JSON.parse(line));
    }
  });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return { child, reports, stderr: () => stderr, exited };
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Waits until every thread of the schema is completed, or the deadline passes. */
export async function waitForCompletion(engine: Engine, count: number, deadlineMs: number): Promise<number> {
  const until = Date.now() + deadlineMs;
  for (;;) {
    const done = (await engine.checkpointer.listThreads({ status: 'completed', limit: 10_000 })).length;
    if (done >= count || Date.now() > until) return done;
    await sleep(100);
  }
}
