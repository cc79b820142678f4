/**
 * A Worker that could run no thread is refused when it is made, not left to claim
 * nothing forever: a concurrency of 0, a negative or fractional one, or not a number
 * is InvalidOptionError, and so is a lease or poll interval that is not above 0, or a
 * lease that is not whole milliseconds. A
 * worker of concurrency 1 runs a submitted thread.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineState, END, field, graph, InvalidOptionError, START, Worker } from '../../src/index.js';
import { memory } from '../../src/engines/memory/index.js';

const State = defineState({ fields: { n: field.model(z.number(), { default: 0 }) } });
const appOn = () =>
  graph(State)
    .node('step', (s) => ({ n: s.n + 1 }))
    .edge(START, 'step')
    .edge('step', END)
    .compile({ engine: memory(), name: 'options' });

describe('Worker options', () => {
  it.each([0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '4'])('concurrency %s is InvalidOptionError', (concurrency) => {
    const app = appOn();
    const error = (() => {
      try {
        new Worker(app, { concurrency: concurrency as number });
        return undefined;
      } catch (e) {
        return e;
      }
    })();
    expect(InvalidOptionError.is(error), String(error)).toBe(true);
    expect((error as Error).message).toContain(`concurrency must be a whole number of threads run at once (1 or more), got ${typeof concurrency === 'number' ? String(concurrency) : JSON.stringify(concurrency)}`);
  });

  it.each([
    ['leaseMs', 0],
    ['leaseMs', -5],
    ['pollMs', 0],
    ['pollMs', Number.NaN],
  ])('%s %s is InvalidOptionError', (name, ms) => {
    expect(() => new Worker(appOn(), { [name]: ms })).toThrow(InvalidOptionError);
  });

  it('a fractional leaseMs is InvalidOptionError (a lease is whole milliseconds); a fractional pollMs is a poll interval', () => {
    expect(() => new Worker(appOn(), { leaseMs: 1500.5 })).toThrow(/leaseMs must be a whole number of milliseconds, got 1500\.5/);
    expect(() => new Worker(appOn(), { pollMs: 12.5 })).not.toThrow();
  });

  it('an option a Worker does not take (a misspelt concurrency), or a callback that is not a function, is InvalidOptionError', () => {
    expect(() => new Worker(appOn(), { concurency: 4 } as never)).toThrow(/Worker: unknown option "concurency" \(options: concurrency, leaseMs, pollMs, onEvent, onRun, onError\)/);
    expect(() => new Worker(appOn(), { onRun: 'log' } as never)).toThrow(/onRun must be a function/);
    expect(() => new Worker(appOn(), null as never)).toThrow(InvalidOptionError);
  });

  it('something other than a compiled graph (undefined, null, an engine) is InvalidOptionError when the Worker is made, not a TypeError', () => {
    for (const app of [undefined, null, memory(), { run: () => undefined }]) {
      expect(() => new Worker(app as never)).toThrow(InvalidOptionError);
    }
  });

  it('concurrency 1 runs a submitted thread', async () => {
    const app = appOn();
    const worker = new Worker(app, { concurrency: 1, pollMs: 20 });
    const running = worker.run();
    await app.submit({ thread: 't' });
    for (let i = 0; i < 200 && (await app.getThread({ thread: 't' }))?.status !== 'completed'; i++) await new Promise((r) => setTimeout(r, 10));
    expect((await app.getThread({ thread: 't' }))?.status).toBe('completed');
    await worker.stop();
    await running;
  });

  it('run() called again while it runs returns the same promise: one claim loop, never more threads at once than the concurrency', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let atOnce = 0;
    let most = 0;
    const app = graph(State)
      .node('step', async (s) => {
        most = Math.max(most, ++atOnce);
        await gate;
        atOnce--;
        return { n: s.n + 1 };
      })
      .edge(START, 'step')
      .edge('step', END)
      .compile({ engine: memory(), name: 'twice' });
    const worker = new Worker(app, { concurrency: 1, pollMs: 10 });
    const running = worker.run();
    expect(worker.run()).toBe(running);
    await app.submit({ thread: 'a' });
    await app.submit({ thread: 'b' });
    for (let i = 0; i < 500 && worker.running.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    // Both threads are claimable; the second waits for the first, however many polls pass.
    await new Promise((r) => setTimeout(r, 100));
    expect(most).toBe(1);
    expect(worker.running).toHaveLength(1);
    release();
    for (let i = 0; i < 200 && (await app.getThread({ thread: 'b' }))?.status !== 'completed'; i++) await new Promise((r) => setTimeout(r, 10));
    expect((await app.getThread({ thread: 'a' }))?.status).toBe('completed');
    expect((await app.getThread({ thread: 'b' }))?.status).toBe('completed');
    expect(most).toBe(1);
    await worker.stop();
    await running;
    // Once it has ended, run() starts anew, and ends at once on a stopped worker.
    await worker.run();
  });
});
