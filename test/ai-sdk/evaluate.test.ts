/**
 * Evaluation replay with the AI SDK: 20 threads stored by an agent on one mock model
 * (`MockLanguageModelV4`, tools recorded by cairn/ai-sdk) are evaluated against a
 * second mock model that diverges on some of them: asking a recorded tool with other
 * arguments, asking a tool the record does not hold (both stop the thread at that
 * step, the tool never runs), or answering other words (the state differs, with its
 * diff). The report counts same / diverged / failed, gives each thread's first
 * divergence and the new model's tokens beside the recorded ones; nothing is written
 * and no tool or effect runs. A streamed model call is streamed anew. On memory,
 * SQLite and PostgreSQL.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { generateText, stepCountIs, streamText, tool } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import type { LanguageModelV4CallOptions, LanguageModelV4GenerateResult } from '@ai-sdk/provider';
import { effectTool, recordedModel, recordedTools } from '../../src/ai-sdk/index.js';
import { defineState } from '../../src/state/schema.js';
import { field } from '../../src/state/fields.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import type { Engine } from '../../src/contracts/engine.js';
import { ENGINES, useEngine } from '../runtime/engines.js';
import { textModel, usage } from './mock-models.js';

const State = defineState({ fields: { city: field.model(z.string()), reply: field.model(z.string().optional()) } });
const CITIES = Array.from({ length: 20 }, (_, i) => `city-${i}`);
/** How the second model treats thread i: 0 other arguments, 1 another tool, 2 other words, else the same. */
const variant = (city: string) => Number(city.slice(5)) % 5;

const STOP = { unified: 'stop', raw: 'stop' } as const;
const TOOL_CALLS = { unified: 'tool-calls', raw: 'tool_calls' } as const;

function toolResults(options: LanguageModelV4CallOptions): Set<string> {
  return new Set(options.prompt.flatMap((m) => (m.role === 'tool' ? m.content.flatMap((p) => (p.type === 'tool-result' ? [p.toolName] : [])) : [])));
}
function cityOf(options: LanguageModelV4CallOptions): string {
  const text = JSON.stringify(options.prompt);
  return /city-\d+/.exec(text)![0];
}
function callTool(name: string, input: unknown, tokens = usage(20, 4)): LanguageModelV4GenerateResult {
  return { content: [{ type: 'tool-call', toolCallId: `c-${name}`, toolName: name, input: JSON.stringify(input) }], finishReason: TOOL_CALLS, usage: tokens, warnings: [] };
}
function answer(text: string, tokens: ReturnType<typeof usage>): LanguageModelV4GenerateResult {
  return { content: [{ type: 'text', text }], finishReason: STOP, usage: tokens, warnings: [] };
}

/** The stored run's model: weather, then notify, then the answer. */
const modelA = () =>
  new MockLanguageModelV4({
    modelId: 'model-a',
    provider: 'mock',
    doGenerate: async (options) => {
      const done = toolResults(options);
      const city = cityOf(options);
      if (!done.has('weather')) return callTool('weather', { city });
      if (!done.has('notify')) return callTool('notify', { team: 'ops' });
      return answer(`Sunny in ${city}.`, usage(30, 8));
    },
  });

/** The model under evaluation: cheaper, and different on some cities. */
const modelB = () =>
  new MockLanguageModelV4({
    modelId: 'model-b',
    provider: 'mock',
    doGenerate: async (options) => {
      const done = toolResults(options);
      const city = cityOf(options);
      const v = variant(city);
      if (!done.has('weather') && !done.has('forecast')) {
        if (v === 0) return callTool('weather', { city: `${city}-north` }, usage(15, 3));
        if (v === 1) return callTool('forecast', { city, days: 3 }, usage(15, 3));
        return callTool('weather', { city }, usage(15, 3));
      }
      if (!done.has('notify')) return callTool('notify', { team: 'ops' }, usage(15, 3));
      return answer(v === 2 ? `It is sunny in ${city}.` : `Sunny in ${city}.`, usage(25, 6));
    },
  });

