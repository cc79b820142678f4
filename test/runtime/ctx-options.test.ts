/**
 * The node context's calls refuse, at the call, a name or options they cannot honour:
 * a key they do not take (a misspelt `answr` would let any answer through unchecked,
 * `timeoutMss` would wait forever, `comit` would run the effect with the defaults), a
 * schema passed where `{ answer }` or `{ schema }` goes, an empty name; ctx.store's
 * calls likewise (`validateAtcommit` would commit on a stale read, `ttlMS` keep the item
 * forever), taking null options as none as the store does. The error is
 * InvalidOptionError, the node is not retried, and nothing is recorded, paused or run.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineState } from '../../src/state/schema.js';
import { field } from '../../src/state/fields.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import type { NodeContext } from '../../src/runtime/node-context.js';
import { ENGINES, caught, useEngine } from './engines.js';

const State = defineState({ fields: { log: field.model(z.array(z.string()), { reduce: 'append', default: [] }) } });

/** Each call as a user might mistype it; `ran` counts effects and records that were called anyway. */
function mistakes(ran: { count: number }): [string, (c: NodeContext) => Promise<unknown>][] {
  const call = () => {
    ran.count++;
    return 'v';
  };
  const loose = (c: object) => c as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
  return [
    ['interrupt-misspelt-answer', (c) => loose(c).interrupt!({ q: 'ok?' }, { answr: z.boolean() })],
    ['interrupt-schema-as-options', (c) => loose(c).interrupt!({ q: 'ok?' }, z.boolean())],
    ['interrupt-answer-not-a-schema', (c) => loose(c).interrupt!({ q: 'ok?' }, { answer: true })],
    ['interrupt-null-options', (c) => loose(c).interrupt!({ q: 'ok?' }, null)],
    ['wait-misspelt-timeout', (c) => loose(c).waitFor!('paid', { timeoutMss: 5 })],
    ['wait-schema-as-options', (c) => loose(c).waitFor!('paid', z.object({ amount: z.number() }))],
    ['effect-misspelt-commit', (c) => loose(c).effect!('charge', { run: call, comit: 'with-step' })],
    ['effect-key-for-idempotencyKey', (c) => loose(c).effect!('charge', { run: call, key: 'k-1' })],
    ['effect-empty-name', (c) => loose(c).effect!('', { run: call })],
    ['record-misspelt-kind', (c) => loose(c).record!('chat', call, { kindd: 'model' })],
    ['record-model-not-a-string', (c) => loose(c).record!('chat', call, { model: 4 })],
    ['record-describe-not-a-function', (c) => loose(c).record!('chat', call, { describe: 'usage' })],
    ['record-empty-name', (c) => loose(c).record!('', call)],
    ['artifact-misspelt-media-type', (c) => loose(c).recordArtifact!('report', call, { media_type: 'text/plain' })],
    ['artifact-not-a-function', (c) => loose(c).recordArtifact!('report', 'text')],
    ['store-put-misspelt-ttl', (c) => loose(c.store).put!(['mistakes'], 'k', 1, { ttlMS: 5 })],
    ['store-put-misspelt-ifversion', (c) => loose(c.store).put!(['mistakes'], 'k', 1, { ifversion: 3 })],
    ['store-get-misspelt-validate', (c) => loose(c.store).get!(['mistakes'], 'k', { validateAtcommit: true })],
    ['store-get-validate-not-a-boolean', (c) => loose(c.store).get!(['mistakes'], 'k', { validateAtCommit: 'yes' })],
    ['store-delete-misspelt-ifversion', (c) => loose(c.store).delete!(['mistakes'], 'k', { ifversion: 3 })],
    ['store-update-misspelt-max-retries', (c) => loose(c.store).update!(['mistakes'], 'k', call, { maxRetry: 0 })],
    ['store-update-negative-max-retries', (c) => loose(c.store).update!(['mistakes'], 'k', call, { maxRetries: -1 })],
  ];
}

describe.each(ENGINES)('node context options on %s', (name) => {
  const ctx = useEngine(name);

  it('a call given a key it does not take, a schema in place of its options or an empty name is InvalidOptionError at the call: not retried, nothing run, recorded or paused', async () => {
    const ran = { count: 0 };
    for (const [label, mistake] of mistakes(ran)) {
      let attempts = 0;
      const app = graph(State)
        .node('agent', async (_s, c) => {
          attempts++;
          await mistake(c);
          return { log: ['done'] };
        })
        .edge(START, 'agent')
        .edge('agent', END)
        .compile({ engine: ctx.engine, retry: { maxAttempts: 3, initialDelayMs: 0 } });
      const error = await caught(() => app.run({ thread: label }));
      expect(error.code, label).toBe('ERR_INVALID_OPTION');
      expect(attempts, label).toBe(1);
      expect(await ctx.engine.ledger.list(label), label).toEqual([]);
      const thread = await ctx.engine.checkpointer.getThread(label);
      expect(thread?.status, label).not.toBe('interrupted');
      expect(thread?.status, label).not.toBe('waiting');
    }
    expect(ran.count).toBe(0);
    expect(await ctx.engine.store.list(['mistakes'])).toEqual([]);
  });

  it('every option each call documents is still taken', async () => {
    const app = graph(State)
      .node('agent', async (_s, c) => {
        const chat = await c.record('chat', () => 'hi', { kind: 'model', model: 'm-1', provider: 'p', describe: () => ({}), args: { q: 1 } });
        const paid = await c.effect('charge', { run: () => 'paid', idempotencyKey: 'charge-1', args: { cents: 5 }, mode: 'atLeastOnce', commit: 'with-step' });
        const read = await c.store.get<number>(['taken'], 'n', { validateAtCommit: true });
        await c.store.get(['taken'], 'n', null as never);
        const put = await c.store.put(['taken'], 'n', 1, { ifVersion: read?.version ?? 0, idempotencyKey: 'put-1', ttlMs: 60_000 });
        await c.store.update<number>(['taken'], 'm', (n = 0) => n + 1, { maxRetries: 2, ttlMs: 60_000, idempotencyKey: 'update-1' });
        await c.store.delete(['taken'], 'm', { ifVersion: 'any', idempotencyKey: 'delete-1' });
        const ok = await c.interrupt({ q: 'ok?' }, { answer: z.boolean() });
        return { log: [chat, paid, String(ok), String(put.version)] };
      })
      .edge(START, 'agent')
      .edge('agent', END)
      .compile({ engine: ctx.engine });
    expect((await app.run({ thread: 'fine' })).status).toBe('interrupted');
    const done = await app.resume({ thread: 'fine', answer: true });
    expect(done.state.log).toEqual(['hi', 'paid', 'true', '1']);
    expect((await ctx.engine.store.get(['taken'], 'n'))?.expiresAt).toEqual(expect.any(Number));
    expect(await ctx.engine.store.get(['taken'], 'm')).toBeNull();
  });
});
