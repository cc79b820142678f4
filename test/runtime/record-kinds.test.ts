/**
 * Record kinds: `ctx.record` stores what a recorded output was beside it (its meta:
 * model call, tool result or other; the model, provider and tokens; the call's
 * latency), on every engine. The meta is read off the value once, when the call is
 * made; a re-execution is served the value and leaves the meta as it was. Interrupt
 * answers and wait results, which are not calls, carry none; a describe that throws
 * fails the node with InvalidOptionError.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineState } from '../../src/state/schema.js';
import { field } from '../../src/state/fields.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import { ENGINES, caught, useEngine } from './engines.js';

const State = defineState({ fields: { log: field.model(z.array(z.string()), { reduce: 'append', default: [] }) } });

describe.each(ENGINES)('record kinds on %s', (name) => {
  const ctx = useEngine(name);

  it('stores the kind, model, provider, usage and latency of each recorded call; a re-execution serves the value and keeps the meta', async () => {
    let calls = 0;
    const app = graph(State)
      .node('agent', async (_s, c) => {
        const reply = await c.record(
          'chat',
          async () => {
            calls++;
            await new Promise((resolve) => setTimeout(resolve, 15));
            return { text: 'hello', tokens: { input: 21, output: 5 }, modelId: 'mock-model-2026' };
          },
          { kind: 'model', model: 'mock-model', provider: 'mock', describe: (r) => ({ model: r.modelId, usage: { inputTokens: r.tokens.input, outputTokens: r.tokens.output } }) },
        );
        const tool = await c.record('tool:lookup', () => 'found', { kind: 'tool' });
        const clock = await c.record('clock', () => 1234);
        const ok = await c.interrupt('continue?');
        return { log: [reply.text, tool, String(clock), String(ok)] };
      })
      .edge(START, 'agent')
      .edge('agent', END)
      .compile({ engine: ctx.engine });

    expect((await app.run({ thread: 't' })).status).toBe('interrupted');
    const before = await ctx.engine.ledger.list('t');
    const byName = (entries: typeof before) => Object.fromEntries(entries.map((e) => [e.name, e]));
    const first = byName(before);
    expect(first.chat!.meta).toMatchObject({ kind: 'model', model: 'mock-model-2026', provider: 'mock', usage: { inputTokens: 21, outputTokens: 5 } });
    expect(first.chat!.meta!.latencyMs).toBeGreaterThanOrEqual(10);
    expect(first['tool:lookup']!.meta).toMatchObject({ kind: 'tool' });
    expect(first['tool:lookup']!.meta).not.toHaveProperty('model');
    expect(first.clock!.meta).toMatchObject({ kind: 'other' });

    const done = await app.resume({ thread: 't', answer: true });
    expect(done.state.log).toEqual(['hello', 'found', '1234', 'true']);
    expect(calls).toBe(1);
    const after = byName(await ctx.engine.ledger.list('t'));
    expect(after.chat!.meta).toEqual(first.chat!.meta);
    // The answer is recorded too, but it is not a call: it says nothing about itself.
    expect(after.interrupt).toBeDefined();
    expect(after.interrupt).not.toHaveProperty('meta');
  });

  it('an unknown kind (given, or from describe), a tool name that is not a string or a missing function is InvalidOptionError at the call, not retried, and nothing is recorded', async () => {
    const cases: [string, (c: { record: (...a: never[]) => Promise<unknown> }) => Promise<unknown>][] = [
      ['kind', (c) => (c.record as (n: string, f: () => unknown, o: object) => Promise<unknown>)('chat', () => 'hi', { kind: 'modle' })],
      ['describe', (c) => (c.record as (n: string, f: () => unknown, o: object) => Promise<unknown>)('chat', () => 'hi', { describe: () => ({ kind: 'llm' }) })],
      ['fn', (c) => (c.record as (n: string, f: unknown) => Promise<unknown>)('chat', undefined)],
      ['tool', (c) => (c.record as (n: string, f: () => unknown, o: object) => Promise<unknown>)('lookup#1', () => 'hi', { kind: 'tool', tool: 7 })],
    ];
    for (const [label, call] of cases) {
      let attempts = 0;
      const app = graph(State)
        .node('agent', async (_s, c) => {
          attempts++;
          await call(c as never);
          return { log: ['done'] };
        })
        .edge(START, 'agent')
        .edge('agent', END)
        .compile({ engine: ctx.engine, retry: { maxAttempts: 3, initialDelayMs: 0 } });
      const error = await caught(() => app.run({ thread: label }));
      expect(error.code, label).toBe('ERR_INVALID_OPTION');
      expect(attempts, label).toBe(1);
      expect(await ctx.engine.ledger.list(label), label).toEqual([]);
    }
  });

  it('a describe that throws fails the node with InvalidOptionError naming it', async () => {
    const app = graph(State)
      .node('n', async (_s, c) => ({
        log: [await c.record('x', () => 'v', { kind: 'model', describe: () => { throw new Error('no usage field'); } })],
      }))
      .edge(START, 'n')
      .edge('n', END)
      .compile({ engine: ctx.engine, retry: { maxAttempts: 1 } });
    const error = await caught(() => app.run({ thread: 'bad' }));
    expect(error.message).toMatch(/describe threw: no usage field/);
    expect(await ctx.engine.ledger.list('bad')).toEqual([]);
  });
});

describe.each(ENGINES)('record arguments on %s', (name) => {
  const ctx = useEngine(name);

  it('a record made with args keeps their digest; a re-execution with other args is RecordArgsMismatchError, and a divergence in replay', async () => {
    let city = 'Paris';
    let calls = 0;
    const app = graph(State)
      .node('n', async (_s, c) => {
        const sky = await c.record('tool:weather', () => (calls++, `sunny in ${city}`), { kind: 'tool', args: { city } });
        const ok = await c.interrupt('ok?');
        return { log: [sky, String(ok)] };
      })
      .edge(START, 'n')
      .edge('n', END)
      .compile({ engine: ctx.engine });
    await app.run({ thread: 'a' });
    const [entry] = (await ctx.engine.ledger.list('a')).filter((e) => e.name === 'tool:weather');
    expect(entry!.argsDigest).toMatch(/^[0-9a-f]{64}$/);

    city = 'Lyon';
    const error = await caught(() => app.resume({ thread: 'a', answer: true }));
    expect(error.code).toBe('ERR_RECORD_ARGS_MISMATCH');
    expect(error.message).toMatch(/tool:weather.*other arguments/);

    // Refused before anything ran: the recorded call was not made again.
    expect(calls).toBe(1);

    const straight = graph(State)
      .node('n', async (_s, c) => ({ log: [await c.record('tool:weather', () => `sunny in ${city}`, { kind: 'tool', args: { city } })] }))
      .edge(START, 'n')
      .edge('n', END)
      .compile({ engine: ctx.engine });
    city = 'Paris';
    await straight.run({ thread: 'b' });
    expect((await straight.replay({ thread: 'b', from: 0 })).sameStates).toBe(true);
    city = 'Lyon';
    const replay = await straight.replay({ thread: 'b', from: 0 });
    expect(replay.steps.flatMap((s) => s.divergences)).toEqual([expect.objectContaining({ name: 'tool:weather', reason: 'recorded with other arguments' })]);
  });
});
