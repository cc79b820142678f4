/**
 * `const answer = await ctx.interrupt(payload, { answer: schema })`: the node stops at
 * the call (nothing after it runs, its writes are not committed, what it recorded
 * before stays recorded), the thread is `interrupted`, and `resume({ thread, answer })`
 * re-executes the node, serving the recorded values, with the same call resolving to
 * the answer. Invalid answers change nothing; several calls resolve in order; parallel
 * nodes keep theirs; child runs and forks work; the answer is what replay serves.
 * Every test runs on memory, SQLite and PostgreSQL.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Engine } from '../../src/contracts/engine.js';
import { InvalidOptionError, StateValidationError, ThreadInterruptedError } from '../../src/errors.js';
import { defineState } from '../../src/state/schema.js';
import { field } from '../../src/state/fields.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import { bodies, caught, ENGINES, rawPositions, useEngine } from './engines.js';

const State = defineState({
  fields: {
    amount: field.model(z.number(), { default: 0 }),
    decision: field.model(z.string(), { default: '' }),
    log: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
  },
});

async function footprint(engine: Engine, thread: string) {
  const record = await engine.checkpointer.getThread(thread);
  return { positions: await rawPositions(engine, thread), status: record?.status, head: record?.head, ledger: await engine.ledger.list(thread) };
}

describe.each(ENGINES)('interrupts that return answers on %s', (name) => {
  const ctx = useEngine(name);

  /** START -> approve (records a quote, asks, then writes) -> END; counting what ran. */
  function approvalGraph(engine: Engine = ctx.engine) {
    const calls = { quote: 0, afterAsk: 0, effect: 0 };
    const app = graph(State)
      .node('approve', async (s, c) => {
        const quote = await c.record('quote', () => {
          calls.quote++;
          return s.amount * 2;
        });
        await c.effect('notify', { idempotencyKey: `notify-${s.amount}`, run: () => (calls.effect++, 'sent') });
        const ok = await c.interrupt({ question: `refund ${quote}?` }, { answer: z.boolean() });
        calls.afterAsk++;
        return { decision: ok ? 'refund' : 'deny', log: [`decided:${ok}`] };
      })
      .edge(START, 'approve')
      .edge('approve', END)
      .compile({ engine });
    return { app, calls };
  }

  it('stops the node at the call: nothing after it runs, its writes are not committed, the thread is interrupted with the payload', async () => {
    const { app, calls } = approvalGraph();
    const result = await app.run({ thread: 't', input: { amount: 21 } });
    expect(result.status).toBe('interrupted');
    expect(result.interrupts).toHaveLength(1);
    expect(result.interrupts[0]).toMatchObject({ node: 'approve', when: 'inside', payload: { question: 'refund 42?' } });
    expect(calls).toEqual({ quote: 1, afterAsk: 0, effect: 1 });
    expect(result.state.decision).toBe('');
    expect(result.state.log).toEqual([]);
    expect((await ctx.engine.checkpointer.getThread('t'))!.status).toBe('interrupted');
    // What it recorded before the call stays recorded: the quote and the effect's outcome.
    const ledger = await ctx.engine.ledger.list('t');
    expect(ledger.map((e) => e.name).sort()).toEqual(['notify', 'quote']);
  });

  it("keeps a JSON Schema of the call's answer with the interrupt, read back from storage by a fresh engine; none for a schema that cannot describe itself", async () => {
    const Answer = z.object({ approve: z.boolean(), amount: z.number().int(), reason: z.enum(['stock', 'price']), note: z.string().optional(), address: z.object({ city: z.string() }) });
    const app = graph(State)
      .node('ask', async (_s, c) => ({ decision: JSON.stringify(await c.interrupt({ q: 'ok?' }, { answer: Answer })) }))
      .node('plain', async (_s, c) => ({ decision: String(await c.interrupt('ok?', { answer: { '~standard': { version: 1, vendor: 'hand', validate: (v: unknown) => ({ value: v }) } } })) }))
      .edge(START, 'ask')
      .edge(START, 'plain')
      .edge('ask', END)
      .edge('plain', END)
      .compile({ engine: ctx.engine });
    const result = await app.run({ thread: 'schema', input: {} });
    const [ask, plain] = ['ask', 'plain'].map((n) => result.interrupts.find((i) => i.node === n)!);
    expect(ask!.answerSchema).toMatchObject({
      type: 'object',
      properties: {
        approve: { type: 'boolean' },
        amount: { type: 'integer' },
        reason: { enum: ['stock', 'price'] },
        note: { type: 'string' },
        address: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] },
      },
      required: ['approve', 'amount', 'reason', 'address'],
    });
    expect(plain).not.toHaveProperty('answerSchema');
    const fresh = ctx.reopen();
    const [head] = await bodies(fresh, 'schema').then((b) => b.slice(-1));
    expect(head!.interrupts!.find((i) => i.node === 'ask')!.answerSchema).toEqual(ask!.answerSchema);
  });

  it('resume({ answer }) re-executes the node serving what it recorded, and the call resolves to the answer: no empty step, no leftover flag', async () => {
    const { app, calls } = approvalGraph();
    await app.run({ thread: 't', input: { amount: 21 } });
    const done = await app.resume({ thread: 't', answer: true, actor: 'ana' });
    expect(done.status).toBe('completed');
    expect(done.state.decision).toBe('refund');
    expect(done.state.log).toEqual(['decided:true']);
    // The recorded quote and the landed effect were served, not called again.
    expect(calls).toEqual({ quote: 1, afterAsk: 1, effect: 1 });
    const kinds = (await bodies(ctx.engine, 't')).map((b) => b.kind);
    expect(kinds).toEqual(['input', 'interrupt', 'resume', 'step']);
    const resume = (await bodies(ctx.engine, 't'))[2]!;
    expect(resume.actor).toBe('ana');
    expect(resume.answered).toBe((await bodies(ctx.engine, "t"))[1]!.interrupts![0]!.id);
  });

  it('works from a fresh engine on the same storage, any day later', async () => {
    const { app } = approvalGraph();
    await app.run({ thread: 't', input: { amount: 5 } });
    const again = approvalGraph(ctx.reopen());
    const done = await again.app.resume({ thread: 't', answer: false });
    expect(done.state.decision).toBe('deny');
    expect(again.calls.quote).toBe(0);
    expect(again.calls.effect).toBe(0);
  });

  it('an answer the schema refuses is StateValidationError and changes nothing; a good one then works', async () => {
    const { app } = approvalGraph();
    await app.run({ thread: 't', input: { amount: 1 } });
    const before = await footprint(ctx.engine, 't');
    const error = await caught(() => app.resume({ thread: 't', answer: 'yes please' }));
    expect(error).toBeInstanceOf(StateValidationError);
    expect((error as StateValidationError).code).toBe('ERR_STATE_VALIDATION');
    expect(await footprint(ctx.engine, 't')).toEqual(before);
    expect((await app.resume({ thread: 't', answer: true })).state.decision).toBe('refund');
  });

  it('several calls in one node resolve in call order, one resume each', async () => {
    let runs = 0;
    const app = graph(State)
      .node('ask', async (_s, c) => {
        runs++;
        const first = await c.interrupt('first?', { answer: z.string() });
        const second = await c.interrupt('second?', { answer: z.string() });
        return { log: [first, second] };
      })
      .edge(START, 'ask')
      .edge('ask', END)
      .compile({ engine: ctx.engine });
    const one = await app.run({ thread: 't', input: {} });
    expect(one.interrupts.map((i) => i.payload)).toEqual(['first?']);
    const two = await app.resume({ thread: 't', answer: 'a' });
    expect(two.status).toBe('interrupted');
    expect(two.interrupts.map((i) => i.payload)).toEqual(['second?']);
    expect(two.interrupts[0]!.id).not.toBe(one.interrupts[0]!.id);
    const done = await app.resume({ thread: 't', answer: 'b' });
    expect(done.status).toBe('completed');
    expect(done.state.log).toEqual(['a', 'b']);
    expect(runs).toBe(3 + 2); // three executions, plus the answer check before each commit
  });

  it('parallel nodes each keep theirs: resume({ interrupt: id, answer }) answers one, the thread stays interrupted until both are', async () => {
    const ran: string[] = [];
    const app = graph(State)
      .node('left', async (_s, c) => {
        ran.push('left');
        return { log: [`left:${await c.interrupt('left?')}`] };
      })
      .node('right', async (_s, c) => {
        ran.push('right');
        return { log: [`right:${await c.interrupt('right?')}`] };
      })
      .node('quick', () => (ran.push('quick'), { log: ['quick'] }))
      .edge(START, 'left')
      .edge(START, 'right')
      .edge(START, 'quick')
      .edge('left', END)
      .edge('right', END)
      .edge('quick', END)
      .compile({ engine: ctx.engine });
    const first = await app.run({ thread: 't', input: {} });
    expect(first.status).toBe('interrupted');
    const [left, right] = ['left', 'right'].map((n) => first.interrupts.find((i) => i.node === n)!);
    const half = await app.resume({ thread: 't', interrupt: right!.id, answer: 'R' });
    expect(half.status).toBe('interrupted');
    expect(half.interrupts.map((i) => i.id)).toEqual([left!.id]);
    const done = await app.resume({ thread: 't', interrupt: left!.id, answer: 'L' });
    expect(done.status).toBe('completed');
    expect([...done.state.log].sort()).toEqual(['left:L', 'quick', 'right:R']);
    // The node that finished in the stopped superstep did not run again.
    expect(ran.filter((n) => n === 'quick')).toHaveLength(1);
  });

  it('a run() of the interrupted thread is ThreadInterruptedError; input alongside an answer is merged', async () => {
    const { app } = approvalGraph();
    await app.run({ thread: 't', input: { amount: 3 } });
    expect(await caught(() => app.run({ thread: 't' }))).toBeInstanceOf(ThreadInterruptedError);
    const done = await app.resume({ thread: 't', answer: true, input: { log: ['note from ana'] } });
    expect(done.state.log).toEqual(['note from ana', 'decided:true']);
  });

  it('an answer to a declared pause is InvalidOptionError (those take input), and changes nothing', async () => {
    const app = graph(State)
      .node('work', () => ({ log: ['work'] }), { interruptBefore: true })
      .edge(START, 'work')
      .edge('work', END)
      .compile({ engine: ctx.engine });
    await app.run({ thread: 't', input: {} });
    const before = await footprint(ctx.engine, 't');
    expect(await caught(() => app.resume({ thread: 't', answer: true }))).toBeInstanceOf(InvalidOptionError);
    expect(await footprint(ctx.engine, 't')).toEqual(before);
    expect((await app.resume({ thread: 't' })).status).toBe('completed');
  });

  it('an approval loop asks again each round, with no flag left in state', async () => {
    const app = graph(State)
      .node('draft', (s) => ({ amount: s.amount + 1, log: [`draft ${s.amount + 1}`] }))
      .node('review', async (s, c) => {
        const ok = await c.interrupt({ draft: s.amount }, { answer: z.boolean() });
        return { decision: ok ? 'approved' : 'rejected', log: [`review ${s.amount}: ${ok}`] };
      })
      .edge(START, 'draft')
      .edge('draft', 'review')
      .conditionalEdge('review', (s) => (s.decision === 'approved' ? END : 'draft'))
      .compile({ engine: ctx.engine });
    expect((await app.run({ thread: 't', input: {} })).interrupts[0]!.payload).toEqual({ draft: 1 });
    expect((await app.resume({ thread: 't', answer: false })).interrupts[0]!.payload).toEqual({ draft: 2 });
    const done = await app.resume({ thread: 't', answer: true });
    expect(done.status).toBe('completed');
    expect(done.state.log).toEqual(['draft 1', 'review 1: false', 'draft 2', 'review 2: true']);
  });

  it('inside a child run: the child node stops, the thread is interrupted, resume answers the child and it goes on', async () => {
    const Child = defineState({ fields: { verdict: field.model(z.string(), { default: '' }) } });
    const child = graph(Child)
      .node('ask', async (_s, c) => ({ verdict: (await c.interrupt('child asks', { answer: z.enum(['yes', 'no']) })) as string }))
      .edge(START, 'ask')
      .edge('ask', END);
    const app = graph(State)
      .subgraph('review', child, { input: () => ({}), output: (r) => ({ decision: r.verdict }) })
      .edge(START, 'review')
      .edge('review', END)
      .compile({ engine: ctx.engine });
    const first = await app.run({ thread: 't', input: {} });
    expect(first.status).toBe('interrupted');
    expect(first.interrupts[0]).toMatchObject({ node: 'review', payload: 'child asks' });
    expect(first.interrupts[0]!.ns).toBeDefined();
    const before = await footprint(ctx.engine, 't');
    expect(await caught(() => app.resume({ thread: 't', answer: 'maybe' }))).toBeInstanceOf(StateValidationError);
    expect(await footprint(ctx.engine, 't')).toEqual(before);
    const done = await app.resume({ thread: 't', answer: 'yes' });
    expect(done.status).toBe('completed');
    expect(done.state.decision).toBe('yes');
    expect((await app.verify({ thread: 't' })).ok).toBe(true);
  });

  it('replay serves the recorded answer and reaches the stored states; verify passes', async () => {
    const { app } = approvalGraph();
    await app.run({ thread: 't', input: { amount: 4 } });
    await app.resume({ thread: 't', answer: true });
    const report = await app.replay({ thread: 't', from: 0 });
    expect(report.sameStates).toBe(true);
    expect((await app.verify({ thread: 't' })).ok).toBe(true);
  });

  it('a fork from the interrupted position asks again: the new branch has its own interrupt', async () => {
    const { app, calls } = approvalGraph();
    const first = await app.run({ thread: 't', input: { amount: 7 } });
    const forked = await app.fork({ thread: 't', seq: 0, patch: { amount: 8 } });
    expect(forked.status).toBe('running');
    const again = await app.run({ thread: 't' });
    expect(again.status).toBe('interrupted');
    expect(again.interrupts[0]!.id).not.toBe(first.interrupts[0]!.id);
    expect(again.interrupts[0]!.payload).toEqual({ question: 'refund 16?' });
    expect((await app.resume({ thread: 't', answer: false })).state.decision).toBe('deny');
    expect(calls.quote).toBe(2);
  });

  it('a node that swallows the stop still stops, and a node that never awaits the call stops too', async () => {
    const app = graph(State)
      .node('sneaky', async (_s, c) => {
        try {
          await c.interrupt('caught?');
        } catch {
          // the stop is not the node's to handle
        }
        return { log: ['should not commit'] };
      })
      .edge(START, 'sneaky')
      .edge('sneaky', END)
      .compile({ engine: ctx.engine });
    const result = await app.run({ thread: 't', input: {} });
    expect(result.status).toBe('interrupted');
    expect(result.state.log).toEqual([]);
    const done = await app.resume({ thread: 't', answer: 1 });
    expect(done.state.log).toEqual(['should not commit']);
  });

  it("a node that catches what the call throws and goes on (as an agent library's tool loop does) still has its answer checked: a refused one changes nothing", async () => {
    const answers: unknown[] = [];
    const app = graph(State)
      .node('loop', async (_s, c) => {
        try {
          answers.push(await c.interrupt('how much?', { answer: z.number() }));
        } catch (error) {
          answers.push(`caught ${(error as Error).name}`);
        }
        // The loop's next call, as a tool loop's next model call would be.
        const next = await c.record('next', () => 'asked again');
        return { log: [next] };
      })
      .edge(START, 'loop')
      .edge('loop', END)
      .compile({ engine: ctx.engine });
    await app.run({ thread: 't', input: {} });
    const before = await footprint(ctx.engine, 't');
    const error = await caught(() => app.resume({ thread: 't', answer: 'lots' }));
    expect(error).toBeInstanceOf(StateValidationError);
    expect(await footprint(ctx.engine, 't')).toEqual(before);
    const done = await app.resume({ thread: 't', answer: 7 });
    expect(done.state.log).toEqual(['asked again']);
    expect(answers.filter((a) => typeof a === 'number')).toEqual([7]);
  });
});

