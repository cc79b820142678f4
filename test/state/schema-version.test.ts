/**
 * Schema versions: a thread written under version 1 of a state is read
 * under version 2 through read-time upcasters, its stored rows untouched; the
 * first position a v2 run writes is a `rebase` (every field stored in full) and
 * loading works across it; a field the stored state lacks reads as its default;
 * versions outside the compatibility window raise SchemaTooOldError /
 * SchemaFromFutureError; an inconsistent definition raises SchemaDefinitionError.
 * On SQLite, v2 opens the file through a new engine (a new process would do the same).
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { SchemaDefinitionError, SchemaFromFutureError, SchemaTooOldError, UpcastError } from '../../src/errors.js';
import { defineState } from '../../src/state/schema.js';
import { field } from '../../src/state/fields.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import type { Engine } from '../../src/contracts/engine.js';
import { bodies, caught, ENGINES, rawPositions, snapshots, useEngine } from '../runtime/engines.js';

const fast = { maxAttempts: 1, initialDelayMs: 0 };

const V1 = defineState({
  version: 1,
  fields: {
    name: field.model(z.string(), { default: '' }),
    n: field.model(z.number(), { default: 0 }),
    log: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
  },
});

/** v2 renames `name` to `fullName` and adds `color` (default 'blue'). */
const V2 = defineState({
  version: 2,
  fields: {
    fullName: field.model(z.string(), { default: '' }),
    n: field.model(z.number(), { default: 0 }),
    log: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
    color: field.model(z.string(), { default: 'blue' }),
  },
  upcast: {
    1: ({ name, ...rest }) => ({ ...rest, ...(name !== undefined ? { fullName: name } : {}) }),
  },
});

function v1App(engine: Engine, options: { failB?: boolean; snapshotEvery?: number } = {}) {
  return graph(V1)
    .node('a', () => ({ name: 'alice', n: 1, log: ['v1'] }))
    .node('b', () => {
      if (options.failB) throw new Error('b is broken in v1');
      return { log: ['v1-b'] };
    })
    .edge(START, 'a')
    .edge('a', 'b')
    .edge('b', END)
    .compile({ engine, retry: fast, ...(options.snapshotEvery ? { snapshotEvery: options.snapshotEvery } : {}) });
}

function v2App(engine: Engine) {
  return graph(V2)
    .node('a', (s) => ({ n: s.n + 10, log: [`v2 saw ${s.fullName}/${s.color}`] }))
    .node('b', () => ({ log: ['v2-b'] }))
    .edge(START, 'a')
    .edge('a', 'b')
    .edge('b', END)
    .compile({ engine, retry: fast });
}

