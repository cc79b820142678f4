/**
 * The options of run, submit, resume, fork, the reads and compile that are out of
 * range are InvalidOptionError naming the option, before anything is taken or stored:
 * the thread's record (status, head, attempts, lease epoch, update time) and its
 * positions are as they were, and a thread the call would have created does not
 * exist. Values at the edge of each range (seq 0, waitTimeoutMs 0, a limit of 1)
 * still work, and an option given as undefined takes its default.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Engine } from '../../src/contracts/engine.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { InvalidOptionError } from '../../src/errors.js';
import { END, START, defineState, field, graph, type CompileOptions } from '../../src/index.js';

const dir = mkdtempSync(join(tmpdir(), 'cairn-run-options-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.map((e) => e.close()));
  engines = [];
});

const State = defineState({ fields: { n: field.model(z.number(), { default: 0 }), note: field.model(z.string(), { default: '' }) } });

/** inc → review (paused before) → END, on a fresh SQLite file. */
function appOn(options: Partial<CompileOptions> = {}) {
  const engine = sqlite(join(dir, `${Math.random()}.db`));
  engines.push(engine);
  const app = graph(State)
    .node('inc', (s) => ({ n: s.n + 1 }))
    .node('review', (s) => ({ note: `reviewed ${s.n}` }), { interruptBefore: true })
    .edge(START, 'inc')
    .edge('inc', 'review')
    .edge('review', END)
    .compile({ engine, ...options });
  return { app, engine };
}

type App = ReturnType<typeof appOn>['app'];

/** Everything a call could change about a thread: its record and every position. */
async function stored(app: App, thread: string): Promise<unknown> {
  const record = await app.getThread({ thread });
  return { record, positions: record ? await app.history({ thread }) : [] };
}

async function refusal(call: () => Promise<unknown>): Promise<Error> {
  try {
    await call();
  } catch (error) {
    return error as Error;
  }
  throw new Error('the call was not refused');
}

/** Expects InvalidOptionError naming `option`, and nothing of `thread` changed. */
async function refused(app: App, thread: string, option: string, call: () => Promise<unknown>): Promise<void> {
  const before = await stored(app, thread);
  const error = await refusal(call);
  expect(InvalidOptionError.is(error), `${option}: ${String(error)}`).toBe(true);
  expect(error.message).toMatch(new RegExp(`\\b${option.replace('.', '\\.')} must be`));
  expect(await stored(app, thread)).toEqual(before);
}

const NOT_COUNTS = [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '5'];
/** Not a limit: as NOT_COUNTS, but Infinity is one (no limit). */
const NOT_LIMITS = NOT_COUNTS.filter((v) => v !== Number.POSITIVE_INFINITY);