/** The agent's app on `engine` with `model`, counting what its tools and effects really do. */
function agentApp(engine: Engine, model: MockLanguageModelV4, runs: Record<string, number>) {
  const tools = recordedTools({
    weather: tool({ inputSchema: z.object({ city: z.string() }), execute: async ({ city }) => (runs.weather!++, { city, sky: 'sunny' }) }),
    forecast: tool({ inputSchema: z.object({ city: z.string(), days: z.number() }), execute: async ({ days }) => (runs.forecast!++, { days, sky: 'sunny' }) }),
    notify: effectTool(tool({ inputSchema: z.object({ team: z.string() }), execute: async ({ team }) => (runs.notify!++, { notified: team }) }), {
      name: 'notify',
      key: ({ team }) => `notify:${team}`,
    }),
  });
  const wrapped = recordedModel(model);
  return graph(State)
    .node('agent', async (s) => {
      const result = await generateText({ model: wrapped, tools, stopWhen: stepCountIs(5), prompt: `What is the weather in ${s.city}? Then tell ops.` });
      return { reply: result.text };
    })
    .edge(START, 'agent')
    .edge('agent', END)
    .compile({ engine });
}

async function snapshot(engine: Engine) {
  const out: Record<string, unknown> = {};
  for (const city of CITIES) {
    const thread = `t-${city}`;
    out[thread] = {
      ledger: await engine.ledger.list(thread),
      positions: await engine.checkpointer.getPositions(thread, '', { from: 0, to: 1000 }),
      record: await engine.checkpointer.getThread(thread),
    };
  }
  return out;
}

