/**
 * The reliability tier: seeded random SIGKILLs of real processes running a multi-step
 * keyed-effect graph (test/fixtures/reliability-run.mjs) on SQLite and PostgreSQL,
 * against an external HTTP server that counts requests per idempotency key. Per seed:
 * a few threads of a few steps each; a process runs them and is SIGKILLed at a random
 * moment, then the next one resumes them and is killed too (often early: during its
 * recovery), and so on; a last process finishes. Then every thread has completed with
 * every step once (one line of positions, the chain verified), both effects of every
 * step applied under one key each, and the server received exactly one request per key
 * of the probed effect (the `with-step` one may be asked again under its key after a
 * kill before its step's commit).
 *
 * Seeds are printed in the test names. A failing seed is added to corpus.json, which
 * every run replays first. `npm test` runs the small size (one new seed per engine, two
 * kills each);
 * `npm run test:reliability` the large one (CAIRN_RELIABILITY=large: 20 per engine,
 * more kills); CAIRN_RELIABILITY_SEED=<n> runs that seed alone (with the corpus).
 */
import { spawn } from 'node:child_process';
import { randomInt } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/contracts/engine.js';
import { decode } from '../../src/codec/tagged-json.js';
import { postgres } from '../../src/engines/postgres/index.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { verifyThread } from '../../src/inspect/verify.js';
import type { PositionBody } from '../../src/runtime/position.js';
import { PG_URL } from '../helpers/postgres.js';
import { startEffectServer, type EffectServer } from '../workers/effect-server.js';

type EngineKind = 'sqlite' | 'postgres';
type Size = 'small' | 'large';

const SCRIPT = new URL('../fixtures/reliability-run.mjs', import.meta.url).pathname;
const CORPUS = new URL('./corpus.json', import.meta.url).pathname;
const SIZE: Size = process.env.CAIRN_RELIABILITY === 'large' ? 'large' : 'small';
const NEW_SEEDS = SIZE === 'large' ? 20 : 1;

interface CorpusEntry {
  seed: number;
  engine: EngineKind;
  size: Size;
  /** When it first failed, and how. */
  found: string;
  error: string;
}

function readCorpus(): CorpusEntry[] {
  return (JSON.parse(readFileSync(CORPUS, 'utf8')) as { seeds: CorpusEntry[] }).seeds;
}

/** Keeps a failing seed (once) so that every later run replays it first. */
function keepFailing(entry: CorpusEntry): void {
  const file = JSON.parse(readFileSync(CORPUS, 'utf8')) as { seeds: CorpusEntry[] };
  if (file.seeds.some((s) => s.seed === entry.seed && s.engine === entry.engine && s.size === entry.size)) return;
  file.seeds.push(entry);
  writeFileSync(CORPUS, `${JSON.stringify(file, null, 2)}\n`);
}

/** mulberry32: a small PRNG, the same numbers for the same seed on every machine. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** What a seed decides: the threads, their steps, how slow a step is, and when each process is killed after it is ready (ms). */
interface Plan {
  threads: string[];
  steps: number;
  stepMs: number;
  kills: number[];
}

function planOf(seed: number, size: Size): Plan {
  const random = prng(seed);
  const between = (lo: number, hi: number) => lo + Math.floor(random() * (hi - lo + 1));
  const threads = Array.from({ length: between(2, size === 'large' ? 5 : 3) }, (_, i) => `t${i}`);
  const steps = between(3, size === 'large' ? 8 : 5);
  const stepMs = between(1, 12);
  // About how long the work takes once a process is ready: kills land anywhere in it,
  // and a third of them in its first few ms, while it is still recovering the last one's threads.
  const work = steps * (stepMs + 12) * 1.5;
  const kills = Array.from({ length: size === 'large' ? between(2, 6) : 2 }, () => (random() < 0.35 ? between(0, 15) : between(0, Math.round(work))));
  return { threads, steps, stepMs, kills };
}

interface ChildRun {
  lines: { type: string; thread?: string; status?: string; code?: string; message?: string }[];
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
}

/** Runs the fixture; with `killAfterMs`, SIGKILLs it that long after it said it was ready (unless it exited first). */
function runChild(args: string[], killAfterMs?: number): Promise<ChildRun> {
  const child = spawn(process.execPath, [SCRIPT, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: ChildRun['lines'] = [];
  let buffer = '';
  let stderr = '';
  let timer: NodeJS.Timeout | undefined;
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    buffer += chunk;
    let newline: number;
    while ((newline = buffer.indexOf('\n')) >= 0) {
      const line = JSON.parse(buffer.slice(0, newline)) as ChildRun['lines'][number];
      buffer = buffer.slice(newline + 1);
      lines.push(line);
      if (line.type === 'ready' && killAfterMs !== undefined) timer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
    }
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  // A last process that hangs fails the seed rather than the whole file.
  const guard = setTimeout(() => child.kill('SIGKILL'), 30_000);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (exitCode, signal) => {
      clearTimeout(timer);
      clearTimeout(guard);
      resolve({ lines, exitCode, signal, stderr });
    });
  });
}

