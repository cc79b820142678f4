/**
 * Replay and evaluation report a call the stored run made and the code no longer makes
 * (`not-called`): new code that skips a model call, a tool record or an effect does not
 * pass for `same`. Code that makes every call it made stays `same`.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Engine } from '../../src/contracts/engine.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import { field } from '../../src/state/fields.js';
import { defineState } from '../../src/state/schema.js';
import { ENGINES, useEngine } from './engines.js';

const State = defineState({ fields: { topic: field.model(z.string()), draft: field.model(z.string().optional()), sent: field.model(z.string().optional()) } });

/** `skip`: which call the code under evaluation leaves out. */
function writer(engine: Engine, skip: 'none' | 'model' | 'effect' = 'none') {
  return graph(State)
    .node('write', async (s, ctx) => {
      const draft = skip === 'model' ? `A post about ${s.topic}` : await ctx.record('model', async () => `A post about ${s.topic}`, { kind: 'model', model: 'm-1' });
      const sent = skip === 'effect' ? 'not sent' : await ctx.effect('publish', { idempotencyKey: `pub-${s.topic}`, run: async () => 'sent' });
      return { draft, sent };
    })
    .edge(START, 'write')
    .edge('write', END)
    .compile({ engine });
}

describe.each(ENGINES)('skipped calls on %s', (name) => {
  const ctx = useEngine(name);

  it('evaluate: code that no longer makes the model call is diverged (not-called), the same code is same', async () => {
    await writer(ctx.engine).run({ thread: 't', input: { topic: 'cairns' } });
    expect((await writer(ctx.engine).evaluate({ threads: ['t'] })).summary).toMatchObject({ same: 1, diverged: 0 });
    const report = await writer(ctx.engine, 'model').evaluate({ threads: ['t'] });
    expect(report.summary).toMatchObject({ same: 0, diverged: 1 });
    expect(report.threads[0]!.firstDivergence!.calls).toEqual([expect.objectContaining({ kind: 'not-called', name: 'model' })]);
  });

  it('replay: code that no longer makes the effect diverges at that step (not-called), naming it', async () => {
    await writer(ctx.engine).run({ thread: 't', input: { topic: 'cairns' } });
    expect((await writer(ctx.engine).replay({ thread: 't', from: 0 })).steps.every((s) => s.same)).toBe(true);
    const report = await writer(ctx.engine, 'effect').replay({ thread: 't', from: 0 });
    const diverged = report.steps.find((s) => !s.same)!;
    expect(diverged.divergences).toEqual([expect.objectContaining({ kind: 'not-called', name: 'publish' })]);
  });
});
