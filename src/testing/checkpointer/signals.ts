/**
 * @module testing/checkpointer/signals
 * Checkpointer conformance. Signals: `sendSignal` (ids in send order, validation, a
 * missing thread, waking a waiting thread and leaving another's wake time alone),
 * `listSignals` and its filters, `consumeSignal` (fenced, idempotent per key, consumed
 * once, a missing signal), and isolation between threads whose ids share a prefix.
 * Registered by {@link checkpointerSuite}, inside its describe block.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { Checkpointer } from '../../contracts/checkpointer.js';
import { MAX_SIGNAL_NAME_LENGTH, MAX_SIGNAL_PAYLOAD_BYTES } from '../../defaults.js';
import { InvalidKeyError, InvalidOptionError, LeaseLostError, SignalConsumedError, SignalNotFoundError, ThreadNotFoundError } from '../../errors.js';
import { commitOf, expectError, linearPosition, LONG_LEASE, remoteOwner, sleep } from './fixtures.js';
import type { CheckpointerSuiteContext } from './context.js';

/** Registers the tests of this feature. */
export function signalTests(suite: CheckpointerSuiteContext): void {
  const { create } = suite;
  let cp: Checkpointer;

  describe('signals: sendSignal', () => {
    beforeEach(() => {
      cp = suite.cp;
    });

    it('queues signals with ids 1, 2, 3… in send order, stored as sent, pending', async () => {
      await create('t1');
      const before = Date.now();
      const first = await cp.sendSignal('t1', { name: 'approved', payload: '{"by":"ana"}' });
      expect(first).toEqual({ threadId: 't1', id: 1, name: 'approved', payload: '{"by":"ana"}', sentAt: first.sentAt, consumedBy: null, consumedAt: null });
      expect(first.sentAt).toBeGreaterThanOrEqual(before);
      expect(first.sentAt).toBeLessThanOrEqual(Date.now());
      const second = await cp.sendSignal('t1', { name: 'rejected', payload: 'null', sentAt: 1_700_000_000_000 });
      expect(second).toMatchObject({ id: 2, name: 'rejected', sentAt: 1_700_000_000_000 });
      expect((await cp.sendSignal('t1', { name: 'approved', payload: '3' })).id).toBe(3);
      expect(await cp.listSignals('t1')).toEqual([first, second, expect.objectContaining({ id: 3, payload: '3' })]);
    });

    it('concurrent senders get distinct ids, none lost', async () => {
      await create('t1');
      const sent = await Promise.all(Array.from({ length: 8 }, (_, i) => cp.sendSignal('t1', { name: 'n', payload: String(i) })));
      expect(sent.map((s) => s.id).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
      expect((await cp.listSignals('t1')).map((s) => s.id)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    });

    it('needs no lease: a thread held by another run, or by none, takes signals', async () => {
      await cp.releaseThread(await create('free'));
      await create('held');
      expect((await cp.sendSignal('free', { name: 'n', payload: '1' })).id).toBe(1);
      expect((await cp.sendSignal('held', { name: 'n', payload: '1' })).id).toBe(1);
    });

    it('a missing thread is ThreadNotFoundError, and nothing is stored', async () => {
      await expectError(() => cp.sendSignal('nope', { name: 'n', payload: '1' }), ThreadNotFoundError);
      expect(await cp.listSignals('nope')).toEqual([]);
      expect(await cp.getThread('nope')).toBeNull();
    });

    it('refuses a bad name, payload or sentAt (InvalidKeyError, InvalidOptionError), storing nothing', async () => {
      await create('t1');
      for (const name of ['', 'a\u0000b', 'line\nbreak', 'x'.repeat(MAX_SIGNAL_NAME_LENGTH + 1), 42 as unknown as string]) {
        await expectError(() => cp.sendSignal('t1', { name, payload: '1' }), InvalidKeyError);
      }
      expect((await cp.sendSignal('t1', { name: 'x'.repeat(MAX_SIGNAL_NAME_LENGTH), payload: '1' })).id).toBe(1);
      await expectError(() => cp.sendSignal('t1', { name: 'n', payload: { a: 1 } as unknown as string }), InvalidOptionError);
      await expectError(() => cp.sendSignal('t1', { name: 'n', payload: 'x'.repeat(MAX_SIGNAL_PAYLOAD_BYTES + 1) }), InvalidOptionError);
      await expectError(() => cp.sendSignal('t1', { name: 'n', payload: '"\u0000"' }), InvalidOptionError);
      await expectError(() => cp.sendSignal('t1', { name: 'n', payload: '1', sentAt: Number.NaN }), InvalidOptionError);
      await expectError(() => cp.sendSignal('', { name: 'n', payload: '1' }), InvalidKeyError);
      expect(await cp.listSignals('t1')).toHaveLength(1);
      expect((await cp.sendSignal('t1', { name: 'n', payload: 'x'.repeat(MAX_SIGNAL_PAYLOAD_BYTES - 2).replace(/^x|x$/g, '"') })).id).toBe(2);
    });

    it('makes a waiting thread due (wakeAt <= now): one waiting for a signal only, or until later', async () => {
      for (const [id, wakeAt] of [['signal-only', null], ['later', Date.now() + 3_600_000]] as const) {
        const lease = await create(id);
        await cp.commitStep(lease, commitOf(linearPosition(0), null, { status: 'waiting', wakeAt }));
        await cp.releaseThread(lease);
        const before = Date.now();
        await cp.sendSignal(id, { name: 'go', payload: '1' });
        const thread = (await cp.getThread(id))!;
        expect(thread.status).toBe('waiting');
        expect(thread.wakeAt, id).not.toBeNull();
        expect(thread.wakeAt!).toBeGreaterThanOrEqual(before - 1_000);
        expect(thread.wakeAt!).toBeLessThanOrEqual(Date.now() + 1_000);
      }
    });

    it("keeps an earlier wake time, and leaves a thread that is not waiting as it is", async () => {
      const lease = await create('early');
      await cp.commitStep(lease, commitOf(linearPosition(0), null, { status: 'waiting', wakeAt: 1_000 }));
      await cp.sendSignal('early', { name: 'go', payload: '1' });
      expect((await cp.getThread('early'))!.wakeAt).toBe(1_000);
      for (const status of ['running', 'interrupted', 'completed'] as const) {
        const held = await create(status);
        await cp.commitStep(held, commitOf(linearPosition(0), null, { status }));
        const before = (await cp.getThread(status))!;
        await cp.sendSignal(status, { name: 'go', payload: '1' });
        expect(await cp.getThread(status), status).toEqual(before);
      }
    });

    it('a waiting thread a signal made due is claimed by a worker (capabilities.claims)', async () => {
      if (!cp.capabilities.claims) return;
      const lease = await create('t1');
      await cp.commitStep(lease, commitOf(linearPosition(0), null, { status: 'waiting', wakeAt: null }));
      await cp.releaseThread(lease);
      expect(await cp.claimThreads!({ owner: remoteOwner('worker'), leaseMs: LONG_LEASE, limit: 5 })).toEqual([]);
      await cp.sendSignal('t1', { name: 'go', payload: '1' });
      const claimed = await cp.claimThreads!({ owner: remoteOwner('worker'), leaseMs: LONG_LEASE, limit: 5 });
      expect(claimed.map((l) => [l.threadId, l.thread.status])).toEqual([['t1', 'waiting']]);
    });

    it('a signal sent to a waiting thread wakes the listeners (capabilities.wakeUps)', async () => {
      if (!cp.capabilities.wakeUps) return;
      const lease = await create('t1');
      await cp.commitStep(lease, commitOf(linearPosition(0), null, { status: 'waiting', wakeAt: null }));
      await cp.releaseThread(lease);
      const heard: string[] = [];
      const unsubscribe = await cp.subscribeRunnable!((threadId) => heard.push(threadId));
      try {
        await cp.sendSignal('t1', { name: 'go', payload: '1' });
        for (let i = 0; i < 200 && !heard.includes('t1'); i++) await sleep(10);
        expect(heard).toContain('t1');
      } finally {
        await unsubscribe();
      }
    });
  });

  describe('signals: listSignals', () => {
    beforeEach(() => {
      cp = suite.cp;
    });

    it('filters by name, pending and consumedBy (all that are given), oldest first', async () => {
      const lease = await create('t1');
      await cp.sendSignal('t1', { name: 'a', payload: '1' });
      await cp.sendSignal('t1', { name: 'b', payload: '2' });
      await cp.sendSignal('t1', { name: 'a', payload: '3' });
      await cp.sendSignal('t1', { name: 'a', payload: '4' });
      await cp.consumeSignal(lease, { id: 1, by: 'wait-x' });
      await cp.consumeSignal(lease, { id: 2, by: 'wait-y' });
      await cp.consumeSignal(lease, { id: 4, by: 'wait-x' });
      const ids = async (query: Parameters<Checkpointer['listSignals']>[1]) => (await cp.listSignals('t1', query)).map((s) => s.id);
      expect(await ids({})).toEqual([1, 2, 3, 4]);
      expect(await ids({ name: 'a' })).toEqual([1, 3, 4]);
      expect(await ids({ pending: true })).toEqual([3]);
      expect(await ids({ pending: false })).toEqual([1, 2, 4]);
      expect(await ids({ consumedBy: 'wait-x' })).toEqual([1, 4]);
      expect(await ids({ name: 'b', consumedBy: 'wait-x' })).toEqual([]);
      expect(await ids({ name: 'a', pending: false, consumedBy: 'wait-x' })).toEqual([1, 4]);
      expect(await ids({ name: 'c' })).toEqual([]);
      await expectError(() => cp.listSignals('t1', { pending: 'yes' as unknown as boolean }), InvalidOptionError);
    });

    it("never lists another thread's signals, whatever their ids share ('a' and 'ab', tenants)", async () => {
      await create('a', { tenant: 'acme' });
      await create('ab', { tenant: 'other' });
      await create('A');
      await cp.sendSignal('a', { name: 'n', payload: '"a"' });
      await cp.sendSignal('ab', { name: 'n', payload: '"ab-1"' });
      await cp.sendSignal('ab', { name: 'n', payload: '"ab-2"' });
      expect((await cp.listSignals('a')).map((s) => [s.threadId, s.id, s.payload])).toEqual([['a', 1, '"a"']]);
      expect((await cp.listSignals('ab')).map((s) => [s.threadId, s.id, s.payload])).toEqual([
        ['ab', 1, '"ab-1"'],
        ['ab', 2, '"ab-2"'],
      ]);
      expect(await cp.listSignals('A')).toEqual([]);
      expect(await cp.listSignals('a%')).toEqual([]);
    });

    it('a thread deleted and created again starts with no signals, ids from 1', async () => {
      await cp.releaseThread(await create('t1'));
      await cp.sendSignal('t1', { name: 'n', payload: '1' });
      await cp.sendSignal('t1', { name: 'n', payload: '2' });
      expect(await cp.deleteThread('t1')).toMatchObject({ deleted: true, removed: { signals: 2 } });
      expect(await cp.listSignals('t1')).toEqual([]);
      await create('t1');
      expect(await cp.listSignals('t1')).toEqual([]);
      expect((await cp.sendSignal('t1', { name: 'n', payload: '3' })).id).toBe(1);
    });
  });

  describe('signals: consumeSignal', () => {
    beforeEach(() => {
      cp = suite.cp;
    });

    it('marks the signal consumed by the key, at now or the time given, and returns it', async () => {
      const lease = await create('t1');
      const sent = await cp.sendSignal('t1', { name: 'go', payload: '1' });
      await cp.sendSignal('t1', { name: 'go', payload: '2' });
      const before = Date.now();
      const consumed = await cp.consumeSignal(lease, { id: 1, by: 'wait-1' });
      expect(consumed).toEqual({ ...sent, consumedBy: 'wait-1', consumedAt: consumed.consumedAt });
      expect(consumed.consumedAt!).toBeGreaterThanOrEqual(before);
      expect(consumed.consumedAt!).toBeLessThanOrEqual(Date.now());
      expect(await cp.consumeSignal(lease, { id: 2, by: 'wait-2', consumedAt: 1_234 })).toMatchObject({ id: 2, consumedBy: 'wait-2', consumedAt: 1_234 });
      expect(await cp.listSignals('t1')).toEqual([consumed, expect.objectContaining({ id: 2, consumedBy: 'wait-2', consumedAt: 1_234 })]);
    });

    it('is idempotent for the same key: the signal comes back unchanged', async () => {
      const lease = await create('t1');
      await cp.sendSignal('t1', { name: 'go', payload: '1' });
      const first = await cp.consumeSignal(lease, { id: 1, by: 'wait-1' });
      await sleep(5);
      expect(await cp.consumeSignal(lease, { id: 1, by: 'wait-1' })).toEqual(first);
      expect(await cp.listSignals('t1')).toEqual([first]);
    });

    it('a signal consumed by another key is SignalConsumedError, and stays as it was', async () => {
      const lease = await create('t1');
      await cp.sendSignal('t1', { name: 'go', payload: '1' });
      const first = await cp.consumeSignal(lease, { id: 1, by: 'wait-1' });
      const error = await expectError(() => cp.consumeSignal(lease, { id: 1, by: 'wait-2' }), SignalConsumedError);
      expect(error).toMatchObject({ threadId: 't1', signalId: 1, consumedBy: 'wait-1' });
      expect(await cp.listSignals('t1')).toEqual([first]);
    });

    it('no such signal is SignalNotFoundError (another thread\'s id included)', async () => {
      const lease = await create('t1');
      await create('t2');
      await cp.sendSignal('t2', { name: 'go', payload: '1' });
      const error = await expectError(() => cp.consumeSignal(lease, { id: 1, by: 'wait-1' }), SignalNotFoundError);
      expect(error).toMatchObject({ threadId: 't1', signalId: 1 });
      expect((await cp.listSignals('t2'))[0]!.consumedBy).toBeNull();
      await expectError(() => cp.consumeSignal(lease, { id: 0, by: 'wait-1' }), InvalidOptionError);
      await expectError(() => cp.consumeSignal(lease, { id: 1, by: '' }), InvalidOptionError);
    });

    it('is fenced: a lost lease is LeaseLostError and the signal stays pending', async () => {
      const { stale, fresh } = await suite.takenOver('t1');
      await cp.sendSignal('t1', { name: 'go', payload: '1' });
      await expectError(() => cp.consumeSignal(stale, { id: 1, by: 'wait-1' }), LeaseLostError);
      expect((await cp.listSignals('t1', { pending: true })).map((s) => s.id)).toEqual([1]);
      await cp.releaseThread(fresh);
      await expectError(() => cp.consumeSignal(fresh, { id: 1, by: 'wait-1' }), LeaseLostError);
      expect((await cp.listSignals('t1', { pending: true })).map((s) => s.id)).toEqual([1]);
    });
  });
}