describe.each(ENGINES)('app.evaluate on %s', (name) => {
  const ctx = useEngine(name);

  it('20 stored threads against a second model: the expected same / diverged report, first divergences with their diffs, tokens side by side, nothing written, no tool run', async () => {
    const runs = { weather: 0, forecast: 0, notify: 0 };
    const a = modelA();
    const stored = agentApp(ctx.engine, a, runs);
    for (const city of CITIES) expect((await stored.run({ thread: `t-${city}`, input: { city } })).state.reply).toBe(`Sunny in ${city}.`);
    expect(runs).toEqual({ weather: 20, forecast: 0, notify: 20 });
    expect(a.doGenerateCalls).toHaveLength(60);
    const before = await snapshot(ctx.engine);

    const b = modelB();
    const candidate = agentApp(ctx.engine, b, runs);
    const report = await stored.evaluate({ query: { order: 'id' }, with: candidate });

    expect(report.summary).toMatchObject({ threads: 20, same: 8, diverged: 12, failed: 0 });
    // Recorded: 20 threads × 3 calls of model-a. Evaluated: 3 calls on 12 threads (same or other words), 1 on the 8 stopped at a tool.
    expect(report.summary.recorded).toMatchObject({ calls: 60, usage: { inputTokens: 20 * 70, outputTokens: 20 * 16, totalTokens: 20 * 86 } });
    expect(report.summary.evaluated).toMatchObject({ calls: 12 * 3 + 8, usage: { inputTokens: 12 * 55 + 8 * 15, outputTokens: 12 * 12 + 8 * 3 } });

    const byThread = new Map(report.threads.map((t) => [t.threadId, t]));
    for (const city of CITIES) {
      const t = byThread.get(`t-${city}`)!;
      const v = variant(city);
      if (v === 0) {
        expect(t).toMatchObject({ outcome: 'diverged', firstDivergence: { seq: 1, nodes: ['agent'], calls: [{ node: 'agent', call: 1, name: 'tool:weather', kind: 'other-arguments', reason: 'recorded with other arguments' }] } });
        expect(t.evaluated.calls).toBe(1);
      } else if (v === 1) {
        expect(t).toMatchObject({ outcome: 'diverged', firstDivergence: { seq: 1, calls: [{ call: 1, name: 'tool:forecast', reason: 'recorded as "tool:weather"' }] } });
      } else if (v === 2) {
        expect(t.outcome).toBe('diverged');
        expect(t.firstDivergence).toMatchObject({ seq: 1, differences: ['reply'], calls: [] });
        expect(t.firstDivergence!.diff!.fields).toEqual([{ field: 'reply', kind: 'changed', before: `Sunny in ${city}.`, after: `It is sunny in ${city}.` }]);
        expect(t.evaluated).toMatchObject({ calls: 3, usage: { inputTokens: 55, outputTokens: 12, totalTokens: 67 } });
      } else {
        expect(t).toMatchObject({ outcome: 'same', firstDivergence: null, steps: 1 });
        expect(t.recorded).toMatchObject({ calls: 3, usage: { inputTokens: 70, outputTokens: 16, totalTokens: 86 } });
        expect(t.evaluated).toMatchObject({ calls: 3, usage: { inputTokens: 55, outputTokens: 12, totalTokens: 67 } });
        expect(t.evaluated.latencyMs).toBeGreaterThanOrEqual(0);
        // Call by call: the new model beside the one that recorded the same call.
        expect(t.models.map((m) => [m.seq, m.call, m.name, m.recorded?.model, m.recorded?.usage?.inputTokens, m.evaluated.model, m.evaluated.usage?.inputTokens])).toEqual([
          [1, 0, 'ai.generate', 'model-a', 20, 'model-b', 15],
          [1, 2, 'ai.generate', 'model-a', 20, 'model-b', 15],
          [1, 4, 'ai.generate', 'model-a', 30, 'model-b', 25],
        ]);
      }
    }
    // Nothing external ran, nothing was written; the stored model was not asked again.
    expect(runs).toEqual({ weather: 20, forecast: 0, notify: 20 });
    expect(a.doGenerateCalls).toHaveLength(60);
    expect(b.doGenerateCalls).toHaveLength(12 * 3 + 8);
    expect(await snapshot(ctx.engine)).toEqual(before);
  });

  it('a streamed model call is streamed anew by the model under evaluation, and its words are what the evaluated state holds', async () => {
    const streamed = (engine: Engine, text: string) => {
      const mock = textModel(text);
      const app = graph(State)
        .node('agent', async (s) => {
          let reply = '';
          for await (const delta of streamText({ model: recordedModel(mock), prompt: s.city }).textStream) reply += delta;
          return { reply };
        })
        .edge(START, 'agent')
        .edge('agent', END)
        .compile({ engine });
      return { app, mock };
    };
    const a = streamed(ctx.engine, 'Sunny and warm.');
    await a.app.run({ thread: 's1', input: { city: 'Paris' } });
    const b = streamed(ctx.engine, 'Sunny and mild.');
    const report = await a.app.evaluate({ threads: ['s1'], with: b.app });
    expect(b.mock.doStreamCalls).toHaveLength(1);
    expect(a.mock.doStreamCalls).toHaveLength(1);
    expect(report.threads[0]).toMatchObject({ outcome: 'diverged', firstDivergence: { differences: ['reply'], diff: { fields: [{ field: 'reply', before: 'Sunny and warm.', after: 'Sunny and mild.' }] } } });
    expect(report.threads[0]!.evaluated).toMatchObject({ calls: 1, usage: { inputTokens: 10, outputTokens: 5 } });
    expect((await ctx.engine.ledger.list('s1')).map((e) => e.name)).toEqual(['ai.stream']);
  });

  it('an app evaluated against itself is the same everywhere; a thread that does not exist is failed, not thrown', async () => {
    const runs = { weather: 0, forecast: 0, notify: 0 };
    const stored = agentApp(ctx.engine, modelA(), runs);
    for (const city of CITIES.slice(0, 3)) await stored.run({ thread: `t-${city}`, input: { city } });
    const report = await agentApp(ctx.engine, modelA(), runs).evaluate({ threads: ['t-city-0', 't-city-1', 't-city-2', 'missing'] });
    expect(report.summary).toMatchObject({ threads: 4, same: 3, diverged: 0, failed: 1 });
    expect(report.threads.at(-1)).toMatchObject({ threadId: 'missing', outcome: 'failed', error: { code: 'ERR_THREAD_NOT_FOUND' } });
    expect(runs).toEqual({ weather: 3, forecast: 0, notify: 3 });
  });

  it('a misspelt selection is InvalidOptionError before any model is called: thread for threads, a query filter the listing does not know', async () => {
    const runs = { weather: 0, forecast: 0, notify: 0 };
    const stored = agentApp(ctx.engine, modelA(), runs);
    await stored.run({ thread: 't-city-0', input: { city: 'city-0' } });
    const model = modelA();
    const app = agentApp(ctx.engine, model, runs);
    const misspelt: [string, unknown][] = [
      // Ignored, no thread would be evaluated and the report would say all is the same.
      ['evaluate: unknown option "thread"', { thread: 't-city-0' }],
      // Ignored, every stored thread would be evaluated, each with new model calls.
      ['listThreads: unknown option "statuss"', { query: { statuss: 'failed' } }],
      ['evaluate: threads must be a list of thread ids', { threads: 't-city-0' }],
      ['evaluate takes one options object', undefined],
      // Read per thread: every thread would fail with a TypeError, reported as its outcome.
      ['evaluate: with must be a compiled graph', { threads: ['t-city-0'], with: {} }],
    ];
    for (const [message, options] of misspelt) {
      const error = await app.evaluate(options as never).then(() => undefined, (e: unknown) => e as Error & { code?: string });
      expect(error?.code, message).toBe('ERR_INVALID_OPTION');
      expect(error!.message).toContain(message);
    }
    expect(model.doGenerateCalls).toHaveLength(0);
    expect((await app.evaluate({ threads: ['t-city-0'] })).summary).toMatchObject({ threads: 1, same: 1 });
  });
});
