/**
 * The store hazards, each a named test, on memory, SQLite and PostgreSQL:
 *
 * - **stale read**: a node reads with `validateAtCommit`; another writer changes the item
 *   before the step commits (before the node's own store write, or after it returned):
 *   the step runs again on fresh data, its stale write never lands, and a writer that
 *   keeps changing the item ends in StaleReadLimitError, not an endless loop.
 * - **concurrent writers**: two nodes of one superstep read the same item and both write
 *   it. `reject` (the default) surfaces the conflict as VersionConflictError and a later
 *   run keeps both updates; `lastWins` keeps the later write and a record of the one it
 *   replaced; a merge function keeps both. `ctx.store.update` never loses an increment.
 * - **tenant scoping**: nodes act as the thread's tenant; the store's policy denies
 *   another tenant's namespace with AccessDeniedError and nothing is written.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AccessDeniedError, StaleReadLimitError, VersionConflictError } from '../../src/errors.js';
import { defineState } from '../../src/state/schema.js';
import { field } from '../../src/state/fields.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import type { NodeContext } from '../../src/runtime/task-scope.js';
import { MAX_STALE_RERUNS } from '../../src/defaults.js';
import { tenantPrefixPolicy } from '../../src/store/policy.js';
import { caught, ENGINES, gate, useEngine } from '../runtime/engines.js';

const fast = { maxAttempts: 1, initialDelayMs: 0 };

const State = defineState({
  fields: {
    quote: field.model(z.number(), { default: 0 }),
    seen: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
  },
});

describe.each(ENGINES)('store hazards on %s', (name) => {
  const ctx = useEngine(name);

  describe('stale read', () => {
    it('a writer changes a validated read before the node writes: the write is refused, the step runs again and commits on fresh data', async () => {
      const store = ctx.engine.store;
      await store.put(['cfg'], 'price', 10);
      let executions = 0;
      const app = graph(State)
        .node('quote', async (_s, c) => {
          executions++;
          const price = (await c.store.get<number>(['cfg'], 'price', { validateAtCommit: true }))!;
          // Another process reprices between this read and the write below (first execution only).
          if (executions === 1) await store.put(['cfg'], 'price', 12);
          await c.store.put(['quotes'], 'q1', { price: price.value * 2 });
          return { quote: price.value * 2, seen: [`price ${price.value}`] };
        })
        .edge(START, 'quote')
        .edge('quote', END)
        .compile({ engine: ctx.engine, retry: fast });
      const result = await app.run({ thread: 't' });
      expect(result.status).toBe('completed');
      expect(executions).toBe(2);
      expect(result.state).toMatchObject({ quote: 24, seen: ['price 12'] });
      // The stale execution's write never landed: one write, on fresh data.
      expect(await store.get(['quotes'], 'q1')).toMatchObject({ value: { price: 24 }, version: 1 });
      const effects = (await ctx.engine.ledger.list('t')).filter((e) => e.kind === 'effect');
      expect(effects.map((e) => [e.name, e.status])).toEqual([['store.put quotes/q1', 'done']]);
    });

    it('a writer changes a validated read after the node returned, before the commit: the node runs again before the step commits', async () => {
      const store = ctx.engine.store;
      await store.put(['cfg'], 'price', 10);
      const runs = { quote: 0, slow: 0 };
      const quoted = gate();
      const app = graph(State)
        .node('quote', async (_s, c) => {
          runs.quote++;
          const price = (await c.store.get<number>(['cfg'], 'price', { validateAtCommit: true }))!;
          quoted.open();
          return { quote: price.value };
        })
        .node('slow', async () => {
          runs.slow++;
          // A sibling of the same superstep: while it runs, another writer reprices.
          await quoted.promise;
          await store.put(['cfg'], 'price', 15);
          return { seen: ['slow'] };
        })
        .edge(START, 'quote')
        .edge(START, 'slow')
        .edge('quote', END)
        .edge('slow', END)
        .compile({ engine: ctx.engine, retry: fast });
      const result = await app.run({ thread: 't' });
      expect(result.state.quote).toBe(15);
      expect(runs).toEqual({ quote: 2, slow: 1 });
    });

    it('a writer that changes the item every time: StaleReadLimitError after the bound, nothing written, and the thread resumes later', async () => {
      const store = ctx.engine.store;
      await store.put(['cfg'], 'price', 1);
      let executions = 0;
      let hostile = true;
      const app = graph(State)
        .node('quote', async (_s, c) => {
          executions++;
          const price = (await c.store.get<number>(['cfg'], 'price', { validateAtCommit: true }))!;
          if (hostile) await store.update<number>(['cfg'], 'price', (n) => n! + 1);
          await c.store.put(['quotes'], 'q1', price.value);
          return { quote: price.value };
        })
        .edge(START, 'quote')
        .edge('quote', END)
        .compile({ engine: ctx.engine, retry: fast });
      const error = await caught(() => app.run({ thread: 't' }));
      expect(StaleReadLimitError.is(error)).toBe(true);
      expect(error).toMatchObject({ node: 'quote', reruns: MAX_STALE_RERUNS });
      expect(executions).toBe(MAX_STALE_RERUNS + 1);
      expect(await store.get(['quotes'], 'q1')).toBeNull();
      expect((await ctx.engine.checkpointer.getThread('t'))!.status).toBe('failed');

      hostile = false;
      const result = await app.run({ thread: 't' });
      expect(result.status).toBe('completed');
      expect(result.state.quote).toBe(MAX_STALE_RERUNS + 2);
      expect(await store.get(['quotes'], 'q1')).toMatchObject({ value: MAX_STALE_RERUNS + 2, version: 1 });
    });

    it('a node that writes an item it validated is not re-run for its own write', async () => {
      await ctx.engine.store.put(['cfg'], 'n', 1);
      let executions = 0;
      const app = graph(State)
        .node('bump', async (_s, c) => {
          executions++;
          const n = (await c.store.get<number>(['cfg'], 'n', { validateAtCommit: true }))!;
          await c.store.put(['cfg'], 'n', n.value + 1);
          return { quote: n.value + 1 };
        })
        .edge(START, 'bump')
        .edge('bump', END)
        .compile({ engine: ctx.engine, retry: fast });
      expect((await app.run({ thread: 't' })).state.quote).toBe(2);
      expect(executions).toBe(1);
      expect(await ctx.engine.store.get(['cfg'], 'n')).toMatchObject({ value: 2, version: 2 });
    });
  });

  describe('concurrent writers', () => {
    /** Two nodes of one superstep, each reading ['team'] doc and adding itself once both have read. */
    function twoWriters(options: { barrier: boolean }) {
      let arrived = 0;
      const both = gate();
      const writer = (who: string) => async (_s: unknown, c: NodeContext) => {
        const doc = await c.store.get<{ members: string[] }>(['team'], 'doc');
        if (options.barrier && ++arrived === 2) both.open();
        if (options.barrier) await both.promise;
        // The put carries the version read (implicit ifVersion): a compare-and-set.
        await c.store.put(['team'], 'doc', { members: [...(doc?.value.members ?? []), who] });
        return { seen: [who] };
      };
      return graph(State)
        .node('alice', writer('alice'))
        .node('bob', writer('bob'))
        .edge(START, 'alice')
        .edge(START, 'bob')
        .edge('alice', END)
        .edge('bob', END)
        .compile({ engine: ctx.engine, retry: fast });
    }

    it('reject (default): the second writer gets VersionConflictError, no update is lost silently, and the next run keeps both', async () => {
      const store = ctx.engine.store;
      await store.put(['team'], 'doc', { members: [] });
      const error = await caught(() => twoWriters({ barrier: true }).run({ thread: 't' }));
      expect(VersionConflictError.is(error)).toBe(true);
      const afterConflict = (await store.get<{ members: string[] }>(['team'], 'doc'))!;
      expect(afterConflict.value.members).toHaveLength(1);
      expect(afterConflict.version).toBe(2);
      expect((await ctx.engine.checkpointer.getThread('t'))!.status).toBe('failed');

      // The failed writer runs again on the current version; the winner is not re-run.
      const result = await twoWriters({ barrier: false }).run({ thread: 't' });
      expect(result.status).toBe('completed');
      expect((await store.get<{ members: string[] }>(['team'], 'doc'))!.value.members.sort()).toEqual(['alice', 'bob']);
      expect(await store.listOverwrites([])).toEqual([]);
    });

    it('lastWins: both writes land, and the one replaced is kept as an overwrite record', async () => {
      const store = ctx.engine.store;
      store.declare(['team'], { merge: 'lastWins' });
      await store.put(['team'], 'doc', { members: [] });
      const result = await twoWriters({ barrier: true }).run({ thread: 't' });
      expect(result.status).toBe('completed');
      const final = (await store.get<{ members: string[] }>(['team'], 'doc'))!;
      expect(final.value.members).toHaveLength(1);
      const records = await store.listOverwrites(['team']);
      expect(records).toHaveLength(1);
      const replaced = (records[0]!.overwritten!.value as { members: string[] }).members;
      expect([...replaced, ...final.value.members].sort()).toEqual(['alice', 'bob']);
      expect(records[0]).toMatchObject({ expectedVersion: 1, version: 3 });
    });

    it('a merge function: both writes are kept', async () => {
      const store = ctx.engine.store;
      store.declare(['team'], {
        merge: (current: { members: string[] } | undefined, incoming: { members: string[] }) => ({
          members: [...new Set([...(current?.members ?? []), ...incoming.members])].sort(),
        }),
      });
      await store.put(['team'], 'doc', { members: [] });
      const result = await twoWriters({ barrier: true }).run({ thread: 't' });
      expect(result.status).toBe('completed');
      expect(await store.get(['team'], 'doc')).toMatchObject({ value: { members: ['alice', 'bob'] }, version: 3 });
    });

    it('ctx.store.update from two nodes at once: no increment lost', async () => {
      const store = ctx.engine.store;
      const both = gate();
      let arrived = 0;
      const inc = async (_s: unknown, c: NodeContext) => {
        await c.store.update<number>(['team'], 'count', async (n = 0) => {
          if (++arrived === 2) both.open();
          await both.promise;
          return n + 1;
        });
        return {};
      };
      const app = graph(State)
        .node('a', inc)
        .node('b', inc)
        .edge(START, 'a')
        .edge(START, 'b')
        .edge('a', END)
        .edge('b', END)
        .compile({ engine: ctx.engine, retry: fast });
      await app.run({ thread: 't' });
      expect(await store.get(['team'], 'count')).toMatchObject({ value: 2, version: 2 });
    });
  });

  describe('tenant scoping', () => {
    it("nodes act as the thread's tenant: their own namespace is open, another tenant's is AccessDeniedError and nothing is written", async () => {
      const store = ctx.engine.store;
      store.setPolicy(tenantPrefixPolicy());
      const principals: (string | null)[] = [];
      const app = graph(State)
        .node('save', async (_s, c) => {
          principals.push(c.store.principal);
          await c.store.put(['tenant', 'acme', 'prefs'], 'theme', 'dark');
          await c.store.put(['tenant', 'globex', 'prefs'], 'theme', 'stolen');
          return {};
        })
        .edge(START, 'save')
        .edge('save', END)
        .compile({ engine: ctx.engine, retry: fast });
      const error = await caught(() => app.run({ thread: 't', tenant: 'acme' }));
      expect(AccessDeniedError.is(error)).toBe(true);
      expect(error).toMatchObject({ principal: 'acme', namespace: ['tenant', 'globex', 'prefs'], operation: 'put' });
      expect(principals).toEqual(['acme']);
      expect((await ctx.engine.checkpointer.getThread('t'))!.tenant).toBe('acme');
      expect(await store.get(['tenant', 'globex', 'prefs'], 'theme')).toBeNull();
      expect((await store.get(['tenant', 'acme', 'prefs'], 'theme'))!.value).toBe('dark');

      // A thread without a tenant is an anonymous principal: denied everywhere.
      const anonymous = await caught(() => app.run({ thread: 'no-tenant' }));
      expect(anonymous).toMatchObject({ code: 'ERR_ACCESS_DENIED', principal: null });
    });
  });
});
