/**
 * Interrupt calls, sleeps and signal waits killed with SIGKILL, on SQLite and on
 * PostgreSQL. A thread is driven through its life in separate processes: run until
 * the node asks (`await ctx.interrupt`), answer (`resume({ answer })`) until it
 * sleeps, run after the wake time until it waits for a signal, send two signals,
 * run until it completes. One process of that life is killed at a crash point (at
 * the question, at the answer, at the wake-up, between a signal being taken and its
 * result being recorded, around every commit); a new process picks up from what the
 * database says (answer again if it is still interrupted, else run). Each phase ends
 * in the same state whatever was killed in it, so one life is killed once in every
 * phase: the crash points are dealt out to as few lives as the longest phase needs
 * (every process is a new Node.js process, most of a case's time). Then: the final
 * state equals a crash-free life's, every effect landed once, no recorded output was
 * computed twice, the first signal was taken exactly once and the second is still
 * queued, no committed position was lost, and the chain verifies. A worker process
 * killed while the thread sleeps is replaced by another that finishes it.
 * The processes run the BUILT package (dist/): `npm test` builds first.
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqlite } from '../../dist/engines/sqlite/index.js';
import { postgres } from '../../dist/engines/postgres/index.js';
import { verifyThread } from '../../dist/inspect/index.js';
import { PG_URL } from '../helpers/postgres.js';
import { runFixture, type FixtureRun } from './crash-setup.js';
import { tempDir } from '../helpers/temp-dirs.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/wait-process.mjs', import.meta.url));
const THREAD = 'order_9';
const NAP_MS = 150;
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

type Phase = 'ask' | 'answer' | 'wake' | 'pay';
type Backend = 'sqlite' | 'postgres';

interface Case {
  backend: Backend;
  dir: string;
  db: string;
  schema: string;
  effectLog: string;
  /** Every line every process of the case printed. */
  lines: FixtureRun['lines'];
}

const schemas: string[] = [];
let admin: pg.Pool;
beforeAll(() => {
  admin = new pg.Pool({ connectionString: PG_URL, max: 2 });
});
afterAll(async () => {
  for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await admin.end();
});

function newCase(backend: Backend): Case {
  const dir = tempDir('cairn-crash-waits-');
  const schema = `cairn_test_${Date.now()}_waits_${Math.random().toString(36).slice(2, 8)}`;
  if (backend === 'postgres') schemas.push(schema);
  return { backend, dir, db: backend === 'sqlite' ? join(dir, 'cairn.db') : PG_URL, schema, effectLog: join(dir, 'effects.log'), lines: [] };
}

async function step(c: Case, mode: 'run' | 'resume' | 'signal', json?: unknown, crashAt?: string): Promise<FixtureRun> {
  const run = await runFixture(FIXTURE, [c.db, c.schema, THREAD, c.effectLog, mode, ...(json === undefined ? [] : [JSON.stringify(json)])], crashAt);
  c.lines.push(...run.lines);
  return run;
}

function open(c: Case) {
  return c.backend === 'sqlite' ? sqlite(c.db) : postgres(c.db, { schema: c.schema });
}

async function status(c: Case): Promise<string | undefined> {
  const engine = open(c);
  try {
    return (await engine.checkpointer.getThread(THREAD))?.status;
  } finally {
    await engine.close();
  }
}

/** What the phase's process does, and how a new process picks up after it was killed. */
async function phase(c: Case, which: Phase, crashAt?: string): Promise<void> {
  if (which === 'wake') await pause(NAP_MS + 50);
  // Both signals from one process: sending is not what is killed here.
  if (which === 'pay') await step(c, 'signal', [{ amount: 7 }, { amount: 9 }]);
  const mode = which === 'answer' ? 'resume' : 'run';
  const first = await step(c, mode, which === 'answer' ? true : undefined, crashAt);
  if (!crashAt) return;
  expect(first.signal, `the crash point ${crashAt} must be reached in phase ${which} (${first.stderr})`).toBe('SIGKILL');
  // A new process picks up from what the database says, and does what is left of the
  // phase: a question already asked waits for the next phase's answer; one still
  // unanswered after the answer's process died is answered again.
  const now = await status(c);
  if (now === 'interrupted' && which === 'ask') return;
  if (now === 'interrupted') await step(c, 'resume', true);
  else await step(c, 'run');
}

const PHASES: Phase[] = ['ask', 'answer', 'wake', 'pay'];

/** Where one life is killed: at most one crash point per phase. */
type Kills = Partial<Record<Phase, string>>;

/** The thread's whole life, with one process killed in each phase `kills` names. */
async function life(c: Case, kills: Kills = {}): Promise<void> {
  for (const which of PHASES) await phase(c, which, kills[which]);
}

/** Deals the crash points out to lives: the k-th life is killed at the k-th point of every phase that has one. */
function livesOf(crashes: [Phase, string][]): Kills[] {
  const points = (which: Phase) => crashes.filter(([at]) => at === which).map(([, point]) => point);
  const count = Math.max(...PHASES.map((which) => points(which).length));
  return Array.from({ length: count }, (_, k) => Object.fromEntries(PHASES.flatMap((which) => (points(which)[k] ? [[which, points(which)[k]]] : []))) as Kills);
}

