/**
 * Interrupt, kill, resume from another process: a process runs a graph on
 * a SQLite file until it pauses for a person and exits; a new process resumes it
 * with the answer. A resuming process killed with SIGKILL (before or after the
 * resume position commits, or inside the resumed step) is followed by a third
 * process that finishes the run: the final state equals an uninterrupted run's, the
 * answer is merged exactly once, no recorded output is asked for twice, every
 * effect lands once, no committed position is lost and the chain verifies.
 * The processes run the BUILT package (dist/): `npm test` builds first.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { sqlite } from '../../dist/engines/sqlite/index.js';
import { decode } from '../../dist/engine-kit/index.js';
import { verifyThread } from '../../dist/inspect/index.js';
import { runFixture, type FixtureRun } from './crash-setup.js';
import { tempDir } from '../helpers/temp-dirs.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/interrupt-process.mjs', import.meta.url));
const THREAD = 'review_7';
const ANSWER = { answer: 'approved', log: ['answer:approved'] };

type Line = FixtureRun['lines'][number];
interface ProcessRun extends FixtureRun {
  result: { status: string; seq: number; state: Record<string, unknown>; interrupts: { id: string; node: string; when: string; payload: unknown }[] } | undefined;
  error: { code: string; message: string } | undefined;
}

interface Case {
  dir: string;
  db: string;
  effectLog: string;
}

function newCase(prefix: string): Case {
  const dir = tempDir(`cairn-crash-interrupt-${prefix}-`);
  return { dir, db: join(dir, 'cairn.db'), effectLog: join(dir, 'effects.log') };
}

/** Runs the fixture in a new process (optionally armed with CAIRN_CRASH_AT) and collects its lines. */
async function runProcess(c: Case, mode: 'run' | 'resume' | 'all', options: { crashAt?: string; answer?: unknown } = {}): Promise<ProcessRun> {
  const args = [c.db, THREAD, mode, c.effectLog, ...(options.answer !== undefined ? [JSON.stringify(options.answer)] : [])];
  const run = await runFixture(FIXTURE, args, options.crashAt);
  return {
    ...run,
    result: run.lines.find((l) => l.type === 'result') as ProcessRun['result'],
    error: run.lines.find((l) => l.type === 'error') as ProcessRun['error'],
  };
}

function effectLines(c: Case): string[] {
  return existsSync(c.effectLog) ? readFileSync(c.effectLog, 'utf8').split('\n').filter(Boolean) : [];
}

/** What the SQLite file holds for the thread, read with a fresh engine. */
async function inspect(c: Case) {
  const engine = sqlite(c.db);
  try {
    const thread = await engine.checkpointer.getThread(THREAD);
    const positions = await engine.checkpointer.getPositions(THREAD, '', { from: 0, to: Number.MAX_SAFE_INTEGER });
    const bodies = positions.map((p) => ({ seq: p.seq, hash: p.hash, body: decode<{ kind: string; interrupts?: unknown[]; answered?: string; actor?: string }>(p.body) }));
    const verify = await verifyThread(engine.checkpointer, THREAD);
    const ledger = await engine.ledger.list(THREAD);
    return { thread, bodies, verify, ledger };
  } finally {
    await engine.close();
  }
}

/** Every position committed by the given processes is still there, with the same hash. */
async function committedKept(c: Case, runs: ProcessRun[]): Promise<void> {
  const { bodies } = await inspect(c);
  const stored = new Map(bodies.map((b) => [b.seq, b.hash]));
  for (const run of runs) {
    for (const commit of run.lines.filter((l) => l.type === 'step.commit')) {
      expect(stored.get(commit.seq as number), `position ${String(commit.seq)} committed before the crash`).toBe(commit.hash);
    }
  }
}

let reference: ProcessRun;
beforeAll(async () => {
  const c = newCase('ref');
  reference = await runProcess(c, 'all', { answer: ANSWER });
  if (reference.result?.status !== 'completed') throw new Error(`reference run failed: ${reference.stderr} ${JSON.stringify(reference.error)}`);
});

/** The finished run's invariants, whatever the processes in between went through. */
async function expectRecovered(c: Case, final: ProcessRun, all: ProcessRun[]): Promise<void> {
  expect(final.exitCode, `${final.stderr} ${JSON.stringify(final.error)}`).toBe(0);
  expect(final.result?.status).toBe('completed');
  expect(final.result?.state, 'same final state as an uninterrupted run').toEqual(reference.result!.state);

  const log = final.result!.state.log as string[];
  expect(log.filter((l) => l === 'answer:approved'), 'the answer is merged exactly once').toHaveLength(1);

  const { thread, bodies, verify, ledger } = await inspect(c);
  expect(thread).toMatchObject({ status: 'completed', head: final.result!.seq });
  const resumes = bodies.filter((b) => b.body.kind === 'resume');
  expect(resumes, 'exactly one resume position').toHaveLength(1);
  expect(resumes[0]!.body.actor).toBe('reviewer');
  expect(verify.ok, JSON.stringify(verify.problems)).toBe(true);
  expect(bodies.map((b) => b.body.kind)).toEqual(['input', 'step', 'resume', 'step', 'step']);

  // Effects reached the outside world once each; recorded outputs were computed once each.
  expect(effectLines(c).map((l) => l.split(' ')[0]).sort()).toEqual(['notify', 'publish']);
  expect(ledger.filter((e) => e.kind === 'effect').map((e) => [e.name, e.status]).sort()).toEqual([['notify', 'done'], ['publish', 'done']]);
  const computed = all.flatMap((r) => r.lines.filter((l) => l.type === 'computed').map((l) => l.name));
  expect(computed.sort(), 'no recorded output computed twice').toEqual(['llm', 'llm2']);
  expect(ledger.filter((e) => e.kind === 'record').map((e) => e.name).sort()).toEqual(['llm', 'llm2']);
  await committedKept(c, all);
}

