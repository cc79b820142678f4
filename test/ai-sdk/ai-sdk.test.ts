/**
 * cairn/ai-sdk in process, with the AI SDK's mock models (`MockLanguageModelV4`):
 * inside a node each generate and stream call is a `model` record (model id, tokens,
 * latency) and a re-execution of the step is served it (a stream as the same parts);
 * outside a node the model is called as is; tools become `tool` records and tools
 * with side effects keyed effects; the AI SDK's own loop (`generateText` and
 * `streamText` with tools and `stopWhen`, `ToolLoopAgent`) runs inside a node with
 * every model call and tool call recorded, and a re-executed step repeats none. A
 * stream that carried an error part is not recorded: the next execution asks again.
 * What a tool throws in the loop reaches the model unless it must stop the node
 * (cairn's own errors, a run that is stopping, an effect tool's failure, which leaves
 * the effect in doubt as a throwing ctx.effect does): then nothing of the step commits.
 * Every behavioural test runs on memory, SQLite and PostgreSQL.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { generateText, simulateReadableStream, stepCountIs, streamText, tool, ToolLoopAgent, wrapLanguageModel } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import type { LanguageModelV4StreamPart } from '@ai-sdk/provider';
import { cairnMiddleware, effectTool, recordedModel, recordedTools } from '../../src/ai-sdk/index.js';
import { defineState } from '../../src/state/schema.js';
import { field } from '../../src/state/fields.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import type { LedgerEntry } from '../../src/contracts/ledger.js';
import { InvalidOptionError } from '../../src/errors.js';

/** What `fn` threw (it must throw). */
function caughtSync(fn: () => unknown): Error & { code?: string } {
  try {
    fn();
  } catch (error) {
    return error as Error & { code?: string };
  }
  throw new Error('expected a throw');
}
import { bodies, ENGINES, useEngine } from '../runtime/engines.js';
import { agentModel, textModel, textParts, textResult as textResultOf, usage } from './mock-models.js';

const State = defineState({
  fields: {
    reply: field.model(z.string().optional()),
    log: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
  },
});

/** The record entries of a thread, in call order. */
async function records(entries: Promise<LedgerEntry[]>): Promise<LedgerEntry[]> {
  return (await entries).filter((e) => e.kind === 'record' && e.name !== 'interrupt').sort((a, b) => a.seq - b.seq || a.call - b.call);
}

