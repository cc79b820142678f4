/**
 * Retries and failures: a retry is a new attempt in the same
 * thread, never a new thread; failures are kept with node, seq and attempt;
 * exhausted retries fail the thread with NodeFailedError and a later run resumes
 * it; outputs recorded by a failed attempt are discarded so the retry asks again;
 * a sibling task that finished in a superstep that failed is not re-run.
 * Every test runs on memory and on SQLite.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { NodeFailedError } from '../../src/errors.js';
import { defineState } from '../../src/state/schema.js';
import { field } from '../../src/state/fields.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import type { RunEvent } from '../../src/runtime/events.js';
import { bodies, caught, ENGINES, sleep, useEngine } from './engines.js';

const State = defineState({
  fields: {
    value: field.model(z.string(), { default: '' }),
    trail: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
  },
});

describe.each(ENGINES)('retries on %s', (name) => {
  const ctx = useEngine(name);

  /** START -> a -> flaky -> END; `flaky` throws while `fails()` says so. */
  function flakyApp(fails: (attempt: number) => boolean, retry: { maxAttempts: number; retryOn?: (e: unknown) => boolean }) {
    const attempts: number[] = [];
    const app = graph(State)
      .node('a', () => ({ trail: ['a'] }))
      .node('flaky', (_s, c) => {
        attempts.push(c.attempt);
        if (fails(attempts.length)) throw new Error(`boom #${attempts.length}`);
        return { value: `ok after ${attempts.length}`, trail: ['flaky'] };
      })
      .edge(START, 'a')
      .edge('a', 'flaky')
      .edge('flaky', END)
      .compile({ engine: ctx.engine, retry: { initialDelayMs: 0, ...retry } });
    return { app, attempts };
  }

  it('a node failing twice then succeeding with maxAttempts 3: one thread, attempts grew, two failures kept', async () => {
    const { app, attempts } = flakyApp((n) => n <= 2, { maxAttempts: 3 });
    const result = await app.run({ thread: 't' });
    expect(result.status).toBe('completed');
    expect(result.state.value).toBe('ok after 3');
    expect(attempts).toEqual([1, 2, 3]);

    const threads = await ctx.engine.checkpointer.listThreads();
    expect(threads.map((t) => t.id)).toEqual(['t']);
    // One for the run's start, one per retry.
    expect(threads[0]!.attempts).toBe(3);

    const failures = await ctx.engine.checkpointer.listFailures('t');
    expect(failures).toHaveLength(2);
    expect(failures.map((f) => f.message)).toEqual([expect.stringContaining('boom #1'), expect.stringContaining('boom #2')]);
    for (const f of failures) {
      expect(f.node).toBe('flaky');
      expect(f.seq).toBe(1);
      expect(typeof f.attempt).toBe('number');
      expect(typeof f.at).toBe('number');
    }
    expect(failures[1]!.attempt!).toBeGreaterThan(failures[0]!.attempt!);
    // The retries left no trace in the log: one position per step.
    expect((await bodies(ctx.engine, 't')).map((b) => b.nodes)).toEqual([[], ['a'], ['flaky']]);
  });

  it('exhausted retries raise NodeFailedError; the thread is failed with lastError; a later run resumes and succeeds', async () => {
    let broken = true;
    const { app, attempts } = flakyApp(() => broken, { maxAttempts: 2 });
    const error = await caught(() => app.run({ thread: 't' }));
    expect(NodeFailedError.is(error)).toBe(true);
    expect(error.code).toBe('ERR_NODE_FAILED');
    expect((error as NodeFailedError).node).toBe('flaky');
    expect((error as NodeFailedError).attempts).toBe(2);
    expect((error.cause as Error).message).toBe('boom #2');
    expect(attempts).toEqual([1, 2]);

    const failed = (await app.getThread({ thread: 't' }))!;
    expect(failed.status).toBe('failed');
    expect(failed.head).toBe(1);
    expect(failed.lastError).toMatchObject({ code: 'ERR_NODE_FAILED', seq: 1 });
    expect(failed.lastError!.message).toContain('boom #2');
    expect(await ctx.engine.checkpointer.listFailures('t')).toHaveLength(2);

    broken = false;
    const result = await app.run({ thread: 't' });
    expect(result.status).toBe('completed');
    expect(result.state.trail).toEqual(['a', 'flaky']);
    const done = (await app.getThread({ thread: 't' }))!;
    expect(done.status).toBe('completed');
    expect(done.lastError).toBeNull();
    expect(done.attempts).toBeGreaterThan(failed.attempts);
    expect(await ctx.engine.checkpointer.listThreads()).toHaveLength(1);
    // 'a' was not re-run: its step was committed before the failure.
    expect((await bodies(ctx.engine, 't')).map((b) => b.nodes)).toEqual([[], ['a'], ['flaky']]);
  });

  it('retryOn decides which errors are retried', async () => {
    const { app, attempts } = flakyApp(() => true, { maxAttempts: 5, retryOn: () => false });
    await expect(app.run({ thread: 't' })).rejects.toMatchObject({ code: 'ERR_NODE_FAILED' });
    expect(attempts).toEqual([1]);
  });

  it("a node's own retry policy overrides the graph's", async () => {
    let calls = 0;
    const app = graph(State)
      .node(
        'flaky',
        () => {
          if (++calls < 3) throw new Error('not yet');
          return { value: 'done' };
        },
        { retry: { maxAttempts: 3 } },
      )
      .edge(START, 'flaky')
      .edge('flaky', END)
      .compile({ engine: ctx.engine, retry: { maxAttempts: 1, initialDelayMs: 0 } });
    expect((await app.run({ thread: 't' })).state.value).toBe('done');
    expect(calls).toBe(3);
  });

  describe('recorded outputs', () => {
    it('a record made by a failed attempt is discarded: the retry calls its function again and keeps the new value', async () => {
      let calls = 0;
      let throws = 1;
      const app = graph(State)
        .node('n', async (_s, c) => {
          const r = await c.record('r', () => `call-${++calls}`);
          if (throws-- > 0) throw new Error('after the record');
          return { value: r };
        })
        .edge(START, 'n')
        .edge('n', END)
        .compile({ engine: ctx.engine, retry: { maxAttempts: 2, initialDelayMs: 0 } });
      const result = await app.run({ thread: 't' });
      expect(calls).toBe(2);
      expect(result.state.value).toBe('call-2');
      const records = (await ctx.engine.ledger.list('t')).filter((e) => e.kind === 'record');
      expect(records).toHaveLength(1);
      expect(records[0]).toMatchObject({ name: 'r', node: 'n', seq: 0, status: 'done' });
      expect(records[0]!.outcome).toContain('call-2');
      // The position references the record that fed it.
      const body = (await bodies(ctx.engine, 't'))[1]!;
      expect(body.records?.map((r) => [r.key, r.name])).toEqual([[records[0]!.key, 'r']]);
    });

    it('a record made by a failed run is discarded too: the next run calls again', async () => {
      let calls = 0;
      let broken = true;
      const app = graph(State)
        .node('n', async (_s, c) => {
          const r = await c.record('r', () => `call-${++calls}`);
          if (broken) throw new Error('broken');
          return { value: r };
        })
        .edge(START, 'n')
        .edge('n', END)
        .compile({ engine: ctx.engine, retry: { maxAttempts: 1, initialDelayMs: 0 } });
      await expect(app.run({ thread: 't' })).rejects.toMatchObject({ code: 'ERR_NODE_FAILED' });
      broken = false;
      expect((await app.run({ thread: 't' })).state.value).toBe('call-2');
    });

    it('records of one node get distinct keys by call index, and the values are served in call order', async () => {
      const app = graph(State)
        .node('n', async (_s, c) => {
          const [x, y] = await Promise.all([c.record('x', () => 'X'), c.record('y', () => 'Y')]);
          return { value: `${x}${y}` };
        })
        .edge(START, 'n')
        .edge('n', END)
        .compile({ engine: ctx.engine, retry: { maxAttempts: 1, initialDelayMs: 0 } });
      expect((await app.run({ thread: 't' })).state.value).toBe('XY');
      const records = await ctx.engine.ledger.list('t');
      expect(new Set(records.map((r) => r.key)).size).toBe(2);
      expect(records.map((r) => [r.name, r.call]).sort()).toEqual([
        ['x', 0],
        ['y', 1],
      ]);
    });
  });

  describe('pending writes', () => {
    it('a task that finished in a superstep whose sibling failed is not re-run when the thread resumes', async () => {
      let fastRuns = 0;
      let broken = true;
      const events: RunEvent[] = [];
      const app = graph(State)
        .node('quick', async (_s, c) => {
          fastRuns++;
          const r = await c.record('quick.value', () => `quick-${fastRuns}`);
          return { trail: [r] };
        })
        .node('slow', async () => {
          await sleep(20);
          if (broken) throw new Error('slow is broken');
          return { trail: ['slow'] };
        })
        .edge(START, 'quick')
        .edge(START, 'slow')
        .edge('quick', END)
        .edge('slow', END)
        .compile({ engine: ctx.engine, retry: { maxAttempts: 1, initialDelayMs: 0 }, onEvent: (e) => events.push(e) });
      await expect(app.run({ thread: 't' })).rejects.toMatchObject({ code: 'ERR_NODE_FAILED' });
      expect(fastRuns).toBe(1);
      expect((await ctx.engine.checkpointer.getPendingWrites('t', '', 0)).map((p) => p.task)).toEqual(['quick:0']);

      broken = false;
      const result = await app.run({ thread: 't' });
      expect(fastRuns).toBe(1);
      expect(result.state.trail).toEqual(['quick-1', 'slow']);
      expect(events.filter((e) => e.type === 'task.reused').map((e) => (e as { node: string }).node)).toEqual(['quick']);
      // Folded into the commit: the pending write is gone.
      expect(await ctx.engine.checkpointer.getPendingWrites('t', '', 0)).toEqual([]);
    });
  });
});
