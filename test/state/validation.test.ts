/**
 * Writes are validated (through zod, a Standard Schema validator) and encoded
 * before anything is persisted: an invalid write raises
 * StateValidationError naming the field; the stored value is the schema's output
 * (transforms and defaults applied); a field over `maxFieldBytes` raises
 * StateTooLargeError pointing to artifacts; a value that cannot be encoded
 * (function, class instance, cycle) raises UnencodableValueError. In every
 * rejected case the head does not move and no position is written.
 */
import { describe, expect, it } from 'vitest';
import type { StandardSchemaV1 } from '@standard-schema/spec';
import { z } from 'zod';
import { SchemaDefinitionError, StateTooLargeError, StateValidationError, UnencodableValueError } from '../../src/errors.js';
import { defineState } from '../../src/state/schema.js';
import { field } from '../../src/state/fields.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import { decode } from '../../src/codec/tagged-json.js';
import { bodies, caught, ENGINES, rawPositions, useEngine } from '../runtime/engines.js';

const fast = { maxAttempts: 3, initialDelayMs: 0 };

describe.each(ENGINES)('validation before persistence on %s', (name) => {
  const ctx = useEngine(name);

  /** START -> ok -> bad -> END: `ok` commits seq 1, `bad` returns `write`. */
  function twoStep<S extends Parameters<typeof graph>[0]>(State: S, write: () => unknown, options: { snapshotEvery?: number } = {}) {
    let badRuns = 0;
    const app = graph(State)
      .node('ok', () => ({}))
      .node('bad', () => {
        badRuns++;
        return write() as never;
      })
      .edge(START, 'ok')
      .edge('ok', 'bad')
      .edge('bad', END)
      .compile({ engine: ctx.engine, retry: fast, ...options });
    return { app, runs: () => badRuns };
  }

  async function expectNothingCommittedAfter(app: { getThread(options: { thread: string }): Promise<{ head: number | null; status: string } | null> }, thread: string, head: number) {
    const record = await app.getThread({ thread });
    expect(record!.head).toBe(head);
    expect(record!.status).toBe('failed');
    expect((await rawPositions(ctx.engine, thread)).map((p) => p.seq)).toEqual(Array.from({ length: head + 1 }, (_, i) => i));
  }

  describe('StateValidationError', () => {
    const State = defineState({
      fields: {
        count: field.model(z.number().int().min(0), { default: 0 }),
        tags: field.model(z.array(z.string().min(2)), { reduce: 'append', default: [] }),
      },
    });

    it('an invalid replace write names the field, is not retried, and nothing is persisted', async () => {
      const { app, runs } = twoStep(State, () => ({ count: -1 }));
      const error = await caught(() => app.run({ thread: 't' }));
      expect(StateValidationError.is(error)).toBe(true);
      expect(error.code).toBe('ERR_STATE_VALIDATION');
      expect((error as StateValidationError).field).toBe('count');
      expect(error.message).toContain('"count"');
      expect((error as StateValidationError).issues.length).toBeGreaterThan(0);
      expect(runs()).toBe(1);
      await expectNothingCommittedAfter(app, 't', 1);
    });

    it('an invalid append item names the field and the item path; valid items of the same write are not kept either', async () => {
      const { app } = twoStep(State, () => ({ tags: ['fine', 'x'] }));
      const error = (await caught(() => app.run({ thread: 't' }))) as StateValidationError;
      expect(error.code).toBe('ERR_STATE_VALIDATION');
      expect(error.field).toBe('tags');
      expect(error.issues[0]!.path).toEqual([1]);
      await expectNothingCommittedAfter(app, 't', 1);
      expect((await app.getState({ thread: 't' })).tags).toEqual([]);
    });

    it('an append field given a single item instead of an array is a validation error', async () => {
      const { app } = twoStep(State, () => ({ tags: 'solo' }));
      const error = (await caught(() => app.run({ thread: 't' }))) as StateValidationError;
      expect(error.code).toBe('ERR_STATE_VALIDATION');
      expect(error.field).toBe('tags');
      await expectNothingCommittedAfter(app, 't', 1);
    });

    it('invalid run input is rejected before the first position is written', async () => {
      const app = graph(State).node('ok', () => ({})).edge(START, 'ok').edge('ok', END).compile({ engine: ctx.engine, retry: fast });
      const error = (await caught(() => app.run({ thread: 't', input: { count: 1.5 } }))) as StateValidationError;
      expect(error.code).toBe('ERR_STATE_VALIDATION');
      expect(error.field).toBe('count');
      expect((await app.getThread({ thread: 't' }))?.head ?? null).toBeNull();
      expect(await rawPositions(ctx.engine, 't')).toEqual([]);
    });

    it('invalid input on a new thread does not leave a thread that claims to be running', async () => {
      let runs = 0;
      const app = graph(State)
        .node('ok', () => {
          runs++;
        })
        .edge(START, 'ok')
        .edge('ok', END)
        .compile({ engine: ctx.engine, retry: fast });
      await expect(app.run({ thread: 't', input: { count: -1 } })).rejects.toMatchObject({ code: 'ERR_STATE_VALIDATION' });
      expect(runs).toBe(0);
      expect(await ctx.engine.checkpointer.listThreads({ status: 'running' })).toEqual([]);
    });

    it('invalid input to a completed thread leaves its head, and the thread still reads as completed', async () => {
      const app = graph(State).node('ok', () => ({ count: 1 })).edge(START, 'ok').edge('ok', END).compile({ engine: ctx.engine, retry: fast });
      await app.run({ thread: 't' });
      const error = await caught(() => app.run({ thread: 't', input: { count: -5 } }));
      expect(error.code).toBe('ERR_STATE_VALIDATION');
      expect((await app.getThread({ thread: 't' }))!.head).toBe(1);
      expect((await app.getState({ thread: 't' })).count).toBe(1);
      expect((await app.getThread({ thread: 't' }))!.status).not.toBe('running');
      expect((await app.run({ thread: 't' })).status).toBe('completed');
    });
  });

  describe('the stored value is the schema output', () => {
    it('zod transforms and defaults are applied before storing (replace and append)', async () => {
      const Profile = z.object({ name: z.string().transform((s) => s.trim().toUpperCase()), tier: z.string().default('free') });
      const State = defineState({
        fields: {
          profile: field.model(Profile.optional()),
          names: field.model(z.array(z.string().transform((s) => s.toLowerCase())), { reduce: 'append', default: [] }),
        },
      });
      const app = graph(State)
        .node('a', () => ({ profile: { name: '  ada  ' }, names: ['ADA', 'Grace'] }))
        .edge(START, 'a')
        .edge('a', END)
        .compile({ engine: ctx.engine, retry: fast });
      const result = await app.run({ thread: 't' });
      expect(result.state.profile).toEqual({ name: 'ADA', tier: 'free' });
      expect(result.state.names).toEqual(['ada', 'grace']);
      // Read back from storage (a second engine on SQLite), not from the run's memory.
      const again = graph(State).node('a', () => ({})).edge(START, 'a').edge('a', END).compile({ engine: ctx.reopen() });
      expect((await again.getState({ thread: 't' })).profile).toEqual({ name: 'ADA', tier: 'free' });
      expect((await again.getState({ thread: 't' })).names).toEqual(['ada', 'grace']);
      const stored = decode<{ changes: { profile: { set: unknown } } }>((await rawPositions(ctx.engine, 't'))[1]!.body);
      expect(stored.changes.profile.set).toEqual({ name: 'ADA', tier: 'free' });
    });

    it('a field default fills a thread that never wrote it, and defaults are not shared between threads', async () => {
      const State = defineState({ fields: { list: field.model(z.array(z.string()), { default: ['d'] }), n: field.model(z.number(), { default: () => 41 }) } });
      const app = graph(State)
        .node('a', (s) => ({ list: [...s.list, 'x'], n: s.n + 1 }))
        .edge(START, 'a')
        .edge('a', END)
        .compile({ engine: ctx.engine, retry: fast });
      expect((await app.run({ thread: 't1' })).state).toEqual({ list: ['d', 'x'], n: 42 });
      expect((await app.run({ thread: 't2' })).state).toEqual({ list: ['d', 'x'], n: 42 });
      expect((await app.stateAt({ thread: 't2', seq: 0 })).list).toEqual(['d']);
    });
  });

  describe('field defaults', () => {
    const oneNode = <S extends Parameters<typeof graph>[0]>(State: S) => graph(State).node('a', () => ({})).edge(START, 'a').edge('a', END);

    it('a default its schema refuses is SchemaDefinitionError naming the field at compile, before any thread is stored', () => {
      const State = defineState({ fields: { n: field.model(z.number(), { default: 'x' as unknown as number }), ok: field.model(z.string(), { default: '' }) } });
      let error: unknown;
      try {
        oneNode(State).compile({ engine: ctx.engine });
      } catch (e) {
        error = e;
      }
      expect(SchemaDefinitionError.is(error)).toBe(true);
      expect((error as Error).message).toContain('field "n"');
    });

    it("a child graph's bad default is refused when the parent compiles", () => {
      const Child = defineState({ fields: { tags: field.model(z.array(z.string()), { default: [1] as unknown as string[] }) } });
      const Parent = defineState({ fields: { done: field.model(z.boolean(), { default: false }) } });
      const builder = graph(Parent).subgraph('child', oneNode(Child)).edge(START, 'child').edge('child', END);
      expect(() => builder.compile({ engine: ctx.engine })).toThrow(/field "tags"/);
    });

    it('a schema that validates asynchronously is checked before the first run stores anything', async () => {
      const asyncNumber: StandardSchemaV1<unknown, number> = {
        '~standard': {
          version: 1 as const,
          vendor: 'test',
          validate: async (value: unknown) => (typeof value === 'number' ? { value } : { issues: [{ message: 'not a number' }] }),
        },
      };
      const Bad = defineState({ fields: { n: field.model(asyncNumber, { default: 'x' as unknown as number }) } });
      const app = oneNode(Bad).compile({ engine: ctx.engine });
      const error = await caught(() => app.run({ thread: 't' }));
      expect(SchemaDefinitionError.is(error)).toBe(true);
      expect(error.message).toContain('not a number');
      expect(await app.getThread({ thread: 't' })).toBeNull();

      const Good = defineState({ fields: { n: field.model(asyncNumber, { default: 1 }) } });
      expect((await oneNode(Good).compile({ engine: ctx.engine }).run({ thread: 'u' })).status).toBe('completed');
    });

    it("a literal default reads as its schema's output, as a write of the same value is stored", async () => {
      const State = defineState({
        fields: {
          name: field.model(z.string().trim(), { default: '  guest  ' }),
          tags: field.model(z.array(z.string().toLowerCase()), { reduce: 'append', default: ['NEW'] }),
          limits: field.model(z.object({ max: z.number().default(10) }), { default: {} as { max: number } }),
        },
      });
      const app = graph(State)
        .node('a', (s) => ({ tags: [`seen ${s.name}`.toUpperCase()] }))
        .edge(START, 'a')
        .edge('a', END)
        .compile({ engine: ctx.engine });
      const result = await app.run({ thread: 'defaults-out' });
      expect(result.state).toEqual({ name: 'guest', tags: ['new', 'seen guest'], limits: { max: 10 } });
      expect(await app.getState({ thread: 'defaults-out' })).toEqual({ name: 'guest', tags: ['new', 'seen guest'], limits: { max: 10 } });
      // Each thread gets its own copy: the first thread's appends are not in the second's default.
      expect((await app.run({ thread: 'defaults-out-2' })).state.tags).toEqual(['new', 'seen guest']);
    });

    it('defaults the schema accepts, and defaults given as functions, compile as before', () => {
      const State = defineState({
        fields: { n: field.model(z.number(), { default: 0 }), list: field.model(z.array(z.string()), { reduce: 'append', default: [] }), at: field.model(z.number(), { default: () => Date.now() }) },
      });
      expect(() => oneNode(State).compile({ engine: ctx.engine })).not.toThrow();
    });
  });

  describe('StateTooLargeError', () => {
    const State = defineState({
      maxFieldBytes: 200,
      fields: {
        note: field.model(z.string(), { default: '' }),
        lines: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
      },
    });

    it('a replace write over maxFieldBytes is rejected with a message pointing to artifacts; nothing is stored', async () => {
      const { app } = twoStep(State, () => ({ note: 'é'.repeat(150) })); // 150 chars, 300 UTF-8 bytes
      const error = (await caught(() => app.run({ thread: 't' }))) as StateTooLargeError;
      expect(StateTooLargeError.is(error)).toBe(true);
      expect(error.code).toBe('ERR_STATE_TOO_LARGE');
      expect(error.field).toBe('note');
      expect(error.limit).toBe(200);
      expect(error.bytes).toBeGreaterThan(200);
      expect(error.message).toMatch(/artifact/i);
      await expectNothingCommittedAfter(app, 't', 1);
    });

    it('a write just under the limit is accepted', async () => {
      const { app } = twoStep(State, () => ({ note: 'a'.repeat(150) }));
      expect((await app.run({ thread: 't' })).state.note).toHaveLength(150);
    });

    it('an append write whose items together exceed the limit is rejected', async () => {
      const { app } = twoStep(State, () => ({ lines: ['x'.repeat(80), 'y'.repeat(80), 'z'.repeat(80)] }));
      const error = (await caught(() => app.run({ thread: 't' }))) as StateTooLargeError;
      expect(error.code).toBe('ERR_STATE_TOO_LARGE');
      expect(error.field).toBe('lines');
      await expectNothingCommittedAfter(app, 't', 1);
    });
  });

  describe('UnencodableValueError', () => {
    const State = defineState({ fields: { blob: field.model(z.any()), items: field.model(z.array(z.any()), { reduce: 'append', default: [] }) } });
    class Widget {
      size = 1;
    }
    const cyclic = () => {
      const a: Record<string, unknown> = { name: 'a' };
      a.self = a;
      return a;
    };

    it.each([
      ['a function', () => ({ blob: { fn: () => 1 } }), 'blob.fn'],
      ['a class instance', () => ({ blob: { w: new Widget() } }), 'blob.w'],
      ['a cycle', () => ({ blob: cyclic() }), 'blob.self'],
      ['a symbol', () => ({ blob: [Symbol('s')] }), 'blob[0]'],
      ['a function in an appended item', () => ({ items: [1, { f: () => 2 }] }), 'items'],
    ])('%s in a write is rejected with its path and nothing is stored', async (_what, write, path) => {
      const { app, runs } = twoStep(State, write);
      const error = (await caught(() => app.run({ thread: 't' }))) as UnencodableValueError;
      expect(UnencodableValueError.is(error)).toBe(true);
      expect(error.code).toBe('ERR_UNENCODABLE');
      expect(error.path).toContain(path);
      expect(runs()).toBe(1);
      await expectNothingCommittedAfter(app, 't', 1);
      for (const body of await bodies(ctx.engine, 't')) expect(body.changes).not.toHaveProperty('blob');
    });
  });
});