describe.each(ENGINES)('cairn/ai-sdk on %s', (name) => {
  const ctx = useEngine(name);

  it('generateText in a node is a model record with its model, tokens and latency; the resumed step is served it and the provider is not called again', async () => {
    const mock = textModel('Paris is the capital.');
    const model = recordedModel(mock);
    const app = graph(State)
      .node('ask', async (_s, c) => {
        const { text, usage: used } = await generateText({ model, prompt: 'Capital of France?' });
        const ok = await c.interrupt({ check: text });
        return { reply: `${text} (${used.inputTokens}/${used.outputTokens}) ${String(ok)}` };
      })
      .edge(START, 'ask')
      .edge('ask', END)
      .compile({ engine: ctx.engine });

    expect((await app.run({ thread: 't' })).status).toBe('interrupted');
    const done = await app.resume({ thread: 't', answer: true });
    expect(done.state.reply).toBe('Paris is the capital. (10/5) true');
    expect(mock.doGenerateCalls).toHaveLength(1);
    const [entry] = await records(ctx.engine.ledger.list('t'));
    expect(entry).toMatchObject({ name: 'ai.generate', node: 'ask', call: 0 });
    expect(entry!.meta).toMatchObject({ kind: 'model', model: 'mock-model-2026-01', provider: 'mock-provider', usage: { inputTokens: 10, outputTokens: 5, totalTokens: 15 } });
    expect(typeof entry!.meta!.latencyMs).toBe('number');
    // What a caller reads is kept; the raw request and response bodies are not.
    expect(entry!.outcome).not.toMatch(/not kept/);
  });

  it('streamText in a node is recorded as its parts once the stream ended; the resumed step replays the same parts without calling the provider', async () => {
    const mock = textModel('One two three four.');
    const model = wrapLanguageModel({ model: mock, middleware: cairnMiddleware() });
    const seen: string[][] = [];
    const app = graph(State)
      .node('write', async (_s, c) => {
        const result = streamText({ model, prompt: 'Count.' });
        const deltas: string[] = [];
        for await (const delta of result.textStream) deltas.push(delta);
        seen.push(deltas);
        const total = await result.totalUsage;
        await c.interrupt('ok?');
        return { reply: deltas.join(''), log: [`tokens ${total.inputTokens}+${total.outputTokens}`] };
      })
      .edge(START, 'write')
      .edge('write', END)
      .compile({ engine: ctx.engine });

    await app.run({ thread: 's' });
    const done = await app.resume({ thread: 's', answer: true });
    expect(done.state).toMatchObject({ reply: 'One two three four.', log: ['tokens 10+5'] });
    expect(mock.doStreamCalls).toHaveLength(1);
    // Run, resume's answer check, resume: three executions, one stream, the same parts each time.
    expect(seen).toEqual(Array(3).fill(['One ', 'two ', 'three ', 'four.']));
    const [entry] = await records(ctx.engine.ledger.list('s'));
    expect(entry).toMatchObject({ name: 'ai.stream', meta: { kind: 'model', model: 'mock-model-2026-01', usage: { inputTokens: 10, outputTokens: 5 } } });
  });

  it('a stream that carried an error part reaches the caller but is not recorded: the next execution calls the model again', async () => {
    let calls = 0;
    const mock = new MockLanguageModelV4({
      doStream: async () => {
        calls++;
        const parts: LanguageModelV4StreamPart[] =
          calls === 1 ? [{ type: 'stream-start', warnings: [] }, { type: 'text-start', id: 'a' }, { type: 'text-delta', id: 'a', delta: 'par' }, { type: 'error', error: new Error('overloaded') }] : textParts('whole answer');
        return { stream: simulateReadableStream({ chunks: parts, chunkDelayInMs: null, initialDelayInMs: null }) };
      },
    });
    const model = recordedModel(mock);
    const app = graph(State)
      .node('write', async () => {
        const errors: unknown[] = [];
        const result = streamText({ model, prompt: 'x', onError: ({ error }) => void errors.push(error) });
        const text = await Promise.resolve(result.text).catch(() => '');
        if (errors.length) throw new Error(`stream failed: ${(errors[0] as Error).message}`);
        return { reply: text };
      })
      .edge(START, 'write')
      .edge('write', END)
      .compile({ engine: ctx.engine, retry: { maxAttempts: 2, initialDelayMs: 1 } });
    const done = await app.run({ thread: 'e' });
    expect(done.state.reply).toBe('whole answer');
    expect(calls).toBe(2);
    expect((await records(ctx.engine.ledger.list('e'))).map((e) => e.name)).toEqual(['ai.stream']);
  });

  it('a model call inside ctx.record is recorded once, by that record: the middleware steps aside, so call indices stay the same served or not', async () => {
    const mock = textModel('inner');
    const model = recordedModel(mock);
    const app = graph(State)
      .node('n', async (_s, c) => {
        const summary = await c.record('summary', async () => (await generateText({ model, prompt: 'x' })).text);
        const after = await generateText({ model, prompt: 'y' });
        await c.interrupt('ok?');
        return { reply: `${summary}/${after.text}` };
      })
      .edge(START, 'n')
      .edge('n', END)
      .compile({ engine: ctx.engine });
    await app.run({ thread: 'nest' });
    expect((await app.resume({ thread: 'nest', answer: true })).state.reply).toBe('inner/inner');
    expect(mock.doGenerateCalls).toHaveLength(2);
    expect((await records(ctx.engine.ledger.list('nest'))).map((e) => [e.call, e.name])).toEqual([
      [0, 'summary'],
      [1, 'ai.generate'],
    ]);
  });

  it("inside a node the provider gets an abort signal that follows the run's; an effect tool without a name is named after its key in the tool set", async () => {
    const mock = agentModel(['ping'], { ping: {} }, 'pong');
    let signal: AbortSignal | undefined;
    const app = graph(State)
      .node('n', async (_s, c) => {
        signal = c.signal;
        const tools = recordedTools({ ping: effectTool(tool({ inputSchema: z.object({}), execute: async () => 'pong' })) });
        return { reply: (await generateText({ model: recordedModel(mock), tools, stopWhen: stepCountIs(3), prompt: 'ping' })).text };
      })
      .edge(START, 'n')
      .edge('n', END)
      .compile({ engine: ctx.engine });
    await app.run({ thread: 'sig' });
    const given = mock.doGenerateCalls[0]!.abortSignal!;
    expect(given).toBeInstanceOf(AbortSignal);
    expect(given.aborted).toBe(false);
    expect(signal!.aborted).toBe(false);
    expect((await ctx.engine.ledger.list('sig')).filter((e) => e.kind === 'effect').map((e) => e.name)).toEqual(['tool:ping']);
    await generateText({ model: recordedModel(mock), prompt: 'outside' });
    expect(mock.doGenerateCalls.at(-1)!.abortSignal).toBeUndefined();

    // The run's signal aborted while the model answers: the provider's signal is aborted too.
    const cancel = new AbortController();
    let seen: AbortSignal | undefined;
    const slow = new MockLanguageModelV4({
      doGenerate: async ({ abortSignal }) => {
        seen = abortSignal;
        cancel.abort(new Error('operator cancelled'));
        return textResultOf('late');
      },
    });
    const cancellable = graph(State)
      .node('n', async () => ({ reply: (await generateText({ model: recordedModel(slow), prompt: 'x' })).text }))
      .edge(START, 'n')
      .edge('n', END)
      .compile({ engine: ctx.engine });
    await cancellable.run({ thread: 'cancel', signal: cancel.signal }).catch(() => undefined);
    expect(seen?.aborted).toBe(true);
  });

  it('outside a node the wrapped model is the model: every call reaches the provider, nothing is recorded', async () => {
    const mock = textModel('plain');
    const model = recordedModel(mock);
    expect((await generateText({ model, prompt: 'a' })).text).toBe('plain');
    expect((await generateText({ model, prompt: 'a' })).text).toBe('plain');
    expect(await streamText({ model, prompt: 'b' }).text).toBe('plain');
    expect(mock.doGenerateCalls).toHaveLength(2);
    expect(mock.doStreamCalls).toHaveLength(1);
    const tools = recordedTools({ echo: tool({ inputSchema: z.object({ v: z.string() }), execute: async ({ v }) => v.toUpperCase() }) });
    expect(await tools.echo.execute!({ v: 'x' }, { toolCallId: 'c', messages: [], context: {} } as never)).toBe('X');
  });

  it('generateText with tools and stopWhen: each model call and tool call is recorded in order, and a re-executed step repeats none of them', async () => {
    const mock = agentModel(['weather', 'notify'], { weather: { city: 'Paris' }, notify: { to: 'ops' } }, 'Sunny in Paris; ops told.');
    const model = recordedModel(mock);
    const calls = { weather: 0, notify: 0 };
    const sent: string[] = [];
    const tools = recordedTools({
      weather: tool({
        inputSchema: z.object({ city: z.string() }),
        execute: async ({ city }) => {
          calls.weather++;
          return { city, sky: 'sunny' };
        },
      }),
      notify: effectTool(
        tool({
          inputSchema: z.object({ to: z.string() }),
          execute: async ({ to }) => {
            calls.notify++;
            sent.push(to);
            return { sent: true };
          },
        }),
        { name: 'notify', key: ({ to }) => `notify:${to}` },
      ),
    });
    const app = graph(State)
      .node('agent', async (_s, c) => {
        const result = await generateText({ model, tools, stopWhen: stepCountIs(5), prompt: 'Weather in Paris, then tell ops.' });
        await c.interrupt({ steps: result.steps.length });
        return { reply: result.text, log: result.steps.map((s) => s.finishReason) };
      })
      .edge(START, 'agent')
      .edge('agent', END)
      .compile({ engine: ctx.engine });

    await app.run({ thread: 'a' });
    const done = await app.resume({ thread: 'a', answer: true });
    expect(done.state).toMatchObject({ reply: 'Sunny in Paris; ops told.', log: ['tool-calls', 'tool-calls', 'stop'] });
    expect(mock.doGenerateCalls).toHaveLength(3);
    expect(calls).toEqual({ weather: 1, notify: 1 });
    expect(sent).toEqual(['ops']);

    const entries = await ctx.engine.ledger.list('a');
    const ordered = entries.filter((e) => e.name !== 'interrupt').sort((x, y) => x.call - y.call);
    expect(ordered.map((e) => [e.call, e.kind, e.name, e.meta?.kind])).toEqual([
      [0, 'record', 'ai.generate', 'model'],
      [1, 'record', 'tool:weather', 'tool'],
      [2, 'record', 'ai.generate', 'model'],
      [3, 'effect', 'notify', undefined],
      [4, 'record', 'ai.generate', 'model'],
    ]);
    // The tool's own name is kept beside the record's: a tool span's gen_ai.tool.name.
    expect(ordered[1]!.meta).toMatchObject({ kind: 'tool', tool: 'weather' });
    expect(ordered[3]).toMatchObject({ key: 'notify:ops', status: 'done' });
    expect(ordered[3]!.argsDigest).toMatch(/^[0-9a-f]{64}$/);
    expect(ordered.at(-1)!.meta!.usage).toEqual({ inputTokens: 30, outputTokens: 8, totalTokens: 38 });
  });

  it('streamText with tools and stopWhen: the loop streams each step, records each model stream and tool result, and is served them on re-execution', async () => {
    const mock = agentModel(['lookup'], { lookup: { id: 7 } }, 'Item 7 is a lamp.');
    const model = recordedModel(mock);
    let lookups = 0;
    const tools = recordedTools({ lookup: tool({ inputSchema: z.object({ id: z.number() }), execute: async ({ id }) => (lookups++, { id, name: 'lamp' }) }) });
    const texts: string[] = [];
    const app = graph(State)
      .node('agent', async (_s, c) => {
        const result = streamText({ model, tools, stopWhen: stepCountIs(4), prompt: 'What is item 7?' });
        let text = '';
        for await (const delta of result.textStream) text += delta;
        texts.push(text);
        await c.interrupt('ok?');
        return { reply: text };
      })
      .edge(START, 'agent')
      .edge('agent', END)
      .compile({ engine: ctx.engine });
    await app.run({ thread: 'st' });
    const done = await app.resume({ thread: 'st', answer: true });
    expect(done.state.reply).toBe('Item 7 is a lamp.');
    expect(texts).toEqual(Array(3).fill('Item 7 is a lamp.'));
    expect(mock.doStreamCalls).toHaveLength(2);
    expect(lookups).toBe(1);
    expect((await records(ctx.engine.ledger.list('st'))).map((e) => [e.name, e.meta?.kind])).toEqual([
      ['ai.stream', 'model'],
      ['tool:lookup', 'tool'],
      ['ai.stream', 'model'],
    ]);
  });

  it("a tool that throws in the loop has its error recorded: the re-executed step hands the model's loop the same error, the tool is not called again, and replay serves it", async () => {
    const mock = agentModel(['weather'], { weather: { city: 'Paris' } }, 'The weather service is down.');
    let calls = 0;
    const tools = recordedTools({
      weather: tool({
        inputSchema: z.object({ city: z.string() }),
        execute: async () => {
          calls++;
          if (calls === 1) throw new TypeError('weather service down');
          return { sky: 'sunny' };
        },
      }),
    });
    const seen: string[] = [];
    const app = graph(State)
      .node('agent', async (_s, c) => {
        const result = await generateText({ model: recordedModel(mock), tools, stopWhen: stepCountIs(4), prompt: 'Weather in Paris?' });
        const [error] = result.steps[0]!.content.filter((p) => p.type === 'tool-error');
        seen.push(error ? `${(error.error as Error).name}: ${(error.error as Error).message}` : 'no error');
        await c.interrupt('ok?');
        return { reply: result.text };
      })
      .edge(START, 'agent')
      .edge('agent', END)
      .compile({ engine: ctx.engine });
    await app.run({ thread: 'te' });
    const done = await app.resume({ thread: 'te', answer: true });
    expect(done.state.reply).toBe('The weather service is down.');
    expect(calls).toBe(1);
    expect(mock.doGenerateCalls).toHaveLength(2);
    expect(seen).toEqual(Array(3).fill('TypeError: weather service down'));
    expect((await records(ctx.engine.ledger.list('te'))).map((e) => [e.name, e.meta?.kind])).toEqual([
      ['ai.generate', 'model'],
      ['tool:weather', 'tool'],
      ['ai.generate', 'model'],
    ]);
    expect((await app.replay({ thread: 'te', from: 0 })).sameStates).toBe(true);
  });

  it('a node that throws after a tool threw discards the record as always: its retry calls the tool again', async () => {
    let calls = 0;
    const tools = recordedTools({ flaky: tool({ inputSchema: z.object({}), execute: async () => (++calls === 1 ? Promise.reject(new Error('flaky')) : 'fine') }) });
    const app = graph(State)
      .node('n', async () => {
        const out = await Promise.resolve(tools.flaky.execute!({}, { toolCallId: 'c', messages: [], context: {} } as never)).catch((e: Error) => `error: ${e.message}`);
        if (out !== 'fine') throw new Error(`gave up on ${String(out)}`);
        return { reply: out };
      })
      .edge(START, 'n')
      .edge('n', END)
      .compile({ engine: ctx.engine, retry: { maxAttempts: 2, initialDelayMs: 1 } });
    expect((await app.run({ thread: 'tr' })).state.reply).toBe('fine');
    expect(calls).toBe(2);
  });

  it("an atMostOnce effect tool that throws stops the node; its retry finds it in doubt and puts the thread in needs_attention though the AI SDK catches that too; resolveEffect then lets it finish", async () => {
    const mock = agentModel(['pay'], { pay: { order: '42' } }, 'Payment attempted.');
    let runs = 0;
    const tools = recordedTools({
      pay: effectTool(
        tool({
          inputSchema: z.object({ order: z.string() }),
          execute: async (): Promise<{ paid: boolean }> => {
            runs++;
            throw new Error('gateway timeout: it may have gone through');
          },
        }),
        { key: ({ order }) => `pay:${order}`, mode: 'atMostOnce' },
      ),
    });
    const app = graph(State)
      .node('agent', async () => {
        const result = await generateText({ model: recordedModel(mock), tools, stopWhen: stepCountIs(3), prompt: 'Pay order 42.' });
        return { reply: result.text, log: result.steps[0]!.content.map((p) => (p.type === 'tool-result' ? JSON.stringify(p.output) : p.type)) };
      })
      .edge(START, 'agent')
      .edge('agent', END)
      .compile({ engine: ctx.engine, retry: { maxAttempts: 2, initialDelayMs: 0 } });
    const error = await app.run({ thread: 'na' }).catch((e: Error & { code?: string }) => e);
    expect(error).toMatchObject({ code: 'ERR_NEEDS_ATTENTION', effectKey: 'pay:42' });
    expect((await app.getThread({ thread: 'na' }))!.status).toBe('needs_attention');
    expect(runs).toBe(1);
    expect((await ctx.engine.checkpointer.getThread('na'))!.head).toBe(0);

    await app.resolveEffect({ thread: 'na', idempotencyKey: 'pay:42', outcome: { value: { paid: true } } });
    const done = await app.run({ thread: 'na' });
    expect(done).toMatchObject({ status: 'completed', state: { reply: 'Payment attempted.', log: ['tool-call', '{"paid":true}'] } });
    expect(runs).toBe(1);
  });

  it('an effect tool the model asks for twice in one step with the same input runs once: both calls get its outcome', async () => {
    const mock = new MockLanguageModelV4({
      doGenerate: async ({ prompt }) =>
        prompt.some((m) => m.role === 'tool')
          ? textResultOf('Refunded once.')
          : {
              content: ['c1', 'c2'].map((toolCallId) => ({ type: 'tool-call' as const, toolCallId, toolName: 'refund', input: '{"order":"42"}' })),
              finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
              usage: usage(20, 4),
              warnings: [],
            },
    });
    const refunds: string[] = [];
    const tools = recordedTools({
      refund: effectTool(tool({ inputSchema: z.object({ order: z.string() }), execute: async ({ order }) => (refunds.push(order), { refunded: order, n: refunds.length }) }), {
        key: ({ order }) => `refund:${order}`,
      }),
    });
    const app = graph(State)
      .node('agent', async () => {
        const result = await generateText({ model: recordedModel(mock), tools, stopWhen: stepCountIs(3), prompt: 'Refund order 42.' });
        return { reply: result.text, log: result.steps[0]!.toolResults.map((r) => { const out = r.output as { refunded: string; n: number }; return `${out.refunded} #${out.n}`; }) };
      })
      .edge(START, 'agent')
      .edge('agent', END)
      .compile({ engine: ctx.engine });
    expect((await app.run({ thread: 'twice' })).state).toMatchObject({ reply: 'Refunded once.', log: ['42 #1', '42 #1'] });
    expect(refunds).toEqual(['42']);
    expect((await ctx.engine.ledger.list('twice')).filter((e) => e.kind === 'effect').map((e) => [e.key, e.status])).toEqual([['refund:42', 'done']]);
  });

  it('ToolLoopAgent runs inside a node: its model and tool calls are recorded and a re-executed step repeats none', async () => {
    const mock = agentModel(['search'], { search: { q: 'cairn' } }, 'Found it.');
    let searches = 0;
    const agent = new ToolLoopAgent({
      model: recordedModel(mock),
      tools: recordedTools({ search: tool({ inputSchema: z.object({ q: z.string() }), execute: async ({ q }) => (searches++, [`${q}: a pile of stones`]) }) }),
      stopWhen: stepCountIs(3),
    });
    const app = graph(State)
      .node('agent', async (_s, c) => {
        const result = await agent.generate({ prompt: 'Search cairn.' });
        await c.interrupt('ok?');
        return { reply: result.text };
      })
      .edge(START, 'agent')
      .edge('agent', END)
      .compile({ engine: ctx.engine });
    await app.run({ thread: 'ag' });
    expect((await app.resume({ thread: 'ag', answer: true })).state.reply).toBe('Found it.');
    expect(mock.doGenerateCalls).toHaveLength(2);
    expect(searches).toBe(1);
  });

  it('a tool that yields (preliminary results, then the last) is recorded whole and served as the same values', async () => {
    let runs = 0;
    const tools = recordedTools({
      progress: tool({
        inputSchema: z.object({}),
        async *execute() {
          runs++;
          yield { pct: 50 };
          yield { pct: 100, done: true };
        },
      }),
    });
    const app = graph(State)
      .node('n', async (_s, c) => {
        const out = tools.progress.execute!({}, { toolCallId: 'c', messages: [], context: {} } as never) as AsyncIterable<unknown>;
        const got: unknown[] = [];
        for await (const v of out) got.push(v);
        await c.interrupt('ok?');
        return { reply: JSON.stringify(got) };
      })
      .edge(START, 'n')
      .edge('n', END)
      .compile({ engine: ctx.engine });
    await app.run({ thread: 'y' });
    expect(JSON.parse((await app.resume({ thread: 'y', answer: true })).state.reply!)).toEqual([{ pct: 50 }, { pct: 100, done: true }]);
    expect(runs).toBe(1);
  });

  it('effectTool recovers an intent left without an outcome through its probe, and never runs the tool again when the probe finds it', async () => {
    let runs = 0;
    const landed = new Map<string, { id: string }>();
    let crash = true;
    const refund = effectTool(
      tool({
        inputSchema: z.object({ order: z.string() }),
        execute: async ({ order }) => {
          runs++;
          landed.set(`refund:${order}`, { id: `rf-${order}` });
          if (crash) throw new Error('connection reset after the refund landed');
          return { id: `rf-${order}` };
        },
      }),
      { name: 'refund', key: ({ order }) => `refund:${order}`, probe: async (key) => landed.get(key) ?? null },
    );
    const app = graph(State)
      .node('pay', async () => ({ reply: JSON.stringify(await refund.execute!({ order: 'o-9' }, { toolCallId: 'c', messages: [], context: {} } as never)) }))
      .edge(START, 'pay')
      .edge('pay', END)
      .compile({ engine: ctx.engine, retry: { maxAttempts: 1 } });
    await expect(app.run({ thread: 'r' })).rejects.toThrow(/connection reset after the refund landed/);
    crash = false;
    const done = await app.run({ thread: 'r' });
    expect(done.state.reply).toBe('{"id":"rf-o-9"}');
    expect(runs).toBe(1);
    expect(await ctx.engine.ledger.get('r', 'refund:o-9')).toMatchObject({ kind: 'effect', name: 'refund', status: 'done' });
  });

  it("effectTool with commit: 'with-step' writes its entry with the step, and the retry of a node that failed after it is served", async () => {
    let runs = 0;
    let fail = true;
    const notify = effectTool(tool({ inputSchema: z.object({ team: z.string() }), execute: async ({ team }) => (runs++, { notified: team }) }), {
      name: 'notify',
      key: ({ team }) => `notify:${team}`,
      commit: 'with-step',
    });
    const app = graph(State)
      .node('n', async () => {
        const out = await notify.execute!({ team: 'ops' }, { toolCallId: 'c', messages: [], context: {} } as never);
        if (fail) throw new Error('failed after the tool');
        return { reply: JSON.stringify(out) };
      })
      .edge(START, 'n')
      .edge('n', END)
      .compile({ engine: ctx.engine, retry: { maxAttempts: 1 } });
    await expect(app.run({ thread: 'w' })).rejects.toThrow(/failed after the tool/);
    fail = false;
    expect((await app.run({ thread: 'w' })).state.reply).toBe('{"notified":"ops"}');
    expect(runs).toBe(1);
    expect(await ctx.engine.ledger.get('w', 'notify:ops')).toMatchObject({ kind: 'effect', name: 'notify', status: 'done' });
  });
});