describe('run and submit options', () => {
  it.each<[string, unknown]>([
    ['input', 5],
    ['input', []],
    ['input', null],
    ['input', 'n=1'],
    ['onBusy', 'yes'],
    ['onBusy', true],
    ['waitTimeoutMs', -1],
    ['waitTimeoutMs', Number.NaN],
    ['waitTimeoutMs', Number.POSITIVE_INFINITY],
    ['waitTimeoutMs', '10'],
    ...NOT_LIMITS.map((v): [string, unknown] => ['recursionLimit', v]),
    ['signal', { aborted: false }],
    ['onEvent', 'console.log'],
    ['rawEvents', 'yes'],
    ['nodeMapping', []],
    ['nodeMapping.old', 5],
  ])('run %s %s: InvalidOptionError, no thread made and an existing one unchanged', async (option, value) => {
    const { app } = appOn();
    await app.run({ thread: 'old' });
    const given = option === 'nodeMapping.old' ? { nodeMapping: { old: value } } : { [option]: value };
    await refused(app, 'new', option, () => app.run({ thread: 'new', ...given } as never));
    expect(await app.getThread({ thread: 'new' })).toBeNull();
    await refused(app, 'old', option, () => app.run({ thread: 'old', ...given } as never));
    await refused(app, 'new', option, () => app.submit({ thread: 'new', ...given } as never));
    expect(await app.getThread({ thread: 'new' })).toBeNull();
  });

  it('stream: the same checks, the error in the stream', async () => {
    const { app } = appOn();
    const stream = app.stream({ thread: 'new', recursionLimit: 0 });
    await expect(stream.result).rejects.toThrow(/stream: recursionLimit must be/);
    // Its onEvent and signal are the caller's, checked before the stream wraps them in its own.
    await expect(app.stream({ thread: 'new', onEvent: 'log' as never }).result).rejects.toThrow(/stream: onEvent must be a function/);
    await expect(app.stream({ thread: 'new', signal: {} as never }).result).rejects.toThrow(/stream: signal must be an AbortSignal/);
    expect(await app.getThread({ thread: 'new' })).toBeNull();
  });

  it('a key a call does not take is InvalidOptionError listing those it takes, for run, submit, stream, resume and fork', async () => {
    const { app } = appOn();
    await app.run({ thread: 'old' });
    const before = await stored(app, 'old');
    const unknown = async (call: () => Promise<unknown>, name: string, key: string) => {
      const error = await refusal(call);
      expect(InvalidOptionError.is(error), String(error)).toBe(true);
      expect(error.message).toContain(`${name}: unknown option "${key}" (options: thread,`);
    };
    // LangGraph habits, and typos of cairn's own options.
    await unknown(() => app.run({ thread: 'new', configurable: { thread_id: 'x' } } as never), 'run', 'configurable');
    await unknown(() => app.submit({ thread: 'new', inputs: { n: 1 } } as never), 'submit', 'inputs');
    await unknown(() => app.stream({ thread: 'new', streamMode: 'values' } as never).result, 'stream', 'streamMode');
    await unknown(() => app.resume({ thread: 'old', anwser: true } as never), 'resume', 'anwser');
    await unknown(() => app.fork({ thread: 'old', seq: 0, input: { n: 2 } } as never), 'fork', 'input');
    expect(await app.getThread({ thread: 'new' })).toBeNull();
    expect(await stored(app, 'old')).toEqual(before);
  });

  it('edge values work: recursionLimit 1, waitTimeoutMs 0, options given as undefined', async () => {
    const { app } = appOn();
    // inc, then the step that pauses before review; the answered review is one more.
    expect((await app.run({ thread: 'a', recursionLimit: 2 })).status).toBe('interrupted');
    expect((await app.resume({ thread: 'a', input: { note: 'ok' }, recursionLimit: 1 })).status).toBe('completed');
    expect((await app.run({ thread: 'b', onBusy: 'wait', waitTimeoutMs: 0 })).status).toBe('interrupted');
    expect((await app.run({ thread: 'c', onBusy: undefined, waitTimeoutMs: undefined, recursionLimit: undefined, input: undefined, nodeMapping: {} })).status).toBe('interrupted');
    expect((await app.submit({ thread: 'd', input: { n: 0 }, onBusy: 'throw' })).status).toBe('running');
  });
});

describe('resume options', () => {
  it.each<[string, unknown]>([
    ['actor', 5],
    ['actor', { name: 'ana' }],
    ['interrupt', 7],
    ['detach', 'yes'],
    ['input', []],
    ['input', 5],
    ['childInput', 'x'],
    ['onBusy', 'later'],
    ['waitTimeoutMs', -5],
    ['recursionLimit', 0],
    ['recursionLimit', 2.5],
  ])('resume %s %s: InvalidOptionError, the interrupted thread unchanged', async (option, value) => {
    const { app } = appOn();
    await app.run({ thread: 't' });
    await refused(app, 't', option, () => app.resume({ thread: 't', input: { note: 'ok' }, [option]: value } as never));
    // Still waiting for its answer, which a valid call gives.
    expect((await app.resume({ thread: 't', input: { note: 'ok' }, actor: 'ana', recursionLimit: 1 })).status).toBe('completed');
  });
});

describe('fork options', () => {
  it.each<[string, unknown]>([
    ['seq', -1],
    ['seq', 1.5],
    ['seq', '1'],
    ['seq', Number.NaN],
    ['seq', undefined],
    ['patch', 5],
    ['patch', []],
    ['patch', null],
    ['actor', 5],
    ['onBusy', 'sometimes'],
  ])('fork %s %s: InvalidOptionError, the thread unchanged (its lease not even taken)', async (option, value) => {
    const { app } = appOn();
    await app.run({ thread: 't' });
    await refused(app, 't', option, () => app.fork({ thread: 't', seq: 0, [option]: value } as never));
  });

  it('fork from seq 0 works', async () => {
    const { app } = appOn();
    await app.run({ thread: 't' });
    const forked = await app.fork({ thread: 't', seq: 0, patch: { n: 10 }, actor: 'ana' });
    expect(forked.state.n).toBe(10);
    expect((await app.run({ thread: 't' })).state.n).toBe(11);
  });
});

