/**
 * Child runs survive SIGKILL: a process running a graph with an
 * isolated and a shared child run is killed at crash points inside the children
 * (their records, effects and commits) and at the parent's commits around them; a
 * new process finishes the run. It resumes inside the child, not from the parent's
 * start: no recorded output is computed twice, every effect lands once, every
 * committed position (of every namespace) is kept, the chains verify, and the final
 * state equals a crash-free run's. The processes run the BUILT package (dist/).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { sqlite } from '../../dist/engines/sqlite/index.js';
import { verifyThread } from '../../dist/inspect/index.js';
import { runFixture, type FixtureRun } from './crash-setup.js';
import { tempDir } from '../helpers/temp-dirs.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/subgraph-process.mjs', import.meta.url));
const THREAD = 'sub_1';

type Line = FixtureRun['lines'][number];
interface ProcessRun extends FixtureRun {
  result: { status: string; seq: number; state: Record<string, unknown> } | undefined;
}

function newCase(): { db: string; effectLog: string } {
  const dir = tempDir('cairn-crash-subgraph-');
  return { db: join(dir, 'cairn.db'), effectLog: join(dir, 'effects.log') };
}

async function runProcess(c: { db: string; effectLog: string }, crashAt?: string): Promise<ProcessRun> {
  const run = await runFixture(FIXTURE, [c.db, THREAD, c.effectLog], crashAt);
  return { ...run, result: run.lines.find((l) => l.type === 'result') as ProcessRun['result'] };
}

const commits = (run: ProcessRun) => run.lines.filter((l) => l.type === 'step.commit') as (Line & { ns: string; seq: number; hash: string; nodes: string[] })[];
const computedNames = (runs: ProcessRun[]) => runs.flatMap((r) => r.lines.filter((l) => l.type === 'computed').map((l) => l.name as string));

/** Every stored position of every namespace of the thread, as `ns/seq` → hash. */
async function storedPositions(db: string): Promise<Map<string, string>> {
  const engine = sqlite(db);
  try {
    const stored = new Map<string, string>();
    for (const ns of await engine.checkpointer.listNamespaces(THREAD)) {
      for (const p of await engine.checkpointer.getPositions(THREAD, ns, { from: 0, to: Number.MAX_SAFE_INTEGER })) stored.set(`${ns}/${p.seq}`, p.hash);
    }
    return stored;
  } finally {
    await engine.close();
  }
}

let reference: ProcessRun;
let referencePositions: string[];
beforeAll(async () => {
  const c = newCase();
  reference = await runProcess(c);
  if (reference.result?.status !== 'completed') throw new Error(`reference run failed: ${reference.stderr}`);
  referencePositions = [...(await storedPositions(c.db)).keys()].sort();
});

/**
 * Crash points inside the isolated child (`search`, `summarise`), inside the shared
 * child (`critique`, `score`), at the children's first positions (the 3rd and 7th
 * commits), and at the parent commits that fold a finished child in.
 */
const CRASHES = [
  'after-record:search',
  'after-intent:search',
  'after-effect:search',
  'after-outcome:search',
  'before-commit:search',
  'after-commit:search',
  'after-record:summarise',
  'after-effect:summarise',
  'after-commit:summarise',
  'before-commit:research',
  'after-commit:research',
  'after-commit#3',
  'before-commit#7',
  'after-record:critique',
  'after-commit:critique',
  'after-effect:score',
  'after-commit:score',
  'before-commit:review',
  'inside-snapshot#2',
];

describe('child runs survive SIGKILL', () => {
  it('the reference run commits the parent and both children in their own namespaces', () => {
    expect(commits(reference).map((c) => `${c.ns}/${c.seq}`)).toEqual([
      '/0',
      '/1',
      'research:0@1/0',
      'research:0@1/1',
      'research:0@1/2',
      '/2',
      'review:0@2/0',
      'review:0@2/1',
      'review:0@2/2',
      '/3',
      '/4',
    ]);
    expect(reference.result!.state).toEqual({
      topic: 'tides',
      log: ['planned', 'notes:3', 'critique after 2', 'published'],
      summary: 'summary of tides-a+tides-b',
      score: 30,
    });
  });

  it.each(CRASHES)('at %s', async (crashAt) => {
    const c = newCase();
    const first = await runProcess(c, crashAt);
    expect(first.signal, `the crash point ${crashAt} must be reached: ${first.stderr}`).toBe('SIGKILL');
    const second = await runProcess(c);
    expect(second.exitCode, second.stderr).toBe(0);
    expect(second.result?.state, 'the same final state as a crash-free run').toEqual(reference.result!.state);

    // Nothing committed before the crash was redone: the new process commits only what was missing…
    const before = new Set(commits(first).map((p) => `${p.ns}/${p.seq}`));
    for (const p of commits(second)) expect(before.has(`${p.ns}/${p.seq}`), `${p.ns}/${p.seq} was committed twice`).toBe(false);
    // …and in particular a crash inside a child did not restart the parent from its start.
    if (commits(first).some((p) => p.ns !== '')) expect(commits(second).some((p) => p.ns === '' && p.seq <= 1)).toBe(false);

    // Recorded outputs computed once each, effects landed once each.
    expect(computedNames([first, second]).sort()).toEqual(['critique', 'plan', 'search', 'summary']);
    const effects = readFileSync(c.effectLog, 'utf8').split('\n').filter(Boolean).map((l) => l.split(' ')[0]);
    expect(effects.sort()).toEqual(['fetch', 'open', 'publish', 'score', 'store']);

    // Every position committed before the crash is kept with its hash; the layout is the reference's.
    const stored = await storedPositions(c.db);
    for (const p of commits(first)) expect(stored.get(`${p.ns}/${p.seq}`)).toBe(p.hash);
    expect([...stored.keys()].sort()).toEqual(referencePositions);
    const engine = sqlite(c.db);
    try {
      const report = await verifyThread(engine.checkpointer, THREAD);
      expect(report.ok, JSON.stringify(report.problems)).toBe(true);
      expect((await engine.checkpointer.getThread(THREAD))!.status).toBe('completed');
    } finally {
      await engine.close();
    }
  });
});