describe.each(ENGINES)('cairn/ai-sdk: what a tool throws inside the tool loop, on %s', (name) => {
  const ctx = useEngine(name);

  /** The effect entries of a thread: key, name and status. */
  async function effects(thread: string): Promise<[string, string, string][]> {
    return (await ctx.engine.ledger.list(thread)).filter((e) => e.kind === 'effect').map((e) => [e.key, e.name, e.status]);
  }

  it('an effect tool that throws stops the node as a throwing ctx.effect does: the same intent in doubt, nothing committed past it, and the re-run runs it again with the same key', async () => {
    let fail = true;
    const charged: string[] = [];
    const charge = async (order: string) => {
      charged.push(order);
      if (fail) throw new Error('gateway timeout: it may have gone through');
      return { charged: order };
    };
    const mock = agentModel(['charge'], { charge: { order: '42' } }, 'Charged order 42.');
    const tools = recordedTools({
      charge: effectTool(tool({ inputSchema: z.object({ order: z.string() }), execute: async ({ order }) => charge(order) }), { name: 'charge', key: ({ order }) => `charge:${order}` }),
    });
    const viaTool = graph(State)
      .node('agent', async () => ({ reply: (await generateText({ model: recordedModel(mock), tools, stopWhen: stepCountIs(3), prompt: 'Charge order 42.' })).text }))
      .edge(START, 'agent')
      .edge('agent', END)
      .compile({ engine: ctx.engine, retry: { maxAttempts: 1 } });
    const inNode = graph(State)
      .node('agent', async (_s, c) => ({ reply: JSON.stringify(await c.effect('charge', { idempotencyKey: 'charge:42', args: { order: '42' }, run: () => charge('42') })) }))
      .edge(START, 'agent')
      .edge('agent', END)
      .compile({ engine: ctx.engine, retry: { maxAttempts: 1 } });

    const failures = [await viaTool.run({ thread: 'tool' }).catch((e: Error & { code?: string }) => e), await inNode.run({ thread: 'node' }).catch((e: Error & { code?: string }) => e)];
    for (const error of failures) {
      expect(error).toMatchObject({ code: 'ERR_NODE_FAILED' });
      expect(String((error as Error).message)).toMatch(/gateway timeout/);
    }
    for (const thread of ['tool', 'node']) {
      expect((await ctx.engine.checkpointer.getThread(thread))!.status).toBe('failed');
      expect(await effects(thread)).toEqual([['charge:42', 'charge', 'intent']]);
      expect((await bodies(ctx.engine, thread)).map((b) => b.kind)).toEqual(['input']);
    }
    // The loop stopped at its next model call: the provider never saw the error.
    expect(mock.doGenerateCalls).toHaveLength(1);

    fail = false;
    const done = await viaTool.run({ thread: 'tool' });
    expect(done).toMatchObject({ status: 'completed', state: { reply: 'Charged order 42.' } });
    expect((await inNode.run({ thread: 'node' })).status).toBe('completed');
    expect(charged).toEqual(['42', '42', '42', '42']);
    for (const thread of ['tool', 'node']) {
      expect(await effects(thread)).toEqual([['charge:42', 'charge', 'done']]);
      expect((await bodies(ctx.engine, thread)).flatMap((b) => b.effects ?? []).map((e) => [e.key, e.recovery])).toEqual([['charge:42', 'reran']]);
    }
    expect((await viaTool.replay({ thread: 'tool', from: 0 })).sameStates).toBe(true);
  });

  it('with streamText too: an effect tool that throws ends the stream at its next model call and fails the node, its intent in doubt', async () => {
    const mock = agentModel(['charge'], { charge: { order: '42' } }, 'Charged.');
    const tools = recordedTools({
      charge: effectTool(tool({ inputSchema: z.object({ order: z.string() }), execute: async (): Promise<{ charged: boolean }> => { throw new Error('gateway timeout'); } }), { key: ({ order }) => `charge:${order}` }),
    });
    const app = graph(State)
      .node('agent', async () => ({ reply: await streamText({ model: recordedModel(mock), tools, stopWhen: stepCountIs(3), prompt: 'Charge order 42.' }).text }))
      .edge(START, 'agent')
      .edge('agent', END)
      .compile({ engine: ctx.engine, retry: { maxAttempts: 1 } });
    const error = await app.run({ thread: 'st' }).catch((e: Error & { code?: string }) => e);
    expect(error).toMatchObject({ code: 'ERR_NODE_FAILED', message: expect.stringMatching(/gateway timeout/) });
    expect(mock.doStreamCalls).toHaveLength(1);
    expect(await effects('st')).toEqual([['charge:42', 'tool:charge', 'intent']]);
    expect((await bodies(ctx.engine, 'st')).map((b) => b.kind)).toEqual(['input']);
  });

  it('an effect tool that throws is retried under the node\'s policy, and its probe settles the intent in doubt without running it again', async () => {
    const landed = new Map<string, { id: string }>();
    let runs = 0;
    const mock = agentModel(['refund'], { refund: { order: '7' } }, 'Refunded.');
    const tools = recordedTools({
      refund: effectTool(
        tool({
          inputSchema: z.object({ order: z.string() }),
          execute: async ({ order }): Promise<{ id: string }> => {
            runs++;
            landed.set(`refund:${order}`, { id: `rf-${order}` });
            throw new Error('connection reset after the refund landed');
          },
        }),
        { key: ({ order }) => `refund:${order}`, probe: async (key) => landed.get(key) ?? null },
      ),
    });
    const app = graph(State)
      .node('agent', async () => {
        const result = await generateText({ model: recordedModel(mock), tools, stopWhen: stepCountIs(3), prompt: 'Refund order 7.' });
        return { reply: result.text, log: result.steps[0]!.content.map((p) => (p.type === 'tool-result' ? JSON.stringify(p.output) : p.type)) };
      })
      .edge(START, 'agent')
      .edge('agent', END)
      .compile({ engine: ctx.engine, retry: { maxAttempts: 2, initialDelayMs: 0 } });
    const done = await app.run({ thread: 'p' });
    expect(done.state).toMatchObject({ reply: 'Refunded.', log: ['tool-call', '{"id":"rf-7"}'] });
    expect(runs).toBe(1);
    expect(await effects('p')).toEqual([['refund:7', 'tool:refund', 'done']]);
    expect((await app.attempts({ thread: 'p' })).attempts.flatMap((a) => a.failures.map((f) => f.message))).toEqual([expect.stringMatching(/connection reset/)]);
  });

  it("cairn's own error inside an effect tool (a key another effect holds) fails the node instead of reaching the model, and nothing of the step commits", async () => {
    const mock = agentModel(['refund'], { refund: { order: '42' } }, 'Refund attempted.');
    let refunds = 0;
    const tools = recordedTools({
      refund: effectTool(tool({ inputSchema: z.object({ order: z.string() }), execute: async () => (refunds++, { refunded: true }) }), { key: ({ order }) => `order-${order}` }),
    });
    const app = graph(State)
      .node('charge', async (_s, c) => ({ log: [await c.effect('charge', { idempotencyKey: 'order-42', run: () => 'charged' })] }))
      .node('agent', async () => ({ reply: (await generateText({ model: recordedModel(mock), tools, stopWhen: stepCountIs(3), prompt: 'Refund order 42.' })).text }))
      .edge(START, 'charge')
      .edge('charge', 'agent')
      .edge('agent', END)
      .compile({ engine: ctx.engine });
    await expect(app.run({ thread: 'c' })).rejects.toMatchObject({ code: 'ERR_EFFECT_CONFLICT' });
    expect((await ctx.engine.checkpointer.getThread('c'))!.status).toBe('failed');
    expect(refunds).toBe(0);
    expect(mock.doGenerateCalls).toHaveLength(1);
    expect((await bodies(ctx.engine, 'c')).map((b) => b.nodes)).toEqual([[], ['charge']]);
  });

  it("cairn's own error about a recorded tool's result (a value the ledger cannot store) fails the node instead of reaching the model", async () => {
    const mock = agentModel(['fetch'], { fetch: { path: '/a' } }, 'Fetched.');
    const tools = recordedTools({ fetch: tool({ inputSchema: z.object({ path: z.string() }), execute: async ({ path }) => ({ url: new URL(path, 'https://example.com') }) }) });
    const app = graph(State)
      .node('agent', async () => ({ reply: (await generateText({ model: recordedModel(mock), tools, stopWhen: stepCountIs(3), prompt: 'Fetch /a.' })).text }))
      .edge(START, 'agent')
      .edge('agent', END)
      .compile({ engine: ctx.engine });
    await expect(app.run({ thread: 'u' })).rejects.toMatchObject({ code: 'ERR_UNENCODABLE' });
    expect(mock.doGenerateCalls).toHaveLength(1);
    expect((await bodies(ctx.engine, 'u')).map((b) => b.kind)).toEqual(['input']);
  });

  it("a recorded tool that throws once the run's signal is aborted stops the run as a cancellation, with nothing committed; the next run goes on served", async () => {
    const mock = agentModel(['slow'], { slow: {} }, 'Done slowly.');
    const controller = new AbortController();
    let calls = 0;
    const app = graph(State)
      .node('agent', async (_s, c) => {
        const tools = recordedTools({
          slow: tool({
            inputSchema: z.object({}),
            execute: async () => {
              if (++calls === 1) {
                controller.abort();
                c.signal.throwIfAborted();
              }
              return 'finished';
            },
          }),
        });
        return { reply: (await generateText({ model: recordedModel(mock), tools, stopWhen: stepCountIs(3), prompt: 'Go.' })).text };
      })
      .edge(START, 'agent')
      .edge('agent', END)
      .compile({ engine: ctx.engine });
    await expect(app.run({ thread: 's', signal: controller.signal })).rejects.toMatchObject({ code: 'ERR_RUN_CANCELLED' });
    expect(mock.doGenerateCalls).toHaveLength(1);
    expect((await bodies(ctx.engine, 's')).map((b) => b.kind)).toEqual(['input']);
    expect((await app.run({ thread: 's' })).state.reply).toBe('Done slowly.');
    expect(calls).toBe(2);
    expect(mock.doGenerateCalls).toHaveLength(2);
  });

  it("an interrupt inside a tool stops the node, and resume's answer check reaches it though the loop catches what it throws: a refused answer changes nothing", async () => {
    const mock = agentModel(['approve'], { approve: { amount: 120 } }, 'Approved.');
    const answers: unknown[] = [];
    const app = graph(State)
      .node('agent', async (_s, c) => {
        // A tool of the AI SDK's own (not recorded): it asks a person, through the node's ctx.
        const approve = tool({
          inputSchema: z.object({ amount: z.number() }),
          execute: async ({ amount }) => {
            const answer = await c.interrupt({ approve: amount }, { answer: z.object({ ok: z.boolean() }) });
            answers.push(answer);
            return answer;
          },
        });
        return { reply: (await generateText({ model: recordedModel(mock), tools: { approve }, stopWhen: stepCountIs(3), prompt: 'Pay 120.' })).text };
      })
      .edge(START, 'agent')
      .edge('agent', END)
      .compile({ engine: ctx.engine });
    expect((await app.run({ thread: 'i' })).status).toBe('interrupted');
    expect(mock.doGenerateCalls).toHaveLength(1);
    const before = await bodies(ctx.engine, 'i');
    await expect(app.resume({ thread: 'i', answer: { ok: 'yes' } })).rejects.toMatchObject({ code: 'ERR_STATE_VALIDATION' });
    expect(await bodies(ctx.engine, 'i')).toEqual(before);
    expect((await ctx.engine.checkpointer.getThread('i'))!.status).toBe('interrupted');
    const done = await app.resume({ thread: 'i', answer: { ok: true } });
    expect(done).toMatchObject({ status: 'completed', state: { reply: 'Approved.' } });
    expect(answers).toEqual([{ ok: true }]);
    expect(mock.doGenerateCalls).toHaveLength(2);
  });

  it("an ordinary error still reaches the model and is recorded, Node.js's own ERR_ codes included", async () => {
    const mock = agentModel(['open'], { open: { url: 'not a url' } }, 'That is not a URL.');
    let calls = 0;
    const tools = recordedTools({ open: tool({ inputSchema: z.object({ url: z.string() }), execute: async ({ url }) => (calls++, new URL(url).host) }) });
    const app = graph(State)
      .node('agent', async () => {
        const result = await generateText({ model: recordedModel(mock), tools, stopWhen: stepCountIs(3), prompt: 'Open it.' });
        const [error] = result.steps[0]!.content.filter((p) => p.type === 'tool-error');
        return { reply: result.text, log: [error ? (error.error as Error).name : 'no error'] };
      })
      .edge(START, 'agent')
      .edge('agent', END)
      .compile({ engine: ctx.engine });
    expect((await app.run({ thread: 'o' })).state).toMatchObject({ reply: 'That is not a URL.', log: ['TypeError'] });
    expect(calls).toBe(1);
    expect((await records(ctx.engine.ledger.list('o'))).map((e) => e.name)).toEqual(['ai.generate', 'tool:open', 'ai.generate']);
  });
  it('a provider stream that fails mid-way reaches the caller with every part it sent before the failure, as outside a node', async () => {
    const failing = () =>
      new MockLanguageModelV4({
        doStream: async () => {
          let sent = 0;
          return {
            stream: new ReadableStream<LanguageModelV4StreamPart>({
              pull(out) {
                if (sent === 0) out.enqueue({ type: 'stream-start', warnings: [] }), out.enqueue({ type: 'text-start', id: 't' });
                if (sent === 2) return out.error(new Error('connection reset'));
                out.enqueue({ type: 'text-delta', id: 't', delta: `w${sent++} ` });
              },
            }),
          };
        },
      });
    const read = async (model: Parameters<typeof streamText>[0]['model']) => {
      const deltas: string[] = [];
      const result = streamText({ model, prompt: 'x', onError: () => undefined });
      try {
        for await (const part of result.fullStream) if (part.type === 'text-delta') deltas.push(part.text);
      } catch (error) {
        deltas.push(`threw ${(error as Error).message}`);
      }
      return deltas;
    };
    const outside = await read(recordedModel(failing()));
    expect(outside).toEqual(['w0 ', 'w1 ', 'threw connection reset']);
    const app = graph(State)
      .node('write', async () => ({ log: await read(recordedModel(failing())) }))
      .edge(START, 'write')
      .edge('write', END)
      .compile({ engine: ctx.engine });
    expect((await app.run({ thread: 'mid' })).state.log).toEqual(outside);
    expect(await records(ctx.engine.ledger.list('mid'))).toEqual([]);
  });

  it('a tool a streamed model asked for runs only once that stream is recorded, though the provider closes its stream after the finish part', async () => {
    // The AI SDK runs tools when it reads `finish`; a provider may close a while later. A
    // crash in between, with the tool's effect done and the stream unrecorded, would ask
    // the model again and make a second refund if it answered otherwise.
    const mock = new MockLanguageModelV4({
      doStream: async ({ prompt }) => {
        const parts: LanguageModelV4StreamPart[] = prompt.some((m) => m.role === 'tool')
          ? textParts('Refunded.')
          : [
              { type: 'stream-start', warnings: [] },
              { type: 'tool-call', toolCallId: 'c1', toolName: 'refund', input: '{"order":"42"}' },
              { type: 'finish', finishReason: { unified: 'tool-calls', raw: 'tool_calls' }, usage: usage(20, 4) },
            ];
        return {
          stream: new ReadableStream<LanguageModelV4StreamPart>({
            async start(out) {
              for (const part of parts) out.enqueue(part);
              await new Promise((resolve) => setTimeout(resolve, 30));
              out.close();
            },
          }),
        };
      },
    });
    const seenByTool: string[][] = [];
    const tools = recordedTools({
      refund: effectTool(
        tool({
          inputSchema: z.object({ order: z.string() }),
          execute: async ({ order }) => {
            seenByTool.push((await ctx.engine.ledger.list('fin')).filter((e) => e.kind === 'record').map((e) => `${e.name} ${e.status}`));
            return { refunded: order };
          },
        }),
        { name: 'refund', key: ({ order }) => `refund:${order}` },
      ),
    });
    const app = graph(State)
      .node('agent', async () => ({ reply: await streamText({ model: recordedModel(mock), tools, stopWhen: stepCountIs(3), prompt: 'Refund 42.' }).text }))
      .edge(START, 'agent')
      .edge('agent', END)
      .compile({ engine: ctx.engine });
    expect((await app.run({ thread: 'fin' })).state.reply).toBe('Refunded.');
    expect(seenByTool).toEqual([['ai.stream done']]);
  });

  it("resolveEffect on an effect tool in doubt takes the tool's result: the model and the step get that result", async () => {
    const mock = agentModel(['pay'], { pay: { order: '42' } }, 'Paid.');
    const tools = recordedTools({
      pay: effectTool(
        tool({
          inputSchema: z.object({ order: z.string() }),
          execute: async (): Promise<{ paid: boolean }> => {
            throw new Error('gateway timeout');
          },
        }),
        { key: ({ order }) => `pay:${order}`, mode: 'atMostOnce' },
      ),
    });
    const app = graph(State)
      .node('agent', async () => {
        const result = await generateText({ model: recordedModel(mock), tools, stopWhen: stepCountIs(3), prompt: 'Pay order 42.' });
        const output = result.steps[0]!.content.find((p) => p.type === 'tool-result')?.output;
        return { reply: result.text, log: [JSON.stringify(output)] };
      })
      .edge(START, 'agent')
      .edge('agent', END)
      .compile({ engine: ctx.engine, retry: { maxAttempts: 1 } });
    await expect(app.run({ thread: 'rs' })).rejects.toMatchObject({ code: 'ERR_NODE_FAILED' });
    await expect(app.run({ thread: 'rs' })).rejects.toMatchObject({ code: 'ERR_NEEDS_ATTENTION' });
    await app.resolveEffect({ thread: 'rs', idempotencyKey: 'pay:42', outcome: { by: 'alice', paid: true } });
    const done = await app.run({ thread: 'rs' });
    expect(done.state).toMatchObject({ reply: 'Paid.', log: ['{"by":"alice","paid":true}'] });
    // The model's answer after the tool was asked with that result.
    expect(JSON.stringify(mock.doGenerateCalls.at(-1)!.prompt)).toContain('{"type":"json","value":{"by":"alice","paid":true}}');
  });

});

