/**
 * A refund agent on the Vercel AI SDK with cairn persistence. `plan` runs the AI
 * SDK's own tool loop (`generateText` with tools and `stopWhen`): the model looks the
 * order up (`lookup_order`, a recorded tool) and proposes a refund; `approve` asks a
 * person (`ctx.interrupt`); `refund` pays it through a payments ledger kept in a file
 * (`ctx.effect` with an idempotency key and a probe) and stores the
 * receipt as an artifact; `reply` has the model write to the customer. Every model
 * call is recorded by `cairn/ai-sdk`, with its model id, tokens and latency.
 *
 * With `CRASH_AT_REFUND=1` the process kills itself with SIGKILL right after the
 * payment landed, before cairn recorded it; run it again and it probes the payments
 * file, finds the payment and goes on: one payment, never two, and no model call
 * made twice. At the end the stored thread is evaluated against a second model
 * (`app.evaluate`): the report says where its run would differ.
 *
 * The models are the AI SDK's mock models, so it runs offline. With
 * `AI_GATEWAY_API_KEY` set it uses real ones through the AI SDK's gateway instead
 * (`AGENT_MODEL`, default `openai/gpt-5-mini`; `AGENT_MODEL_B` for the evaluation,
 * default `anthropic/claude-haiku-4.5`). Data lives in `$AGENT_DIR` (default: a
 * folder in the OS temp dir); delete it to start over.
 *
 *     npx tsx examples/ai-sdk-agent.ts
 *     CRASH_AT_REFUND=1 npx tsx examples/ai-sdk-agent.ts; npx tsx examples/ai-sdk-agent.ts
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { gateway, generateText, stepCountIs, tool, type LanguageModel } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import type { LanguageModelV4, LanguageModelV4CallOptions } from '@ai-sdk/provider';
import { defineState, field, graph, START, END, type Engine } from 'cairn';
import { recordedModel, recordedTools } from 'cairn/ai-sdk';
import { fsArtifacts } from 'cairn/fs';
import { sqlite } from 'cairn/sqlite';

const dir = process.env.AGENT_DIR ?? join(tmpdir(), 'cairn-example-ai-sdk-agent');
mkdirSync(dir, { recursive: true });
const THREAD = 'refund-A-1001';
const PAYMENTS = join(dir, 'payments.log');

// ---- The models: mocks that behave like a tool-calling model, or real ones through the gateway.

const usage = (input: number, output: number) => ({ inputTokens: { total: input, noCache: input, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: output, text: output, reasoning: 0 } });
const text = (t: string, tokens = usage(60, 12)) => ({ content: [{ type: 'text' as const, text: t }], finishReason: { unified: 'stop' as const, raw: 'stop' }, usage: tokens, warnings: [] });

/** A mock that looks the order up first, then answers in its own words. */
function mockModel(id: string, words: { plan: string; reply: string }): LanguageModelV4 {
  return new MockLanguageModelV4({
    provider: 'mock',
    modelId: id,
    doGenerate: async ({ prompt }: LanguageModelV4CallOptions) => {
      const asked = JSON.stringify(prompt);
      if (asked.includes('Write to the customer')) return text(words.reply);
      if (!prompt.some((m) => m.role === 'tool')) {
        return { content: [{ type: 'tool-call', toolCallId: 'c1', toolName: 'lookup_order', input: '{"order":"A-1001"}' }], finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage: usage(40, 8), warnings: [] };
      }
      return text(words.plan);
    },
  });
}

const real = process.env.AI_GATEWAY_API_KEY !== undefined;
const modelA: LanguageModel = real
  ? gateway(process.env.AGENT_MODEL ?? 'openai/gpt-5-mini')
  : mockModel('mock-a', { plan: 'Refund 42 EUR: the lamp arrived broken.', reply: 'Your refund of 42 EUR is on its way.' });
const modelB: LanguageModel = real
  ? gateway(process.env.AGENT_MODEL_B ?? 'anthropic/claude-haiku-4.5')
  : mockModel('mock-b', { plan: 'Refund the full 42 EUR (broken on arrival).', reply: 'Your refund of 42 EUR is on its way.' });

// ---- The payments "API": a file of payments keyed by idempotency key, outliving the process.

function findPayment(key: string): { id: string; amount: number } | null {
  if (!existsSync(PAYMENTS)) return null;
  const line = readFileSync(PAYMENTS, 'utf8').split('\n').find((l) => l.startsWith(`${key} `));
  return line ? (JSON.parse(line.slice(key.length + 1)) as { id: string; amount: number }) : null;
}

function pay(key: string, amount: number): { id: string; amount: number } {
  const payment = { id: `pay_${key.slice(-4)}`, amount };
  appendFileSync(PAYMENTS, `${key} ${JSON.stringify(payment)}\n`);
  return payment;
}

// ---- The agent.

