/**
 * `ctx.effect(name, { commit: 'with-step' })`: the effect's intent and outcome are
 * written by the step's commit, in its transaction, so a step with one effect is one
 * commit. Proven on memory, SQLite and PostgreSQL: the ledger holds the done entry once
 * the step committed and nothing before; every way a result leaves the happy path (the
 * node throws and retries, stops at an interrupt, waits on a sibling, its merge fails)
 * writes the entry first, so the effect is served, not run again; the options it
 * cannot keep are refused. The crash cases SIGKILL a real process on a SQLite file.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { InvalidOptionError } from '../../src/errors.js';
import { defineState } from '../../src/state/schema.js';
import { field } from '../../src/state/fields.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import type { Engine } from '../../src/contracts/engine.js';
import { ENGINES, caught, useEngine } from './engines.js';
import { ensureBuilt } from '../artifacts/build.js';
import { runFixture } from '../crash/crash-setup.js';
import { tempDir } from '../helpers/temp-dirs.js';

const State = defineState({
  fields: {
    n: field.model(z.number(), { default: 0 }),
    receipts: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
  },
});

/** Counts what reaches the engine's ledger and checkpointer, to tell how many commits a step made. */
function counting(engine: Engine): { engine: Engine; calls: string[] } {
  const calls: string[] = [];
  const wrap = <T extends object>(target: T, label: string, methods: string[]): T =>
    new Proxy(target, {
      get(t, prop, receiver) {
        const value = Reflect.get(t, prop, receiver);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          if (methods.includes(String(prop))) calls.push(`${label}.${String(prop)}`);
          return (value as (...a: unknown[]) => unknown).apply(t, args);
        };
      },
    });
  return {
    calls,
    engine: { ...engine, checkpointer: wrap(engine.checkpointer, 'cp', ['commitStep']), ledger: wrap(engine.ledger, 'ledger', ['writeIntent', 'writeOutcome', 'writeRecord']) } as Engine,
  };
}