describe('cairn/ai-sdk effectTool options', () => {
  it("refuses commit: 'with-step' with a probe or atMostOnce where the tool is defined", () => {
    const definition = tool({ inputSchema: z.object({}), execute: async () => 'ok' });
    expect(() => effectTool(definition, { commit: 'with-step', probe: async () => null })).toThrow(/with-step.*probe/);
    expect(() => effectTool(definition, { commit: 'with-step', mode: 'atMostOnce' })).toThrow(/with-step.*atMostOnce/);
    expect(() => effectTool(definition, { commit: 'with-step' })).not.toThrow();
  });

  it('refuses a misspelt mode, and a key that is not a function, where the tool is defined', () => {
    const definition = tool({ inputSchema: z.object({}), execute: async () => 'ok' });
    for (const mode of ['atmostonce', 'bogus']) {
      const error = caughtSync(() => effectTool(definition, { name: 'pay', mode: mode as 'atMostOnce' }));
      expect(InvalidOptionError.is(error)).toBe(true);
      expect(error.message).toContain(`"${mode}"`);
    }
    expect(InvalidOptionError.is(caughtSync(() => effectTool(definition, { key: 'order-1' as unknown as () => string })))).toBe(true);
    expect(() => effectTool(definition, { mode: 'atMostOnce' })).not.toThrow();
  });
});

