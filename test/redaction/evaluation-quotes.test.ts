/**
 * An evaluation report's divergence diff holds only the fields that differ, so a
 * changed field that quotes a hidden one that did not change (an answer repeating the
 * customer's email) must still come out redacted: the report's redaction learns the
 * stored state at the divergence first, as `cairn diff` does.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineState } from '../../src/state/schema.js';
import { field } from '../../src/state/fields.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import { redactEvaluationReport } from '../../src/inspect/redaction.js';
import type { Engine } from '../../src/contracts/engine.js';
import { ENGINES, useEngine } from '../runtime/engines.js';

const EMAIL = 'ana.quoted@example.com';
const State = defineState({
  fields: { email: field.model(z.string(), { redact: true }), reply: field.model(z.string().optional()) },
});

/** One model call, whose answer `model` writes from the email. */
const agent = (engine: Engine, model: (email: string) => string) =>
  graph(State)
    .node('answer', async (s, ctx) => ({ reply: await ctx.record('llm', async () => model(s.email), { kind: 'model' }) }))
    .edge(START, 'answer')
    .edge('answer', END)
    .compile({ engine });

describe.each(ENGINES)('an evaluation report on %s', (name) => {
  const ctx = useEngine(name);

  it("hides a hidden field's value where a changed field quotes it", async () => {
    const stored = agent(ctx.engine, () => 'Thanks, we will write back.');
    await stored.run({ thread: 'quote', input: { email: EMAIL } });
    const candidate = agent(ctx.engine, (email) => `Thanks, we will write to ${email}.`);

    const report = await stored.evaluate({ threads: ['quote'], with: candidate });
    expect(report.threads[0]!.outcome).toBe('diverged');
    // The raw report quotes it: the test would prove nothing otherwise.
    expect(JSON.stringify(report)).toContain(EMAIL);

    const shown = await redactEvaluationReport(ctx.engine, report, {}, stored.redaction);
    const text = JSON.stringify(shown);
    expect(text).not.toContain(EMAIL);
    expect(text).toContain('Thanks, we will write to');
  });
});