const named = (kills: Kills) => PHASES.filter((which) => kills[which]).map((which) => `${which} at ${kills[which]}`).join(', ');

async function stored(c: Case) {
  const engine = open(c);
  try {
    const thread = await engine.checkpointer.getThread(THREAD);
    const positions = await engine.checkpointer.getPositions(THREAD, '', { from: 0, to: Number.MAX_SAFE_INTEGER });
    const signals = await engine.checkpointer.listSignals(THREAD);
    const report = await verifyThread(engine, THREAD);
    return { thread, hashes: new Set(positions.map((p) => p.hash)), signals, report };
  } finally {
    await engine.close();
  }
}

function effects(c: Case): string[] {
  return existsSync(c.effectLog) ? readFileSync(c.effectLog, 'utf8').split('\n').filter(Boolean).map((l) => l.split(' ')[0]!) : [];
}

const CRASHES: [Phase, string][] = [
  ['ask', 'after-record:ask'],
  ['ask', 'after-effect:ask'],
  ['ask', 'before-commit#2'],
  ['ask', 'after-commit#2'],
  ['answer', 'before-commit#1'],
  ['answer', 'after-commit#1'],
  ['answer', 'after-wait-result:ask'],
  ['answer', 'before-commit:ask'],
  ['answer', 'after-record:nap'],
  ['answer', 'before-commit#3'],
  ['wake', 'after-wait-result:nap'],
  ['wake', 'after-effect:nap'],
  ['wake', 'before-commit:nap'],
  ['wake', 'before-commit#2'],
  ['pay', 'after-signal-taken:gate'],
  ['pay', 'after-wait-result:gate'],
  ['pay', 'after-effect:gate'],
  ['pay', 'before-commit:gate'],
  ['pay', 'after-commit:gate'],
];

/** PostgreSQL runs the points where a commit, the answer, the wake-up and the taken signal meet the database. */
const POSTGRES_CRASHES = CRASHES.filter(([, point]) =>
  ['before-commit#2', 'after-commit#1', 'after-wait-result:ask', 'after-wait-result:nap', 'after-signal-taken:gate', 'after-wait-result:gate', 'before-commit:gate'].includes(point),
);

describe.each([
  ['sqlite', CRASHES],
  ['postgres', POSTGRES_CRASHES],
] as [Backend, [Phase, string][]][])('interrupts and waits survive SIGKILL on %s', (backend, crashes) => {
  let reference: { log: unknown };

  beforeAll(async () => {
    const c = newCase(backend);
    await life(c);
    const result = c.lines.filter((l) => l.type === 'result').at(-1) as unknown as { status: string; state: { log: unknown } };
    expect(result.status).toBe('completed');
    reference = { log: result.state.log };
    expect(reference.log).toEqual(['asked:true', 'napped:plan-v1', 'paid:7', 'wrapped:3']);
  });

  it.each(livesOf(crashes).map((kills) => [named(kills), kills] as const))('killed in phase %s', async (_name, kills) => {
    const c = newCase(backend);
    await life(c, kills);
    const result = c.lines.filter((l) => l.type === 'result').at(-1) as unknown as { status: string; state: { log: unknown } };
    expect(result.status).toBe('completed');
    expect(result.state.log).toEqual(reference.log);
    // Every effect landed once; no recorded output was computed twice.
    expect(effects(c).sort()).toEqual(['charge', 'notify', 'remind']);
    const computed = c.lines.filter((l) => l.type === 'computed').map((l) => l.name);
    expect(computed.sort()).toEqual(['draft', 'plan']);
    const after = await stored(c);
    expect(after.thread!.status).toBe('completed');
    // The first signal was taken, once; the second is still queued for another wait.
    expect(after.signals.map((s) => [s.id, s.consumedBy !== null])).toEqual([
      [1, true],
      [2, false],
    ]);
    // No committed position was lost, and the chain verifies.
    for (const line of c.lines.filter((l) => l.type === 'step.commit')) expect(after.hashes.has(line.hash as string)).toBe(true);
    expect(after.report.ok).toBe(true);
  });

  it('a worker process killed while the thread sleeps is replaced by another that finishes it once', async () => {
    const c = newCase(backend);
    await phase(c, 'ask');
    // The answer is committed without running on: the worker takes the thread.
    await phase(c, 'answer');
    expect(await status(c)).toBe('waiting');
    const args = [c.db, c.schema, THREAD, c.effectLog, 'worker'];
    const doomed = spawn(process.execPath, [FIXTURE, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    const killed = new Promise((resolve) => doomed.on('close', resolve));
    await pause(60);
    doomed.kill('SIGKILL');
    await killed;
    expect(await status(c)).toBe('waiting');
    await step(c, 'signal', [{ amount: 7 }, { amount: 9 }]);
    const successor = await runFixture(FIXTURE, args);
    c.lines.push(...successor.lines);
    const result = successor.lines.find((l) => l.type === 'result') as unknown as { status: string; state: { log: unknown } };
    expect(result.status).toBe('completed');
    expect(result.state.log).toEqual(reference.log);
    expect(effects(c).sort()).toEqual(['charge', 'notify', 'remind']);
    expect((await stored(c)).report.ok).toBe(true);
  });
});