describe('cairn/ai-sdk recordedTools options', () => {
  it('refuses what is not a tool set with InvalidOptionError, not a TypeError', () => {
    for (const tools of [null, undefined, 'weather', []]) {
      expect(InvalidOptionError.is(caughtSync(() => recordedTools(tools as never)))).toBe(true);
    }
    expect(recordedTools({})).toEqual({});
  });

  it('refuses a name option that is not a function (the record name of each tool) with InvalidOptionError', () => {
    const tools = { weather: tool({ inputSchema: z.object({ city: z.string() }), execute: async ({ city }) => city }) };
    for (const name of ['weather', 5, {}]) {
      const error = caughtSync(() => recordedTools(tools, { name: name as never }));
      expect(InvalidOptionError.is(error), String(error)).toBe(true);
      expect((error as Error).message).toContain('name is a function from a tool');
    }
    expect(Object.keys(recordedTools(tools, { name: (t) => `search:${t}` }))).toEqual(['weather']);
  });

  it('recordedTools, effectTool, cairnMiddleware and recordedModel refuse options they do not take, and effectTool a tool without execute, with InvalidOptionError', () => {
    const weather = tool({ inputSchema: z.object({ city: z.string() }), execute: async ({ city }) => city });
    const cases: [string, () => unknown][] = [
      ['recordedTools', () => recordedTools({ weather }, { nmae: () => 'x' } as never)],
      ['effectTool', () => effectTool(weather, { moed: 'atMostOnce' } as never)],
      ['effectTool without execute', () => effectTool(tool({ inputSchema: z.object({}) }) as never)],
      ['cairnMiddleware', () => cairnMiddleware({ nam: { generate: 'chat' } } as never)],
      ['cairnMiddleware name', () => cairnMiddleware({ name: 'chat' } as never)],
      ['cairnMiddleware name key', () => cairnMiddleware({ name: { generat: 'chat' } } as never)],
      ['recordedModel', () => recordedModel(textModel('hi'), { names: {} } as never)],
    ];
    for (const [label, make] of cases) {
      const error = caughtSync(make);
      expect(InvalidOptionError.is(error), `${label}: ${String(error)}`).toBe(true);
    }
    expect(effectTool(weather, { name: 'weather', mode: 'atMostOnce' })).toBeTruthy();
    expect(cairnMiddleware({ name: { generate: 'chat' } })).toBeTruthy();
  });
});

describe('cairn/ai-sdk usage', () => {
  it('tokenUsage sums what the provider reported and leaves out what it did not', async () => {
    const { tokenUsage } = await import('../../src/ai-sdk/index.js');
    expect(tokenUsage(usage(3, 4))).toEqual({ inputTokens: 3, outputTokens: 4, totalTokens: 7 });
    expect(tokenUsage({ inputTokens: { total: 9, noCache: undefined, cacheRead: undefined, cacheWrite: undefined }, outputTokens: { total: undefined, text: undefined, reasoning: undefined } })).toEqual({ inputTokens: 9, totalTokens: 9 });
    expect(tokenUsage({ inputTokens: { total: undefined, noCache: undefined, cacheRead: undefined, cacheWrite: undefined }, outputTokens: { total: undefined, text: undefined, reasoning: undefined } })).toBeUndefined();
    expect(tokenUsage(undefined)).toBeUndefined();
  });
});
