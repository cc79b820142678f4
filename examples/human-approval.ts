/**
 * A refund that needs a person's approval, answered from another process. The
 * `review` node records the model's recommendation, then asks with
 * `await ctx.interrupt(question, { answer: schema })`: the first run stops there
 * (the thread is `interrupted`, nothing after the call ran, no empty step is
 * committed) and the process exits. A second process, as a support tool would days
 * later, answers with `app.resume({ thread, answer, actor })`: the node re-executes,
 * served the recorded recommendation (the model is not asked again), the call
 * returns the answer, and the run goes on to pay the refund through `ctx.effect`.
 * An answer the schema refuses is `StateValidationError` and changes nothing.
 *
 *     npx tsx examples/human-approval.ts
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { defineState, field, graph, START, END, StateValidationError } from 'cairn';
import { sqlite } from 'cairn/sqlite';

const State = defineState({
  fields: {
    order: field.model(z.string()),
    amount: field.model(z.number()),
    outcome: field.model(z.string(), { default: '' }),
  },
});

const [, , role = 'agent', dbArg] = process.argv;
const db = dbArg ?? join(mkdtempSync(join(tmpdir(), 'cairn-example-approval-')), 'support.db');
let modelCalls = 0;

const app = graph(State)
  .node('review', async (s, ctx) => {
    const advice = await ctx.record('model', async () => {
      modelCalls++;
      return s.amount > 100 ? 'refund: the order arrived broken' : 'refund: small amount';
    });
    const approved = await ctx.interrupt({ question: `refund ${s.amount} EUR for ${s.order}?`, advice }, { answer: z.boolean() });
    return { outcome: approved ? 'approved' : 'declined' };
  })
  .node('pay', async (s, ctx) => {
    if (s.outcome !== 'approved') return {};
    const receipt = await ctx.effect('refund', { idempotencyKey: `refund-${s.order}`, run: async (key) => ({ id: `R-${key}` }) });
    return { outcome: `refunded (${receipt.id})` };
  })
  .edge(START, 'review')
  .edge('review', 'pay')
  .edge('pay', END)
  .compile({ engine: sqlite(db) });

if (role === 'agent') {
  const paused = await app.run({ thread: 'ticket-311', input: { order: 'order-77', amount: 129 } });
  const question = paused.interrupts[0]!;
  console.log(`agent:    ${paused.status}, asks "${(question.payload as { question: string }).question}" (model calls: ${modelCalls})`);
  // The person answers later, from another process: a support tool, a CLI, a webhook.
  const here = fileURLToPath(import.meta.url);
  const answered = spawnSync(process.execPath, [...process.execArgv, here, 'reviewer', db], { encoding: 'utf8' });
  process.stdout.write(answered.stdout);
  if (answered.status !== 0) throw new Error(answered.stderr);
  const steps = (await app.history({ thread: 'ticket-311' })).map((p) => p.kind).reverse();
  console.log(`history:  ${steps.join(' → ')}`);
} else {
  try {
    await app.resume({ thread: 'ticket-311', answer: 'sure', actor: 'ana@support' });
  } catch (error) {
    if (!(error instanceof StateValidationError)) throw error;
    console.log(`reviewer: "sure" refused (${error.code}); nothing changed`);
  }
  const done = await app.resume({ thread: 'ticket-311', answer: true, actor: 'ana@support' });
  console.log(`reviewer: ${done.status}, ${done.state.outcome} (model calls in this process: ${modelCalls})`);
}
