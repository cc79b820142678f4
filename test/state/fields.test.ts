/**
 * Field roles and reducers: replace, append and custom reducers; two
 * replace writes in one superstep are a conflict (rejected, or kept under
 * `lastWins` by graph order and logged); runtime, derived and unknown fields are
 * not writable by nodes and a rejected step commits nothing; a node that returns
 * something other than an update (a Map, an array, a class instance, a string) is
 * refused the same way, not read as writing nothing; derived fields are
 * recomputed on every read and never stored; runtime fields with `compute` are set
 * by the runtime. Every test runs on memory and on SQLite.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  DerivedFieldWriteError,
  InvalidUpdateError,
  RuntimeFieldWriteError,
  StateConflictError,
  UnknownFieldError,
} from '../../src/errors.js';
import { defineState } from '../../src/state/schema.js';
import { field } from '../../src/state/fields.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import { decode } from '../../src/codec/tagged-json.js';
import type { PositionBody } from '../../src/runtime/position.js';
import { bodies, caught, ENGINES, rawPositions, sleep, snapshots, useEngine } from '../runtime/engines.js';

const fast = { maxAttempts: 1, initialDelayMs: 0 };

describe.each(ENGINES)('state fields on %s', (name) => {
  const ctx = useEngine(name);

  describe('reducers', () => {
    it('replace: the last write of a field is its value', async () => {
      const State = defineState({ fields: { x: field.model(z.string(), { default: 'init' }) } });
      const app = graph(State)
        .node('a', () => ({ x: 'first' }))
        .node('b', (s) => ({ x: `${s.x}+second` }))
        .edge(START, 'a')
        .edge('a', 'b')
        .edge('b', END)
        .compile({ engine: ctx.engine, retry: fast });
      const result = await app.run({ thread: 't' });
      expect(result.state.x).toBe('first+second');
      expect((await app.stateAt({ thread: 't', seq: 1 })).x).toBe('first');
      expect((await app.stateAt({ thread: 't', seq: 0 })).x).toBe('init');
    });

    it('append: items are added in order and nothing is dropped', async () => {
      const State = defineState({ fields: { log: field.model(z.array(z.string()), { reduce: 'append', default: ['seed'] }) } });
      const app = graph(State)
        .node('a', () => ({ log: ['a1', 'a2'] }))
        .node('b', () => ({ log: ['b1'] }))
        .node('c', () => ({ log: [] }))
        .edge(START, 'a')
        .edge('a', 'b')
        .edge('b', 'c')
        .edge('c', END)
        .compile({ engine: ctx.engine, retry: fast });
      const result = await app.run({ thread: 't', input: { log: ['in'] } });
      expect(result.state.log).toEqual(['seed', 'in', 'a1', 'a2', 'b1']);
      expect((await app.stateAt({ thread: 't', seq: 1 })).log).toEqual(['seed', 'in', 'a1', 'a2']);
      expect((await app.getState({ thread: 't' })).log).toEqual(['seed', 'in', 'a1', 'a2', 'b1']);
    });

    it('append: the body of a step records only the number of appended items, not the list', async () => {
      const State = defineState({ fields: { log: field.model(z.array(z.string()), { reduce: 'append', default: [] }) } });
      const app = graph(State)
        .node('a', () => ({ log: ['alpha-item'] }))
        .node('b', () => ({ log: ['beta-item', 'gamma-item'] }))
        .edge(START, 'a')
        .edge('a', 'b')
        .edge('b', END)
        .compile({ engine: ctx.engine, retry: fast });
      await app.run({ thread: 't' });
      const raw = await rawPositions(ctx.engine, 't');
      expect((await bodies(ctx.engine, 't'))[2]!.changes.log).toEqual({ append: 2 });
      // Items live beside the position, once: the body of the step after never repeats them.
      expect(raw[2]!.body).not.toContain('alpha-item');
    });

    it('a custom reducer combines the update with the current value, and its result is validated', async () => {
      const State = defineState({
        fields: {
          total: field.model(z.number().max(100), { reduce: (current: number, add: number) => current + add, default: 10 }),
        },
      });
      const app = graph(State)
        .node('a', () => ({ total: 5 }))
        .node('b', () => ({ total: 7 }))
        .edge(START, 'a')
        .edge('a', 'b')
        .edge('b', END)
        .compile({ engine: ctx.engine, retry: fast });
      expect((await app.run({ thread: 't' })).state.total).toBe(22);

      const over = graph(State)
        .node('a', () => ({ total: 95 }))
        .edge(START, 'a')
        .edge('a', END)
        .compile({ engine: ctx.engine, retry: fast });
      const error = await caught(() => over.run({ thread: 'u' }));
      expect(error.code).toBe('ERR_STATE_VALIDATION');
    });

    it('a custom reducer applies the writes of one superstep in graph order', async () => {
      const State = defineState({
        fields: { trail: field.model(z.string(), { reduce: (current: string, add: string) => current + add, default: '' }) },
      });
      const app = graph(State)
        .node('p', async () => {
          await sleep(30); // first in graph order, finishes last
          return { trail: 'p' };
        })
        .node('q', () => ({ trail: 'q' }))
        .edge(START, 'p')
        .edge(START, 'q')
        .edge('p', END)
        .edge('q', END)
        .compile({ engine: ctx.engine, retry: fast });
      expect((await app.run({ thread: 't' })).state.trail).toBe('pq');
    });
  });

  describe('conflicts', () => {
    const parallel = (State: ReturnType<typeof conflictState>, delayFirst = 0) =>
      graph(State)
        .node('first', async () => {
          await sleep(delayFirst);
          return { x: 'from-first' };
        })
        .node('second', () => ({ x: 'from-second' }))
        .edge(START, 'first')
        .edge(START, 'second')
        .edge('first', END)
        .edge('second', END)
        .compile({ engine: ctx.engine, retry: fast });

    it('two replace writes in one superstep raise StateConflictError and the head does not move', async () => {
      const app = parallel(conflictState());
      const error = await caught(() => app.run({ thread: 't' }));
      expect(StateConflictError.is(error)).toBe(true);
      expect(error.code).toBe('ERR_STATE_CONFLICT');
      expect((error as StateConflictError).field).toBe('x');
      expect((error as StateConflictError).writers).toEqual(['first', 'second']);
      const thread = await app.getThread({ thread: 't' });
      expect(thread!.head).toBe(0);
      expect(thread!.status).toBe('failed');
      expect((await app.getState({ thread: 't' })).x).toBe('init');
      expect(await rawPositions(ctx.engine, 't')).toHaveLength(1);
    });

    it("state-wide onConflict 'lastWins': the later writer in graph order wins even when it finishes first, and the conflict is logged", async () => {
      const app = parallel(conflictState({ stateWide: 'lastWins' }), 40);
      const result = await app.run({ thread: 't' });
      expect(result.state.x).toBe('from-second');
      const position = await ctx.engine.checkpointer.getPosition('t', '', 1);
      const body = decode<PositionBody>(position!.body);
      expect(body.nodes).toEqual(['first', 'second']);
      expect(body.conflicts).toEqual([{ field: 'x', writers: ['first', 'second'], kept: 'second' }]);
    });

    it("per-field onConflict 'lastWins' keeps the later writer in graph order and logs it", async () => {
      const app = parallel(conflictState({ perField: 'lastWins' }), 40);
      const result = await app.run({ thread: 't' });
      expect(result.state.x).toBe('from-second');
      expect((await bodies(ctx.engine, 't'))[1]!.conflicts).toEqual([{ field: 'x', writers: ['first', 'second'], kept: 'second' }]);
    });

    it("a per-field 'reject' overrides a state-wide 'lastWins'", async () => {
      const app = parallel(conflictState({ stateWide: 'lastWins', perField: 'reject' }));
      const error = await caught(() => app.run({ thread: 't' }));
      expect(error.code).toBe('ERR_STATE_CONFLICT');
      expect((await app.getThread({ thread: 't' }))!.head).toBe(0);
    });

    it('a step without conflicts logs none', async () => {
      const State = defineState({ fields: { x: field.model(z.string(), { default: '' }), y: field.model(z.string(), { default: '' }) } });
      const app = graph(State)
        .node('a', () => ({ x: 'a' }))
        .node('b', () => ({ y: 'b' }))
        .edge(START, 'a')
        .edge(START, 'b')
        .edge('a', END)
        .edge('b', END)
        .compile({ engine: ctx.engine, retry: fast });
      const result = await app.run({ thread: 't' });
      expect([result.state.x, result.state.y]).toEqual(['a', 'b']);
      expect((await bodies(ctx.engine, 't'))[1]!.conflicts).toBeUndefined();
    });
  });

  describe('fields nodes may not write', () => {
    const State = defineState({
      fields: {
        x: field.model(z.string(), { default: 'init' }),
        counter: field.runtime(z.number(), { default: 0 }),
      },
      derived: { shout: (s) => s.x.toUpperCase() },
    });

    let badRuns = 0;
    /** START -> ok -> bad -> END, where `bad` returns `write`. */
    const withBadNode = (write: Record<string, unknown>) =>
      graph(State)
        .node('ok', () => ({ x: 'ok' }))
        .node('bad', () => {
          badRuns++;
          return { x: 'not committed', ...write } as never;
        })
        .edge(START, 'ok')
        .edge('ok', 'bad')
        .edge('bad', END)
        .compile({ engine: ctx.engine, retry: { maxAttempts: 3, initialDelayMs: 0 } });

    it.each([
      ['a runtime field', { counter: 5 }, RuntimeFieldWriteError, 'ERR_RUNTIME_FIELD_WRITE', 'counter'],
      ['a derived field', { shout: 'X' }, DerivedFieldWriteError, 'ERR_DERIVED_FIELD_WRITE', 'shout'],
      ['an unknown field', { nope: 1 }, UnknownFieldError, 'ERR_UNKNOWN_FIELD', 'nope'],
      ['an inherited Object.prototype name', { toString: 'x' }, UnknownFieldError, 'ERR_UNKNOWN_FIELD', 'toString'],
    ] as const)('writing %s is rejected, not retried, and nothing is committed', async (_what, write, Class, code, fieldName) => {
      badRuns = 0;
      const app = withBadNode(write);
      const error = await caught(() => app.run({ thread: 't' }));
      expect((Class as unknown as { is(e: unknown): boolean }).is(error)).toBe(true);
      expect(error.code).toBe(code);
      expect((error as unknown as { field: string }).field).toBe(fieldName);
      const thread = await app.getThread({ thread: 't' });
      expect(thread!.head).toBe(1);
      expect(thread!.status).toBe('failed');
      // A cairn error is deterministic: no retry was attempted (the policy allows 3).
      expect(badRuns).toBe(1);
      expect(thread!.lastError?.code).toBe(code);
      const state = await app.getState({ thread: 't' });
      expect(state.x).toBe('ok');
      expect(state.counter).toBe(0);
    });

    class Point {
      constructor(readonly x: string) {}
    }
    it.each([
      ['a Map', new Map([['x', 'from a map']]), 'a Map (1 entry)'],
      ['a class instance', new Point('from a class'), 'an instance of Point'],
      ['an array', [{ x: 'in a list' }, { x: 'and another' }], 'an array (2 items)'],
      ['a string', 'done', 'a string (4 characters)'],
      ['a number', 42, 'a number'],
      ['false', false, 'the boolean false'],
    ] as const)('returning %s instead of an update is InvalidUpdateError naming the node, not a step that writes nothing', async (_what, returned, received) => {
      let bad = 0;
      const app = graph(State)
        .node('ok', () => ({ x: 'ok' }))
        .node('bad', () => {
          bad++;
          return returned as never;
        })
        .edge(START, 'ok')
        .edge('ok', 'bad')
        .edge('bad', END)
        .compile({ engine: ctx.engine, retry: { maxAttempts: 3, initialDelayMs: 0 } });
      const error = await caught(() => app.run({ thread: 't' }));
      expect(InvalidUpdateError.is(error)).toBe(true);
      expect([(error as InvalidUpdateError).writer, (error as InvalidUpdateError).received]).toEqual(['bad', received]);
      expect(error.message).toContain(`"bad" returned ${received}, not an update`);
      // Deterministic, like the other refused writes: not retried, nothing committed, the thread failed with the code.
      expect(bad).toBe(1);
      const thread = await app.getThread({ thread: 't' });
      expect([thread!.head, thread!.status, thread!.lastError?.code]).toEqual([1, 'failed', 'ERR_INVALID_UPDATE']);
    });

    it('undefined, null, {} and an object without a prototype are updates (the last two write what they hold)', async () => {
      const bare = Object.assign(Object.create(null) as Record<string, unknown>, { x: 'bare' });
      const returns: unknown[] = [undefined, null, {}, bare];
      const app = graph(State)
        .node('a', () => returns[0] as never)
        .node('b', () => returns[1] as never)
        .node('c', () => returns[2] as never)
        .node('d', () => returns[3] as never)
        .edge(START, 'a')
        .edge('a', 'b')
        .edge('b', 'c')
        .edge('c', 'd')
        .edge('d', END)
        .compile({ engine: ctx.engine, retry: fast });
      const result = await app.run({ thread: 't' });
      expect([result.status, result.state.x]).toEqual(['completed', 'bare']);
    });

    it('run input that is not an object is refused as an option (InvalidOptionError), and leaves no thread', async () => {
      const app = graph(State).node('ok', () => ({})).edge(START, 'ok').edge('ok', END).compile({ engine: ctx.engine, retry: fast });
      const error = await caught(() => app.run({ thread: 't', input: new Map([['x', 'y']]) as never }));
      expect(error.code).toBe('ERR_INVALID_OPTION');
      expect(error.message).toContain('input must be a plain object');
      expect((await app.getThread({ thread: 't' }))?.head ?? null).toBeNull();
    });

    it('run input may not write a runtime field either', async () => {
      const app = graph(State).node('ok', () => ({})).edge(START, 'ok').edge('ok', END).compile({ engine: ctx.engine, retry: fast });
      const error = await caught(() => app.run({ thread: 't', input: { counter: 9 } as never }));
      expect(error.code).toBe('ERR_RUNTIME_FIELD_WRITE');
      expect((await app.getThread({ thread: 't' }))?.head ?? null).toBeNull();
    });
  });

  describe('derived fields', () => {
    const fields = { items: field.model(z.array(z.number()), { reduce: 'append' as const, default: [] }) };

    it('are recomputed on read: getState, stateAt and node input', async () => {
      const State = defineState({ fields, derived: { zzDerivedTotal: (s) => s.items.reduce((a, b) => a + b, 0) } });
      const seen: number[] = [];
      const app = graph(State)
        .node('a', (s) => {
          seen.push(s.zzDerivedTotal);
          return { items: [1, 2] };
        })
        .node('b', (s) => {
          seen.push(s.zzDerivedTotal);
          return { items: [10] };
        })
        .edge(START, 'a')
        .edge('a', 'b')
        .edge('b', END)
        .compile({ engine: ctx.engine, retry: fast, snapshotEvery: 1 });
      const result = await app.run({ thread: 't', input: { items: [100] } });
      expect(seen).toEqual([100, 103]);
      expect(result.state.zzDerivedTotal).toBe(113);
      expect((await app.getState({ thread: 't' })).zzDerivedTotal).toBe(113);
      expect((await app.stateAt({ thread: 't', seq: 0 })).zzDerivedTotal).toBe(100);
      expect((await app.stateAt({ thread: 't', seq: 1 })).zzDerivedTotal).toBe(103);
    });

    it('are never stored: no position body or snapshot mentions them, and a changed function shows at once', async () => {
      const V1 = defineState({ fields, derived: { zzDerivedTotal: (s) => s.items.length } });
      const app = graph(V1)
        .node('a', () => ({ items: [7, 8] }))
        .edge(START, 'a')
        .edge('a', END)
        .compile({ engine: ctx.engine, retry: fast, snapshotEvery: 1 });
      await app.run({ thread: 't' });
      const snaps = await snapshots(ctx.engine, 't');
      expect(snaps.length).toBeGreaterThan(0);
      for (const s of snaps) expect(s.text).not.toContain('zzDerivedTotal');
      for (const p of await rawPositions(ctx.engine, 't')) expect(p.body).not.toContain('zzDerivedTotal');

      // The same stored thread read through another derived function gives that function's value.
      const V2 = defineState({ fields, derived: { zzDerivedTotal: (s) => s.items.reduce((a, b) => a * b, 1) } });
      const again = graph(V2).node('a', () => ({})).edge(START, 'a').edge('a', END).compile({ engine: ctx.reopen() });
      expect((await again.getState({ thread: 't' })).zzDerivedTotal).toBe(56);
      expect((await app.getState({ thread: 't' })).zzDerivedTotal).toBe(2);
    });

    it('are seen by conditional edges', async () => {
      const State = defineState({ fields, derived: { big: (s) => s.items.length >= 2 } });
      const visited: string[] = [];
      const app = graph(State)
        .node('grow', () => {
          visited.push('grow');
          return { items: [1] };
        })
        .node('done', () => {
          visited.push('done');
        })
        .edge(START, 'grow')
        .conditionalEdge('grow', (s) => (s.big ? 'done' : 'grow'))
        .edge('done', END)
        .compile({ engine: ctx.engine, retry: fast });
      await app.run({ thread: 't' });
      expect(visited).toEqual(['grow', 'grow', 'done']);
    });
  });

  describe('runtime fields', () => {
    it('a runtime field with compute is set by the runtime at every step; one without compute keeps its default', async () => {
      const State = defineState({
        fields: {
          x: field.model(z.number(), { default: 0 }),
          stepNo: field.runtime(z.number(), { compute: (rt) => rt.step, default: -1 }),
          ranBy: field.runtime(z.array(z.string()), { compute: (rt) => [...rt.nodes], default: [] }),
          label: field.runtime(z.string(), { default: 'fixed' }),
        },
      });
      const seenSteps: number[] = [];
      const app = graph(State)
        .node('a', (s) => {
          seenSteps.push(s.stepNo);
          return { x: 1 };
        })
        .node('b', (s) => {
          seenSteps.push(s.stepNo);
          return { x: 2 };
        })
        .node('c', (s) => {
          seenSteps.push(s.stepNo);
        })
        .edge(START, 'a')
        .edge('a', 'b')
        .edge('b', 'c')
        .edge('c', END)
        .compile({ engine: ctx.engine, retry: fast });
      const result = await app.run({ thread: 't' });
      expect(result.state.stepNo).toBe(3);
      expect(result.state.ranBy).toEqual(['c']);
      expect(result.state.label).toBe('fixed');
      // Each node sees the state of the position its step starts from.
      expect(seenSteps).toEqual([0, 1, 2]);
      for (const seq of [0, 1, 2, 3]) expect((await app.stateAt({ thread: 't', seq })).stepNo).toBe(seq);
      expect((await app.stateAt({ thread: 't', seq: 1 })).ranBy).toEqual(['a']);
      // A runtime field without compute is never written.
      for (const body of await bodies(ctx.engine, 't')) expect(body.changes).not.toHaveProperty('label');
    });
  });
});

function conflictState(policy: { stateWide?: 'reject' | 'lastWins'; perField?: 'reject' | 'lastWins' } = {}) {
  return defineState({
    fields: { x: field.model(z.string(), { default: 'init', ...(policy.perField ? { onConflict: policy.perField } : {}) }) },
    ...(policy.stateWide ? { onConflict: policy.stateWide } : {}),
  });
}
