/**
 * Threads and runs: one run at a time per thread (ThreadBusyError,
 * or `onBusy: 'wait'`); a completed thread re-run without input is returned as is,
 * with input it starts a new run appended to the same log; an unfinished thread
 * resumes with the same input and refuses different input; history is newest
 * first and pages; stateAt of every seq is the state the step saw.
 * Every test runs on memory and on SQLite.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { InvalidKeyError, InvalidOptionError, PositionNotFoundError, RunCancelledError, RunInProgressError, ThreadBusyError, ThreadNotFoundError } from '../../src/errors.js';
import { defineState } from '../../src/state/schema.js';
import { field } from '../../src/state/fields.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import { bodies, caught, ENGINES, gate, rawPositions, sleep, useEngine, within } from './engines.js';

const State = defineState({
  fields: {
    n: field.model(z.number(), { default: 0 }),
    note: field.model(z.string(), { default: '' }),
    trail: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
  },
});

describe.each(ENGINES)('threads on %s', (name) => {
  const ctx = useEngine(name);

  /** START -> a -> b -> END, counting node executions; `b` can be held on a gate or made to fail. */
  function twoNodes(options: { hold?: Promise<void>; entered?: () => void; bFails?: () => boolean } = {}) {
    const runs = { a: 0, b: 0 };
    const app = graph(State)
      .node('a', (s) => {
        runs.a++;
        return { n: s.n + 1, trail: [`a${s.n}`] };
      })
      .node('b', async (s) => {
        runs.b++;
        options.entered?.();
        if (options.hold) await options.hold;
        if (options.bFails?.()) throw new Error('b failed');
        return { n: s.n * 10, trail: [`b${s.n}`] };
      })
      .edge(START, 'a')
      .edge('a', 'b')
      .edge('b', END)
      .compile({ engine: ctx.engine, retry: { maxAttempts: 1, initialDelayMs: 0 } });
    return { app, runs };
  }

  describe('one run at a time', () => {
    it('a second run on a thread held by a run in a slow node gets ThreadBusyError; the first completes', async () => {
      const release = gate();
      const entered = gate();
      const { app } = twoNodes({ hold: release.promise, entered: () => entered.open() });
      const first = app.run({ thread: 't' });
      await within(entered.promise, 5_000, 'the first run never reached b');

      const error = await caught(() => app.run({ thread: 't' }));
      expect(ThreadBusyError.is(error)).toBe(true);
      expect(error.code).toBe('ERR_THREAD_BUSY');
      expect((error as ThreadBusyError).threadId).toBe('t');

      release.open();
      const result = await first;
      expect(result.status).toBe('completed');
      expect(result.state.trail).toEqual(['a0', 'b1']);
      expect((await rawPositions(ctx.engine, 't')).map((p) => p.seq)).toEqual([0, 1, 2]);
    });

    it("onBusy: 'wait' waits for the holder to finish, then proceeds", async () => {
      const release = gate();
      const entered = gate();
      const { app, runs } = twoNodes({ hold: release.promise, entered: () => entered.open() });
      const finished: string[] = [];
      const first = app.run({ thread: 't' }).then((r) => (finished.push('first'), r));
      await within(entered.promise, 5_000, 'the first run never reached b');

      const waiting = app.run({ thread: 't', onBusy: 'wait', input: { note: 'second' } }).then((r) => (finished.push('waiter'), r));
      await sleep(50);
      expect(finished).toEqual([]);
      release.open();
      const [a, b] = await Promise.all([first, waiting]);
      expect(finished).toEqual(['first', 'waiter']);
      expect(a.seq).toBe(2);
      // The waiter started a new run after the first one completed: input + a + b.
      expect(b.seq).toBe(5);
      expect(b.state.note).toBe('second');
      expect(b.state.trail).toEqual(['a0', 'b1', 'a10', 'b11']);
      expect(runs).toEqual({ a: 2, b: 2 });
    });

    it("onBusy: 'wait' gives up with ThreadBusyError after waitTimeoutMs", async () => {
      const release = gate();
      const entered = gate();
      const { app } = twoNodes({ hold: release.promise, entered: () => entered.open() });
      const first = app.run({ thread: 't' });
      await within(entered.promise, 5_000, 'the first run never reached b');
      const error = await caught(() => app.run({ thread: 't', onBusy: 'wait', waitTimeoutMs: 60 }));
      expect(error.code).toBe('ERR_THREAD_BUSY');
      release.open();
      await first;
    });

    it("onBusy: 'wait' stops waiting when its signal aborts: RunCancelledError at once, and it never takes the thread", async () => {
      const release = gate();
      const entered = gate();
      const { app, runs } = twoNodes({ hold: release.promise, entered: () => entered.open() });
      const first = app.run({ thread: 't' });
      await within(entered.promise, 5_000, 'the first run never reached b');
      const controller = new AbortController();
      const waiter = caught(() => app.run({ thread: 't', onBusy: 'wait', input: { note: 'second' }, signal: controller.signal }));
      await sleep(30);
      const abortedAt = Date.now();
      controller.abort();
      const error = await within(waiter, 1_000, 'the waiter went on waiting after its signal aborted');
      expect(Date.now() - abortedAt).toBeLessThan(400);
      expect(RunCancelledError.is(error)).toBe(true);
      release.open();
      expect((await first).seq).toBe(2);
      await sleep(50);
      // The waiter's input never ran: the thread is as the first run left it.
      const thread = await app.getThread({ thread: 't' });
      expect(thread).toMatchObject({ status: 'completed', head: 2, attempts: 1 });
      expect(runs).toEqual({ a: 1, b: 1 });
    });

    it('a run whose signal is already aborted takes nothing: RunCancelledError and no thread', async () => {
      const { app, runs } = twoNodes();
      const error = await caught(() => app.run({ thread: 'never', input: { note: 'x' }, signal: AbortSignal.abort() }));
      expect(RunCancelledError.is(error)).toBe(true);
      // It says what happened: not "between steps", since no step of it ran.
      expect((error as Error).message).toContain('cancelled before it held the thread: nothing ran and nothing changed');
      expect(await app.getThread({ thread: 'never' })).toBeNull();
      expect(runs).toEqual({ a: 0, b: 0 });
    });

    it('a run on another thread is not blocked by a held thread', async () => {
      const release = gate();
      const entered = gate();
      let held = true;
      const app = graph(State)
        .node('b', async () => {
          if (held) {
            held = false;
            entered.open();
            await release.promise;
          }
          return { note: 'done' };
        })
        .edge(START, 'b')
        .edge('b', END)
        .compile({ engine: ctx.engine, retry: { maxAttempts: 1 } });
      const first = app.run({ thread: 'held' });
      await within(entered.promise, 5_000, 'the first run never started');
      expect((await app.run({ thread: 'other' })).status).toBe('completed');
      release.open();
      await first;
    });
  });

  describe('run() on an existing thread', () => {
    it('a completed thread re-run without input returns the same state and adds no position', async () => {
      const { app, runs } = twoNodes();
      const first = await app.run({ thread: 't' });
      const rows = await rawPositions(ctx.engine, 't');
      const again = await app.run({ thread: 't' });
      expect(again.status).toBe('completed');
      expect(again.seq).toBe(first.seq);
      expect(again.state).toEqual(first.state);
      expect(await rawPositions(ctx.engine, 't')).toEqual(rows);
      expect(runs).toEqual({ a: 1, b: 1 });
    });

    it('a completed thread given input starts a new run: an input position and its steps are appended', async () => {
      const { app, runs } = twoNodes();
      await app.run({ thread: 't', input: { note: 'one' } });
      const rows = await rawPositions(ctx.engine, 't');
      const second = await app.run({ thread: 't', input: { note: 'two' } });
      expect(second.status).toBe('completed');
      expect(second.seq).toBe(5);
      expect(second.state).toMatchObject({ note: 'two', n: 110, trail: ['a0', 'b1', 'a10', 'b11'] });
      expect((await rawPositions(ctx.engine, 't')).slice(0, rows.length)).toEqual(rows);
      expect((await bodies(ctx.engine, 't')).map((b) => b.kind)).toEqual(['input', 'step', 'step', 'input', 'step', 'step']);
      expect(runs).toEqual({ a: 2, b: 2 });
      expect((await app.verify({ thread: 't' })).ok).toBe(true);
    });

    it('an unfinished thread given different input raises RunInProgressError and writes nothing', async () => {
      let broken = true;
      const { app } = twoNodes({ bFails: () => broken });
      await expect(app.run({ thread: 't', input: { note: 'original' } })).rejects.toMatchObject({ code: 'ERR_NODE_FAILED' });
      broken = false;
      const rows = await rawPositions(ctx.engine, 't');
      const error = await caught(() => app.run({ thread: 't', input: { note: 'different' } }));
      expect(RunInProgressError.is(error)).toBe(true);
      expect(error.code).toBe('ERR_RUN_IN_PROGRESS');
      expect(await rawPositions(ctx.engine, 't')).toEqual(rows);
    });

    it('an unfinished thread given the same input resumes it (no second input position)', async () => {
      let broken = true;
      const { app, runs } = twoNodes({ bFails: () => broken });
      await expect(app.run({ thread: 't', input: { note: 'original' } })).rejects.toMatchObject({ code: 'ERR_NODE_FAILED' });
      broken = false;
      const result = await app.run({ thread: 't', input: { note: 'original' } });
      expect(result.status).toBe('completed');
      expect(result.state).toMatchObject({ note: 'original', n: 10, trail: ['a0', 'b1'] });
      expect((await bodies(ctx.engine, 't')).map((b) => b.kind)).toEqual(['input', 'step', 'step']);
      expect(runs).toEqual({ a: 1, b: 2 });
    });

    it('an unfinished thread resumes without input', async () => {
      let broken = true;
      const { app } = twoNodes({ bFails: () => broken });
      await expect(app.run({ thread: 't', input: { note: 'x' } })).rejects.toMatchObject({ code: 'ERR_NODE_FAILED' });
      broken = false;
      expect((await app.run({ thread: 't' })).state.trail).toEqual(['a0', 'b1']);
    });

    it('a new thread keeps the kind, tenant and metadata it was created with', async () => {
      const { app } = twoNodes();
      await app.run({ thread: 't', kind: 'conversation', tenant: 'acme', metadata: { source: 'test' } });
      expect(await app.getThread({ thread: 't' })).toMatchObject({ id: 't', kind: 'conversation', tenant: 'acme', metadata: { source: 'test' }, status: 'completed', head: 2 });
      expect(await app.getThread({ thread: 'nope' })).toBeNull();
    });

    /** Runs `options` on a new thread and returns what was refused; the thread must not exist after. */
    async function refusedThread(options: Record<string, unknown>) {
      const { app, runs } = twoNodes();
      const error = await caught(() => app.run({ thread: 't', ...options } as never));
      expect(await ctx.engine.checkpointer.getThread('t')).toBeNull();
      expect(await ctx.engine.checkpointer.listThreads()).toEqual([]);
      expect(runs).toEqual({ a: 0, b: 0 });
      return error;
    }

    it('a kind listThreads does not know is InvalidOptionError before anything is stored', async () => {
      for (const kind of ['bogus', 'Task', 1]) {
        const error = await refusedThread({ kind });
        expect(InvalidOptionError.is(error)).toBe(true);
        expect(error.message).toContain('conversation, task, session, workflow');
      }
      // Each kind listThreads accepts creates a thread listThreads finds by it.
      const { app } = twoNodes();
      for (const kind of ['conversation', 'task', 'session', 'workflow'] as const) await app.run({ thread: kind, kind });
      for (const kind of ['conversation', 'task', 'session', 'workflow'] as const) expect((await app.listThreads({ kind })).map((t) => t.id)).toEqual([kind]);
    });

    it('an empty, over-long or control-character tenant is InvalidKeyError (the tenant rule of artifact refs and tenant-scoped engines) before anything is stored', async () => {
      for (const tenant of ['', 'x'.repeat(100_000), 'x'.repeat(257), 'ac\nme', 42]) {
        expect(InvalidKeyError.is(await refusedThread({ tenant }))).toBe(true);
      }
      const { app } = twoNodes();
      await app.run({ thread: 'long', tenant: 'x'.repeat(256) });
      expect((await app.getThread({ thread: 'long' }))!.tenant).toBe('x'.repeat(256));
    });

    it('metadata that is not plain JSON is InvalidOptionError naming the key, before anything is stored, on every engine', async () => {
      const cyclic: Record<string, unknown> = { a: 1 };
      cyclic.self = cyclic;
      class Order {
        id = 1;
      }
      const cases: [unknown, string][] = [
        [{ f: 10n }, 'metadata.f'],
        [{ f: () => 1 }, 'metadata.f'],
        [{ f: Symbol('s') }, 'metadata.f'],
        [{ f: undefined }, 'metadata.f'],
        [{ nested: { list: [1, { deep: 2n }] } }, 'metadata.nested.list[1].deep'],
        [{ c: cyclic }, 'metadata.c.self'],
        [{ order: new Order() }, 'metadata.order'],
        [{ at: new Date(0) }, 'metadata.at'],
        [{ n: Number.NaN }, 'metadata.n'],
        ['queue=support', 'metadata'],
        [[1, 2], 'metadata'],
      ];
      for (const [metadata, path] of cases) {
        const error = await refusedThread({ metadata });
        expect(InvalidOptionError.is(error), path).toBe(true);
        expect(error.message, path).toContain(path);
      }
      const { app } = twoNodes();
      const plain = { queue: 'support', n: 1.5, ok: false, none: null, tags: ['a', { b: [] }], nested: Object.assign(Object.create(null) as object, { x: 1 }) };
      await app.run({ thread: 'plain', metadata: plain });
      expect((await app.getThread({ thread: 'plain' }))!.metadata).toMatchObject({ queue: 'support', n: 1.5, ok: false, none: null, tags: ['a', { b: [] }], nested: { x: 1 } });
    });

    it('the checkpointer itself refuses such a new thread, for every caller of acquireThread', async () => {
      const owner = { runId: 'r', pid: 1, host: 'h' };
      for (const create of [
        { kind: 'bogus', tenant: null, metadata: {} },
        { kind: 'task', tenant: '', metadata: {} },
        { kind: 'task', tenant: null, metadata: { f: 10n } },
      ]) {
        const error = await caught(() => ctx.engine.checkpointer.acquireThread('t', { owner, leaseMs: 1000, create: create as never }));
        expect(InvalidOptionError.is(error) || InvalidKeyError.is(error)).toBe(true);
      }
      expect(await ctx.engine.checkpointer.getThread('t')).toBeNull();
    });
  });

  describe('history and stateAt', () => {
    /** A loop of `steps` steps, each appending and counting; every node reports the state it saw. */
    async function loopThread(steps: number) {
      const seen = new Map<number, unknown>();
      const app = graph(State)
        .node('step', (s, c) => {
          seen.set(c.seq, structuredClone({ ...s }));
          return { n: s.n + 1, note: `note-${s.n}`, trail: [`item-${s.n}`] };
        })
        .edge(START, 'step')
        .conditionalEdge('step', (s) => (s.n < steps ? 'step' : END))
        .compile({ engine: ctx.engine, retry: { maxAttempts: 1 } });
      const result = await app.run({ thread: 't' });
      return { app, seen, result };
    }

    it('history lists positions newest first and pages backwards with beforeSeq and limit', async () => {
      const { app } = await loopThread(6);
      const all = await app.history({ thread: 't' });
      expect(all.map((p) => p.seq)).toEqual([6, 5, 4, 3, 2, 1, 0]);
      expect(all.at(-1)).toMatchObject({ kind: 'input', parent: null, step: 0, nodes: [], next: ['step'] });
      expect(all[0]).toMatchObject({ kind: 'step', parent: 5, step: 6, nodes: ['step'], next: [], changes: { n: 'set', note: 'set', trail: 'append:1' } });
      expect(all[0]!.hash).toMatch(/^[0-9a-f]{64}$/);

      const page1 = await app.history({ thread: 't', limit: 3 });
      expect(page1.map((p) => p.seq)).toEqual([6, 5, 4]);
      const page2 = await app.history({ thread: 't', beforeSeq: page1.at(-1)!.seq, limit: 3 });
      expect(page2.map((p) => p.seq)).toEqual([3, 2, 1]);
      const page3 = await app.history({ thread: 't', beforeSeq: page2.at(-1)!.seq, limit: 3 });
      expect(page3.map((p) => p.seq)).toEqual([0]);
      expect([...page1, ...page2, ...page3]).toEqual(all);
    });

    it('stateAt of every seq equals the state the step starting there saw, and the head equals the run result', async () => {
      const { app, seen, result } = await loopThread(8);
      expect([...seen.keys()]).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
      for (const [seq, state] of seen) expect(await app.stateAt({ thread: 't', seq })).toEqual(state);
      expect(await app.stateAt({ thread: 't', seq: result.seq })).toEqual(result.state);
      expect(await app.getState({ thread: 't' })).toEqual(result.state);
      expect(result.state).toEqual({ n: 8, note: 'note-7', trail: Array.from({ length: 8 }, (_, i) => `item-${i}`) });
    });

    it('stateAt of a missing seq raises PositionNotFoundError; getState of an unknown thread raises ThreadNotFoundError', async () => {
      const { app } = await loopThread(2);
      const missing = await caught(() => app.stateAt({ thread: 't', seq: 99 }));
      expect(PositionNotFoundError.is(missing)).toBe(true);
      expect(missing.code).toBe('ERR_POSITION_NOT_FOUND');
      const unknown = await caught(() => app.getState({ thread: 'nobody' }));
      expect(ThreadNotFoundError.is(unknown)).toBe(true);
      expect(unknown.code).toBe('ERR_THREAD_NOT_FOUND');
    });
  });
});
