/**
 * Code changed under stored threads never hands wrong data to a node. Each schema
 * version records what each field is (role, reducer, a fingerprint of its JSON
 * Schema) on the positions and snapshots that start it; a load at the same version
 * by code that says otherwise is SchemaDriftError (naming thread, seq, field and
 * version, and the fix), whether it is a run, a resume, getState or stateAt, from
 * the log or from a snapshot. A version bump with an upcaster reads correctly.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { SchemaDriftError } from '../../src/errors.js';
import { defineState } from '../../src/state/schema.js';
import { field } from '../../src/state/fields.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import type { Engine } from '../../src/contracts/engine.js';
import type { StateSchema } from '../../src/state/schema.js';
import { caught, ENGINES, useEngine } from '../runtime/engines.js';

const fast = { maxAttempts: 1, initialDelayMs: 0 };

/** A two-node graph over `schema`: `write` writes `value`, then it pauses before `finish` (which writes `last`). */
function app<S extends StateSchema>(engine: Engine, schema: S, value: unknown, last: unknown, snapshotEvery = 50) {
  return graph(schema)
    .node('write', () => ({ tags: value }) as never)
    .node('finish', () => ({ tags: last }) as never, { interruptBefore: true })
    .edge(START, 'write')
    .edge('write', 'finish')
    .edge('finish', END)
    .compile({ engine, retry: fast, snapshotEvery });
}

const StringTags = defineState({ fields: { tags: field.model(z.string().optional()) } });
const ArrayTags = defineState({ fields: { tags: field.model(z.array(z.string()).optional()) } });
const ReplaceList = defineState({ fields: { tags: field.model(z.array(z.string()), { default: [] }) } });
const AppendList = defineState({ fields: { tags: field.model(z.array(z.string()), { reduce: 'append', default: [] }) } });

async function expectDrift(load: () => Promise<unknown>, detail: RegExp): Promise<SchemaDriftError> {
  const error = await caught(load);
  expect(SchemaDriftError.is(error), String(error)).toBe(true);
  const drift = error as SchemaDriftError;
  expect(drift.code).toBe('ERR_SCHEMA_DRIFT');
  expect(drift.field).toBe('tags');
  expect(drift.version).toBe(1);
  expect(drift.message).toContain('thread t');
  expect(drift.message).toMatch(/seq \d+/);
  expect(drift.message).toMatch(detail);
  expect(drift.message).toMatch(/Bump defineState\(\{ version \}\) to 2 and add upcast\[1\]/);
  return drift;
}

