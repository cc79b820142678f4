/**
 * Interrupts: `ctx.interrupt(payload)`, `interruptBefore` and
 * `interruptAfter` end the run at a step boundary with status `interrupted` and the
 * payload stored; `resume({ thread, input, interrupt?, actor? })` validates the
 * answer, merges it through the reducers as a write by `actor` and goes on, from
 * this engine instance or a fresh one. Pending interrupts of parallel nodes are
 * addressed by id. Every refused call (invalid answer, wrong or missing id, run()
 * on an interrupted thread, resume() on one that is not) is a typed error and
 * changes nothing. Every test runs on memory and on SQLite.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Engine } from '../../src/contracts/engine.js';
import {
  InterruptNotFoundError,
  StateValidationError,
  ThreadInterruptedError,
  ThreadNotFoundError,
  ThreadNotInterruptedError,
} from '../../src/errors.js';
import { defineState } from '../../src/state/schema.js';
import { field } from '../../src/state/fields.js';
import { END, START, graph, type NodeOptions } from '../../src/runtime/builder.js';
import { bodies, caught, ENGINES, rawPositions, useEngine } from './engines.js';

const State = defineState({
  fields: {
    log: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
    answer: field.model(z.string(), { default: '' }),
    n: field.model(z.number().int().nonnegative(), { default: 0 }),
  },
});

/** Everything that must stay put when a call is refused: rows, head, status, attempts. */
async function footprint(engine: Engine, thread: string) {
  const record = await engine.checkpointer.getThread(thread);
  return {
    positions: await rawPositions(engine, thread),
    thread: record && { status: record.status, head: record.head, attempts: record.attempts, lastError: record.lastError },
    ledger: await engine.ledger.list(thread),
  };
}

