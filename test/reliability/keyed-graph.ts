/**
 * Shared by the fault tests: a three-step graph whose steps each record a value and
 * perform a keyed effect on an "external system" that counts requests per key (with a
 * probe asking it whether a key was applied), the last one writing a store item too;
 * a loop that runs a thread until it completes, keeping every error it met; and the
 * checks every recovered thread must pass.
 */
import { expect } from 'vitest';
import { z } from 'zod';
import type { Engine } from '../../src/contracts/engine.js';
import { CairnError, EngineError, ThreadBusyError } from '../../src/errors.js';
import { END, START, defineState, field, graph } from '../../src/index.js';
import { verifyThread } from '../../src/inspect/verify.js';
import type { PositionBody } from '../../src/runtime/position.js';
import { decode } from '../../src/codec/tagged-json.js';

export const KeyedState = defineState({
  fields: {
    n: field.model(z.number(), { default: 0 }),
    log: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
  },
});

export const KEYED_NODES = ['a', 'b', 'c'] as const;

/** The external system: requests per `thread/key`, every one counted, duplicates included. */
export class External {
  readonly requests = new Map<string, number>();
  apply(id: string): void {
    this.requests.set(id, (this.requests.get(id) ?? 0) + 1);
  }
  applied(id: string): boolean {
    return this.requests.has(id);
  }
}

/** The graph a → b → c on `engine`; each step's effect goes to `external`. */
export function keyedApp(engine: Engine, external: External, options: { leaseMs?: number } = {}) {
  const step = (name: string) => async (s: { n: number }, ctx: import('../../src/runtime/task-scope.js').NodeContext) => {
    const value = await ctx.record(`${name}.value`, () => s.n + 1);
    await ctx.effect(`${name}.send`, {
      run: (key) => {
        external.apply(`${ctx.threadId}/${key}`);
        return key;
      },
      probe: (key) => (external.applied(`${ctx.threadId}/${key}`) ? key : null),
    });
    if (name === 'c') await ctx.store.put(['prefs', ctx.threadId], 'last', { n: value });
    return { n: value, log: [name] };
  };
  return graph(KeyedState)
    .node('a', step('a'))
    .node('b', step('b'))
    .node('c', step('c'))
    .edge(START, 'a')
    .edge('a', 'b')
    .edge('b', 'c')
    .edge('c', END)
    .compile({ engine, name: 'keyed', retry: { maxAttempts: 1 }, leaseMs: options.leaseMs ?? 2_000 });
}

/** How running a thread until it completed went: how many runs it took and every error they ended with. */
export interface Recovery {
  runs: number;
  errors: unknown[];
  status: string | undefined;
}

/**
 * Runs `thread` (a fresh app each time, as a new process would) until it completes or
 * `maxRuns` ran. `between` is called after each failed run (to heal the engine, say).
 */
export async function runUntilComplete(makeApp: () => ReturnType<typeof keyedApp>, thread: string, maxRuns = 4, between?: (run: number) => void | Promise<void>): Promise<Recovery> {
  const errors: unknown[] = [];
  for (let runs = 1; runs <= maxRuns; runs++) {
    try {
      const result = await makeApp().run({ thread, onBusy: 'wait', waitTimeoutMs: 10_000 });
      return { runs, errors, status: result.status };
    } catch (error) {
      errors.push(error);
      await between?.(runs);
    }
  }
  return { runs: maxRuns, errors, status: undefined };
}

/** Every error is typed: a CairnError, and one that says the storage failed or was busy (never a raw driver error). */
export function expectTypedErrors(errors: unknown[], label: string): void {
  for (const error of errors) {
    expect(CairnError.is(error), `${label}: ${String(error)}`).toBe(true);
    expect(EngineError.is(error) || ThreadBusyError.is(error), `${label}: ${String(error)}`).toBe(true);
  }
}

/**
 * The thread completed with every step once: one line of positions (input, a, b, c), each
 * node in exactly one position; every effect applied once per key (one request each: the
 * probe answers for a run whose outcome was lost); the store item written once; the chain verifies.
 */
export async function expectEveryStepOnce(engine: Engine, thread: string, external: External, label: string): Promise<void> {
  const positions = await engine.checkpointer.getPositions(thread, '', { from: 0, to: 1_000 });
  expect(positions.map((p) => p.parent), `${label}: one line of positions`).toEqual(positions.map((p) => (p.seq === 0 ? null : p.seq - 1)));
  const nodes = positions.flatMap((p) => decode<PositionBody>(p.body).nodes);
  expect(nodes, `${label}: every step committed once`).toEqual([...KEYED_NODES]);
  const effects = (await engine.ledger.list(thread)).filter((e) => e.kind === 'effect');
  expect(effects.every((e) => e.status === 'done'), `${label}: every effect has its outcome`).toBe(true);
  const mine = [...external.requests].filter(([id]) => id.startsWith(`${thread}/`));
  expect(mine.map(([, n]) => n), `${label}: one request per key (${mine.map(([id]) => id).join(', ')})`).toEqual([1, 1, 1]);
  // The store write (an effect of its own) applied once.
  expect((await engine.store.get(['prefs', thread], 'last'))?.version, `${label}: the store item is written once`).toBe(1);
  const report = await verifyThread(engine, thread);
  expect(report.ok, `${label}: ${JSON.stringify(report.problems)}`).toBe(true);
}
