/**
 * Side effects under the invariant: deterministic keys; an outcome in
 * the ledger is returned without calling `run`; an intent without an outcome is
 * recovered by `probe` (found: no run; absent: run again with the same key), by a
 * re-run with the same key (atLeastOnce, no probe), or by stopping the thread in
 * `needs_attention` (atMostOnce, no probe) until `resolveEffect`; changed `args`
 * under one key are an EffectConflictError. The "intent without outcome" state is
 * made the honest way: an effect whose `run` throws with retries exhausted.
 * Every test runs on memory and on SQLite.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { EffectConflictError, InvalidOptionError, NeedsAttentionError } from '../../src/errors.js';
import { defineState } from '../../src/state/schema.js';
import { field } from '../../src/state/fields.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import type { EffectSpec } from '../../src/runtime/task-scope.js';
import type { NodeContext } from '../../src/runtime/node-context.js';
import type { RunEvent } from '../../src/runtime/events.js';
import { bodies, caught, ENGINES, sleep, useEngine } from './engines.js';

const State = defineState({
  fields: {
    to: field.model(z.string(), { default: 'alice' }),
    outcome: field.model(z.string().optional()),
    trail: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
  },
});

type Spec = Omit<EffectSpec<string>, 'run'>;

describe.each(ENGINES)('effects on %s', (name) => {
  const ctx = useEngine(name);

  /**
   * START -> prep -> send -> END. `send` calls one effect `deliver` built from `spec()`;
   * `run` records its key and throws while `runFails()`; the node throws after the
   * effect while `nodeFails()`.
   */
  function effectApp(
    options: {
      spec?: () => Spec;
      runFails?: () => boolean;
      nodeFails?: () => boolean;
      maxAttempts?: number;
    } = {},
  ) {
    const runKeys: string[] = [];
    const events: RunEvent[] = [];
    const app = graph(State)
      .node('prep', () => ({ trail: ['prep'] }))
      .node('send', async (s, c) => {
        const outcome = await c.effect<string>('deliver', {
          ...(options.spec?.() ?? {}),
          run: async (key) => {
            runKeys.push(key);
            if (options.runFails?.()) throw new Error('the delivery failed half-way');
            return `delivered-${runKeys.length}-to-${s.to}`;
          },
        });
        if (options.nodeFails?.()) throw new Error('the node failed after its effect');
        return { outcome };
      })
      .edge(START, 'prep')
      .edge('prep', 'send')
      .edge('send', END)
      .compile({ engine: ctx.engine, retry: { maxAttempts: options.maxAttempts ?? 1, initialDelayMs: 0 }, onEvent: (e) => events.push(e) });
    const kinds = (type: RunEvent['type']) => events.filter((e) => e.type === type);
    return { app, runKeys, events, kinds };
  }

  const effectsOf = async (thread: string) => (await ctx.engine.ledger.list(thread)).filter((e) => e.kind === 'effect');

  describe('ledger reads', () => {
    /** The engine with its ledger's listForTask counted. */
    function counted() {
      const calls: number[] = [];
      const ledger = new Proxy(ctx.engine.ledger, {
        get: (target, key, receiver) => {
          const value: unknown = Reflect.get(target, key, receiver);
          if (key === 'listForTask') return (threadId: string, ns: string, seq: number, task: string) => (calls.push(seq), target.listForTask(threadId, ns, seq, task));
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
      return { engine: { ...ctx.engine, ledger }, calls };
    }

    function loop(engine: typeof ctx.engine, steps: number) {
      return graph(State)
        .node('step', async (s, c) => ({ trail: [await c.effect('tick', { run: (key) => `${s.trail.length}:${key}` })] }))
        .edge(START, 'step')
        .conditionalEdge('step', (s) => (s.trail.length < steps ? 'step' : END))
        .compile({ engine, retry: { maxAttempts: 2, initialDelayMs: 0 } });
    }

    it("a superstep from a position the run wrote itself reads no entries (none can exist); the first after a load reads them, once", async () => {
      const { engine, calls } = counted();
      await loop(engine, 5).submit({ thread: 't', input: {} });
      const { state } = await loop(engine, 5).run({ thread: 't' });
      expect(state.trail).toHaveLength(5);
      // Only the step from the submitted input position (loaded, not written by this run).
      expect(calls).toEqual([0]);
      expect((await effectsOf('t')).every((e) => e.status === 'done')).toBe(true);
    });

    it('a retried task reads what its failed attempt wrote: the effect is served, not run again', async () => {
      const { engine, calls } = counted();
      let runs = 0;
      let failures = 1;
      const app = graph(State)
        .node('prep', () => ({ trail: ['prep'] }))
        .node('send', async (_s, c) => {
          const outcome = await c.effect('deliver', { run: () => `delivered-${++runs}` });
          if (failures-- > 0) throw new Error('the node failed after its effect');
          return { outcome };
        })
        .edge(START, 'prep')
        .edge('prep', 'send')
        .edge('send', END)
        .compile({ engine, retry: { maxAttempts: 2, initialDelayMs: 0 } });
      const { state } = await app.run({ thread: 't' });
      expect(state.outcome).toBe('delivered-1');
      expect(runs).toBe(1);
      // prep and the first attempt of send ran from positions this run wrote; the retry read.
      expect(calls).toEqual([1]);
    });
  });

  describe('keys', () => {
    it('the derived key is the same when a step is re-executed and differs between threads', async () => {
      let failures = 1;
      const { app, runKeys, kinds } = effectApp({ nodeFails: () => failures-- > 0, maxAttempts: 2 });
      await app.run({ thread: 't1' });
      failures = 1;
      await app.run({ thread: 't2' });
      const [e1, e2] = [await effectsOf('t1'), await effectsOf('t2')];
      expect(e1).toHaveLength(1);
      expect(e2).toHaveLength(1);
      expect(e1[0]!.key).not.toBe(e2[0]!.key);
      expect(runKeys).toEqual([e1[0]!.key, e2[0]!.key]);
      // The re-execution of each step asked for the same key and found it.
      expect(kinds('effect.hit').map((e) => (e as { key: string }).key)).toEqual([e1[0]!.key, e2[0]!.key]);
      expect(e1[0]).toMatchObject({ node: 'send', seq: 1, task: 'send:0', call: 0, status: 'done' });
    });

    it('two effects of one node get different keys by call index', async () => {
      const app = graph(State)
        .node('n', async (_s, c) => {
          const a = await c.effect('one', { run: (k) => k });
          const b = await c.effect('two', { run: (k) => k });
          return { trail: [a, b] };
        })
        .edge(START, 'n')
        .edge('n', END)
        .compile({ engine: ctx.engine, retry: { maxAttempts: 1 } });
      const { state } = await app.run({ thread: 't' });
      expect(state.trail[0]).not.toBe(state.trail[1]);
      expect((await effectsOf('t')).map((e) => [e.name, e.call])).toEqual([
        ['one', 0],
        ['two', 1],
      ]);
    });

    it("a caller's key is used as given and passed to run", async () => {
      const { app, runKeys } = effectApp({ spec: () => ({ idempotencyKey: 'order-42' }) });
      await app.run({ thread: 't' });
      expect(runKeys).toEqual(['order-42']);
      expect((await effectsOf('t')).map((e) => e.key)).toEqual(['order-42']);
    });

    it("a caller's key already done in the thread is served to a later step without running", async () => {
      let runs = 0;
      const app = graph(State)
        .node('first', async (_s, c) => ({ trail: [await c.effect('pay', { idempotencyKey: 'pay-1', run: () => `paid-${++runs}` })] }))
        .node('again', async (_s, c) => ({ trail: [await c.effect('pay', { idempotencyKey: 'pay-1', run: () => `paid-${++runs}` })] }))
        .edge(START, 'first')
        .edge('first', 'again')
        .edge('again', END)
        .compile({ engine: ctx.engine, retry: { maxAttempts: 1 } });
      expect((await app.run({ thread: 't' })).state.trail).toEqual(['paid-1', 'paid-1']);
      expect(runs).toBe(1);
    });

    it("a caller's key asked twice at once in one node (parallel tool calls) runs once: the second call is served the first's outcome", async () => {
      let runs = 0;
      const pay = (c: NodeContext, commit: 'separately' | 'with-step') =>
        c.effect('pay', { idempotencyKey: `pay-${commit}`, args: { amount: 5 }, commit, run: async () => (await sleep(5), `paid-${++runs}`) });
      const app = graph(State)
        .node('both', async (_s, c) => ({ trail: [...(await Promise.all([pay(c, 'separately'), pay(c, 'separately')])), ...(await Promise.all([pay(c, 'with-step'), pay(c, 'with-step')]))] }))
        .edge(START, 'both')
        .edge('both', END)
        .compile({ engine: ctx.engine, retry: { maxAttempts: 1 } });
      expect((await app.run({ thread: 't' })).state.trail).toEqual(['paid-1', 'paid-1', 'paid-2', 'paid-2']);
      expect(runs).toBe(2);
      expect((await effectsOf('t')).map((e) => [e.key, e.status])).toEqual([['pay-separately', 'done'], ['pay-with-step', 'done']]);
    });
  });

  describe('one key, two effects', () => {
    /** START -> charge -> refund -> END, both effects under the caller's key `order-42`, with `refund`'s name and args given. */
    function sharedKeyApp(refund: { name: string; args: unknown }) {
      const ran: string[] = [];
      const app = graph(State)
        .node('charge', async (_s, c) => ({
          trail: [await c.effect('charge', { idempotencyKey: 'order-42', args: { amount: 100 }, run: () => (ran.push('charge'), 'charged 100') })],
        }))
        .node('refund', async (_s, c) => ({
          trail: [await c.effect(refund.name, { idempotencyKey: 'order-42', args: refund.args, run: () => (ran.push('refund'), 'refunded 100') })],
        }))
        .edge(START, 'charge')
        .edge('charge', 'refund')
        .edge('refund', END)
        .compile({ engine: ctx.engine, retry: { maxAttempts: 1 } });
      return { app, ran };
    }

    it('an effect of another name under a key already done is EffectConflictError naming both, not served the other\'s outcome', async () => {
      const { app, ran } = sharedKeyApp({ name: 'refund', args: { amount: 100 } });
      const error = await caught(() => app.run({ thread: 't' }));
      expect(EffectConflictError.is(error)).toBe(true);
      expect((error as EffectConflictError).effectKey).toBe('order-42');
      expect(error.message).toContain('"charge"');
      expect(error.message).toContain('"refund"');
      expect(ran).toEqual(['charge']);
      expect((await effectsOf('t')).map((e) => e.name)).toEqual(['charge']);
    });

    it('the same name under the key with other args (both declared) is EffectConflictError', async () => {
      const { app, ran } = sharedKeyApp({ name: 'charge', args: { amount: 5 } });
      expect(EffectConflictError.is(await caught(() => app.run({ thread: 't' })))).toBe(true);
      expect(ran).toEqual(['charge']);
    });

    it('an intent of another name left without an outcome is a conflict too, and is not run again', async () => {
      let broken = true;
      const ran: string[] = [];
      const app = graph(State)
        .node('charge', async (_s, c) => ({
          trail: [await c.effect('charge', { idempotencyKey: 'order-42', run: () => { ran.push('charge'); if (broken) throw new Error('half-way'); return 'charged'; } })],
        }))
        .edge(START, 'charge')
        .edge('charge', END)
        .compile({ engine: ctx.engine, retry: { maxAttempts: 1 } });
      await expect(app.run({ thread: 't' })).rejects.toMatchObject({ code: 'ERR_NODE_FAILED' });
      broken = false;
      const other = graph(State)
        .node('charge', async (_s, c) => ({ trail: [await c.effect('refund', { idempotencyKey: 'order-42', run: () => (ran.push('refund'), 'refunded') })] }))
        .edge(START, 'charge')
        .edge('charge', END)
        .compile({ engine: ctx.engine, retry: { maxAttempts: 1 } });
      expect(EffectConflictError.is(await caught(() => other.run({ thread: 't' })))).toBe(true);
      expect(ran).toEqual(['charge']);
    });

    it('the same effect (name and args) under the key is still served its outcome', async () => {
      const { app, ran } = sharedKeyApp({ name: 'charge', args: { amount: 100 } });
      expect((await app.run({ thread: 't' })).state.trail).toEqual(['charged 100', 'charged 100']);
      expect(ran).toEqual(['charge']);
    });
  });

  describe('the spec', () => {
    /** One node calling `effect('pay', spec)` with a retry policy that would retry anything but cairn's errors. */
    async function refused(spec: unknown) {
      let attempts = 0;
      const app = graph(State)
        .node('pay', async (_s, c) => {
          attempts++;
          return { outcome: await c.effect<string>('pay', spec as EffectSpec<string>) };
        })
        .edge(START, 'pay')
        .edge('pay', END)
        .compile({ engine: ctx.engine, retry: { maxAttempts: 3, initialDelayMs: 0 } });
      const thread = `t-${attempts}-${Math.random()}`;
      const error = await caught(() => app.run({ thread }));
      return { error, attempts, effects: await effectsOf(thread) };
    }

    it('a misspelt or unknown mode is InvalidOptionError at the call, and the effect does not run', async () => {
      for (const mode of ['atmostonce', 'bogus', 1]) {
        let ran = false;
        const { error, attempts, effects } = await refused({ mode, run: () => ((ran = true), 'paid') });
        expect(InvalidOptionError.is(error)).toBe(true);
        expect(error.message).toContain("'atLeastOnce' or 'atMostOnce'");
        expect(ran).toBe(false);
        expect(attempts).toBe(1);
        expect(effects).toEqual([]);
      }
    });

    it('a missing run is InvalidOptionError at the call, not a TypeError retried three times', async () => {
      for (const spec of [{}, { run: 'pay' }, null]) {
        const { error, attempts, effects } = await refused(spec);
        expect(InvalidOptionError.is(error)).toBe(true);
        expect(error.message).toContain('effect "pay"');
        expect(attempts).toBe(1);
        expect(effects).toEqual([]);
      }
    });

    it("an empty or non-string idempotencyKey, or a probe that is not a function, is InvalidOptionError and nothing is written", async () => {
      for (const spec of [{ idempotencyKey: '' }, { idempotencyKey: 42 }, { probe: 'yes' }]) {
        let ran = false;
        const { error, effects } = await refused({ ...spec, run: () => ((ran = true), 'paid') });
        expect(InvalidOptionError.is(error)).toBe(true);
        expect(ran).toBe(false);
        expect(effects).toEqual([]);
      }
    });

    it('the two modes, a key and a probe are accepted as before', async () => {
      const modes = ['atLeastOnce', 'atMostOnce', undefined] as const;
      const app = graph(State)
        .node('pay', async (_s, c) => ({
          trail: await Promise.all(modes.map((mode) => c.effect(`pay-${String(mode)}`, { mode, idempotencyKey: `k-${String(mode)}`, probe: () => null, run: () => `paid ${String(mode)}` }))),
        }))
        .edge(START, 'pay')
        .edge('pay', END)
        .compile({ engine: ctx.engine, retry: { maxAttempts: 1 } });
      expect((await app.run({ thread: 't' })).state.trail).toEqual(['paid atLeastOnce', 'paid atMostOnce', 'paid undefined']);
    });
  });

  describe('ledger hit', () => {
    it('an effect whose outcome is in the ledger is not run again when its node is retried; the stored outcome is returned', async () => {
      let failures = 1;
      const { app, runKeys, kinds } = effectApp({ nodeFails: () => failures-- > 0, maxAttempts: 2 });
      const result = await app.run({ thread: 't' });
      expect(runKeys).toHaveLength(1);
      expect(result.state.outcome).toBe('delivered-1-to-alice');
      expect(kinds('effect.hit')).toHaveLength(1);
      const body = (await bodies(ctx.engine, 't'))[2]!;
      expect(body.effects?.map((e) => e.name)).toEqual(['deliver']);
    });

    it('the outcome is served from the ledger to a later run after the thread failed', async () => {
      let broken = true;
      const { app, runKeys } = effectApp({ nodeFails: () => broken });
      await expect(app.run({ thread: 't' })).rejects.toMatchObject({ code: 'ERR_NODE_FAILED' });
      broken = false;
      const result = await app.run({ thread: 't' });
      expect(runKeys).toHaveLength(1);
      expect(result.state.outcome).toBe('delivered-1-to-alice');
    });

    it('the step commits only once every effect has its outcome, even if the node did not await it', async () => {
      const app = graph(State)
        .node('n', (_s, c) => {
          void c.effect('late', {
            run: async () => {
              await sleep(30);
              return 'landed';
            },
          });
          return { trail: ['returned early'] };
        })
        .edge(START, 'n')
        .edge('n', END)
        .compile({ engine: ctx.engine, retry: { maxAttempts: 1 } });
      await app.run({ thread: 't' });
      expect((await effectsOf('t')).map((e) => [e.status, e.outcome])).toEqual([['done', '"landed"']]);
      expect((await bodies(ctx.engine, 't'))[1]!.effects?.map((e) => e.name)).toEqual(['late']);
    });
  });

  describe('recovery of an intent without an outcome', () => {
    /** First run: `run` throws, retries exhausted: the intent stays without an outcome. */
    async function leaveIntent(setup: ReturnType<typeof effectApp>) {
      await expect(setup.app.run({ thread: 't' })).rejects.toMatchObject({ code: 'ERR_NODE_FAILED' });
      const [entry] = await effectsOf('t');
      expect(entry).toMatchObject({ status: 'intent', outcome: null, name: 'deliver' });
      expect(setup.runKeys).toEqual([entry!.key]);
      return entry!.key;
    }

    it('probe finds it: the outcome is the probe result and run is not called', async () => {
      let broken = true;
      const probed: string[] = [];
      const setup = effectApp({
        runFails: () => broken,
        spec: () => ({
          probe: (key) => {
            probed.push(key);
            return 'found-by-probe';
          },
        }),
      });
      const key = await leaveIntent(setup);
      broken = false;
      const result = await setup.app.run({ thread: 't' });
      expect(result.state.outcome).toBe('found-by-probe');
      expect(setup.runKeys).toHaveLength(1);
      expect(probed).toEqual([key]);
      expect(await effectsOf('t')).toEqual([expect.objectContaining({ key, status: 'done', outcome: '"found-by-probe"' })]);
      expect(setup.kinds('effect.outcome').map((e) => (e as { source: string }).source)).toEqual(['probe']);
    });

    it('probe says absent: run is called again with the same key', async () => {
      let broken = true;
      const setup = effectApp({ runFails: () => broken, spec: () => ({ probe: () => null }) });
      const key = await leaveIntent(setup);
      broken = false;
      const result = await setup.app.run({ thread: 't' });
      expect(setup.runKeys).toEqual([key, key]);
      expect(result.state.outcome).toBe('delivered-2-to-alice');
      expect(setup.kinds('effect.run').map((e) => (e as { rerun: boolean }).rerun)).toEqual([false, true]);
    });

    it('no probe, atLeastOnce (the default): run is called again with the same key', async () => {
      let broken = true;
      const setup = effectApp({ runFails: () => broken });
      const key = await leaveIntent(setup);
      broken = false;
      await setup.app.run({ thread: 't' });
      expect(setup.runKeys).toEqual([key, key]);
    });

    it('no probe, atMostOnce: NeedsAttentionError, thread needs_attention; resolveEffect then run completes with that outcome', async () => {
      let broken = true;
      const setup = effectApp({ runFails: () => broken, spec: () => ({ mode: 'atMostOnce' }), maxAttempts: 1 });
      const key = await leaveIntent(setup);
      broken = false;

      const error = await caught(() => setup.app.run({ thread: 't' }));
      expect(NeedsAttentionError.is(error)).toBe(true);
      expect(error.code).toBe('ERR_NEEDS_ATTENTION');
      expect((error as NeedsAttentionError).effectKey).toBe(key);
      expect(setup.runKeys).toHaveLength(1);
      const stuck = (await setup.app.getThread({ thread: 't' }))!;
      expect(stuck.status).toBe('needs_attention');
      expect(stuck.lastError?.code).toBe('ERR_NEEDS_ATTENTION');
      // Asking again does not guess either.
      await expect(setup.app.run({ thread: 't' })).rejects.toMatchObject({ code: 'ERR_NEEDS_ATTENTION' });
      expect(setup.runKeys).toHaveLength(1);

      await setup.app.resolveEffect({ thread: 't', idempotencyKey: key, outcome: 'checked-by-a-person' });
      const result = await setup.app.run({ thread: 't' });
      expect(result.status).toBe('completed');
      expect(result.state.outcome).toBe('checked-by-a-person');
      expect(setup.runKeys).toHaveLength(1);
      expect((await setup.app.getThread({ thread: 't' }))!.status).toBe('completed');
    });

    it('atMostOnce in doubt caught by the node (an agent library making it a message) still puts the thread in needs_attention; later calls stop too', async () => {
      let broken = true;
      let after = 0;
      const app = graph(State)
        .node('send', async (_s, c) => {
          const outcome = await c
            .effect<string>('deliver', { idempotencyKey: 'd-1', mode: 'atMostOnce', run: () => { if (broken) throw new Error('lost'); return 'sent'; } })
            .catch((e: Error) => (broken ? Promise.reject(e) : `caught: ${e.message}`));
          const next = await c.record('after', () => ++after).catch(() => -1);
          return { outcome: `${outcome} ${next}` };
        })
        .edge(START, 'send')
        .edge('send', END)
        .compile({ engine: ctx.engine, retry: { maxAttempts: 1 } });
      await expect(app.run({ thread: 't' })).rejects.toMatchObject({ code: 'ERR_NODE_FAILED' });
      broken = false;
      await expect(app.run({ thread: 't' })).rejects.toMatchObject({ code: 'ERR_NEEDS_ATTENTION', effectKey: 'd-1' });
      expect((await app.getThread({ thread: 't' }))!.status).toBe('needs_attention');
      expect(after).toBe(0);
      await app.resolveEffect({ thread: 't', idempotencyKey: 'd-1', outcome: 'checked' });
      expect((await app.run({ thread: 't' })).state.outcome).toBe('checked 1');
    });

    it('resolveEffect with a key the thread does not have fails and names the key', async () => {
      const setup = effectApp();
      await setup.app.run({ thread: 't' });
      const error = await caught(() => setup.app.resolveEffect({ thread: 't', idempotencyKey: 'eff_no_such_key', outcome: 'x' }));
      expect(error.message).toContain('eff_no_such_key');
    });

    it('atMostOnce with a probe recovers through the probe instead of stopping', async () => {
      let broken = true;
      const setup = effectApp({ runFails: () => broken, spec: () => ({ mode: 'atMostOnce', probe: () => 'probe-says-done' }) });
      await leaveIntent(setup);
      broken = false;
      expect((await setup.app.run({ thread: 't' })).state.outcome).toBe('probe-says-done');
      expect(setup.runKeys).toHaveLength(1);
    });
  });

  describe('arguments', () => {
    it('the same key re-executed with different args raises EffectConflictError and runs nothing', async () => {
      let broken = true;
      let to = 'alice';
      const setup = effectApp({ runFails: () => broken, spec: () => ({ args: { to } }) });
      await expect(setup.app.run({ thread: 't' })).rejects.toMatchObject({ code: 'ERR_NODE_FAILED' });
      broken = false;
      to = 'bob';
      const error = await caught(() => setup.app.run({ thread: 't' }));
      expect(EffectConflictError.is(error)).toBe(true);
      expect(error.code).toBe('ERR_EFFECT_CONFLICT');
      expect(setup.runKeys).toHaveLength(1);
      expect((await setup.app.getThread({ thread: 't' }))!.status).toBe('failed');

      // With the original arguments the thread recovers.
      to = 'alice';
      expect((await setup.app.run({ thread: 't' })).status).toBe('completed');
      expect(setup.runKeys).toHaveLength(2);
    });

    it('the same args re-executed are not a conflict (args digest is stable across key order)', async () => {
      let broken = true;
      let flip = false;
      const setup = effectApp({
        runFails: () => broken,
        spec: () => ({ args: flip ? { b: 2, a: 1 } : { a: 1, b: 2 } }),
      });
      await expect(setup.app.run({ thread: 't' })).rejects.toMatchObject({ code: 'ERR_NODE_FAILED' });
      broken = false;
      flip = true;
      expect((await setup.app.run({ thread: 't' })).status).toBe('completed');
    });
  });
});