describe.each(ENGINES)('interrupts on %s', (name) => {
  const ctx = useEngine(name);

  /** START -> ask (calls ctx.interrupt) -> finish -> END, counting calls. */
  function askGraph(engine: Engine = ctx.engine) {
    const calls = { ask: 0, finish: 0 };
    const app = graph(State)
      .node('ask', (s, c) => {
        calls.ask++;
        c.interruptAfter({ question: 'ship it?', n: s.n });
        return { log: ['asked'], n: s.n + 1 };
      })
      .node('finish', (s) => {
        calls.finish++;
        return { log: [`finished:${s.answer}`] };
      })
      .edge(START, 'ask')
      .edge('ask', 'finish')
      .edge('finish', END)
      .compile({ engine, retry: { maxAttempts: 1 } });
    return { app, calls };
  }

  /** START -> prepare -> gated (with the given options) -> END. */
  function gatedGraph(options: NodeOptions) {
    const calls = { prepare: 0, gated: 0, after: 0 };
    const app = graph(State)
      .node('prepare', (s) => {
        calls.prepare++;
        return { log: ['prepared'], n: s.n + 1 };
      })
      .node(
        'gated',
        (s) => {
          calls.gated++;
          return { log: [`gated:${s.answer}`], n: s.n + 1 };
        },
        options,
      )
      .node('after', (s) => {
        calls.after++;
        return { log: [`after:${s.answer}`] };
      })
      .edge(START, 'prepare')
      .edge('prepare', 'gated')
      .edge('gated', 'after')
      .edge('after', END)
      .compile({ engine: ctx.engine, retry: { maxAttempts: 1 } });
    return { app, calls };
  }

  /** START -> [left, right] (both call ctx.interrupt) -> join -> END. */
  function parallelGraph() {
    const calls = { left: 0, right: 0, join: 0 };
    const app = graph(State)
      .node('left', (_s, c) => {
        calls.left++;
        c.interruptAfter({ side: 'left' });
        return { log: ['left'] };
      })
      .node('right', (_s, c) => {
        calls.right++;
        c.interruptAfter({ side: 'right' });
        return { log: ['right'] };
      })
      .node('join', (s) => {
        calls.join++;
        return { log: [`join:${s.answer}`] };
      })
      .edge(START, 'left')
      .edge(START, 'right')
      .edge('left', 'join')
      .edge('right', 'join')
      .edge('join', END)
      .compile({ engine: ctx.engine, retry: { maxAttempts: 1 } });
    return { app, calls };
  }

  describe('ctx.interrupt inside a node', () => {
    it('ends the run at the step boundary: status interrupted on the result and the thread, the node\'s writes committed, the payload stored with an id', async () => {
      const { app, calls } = askGraph();
      const result = await app.run({ thread: 't' });

      expect(result.status).toBe('interrupted');
      expect(result.seq).toBe(1);
      expect(result.state).toEqual({ log: ['asked'], answer: '', n: 1 });
      expect(result.interrupts).toHaveLength(1);
      const [pending] = result.interrupts;
      expect(pending).toMatchObject({ node: 'ask', when: 'inside', payload: { question: 'ship it?', n: 0 } });
      expect(typeof pending!.id).toBe('string');
      expect(pending!.id.length).toBeGreaterThan(0);
      expect(calls).toEqual({ ask: 1, finish: 0 });

      expect(await app.getThread({ thread: 't' })).toMatchObject({ status: 'interrupted', head: 1 });
      // Durable: the node's writes are in the committed position, the payload in its body.
      expect(await app.stateAt({ thread: 't', seq: 1 })).toEqual({ log: ['asked'], answer: '', n: 1 });
      const stored = await bodies(ctx.engine, 't');
      expect(stored.at(-1)).toMatchObject({ kind: 'step', nodes: ['ask'], next: ['finish'], interrupts: result.interrupts });
      const [head] = await app.history({ thread: 't', limit: 1 });
      expect(head).toMatchObject({ seq: 1, kind: 'step', nodes: ['ask'], interrupts: result.interrupts });
    });

    it('resume merges the answer through the reducers (append + replace), records the actor, and runs on to END without re-running the node', async () => {
      const { app, calls } = askGraph();
      const first = await app.run({ thread: 't' });
      const result = await app.resume({ thread: 't', input: { answer: 'yes', log: ['human says yes'] }, actor: 'alice' });

      expect(result.status).toBe('completed');
      expect(result.interrupts).toEqual([]);
      expect(result.state).toEqual({ log: ['asked', 'human says yes', 'finished:yes'], answer: 'yes', n: 1 });
      expect(calls).toEqual({ ask: 1, finish: 1 });
      expect(await app.getThread({ thread: 't' })).toMatchObject({ status: 'completed', head: 3 });

      const history = await app.history({ thread: 't' });
      expect(history.map((p) => p.kind)).toEqual(['step', 'resume', 'step', 'input']);
      const resume = history[1]!;
      expect(resume).toMatchObject({ seq: 2, parent: 1, kind: 'resume', actor: 'alice', nodes: [], next: ['finish'], interrupts: [] });
      expect(resume.changes).toMatchObject({ answer: 'set', log: 'append:1' });
      expect((await bodies(ctx.engine, 't'))[2]).toMatchObject({ kind: 'resume', answered: first.interrupts[0]!.id, actor: 'alice' });
      // The answer itself is in the state at the resume position, before `finish` ran.
      expect(await app.stateAt({ thread: 't', seq: 2 })).toEqual({ log: ['asked', 'human says yes'], answer: 'yes', n: 1 });
      expect((await app.verify({ thread: 't' })).ok).toBe(true);
    });

    it('resume without actor records the default actor "resume"; resume without input just goes on', async () => {
      const { app, calls } = askGraph();
      await app.run({ thread: 't' });
      const result = await app.resume({ thread: 't' });
      expect(result.status).toBe('completed');
      expect(result.state.log).toEqual(['asked', 'finished:']);
      expect(calls.finish).toBe(1);
      const resume = (await app.history({ thread: 't' })).find((p) => p.kind === 'resume')!;
      expect(resume.actor).toBe('resume');
      expect(resume.changes.answer).toBeUndefined();
    });

    it('invalid resume input is StateValidationError and changes nothing: same head, still interrupted, same pending interrupt; a valid answer then works', async () => {
      const { app, calls } = askGraph();
      const first = await app.run({ thread: 't' });
      const before = await footprint(ctx.engine, 't');

      const error = await caught(() => app.resume({ thread: 't', input: { n: -5, log: ['should not land'] } }));
      expect(StateValidationError.is(error)).toBe(true);
      expect(error.code).toBe('ERR_STATE_VALIDATION');
      const wrongType = await caught(() => app.resume({ thread: 't', input: { answer: 42 as unknown as string } }));
      expect(StateValidationError.is(wrongType)).toBe(true);

      expect(await footprint(ctx.engine, 't')).toEqual(before);
      expect(await app.getThread({ thread: 't' })).toMatchObject({ status: 'interrupted', head: first.seq });
      expect((await app.history({ thread: 't', limit: 1 }))[0]!.interrupts).toEqual(first.interrupts);
      expect(calls).toEqual({ ask: 1, finish: 0 });

      const result = await app.resume({ thread: 't', input: { answer: 'ok' } });
      expect(result.status).toBe('completed');
      expect(result.state.log).toEqual(['asked', 'finished:ok']);
      expect(calls).toEqual({ ask: 1, finish: 1 });
    });

    it('an answer writing an unknown field is a typed error and changes nothing', async () => {
      const { app } = askGraph();
      await app.run({ thread: 't' });
      const before = await footprint(ctx.engine, 't');
      const error = await caught(() => app.resume({ thread: 't', input: { bogus: 1 } as never }));
      expect(error.code).toBe('ERR_UNKNOWN_FIELD');
      expect(await footprint(ctx.engine, 't')).toEqual(before);
    });

    it('a node calling ctx.interrupt twice leaves two pending interrupts with distinct ids, answered one by one', async () => {
      let finished = 0;
      const app = graph(State)
        .node('twice', (_s, c) => {
          c.interruptAfter('first question');
          c.interruptAfter('second question');
          return { log: ['asked twice'] };
        })
        .node('finish', () => (finished++, { log: ['finished'] }))
        .edge(START, 'twice')
        .edge('twice', 'finish')
        .edge('finish', END)
        .compile({ engine: ctx.engine });
      const result = await app.run({ thread: 't' });
      expect(result.interrupts.map((i) => i.payload)).toEqual(['first question', 'second question']);
      expect(new Set(result.interrupts.map((i) => i.id)).size).toBe(2);
      const half = await app.resume({ thread: 't', interrupt: result.interrupts[0]!.id, input: { log: ['a1'] } });
      expect(half.status).toBe('interrupted');
      expect(finished).toBe(0);
      const done = await app.resume({ thread: 't', interrupt: result.interrupts[1]!.id, input: { log: ['a2'] } });
      expect(done.status).toBe('completed');
      expect(done.state.log).toEqual(['asked twice', 'a1', 'a2', 'finished']);
      expect(finished).toBe(1);
    });

    it('a node in a loop that interrupts every round gets a distinct id each time; each answer is merged once', async () => {
      const seenIds: string[] = [];
      const app = graph(State)
        .node('round', (s, c) => {
          c.interruptAfter({ round: s.n });
          return { n: s.n + 1 };
        })
        .edge(START, 'round')
        .conditionalEdge('round', (s) => (s.n < 3 ? 'round' : END))
        .compile({ engine: ctx.engine, retry: { maxAttempts: 1 } });
      let result = await app.run({ thread: 't' });
      while (result.status === 'interrupted') {
        expect(result.interrupts).toHaveLength(1);
        seenIds.push(result.interrupts[0]!.id);
        result = await app.resume({ thread: 't', input: { log: [`answer-${seenIds.length}`] } });
      }
      expect(result.status).toBe('completed');
      expect(seenIds).toHaveLength(3);
      expect(new Set(seenIds).size).toBe(3);
      expect(result.state).toEqual({ log: ['answer-1', 'answer-2', 'answer-3'], answer: '', n: 3 });
    });
  });

  describe('interruptBefore and interruptAfter', () => {
    it('interruptBefore: true stops before the node runs (its function is not called); after resume it runs exactly once', async () => {
      const { app, calls } = gatedGraph({ interruptBefore: true });
      const result = await app.run({ thread: 't' });

      expect(result.status).toBe('interrupted');
      expect(calls).toEqual({ prepare: 1, gated: 0, after: 0 });
      expect(result.state).toEqual({ log: ['prepared'], answer: '', n: 1 });
      expect(result.interrupts).toHaveLength(1);
      expect(result.interrupts[0]).toMatchObject({ node: 'gated', when: 'before', payload: null });
      expect(await app.getThread({ thread: 't' })).toMatchObject({ status: 'interrupted', head: result.seq });
      const [head] = await app.history({ thread: 't', limit: 1 });
      expect(head).toMatchObject({ kind: 'interrupt', nodes: [], next: ['gated'], interrupts: result.interrupts });

      const done = await app.resume({ thread: 't', input: { answer: 'approved' }, actor: 'reviewer' });
      expect(done.status).toBe('completed');
      expect(calls).toEqual({ prepare: 1, gated: 1, after: 1 });
      expect(done.state).toEqual({ log: ['prepared', 'gated:approved', 'after:approved'], answer: 'approved', n: 2 });
      expect((await app.history({ thread: 't' })).map((p) => p.kind)).toEqual(['step', 'step', 'resume', 'interrupt', 'step', 'input']);
    });

    it('interruptBefore with a payload function stores what the function returns for the state before the node', async () => {
      const { app, calls } = gatedGraph({ interruptBefore: (s: { n: number; log: string[] }) => ({ review: s.log, at: s.n }) });
      const result = await app.run({ thread: 't' });
      expect(result.interrupts).toEqual([expect.objectContaining({ node: 'gated', when: 'before', payload: { review: ['prepared'], at: 1 } })]);
      expect(calls.gated).toBe(0);
      const done = await app.resume({ thread: 't', input: { answer: 'fine' } });
      expect(done.status).toBe('completed');
      expect(calls).toEqual({ prepare: 1, gated: 1, after: 1 });
    });

    it('interruptAfter stops after the node\'s step commits (its writes are in the state); resume goes on to the next node without re-running it', async () => {
      const { app, calls } = gatedGraph({ interruptAfter: (s: { log: string[] }) => ({ wrote: s.log.at(-1) }) });
      const result = await app.run({ thread: 't' });

      expect(result.status).toBe('interrupted');
      expect(calls).toEqual({ prepare: 1, gated: 1, after: 0 });
      expect(result.state).toEqual({ log: ['prepared', 'gated:'], answer: '', n: 2 });
      expect(result.interrupts).toEqual([expect.objectContaining({ node: 'gated', when: 'after', payload: { wrote: 'gated:' } })]);
      const [head] = await app.history({ thread: 't', limit: 1 });
      expect(head).toMatchObject({ kind: 'step', nodes: ['gated'], next: ['after'], interrupts: result.interrupts });
      expect(await app.stateAt({ thread: 't', seq: head!.seq })).toEqual(result.state);

      const done = await app.resume({ thread: 't', input: { answer: 'seen' } });
      expect(done.status).toBe('completed');
      expect(calls).toEqual({ prepare: 1, gated: 1, after: 1 });
      expect(done.state.log).toEqual(['prepared', 'gated:', 'after:seen']);
    });

    it('interruptAfter: true stores a null payload', async () => {
      const { app } = gatedGraph({ interruptAfter: true });
      const result = await app.run({ thread: 't' });
      expect(result.interrupts).toEqual([expect.objectContaining({ node: 'gated', when: 'after', payload: null })]);
    });

    it('two parallel nodes with interruptBefore: both pending; answering both runs each exactly once', async () => {
      const calls = { a: 0, b: 0 };
      const app = graph(State)
        .node('a', () => (calls.a++, { log: ['a'] }), { interruptBefore: true })
        .node('b', () => (calls.b++, { log: ['b'] }), { interruptBefore: true })
        .edge(START, 'a')
        .edge(START, 'b')
        .edge('a', END)
        .edge('b', END)
        .compile({ engine: ctx.engine, retry: { maxAttempts: 1 } });
      const first = await app.run({ thread: 't' });
      expect(first.interrupts.map((i) => [i.node, i.when])).toEqual([['a', 'before'], ['b', 'before']]);
      const second = await app.resume({ thread: 't', interrupt: first.interrupts[1]!.id, input: { log: ['ok b'] } });
      expect(second.status).toBe('interrupted');
      expect(second.interrupts.map((i) => i.id)).toEqual([first.interrupts[0]!.id]);
      expect(calls).toEqual({ a: 0, b: 0 });
      const done = await app.resume({ thread: 't', interrupt: first.interrupts[0]!.id, input: { log: ['ok a'] } });
      expect(done.status).toBe('completed');
      expect(calls).toEqual({ a: 1, b: 1 });
      expect(done.state.log).toEqual(['ok b', 'ok a', 'a', 'b']);
    });
  });

  describe('parallel interrupts, addressed by id', () => {
    it('two parallel nodes calling ctx.interrupt leave two pending interrupts with distinct ids', async () => {
      const { app, calls } = parallelGraph();
      const result = await app.run({ thread: 't' });
      expect(result.status).toBe('interrupted');
      expect(result.interrupts).toHaveLength(2);
      const [left, right] = result.interrupts;
      expect(left).toMatchObject({ node: 'left', when: 'inside', payload: { side: 'left' } });
      expect(right).toMatchObject({ node: 'right', when: 'inside', payload: { side: 'right' } });
      expect(left!.id).not.toBe(right!.id);
      expect(result.state.log).toEqual(['left', 'right']);
      expect(calls).toEqual({ left: 1, right: 1, join: 0 });
    });

    it('resume without `interrupt` when two are pending is InterruptNotFoundError listing both ids, and changes nothing', async () => {
      const { app } = parallelGraph();
      const result = await app.run({ thread: 't' });
      const ids = result.interrupts.map((i) => i.id);
      const before = await footprint(ctx.engine, 't');

      const error = await caught(() => app.resume({ thread: 't', input: { answer: 'x' } }));
      expect(InterruptNotFoundError.is(error)).toBe(true);
      expect(error.code).toBe('ERR_INTERRUPT_NOT_FOUND');
      expect((error as InterruptNotFoundError).pending).toEqual(ids);
      for (const id of ids) expect(error.message).toContain(id);
      expect(await footprint(ctx.engine, 't')).toEqual(before);
    });

    it('a wrong id is InterruptNotFoundError naming it, and changes nothing', async () => {
      const { app } = parallelGraph();
      const result = await app.run({ thread: 't' });
      const before = await footprint(ctx.engine, 't');
      const error = await caught(() => app.resume({ thread: 't', interrupt: 'no-such-id', input: { answer: 'x' } }));
      expect(InterruptNotFoundError.is(error)).toBe(true);
      expect((error as InterruptNotFoundError).requested).toBe('no-such-id');
      expect((error as InterruptNotFoundError).pending).toEqual(result.interrupts.map((i) => i.id));
      expect(error.message).toContain('no-such-id');
      expect(await footprint(ctx.engine, 't')).toEqual(before);
    });

    it('answering one leaves the thread interrupted with the other pending; answering the second continues to END', async () => {
      const { app, calls } = parallelGraph();
      const result = await app.run({ thread: 't' });
      const [left, right] = result.interrupts;

      const half = await app.resume({ thread: 't', interrupt: right!.id, input: { log: ['answer right'] }, actor: 'bob' });
      expect(half.status).toBe('interrupted');
      expect(half.interrupts).toEqual([left]);
      expect(await app.getThread({ thread: 't' })).toMatchObject({ status: 'interrupted', head: half.seq });
      expect(calls.join).toBe(0);

      // The answered one cannot be answered again.
      const again = await caught(() => app.resume({ thread: 't', interrupt: right!.id }));
      expect(InterruptNotFoundError.is(again)).toBe(true);
      expect((again as InterruptNotFoundError).pending).toEqual([left!.id]);

      // With one pending, `interrupt` may be omitted.
      const done = await app.resume({ thread: 't', input: { log: ['answer left'], answer: 'both' }, actor: 'carol' });
      expect(done.status).toBe('completed');
      expect(calls).toEqual({ left: 1, right: 1, join: 1 });
      expect(done.state.log).toEqual(['left', 'right', 'answer right', 'answer left', 'join:both']);

      const resumes = (await app.history({ thread: 't' })).filter((p) => p.kind === 'resume');
      expect(resumes.map((p) => [p.actor, p.interrupts.length])).toEqual([['carol', 0], ['bob', 1]]);
      const answered = (await bodies(ctx.engine, 't')).filter((b) => b.kind === 'resume').map((b) => b.answered);
      expect(answered).toEqual([right!.id, left!.id]);
      expect((await app.verify({ thread: 't' })).ok).toBe(true);
    });
  });

  describe('refused calls', () => {
    it('run() on an interrupted thread is ThreadInterruptedError naming the pending ids, with or without input, and changes nothing', async () => {
      const { app, calls } = parallelGraph();
      const result = await app.run({ thread: 't' });
      const before = await footprint(ctx.engine, 't');

      const error = await caught(() => app.run({ thread: 't' }));
      expect(ThreadInterruptedError.is(error)).toBe(true);
      expect(error.code).toBe('ERR_THREAD_INTERRUPTED');
      expect((error as ThreadInterruptedError).interruptIds).toEqual(result.interrupts.map((i) => i.id));
      const withInput = await caught(() => app.run({ thread: 't', input: { answer: 'sneaky' } }));
      expect(ThreadInterruptedError.is(withInput)).toBe(true);

      expect(await footprint(ctx.engine, 't')).toEqual(before);
      expect(calls).toEqual({ left: 1, right: 1, join: 0 });
    });

    it('resume() on a completed thread is ThreadNotInterruptedError (ERR_NOT_INTERRUPTED) and changes nothing', async () => {
      const app = graph(State)
        .node('only', () => ({ log: ['done'] }))
        .edge(START, 'only')
        .edge('only', END)
        .compile({ engine: ctx.engine });
      await app.run({ thread: 't' });
      const before = await footprint(ctx.engine, 't');
      const error = await caught(() => app.resume({ thread: 't', input: { answer: 'late' } }));
      expect(ThreadNotInterruptedError.is(error)).toBe(true);
      expect(error.code).toBe('ERR_NOT_INTERRUPTED');
      expect((error as ThreadNotInterruptedError).status).toBe('completed');
      expect(await footprint(ctx.engine, 't')).toEqual(before);
    });

    it('resume() on a thread whose interrupts were all answered and which completed is ThreadNotInterruptedError', async () => {
      const { app } = askGraph();
      await app.run({ thread: 't' });
      await app.resume({ thread: 't', input: { answer: 'y' } });
      const before = await footprint(ctx.engine, 't');
      const error = await caught(() => app.resume({ thread: 't', input: { answer: 'twice' } }));
      expect(error.code).toBe('ERR_NOT_INTERRUPTED');
      expect(await footprint(ctx.engine, 't')).toEqual(before);
    });

    it('resume() on a failed, never-interrupted thread is ThreadNotInterruptedError and changes nothing; run() still resumes it', async () => {
      let fail = true;
      const app = graph(State)
        .node('a', () => ({ log: ['a'] }))
        .node('b', () => {
          if (fail) throw new Error('boom');
          return { log: ['b'] };
        })
        .edge(START, 'a')
        .edge('a', 'b')
        .edge('b', END)
        .compile({ engine: ctx.engine, retry: { maxAttempts: 1 } });
      await caught(() => app.run({ thread: 't' }));
      expect((await app.getThread({ thread: 't' }))?.status).toBe('failed');
      const before = await footprint(ctx.engine, 't');

      const error = await caught(() => app.resume({ thread: 't', input: { answer: 'x' } }));
      expect(ThreadNotInterruptedError.is(error)).toBe(true);
      expect(error.code).toBe('ERR_NOT_INTERRUPTED');
      expect(await footprint(ctx.engine, 't')).toEqual(before);

      fail = false;
      const result = await app.run({ thread: 't' });
      expect(result.status).toBe('completed');
      expect(result.state.log).toEqual(['a', 'b']);
    });

    it('resume() on a running thread (a run stopped part-way, never interrupted) is ThreadNotInterruptedError and changes nothing', async () => {
      const app = graph(State)
        .node('a', () => ({ log: ['a'] }))
        .node('b', () => ({ log: ['b'] }))
        .edge(START, 'a')
        .edge('a', 'b')
        .edge('b', END)
        .compile({ engine: ctx.engine });
      await app.run({ thread: 't' });
      // Put the thread back where a crashed run leaves it: head with next nodes, status running.
      const cp = ctx.engine.checkpointer;
      const lease = await cp.acquireThread('t', { owner: { runId: 'sim', pid: process.pid, host: 'test' }, leaseMs: 1_000 });
      await cp.updateThread(lease, { status: 'running' });
      await cp.releaseThread(lease);
      expect((await app.getThread({ thread: 't' }))?.status).toBe('running');
      const before = await footprint(ctx.engine, 't');

      const error = await caught(() => app.resume({ thread: 't', input: { answer: 'x' } }));
      expect(ThreadNotInterruptedError.is(error)).toBe(true);
      expect((error as ThreadNotInterruptedError).status).toBe('running');
      expect(await footprint(ctx.engine, 't')).toEqual(before);
    });

    it('resume() on a thread that does not exist is ThreadNotFoundError and creates nothing', async () => {
      const { app } = askGraph();
      const error = await caught(() => app.resume({ thread: 'nobody', input: { answer: 'x' } }));
      expect(ThreadNotFoundError.is(error)).toBe(true);
      expect(error.code).toBe('ERR_THREAD_NOT_FOUND');
      expect(await app.getThread({ thread: 'nobody' })).toBeNull();
    });
  });

  describe('across engine instances', () => {
    it('an interrupt survives a new App on a fresh engine instance over the same storage, which resumes it to END', async () => {
      const first = askGraph(ctx.engine);
      const interrupted = await first.app.run({ thread: 't' });
      expect(interrupted.status).toBe('interrupted');
      // SQLite: a second sqlite(file) engine; the first connection is closed, as a process exit would.
      const engine = ctx.reopen();
      if (ctx.path !== undefined) await ctx.engine.close();

      const second = askGraph(engine);
      expect(await second.app.getThread({ thread: 't' })).toMatchObject({ status: 'interrupted', head: interrupted.seq });
      const [head] = await second.app.history({ thread: 't', limit: 1 });
      expect(head!.interrupts).toEqual(interrupted.interrupts);
      const refused = await caught(() => second.app.run({ thread: 't' }));
      expect(ThreadInterruptedError.is(refused)).toBe(true);

      const done = await second.app.resume({ thread: 't', interrupt: interrupted.interrupts[0]!.id, input: { answer: 'later' }, actor: 'ops' });
      expect(done.status).toBe('completed');
      expect(done.state).toEqual({ log: ['asked', 'finished:later'], answer: 'later', n: 1 });
      expect(first.calls).toEqual({ ask: 1, finish: 0 });
      expect(second.calls).toEqual({ ask: 0, finish: 1 });
      expect((await second.app.verify({ thread: 't' })).ok).toBe(true);
    });

    it('parallel interrupts answered from two different engine instances, one each', async () => {
      const { app } = parallelGraph();
      const result = await app.run({ thread: 't' });
      const [left, right] = result.interrupts;
      await app.resume({ thread: 't', interrupt: left!.id, input: { log: ['L'] } });

      const engine = ctx.reopen();
      if (ctx.path !== undefined) await ctx.engine.close();
      let joins = 0;
      const again = graph(State)
        .node('left', () => ({ log: ['left-again'] }))
        .node('right', () => ({ log: ['right-again'] }))
        .node('join', (s) => (joins++, { log: [`join:${s.answer}`] }))
        .edge(START, 'left')
        .edge(START, 'right')
        .edge('left', 'join')
        .edge('right', 'join')
        .edge('join', END)
        .compile({ engine });
      const pending = (await again.history({ thread: 't', limit: 1 }))[0]!.interrupts;
      expect(pending).toEqual([right]);
      const done = await again.resume({ thread: 't', interrupt: right!.id, input: { log: ['R'], answer: 'z' } });
      expect(done.status).toBe('completed');
      expect(joins).toBe(1);
      expect(done.state.log).toEqual(['left', 'right', 'L', 'R', 'join:z']);
    });
  });
});
