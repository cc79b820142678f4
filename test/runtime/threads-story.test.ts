/**
 * Retries are attempts: a node retried under its retry
 * policy, or a whole run started again after it failed, is a new attempt of the SAME
 * thread, and `app.attempts()` tells each attempt's story (error, node, seq, time) up
 * to the final success. Also the app's thread listing and deletion. Every test runs on
 * memory, SQLite and PostgreSQL.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { InvalidOptionError, NodeFailedError, ThreadBusyError, ThreadNotFoundError } from '../../src/errors.js';
import { defineState } from '../../src/state/schema.js';
import { field } from '../../src/state/fields.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import { pinArtifact } from '../../src/inspect/gc.js';
import { caught, ENGINES, sleep, useEngine } from './engines.js';

const State = defineState({
  fields: {
    customer: field.model(z.string(), { default: '' }),
    summary: field.model(z.string(), { default: '' }),
    trail: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
  },
});

/** An upstream timeout, with the code a real client would give it. */
class UpstreamTimeout extends Error {
  readonly code = 'ETIMEDOUT';
}

describe.each(ENGINES)('threads: the story of attempts on %s', (name) => {
  const ctx = useEngine(name);

  /**
   * START -> load -> summarise -> END. `summarise` throws an UpstreamTimeout on each of
   * its calls for which `fails(call)` holds (calls count across runs).
   */
  function flakyApp(fails: (call: number) => boolean, maxAttempts: number) {
    let calls = 0;
    const app = graph(State)
      .node('load', async (_s, c) => ({ customer: await c.record('crm.get', () => 'cust_42'), trail: ['load'] }))
      .node('summarise', (s) => {
        calls++;
        if (fails(calls)) throw new UpstreamTimeout(`model timed out (call ${calls})`);
        return { summary: `summary of ${s.customer}`, trail: ['summarise'] };
      })
      .edge(START, 'load')
      .edge('load', 'summarise')
      .edge('summarise', END)
      .compile({ engine: ctx.engine, retry: { maxAttempts, initialDelayMs: 0 } });
    return { app, calls: () => calls };
  }

  it('5 failures and then a success leave ONE thread whose story reads attempt by attempt', async () => {
    const { app, calls } = flakyApp((n) => n <= 5, 6);
    const started = Date.now();
    const result = await app.run({ thread: 'cust_42', kind: 'task', tenant: 'acme' });
    expect(result.status).toBe('completed');
    expect(result.state.summary).toBe('summary of cust_42');
    expect(calls()).toBe(6);

    // One thread, never one per retry.
    const threads = await app.listThreads();
    expect(threads).toHaveLength(1);
    expect(threads[0]).toMatchObject({ id: 'cust_42', status: 'completed', attempts: 6, lastError: null, head: 2 });

    const { thread, attempts } = await app.attempts({ thread: 'cust_42' });
    expect(thread.id).toBe('cust_42');
    expect(attempts.map((a) => a.attempt)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(attempts.map((a) => a.outcome)).toEqual(['failed', 'failed', 'failed', 'failed', 'failed', 'completed']);
    for (const [i, a] of attempts.slice(0, 5).entries()) {
      // Each failure: which node, from which position, what error, when.
      expect(a).toMatchObject({ node: 'summarise', seq: 1, error: { code: 'ETIMEDOUT', message: `model timed out (call ${i + 1})` } });
      expect(a.at).toBeGreaterThanOrEqual(started);
      expect(a.failures).toHaveLength(1);
      if (i > 0) expect(a.at).toBeGreaterThanOrEqual(attempts[i - 1]!.at!);
    }
    // The first attempt also committed the input and load; the retries committed nothing.
    expect(attempts[0]!.committed.map((p) => [p.seq, p.kind, p.nodes])).toEqual([
      [0, 'input', []],
      [1, 'step', ['load']],
    ]);
    for (const a of attempts.slice(1, 5)) expect(a.committed).toEqual([]);
    // The final success: the node that had failed, the position it committed, when.
    const success = attempts[5]!;
    expect(success).toMatchObject({ node: 'summarise', seq: 2, error: null, failures: [] });
    expect(success.committed.map((p) => [p.seq, p.kind, p.nodes])).toEqual([[2, 'step', ['summarise']]]);
    expect(success.at).toBeGreaterThanOrEqual(attempts[4]!.at!);

    // The same story is in the raw failures, and history shows one position per step.
    expect((await ctx.engine.checkpointer.listFailures('cust_42')).map((f) => f.attempt)).toEqual([1, 2, 3, 4, 5]);
    expect((await app.history({ thread: 'cust_42' })).map((p) => [p.seq, p.nodes])).toEqual([
      [2, ['summarise']],
      [1, ['load']],
      [0, []],
    ]);
  });

  it('a whole run started again after it failed is the next attempt of the same thread', async () => {
    let broken = true;
    const { app } = flakyApp(() => broken, 2);

    const first = await caught(() => app.run({ thread: 't' }));
    expect(NodeFailedError.is(first)).toBe(true);
    expect(await app.getThread({ thread: 't' })).toMatchObject({ status: 'failed', attempts: 2, lastError: { code: 'ERR_NODE_FAILED' } });

    // run() after failed: attempts 3 and 4 (the retry), still broken.
    await expect(app.run({ thread: 't' })).rejects.toMatchObject({ code: 'ERR_NODE_FAILED' });
    expect(await app.getThread({ thread: 't' })).toMatchObject({ status: 'failed', attempts: 4 });

    broken = false;
    const done = await app.run({ thread: 't' });
    expect(done.status).toBe('completed');
    expect(await app.listThreads()).toHaveLength(1);

    const { thread, attempts } = await app.attempts({ thread: 't' });
    expect(thread).toMatchObject({ status: 'completed', attempts: 5, lastError: null });
    expect(attempts.map((a) => [a.attempt, a.outcome, a.node, a.seq])).toEqual([
      [1, 'failed', 'summarise', 1],
      [2, 'failed', 'summarise', 1],
      [3, 'failed', 'summarise', 1],
      [4, 'failed', 'summarise', 1],
      [5, 'completed', 'summarise', 2],
    ]);
    // load ran once, in the first attempt: a restarted run resumes, it does not start over.
    expect(attempts[0]!.committed.map((p) => p.nodes)).toEqual([[], ['load']]);
    expect(attempts[4]!.committed.map((p) => p.nodes)).toEqual([['summarise']]);
  });

  it('a thread left failed tells its last attempt\'s error; a new run with input on a completed thread is a new attempt', async () => {
    const { app } = flakyApp(() => true, 1);
    await expect(app.run({ thread: 'f' })).rejects.toMatchObject({ code: 'ERR_NODE_FAILED' });
    const failed = await app.attempts({ thread: 'f' });
    expect(failed.attempts).toHaveLength(1);
    expect(failed.attempts[0]).toMatchObject({ attempt: 1, outcome: 'failed', node: 'summarise', error: { code: 'ETIMEDOUT' } });

    const ok = flakyApp(() => false, 1).app;
    await ok.run({ thread: 'c', input: { customer: 'first' } });
    await ok.run({ thread: 'c', input: { customer: 'second' } });
    const story = await ok.attempts({ thread: 'c' });
    expect(story.attempts.map((a) => [a.attempt, a.outcome])).toEqual([
      [1, 'completed'],
      [2, 'completed'],
    ]);
    expect(story.attempts[1]!.committed.map((p) => p.kind)).toEqual(['input', 'step', 'step']);
    await expect(ok.attempts({ thread: 'missing' })).rejects.toMatchObject({ code: ThreadNotFoundError.code });
  });

  it('an attempt that ended without a task failure (an effect in doubt, the recursion limit) keeps its error once a later attempt went on', async () => {
    let inDoubt = true;
    const charge = graph(State)
      .node('charge', async (_s, c) => {
        const receipt = await c.effect('charge', {
          mode: 'atMostOnce',
          run: async () => {
            if (inDoubt) throw new UpstreamTimeout('connection reset');
            return 'receipt-1';
          },
        });
        return { summary: String(receipt) };
      })
      .edge(START, 'charge')
      .edge('charge', END)
      .compile({ engine: ctx.engine, retry: { maxAttempts: 2, initialDelayMs: 0 } });
    // Attempt 1 throws inside the effect (kept as a node failure); its retry, attempt 2, finds the intent without an outcome.
    await expect(charge.run({ thread: 'pay' })).rejects.toMatchObject({ code: 'ERR_NEEDS_ATTENTION' });
    inDoubt = false;
    const key = (await ctx.engine.ledger.list('pay')).find((e) => e.name === 'charge')!.key;
    await charge.resolveEffect({ thread: 'pay', idempotencyKey: key, outcome: 'receipt-by-hand' });
    expect((await charge.run({ thread: 'pay' })).state.summary).toBe('receipt-by-hand');
    const paid = await charge.attempts({ thread: 'pay' });
    expect(paid.attempts.map((a) => [a.attempt, a.outcome, a.error?.code ?? null])).toEqual([
      [1, 'failed', 'ETIMEDOUT'],
      [2, 'needs_attention', 'ERR_NEEDS_ATTENTION'],
      [3, 'completed', null],
    ]);
    expect(paid.attempts[1]).toMatchObject({ node: 'charge', seq: 0 });

    const loop = graph(State)
      .node('again', (s) => ({ trail: [`turn ${s.trail.length}`] }))
      .edge(START, 'again')
      .conditionalEdge('again', (s) => (s.trail.length < 3 ? 'again' : END))
      .compile({ engine: ctx.engine });
    await expect(loop.run({ thread: 'loop', recursionLimit: 2 })).rejects.toMatchObject({ code: 'ERR_RECURSION_LIMIT' });
    expect((await loop.attempts({ thread: 'loop' })).attempts.map((a) => [a.attempt, a.outcome, a.error?.code ?? null])).toEqual([[1, 'failed', 'ERR_RECURSION_LIMIT']]);
    expect((await loop.run({ thread: 'loop' })).status).toBe('completed');
    const looped = await loop.attempts({ thread: 'loop' });
    expect(looped.attempts.map((a) => [a.attempt, a.outcome, a.error?.code ?? null, a.seq])).toEqual([
      [1, 'failed', 'ERR_RECURSION_LIMIT', 2],
      [2, 'completed', null, 3],
    ]);
    expect(looped.attempts[0]!.committed.map((p) => p.seq)).toEqual([0, 1, 2]);
  });

  it('many threads with retries: never more threads than ids', async () => {
    const { app } = flakyApp((n) => n % 3 !== 0, 3);
    for (let i = 0; i < 8; i++) await app.run({ thread: `t${i}` });
    const threads = await app.listThreads();
    expect(threads.map((t) => t.id)).toEqual(['t0', 't1', 't2', 't3', 't4', 't5', 't6', 't7']);
    expect(threads.every((t) => t.status === 'completed' && t.attempts === 3)).toBe(true);
  });

  it('app.listThreads filters the engine\'s threads; app.deleteThread refuses a running thread and deletes a finished one with its pins', async () => {
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    const app = graph(State)
      .node('wait', async () => {
        await gate;
        return { trail: ['waited'] };
      })
      .edge(START, 'wait')
      .edge('wait', END)
      .compile({ engine: ctx.engine, name: 'support' });
    const quick = flakyApp(() => false, 1).app;
    await quick.run({ thread: 'other', tenant: 'globex', kind: 'conversation', metadata: { queue: 'sales' } });

    const running = app.run({ thread: 'busy', tenant: 'acme', kind: 'conversation', metadata: { queue: 'support' } });
    for (let i = 0; i < 400 && ((await app.getThread({ thread: 'busy' }))?.head ?? null) === null; i++) await sleep(5);
    expect((await app.listThreads({ status: 'running' })).map((t) => t.id)).toEqual(['busy']);
    expect((await app.listThreads({ metadata: { graph: 'support' } })).map((t) => t.id)).toEqual(['busy']);
    expect((await app.listThreads({ kind: 'conversation', metadata: { queue: 'sales' } })).map((t) => t.id)).toEqual(['other']);
    expect((await app.listThreads({ order: 'updatedAt', limit: 1 }))[0]!.id).toBe('busy');

    const refused = await caught(() => app.deleteThread({ thread: 'busy' }));
    expect(ThreadBusyError.is(refused)).toBe(true);
    release();
    await running;
    const ref = { id: `sha256:${'ab'.repeat(32)}`, sha256: 'ab'.repeat(32), media_type: 'text/plain', size_bytes: 3 };
    await pinArtifact(ctx.engine.store, ref, 'while the conversation lives', { thread: 'busy' });
    await pinArtifact(ctx.engine.store, ref, 'legal hold');

    expect(await app.deleteThread({ thread: 'busy', ifStatus: 'failed' })).toEqual({ deleted: false, threadId: 'busy', reason: 'status', status: 'completed' });
    const result = await app.deleteThread({ thread: 'busy', ifStatus: ['completed', 'failed'] });
    expect(result).toMatchObject({ deleted: true, removed: { pins: 1 } });
    expect((await app.listThreads()).map((t) => t.id)).toEqual(['other']);
    await expect(app.history({ thread: 'busy' })).rejects.toMatchObject({ code: ThreadNotFoundError.code });
    // The global pin of the same artifact stays.
    expect((await ctx.engine.store.search(['cairn', 'artifact-pins'])).items.map((i) => i.value)).toEqual([expect.objectContaining({ note: 'legal hold' })]);
    // The id can be used again: a new thread, a fresh story.
    await quick.run({ thread: 'busy' });
    expect((await quick.attempts({ thread: 'busy' })).attempts).toHaveLength(1);
  });

  it('a misspelt option of a thread call is InvalidOptionError and changes nothing: deleteThread({ ifStatuss }) deletes no thread, listThreads({ statuss }) lists none', async () => {
    const { app } = flakyApp(() => false, 1);
    await app.run({ thread: 'kept' });
    const before = await app.getThread({ thread: 'kept' });
    const typos: [string, () => Promise<unknown>][] = [
      // Ignored, the guard would be gone and a completed thread deleted.
      ['deleteThread: unknown option "ifStatuss"', () => app.deleteThread({ thread: 'kept', ifStatuss: 'failed' } as never)],
      // Ignored, every thread would be listed as if it matched.
      ['listThreads: unknown option "statuss"', () => app.listThreads({ statuss: 'failed' } as never)],
      ['cancel: unknown option "reson"', () => app.cancel({ thread: 'kept', reson: 'typo' } as never)],
      ['resolveEffect: unknown option "key"', () => app.resolveEffect({ thread: 'kept', key: 'k', outcome: 1 } as never)],
      // Ignored, the signal would be queued with a null payload.
      ['signal: unknown option "paylaod"', () => app.signal({ thread: 'kept', name: 'go', paylaod: { ok: true } } as never)],
    ];
    for (const [message, call] of typos) {
      const error = await caught(call);
      expect(InvalidOptionError.is(error), message).toBe(true);
      expect(error.message).toContain(message);
    }
    const deleteWithout = await caught(() => (app.deleteThread as (o: unknown) => Promise<unknown>)(undefined));
    expect(InvalidOptionError.is(deleteWithout)).toBe(true);
    expect(await app.getThread({ thread: 'kept' })).toEqual(before);
    expect((await app.history({ thread: 'kept' })).length).toBe(before!.head! + 1);
    expect(await ctx.engine.checkpointer.listSignals('kept')).toEqual([]);
    expect(await app.deleteThread({ thread: 'kept', ifStatus: 'failed' })).toMatchObject({ deleted: false, reason: 'status' });
    expect((await app.listThreads({ status: 'failed' })).map((t) => t.id)).toEqual([]);
  });
});