describe.each(ENGINES)('schema versions on %s', (name) => {
  const ctx = useEngine(name);

  it('a v1 thread loads as v2 (renamed field upcast, new field at its default) and its stored rows are untouched', async () => {
    await v1App(ctx.engine, { snapshotEvery: 1 }).run({ thread: 't' });
    const rowsBefore = await rawPositions(ctx.engine, 't');
    const snapsBefore = await snapshots(ctx.engine, 't');
    expect(rowsBefore.every((r) => r.schemaVersion === 1)).toBe(true);

    const engine2 = ctx.reopen();
    const app2 = v2App(engine2);
    const state = await app2.getState({ thread: 't' });
    expect(state).toEqual({ fullName: 'alice', n: 1, log: ['v1', 'v1-b'], color: 'blue' });
    expect(state).not.toHaveProperty('name');
    expect(await app2.stateAt({ thread: 't', seq: 1 })).toEqual({ fullName: 'alice', n: 1, log: ['v1'], color: 'blue' });
    expect(await app2.stateAt({ thread: 't', seq: 0 })).toEqual({ fullName: '', n: 0, log: [], color: 'blue' });
    await app2.history({ thread: 't' });

    expect(await rawPositions(engine2, 't')).toEqual(rowsBefore);
    expect(await snapshots(engine2, 't')).toEqual(snapsBefore);
    // Still readable by v1 code: nothing was rewritten.
    expect(await v1App(engine2).getState({ thread: 't' })).toEqual({ name: 'alice', n: 1, log: ['v1', 'v1-b'] });
  });

  it('a new v2 run on a v1 thread writes a rebase position first, and every position loads afterwards', async () => {
    await v1App(ctx.engine).run({ thread: 't' });
    const v1Rows = await rawPositions(ctx.engine, 't');
    const engine2 = ctx.reopen();
    const app2 = v2App(engine2);
    const result = await app2.run({ thread: 't', input: { color: 'red' } });
    expect(result.status).toBe('completed');
    expect(result.state).toEqual({ fullName: 'alice', n: 11, log: ['v1', 'v1-b', 'v2 saw alice/red', 'v2-b'], color: 'red' });

    const rows = await rawPositions(engine2, 't');
    expect(rows.slice(0, v1Rows.length)).toEqual(v1Rows);
    const all = await bodies(engine2, 't');
    const firstV2 = v1Rows.length;
    expect(rows[firstV2]!.schemaVersion).toBe(2);
    expect(all[firstV2]!.kind).toBe('input');
    expect(all[firstV2]!.rebase).toBe(true);
    // The rebase stores every field in full, so nothing older is needed to read past it.
    expect(Object.keys(all[firstV2]!.changes).sort()).toEqual(['color', 'fullName', 'log', 'n']);
    expect(all[firstV2]!.changes.log).toEqual({ reset: 2 });
    for (const body of all.slice(firstV2 + 1)) expect(body.rebase).toBeUndefined();
    expect((await app2.history({ thread: 't' })).find((p) => p.seq === firstV2)).toMatchObject({ schemaVersion: 2, kind: 'input', changes: { log: 'reset:2' } });

    const fresh = v2App(ctx.reopen());
    expect(await fresh.getState({ thread: 't' })).toEqual(result.state);
    expect(await fresh.stateAt({ thread: 't', seq: firstV2 })).toEqual({ fullName: 'alice', n: 1, log: ['v1', 'v1-b'], color: 'red' });
    expect((await fresh.stateAt({ thread: 't', seq: 1 })).fullName).toBe('alice');
    expect((await fresh.verify({ thread: 't' })).ok).toBe(true);
  });

  it('a failed v1 run resumed by v2 code continues, its first step is a rebase', async () => {
    await expect(v1App(ctx.engine, { failB: true }).run({ thread: 't' })).rejects.toMatchObject({ code: 'ERR_NODE_FAILED' });
    const head = (await ctx.engine.checkpointer.getThread('t'))!.head!;
    const app2 = v2App(ctx.reopen());
    const result = await app2.run({ thread: 't' });
    expect(result.state).toEqual({ fullName: 'alice', n: 1, log: ['v1', 'v2-b'], color: 'blue' });
    const all = await bodies(app2.engine, 't');
    expect(all[head + 1]!.kind).toBe('step');
    expect(all[head + 1]!.nodes).toEqual(['b']);
    expect(all[head + 1]!.rebase).toBe(true);
    expect(await v2App(ctx.reopen()).getState({ thread: 't' })).toEqual(result.state);
  });

  it('SchemaTooOldError when the stored version is below oldestReadableVersion, naming both versions; nothing is written', async () => {
    await v1App(ctx.engine).run({ thread: 't' });
    const rows = await rawPositions(ctx.engine, 't');
    const V3 = defineState({
      version: 3,
      oldestReadableVersion: 2,
      fields: { fullName: field.model(z.string(), { default: '' }) },
      upcast: { 2: (s) => s },
    });
    const app3 = graph(V3).node('a', () => ({})).edge(START, 'a').edge('a', END).compile({ engine: ctx.reopen(), retry: fast });
    const error = (await caught(() => app3.getState({ thread: 't' }))) as SchemaTooOldError;
    expect(SchemaTooOldError.is(error)).toBe(true);
    expect(error.code).toBe('ERR_SCHEMA_TOO_OLD');
    expect(error.storedVersion).toBe(1);
    expect(error.oldestReadableVersion).toBe(2);
    expect(error.message).toMatch(/version 1\b/);
    expect(error.message).toMatch(/version 2\b/);
    await expect(app3.run({ thread: 't', input: { fullName: 'x' } })).rejects.toMatchObject({ code: 'ERR_SCHEMA_TOO_OLD' });
    expect(await rawPositions(app3.engine, 't')).toEqual(rows);
  });

  it('SchemaFromFutureError when the stored version is above the code version', async () => {
    await v2App(ctx.engine).run({ thread: 't' });
    const old = v1App(ctx.reopen());
    const error = (await caught(() => old.getState({ thread: 't' }))) as SchemaFromFutureError;
    expect(SchemaFromFutureError.is(error)).toBe(true);
    expect(error.code).toBe('ERR_SCHEMA_FROM_FUTURE');
    expect(error.storedVersion).toBe(2);
    expect(error.currentVersion).toBe(1);
    await expect(old.run({ thread: 't' })).rejects.toMatchObject({ code: 'ERR_SCHEMA_FROM_FUTURE' });
  });

  it('an upcaster that throws, or returns something that is not a state, is UpcastError naming the version; nothing is written', async () => {
    await v1App(ctx.engine).run({ thread: 't' });
    const before = await bodies(ctx.engine, 't');
    const broken = (upcast: (s: Record<string, unknown>) => unknown) =>
      graph(defineState({ version: 2, fields: V2.fields, upcast: { 1: upcast as (s: Record<string, unknown>) => Record<string, unknown> } }))
        .node('a', () => ({}))
        .edge(START, 'a')
        .edge('a', END)
        .compile({ engine: ctx.reopen(), retry: fast });
    const threw = (await caught(() => broken(() => { throw new Error('no name here'); }).getState({ thread: 't' }))) as UpcastError;
    expect(threw).toBeInstanceOf(UpcastError);
    expect(threw.code).toBe('ERR_UPCAST');
    expect(threw.fromVersion).toBe(1);
    expect(threw.message).toMatch(/upcast\[1\].*threw: no name here/);
    expect((threw.cause as Error).message).toBe('no name here');
    for (const result of [null, 42, [1], Promise.resolve({})]) {
      await expect(broken(() => result).getState({ thread: 't' })).rejects.toThrow(UpcastError);
    }
    await expect(broken(() => { throw new Error('x'); }).run({ thread: 't' })).rejects.toThrow(UpcastError);
    expect(await bodies(ctx.engine, 't')).toEqual(before);
  });

  it('an upcast state the current schema refuses is UpcastError naming the field and both versions, for a read and a run; nothing is written', async () => {
    await v1App(ctx.engine).run({ thread: 't' });
    const before = await bodies(ctx.engine, 't');
    const appOf = (fields: Parameters<typeof defineState>[0]['fields'], upcast: (s: Record<string, unknown>) => Record<string, unknown>) =>
      graph(defineState({ version: 2, fields, upcast: { 1: upcast } }))
        .node('a', () => ({}))
        .edge(START, 'a')
        .edge('a', END)
        .compile({ engine: ctx.reopen(), retry: fast });

    // An upcaster that writes a field of the wrong type.
    const wrongType = appOf(V2.fields, (s) => ({ ...s, fullName: 42 }));
    const error = (await caught(() => wrongType.getState({ thread: 't' }))) as UpcastError;
    expect(UpcastError.is(error), String(error)).toBe(true);
    expect(error.code).toBe('ERR_UPCAST');
    expect(error.field).toBe('fullName');
    expect(error.fromVersion).toBe(1);
    expect(error.toVersion).toBe(2);
    expect(error.message).toContain('field "fullName"');
    expect(error.message).toMatch(/schema version 1 to 2/);
    await expect(wrongType.run({ thread: 't', input: { color: 'red' } as never })).rejects.toMatchObject({ code: 'ERR_UPCAST', field: 'fullName' });

    // A field whose type changed at the new version, which no upcaster converted.
    const unconverted = appOf({ ...V2.fields, n: field.model(z.string(), { default: '' }) }, (s) => ({ ...s, fullName: s.name }));
    const stale = (await caught(() => unconverted.stateAt({ thread: 't', seq: 1 }))) as UpcastError;
    expect(UpcastError.is(stale), String(stale)).toBe(true);
    expect(stale.field).toBe('n');
    expect(stale.message).toContain('field "n"');
    expect(await bodies(ctx.engine, 't')).toEqual(before);
  });
});

