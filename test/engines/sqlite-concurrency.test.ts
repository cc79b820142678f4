/**
 * Two real processes on one SQLite file: the lease admits one holder at a time,
 * store compare-and-set loses no increment, and a SIGKILLed holder does not block
 * its successor on the same host. The contenders run test/fixtures/sqlite-contender.mjs
 * against the built engine in dist/ (`npm test` builds first; built here if missing).
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { ThreadBusyError } from '../../src/errors.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const contender = join(root, 'test/fixtures/sqlite-contender.mjs');

interface Finished {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function run(args: string[]): { child: ChildProcess; done: Promise<Finished> } {
  const child = spawn(process.execPath, [contender, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const done = new Promise<Finished>((resolveDone, reject) => {
    child.on('error', reject);
    child.on('close', (code, signal) => resolveDone({ code, signal, stdout, stderr }));
  });
  return { child, done };
}

/** Waits for both contenders and returns each one's JSON report, failing with its stderr if it failed. */
async function reports<T>(...runs: { done: Promise<Finished> }[]): Promise<T[]> {
  const finished = await Promise.all(runs.map((r) => r.done));
  for (const f of finished) expect(f.code, f.stderr).toBe(0);
  return finished.map((f) => JSON.parse(f.stdout.trim()) as T);
}

/** A start time shortly after both processes have loaded, so they begin together. */
const startSoon = () => String(Date.now() + 700);

describe('SQLite engine: two processes on one file', () => {
  let dir: string;
  let db: string;

  beforeAll(() => {
    if (!existsSync(join(root, 'dist/engines/sqlite/index.js'))) {
      try {
        execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'pipe' });
      } catch {
        // tsc exits non-zero on type errors elsewhere but still emits; the check below decides.
      }
      expect(existsSync(join(root, 'dist/engines/sqlite/index.js')), 'build the package first: npx tsc -p tsconfig.build.json').toBe(true);
    }
  });

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'cairn-'));
    db = join(dir, 'cairn.db');
    // Create the schema and the thread once, so the race is on the lease, not on migrations.
    const engine = sqlite(db);
    const lease = await engine.checkpointer.acquireThread('shared', {
      owner: { runId: 'setup', pid: process.pid, host: hostname() },
      leaseMs: 1_000,
      create: { kind: 'task', tenant: null, metadata: {} },
    });
    await engine.checkpointer.releaseThread(lease);
    await engine.close();
  });

  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('lets exactly one process hold a thread at a time over 2 × 200 acquisitions; the loser sees ThreadBusyError', async () => {
    const log = join(dir, 'holders.log');
    const at = startSoon();
    const [a, b] = await reports<{ busy: number; holds: number }>(
      run(['lease', db, 'shared', log, '200', at]),
      run(['lease', db, 'shared', log, '200', at]),
    );
    expect(a!.holds).toBe(200);
    expect(b!.holds).toBe(200);
    // They did contend: some acquisitions found the other process holding the thread.
    expect(a!.busy + b!.busy).toBeGreaterThan(0);

    // Every "start" is followed by the same process's "end" before anyone else's marker.
    const lines = readFileSync(log, 'utf8').trim().split('\n');
    expect(lines).toHaveLength(800);
    const pids = new Set<string>();
    for (let i = 0; i < lines.length; i += 2) {
      const [startWord, holder] = lines[i]!.split(' ');
      expect(startWord, `line ${i + 1}: ${lines[i]}`).toBe('start');
      expect(lines[i + 1], `line ${i + 2}: two holders at once`).toBe(`end ${holder}`);
      pids.add(holder!);
    }
    expect(pids.size).toBe(2);
  });

  it('loses no increment when two processes run compare-and-set loops on one counter (2 × 500)', async () => {
    const at = startSoon();
    const [a, b] = await reports<{ conflicts: number }>(run(['counter', db, '500', at]), run(['counter', db, '500', at]));
    const engine = sqlite(db);
    try {
      const counter = await engine.store.get<number>(['race'], 'counter');
      expect(counter).toMatchObject({ value: 1000, version: 1000 });
    } finally {
      await engine.close();
    }
    // The loops did race: stale versions were refused (and retried) rather than overwritten.
    expect(a!.conflicts + b!.conflicts).toBeGreaterThan(0);
  });

  it('lets another process take a thread at once when its holder on this host was SIGKILLed', async () => {
    const holder = run(['hold', db, 'shared']);
    const held = await new Promise<number>((resolveHeld, reject) => {
      let text = '';
      holder.child.stdout!.on('data', (chunk: Buffer) => {
        text += chunk.toString();
        const line = text.split('\n').find((l) => l.includes('"held"'));
        if (line) resolveHeld((JSON.parse(line) as { held: number }).held);
      });
      holder.done.then((f) => reject(new Error(`holder exited before holding: ${f.stderr}`)), reject);
    });

    const engine = sqlite(db);
    try {
      const owner = { runId: 'successor', pid: process.pid, host: hostname() };
      // While the holder lives, its 10-minute lease keeps the thread.
      await expect(engine.checkpointer.acquireThread('shared', { owner, leaseMs: 60_000 })).rejects.toSatisfy((e) => ThreadBusyError.is(e));

      holder.child.kill('SIGKILL');
      const finished = await holder.done;
      expect(finished.signal).toBe('SIGKILL');

      const started = Date.now();
      const lease = await engine.checkpointer.acquireThread('shared', { owner, leaseMs: 60_000 });
      expect(lease.epoch).toBeGreaterThan(held);
      expect(Date.now() - started).toBeLessThan(5_000);
    } finally {
      holder.child.kill('SIGKILL');
      await engine.close();
    }
  });
});

