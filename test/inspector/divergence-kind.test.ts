/**
 * The evaluation page's words for a divergence (inspector-ui/src/divergence.ts), over
 * the reasons the runtime itself gives: a stored agent that looks a tool up and
 * charges an effect is evaluated against versions that ask another tool, the same
 * tool with other arguments, one tool call more, one effect more, the effect with
 * other arguments, and another next node. Each divergence read from a real evaluation,
 * labelled from its typed kind and, as a report saved before kinds existed, from its reason.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { divergenceKind } from '../../inspector-ui/src/divergence.js';
import { memory } from '../../src/engines/memory/index.js';
import type { Engine } from '../../src/contracts/engine.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import { field } from '../../src/state/fields.js';
import { defineState } from '../../src/state/schema.js';

const State = defineState({ fields: { q: field.model(z.string()), out: field.model(z.string(), { default: '' }) } });

type Variant = 'stored' | 'other-tool' | 'tool-args' | 'extra-tool' | 'extra-effect' | 'effect-args' | 'elsewhere';

function agent(engine: Engine, variant: Variant) {
  return graph(State)
    .node('work', async (s, ctx) => {
      const tool = variant === 'other-tool' ? 'tool:search' : 'tool:lookup';
      const found = await ctx.record(tool, () => `found ${s.q}`, { kind: 'tool', args: { q: variant === 'tool-args' ? 'other' : s.q } });
      if (variant === 'extra-tool') await ctx.record('tool:more', () => 'more', { kind: 'tool', args: {} });
      await ctx.effect('charge', { args: { amount: variant === 'effect-args' ? 6 : 5 }, run: () => 'charged' });
      if (variant === 'extra-effect') await ctx.effect('email', { run: () => 'sent' });
      return { out: found };
    })
    .node('done', async () => ({}))
    .node('other', async () => ({}))
    .edge(START, 'work')
    .edge('work', variant === 'elsewhere' ? 'other' : 'done')
    .edge('done', END)
    .edge('other', END)
    .compile({ engine });
}

describe('divergenceKind, over the runtime’s reasons', () => {
  it('names each kind of divergence an evaluation reports', async () => {
    const engine = memory();
    const stored = agent(engine, 'stored');
    await stored.run({ thread: 't', input: { q: 'x' } });
    const kinds: Record<string, string> = {};
    const typed: Record<string, string | undefined> = {};
    const fromText: Record<string, string> = {};
    for (const variant of ['other-tool', 'tool-args', 'extra-tool', 'extra-effect', 'effect-args', 'elsewhere'] as const) {
      const report = await stored.evaluate({ threads: ['t'], with: agent(engine, variant) });
      const call = report.threads[0]!.firstDivergence?.calls[0];
      expect(call, variant).toBeDefined();
      kinds[variant] = divergenceKind(call!);
      typed[variant] = call!.kind;
      // A report saved before divergences had a kind is labelled from its reason.
      const { kind: _kind, ...untyped } = call!;
      fromText[variant] = divergenceKind(untyped);
    }
    expect(typed).toEqual({
      'other-tool': 'other-call',
      'tool-args': 'other-arguments',
      'extra-tool': 'not-recorded',
      'extra-effect': 'effect-not-recorded',
      'effect-args': 'effect-other-arguments',
      elsewhere: 'next',
    });
    expect(fromText).toEqual(kinds);
    expect(kinds).toEqual({
      'other-tool': 'a tool the record lacks',
      'tool-args': 'other tool arguments',
      'extra-tool': 'a tool call the record lacks',
      'extra-effect': 'an effect the record does not hold',
      'effect-args': 'other effect arguments',
      elsewhere: 'the run went elsewhere',
    });
    expect((await stored.evaluate({ threads: ['t'] })).summary.same).toBe(1);
  });
});