describe('schema definition errors', () => {
  const fields = { x: field.model(z.number(), { default: 0 }) };

  it('a gap in the upcaster chain below oldestReadableVersion is a SchemaDefinitionError', () => {
    let error: unknown;
    try {
      defineState({ version: 3, oldestReadableVersion: 1, fields, upcast: { 1: (s) => s } });
    } catch (e) {
      error = e;
    }
    expect(SchemaDefinitionError.is(error)).toBe(true);
    expect((error as Error).message).toContain('upcast[2]');
  });

  it('an upcaster stranded below a gap (upcast[1] without upcast[2], version 3) is a SchemaDefinitionError', () => {
    expect(() => defineState({ version: 3, fields, upcast: { 1: (s) => s } })).toThrow(SchemaDefinitionError);
  });

  it('a complete chain reaches back to version 1 by default', () => {
    const S = defineState({ version: 3, fields, upcast: { 1: (s) => s, 2: (s) => s } });
    expect(S.oldestReadableVersion).toBe(1);
  });

  it.each([
    ['version 0', () => defineState({ version: 0, fields })],
    ['a fractional version', () => defineState({ version: 1.5, fields })],
    ['oldestReadableVersion above version', () => defineState({ version: 2, oldestReadableVersion: 3, fields, upcast: { 1: (s) => s } })],
    ['a derived field named like a stored field', () => defineState({ fields, derived: { x: () => 1 } as never })],
  ])('%s is a SchemaDefinitionError', (_what, define) => {
    expect(define).toThrow(SchemaDefinitionError);
  });
});