describe.each(ENGINES)('schema drift on %s', (name) => {
  const ctx = useEngine(name);

  it("a field's type changed (string → string[]) at the same version: every read and every run refuses the stored value", async () => {
    await app(ctx.engine, StringTags, 'urgent', 'done').run({ thread: 't' });
    const before = await ctx.engine.checkpointer.listPositions('t', '');
    const drifted = app(ctx.reopen(), ArrayTags, ['urgent'], ['done']);
    for (const read of [() => drifted.getState({ thread: 't' }), () => drifted.stateAt({ thread: 't', seq: 1 }), () => drifted.resume({ thread: 't' }), () => drifted.run({ thread: 't', input: {} })]) {
      await expectDrift(read, /schema changed/);
    }
    // Nothing was written by the refused calls.
    expect(await ctx.engine.checkpointer.listPositions('t', '')).toEqual(before);
    expect((await ctx.engine.checkpointer.getThread('t'))!.status).toBe('interrupted');
  });

  it("a field's reducer changed (replace → append) at the same version: SchemaDriftError, never a list that loses items on re-read", async () => {
    await app(ctx.engine, ReplaceList, ['t1', 't2'], ['t3']).run({ thread: 't' });
    const drifted = app(ctx.reopen(), AppendList, ['t1', 't2'], ['t3']);
    await expectDrift(() => drifted.resume({ thread: 't' }), /reducer was "replace" .* is "append" now/);
    await expectDrift(() => drifted.getState({ thread: 't' }), /reducer/);
  });

  it("append → replace at the same version, read through a snapshot: SchemaDriftError", async () => {
    await app(ctx.engine, AppendList, ['prep'], ['finish'], 1).run({ thread: 't' });
    const drifted = app(ctx.reopen(), ReplaceList, ['prep'], ['finish'], 1);
    await expectDrift(() => drifted.getState({ thread: 't' }), /reducer was "append" .* is "replace" now/);
  });

  it('a version bump with an upcaster reads the old positions correctly, and the run goes on', async () => {
    await app(ctx.engine, StringTags, 'urgent', 'done').run({ thread: 't' });
    const V2 = defineState({
      version: 2,
      fields: { tags: field.model(z.array(z.string()), { reduce: 'append', default: [] }) },
      upcast: { 1: ({ tags, ...rest }) => ({ ...rest, tags: typeof tags === 'string' ? [tags] : [] }) },
    });
    const bumped = app(ctx.reopen(), V2, ['urgent'], ['done']);
    expect((await bumped.getState({ thread: 't' })).tags).toEqual(['urgent']);
    const done = await bumped.resume({ thread: 't' });
    expect(done.status).toBe('completed');
    expect(done.state.tags).toEqual(['urgent', 'done']);
    expect((await bumped.getState({ thread: 't' })).tags).toEqual(['urgent', 'done']);
    expect((await bumped.stateAt({ thread: 't', seq: 1 })).tags).toEqual(['urgent']);
  });

  it('changes that do not change what is stored are not drift: a new field with a default, a description, a dropped field', async () => {
    const V1 = defineState({ fields: { tags: field.model(z.string().optional()), old: field.model(z.number(), { default: 1 }) } });
    await app(ctx.engine, V1, 'urgent', 'done').run({ thread: 't' });
    const Later = defineState({
      fields: { tags: field.model(z.string().describe('the tags').optional()), added: field.model(z.string(), { default: 'x' }) },
    });
    const later = app(ctx.reopen(), Later, 'urgent', 'done');
    expect(await later.getState({ thread: 't' })).toEqual({ tags: 'urgent', added: 'x' });
    expect((await later.resume({ thread: 't' })).state.tags).toBe('done');
  });

  it('a stored field the schema no longer declares is not in the state nodes and callers see; the positions that stored it keep it', async () => {
    const steps = <S extends StateSchema>(schema: S, engine: Engine, seen: unknown[]) =>
      graph(schema)
        .node('step', (s) => {
          seen.push(Object.keys(s).sort());
          return { n: (s as unknown as { n: number }).n + 1 } as never;
        })
        .edge(START, 'step')
        .conditionalEdge('step', (s) => ((s as unknown as { n: number }).n % 3 === 0 ? END : 'step'))
        .compile({ engine, retry: fast, snapshotEvery: 1 });
    const WithNote = defineState({ fields: { n: field.model(z.number(), { default: 0 }), note: field.model(z.string(), { default: '' }) } });
    const first = graph(WithNote)
      .node('write', () => ({ note: 'kept' }))
      .edge(START, 'write')
      .edge('write', END)
      .compile({ engine: ctx.engine, retry: fast });
    await first.run({ thread: 'dropped' });

    // The same version without `note`: not drift, and not in the state either.
    const Without = defineState({ fields: { n: field.model(z.number(), { default: 0 }) } });
    const seen: unknown[] = [];
    const without = steps(Without, ctx.reopen(), seen);
    const done = await without.run({ thread: 'dropped', input: { n: 0 } });
    expect(done.state).toEqual({ n: 3 });
    expect(seen).toEqual([['n'], ['n'], ['n']]);
    expect(await without.getState({ thread: 'dropped' })).toEqual({ n: 3 });
    expect(await without.stateAt({ thread: 'dropped', seq: 1 })).toEqual({ n: 0 });
    // The positions written before keep it: code that declares it reads it there.
    expect(await steps(WithNote, ctx.reopen(), []).stateAt({ thread: 'dropped', seq: 1 })).toEqual({ n: 0, note: 'kept' });
  });
});

describe('field fingerprints', () => {
  it('name role, reducer and the JSON Schema of each field, without annotations', () => {
    const table = defineState({
      fields: {
        a: field.model(z.string().describe('x')),
        b: field.model(z.array(z.number()), { reduce: 'append', default: [] }),
        c: field.model(z.number(), { reduce: (x: number, y: number) => x + y, default: 0 }),
        d: field.runtime(z.number().default(3)),
        e: field.model(z.date().optional()),
      },
    }).fieldTable();
    expect(table.a).toMatch(/^model replace [0-9a-f]{16}$/);
    expect(table.b).toMatch(/^model append [0-9a-f]{16}$/);
    expect(table.c).toMatch(/^model custom [0-9a-f]{16}$/);
    expect(table.d).toMatch(/^runtime - [0-9a-f]{16}$/);
    expect(table.e).toMatch(/^model replace [0-9a-f]{16}$/);
    expect(table.a!.split(' ')[2]).toBe(defineState({ fields: { a: field.model(z.string()) } }).fieldTable().a!.split(' ')[2]);
    expect(table.a!.split(' ')[2]).not.toBe(defineState({ fields: { a: field.model(z.number()) } }).fieldTable().a!.split(' ')[2]);
  });

  it('a validator that cannot describe itself is fingerprinted "?": role and reducer are still compared', () => {
    const opaque = { '~standard': { version: 1, vendor: 'handmade', validate: (value: unknown) => ({ value }) } } as const;
    const table = defineState({ fields: { a: field.model(opaque) } }).fieldTable();
    expect(table.a).toBe('model replace ?');
  });
});
