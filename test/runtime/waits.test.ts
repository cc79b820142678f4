/**
 * Durable waits: `ctx.sleep(ms)` / `ctx.sleepUntil(date)` and `ctx.waitFor(name)` with
 * `app.signal(...)`. A waiting node stops; the thread is `waiting` with its wake time,
 * holding nothing; a run before it is due changes nothing; after it (or once a
 * signal arrives) the node re-executes, served what it recorded, and the call
 * returns. Signals queue durably and are taken once each. Workers wake due threads.
 * Every test runs on memory, SQLite and PostgreSQL.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { InvalidOptionError, ThreadNotFoundError } from '../../src/errors.js';
import { defineState } from '../../src/state/schema.js';
import { field } from '../../src/state/fields.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import { Worker } from '../../src/runtime/worker.js';
import type { Engine } from '../../src/contracts/engine.js';
import type { NodeContext } from '../../src/runtime/node-context.js';
import { caught, ENGINES, rawPositions, useEngine } from './engines.js';

const State = defineState({
  fields: {
    log: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
    got: field.model(z.unknown(), { default: null }),
  },
});

type NodeContextOf = NodeContext;

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each(ENGINES)('durable waits on %s', (name) => {
  const ctx = useEngine(name);

  function sleeper(ms: number, engine: Engine = ctx.engine) {
    const calls = { before: 0, after: 0 };
    const app = graph(State)
      .node('nap', async (_s, c) => {
        await c.record('before', () => calls.before++);
        await c.sleep(ms);
        calls.after++;
        return { log: ['woke'] };
      })
      .edge(START, 'nap')
      .edge('nap', END)
      .compile({ engine });
    return { app, calls };
  }

  function waiter(options: { timeoutMs?: number; schema?: z.ZodType; filter?: (p: never) => boolean } = {}, engine: Engine = ctx.engine) {
    const calls = { after: 0 };
    const app = graph(State)
      .node('wait', async (_s, c) => {
        const result = await c.waitFor('approval', options as never);
        calls.after++;
        return { got: result, log: [result.status] };
      })
      .edge(START, 'wait')
      .edge('wait', END)
      .compile({ engine });
    return { app, calls };
  }

  it('ctx.sleep stops the node: the thread is waiting with its wake time, a run before then returns at once and changes nothing', async () => {
    const { app, calls } = sleeper(60_000);
    const started = Date.now();
    const result = await app.run({ thread: 't', input: {} });
    expect(result.status).toBe('waiting');
    expect(result.waits).toHaveLength(1);
    expect(result.waits[0]).toMatchObject({ node: 'nap', kind: 'sleep' });
    expect(result.waits[0]!.until).toBeGreaterThanOrEqual(started + 60_000);
    const record = (await ctx.engine.checkpointer.getThread('t'))!;
    expect(record.status).toBe('waiting');
    expect(record.wakeAt).toBe(result.waits[0]!.until);
    const before = await rawPositions(ctx.engine, 't');
    const again = await app.run({ thread: 't' });
    expect(again.status).toBe('waiting');
    expect(await rawPositions(ctx.engine, 't')).toEqual(before);
    expect(calls).toEqual({ before: 1, after: 0 });
  });

  it('after the wake time the run goes on: the node re-executes served what it recorded, and keeps the wake time it set first', async () => {
    const { app, calls } = sleeper(150);
    const first = await app.run({ thread: 't', input: {} });
    expect(first.status).toBe('waiting');
    await pause(200);
    const done = await app.run({ thread: 't' });
    expect(done.status).toBe('completed');
    expect(done.state.log).toEqual(['woke']);
    expect(calls).toEqual({ before: 1, after: 1 });
    expect((await ctx.engine.checkpointer.getThread('t'))!.wakeAt).toBeNull();
    expect((await app.verify({ thread: 't' })).ok).toBe(true);
    expect((await app.replay({ thread: 't', from: 0 })).sameStates).toBe(true);
  });

  it('sleepUntil a time already past does not stop; a bad duration is InvalidOptionError', async () => {
    const app = graph(State)
      .node('n', async (_s, c) => {
        await c.sleepUntil(new Date(Date.now() - 1000));
        return { log: ['passed'] };
      })
      .edge(START, 'n')
      .edge('n', END)
      .compile({ engine: ctx.engine });
    expect((await app.run({ thread: 't', input: {} })).state.log).toEqual(['passed']);
    const bad = graph(State)
      .node('n', async (_s, c) => (await c.sleep(-1), {}))
      .edge(START, 'n')
      .edge('n', END)
      .compile({ engine: ctx.engine, retry: { maxAttempts: 1 } });
    const error = await caught(() => bad.run({ thread: 'b', input: {} }));
    expect(error).toBeInstanceOf(InvalidOptionError);
  });

  it('a wake time is whole ms, rounded up, on every engine; one past the latest Date is InvalidOptionError, with nothing stored', async () => {
    const started = Date.now();
    const { app } = sleeper(60_000.5);
    const first = await app.run({ thread: 't', input: {} });
    expect(first.status).toBe('waiting');
    const wakeAt = (await ctx.engine.checkpointer.getThread('t'))!.wakeAt!;
    expect(Number.isInteger(wakeAt)).toBe(true);
    expect(wakeAt).toBeGreaterThanOrEqual(started + 60_001);
    expect(first.waits[0]!.until).toBe(wakeAt);
    const timed = waiter({ timeoutMs: 60_000.25 }).app;
    expect((await timed.run({ thread: 'w', input: {} })).status).toBe('waiting');
    expect(Number.isInteger((await ctx.engine.checkpointer.getThread('w'))!.wakeAt)).toBe(true);
    for (const [thread, far] of [
      ['far-sleep', (c: NodeContextOf) => c.sleep(1e300)],
      ['far-until', (c: NodeContextOf) => c.sleepUntil(8.64e15 + 1)],
      ['far-wait', (c: NodeContextOf) => c.waitFor('approval', { timeoutMs: Number.MAX_VALUE })],
    ] as const) {
      const bad = graph(State)
        .node('n', async (_s, c) => (await far(c), {}))
        .edge(START, 'n')
        .edge('n', END)
        .compile({ engine: ctx.engine, retry: { maxAttempts: 1 } });
      expect(await caught(() => bad.run({ thread, input: {} }))).toBeInstanceOf(InvalidOptionError);
      const record = (await ctx.engine.checkpointer.getThread(thread))!;
      expect(record).toMatchObject({ status: 'failed', head: 0, wakeAt: null, lastError: { code: 'ERR_INVALID_OPTION' } });
    }
  });

  it('waitFor options that cannot work are InvalidOptionError at the call, not a failure or a wait that never ends', async () => {
    for (const [thread, options] of [
      ['null', null],
      ['schema', { schema: z.number().parse }],
      ['filter', { filter: 'yes' }],
    ] as const) {
      const { app } = waiter(options as never);
      expect(await caught(() => app.run({ thread, input: {} }))).toBeInstanceOf(InvalidOptionError);
      expect((await ctx.engine.checkpointer.getThread(thread))!.status).toBe('failed');
    }
  });

  it('an async filter is awaited: a signal its promise refuses stays queued', async () => {
    const { app } = waiter({ filter: (async (p: { ok: boolean }) => p.ok) as never });
    await app.run({ thread: 't', input: {} });
    await app.signal({ thread: 't', name: 'approval', payload: { ok: false } });
    expect((await app.run({ thread: 't' })).status).toBe('waiting');
    await app.signal({ thread: 't', name: 'approval', payload: { ok: true } });
    const done = await app.run({ thread: 't' });
    expect(done.state.got).toMatchObject({ status: 'received', payload: { ok: true }, signal: { id: 2 } });
    expect((await ctx.engine.checkpointer.listSignals('t', { pending: true })).map((s) => s.id)).toEqual([1]);
  });

  it('a signal sent before the wait starts is not lost: the wait takes it without stopping', async () => {
    const { app } = waiter();
    // The thread exists (a first run waited for something else) before the signal is sent.
    const gate = graph(State)
      .node('gate', async (_s, c) => (await c.sleep(0), {}))
      .node('wait', async (_s, c) => {
        const result = await c.waitFor<{ by: string }>('approval');
        return { got: result, log: [result.status] };
      })
      .edge(START, 'gate')
      .edge('gate', 'wait')
      .edge('wait', END)
      .compile({ engine: ctx.engine });
    await ctx.engine.checkpointer.acquireThread('early', { owner: { runId: 'x', pid: 1, host: 'elsewhere' }, leaseMs: 1, create: { kind: 'task', tenant: null, metadata: { graph: 'default' } } });
    await app.signal({ thread: 'early', name: 'approval', payload: { by: 'ana' } });
    await pause(5);
    const done = await gate.run({ thread: 'early', input: {} });
    expect(done.status).toBe('completed');
    expect(done.state.got).toMatchObject({ status: 'received', payload: { by: 'ana' } });
    const signals = await ctx.engine.checkpointer.listSignals('early');
    expect(signals).toHaveLength(1);
    expect(signals[0]!.consumedBy).not.toBeNull();
  });

  it('a wait stops until a signal arrives from another process; the signal makes the thread due and the run takes it once', async () => {
    const { app, calls } = waiter();
    const first = await app.run({ thread: 't', input: {} });
    expect(first.status).toBe('waiting');
    expect(first.waits[0]).toMatchObject({ kind: 'signal', name: 'approval', until: null });
    expect((await ctx.engine.checkpointer.getThread('t'))!.wakeAt).toBeNull();
    // Another process: a fresh engine on the same storage, no graph code.
    const sender = waiter({}, ctx.reopen()).app;
    const sent = await sender.signal('t', 'approval', { ok: true });
    expect(sent.id).toBe(1);
    const due = (await ctx.engine.checkpointer.getThread('t'))!;
    expect(due.wakeAt).not.toBeNull();
    expect(due.wakeAt!).toBeLessThanOrEqual(Date.now());
    const done = await app.run({ thread: 't' });
    expect(done.status).toBe('completed');
    expect(done.state.got).toMatchObject({ status: 'received', payload: { ok: true }, signal: { id: 1 } });
    expect(calls.after).toBe(1);
    // Taken once: a second signal stays queued for another wait.
    await app.signal({ thread: 't', name: 'approval', payload: { ok: false } });
    expect((await ctx.engine.checkpointer.listSignals('t', { pending: true })).map((s) => s.id)).toEqual([2]);
  });

  it('a timeout resolves as a typed result once it has passed', async () => {
    const { app } = waiter({ timeoutMs: 120 });
    const first = await app.run({ thread: 't', input: {} });
    expect(first.status).toBe('waiting');
    expect((await ctx.engine.checkpointer.getThread('t'))!.wakeAt).toBe(first.waits[0]!.until);
    await pause(170);
    const done = await app.run({ thread: 't' });
    expect(done.state.got).toEqual({ status: 'timedOut', timedOut: true });
  });

  it('a signal sent after the timeout came too late: the wait times out however late the run comes, and the signal stays queued', async () => {
    const { app } = waiter({ timeoutMs: 60 });
    const first = await app.run({ thread: 't', input: {} });
    const until = first.waits[0]!.until!;
    await pause(until - Date.now() + 30);
    // Sent after the deadline, before any run got to the thread (a busy or polling worker).
    const late = await app.signal({ thread: 't', name: 'approval', payload: { ok: true } });
    expect(late.sentAt).toBeGreaterThan(until);
    const skipped: unknown[] = [];
    const done = await app.run({ thread: 't', onEvent: (e) => void (e.type === 'signal.skipped' && skipped.push(e)) });
    expect(done.state.got).toEqual({ status: 'timedOut', timedOut: true });
    expect(skipped).toMatchObject([{ id: late.id, reason: 'sent after the wait timed out' }]);
    expect((await ctx.engine.checkpointer.listSignals('t', { pending: true })).map((s) => s.id)).toEqual([late.id]);
  });

  it('a signal sent before the timeout is taken even when the run comes after it', async () => {
    const { app } = waiter({ timeoutMs: 80 });
    await app.run({ thread: 't', input: {} });
    await app.signal({ thread: 't', name: 'approval', payload: { ok: true } });
    await pause(130);
    const done = await app.run({ thread: 't' });
    expect(done.state.got).toMatchObject({ status: 'received', payload: { ok: true } });
  });

  it('signals that fail the schema or the filter stay queued; the first that passes is taken', async () => {
    const { app } = waiter({ schema: z.object({ amount: z.number() }), filter: ((p: { amount: number }) => p.amount > 10) as never });
    await app.run({ thread: 't', input: {} });
    await app.signal({ thread: 't', name: 'approval', payload: 'not an object' });
    await app.signal({ thread: 't', name: 'approval', payload: { amount: 5 } });
    await app.signal({ thread: 't', name: 'other', payload: { amount: 50 } });
    const still = await app.run({ thread: 't' });
    expect(still.status).toBe('waiting');
    await app.signal({ thread: 't', name: 'approval', payload: { amount: 20 } });
    const done = await app.run({ thread: 't' });
    expect(done.status).toBe('completed');
    expect(done.state.got).toMatchObject({ status: 'received', payload: { amount: 20 }, signal: { id: 4 } });
    expect((await ctx.engine.checkpointer.listSignals('t', { pending: true })).map((s) => s.id)).toEqual([1, 2, 3]);
  });

  it('a run that finds only signals the wait refuses commits nothing, as a run before the wait is due does: the refused signals stay queued and the thread waiting', async () => {
    const { app, calls } = waiter({ schema: z.object({ amount: z.number() }), filter: ((p: { amount: number }) => p.amount > 10) as never });
    const first = await app.run({ thread: 't', input: {} });
    const before = await rawPositions(ctx.engine, 't');
    await app.signal({ thread: 't', name: 'approval', payload: 'not an object' });
    await app.signal({ thread: 't', name: 'approval', payload: { amount: 5 } });
    for (let run = 0; run < 3; run++) {
      const still = await app.run({ thread: 't' });
      expect(still.status).toBe('waiting');
      expect(still.seq).toBe(first.seq);
      expect(still.waits).toEqual(first.waits);
    }
    expect(await rawPositions(ctx.engine, 't')).toEqual(before);
    const record = (await ctx.engine.checkpointer.getThread('t'))!;
    expect(record).toMatchObject({ status: 'waiting', wakeAt: null, head: first.seq });
    expect((await ctx.engine.checkpointer.listSignals('t', { pending: true })).map((s) => s.id)).toEqual([1, 2]);
    // Nothing made it due again: the refused signals were seen, so a worker does not claim it.
    if (ctx.engine.checkpointer.capabilities.claims) {
      const claimed = await ctx.engine.checkpointer.claimThreads!({ owner: { runId: 'w', pid: 1, host: 'h' }, leaseMs: 1000, limit: 10 });
      expect(claimed.map((c) => c.threadId)).toEqual([]);
    }
    await app.signal({ thread: 't', name: 'approval', payload: { amount: 20 } });
    const done = await app.run({ thread: 't' });
    expect(done.status).toBe('completed');
    expect(done.state.got).toMatchObject({ status: 'received', payload: { amount: 20 }, signal: { id: 3 } });
    expect(calls.after).toBe(1);
    expect((await app.verify({ thread: 't' })).ok).toBe(true);
    expect((await app.replay({ thread: 't', from: 0 })).sameStates).toBe(true);
  });

  it('a wait inside a child run that refuses every queued signal commits nothing in the child or the parent', async () => {
    const Child = defineState({ fields: { x: field.model(z.number(), { default: 0 }) } });
    const child = graph(Child)
      .node('inner', async (_s, c) => {
        const got = await c.waitFor<number>('n', { schema: z.number().min(10) });
        return { x: got.status === 'received' ? got.payload : -1 };
      })
      .edge(START, 'inner')
      .edge('inner', END);
    const app = graph(State)
      .subgraph('sub', child, { input: () => ({}), output: (r) => ({ log: [`child ${r.x}`] }) })
      .edge(START, 'sub')
      .edge('sub', END)
      .compile({ engine: ctx.engine });
    const first = await app.run({ thread: 't', input: {} });
    const ns = first.waits[0]!.ns!;
    const childPositions = () => ctx.engine.checkpointer.getPositions('t', ns, { from: 0, to: Number.MAX_SAFE_INTEGER });
    const before = { root: await rawPositions(ctx.engine, 't'), child: (await childPositions()).map((p) => p.hash) };
    await app.signal({ thread: 't', name: 'n', payload: 3 });
    expect((await app.run({ thread: 't' })).status).toBe('waiting');
    expect((await app.run({ thread: 't' })).status).toBe('waiting');
    expect({ root: await rawPositions(ctx.engine, 't'), child: (await childPositions()).map((p) => p.hash) }).toEqual(before);
    expect((await ctx.engine.checkpointer.getThread('t'))!.status).toBe('waiting');
    await app.signal({ thread: 't', name: 'n', payload: 12 });
    expect((await app.run({ thread: 't' })).state.log).toEqual(['child 12']);
    expect((await app.verify({ thread: 't' })).ok).toBe(true);
  });

  it('two waits in turn take two signals in send order', async () => {
    const app = graph(State)
      .node('two', async (_s, c) => {
        const a = await c.waitFor<string>('step');
        const b = await c.waitFor<string>('step');
        return { log: [a.status === 'received' ? a.payload : '-', b.status === 'received' ? b.payload : '-'] };
      })
      .edge(START, 'two')
      .edge('two', END)
      .compile({ engine: ctx.engine });
    expect((await app.run({ thread: 't', input: {} })).status).toBe('waiting');
    await app.signal({ thread: 't', name: 'step', payload: 'first' });
    expect((await app.run({ thread: 't' })).status).toBe('waiting');
    await app.signal({ thread: 't', name: 'step', payload: 'second' });
    expect((await app.run({ thread: 't' })).state.log).toEqual(['first', 'second']);
  });

  it('two parallel waits on one name take one signal each; replay serves the one that finished first without calling it again', async () => {
    const calls = { a: 0, b: 0 };
    const waitNode = (node: 'a' | 'b') => async (_s: unknown, c: NodeContextOf) => {
      calls[node]++;
      const r = await c.waitFor<number>('go');
      return { log: [`${node}:${r.status === 'received' ? r.payload : '-'}`] };
    };
    const app = graph(State)
      .node('a', waitNode('a'))
      .node('b', waitNode('b'))
      .edge(START, 'a')
      .edge(START, 'b')
      .edge('a', END)
      .edge('b', END)
      .compile({ engine: ctx.engine });
    expect((await app.run({ thread: 't', input: {} })).waits.map((w) => w.node)).toEqual(['a', 'b']);
    await app.signal({ thread: 't', name: 'go', payload: 1 });
    const one = await app.run({ thread: 't' });
    expect(one.status).toBe('waiting');
    // The two waits race for the first signal: either may take it, the other waits on.
    expect(one.waits).toHaveLength(1);
    const later = one.waits[0]!.node as 'a' | 'b';
    const first = later === 'a' ? 'b' : 'a';
    await app.signal({ thread: 't', name: 'go', payload: 2 });
    const done = await app.run({ thread: 't' });
    expect([...done.state.log].sort()).toEqual([`${first}:1`, `${later}:2`].sort());
    // The one that finished first is reused, not run again, when the second signal comes.
    expect(calls).toEqual({ [first]: 2, [later]: 3 });
    expect((await ctx.engine.checkpointer.listSignals('t', { pending: true }))).toEqual([]);
    expect((await app.verify({ thread: 't' })).ok).toBe(true);
    const replay = await app.replay({ thread: 't', from: 0 });
    expect(replay.steps.flatMap((s) => s.divergences)).toEqual([]);
    expect(replay.sameStates).toBe(true);
  });

  it('signal to a missing thread is ThreadNotFoundError', async () => {
    const { app } = waiter();
    expect(await caught(() => app.signal({ thread: 'nobody', name: 'approval' }))).toBeInstanceOf(ThreadNotFoundError);
  });

  it('a wait inside a child run makes the thread wait; it goes on when due', async () => {
    const Child = defineState({ fields: { x: field.model(z.number(), { default: 0 }) } });
    const child = graph(Child)
      .node('inner', async (s, c) => {
        await c.sleep(100);
        return { x: s.x + 1 };
      })
      .edge(START, 'inner')
      .edge('inner', END);
    const app = graph(State)
      .subgraph('sub', child, { input: () => ({}), output: (r) => ({ log: [`child ${r.x}`] }) })
      .edge(START, 'sub')
      .edge('sub', END)
      .compile({ engine: ctx.engine });
    const first = await app.run({ thread: 't', input: {} });
    expect(first.status).toBe('waiting');
    expect(first.waits[0]!.ns).toMatch(/^sub:0@/);
    expect((await ctx.engine.checkpointer.getThread('t'))!.wakeAt).toBe(first.waits[0]!.until);
    await pause(150);
    const done = await app.run({ thread: 't' });
    expect(done.status).toBe('completed');
    expect(done.state.log).toEqual(['child 1']);
    expect((await app.verify({ thread: 't' })).ok).toBe(true);
  });

  it('a Worker wakes a sleeping thread when it is due, and a waiting one when a signal arrives', async () => {
    if (!ctx.engine.checkpointer.capabilities.claims) throw new Error(`${name} should hand threads to workers`);
    const app = graph(State)
      .node('nap', async (_s, c) => {
        await c.sleep(150);
        const r = await c.waitFor<string>('go');
        return { log: [r.status === 'received' ? r.payload : 'none'] };
      })
      .edge(START, 'nap')
      .edge('nap', END)
      .compile({ engine: ctx.engine });
    const reports: { threadId: string; status?: string }[] = [];
    const worker = new Worker(app, { pollMs: 50, onRun: (r) => reports.push(r) });
    const running = worker.run();
    try {
      await app.submit({ thread: 'w', input: {} });
      const until = Date.now() + 5000;
      while (!reports.some((r) => r.status === 'waiting' && r.threadId === 'w') && Date.now() < until) await pause(20);
      // First stop: the sleep. The worker comes back for it at its wake time, and stops again at the wait.
      const atSignalWait = async () => {
        const t = (await ctx.engine.checkpointer.getThread('w'))!;
        return t.status === 'waiting' && t.wakeAt === null;
      };
      while (!(await atSignalWait()) && Date.now() < until) await pause(20);
      const waiting = (await ctx.engine.checkpointer.getThread('w'))!;
      expect(waiting.status).toBe('waiting');
      await app.signal({ thread: 'w', name: 'go', payload: 'now' });
      while ((await ctx.engine.checkpointer.getThread('w'))!.status !== 'completed' && Date.now() < until) await pause(20);
    } finally {
      await worker.stop();
      await running;
    }
    expect((await app.getState({ thread: 'w' })).log).toEqual(['now']);
  });

  it('an interrupt answered while a parallel node still sleeps goes on at once; the sleeper keeps its wake time', async () => {
    const app = graph(State)
      .node('ask', async (_s, c) => ({ log: [`ask:${await c.interrupt('ok?')}`] }))
      .node('nap', async (_s, c) => {
        await c.sleep(60_000);
        return { log: ['nap'] };
      })
      .edge(START, 'ask')
      .edge(START, 'nap')
      .edge('ask', END)
      .edge('nap', END)
      .compile({ engine: ctx.engine });
    const first = await app.run({ thread: 't', input: {} });
    expect(first.status).toBe('interrupted');
    expect(first.waits).toHaveLength(1);
    const until = first.waits[0]!.until;
    const answered = await app.resume({ thread: 't', answer: 'yes' });
    expect(answered.status).toBe('waiting');
    expect(answered.interrupts).toEqual([]);
    expect(answered.waits.map((w) => w.until)).toEqual([until]);
    expect((await ctx.engine.checkpointer.getThread('t'))!.wakeAt).toBe(until);
    // The answered node finished: its result is kept with the superstep, it does not ask again.
    const head = (await app.history({ thread: 't', limit: 1 }))[0]!;
    expect(head.interrupts).toEqual([]);
  });
});
