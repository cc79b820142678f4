/**
 * Cancelling a thread a run in another process holds (`cairn cancel`, `app.cancel`):
 * a real child process runs a slow graph on a SQLite file and on PostgreSQL; the
 * cancel fences its lease, so it stops at its next step boundary with LeaseLostError
 * and commits nothing more; the thread is `failed` with ERR_THREAD_CANCELLED naming
 * the actor and the reason, and no later step lands. A worker running the thread
 * reports the lost lease, never claims it again and goes on with other threads. A
 * thread that already ended is reported, not changed.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Engine } from '../../src/contracts/engine.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { ThreadCancelledError, ThreadInterruptedError, ThreadNotFoundError, ThreadNotInterruptedError } from '../../src/errors.js';
import { cancelThread } from '../../src/inspect/cancel.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import { field } from '../../src/state/fields.js';
import { defineState } from '../../src/state/schema.js';
import { postgres } from '../../src/engines/postgres/index.js';
import { Worker, type WorkerRunReport } from '../../src/runtime/worker.js';
import { ensureBuilt } from '../artifacts/build.js';
import { cairn } from '../cli/run-cli.js';
import { usePostgresSchema } from '../helpers/postgres.js';

const fixture = new URL('../fixtures/cancel-run.mjs', import.meta.url).pathname;
const pg = usePostgresSchema();

interface SlowRun {
  /** Resolves once the child committed a position with seq ≥ `seq`. */
  committed(seq: number): Promise<void>;
  /** Every JSON line it printed, once it exited, and its exit code. */
  exited: Promise<{ code: number | null; lines: Record<string, unknown>[] }>;
}

function slowRun(args: string[]): SlowRun {
  const child = spawn(process.execPath, ['--no-warnings', fixture, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const lines: Record<string, unknown>[] = [];
  const waiters: { seq: number; resolve: () => void }[] = [];
  let out = '';
  let err = '';
  child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
    let at: number;
    while ((at = out.indexOf('\n')) >= 0) {
      const line = JSON.parse(out.slice(0, at)) as Record<string, unknown>;
      out = out.slice(at + 1);
      lines.push(line);
      if (typeof line.commit === 'number') for (const w of waiters.filter((w) => (line.commit as number) >= w.seq)) w.resolve();
    }
  });
  const exited = new Promise<{ code: number | null; lines: Record<string, unknown>[] }>((resolve) => child.once('exit', (code) => resolve({ code, lines })));
  return {
    committed: (seq) =>
      new Promise((resolve, reject) => {
        waiters.push({ seq, resolve });
        void exited.then(() => reject(new Error(`the run exited before committing seq ${seq}: ${JSON.stringify(lines)} ${err}`)));
      }),
    exited,
  };
}

/** Cancels the thread while the child runs, then checks that it stopped and nothing more landed. */
async function cancelWhileRunning(engine: Engine, run: SlowRun, cancel: () => Promise<unknown>) {
  await run.committed(2);
  await cancel();
  const afterCancel = (await engine.checkpointer.getThread('slow'))!;
  const { code, lines } = await run.exited;
  expect(code).toBe(0);
  expect(lines.at(-1)).toMatchObject({ code: 'ERR_LEASE_LOST' });
  // Longer than a step: a run that was not stopped would have committed again.
  await new Promise((r) => setTimeout(r, 600));
  const thread = (await engine.checkpointer.getThread('slow'))!;
  expect(thread.status).toBe('failed');
  expect(thread.head).toBe(afterCancel.head);
  expect(thread.lastError).toMatchObject({ code: ThreadCancelledError.code });
  expect(thread.lastError!.message).toContain('cancelled by ops');
  expect(thread.lastError!.message).toContain('customer withdrew');
  // The child stopped at a step boundary: its last commit is the head.
  const commits = lines.filter((l) => typeof l.commit === 'number').map((l) => l.commit as number);
  expect(commits.at(-1)).toBe(thread.head);
  const failures = await engine.checkpointer.listFailures('slow');
  expect(failures.at(-1)).toMatchObject({ code: ThreadCancelledError.code });
  return thread;
}

