/**
 * OpenTelemetry spans of a run, with the SDK's in-memory exporter as the registered
 * provider: the span tree (names, parents, attributes) of a run with a record and an
 * effect, a re-execution served the effect's outcome, an interrupt and its answer, a
 * child run under its subgraph task, concurrent tasks, a failing node's error status,
 * waits and artifacts, a model call that fails (and a stream cairn/ai-sdk does not
 * record); and that without a recording provider (or with
 * `tracing: false`) a run asks the tracer for at most its one root span.
 * Every behavioural test runs on memory and on SQLite.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { INVALID_SPAN_CONTEXT, context, trace, type Span, type Tracer, type TracerProvider } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { defineState } from '../../src/state/schema.js';
import { field } from '../../src/state/fields.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import { memoryArtifacts } from '../../src/artifacts/memory/memory-artifact-store.js';
import { memory } from '../../src/engines/memory/index.js';
import { caught, useEngine, type EngineName } from './engines.js';
import { simulateReadableStream, streamText } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';
import type { LanguageModelV4StreamPart } from '@ai-sdk/provider';
import { recordedModel } from '../../src/ai-sdk/index.js';

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
const contextManager = new AsyncLocalStorageContextManager();

beforeAll(() => {
  // The context manager lets a node's own spans nest under its task; cairn's own spans are parented explicitly.
  context.setGlobalContextManager(contextManager.enable());
  trace.setGlobalTracerProvider(provider);
});
afterAll(async () => {
  trace.disable();
  context.disable();
  await provider.shutdown();
});
afterEach(() => exporter.reset());

const State = defineState({
  fields: {
    log: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
    answer: field.model(z.string().optional()),
  },
});

function spans(): ReadableSpan[] {
  return exporter.getFinishedSpans();
}
function named(name: string): ReadableSpan[] {
  return spans().filter((s) => s.name === name);
}
function one(name: string, where: (s: ReadableSpan) => boolean = () => true): ReadableSpan {
  const found = named(name).filter(where);
  expect(found, `one ${name}`).toHaveLength(1);
  return found[0]!;
}
function parentOf(span: ReadableSpan): ReadableSpan | undefined {
  const id = span.parentSpanContext?.spanId;
  return spans().find((s) => s.spanContext().spanId === id);
}
function childrenOf(span: ReadableSpan, name?: string): ReadableSpan[] {
  return spans().filter((s) => s.parentSpanContext?.spanId === span.spanContext().spanId && (name === undefined || s.name === name));
}
const ERROR = 2;

describe.each<[EngineName]>([['memory'], ['sqlite']])('tracing on %s', (name) => {
  const ctx = useEngine(name);

  it('a 3-step run is one cairn.run span with a superstep per step, each with its task and commit; the record and the effect nest under their tasks', async () => {
    const sent: string[] = [];
    const app = graph(State)
      .node('ask', async (_s, c) => ({ log: [await c.record('model', () => 'forty-two')] }))
      .node('send', async (_s, c) => ({ log: [await c.effect('email', { run: async (key) => (sent.push(key), 'sent') })] }))
      .node('done', () => ({ answer: 'ok' }))
      .edge(START, 'ask')
      .edge('ask', 'send')
      .edge('send', 'done')
      .edge('done', END)
      .compile({ engine: ctx.engine });
    const result = await app.run({ thread: 't1' });
    expect(result.status).toBe('completed');

    const run = one('cairn.run');
    expect(parentOf(run)).toBeUndefined();
    expect(run.attributes).toMatchObject({ 'cairn.thread.id': 't1', 'cairn.run.attempt': 1, 'cairn.thread.status': 'completed' });
    const steps = childrenOf(run, 'cairn.superstep').sort((a, b) => Number(a.attributes['cairn.seq']) - Number(b.attributes['cairn.seq']));
    expect(steps.map((s) => s.attributes)).toEqual([
      { 'cairn.ns': '', 'cairn.seq': 0, 'cairn.nodes': ['ask'] },
      { 'cairn.ns': '', 'cairn.seq': 1, 'cairn.nodes': ['send'] },
      { 'cairn.ns': '', 'cairn.seq': 2, 'cairn.nodes': ['done'] },
    ]);
    for (const [i, step] of steps.entries()) {
      const [task] = childrenOf(step, 'cairn.task');
      expect(task!.attributes).toMatchObject({ 'cairn.ns': '', 'cairn.node': ['ask', 'send', 'done'][i], 'cairn.task': `${['ask', 'send', 'done'][i]}:0`, 'cairn.attempt': 1 });
      const [commit] = childrenOf(step, 'cairn.commit');
      expect(commit!.attributes).toMatchObject({ 'cairn.seq': i + 1, 'cairn.snapshot': false });
    }
    const record = one('cairn.record');
    expect(parentOf(record)!.attributes['cairn.node']).toBe('ask');
    expect(record.attributes).toMatchObject({ 'cairn.record.name': 'model', 'cairn.record.served': false });
    expect(String(record.attributes['cairn.record.key'])).toMatch(/^rec_/);
    const effect = one('cairn.effect');
    expect(parentOf(effect)!.attributes['cairn.node']).toBe('send');
    expect(effect.attributes).toEqual({ 'cairn.effect.name': 'email', 'cairn.effect.key': sent[0], 'cairn.effect.outcome': 'ran' });
    expect(spans()).toHaveLength(1 + 3 * 3 + 2);
  });

  it('a node that fails after its effect marks its task, superstep and run failed; the run that re-executes it is served the effect (outcome hit)', async () => {
    let failing = true;
    let runs = 0;
    const app = graph(State)
      .node('send', async (_s, c) => {
        const asked = await c.record('model', () => 'draft');
        await c.effect('charge', { run: async () => (runs++, 'charged') });
        if (failing) throw new Error('crashed after the charge');
        return { log: [asked] };
      })
      .edge(START, 'send')
      .edge('send', END)
      .compile({ engine: ctx.engine, retry: { maxAttempts: 1 } });
    expect((await caught(() => app.run({ thread: 't1' }))).message).toMatch(/crashed after the charge/);
    const failedTask = one('cairn.task');
    expect(failedTask.status).toMatchObject({ code: ERROR, message: expect.stringMatching(/crashed after the charge/) });
    expect(failedTask.attributes).toMatchObject({ 'cairn.error.code': 'ERR_NODE_FAILED', 'cairn.task.will_retry': false });
    expect(failedTask.events.map((e) => e.name)).toContain('exception');
    expect(one('cairn.superstep').status.code).toBe(ERROR);
    const failedRun = one('cairn.run');
    expect(failedRun.status.code).toBe(ERROR);
    expect(failedRun.attributes).toMatchObject({ 'cairn.thread.status': 'failed', 'cairn.error.code': 'ERR_NODE_FAILED' });
    expect(one('cairn.effect').attributes['cairn.effect.outcome']).toBe('ran');
    exporter.reset();

    failing = false;
    expect((await app.run({ thread: 't1' })).status).toBe('completed');
    expect(runs).toBe(1);
    expect(one('cairn.run').attributes).toMatchObject({ 'cairn.run.attempt': 2, 'cairn.thread.status': 'completed' });
    expect(one('cairn.effect').attributes['cairn.effect.outcome']).toBe('hit');
    // A failed attempt's recorded outputs are discarded (they led to the failure): the record is asked again.
    expect(one('cairn.record').attributes['cairn.record.served']).toBe(false);
    expect(one('cairn.task').status.code).not.toBe(ERROR);
  });

  it('an effect left with an intent and no outcome says how it was recovered: probe_found, probe_absent_reran, reran', async () => {
    let fail = true;
    const outcomes: Record<string, string | undefined> = {};
    for (const [label, probe] of [
      ['found', async () => 'already done'],
      ['absent', async () => null],
      ['none', undefined],
    ] as const) {
      fail = true;
      const app = graph(State)
        .node('send', async (_s, c) => ({
          log: [
            await c.effect('pay', {
              run: async () => {
                if (fail) throw new Error('timeout');
                return 'paid';
              },
              ...(probe ? { probe } : {}),
            }),
          ],
        }))
        .edge(START, 'send')
        .edge('send', END)
        .compile({ engine: ctx.engine, retry: { maxAttempts: 1 } });
      await caught(() => app.run({ thread: label }));
      fail = false;
      exporter.reset();
      expect((await app.run({ thread: label })).status).toBe('completed');
      outcomes[label] = one('cairn.effect').attributes['cairn.effect.outcome'] as string;
    }
    expect(outcomes).toEqual({ found: 'probe_found', absent: 'probe_absent_reran', none: 'reran' });
  });

  it('an interrupt is an event on its task, the run ends interrupted; the resume is a new run whose task says the answer was served', async () => {
    const app = graph(State)
      .node('approve', async (_s, c) => ({ answer: String(await c.interrupt({ question: 'ok?' }, { answer: z.boolean() })) }))
      .edge(START, 'approve')
      .edge('approve', END)
      .compile({ engine: ctx.engine });
    expect((await app.run({ thread: 't1' })).status).toBe('interrupted');
    expect(one('cairn.run').attributes['cairn.thread.status']).toBe('interrupted');
    const asked = one('cairn.task');
    expect(asked.status.code).not.toBe(ERROR);
    expect(asked.attributes['cairn.task.suspended']).toBe('interrupt');
    const event = asked.events.find((e) => e.name === 'cairn.interrupt')!;
    expect(String(event.attributes!['cairn.interrupt.key'])).toMatch(/^int_/);
    exporter.reset();

    const resumed = await app.resume({ thread: 't1', answer: true });
    expect(resumed.state.answer).toBe('true');
    expect(one('cairn.run').attributes).toMatchObject({ 'cairn.thread.id': 't1', 'cairn.thread.status': 'completed' });
    const answered = one('cairn.task');
    expect(answered.events.map((e) => [e.name, e.attributes!['cairn.interrupt.key']])).toEqual([['cairn.interrupt.answered', event.attributes!['cairn.interrupt.key']]]);
  });

  it('a child run is a cairn.run span under its subgraph task, carrying its namespace; its supersteps and tasks nest under it', async () => {
    const Child = defineState({ fields: { question: field.model(z.string(), { default: '' }), found: field.model(z.string(), { default: '' }) } });
    const child = graph(Child)
      .node('search', async (s, c) => ({ found: await c.record('search', () => `hits for ${s.question}`) }))
      .edge(START, 'search')
      .edge('search', END);
    const app = graph(State)
      .subgraph('research', child, { input: () => ({ question: 'tides' }), output: (r) => ({ answer: r.found }) })
      .edge(START, 'research')
      .edge('research', END)
      .compile({ engine: ctx.engine });
    expect((await app.run({ thread: 't1' })).state.answer).toBe('hits for tides');

    const root = one('cairn.run', (s) => parentOf(s) === undefined);
    const subgraphTask = one('cairn.task', (s) => s.attributes['cairn.node'] === 'research');
    expect(parentOf(parentOf(subgraphTask)!)).toBe(root);
    const childRun = one('cairn.run', (s) => s !== root);
    expect(parentOf(childRun)).toBe(subgraphTask);
    const ns = String(childRun.attributes['cairn.ns']);
    expect(ns).toMatch(/^research:0@0$/);
    expect(childRun.attributes).toMatchObject({ 'cairn.thread.id': 't1', 'cairn.thread.status': 'completed' });
    const childStep = one('cairn.superstep', (s) => s.attributes['cairn.ns'] === ns);
    expect(parentOf(childStep)).toBe(childRun);
    const search = one('cairn.task', (s) => s.attributes['cairn.node'] === 'search');
    expect(parentOf(search)).toBe(childStep);
    expect(search.attributes['cairn.ns']).toBe(ns);
    expect(parentOf(one('cairn.record'))).toBe(search);
  });

  it('concurrent tasks of one superstep each get their own task span, and their records and the node’s own spans nest under the right one', async () => {
    const tracer = trace.getTracer('app');
    const app = graph(State)
      .node('left', async (_s, c) => {
        await c.record('l', async () => (await new Promise((r) => setTimeout(r, 5)), 'L'));
        tracer.startActiveSpan('app.left', (span) => span.end());
        return { log: ['left'] };
      })
      .node('right', async (_s, c) => {
        await c.record('r', async () => 'R');
        tracer.startActiveSpan('app.right', (span) => span.end());
        return { log: ['right'] };
      })
      .edge(START, 'left')
      .edge(START, 'right')
      .edge('left', END)
      .edge('right', END)
      .compile({ engine: ctx.engine });
    await app.run({ thread: 't1' });
    const step = one('cairn.superstep');
    expect(step.attributes['cairn.nodes']).toEqual(['left', 'right']);
    const left = one('cairn.task', (s) => s.attributes['cairn.node'] === 'left');
    const right = one('cairn.task', (s) => s.attributes['cairn.node'] === 'right');
    expect([parentOf(left), parentOf(right)]).toEqual([step, step]);
    expect(parentOf(one('cairn.record', (s) => s.attributes['cairn.record.name'] === 'l'))).toBe(left);
    expect(parentOf(one('cairn.record', (s) => s.attributes['cairn.record.name'] === 'r'))).toBe(right);
    expect(parentOf(one('app.left'))).toBe(left);
    expect(parentOf(one('app.right'))).toBe(right);
  });

  it('a retried node is one task span per attempt; waits are events with their kind, wake time and signal name', async () => {
    let tries = 0;
    const app = graph(State)
      .node('flaky', () => {
        if (++tries === 1) throw new Error('overloaded');
        return { log: ['ok'] };
      })
      .node('pause', async (_s, c) => {
        await c.sleep(60_000);
        return { log: ['woke'] };
      })
      .edge(START, 'flaky')
      .edge('flaky', 'pause')
      .edge('pause', END)
      .compile({ engine: ctx.engine, retry: { maxAttempts: 2, initialDelayMs: 1 } });
    expect((await app.run({ thread: 't1' })).status).toBe('waiting');
    const attempts = named('cairn.task').filter((s) => s.attributes['cairn.node'] === 'flaky');
    expect(attempts.map((s) => [s.attributes['cairn.attempt'], s.status.code === ERROR, s.attributes['cairn.task.will_retry']])).toEqual([
      [1, true, true],
      [2, false, undefined],
    ]);
    const pause = one('cairn.task', (s) => s.attributes['cairn.node'] === 'pause');
    const wait = pause.events.find((e) => e.name === 'cairn.wait')!;
    expect(wait.attributes).toMatchObject({ 'cairn.wait.kind': 'sleep' });
    expect(Number(wait.attributes!['cairn.wait.until'])).toBeGreaterThan(Date.now() + 50_000);
    expect(one('cairn.run').attributes['cairn.thread.status']).toBe('waiting');

    const signalled = graph(State)
      .node('await', async (_s, c) => ({ log: [String((await c.waitFor('payment', { timeoutMs: 1_000 })).status)] }))
      .edge(START, 'await')
      .edge('await', END)
      .compile({ engine: ctx.engine });
    exporter.reset();
    await signalled.run({ thread: 't2' });
    expect(one('cairn.task').events.find((e) => e.name === 'cairn.wait')!.attributes).toMatchObject({ 'cairn.wait.kind': 'signal', 'cairn.wait.name': 'payment' });
  });

  it('ctx.recordArtifact: its record span carries the artifact id', async () => {
    const artifacts = memoryArtifacts();
    const app = graph(State)
      .node('fetch', async (_s, c) => {
        const ref = await c.recordArtifact('page', () => '<html>…</html>', { mediaType: 'text/html' });
        return { answer: ref.id };
      })
      .edge(START, 'fetch')
      .edge('fetch', END)
      .compile({ engine: ctx.engine, artifacts });
    const { state } = await app.run({ thread: 't1' });
    expect(one('cairn.record').attributes).toMatchObject({ 'cairn.record.name': 'page', 'cairn.artifact.id': state.answer });
  });

  it('a model record carries the GenAI attributes (operation, model, provider, tokens) made and served; a tool record execute_tool; a plain record its kind only', async () => {
    let fail = true;
    const app = graph(State)
      .node('agent', async (_s, c) => {
        const reply = await c.record('chat', () => ({ text: 'hi', usage: { in: 12, out: 3 } }), {
          kind: 'model',
          model: 'mock-model',
          provider: 'mock-provider',
          describe: (r) => ({ usage: { inputTokens: r.usage.in, outputTokens: r.usage.out, totalTokens: r.usage.in + r.usage.out } }),
        });
        const weather = await c.record('tool:weather', () => 'sunny', { kind: 'tool' });
        await c.record('lookup#1', () => 'found', { kind: 'tool', tool: 'lookup' });
        const now = await c.record('clock', () => 7);
        // Stops once after the records: the resumed step is served them.
        if (fail) {
          fail = false;
          await c.interrupt('go on?');
        }
        return { log: [reply.text, weather, String(now)] };
      })
      .edge(START, 'agent')
      .edge('agent', END)
      .compile({ engine: ctx.engine });
    expect((await app.run({ thread: 't1' })).status).toBe('interrupted');
    const made = one('cairn.record', (s) => s.attributes['cairn.record.name'] === 'chat');
    expect(made.attributes).toMatchObject({
      'cairn.record.served': false,
      'cairn.record.kind': 'model',
      'gen_ai.operation.name': 'chat',
      'gen_ai.request.model': 'mock-model',
      'gen_ai.provider.name': 'mock-provider',
      'gen_ai.system': 'mock-provider',
      'gen_ai.usage.input_tokens': 12,
      'gen_ai.usage.output_tokens': 3,
    });
    expect(typeof made.attributes['cairn.record.latency_ms']).toBe('number');
    expect(one('cairn.record', (s) => s.attributes['cairn.record.name'] === 'tool:weather').attributes).toMatchObject({
      'cairn.record.kind': 'tool',
      'gen_ai.operation.name': 'execute_tool',
      'gen_ai.tool.name': 'tool:weather',
    });
    // A record named otherwise says the tool's own name.
    expect(one('cairn.record', (s) => s.attributes['cairn.record.name'] === 'lookup#1').attributes).toMatchObject({ 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'lookup' });
    const clock = one('cairn.record', (s) => s.attributes['cairn.record.name'] === 'clock');
    expect(clock.attributes['cairn.record.kind']).toBe('other');
    expect(clock.attributes['gen_ai.operation.name']).toBeUndefined();
    exporter.reset();

    expect((await app.resume({ thread: 't1', answer: true })).status).toBe('completed');
    const served = one('cairn.record', (s) => s.attributes['cairn.record.name'] === 'chat');
    expect(served.attributes).toMatchObject({ 'cairn.record.served': true, 'gen_ai.request.model': 'mock-model', 'gen_ai.usage.input_tokens': 12, 'gen_ai.usage.output_tokens': 3 });
    // Served again, from its stored meta.
    expect(one('cairn.record', (s) => s.attributes['cairn.record.name'] === 'lookup#1').attributes).toMatchObject({ 'cairn.record.served': true, 'gen_ai.tool.name': 'lookup' });
  });

  it('a model call that fails is a failed record span that still says what was asked (kind, model, provider); a stream cairn/ai-sdk leaves unrecorded says why', async () => {
    const broken = new MockLanguageModelV4({
      provider: 'mock-provider',
      modelId: 'mock-model',
      doStream: async () => ({
        stream: simulateReadableStream<LanguageModelV4StreamPart>({
          chunks: [{ type: 'stream-start', warnings: [] }, { type: 'text-start', id: 'a' }, { type: 'text-delta', id: 'a', delta: 'par' }, { type: 'error', error: new Error('overloaded') }],
          chunkDelayInMs: null,
          initialDelayInMs: null,
        }),
      }),
    });
    const app = graph(State)
      .node('agent', async (_s, c) => {
        const partial = await streamText({ model: recordedModel(broken), prompt: 'x', onError: () => undefined }).text;
        await c.record('chat', () => Promise.reject(new Error('rate limited')), { kind: 'model', model: 'big-model', provider: 'acme' }).catch(() => undefined);
        return { log: [partial] };
      })
      .edge(START, 'agent')
      .edge('agent', END)
      .compile({ engine: ctx.engine });
    expect((await app.run({ thread: 'fm' })).state.log).toEqual(['par']);
    const chat = one('cairn.record', (s) => s.attributes['cairn.record.name'] === 'chat');
    expect(chat.status).toMatchObject({ code: ERROR, message: 'rate limited' });
    expect(chat.attributes).toMatchObject({ 'cairn.record.kind': 'model', 'gen_ai.operation.name': 'chat', 'gen_ai.request.model': 'big-model', 'gen_ai.provider.name': 'acme' });
    const stream = one('cairn.record', (s) => s.attributes['cairn.record.name'] === 'ai.stream');
    expect(stream.attributes).toMatchObject({ 'cairn.record.kind': 'model', 'gen_ai.request.model': 'mock-model', 'cairn.error.code': 'StreamNotRecorded' });
    expect(stream.status.message).toBe('the stream carried an error part (overloaded): not recorded, a re-execution asks again');
  });

  it('compile({ tracing: false }) emits no span', async () => {
    const app = graph(State)
      .node('a', async (_s, c) => ({ log: [await c.record('x', () => 'y')] }))
      .edge(START, 'a')
      .edge('a', END)
      .compile({ engine: ctx.engine, tracing: false });
    await app.run({ thread: 't1' });
    expect(spans()).toEqual([]);
  });
});

describe('tracing with nothing recording', () => {
  /** A provider whose spans do not record (as the API's no-op one, or a sampler that drops everything), counting what it is asked. */
  function countingProvider(): { provider: TracerProvider; started: string[] } {
    const started: string[] = [];
    const tracer = {
      startSpan(name: string): Span {
        started.push(name);
        return trace.wrapSpanContext(INVALID_SPAN_CONTEXT);
      },
      startActiveSpan() {
        throw new Error('not used by cairn');
      },
    } as unknown as Tracer;
    return { provider: { getTracer: () => tracer }, started };
  }

  function threeSteps(options: { tracing?: boolean } = {}) {
    return graph(State)
      .node('a', async (_s, c) => ({ log: [await c.record('x', () => 'y')] }))
      .node('b', async (_s, c) => ({ log: [await c.effect('e', { run: async () => 'z' })] }))
      .node('c', () => ({ answer: 'done' }))
      .edge(START, 'a')
      .edge('a', 'b')
      .edge('b', 'c')
      .edge('c', END)
      .compile({ engine: memory(), ...options });
  }

  afterAll(() => {
    trace.disable();
    trace.setGlobalTracerProvider(provider);
  });

  it('a run asks a non-recording tracer for its root span only: no superstep, task, record or effect span is built', async () => {
    const { provider: counting, started } = countingProvider();
    trace.disable();
    trace.setGlobalTracerProvider(counting);
    const result = await threeSteps().run({ thread: 't1' });
    expect(result.status).toBe('completed');
    expect(started).toEqual(['cairn.run']);
    expect(spans()).toEqual([]);
  });

  it('with tracing: false the tracer is asked nothing', async () => {
    const { provider: counting, started } = countingProvider();
    trace.disable();
    trace.setGlobalTracerProvider(counting);
    await threeSteps({ tracing: false }).run({ thread: 't1' });
    expect(started).toEqual([]);
  });

  it('with no provider registered at all (the API’s default), runs work and nothing is exported', async () => {
    trace.disable();
    const result = await threeSteps().run({ thread: 't1' });
    expect(result.state.answer).toBe('done');
    expect(spans()).toEqual([]);
  });
});
