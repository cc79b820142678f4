/**
 * A call that fails before it can commit changes nothing:
 * - a new thread's rejected input (invalid, unencodable, too deep) leaves no thread
 *   behind: not listed, not readable, and the same call with good input starts it;
 * - a resume whose thread would next run a node this graph does not have is
 *   GraphMismatchError naming the seq and `resume()`; nothing is committed, and the
 *   same call with `nodeMapping` goes on;
 * - an answered `interruptBefore` of a node renamed since is cleared under its new
 *   name: the person does not answer twice.
 * And field names are data: `constructor`, `toString`, `valueOf` and
 * `hasOwnProperty` work as fields; `__proto__` is refused by defineState.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { CairnError, GraphMismatchError, SchemaDefinitionError, StateValidationError, ValueTooDeepError } from '../../src/errors.js';
import { MAX_VALUE_DEPTH } from '../../src/codec/tagged-json.js';
import { MAX_SET_VALUE_DEPTH } from '../../src/runtime/merge.js';
import { defineState } from '../../src/state/schema.js';
import { field } from '../../src/state/fields.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import type { Engine } from '../../src/contracts/engine.js';
import { caught, ENGINES, useEngine } from './engines.js';

const State = defineState({
  fields: {
    topic: field.model(z.string(), { default: '' }),
    extra: field.model(z.unknown().optional()),
    approved: field.model(z.boolean(), { default: false }),
    log: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
  },
});

function deep(levels: number): unknown {
  let value: unknown = 'bottom';
  for (let i = 0; i < levels; i++) value = { inner: value };
  return value;
}

/** draft → review (paused before) → publish. */
function reviewApp(engine: Engine, reviewName = 'review') {
  return graph(State)
    .node('draft', (s) => ({ log: [`draft ${s.topic}`] }))
    .node(reviewName, (s) => ({ log: [`${reviewName} approved=${s.approved}`] }), { interruptBefore: true })
    .node('publish', () => ({ log: ['published'] }))
    .edge(START, 'draft')
    .edge('draft', reviewName as 'review')
    .edge(reviewName as 'review', 'publish')
    .edge('publish', END)
    .compile({ engine, retry: { maxAttempts: 1 } });
}