let dir: string;
beforeAll(() => {
  ensureBuilt();
  dir = mkdtempSync(join(tmpdir(), 'cairn-cancel-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('cancelling a thread held by a run in another process', () => {
  it('on SQLite, with cairn cancel: the run stops at its next step boundary, the thread is failed with ERR_THREAD_CANCELLED', async () => {
    const db = join(dir, 'cancel.db');
    const run = slowRun(['sqlite', db, 'slow', '200', '150']);
    const engine = sqlite(db);
    try {
      await cancelWhileRunning(engine, run, async () => {
        const result = await cairn(['cancel', 'slow', '--db', db, '--actor', 'ops', '--reason', 'customer withdrew', '--json']);
        expect(result.stderr).toBe('');
        expect(result.code).toBe(0);
        expect(JSON.parse(result.stdout)).toMatchObject({ thread: 'slow', cancelled: true, status: 'failed', error: { code: 'ERR_THREAD_CANCELLED' } });
      });
      // A second cancel finds the thread ended and changes nothing.
      const again = await cairn(['cancel', 'slow', '--db', db, '--json']);
      expect(JSON.parse(again.stdout)).toMatchObject({ cancelled: false, status: 'failed' });
      expect(again.code).toBe(1);
      const missing = await cairn(['cancel', 'nope', '--db', db]);
      expect(missing.code).toBe(1);
      expect(missing.stderr).toContain('nope');
    } finally {
      await engine.close();
    }
  }, 60_000);

  it('on PostgreSQL, with app.cancel: the same', async () => {
    const engine = await pg.engine();
    const run = slowRun(['postgres', pg.url, pg.schema, 'slow', '200', '150']);
    try {
      const State = defineState({ fields: { ticks: field.model(z.array(z.number()), { reduce: 'append', default: [] }) } });
      const app = graph(State).node('tick', () => ({})).edge(START, 'tick').edge('tick', END).compile({ engine });
      await cancelWhileRunning(engine, run, async () => {
        const result = await app.cancel({ thread: 'slow', actor: 'ops', reason: 'customer withdrew' });
        expect(result).toMatchObject({ cancelled: true, thread: { status: 'failed' } });
      });
    } finally {
      await engine.close();
    }
  }, 60_000);
});

describe('cancelling a thread a worker runs', () => {
  it('on PostgreSQL: the worker reports ERR_LEASE_LOST for it, never claims it again, and goes on with other threads', async () => {
    const engine = await pg.engine();
    // The canceller opens its own engine (its own pool), as another process would.
    const other = postgres(pg.url, { schema: pg.schema });
    const Ticks = defineState({ fields: { ticks: field.model(z.array(z.number()), { reduce: 'append', default: [] }) } });
    const app = graph(Ticks)
      .node('tick', async (s) => {
        await new Promise((r) => setTimeout(r, 100));
        return { ticks: [s.ticks.length] };
      })
      .edge(START, 'tick')
      .conditionalEdge('tick', (s) => (s.ticks.length >= 30 ? END : 'tick'))
      .compile({ engine, name: 'ticker', recursionLimit: 100 });
    const reports: WorkerRunReport[] = [];
    const worker = new Worker(app, { concurrency: 2, pollMs: 50, onRun: (r) => reports.push(r) });
    const running = worker.run();
    try {
      await app.submit({ thread: 'long', input: {} });
      const until = async (what: string, check: () => Promise<boolean>) => {
        const end = Date.now() + 20_000;
        while (!(await check())) {
          if (Date.now() > end) throw new Error(`timed out waiting until ${what}`);
          await new Promise((r) => setTimeout(r, 25));
        }
      };
      await until('the worker committed two steps', async () => ((await engine.checkpointer.getThread('long'))!.head ?? 0) >= 2);
      expect((await cancelThread(other, { thread: 'long', actor: 'ops', reason: 'stop it' })).cancelled).toBe(true);
      await until('the worker reported the lost lease', async () => reports.some((r) => r.threadId === 'long'));
      expect(reports.find((r) => r.threadId === 'long')).toMatchObject({ error: 'ERR_LEASE_LOST' });
      const head = (await engine.checkpointer.getThread('long'))!.head;
      // The worker keeps working: another thread runs to its end, and the cancelled one stays as it was.
      await app.submit({ thread: 'short', input: { ticks: Array.from({ length: 29 }, (_, i) => i) } });
      await until('the other thread completed', async () => (await engine.checkpointer.getThread('short'))?.status === 'completed');
      expect(await engine.checkpointer.getThread('long')).toMatchObject({ head, status: 'failed', lastError: { code: 'ERR_THREAD_CANCELLED' } });
      expect(reports.filter((r) => r.threadId === 'long')).toHaveLength(1);
    } finally {
      await worker.stop();
      await running;
      await other.close();
      await engine.close();
    }
  }, 60_000);
});

describe('cancelThread', () => {
  it('cancels an interrupted thread, reports a completed one unchanged, and throws ThreadNotFoundError for a missing one', async () => {
    const engine = sqlite(join(dir, 'states.db'));
    try {
      const State = defineState({ fields: { ok: field.model(z.boolean(), { default: false }) } });
      const app = graph(State)
        .node('ask', async (_s, ctx) => ({ ok: await ctx.interrupt({ q: 'ok?' }, { answer: z.boolean() }) }))
        .edge(START, 'ask')
        .edge('ask', END)
        .compile({ engine });
      await app.run({ thread: 'asking', input: {} });
      const cancelled = await cancelThread(engine, { thread: 'asking', actor: 'ana' });
      expect(cancelled).toMatchObject({ cancelled: true, thread: { status: 'failed', lastError: { code: 'ERR_THREAD_CANCELLED' } } });
      const done = graph(State).node('yes', () => ({ ok: true })).edge(START, 'yes').edge('yes', END).compile({ engine });
      await done.run({ thread: 'done', input: {} });
      const before = await engine.checkpointer.getThread('done');
      expect(await cancelThread(engine, { thread: 'done' })).toEqual({ cancelled: false, thread: before, reason: 'status', status: 'completed' });
      expect(await engine.checkpointer.getThread('done')).toEqual(before);
      await expect(cancelThread(engine, { thread: 'missing' })).rejects.toSatisfy((e) => ThreadNotFoundError.is(e));
    } finally {
      await engine.close();
    }
  });
});

describe('a thread cancelled while it waits for a person', () => {
  const State = defineState({ fields: { sent: field.model(z.array(z.string()), { reduce: 'append', default: [] }) } });
  const approvalApp = (engine: Engine, sent: string[]) =>
    graph(State)
      .node('approve', async (_s, ctx) => {
        const ok = await ctx.interrupt({ q: 'send it?' }, { answer: z.boolean() });
        if (ok) sent.push('mail');
        return { sent: ok ? ['mail'] : [] };
      })
      .edge(START, 'approve')
      .edge('approve', END)
      .compile({ engine });

  for (const name of ['sqlite', 'postgres'] as const) {
    it(`on ${name}: a late answer is ThreadNotInterruptedError and sends nothing; run() takes it back as a new attempt, interrupted, and the answer goes on from there`, async () => {
      const engine = name === 'sqlite' ? sqlite(join(dir, 'cancelled-interrupt.db')) : await pg.engine();
      try {
        const sent: string[] = [];
        const app = approvalApp(engine, sent);
        const paused = await app.run({ thread: 'ask', input: {} });
        expect(paused.status).toBe('interrupted');
        await app.cancel({ thread: 'ask', actor: 'ana', reason: 'wrong customer' });
        const cancelled = await engine.checkpointer.getThread('ask');

        // The approval form was still open: its answer must not set the cancelled thread going.
        const late = await app.resume({ thread: 'ask', answer: true, actor: 'bob' }).catch((e: unknown) => e);
        expect(ThreadNotInterruptedError.is(late), String(late)).toBe(true);
        expect((late as Error).message).toContain('is failed');
        expect(sent).toEqual([]);
        expect(await engine.checkpointer.getThread('ask')).toEqual(cancelled);

        // run() is how a person takes a cancelled thread back: a new attempt at its last position.
        const back = await app.run({ thread: 'ask' });
        expect(back.status).toBe('interrupted');
        expect(back.interrupts.map((i) => i.id)).toEqual(paused.interrupts.map((i) => i.id));
        expect(back.seq).toBe(paused.seq);
        expect(await engine.checkpointer.getThread('ask')).toMatchObject({ status: 'interrupted', lastError: null, attempts: cancelled!.attempts + 1 });
        expect(ThreadInterruptedError.is(await app.run({ thread: 'ask' }).catch((e: unknown) => e))).toBe(true);
        const { attempts } = await app.attempts({ thread: 'ask' });
        expect(attempts.map((a) => [a.attempt, a.outcome, a.error?.code ?? null])).toEqual([
          [1, 'failed', 'ERR_THREAD_CANCELLED'],
          [2, 'interrupted', null],
        ]);

        const done = await app.resume({ thread: 'ask', answer: true, actor: 'bob' });
        expect(done.status).toBe('completed');
        expect(done.state.sent).toEqual(['mail']);
        expect(sent).toEqual(['mail']);
      } finally {
        await engine.close();
      }
    });
  }
});