const Order = z.object({ id: z.string(), item: z.string(), amount: z.number(), status: z.string() });
const State = defineState({
  fields: {
    request: field.model(z.string()),
    order: field.model(Order.optional()),
    plan: field.model(z.string().optional()),
    approved: field.model(z.boolean().optional()),
    payment: field.model(z.object({ id: z.string(), amount: z.number() }).optional()),
    receipt: field.model(z.object({ id: z.string(), sha256: z.string(), media_type: z.string(), size_bytes: z.number() }).optional()),
    reply: field.model(z.string().optional()),
  },
});

const tools = recordedTools({
  lookup_order: tool({
    description: 'Look an order up by its id.',
    inputSchema: z.object({ order: z.string() }),
    execute: async ({ order }) => ({ id: order, item: 'desk lamp', amount: 42, status: 'delivered damaged' }),
  }),
});

function agent(engine: Engine, llm: LanguageModel) {
  const model = typeof llm === 'string' ? llm : recordedModel(llm as LanguageModelV4);
  return graph(State)
    .node('plan', async (s) => {
      const result = await generateText({ model, tools, stopWhen: stepCountIs(4), system: 'You handle refunds. Look the order up, then say in one line what to refund.', prompt: s.request });
      const looked = result.steps.flatMap((step) => step.toolResults).find((r) => r.toolName === 'lookup_order');
      return { plan: result.text, ...(looked ? { order: Order.parse(looked.output) } : {}) };
    })
    .node('approve', async (s, ctx) => ({ approved: await ctx.interrupt({ question: `Approve: ${s.plan}` }, { answer: z.boolean() }) }))
    .node('refund', async (s, ctx) => {
      const order = s.order!;
      const payment = await ctx.effect('refund', {
        idempotencyKey: `refund-${order.id}`,
        args: { order: order.id, amount: order.amount },
        run: (key) => {
          const paid = pay(key, order.amount);
          if (process.env.CRASH_AT_REFUND === '1') {
            console.log(`paid ${paid.id}; crashing before cairn records it`);
            process.kill(process.pid, 'SIGKILL');
          }
          return paid;
        },
        probe: (key) => {
          const found = findPayment(key);
          console.log(`probe ${key}: ${found ? `found ${found.id}, not paying again` : 'absent, paying'}`);
          return found;
        },
      });
      const receipt = await ctx.recordArtifact('receipt', () => `Refund ${payment.id}: ${payment.amount} EUR for ${order.id} (${order.item})\n`, { mediaType: 'text/plain' });
      return { payment, receipt };
    })
    .node('reply', async (s) => ({
      reply: (await generateText({ model, prompt: `Write to the customer: refund ${s.payment!.id} of ${s.payment!.amount} EUR for order ${s.order!.id} is paid.` })).text,
    }))
    .edge(START, 'plan')
    .edge('plan', 'approve')
    .conditionalEdge('approve', (s) => (s.approved ? 'refund' : END))
    .edge('refund', 'reply')
    .edge('reply', END)
    .compile({ engine, artifacts: fsArtifacts(join(dir, 'artifacts')) });
}

const engine = sqlite(join(dir, 'cairn.db'));
try {
  const app = agent(engine, modelA);
  let result = await app.run({ thread: THREAD, input: { request: 'My order A-1001 arrived broken, I want my money back.' } });
  if (result.status === 'interrupted') {
    console.log(`asks: ${JSON.stringify(result.interrupts[0]!.payload)}`);
    result = await app.resume({ thread: THREAD, answer: true, actor: 'support-lead' });
  }
  console.log(`status: ${result.status}; payment ${result.state.payment?.id}; reply: ${result.state.reply}`);
  const payments = existsSync(PAYMENTS) ? readFileSync(PAYMENTS, 'utf8').trim().split('\n').length : 0;
  console.log(`payments made: ${payments}`);
  if (modelA instanceof MockLanguageModelV4) console.log(`model calls made by this process: ${modelA.doGenerateCalls.length}`);
  for (const e of await engine.ledger.list(THREAD)) {
    if (e.meta?.kind === 'model') console.log(`model call ${e.name}: ${e.meta.model}, ${e.meta.usage?.inputTokens ?? '?'} in / ${e.meta.usage?.outputTokens ?? '?'} out tokens`);
  }

  const report = await app.evaluate({ threads: [THREAD], with: agent(engine, modelB) });
  const [t] = report.threads;
  console.log(`evaluated against the second model: ${t!.outcome}${t!.firstDivergence ? ` at seq ${t!.firstDivergence.seq} (${t!.firstDivergence.nodes.join(', ')}): ${t!.firstDivergence.differences.join(', ')}` : ''}`);
  console.log(`tokens: recorded ${report.summary.recorded.usage.totalTokens ?? 0}, evaluated ${report.summary.evaluated.usage.totalTokens ?? 0}`);
} finally {
  await engine.close();
}