describe.each(ENGINES)("effects with commit: 'with-step' on %s", (name) => {
  const ctx = useEngine(name);

  it('writes no ledger row before the commit and the done entry with it: one commit per step', async () => {
    const { engine, calls } = counting(ctx.engine);
    const keys: string[] = [];
    let ledgerRowsDuringEffect = -1;
    const app = graph(State)
      .node('charge', async (s, c) => {
        const receipt = await c.effect('charge', {
          commit: 'with-step',
          run: async (key) => {
            keys.push(key);
            ledgerRowsDuringEffect = (await ctx.engine.ledger.list('t1')).length;
            return `receipt-${s.n}`;
          },
        });
        return { n: s.n + 1, receipts: [receipt] };
      })
      .edge(START, 'charge')
      .conditionalEdge('charge', (s) => (s.n < 3 ? 'charge' : END))
      .compile({ engine });
    const { state } = await app.run({ thread: 't1' });
    expect(state.receipts).toEqual(['receipt-0', 'receipt-1', 'receipt-2']);
    expect(ledgerRowsDuringEffect).toBe(2); // the two earlier steps' entries, not this one's intent
    expect(calls.filter((c) => c.startsWith('ledger.'))).toEqual([]);
    const entries = await ctx.engine.ledger.list('t1');
    expect(entries.map((e) => [e.key, e.status, e.kind, e.name])).toEqual(keys.map((k) => [k, 'done', 'effect', 'charge']));
    expect(entries.every((e) => e.completedAt !== null && e.completedAt >= e.createdAt)).toBe(true);
    expect((await app.verify({ thread: 't1' })).ok).toBe(true);
    // Replay serves every outcome from the ledger: nothing is called again.
    const replayed = await app.replay({ thread: 't1', from: 0 });
    expect(replayed.sameStates).toBe(true);
    expect(replayed.steps.length).toBeGreaterThanOrEqual(3);
    expect(keys).toHaveLength(3);
  });

  it('a node that throws after the effect writes it first: the retry is served, not run again', async () => {
    let runs = 0;
    let fails = 1;
    const app = graph(State)
      .node('charge', async (_s, c) => {
        const receipt = await c.effect('charge', { commit: 'with-step', run: () => `receipt-${++runs}` });
        if (fails-- > 0) throw new Error('failed after the effect');
        return { receipts: [receipt] };
      })
      .edge(START, 'charge')
      .edge('charge', END)
      .compile({ engine: ctx.engine, retry: { maxAttempts: 2, initialDelayMs: 0 } });
    const { state } = await app.run({ thread: 't1' });
    expect(runs).toBe(1);
    expect(state.receipts).toEqual(['receipt-1']);
    expect((await ctx.engine.ledger.list('t1')).map((e) => [e.status, e.outcome !== null])).toEqual([['done', true]]);
  });

  it('a node that stops at an interrupt after the effect keeps it: the resumed node is served', async () => {
    let runs = 0;
    const app = graph(State)
      .node('charge', async (_s, c) => {
        const receipt = await c.effect('charge', { commit: 'with-step', run: () => `receipt-${++runs}` });
        const ok = await c.interrupt<boolean>({ confirm: receipt });
        return { receipts: [ok ? receipt : 'refused'] };
      })
      .edge(START, 'charge')
      .edge('charge', END)
      .compile({ engine: ctx.engine });
    expect((await app.run({ thread: 't1' })).status).toBe('interrupted');
    expect((await ctx.engine.ledger.list('t1')).map((e) => e.status)).toEqual(['done']);
    const { state } = await app.resume({ thread: 't1', answer: true });
    expect(state.receipts).toEqual(['receipt-1']);
    expect(runs).toBe(1);
  });

  it('parallel tasks: one kept for its sibling has its entry written, and the step commits every entry once', async () => {
    const runs: string[] = [];
    let siblingFails = 1;
    const app = graph(State)
      .node('fast', async (_s, c) => ({ receipts: [await c.effect('fast', { commit: 'with-step', run: (key) => (runs.push(`fast ${key}`), 'fast') })] }))
      .node('slow', async (_s, c) => {
        await new Promise((r) => setTimeout(r, 30));
        const receipt = await c.effect('slow', { commit: 'with-step', run: (key) => (runs.push(`slow ${key}`), 'slow') });
        if (siblingFails-- > 0) throw new Error('the slow sibling failed');
        return { receipts: [receipt] };
      })
      .edge(START, 'fast')
      .edge(START, 'slow')
      .edge('fast', END)
      .edge('slow', END)
      .compile({ engine: ctx.engine, retry: { maxAttempts: 1 } });
    expect(await caught(() => app.run({ thread: "t1" }))).toBeInstanceOf(Error);
    // Both effects ran once and both entries are done: the failed run left nothing in doubt.
    expect(runs).toHaveLength(2);
    expect((await ctx.engine.ledger.list('t1')).map((e) => [e.name, e.status]).sort()).toEqual([['fast', 'done'], ['slow', 'done']]);
    siblingFails = 0;
    const { state } = await app.run({ thread: 't1' });
    expect([...state.receipts].sort()).toEqual(['fast', 'slow']);
    expect(runs).toHaveLength(2);
    expect((await app.verify({ thread: 't1' })).ok).toBe(true);
  });

  it('a step whose merge fails after the effect (a write the schema refuses) keeps it: the next run is served', async () => {
    let runs = 0;
    let badWrite = true;
    const app = graph(State)
      .node('charge', async (_s, c) => {
        const receipt = await c.effect('charge', { commit: 'with-step', run: () => `receipt-${++runs}` });
        return badWrite ? { n: 'not a number' as never, receipts: [receipt] } : { receipts: [receipt] };
      })
      .edge(START, 'charge')
      .edge('charge', END)
      .compile({ engine: ctx.engine, retry: { maxAttempts: 1 } });
    expect(await caught(() => app.run({ thread: 't1' }))).toBeInstanceOf(Error);
    expect((await ctx.engine.ledger.list('t1')).map((e) => e.status)).toEqual(['done']);
    badWrite = false;
    expect((await app.run({ thread: 't1' })).state.receipts).toEqual(['receipt-1']);
    expect(runs).toBe(1);
  });

  it('a caller key used twice in one node is run once', async () => {
    let runs = 0;
    const app = graph(State)
      .node('charge', async (_s, c) => {
        const a = await c.effect('charge', { idempotencyKey: 'order-7', commit: 'with-step', run: () => `receipt-${++runs}` });
        const b = await c.effect('charge', { idempotencyKey: 'order-7', commit: 'with-step', run: () => `receipt-${++runs}` });
        return { receipts: [a, b] };
      })
      .edge(START, 'charge')
      .edge('charge', END)
      .compile({ engine: ctx.engine });
    expect((await app.run({ thread: 't1' })).state.receipts).toEqual(['receipt-1', 'receipt-1']);
    expect((await ctx.engine.ledger.list('t1')).map((e) => e.key)).toEqual(['order-7']);
  });

  it('refuses what it cannot keep: a probe, atMostOnce, an unknown value', async () => {
    for (const spec of [{ probe: () => null }, { mode: 'atMostOnce' as const }, { commit: 'later' }]) {
      let ran = false;
      const app = graph(State)
        .node('charge', async (_s, c) => ({ receipts: [await c.effect('charge', { commit: 'with-step', ...spec, run: () => ((ran = true), 'r') } as never)] }))
        .edge(START, 'charge')
        .edge('charge', END)
        .compile({ engine: ctx.engine, retry: { maxAttempts: 1 } });
      const error = await caught(() => app.run({ thread: `t-${JSON.stringify(spec)}` }));
      expect(error).toBeInstanceOf(InvalidOptionError);
      expect(error.code).toBe('ERR_INVALID_OPTION');
      expect(ran).toBe(false);
    }
  });
});

