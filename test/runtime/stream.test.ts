/**
 * `app.stream({ thread, input })`: the run's events as an async iterable, with
 * `ctx.emit` custom events, each named by thread, namespace and seq; leaving the loop
 * cancels the run between steps and releases the thread, which stays resumable.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { NodeFailedError, RunCancelledError } from '../../src/errors.js';
import { defineState } from '../../src/state/schema.js';
import { field } from '../../src/state/fields.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import type { StreamEvent } from '../../src/runtime/stream.js';
import { caught, ENGINES, useEngine } from './engines.js';

const State = defineState({
  fields: {
    n: field.model(z.number(), { default: 0 }),
    log: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
  },
});

describe.each(ENGINES)('app.stream on %s', (name) => {
  const ctx = useEngine(name);

  function counter(steps: number, calls = { count: 0 }) {
    return graph(State)
      .node('count', async (s, c) => {
        calls.count++;
        const word = await c.record('word', () => `w${s.n}`);
        for (const token of ['a', 'b']) c.emit({ token, n: s.n });
        return { n: s.n + 1, log: [word] };
      })
      .edge(START, 'count')
      .conditionalEdge('count', (s) => (s.n >= steps ? END : 'count'))
      .compile({ engine: ctx.engine });
  }

  it('yields what onEvent sees, custom events included, each with thread, namespace and seq, in order; result is the run result', async () => {
    const seen: string[] = [];
    const stream = counter(3).stream({ thread: 't', input: {}, onEvent: (e) => seen.push(e.type) });
    const events: StreamEvent[] = [];
    for await (const event of stream) events.push(event);
    const result = await stream.result;
    expect(result.status).toBe('completed');
    expect(result.state.n).toBe(3);
    // Everything onEvent saw (custom events included), in the same order.
    expect(events.map((e) => e.type)).toEqual(seen);
    expect(events.every((e) => e.threadId === 't' && e.ns === '')).toBe(true);
    const custom = events.filter((e) => e.type === 'custom');
    expect(custom.map((e) => (e as { data: { token: string } }).data.token)).toEqual(['a', 'b', 'a', 'b', 'a', 'b']);
    // A custom event carries the seq of the position its step started from.
    expect(custom.map((e) => e.seq)).toEqual([0, 0, 1, 1, 2, 2]);
    const commits = events.filter((e) => e.type === 'step.commit').map((e) => e.seq);
    expect(commits).toEqual([0, 1, 2, 3]);
    const records = events.filter((e) => e.type === 'record.stored');
    expect(records.map((e) => e.seq)).toEqual([0, 1, 2]);
    expect(events.at(-1)!.type).toBe('run.end');
  });

  it('breaking out of the loop cancels the run between steps and releases the thread; it resumes later', async () => {
    const calls = { count: 0 };
    const app = counter(5, calls);
    const stream = app.stream({ thread: 't', input: {} });
    for await (const event of stream) if (event.type === 'step.commit' && event.seq === 2) break;
    // The thread is released when the loop's exit completes: another run takes it at once.
    const thread = await ctx.engine.checkpointer.getThread('t');
    expect(thread!.status).toBe('running');
    expect(thread!.head).toBeLessThan(5);
    expect(await caught(() => stream.result)).toBeInstanceOf(RunCancelledError);
    const done = await app.run({ thread: 't' });
    expect(done.status).toBe('completed');
    expect(done.state.log).toEqual(['w0', 'w1', 'w2', 'w3', 'w4']);
    expect((await app.verify({ thread: 't' })).ok).toBe(true);
  });

  it('an onEvent that throws changes nothing: no node runs again, the run and the stream end as unobserved', async () => {
    for (const type of ['task.start', 'custom', 'step.commit', 'run.end'] as const) {
      const calls = { count: 0 };
      const thread = `t-${type}`;
      const result = await counter(2, calls).run({
        thread,
        input: {},
        onEvent: (e) => {
          if (e.type === type) throw new Error(`observer broke at ${type}`);
        },
      });
      expect(result.status).toBe('completed');
      expect(result.state.log).toEqual(['w0', 'w1']);
      expect(calls.count).toBe(2);
      expect((await ctx.engine.checkpointer.getThread(thread))!).toMatchObject({ status: 'completed', lastError: null });
    }
    const stream = counter(2).stream({ thread: 's', input: {}, onEvent: () => { throw new Error('observer broke'); } });
    const types: string[] = [];
    for await (const event of stream) types.push(event.type);
    expect((await stream.result).status).toBe('completed');
    expect(types.filter((t) => t === 'custom')).toHaveLength(4);
    expect(types.at(-1)).toBe('run.end');
  });

  it('a failing node ends the iteration with its error, after the events before it', async () => {
    const app = graph(State)
      .node('boom', (_s, c) => {
        c.emit('before');
        throw new Error('no');
      })
      .edge(START, 'boom')
      .edge('boom', END)
      .compile({ engine: ctx.engine, retry: { maxAttempts: 1 } });
    const types: string[] = [];
    const error = await caught(async () => {
      for await (const event of app.stream({ thread: 't', input: {} })) types.push(event.type);
    });
    expect(error).toBeInstanceOf(NodeFailedError);
    expect(types).toContain('custom');
    expect(types).toContain('task.failed');
  });

  it('interrupts and child runs show in the stream: the interrupt event, and child events under the child namespace', async () => {
    const Child = defineState({ fields: { x: field.model(z.number(), { default: 0 }) } });
    const child = graph(Child)
      .node('inner', (s, c) => (c.emit('inside'), { x: s.x + 1 }))
      .edge(START, 'inner')
      .edge('inner', END);
    const app = graph(State)
      .subgraph('sub', child, { input: () => ({}), output: (r) => ({ n: r.x }) })
      .node('ask', async (_s, c) => ({ log: [String(await c.interrupt('ok?'))] }))
      .edge(START, 'sub')
      .edge('sub', 'ask')
      .edge('ask', END)
      .compile({ engine: ctx.engine });
    const events: StreamEvent[] = [];
    const stream = app.stream({ thread: 't', input: {} });
    for await (const event of stream) events.push(event);
    expect((await stream.result).status).toBe('interrupted');
    const inside = events.find((e) => e.type === 'custom')!;
    expect(inside.ns).toMatch(/^sub:0@/);
    expect(events.find((e) => e.type === 'interrupt')).toMatchObject({ node: 'ask', payload: 'ok?', ns: '' });
  });
});
