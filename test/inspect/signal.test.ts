/**
 * What a careful user can hand `signalThread` / `app.signal` as a signal: a payload the
 * codec cannot store (a function, a symbol, a class instance, a cycle, a value nested
 * too deep), one over the size limit, a name that is not a non-empty string, options
 * that are not an object, a thread that does not exist. Each is a typed error with a
 * stable code, and nothing is queued: the thread's signals and record are as they were.
 * BigInt, Date and Map payloads are plain data and come back as sent.
 * Every test runs on memory, SQLite (a real file) and PostgreSQL.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { MAX_SIGNAL_PAYLOAD_BYTES } from '../../src/defaults.js';
import { InvalidKeyError, InvalidOptionError, ThreadNotFoundError, UnencodableValueError, ValueTooDeepError } from '../../src/errors.js';
import { signalThread } from '../../src/inspect/signal.js';
import { defineState } from '../../src/state/schema.js';
import { field } from '../../src/state/fields.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import type { Engine } from '../../src/contracts/engine.js';
import { caught, ENGINES, useEngine } from '../runtime/engines.js';

const State = defineState({ fields: { got: field.model(z.unknown(), { default: null }) } });

/** A thread waiting for the signal `go`. */
async function waitingThread(engine: Engine) {
  const app = graph(State)
    .node('wait', async (_s, ctx) => ({ got: await ctx.waitFor('go') }))
    .edge(START, 'wait')
    .edge('wait', END)
    .compile({ engine });
  expect((await app.run({ thread: 't', input: {} })).status).toBe('waiting');
  return app;
}

const cycle: Record<string, unknown> = { a: 1 };
cycle.self = cycle;
let tooDeep: unknown = 'bottom';
for (let i = 0; i < 10_000; i++) tooDeep = [tooDeep];

describe.each(ENGINES)('signals a careful user could send, on %s', (name) => {
  const ctx = useEngine(name);

  const refused: [string, unknown, { code: string; message: RegExp }][] = [
    ['a function payload', { thread: 't', name: 'go', payload: () => 1 }, { code: UnencodableValueError.code, message: /payload of signal "go": a function/ }],
    ['a function inside the payload', { thread: 't', name: 'go', payload: { on: { done() {} } } }, { code: UnencodableValueError.code, message: /payload of signal "go"\.on\.done: a function/ }],
    ['a symbol payload', { thread: 't', name: 'go', payload: Symbol('s') }, { code: UnencodableValueError.code, message: /a symbol/ }],
    ['a class instance payload', { thread: 't', name: 'go', payload: new (class Order { id = 7 })() }, { code: UnencodableValueError.code, message: /class Order/ }],
    ['a payload with a cycle', { thread: 't', name: 'go', payload: cycle }, { code: UnencodableValueError.code, message: /\.self: the value contains a cycle/ }],
    ['a payload nested too deep', { thread: 't', name: 'go', payload: tooDeep }, { code: ValueTooDeepError.code, message: /payload of signal "go"/ }],
    ['a payload over the size limit', { thread: 't', name: 'go', payload: 'x'.repeat(MAX_SIGNAL_PAYLOAD_BYTES) }, { code: InvalidOptionError.code, message: /over the 262144-byte limit/ }],
    ['an empty name', { thread: 't', name: '', payload: 1 }, { code: InvalidKeyError.code, message: /signal name must be a non-empty string, got ""/ }],
    ['a number as the name', { thread: 't', name: 42, payload: 1 }, { code: InvalidKeyError.code, message: /signal name must be a non-empty string, got 42/ }],
    ['no name', { thread: 't', payload: 1 }, { code: InvalidKeyError.code, message: /signal name must be a non-empty string, got undefined/ }],
    ['a bad name beside a bad payload: the name is what is wrong', { thread: 't', name: 7, payload: () => 1 }, { code: InvalidKeyError.code, message: /signal name/ }],
    ['a name with a control character', { thread: 't', name: 'go\n', payload: 1 }, { code: InvalidKeyError.code, message: /signal name/ }],
    ['a number as the thread', { thread: 5, name: 'go', payload: 1 }, { code: InvalidKeyError.code, message: /thread id must be a non-empty string, got 5/ }],
    ['a thread that does not exist', { thread: 'nobody', name: 'go', payload: 1 }, { code: ThreadNotFoundError.code, message: /thread nobody: no such thread/ }],
    ['null options', null, { code: InvalidOptionError.code, message: /pass \{ thread, name, payload\? \}, got null/ }],
    ['no options', undefined, { code: InvalidOptionError.code, message: /got undefined/ }],
  ];

  it.each(refused)('%s: a typed error with a stable code, nothing queued, the thread as it was', async (_label, options, expected) => {
    const app = await waitingThread(ctx.engine);
    const before = { thread: await ctx.engine.checkpointer.getThread('t'), signals: await ctx.engine.checkpointer.listSignals('t') };
    for (const send of [() => signalThread(ctx.engine, options as never), () => app.signal(options as never)]) {
      const error = await caught(send);
      expect(error.code, String(error)).toBe(expected.code);
      expect(error.message).toMatch(expected.message);
    }
    expect(await ctx.engine.checkpointer.getThread('t')).toEqual(before.thread);
    expect(await ctx.engine.checkpointer.listSignals('t')).toEqual(before.signals);
    expect(await ctx.engine.checkpointer.getThread('nobody')).toBeNull();
    // The thread still takes a good signal afterwards.
    await app.signal({ thread: 't', name: 'go', payload: 'now' });
    expect((await app.run({ thread: 't' })).state.got).toMatchObject({ status: 'received', payload: 'now' });
  });

  it('BigInt, Date and Map payloads are plain data: queued, and the wait gets them back as sent', async () => {
    const app = await waitingThread(ctx.engine);
    const payload = { amount: 10n ** 20n, at: new Date('2026-01-02T03:04:05Z'), seen: new Map([['a', 1]]) };
    const sent = await signalThread(ctx.engine, { thread: 't', name: 'go', payload });
    expect(sent.payload).toEqual(payload);
    // app.signal answers the same way: the payload as the wait will get it, not codec text.
    const again = await app.signal({ thread: 't', name: 'later', payload });
    expect(again).toMatchObject({ threadId: 't', name: 'later', payload });
    expect(again.id).toBe(sent.id + 1);
    expect((await app.run({ thread: 't' })).state.got).toMatchObject({ status: 'received', payload });
  });
});