describe("with-step effects under SIGKILL (a real process, SQLite file)", () => {
  const script = fileURLToPath(new URL('../fixtures/with-step-process.mjs', import.meta.url));

  /** Runs the fixture armed at `crashAt`, then again to completion; the effect log's lines and the final result. */
  async function crashAndFinish(crashAt: string) {
    ensureBuilt();
    const dir = tempDir('cairn-with-step-');
    const db = join(dir, 'cairn.db');
    const log = join(dir, 'effects.log');
    const crashed = await runFixture(script, [db, log], crashAt);
    expect(crashed.signal).toBe('SIGKILL');
    const finished = await runFixture(script, [db, log]);
    expect(finished.exitCode).toBe(0);
    const lines = readFileSync(log, 'utf8').trim().split('\n');
    return { lines, result: finished.lines.find((l) => l.type === 'result') as unknown as { status: string; state: { n: number; done: string[] } } };
  }

  it('killed after the effect and before the commit: run again with the same key, one entry per step', async () => {
    const { lines, result } = await crashAndFinish('after-effect:charge#2');
    expect(result.status).toBe('completed');
    expect(result.state.done).toEqual(['receipt-0', 'receipt-1', 'receipt-2']);
    // Step 1's effect was asked twice, with one key (the external system absorbs it); the others once.
    const byStep = lines.map((l) => l.split(' '));
    expect(byStep.map(([step]) => step)).toEqual(['0', '1', '1', '2']);
    expect(byStep[1]![1]).toBe(byStep[2]![1]);
  });

  it('killed after the commit: the effect is not asked again', async () => {
    const { lines, result } = await crashAndFinish('after-commit:charge#2');
    expect(result.state.done).toEqual(['receipt-0', 'receipt-1', 'receipt-2']);
    expect(lines.map((l) => l.split(' ')[0])).toEqual(['0', '1', '2']);
  });
});