describe.each(ENGINES)('rejected calls change nothing on %s', (name) => {
  const ctx = useEngine(name);

  it.each([
    ['invalid', { topic: 42 }, StateValidationError.code],
    ['unencodable', { extra: () => 1 }, 'ERR_UNENCODABLE'],
  ] as const)('a new thread whose input is %s leaves no thread behind', async (_label, input, code) => {
    const app = reviewApp(ctx.engine);
    const error = await caught(() => app.run({ thread: 'new', input: input as never, metadata: { queue: 'q' } }));
    expect(CairnError.is(error), String(error)).toBe(true);
    expect(error.code).toBe(code);
    expect(await ctx.engine.checkpointer.getThread('new')).toBeNull();
    expect(await app.listThreads()).toEqual([]);
    // The same call with good input starts it as a new thread.
    const started = await app.run({ thread: 'new', input: { topic: 'cairns' } });
    expect(started.status).toBe('interrupted');
    expect((await app.attempts({ thread: 'new' })).attempts.map((a) => a.attempt)).toEqual([1]);
  });

  it('a new thread whose input nests deeper than any value can be stored leaves no thread behind', async () => {
    const app = reviewApp(ctx.engine);
    const error = await caught(() => app.run({ thread: 'deep', input: { extra: deep(10_000) } }));
    expect(ValueTooDeepError.is(error), String(error)).toBe(true);
    expect(await ctx.engine.checkpointer.getThread('deep')).toBeNull();
    expect(await app.listThreads()).toEqual([]);
  });

  it('a replaced field may nest MAX_SET_VALUE_DEPTH levels (it is stored inside its position), an appended item MAX_VALUE_DEPTH; one more is refused at the write, naming the field', async () => {
    const Deep = defineState({ fields: { tree: field.model(z.unknown().optional()), items: field.model(z.array(z.unknown()), { reduce: 'append', default: [] }) } });
    let write: Record<string, unknown> = {};
    const app = graph(Deep)
      .node('write', () => write)
      .edge(START, 'write')
      .edge('write', END)
      .compile({ engine: ctx.engine, snapshotEvery: 1 });
    // deep(n) nests n objects around a string: a value of depth n.
    write = { tree: deep(MAX_SET_VALUE_DEPTH), items: [deep(MAX_VALUE_DEPTH)] };
    await app.run({ thread: 'ok' });
    const again = graph(Deep).node('write', () => ({})).edge(START, 'write').edge('write', END).compile({ engine: ctx.reopen() });
    expect(await again.getState({ thread: 'ok' })).toEqual({ tree: deep(MAX_SET_VALUE_DEPTH), items: [deep(MAX_VALUE_DEPTH)] });
    expect((await again.verify({ thread: 'ok' })).ok).toBe(true);

    write = { tree: deep(MAX_SET_VALUE_DEPTH + 1) };
    const tooDeep = await caught(() => app.run({ thread: 'ok', input: {} }));
    expect(ValueTooDeepError.is(tooDeep), String(tooDeep)).toBe(true);
    expect(tooDeep.message).toContain('tree');
    expect(tooDeep.message).toContain('thread ok');
    write = { items: [deep(MAX_VALUE_DEPTH + 1)] };
    expect((await caught(() => app.run({ thread: 'ok' }))).code).toBe('ERR_VALUE_TOO_DEEP');
    expect(await again.getState({ thread: 'ok' })).toEqual({ tree: deep(MAX_SET_VALUE_DEPTH), items: [deep(MAX_VALUE_DEPTH)] });
  });

  it('rejected input on an existing completed thread leaves it completed, as it was', async () => {
    const app = graph(State)
      .node('only', (s) => ({ log: [s.topic] }))
      .edge(START, 'only')
      .edge('only', END)
      .compile({ engine: ctx.engine });
    await app.run({ thread: 'done', input: { topic: 'first' } });
    const before = await app.getThread({ thread: 'done' });
    await caught(() => app.run({ thread: 'done', input: { topic: 7 as never } }));
    expect(await app.getThread({ thread: 'done' })).toEqual(before);
  });

  it('resume on a thread whose next node was renamed: GraphMismatchError naming the seq and resume(), nothing committed; with nodeMapping it goes on and the pause is not asked again', async () => {
    const v1 = reviewApp(ctx.engine);
    const paused = await v1.run({ thread: 't', input: { topic: 'cairns' } });
    expect(paused.status).toBe('interrupted');
    const before = await ctx.engine.checkpointer.listPositions('t', '');

    // The new code calls the paused node `approve`.
    const v2 = reviewApp(ctx.reopen(), 'approve');
    const error = await caught(() => v2.resume({ thread: 't', input: { approved: true }, actor: 'alice' }));
    expect(GraphMismatchError.is(error), String(error)).toBe(true);
    expect(error.message).toContain(`seq ${paused.seq}`);
    expect(error.message).toContain('nodeMapping to resume()');
    expect(await ctx.engine.checkpointer.listPositions('t', '')).toEqual(before);
    expect((await v2.getThread({ thread: 't' }))!.status).toBe('interrupted');

    const done = await v2.resume({ thread: 't', input: { approved: true }, actor: 'alice', nodeMapping: { review: 'approve' } });
    expect(done.status).toBe('completed');
    expect(done.state.log).toEqual(['draft cairns', 'approve approved=true', 'published']);
  });

  it('run() on a thread whose next node was renamed: GraphMismatchError naming run(), and the thread keeps its status', async () => {
    const crashing = graph(State)
      .node('draft', () => {
        throw new Error('model down');
      })
      .edge(START, 'draft')
      .edge('draft', END)
      .compile({ engine: ctx.engine, retry: { maxAttempts: 1 } });
    await caught(() => crashing.run({ thread: 'f', input: { topic: 'x' } }));
    const failed = await crashing.getThread({ thread: 'f' });
    expect(failed!.status).toBe('failed');
    const renamed = graph(State)
      .node('write', () => ({ log: ['written'] }))
      .edge(START, 'write')
      .edge('write', END)
      .compile({ engine: ctx.engine });
    const error = await caught(() => renamed.run({ thread: 'f' }));
    expect(GraphMismatchError.is(error)).toBe(true);
    expect(error.message).toContain('nodeMapping to run()');
    expect(await renamed.getThread({ thread: 'f' })).toEqual(failed);
    expect((await renamed.run({ thread: 'f', nodeMapping: { draft: 'write' } })).state.log).toEqual(['written']);
  });
});

describe.each(ENGINES)('field names are data on %s', (name) => {
  const ctx = useEngine(name);

  it('fields named constructor, toString, valueOf and hasOwnProperty are stored, merged, snapshotted and read back', async () => {
    const Names = defineState({
      fields: {
        constructor: field.model(z.string(), { default: 'c0' }),
        toString: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
        valueOf: field.model(z.number(), { default: 0 }),
        hasOwnProperty: field.model(z.boolean().optional()),
      },
      derived: { double: (s) => s.valueOf * 2 },
    });
    const app = graph(Names)
      .node('a', (s) => ({ constructor: `c${s.valueOf + 1}`, toString: ['t'], valueOf: s.valueOf + 1, hasOwnProperty: true }))
      .edge(START, 'a')
      .conditionalEdge('a', (s) => (s.valueOf < 3 ? 'a' : END))
      .compile({ engine: ctx.engine, snapshotEvery: 2 });
    const result = await app.run({ thread: 'n' });
    expect(result.state).toEqual({ constructor: 'c3', toString: ['t', 't', 't'], valueOf: 3, hasOwnProperty: true, double: 6 });
    expect(await app.getState({ thread: 'n' })).toEqual(result.state);
    expect((await app.stateAt({ thread: 'n', seq: 1 })).constructor).toBe('c1');
    expect((await app.verify({ thread: 'n' })).ok).toBe(true);
  });

  it('__proto__ cannot name a field or a derived value: SchemaDefinitionError says to rename it', () => {
    for (const make of [
      () => defineState({ fields: JSON.parse('{"__proto__": 1}') as never }),
      () => defineState({ fields: { a: field.model(z.string()) }, derived: JSON.parse('{"__proto__": 1}') as never }),
    ]) {
      let error: unknown;
      try {
        make();
      } catch (e) {
        error = e;
      }
      expect(SchemaDefinitionError.is(error), String(error)).toBe(true);
      expect(String(error)).toMatch(/__proto__.*rename/);
    }
  });
});