describe('interrupt, exit, resume in a new process', () => {
  it('the uninterrupted reference pauses once and completes', () => {
    expect(reference.result!.state).toEqual({
      log: ['drafted', 'answer:approved', 'applied:verdict:approved:publish', 'wrapped:3'],
      draft: 'draft-v1',
      answer: 'approved',
    });
    expect(reference.lines.filter((l) => l.type === 'step.commit').map((l) => l.status)).toEqual(['running', 'interrupted', 'running', 'running', 'completed']);
  });

  it('a process runs until the interrupt and exits; a new process resumes it with the answer to completion', async () => {
    const c = newCase('simple');
    const first = await runProcess(c, 'run');
    expect(first.exitCode, first.stderr).toBe(0);
    expect(first.result).toMatchObject({ status: 'interrupted', seq: 1, state: { log: ['drafted'], draft: 'draft-v1', answer: '' } });
    expect(first.result!.interrupts).toEqual([expect.objectContaining({ node: 'draft', when: 'inside', payload: { question: 'publish this draft?', draft: 'draft-v1' } })]);
    const paused = await inspect(c);
    expect(paused.thread).toMatchObject({ status: 'interrupted', head: 1 });

    // Another process that calls run() is refused: the thread waits for an answer.
    const refused = await runProcess(c, 'run');
    expect(refused.error?.code).toBe('ERR_THREAD_INTERRUPTED');
    // An answer that fails validation is refused too, and changes nothing.
    const invalid = await runProcess(c, 'resume', { answer: { answer: 'maybe' } });
    expect(invalid.error?.code).toBe('ERR_STATE_VALIDATION');
    expect((await inspect(c)).bodies).toEqual(paused.bodies);

    const second = await runProcess(c, 'resume', { answer: ANSWER });
    await expectRecovered(c, second, [first, refused, invalid, second]);
    // The second process ran only what came after the interrupt.
    expect(second.lines.filter((l) => l.type === 'step.commit').map((l) => l.seq)).toEqual([2, 3, 4]);
    expect(second.lines.filter((l) => l.type === 'computed').map((l) => l.name)).toEqual(['llm2']);
  });
});

/**
 * Crash points of the resuming process. `before-commit#1` and `after-commit#1` are the
 * resume position itself (the first commit the process makes); the others are inside
 * the resumed step `apply` and at its commit.
 */
const RESUME_CRASHES: { at: string; resumeCommitted: boolean }[] = [
  { at: 'before-commit#1', resumeCommitted: false },
  { at: 'after-commit#1', resumeCommitted: true },
  { at: 'after-record:apply', resumeCommitted: true },
  { at: 'before-intent:apply', resumeCommitted: true },
  { at: 'after-intent:apply', resumeCommitted: true },
  { at: 'after-effect:apply', resumeCommitted: true },
  { at: 'after-outcome:apply', resumeCommitted: true },
  { at: 'before-commit:apply', resumeCommitted: true },
  { at: 'after-commit:apply', resumeCommitted: true },
  { at: 'inside-snapshot#1', resumeCommitted: true },
];

describe('a resuming process killed with SIGKILL, then a third process', () => {
  it.each(RESUME_CRASHES)('at $at', async ({ at, resumeCommitted }) => {
    const c = newCase('kill');
    const first = await runProcess(c, 'run');
    expect(first.result?.status, first.stderr).toBe('interrupted');

    const second = await runProcess(c, 'resume', { crashAt: at, answer: ANSWER });
    expect(second.signal, `the crash point ${at} must be reached: ${second.stderr}`).toBe('SIGKILL');

    const between = await inspect(c);
    const resumes = between.bodies.filter((b) => b.body.kind === 'resume');
    expect(resumes).toHaveLength(resumeCommitted ? 1 : 0);
    const head = between.bodies.at(-1)!;
    expect(between.thread?.head).toBe(head.seq);

    const runs = [first, second];
    let last: ProcessRun;
    if (resumeCommitted) {
      // The answer is in: there is nothing left to answer, and resuming again is refused.
      expect(head.body.interrupts ?? []).toEqual([]);
      const again = await runProcess(c, 'resume', { answer: ANSWER });
      expect(again.error?.code).toBe('ERR_NOT_INTERRUPTED');
      expect((await inspect(c)).bodies).toEqual(between.bodies);
      runs.push(again);
      last = await runProcess(c, 'run');
    } else {
      // Nothing was committed: the interrupt is still pending and run() is refused.
      expect(head.body.interrupts).toHaveLength(1);
      const refused = await runProcess(c, 'run');
      expect(refused.error?.code).toBe('ERR_THREAD_INTERRUPTED');
      runs.push(refused);
      last = await runProcess(c, 'resume', { answer: ANSWER });
    }
    runs.push(last);
    await expectRecovered(c, last, runs);
  });

  it('after a kill before the resume commits, the thread record still says interrupted and is listed as such', async () => {
    const c = newCase('status');
    await runProcess(c, 'run');
    const second = await runProcess(c, 'resume', { crashAt: 'before-commit#1', answer: ANSWER });
    expect(second.signal).toBe('SIGKILL');
    const { thread, bodies } = await inspect(c);
    expect(bodies.at(-1)!.body.interrupts, 'the head still holds the pending interrupt').toHaveLength(1);
    const engine = sqlite(c.db);
    let listed: string[];
    try {
      listed = (await engine.checkpointer.listThreads({ status: 'interrupted' })).map((t) => t.id);
    } finally {
      await engine.close();
    }
    expect({ status: thread?.status, listedAsInterrupted: listed }).toEqual({ status: 'interrupted', listedAsInterrupted: [THREAD] });
  });
});