describe('read options', () => {
  it.each<[string, unknown]>([
    ['ns', 5],
    ['ns', null],
    ['ns', ['']],
  ])('getState, stateAt and history with %s %s: InvalidOptionError', async (option, value) => {
    const { app } = appOn();
    await app.run({ thread: 't' });
    await refused(app, 't', option, () => app.getState({ thread: 't', [option]: value } as never));
    await refused(app, 't', option, () => app.stateAt({ thread: 't', seq: 0, [option]: value } as never));
    await refused(app, 't', option, () => app.history({ thread: 't', [option]: value } as never));
  });

  it('seq, from and to out of range: InvalidOptionError naming each; seq 0, from 0 and ns "" work', async () => {
    const { app } = appOn();
    await app.run({ thread: 't' });
    await refused(app, 't', 'seq', () => app.stateAt({ thread: 't', seq: -1 }));
    await refused(app, 't', 'from', () => app.replay({ thread: 't', from: 0.5 }));
    await refused(app, 't', 'to', () => app.replay({ thread: 't', from: 0, to: -2 }));
    expect((await app.stateAt({ thread: 't', seq: 0, ns: '' })).n).toBe(0);
    expect((await app.getState({ thread: 't', ns: '' })).n).toBe(1);
    expect((await app.history({ thread: 't', ns: '' })).length).toBeGreaterThan(0);
    expect((await app.replay({ thread: 't', from: 0 })).steps.length).toBeGreaterThan(0);
  });
});

describe('compile options', () => {
  it.each<[string, unknown]>([
    ...NOT_LIMITS.map((v): [string, unknown] => ['snapshotEvery', v]),
    ...NOT_LIMITS.map((v): [string, unknown] => ['recursionLimit', v]),
    ...NOT_COUNTS.map((v): [string, unknown] => ['leaseMs', v]),
    ['name', 5],
    ['tracing', 'off'],
    ['onEvent', 'log'],
    ['retry', 3],
    ['artifacts', 'dir'],
  ])('compile %s %s: InvalidOptionError naming it', (option, value) => {
    let error: unknown;
    try {
      appOn({ [option]: value });
    } catch (e) {
      error = e;
    }
    expect(InvalidOptionError.is(error), String(error)).toBe(true);
    expect((error as Error).message).toMatch(new RegExp(`^\\[cairn\\] compile: ${option} must be`));
  });

  it('edge values work: snapshotEvery 1, recursionLimit 1, leaseMs 1000, name ""', async () => {
    const { app } = appOn({ snapshotEvery: 1, recursionLimit: 1, leaseMs: 1000, name: '' });
    expect((await app.run({ thread: 't', recursionLimit: 2 })).status).toBe('interrupted');
    expect((await app.resume({ thread: 't', input: { note: 'ok' } })).state.note).toBe('reviewed 1');
  });

  it.each<[string, unknown, string]>([
    ['maxAttempts 0', { maxAttempts: 0 }, 'retry.maxAttempts must be a whole number of attempts'],
    ['maxAttempts 2.5', { maxAttempts: 2.5 }, 'retry.maxAttempts must be'],
    ['a negative delay', { initialDelayMs: -1 }, 'retry.initialDelayMs must be'],
    ['backoff 0', { backoff: 0 }, 'retry.backoff must be a finite multiplier above 0'],
    ['maxDelayMs NaN', { maxDelayMs: Number.NaN }, 'retry.maxDelayMs must be'],
    ['retryOn not a function', { retryOn: true }, 'retry.retryOn must be a function'],
    ['a misspelt key', { maxAttempt: 5 }, 'retry.maxAttempt is not a retry option (options: maxAttempts, initialDelayMs, backoff, maxDelayMs, retryOn)'],
    ['not an object', 3, 'retry must be an object'],
  ])('a retry policy with %s is InvalidOptionError, at compile and on a node', (_case, retry, message) => {
    expect(() => appOn({ retry } as Partial<CompileOptions>)).toThrow(message);
    expect(() => appOn({ retry } as Partial<CompileOptions>)).toThrow(InvalidOptionError);
    expect(() => graph(State).node('flaky', () => ({}), { retry } as never)).toThrow(`node "flaky": ${message}`);
  });

  it('a whole retry policy is taken: a node retried up to its maxAttempts', async () => {
    let calls = 0;
    const engine = sqlite(join(dir, `${Math.random()}.db`));
    engines.push(engine);
    const app = graph(State)
      .node('flaky', () => {
        calls++;
        if (calls < 3) throw new Error('transient');
        return { n: calls };
      }, { retry: { maxAttempts: 3, initialDelayMs: 0, backoff: 1, maxDelayMs: 0, retryOn: () => true } })
      .edge(START, 'flaky')
      .edge('flaky', END)
      .compile({ engine, retry: { maxAttempts: Number.POSITIVE_INFINITY } });
    expect((await app.run({ thread: 'r' })).state.n).toBe(3);
  });

  it('Infinity is no limit: snapshotEvery and recursionLimit take it, leaseMs does not', async () => {
    const { app } = appOn({ snapshotEvery: Number.POSITIVE_INFINITY, recursionLimit: Number.POSITIVE_INFINITY });
    expect((await app.run({ thread: 't', recursionLimit: Number.POSITIVE_INFINITY })).status).toBe('interrupted');
    expect((await app.resume({ thread: 't', input: { note: 'ok' } })).state.note).toBe('reviewed 1');
  });
});