describe('SQLite engine: processes that open a file nobody has created yet', () => {
  const opener = join(root, 'test/fixtures/sqlite-opener.mjs');
  const CONTENDERS = 3;
  const RACES = 30;

  /** A long-lived opener process: one JSON report line per race it is sent. */
  function startOpener() {
    const child = spawn(process.execPath, [opener], { stdio: ['pipe', 'pipe', 'pipe'] });
    let buffered = '';
    let stderr = '';
    const waiting: ((line: string) => void)[] = [];
    child.stdout!.on('data', (chunk: Buffer) => {
      buffered += chunk.toString();
      for (let at = buffered.indexOf('\n'); at >= 0; at = buffered.indexOf('\n')) {
        const line = buffered.slice(0, at);
        buffered = buffered.slice(at + 1);
        waiting.shift()?.(line);
      }
    });
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = new Promise<void>((resolveExit) => child.on('close', () => resolveExit()));
    return {
      race(db: string, at: number): Promise<{ won?: true; busy?: true; error?: { name: string; code: string; message: string } }> {
        return new Promise((resolveLine, reject) => {
          waiting.push((line) => resolveLine(JSON.parse(line)));
          exited.then(() => reject(new Error(`opener exited: ${stderr}`)));
          child.stdin!.write(`${db} shared ${at}\n`);
        });
      },
      async stop() {
        child.stdin!.end();
        await exited;
      },
    };
  }

  it(`lets exactly one of ${CONTENDERS} processes win each of ${RACES} races on a fresh file; the others get ThreadBusyError, never a driver error`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-open-'));
    const openers = Array.from({ length: CONTENDERS }, startOpener);
    try {
      const outcomes: string[] = [];
      for (let race = 0; race < RACES; race++) {
        const db = join(dir, `race-${race}.db`);
        const at = Date.now() + 150;
        const reports = await Promise.all(openers.map((o) => o.race(db, at)));
        for (const r of reports) if (r.error) outcomes.push(`race ${race}: ${r.error.name} ${r.error.code}: ${r.error.message}`);
        expect(outcomes, 'every contender is either the winner or told the thread is busy').toEqual([]);
        expect(reports.filter((r) => r.won)).toHaveLength(1);
        expect(reports.filter((r) => r.busy)).toHaveLength(CONTENDERS - 1);
      }
    } finally {
      await Promise.all(openers.map((o) => o.stop()));
      rmSync(dir, { recursive: true, force: true });
    }
  }, 120_000);
});