let admin: pg.Pool;
let effects: EffectServer;
const dirs: string[] = [];
beforeAll(() => {
  admin = new pg.Pool({ connectionString: PG_URL, max: 2 });
});
afterAll(async () => {
  await admin.end();
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});
beforeEach(async () => {
  effects = await startEffectServer();
});
afterEach(() => effects.close());

/** A fresh database for one seed: its `--db` flags, an engine to check it with, and cleanup. */
async function database(kind: EngineKind, seed: number): Promise<{ args: string[]; engine: Engine; drop(): Promise<void> }> {
  if (kind === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), `cairn-reliability-${seed}-`));
    dirs.push(dir);
    const file = join(dir, 'cairn.db');
    return { args: ['--db', file], engine: sqlite(file), drop: async () => undefined };
  }
  // Named like the test schemas, so that one a killed test run leaves behind is swept.
  const schema = `cairn_test_${Date.now().toString(36)}_rel${seed}`;
  return {
    args: ['--db', PG_URL, '--schema', schema],
    engine: postgres(PG_URL, { schema, max: 2 }),
    drop: async () => void (await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)),
  };
}

/** The seed's processes: each killed as planned, then one that finishes; then every check. Returns what to print. */
async function survive(kind: EngineKind, seed: number, size: Size): Promise<string> {
  const plan = planOf(seed, size);
  const db = await database(kind, seed);
  try {
    const args = [...db.args, '--effects', effects.url, '--threads', plan.threads.join(','), '--steps', String(plan.steps), '--step-ms', String(plan.stepMs)];
    let killed = 0;
    for (const at of plan.kills) {
      const run = await runChild(args, at);
      if (run.signal === 'SIGKILL') killed++;
      else expect(run.exitCode, `a process that was not killed exits cleanly: ${run.stderr}`).toBe(0);
    }
    const last = await runChild(args);
    expect(last.exitCode, `the last process: ${last.stderr}${JSON.stringify(last.lines)}`).toBe(0);
    expect(last.lines.filter((l) => l.type === 'done' && l.status === 'completed').map((l) => l.thread).sort()).toEqual([...plan.threads].sort());

    const keys: string[] = [];
    for (const thread of plan.threads) {
      const positions = await db.engine.checkpointer.getPositions(thread, '', { from: 0, to: 1_000 });
      expect(positions.map((p) => p.parent), `${thread}: one line of positions`).toEqual(positions.map((p) => (p.seq === 0 ? null : p.seq - 1)));
      expect(positions.flatMap((p) => decode<PositionBody>(p.body).nodes), `${thread}: every step once`).toEqual(Array(plan.steps).fill('step'));
      const entries = (await db.engine.ledger.list(thread)).filter((e) => e.kind === 'effect');
      expect(entries.every((e) => e.status === 'done'), `${thread}: every effect has its outcome`).toBe(true);
      keys.push(...entries.map((e) => (e.name === 'ship' ? `${thread}/with-step/${e.key}` : `${thread}/${e.key}`)));
      const report = await verifyThread(db.engine, thread);
      expect(report.ok, `${thread}: ${JSON.stringify(report.problems)}`).toBe(true);
    }
    // Two keys per step, the server applied exactly those, and each probed effect was
    // asked for once (a with-step one may be asked again after a kill: same key, applied once).
    expect(keys).toHaveLength(2 * plan.threads.length * plan.steps);
    expect([...effects.applied].sort()).toEqual([...keys].sort());
    const repeated = [...effects.requests].filter(([key, n]) => n > 1 && !key.includes('/with-step/'));
    expect(repeated, 'requests repeated for a key').toEqual([]);
    return `${plan.threads.length} threads × ${plan.steps} steps, ${killed}/${plan.kills.length} processes SIGKILLed at ${plan.kills.join(', ')} ms after ready`;
  } finally {
    await db.engine.close();
    await db.drop();
  }
}

const corpus = readCorpus();
const only = process.env.CAIRN_RELIABILITY_SEED;
const fresh = (kind: EngineKind) =>
  (only !== undefined ? [Number(only)] : Array.from({ length: NEW_SEEDS }, () => randomInt(1, 2 ** 31))).map((seed) => ({ seed, engine: kind, size: SIZE, replay: false }));

describe.each(['sqlite', 'postgres'] as const)('seeded SIGKILLs on %s', (kind) => {
  const seeds = [...corpus.filter((c) => c.engine === kind).map((c) => ({ ...c, replay: true })), ...fresh(kind)];
  it.each(seeds)('seed $seed ($size)', async ({ seed, size, replay }) => {
    try {
      const summary = await survive(kind, seed, size);
      console.log(`[reliability] ${kind} seed ${seed} (${size}${replay ? ', from the corpus' : ''}): ${summary}`);
    } catch (error) {
      console.log(`[reliability] ${kind} seed ${seed} (${size}) FAILED; kept in test/reliability/corpus.json. Again: CAIRN_RELIABILITY=${size} CAIRN_RELIABILITY_SEED=${seed} npx vitest run test/reliability/sigkill.test.ts`);
      if (!replay) keepFailing({ seed, engine: kind, size, found: new Date().toISOString(), error: String(error).slice(0, 500) });
      throw error;
    }
  });
});
