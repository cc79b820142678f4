/**
 * @module bench/scale/workflow
 * The workflow every contender runs: S steps, each making one keyed effect against
 * the local HTTP server and appending a ~1 KB item. In cairn, a node that loops S
 * times (`ctx.effect` with its derived key and `commit: 'with-step'`, an `append` field); in DBOS the same as
 * S `DBOS.runStep` calls whose outputs are the items (see child.ts).
 */
import { z } from 'zod';
import { END, START, defineState, field, graph } from '../../dist/index.js';
import type { Engine } from '../../dist/contracts/engine.js';
import type { EffectCommit } from '../../dist/index.js';
import { makeMessage } from '../workload.js';
import { applyEffect } from './effect-server.js';

const Item = z.object({ role: z.enum(['user', 'assistant']), content: z.string(), index: z.number() });

export const ScaleState = defineState({
  fields: {
    n: field.model(z.number(), { default: 0 }),
    items: field.model(z.array(Item), { reduce: 'append', default: [] }),
  },
});

/** The graph's name, which workers claim by. */
export const SCALE_GRAPH = 'scale-bench';

export interface ScaleAppOptions {
  engine: Engine;
  steps: number;
  effectUrl: string;
  leaseMs?: number;
  /** When the effect's ledger entry is written (default: run.ts's `--effect-commit`, passed down as CAIRN_BENCH_EFFECT_COMMIT; else `with-step`). */
  effectCommit?: EffectCommit;
  /** Called as each step starts (latency samples). */
  onStep?: (threadId: string, step: number) => void;
}

/** The cairn app of the bench: `steps` steps of one effect and one ~1 KB appended item. */
export function buildScaleApp({ engine, steps, effectUrl, leaseMs, onStep, effectCommit = (process.env.CAIRN_BENCH_EFFECT_COMMIT as EffectCommit | undefined) ?? 'with-step' }: ScaleAppOptions) {
  return graph(ScaleState)
    .node('step', async (s, ctx) => {
      onStep?.(ctx.threadId, s.n);
      // The server deduplicates by key, as DBOS's steps assume of what they call: the
      // effect's intent and outcome go with the step's commit (one commit per step, as a DBOS step).
      await ctx.effect('charge', { commit: effectCommit, run: (key) => applyEffect(effectUrl, key).then(() => key) });
      return { n: s.n + 1, items: [makeMessage(s.n)] };
    })
    .edge(START, 'step')
    .conditionalEdge('step', (s) => (s.n < steps ? 'step' : END))
    .compile({ engine, name: SCALE_GRAPH, recursionLimit: steps + 5, retry: { maxAttempts: 1 }, ...(leaseMs ? { leaseMs } : {}) });
}