describe('an interrupt call answered after its node was renamed, on a SQLite file', () => {
  const ctx = useEngine('sqlite');

  /** START -> `name` (records a quote, asks, then writes) -> END, counting what ran. */
  function renamable(engine: Engine, name: string) {
    const calls = { quote: 0, answers: [] as unknown[] };
    const app = graph(State)
      .node(name, async (s, c) => {
        const quote = await c.record('quote', () => (calls.quote++, s.amount * 2));
        const ok = await c.interrupt({ question: `refund ${quote}?` }, { answer: z.boolean() });
        calls.answers.push(ok);
        return { decision: ok ? 'refund' : 'deny', log: [`${name} decided:${ok}`] };
      })
      .edge(START, name as 'a')
      .edge(name as 'a', END)
      .compile({ engine });
    return { app, calls };
  }

  it('resume with nodeMapping delivers the answer to the renamed node, served what it recorded, and the run completes', async () => {
    const v1 = renamable(ctx.engine, 'a');
    const paused = await v1.app.run({ thread: 't', input: { amount: 21 } });
    expect(paused.status).toBe('interrupted');
    expect(paused.interrupts[0]).toMatchObject({ node: 'a', payload: { question: 'refund 42?' } });

    // The next version of the code calls the node `b`, on a new connection to the same file.
    const v2 = renamable(ctx.reopen(), 'b');
    const done = await v2.app.resume({ thread: 't', answer: true, nodeMapping: { a: 'b' } });
    expect(done.status).toBe('completed');
    expect(done.interrupts).toEqual([]);
    expect(v2.calls.answers).toEqual([true]);
    // The quote `a` recorded is served to `b`, not asked for again.
    expect(v2.calls.quote).toBe(0);
    expect(done.state).toMatchObject({ decision: 'refund', log: ['b decided:true'] });
    expect((await v2.app.getThread({ thread: 't' }))!.status).toBe('completed');
    expect((await v2.app.verify({ thread: 't' })).ok).toBe(true);
  });

  it("a renamed node's finished work, kept while a sibling runs, is reported under its new name", async () => {
    /** START -> `name` and `slow` in one superstep, paused before it; `name` finishes first. */
    const parallel = (engine: Engine, name: string) =>
      graph(State)
        .node('gate', () => ({}), { interruptAfter: true })
        .node(name, () => ({ log: [name] }))
        .node('slow', async () => (await new Promise((resolve) => setTimeout(resolve, 50)), { log: ['slow'] }))
        .edge(START, 'gate')
        .edge('gate', name as 'a')
        .edge('gate', 'slow')
        .edge(name as 'a', END)
        .edge('slow', END)
        .compile({ engine });
    expect((await parallel(ctx.engine, 'a').run({ thread: 'p', input: {} })).status).toBe('interrupted');
    const events: { type: string; node?: string }[] = [];
    const done = await parallel(ctx.reopen(), 'b').resume({ thread: 'p', nodeMapping: { a: 'b' }, onEvent: (e) => events.push(e as never) });
    expect(done.status).toBe('completed');
    expect(done.state.log).toEqual(['b', 'slow']);
    expect(events.filter((e) => e.type === 'pending.saved').map((e) => e.node)).toEqual(['b']);
  });
});
