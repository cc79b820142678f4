/**
 * @module testing/checkpointer/waits
 * Checkpointer conformance. Durable waits: the `waiting` status and its wake time
 * through `commitStep` and `updateThread` (written atomically, cleared by any other
 * status, fenced), the signals a waiting writer saw (`signalsSeen`), and what workers
 * see of waiting threads: claims of due ones only, and `nextLeaseExpiry` counting wake
 * times, each where the engine's capabilities declare them.
 * Registered by {@link checkpointerSuite}, inside its describe block.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { Checkpointer } from '../../contracts/checkpointer.js';
import type { ThreadLease } from '../../contracts/threads.js';
import { HeadMovedError, LeaseLostError } from '../../errors.js';
import { commitOf, expectError, linearPosition, LONG_LEASE, remoteOwner, sleep } from './fixtures.js';
import type { CheckpointerSuiteContext } from './context.js';

/** A time well in the future (ms since the epoch), so that nothing is due by it during a test. */
const LATER = () => Date.now() + 3_600_000;

/** Registers the tests of this feature. */
export function waitTests(suite: CheckpointerSuiteContext): void {
  const { create } = suite;
  let cp: Checkpointer;

  /** A thread with position 0 committed as `waiting` until `wakeAt`, its lease released unless `keep`. */
  async function waiting(threadId: string, wakeAt: number | null, options: { keep?: boolean; metadata?: Record<string, unknown> } = {}): Promise<ThreadLease> {
    const lease = await create(threadId, { metadata: options.metadata ?? {} });
    await cp.commitStep(lease, commitOf(linearPosition(0), null, { status: 'waiting', wakeAt }));
    if (!options.keep) await cp.releaseThread(lease);
    return lease;
  }

  describe('waits: the waiting status and its wake time', () => {
    beforeEach(() => {
      cp = suite.cp;
    });

    it('a new thread has no wake time', async () => {
      const lease = await create('t1');
      expect(lease.thread.wakeAt).toBeNull();
      expect((await cp.getThread('t1'))!.wakeAt).toBeNull();
    });

    it('a waiting commit stores its wakeAt with the status; getThread, listThreads and a later lease return it', async () => {
      const at = LATER();
      await waiting('t1', at);
      await cp.releaseThread(await create('other'));
      expect(await cp.getThread('t1')).toMatchObject({ status: 'waiting', wakeAt: at, head: 0 });
      const listed = await cp.listThreads({ status: 'waiting' });
      expect(listed.map((t) => [t.id, t.wakeAt])).toEqual([['t1', at]]);
      const again = await cp.acquireThread('t1', { owner: remoteOwner(), leaseMs: LONG_LEASE });
      expect(again.thread).toMatchObject({ status: 'waiting', wakeAt: at });
    });

    it('waiting with no wakeAt (null or absent) waits for a signal only: wakeAt null', async () => {
      await waiting('t1', null);
      expect(await cp.getThread('t1')).toMatchObject({ status: 'waiting', wakeAt: null });
      const lease = await create('t2');
      await cp.commitStep(lease, commitOf(linearPosition(0), null, { status: 'waiting' }));
      expect(await cp.getThread('t2')).toMatchObject({ status: 'waiting', wakeAt: null });
    });

    it('a commit of another status clears the wake time, even if it names one', async () => {
      const lease = await waiting('t1', LATER(), { keep: true });
      await cp.commitStep(lease, commitOf(linearPosition(1), 0, { status: 'running', wakeAt: 123 }));
      expect(await cp.getThread('t1')).toMatchObject({ status: 'running', wakeAt: null });
      await cp.commitStep(lease, commitOf(linearPosition(2), 1, { status: 'waiting', wakeAt: 456 }));
      expect(await cp.getThread('t1')).toMatchObject({ status: 'waiting', wakeAt: 456 });
      await cp.commitStep(lease, commitOf(linearPosition(3), 2, { status: 'completed' }));
      expect(await cp.getThread('t1')).toMatchObject({ status: 'completed', wakeAt: null });
    });

    it('a commit in a child namespace changes neither the status nor the wake time', async () => {
      const at = LATER();
      const lease = await waiting('t1', at, { keep: true });
      await cp.commitStep(lease, commitOf(linearPosition(0, { ns: 'p|c:0' }), null, { status: 'running', wakeAt: null }));
      expect(await cp.getThread('t1')).toMatchObject({ status: 'waiting', wakeAt: at });
    });

    it('a commit that loses its lease or its head writes no wake time', async () => {
      const { stale, fresh } = await suite.takenOver('t1');
      await expectError(() => cp.commitStep(stale, commitOf(linearPosition(0), null, { status: 'waiting', wakeAt: 5 })), LeaseLostError);
      expect(await cp.getThread('t1')).toMatchObject({ status: 'running', wakeAt: null });
      await cp.commitStep(fresh, commitOf(linearPosition(0), null));
      await expectError(() => cp.commitStep(fresh, commitOf(linearPosition(0), null, { status: 'waiting', wakeAt: 5 })), HeadMovedError);
      expect(await cp.getThread('t1')).toMatchObject({ status: 'running', wakeAt: null });
    });

    it('updateThread sets the wake time of a waiting thread, keeps it when not given, and any other status clears it', async () => {
      const lease = await create('t1');
      expect(await cp.updateThread(lease, { status: 'waiting', wakeAt: 1_000 })).toMatchObject({ status: 'waiting', wakeAt: 1_000 });
      expect(await cp.updateThread(lease, { wakeAt: 2_000 })).toMatchObject({ status: 'waiting', wakeAt: 2_000 });
      expect(await cp.updateThread(lease, { attempts: 1 })).toMatchObject({ status: 'waiting', wakeAt: 2_000 });
      expect(await cp.updateThread(lease, { wakeAt: null })).toMatchObject({ status: 'waiting', wakeAt: null });
      await cp.updateThread(lease, { wakeAt: 3_000 });
      expect(await cp.updateThread(lease, { status: 'interrupted', wakeAt: 4_000 })).toMatchObject({ status: 'interrupted', wakeAt: null });
      expect(await cp.updateThread(lease, { wakeAt: 5_000 })).toMatchObject({ status: 'interrupted', wakeAt: null });
      expect(await cp.getThread('t1')).toMatchObject({ status: 'interrupted', wakeAt: null });
    });

    it('updateThread is fenced: a lost lease writes no wake time', async () => {
      const { stale } = await suite.takenOver('t1');
      await expectError(() => cp.updateThread(stale, { status: 'waiting', wakeAt: 5 }), LeaseLostError);
      expect(await cp.getThread('t1')).toMatchObject({ status: 'running', wakeAt: null });
    });

    it('signalsSeen: a wait that missed a newer signal is due at once; one that saw the newest keeps its time', async () => {
      const at = LATER();
      const lease = await create('t1');
      await cp.sendSignal('t1', { name: 'go', payload: '1' });
      // Saw signal 1: nothing newer, the time stands.
      await cp.commitStep(lease, commitOf(linearPosition(0), null, { status: 'waiting', wakeAt: at, signalsSeen: 1 }));
      expect((await cp.getThread('t1'))!.wakeAt).toBe(at);
      await cp.commitStep(lease, commitOf(linearPosition(1), 0, { status: 'running' }));
      // Saw none (0) while signal 1 was there: due now.
      const before = Date.now();
      await cp.commitStep(lease, commitOf(linearPosition(2), 1, { status: 'waiting', wakeAt: at, signalsSeen: 0 }));
      const due = (await cp.getThread('t1'))!.wakeAt!;
      expect(due).toBeGreaterThanOrEqual(before - 1_000);
      expect(due).toBeLessThanOrEqual(Date.now() + 1_000);
      // A signal-only wait that missed one is due now too.
      await cp.commitStep(lease, commitOf(linearPosition(3), 2, { status: 'running' }));
      await cp.commitStep(lease, commitOf(linearPosition(4), 3, { status: 'waiting', wakeAt: null, signalsSeen: 0 }));
      expect((await cp.getThread('t1'))!.wakeAt).toBeLessThanOrEqual(Date.now() + 1_000);
      // The same through updateThread.
      expect(await cp.updateThread(lease, { status: 'waiting', wakeAt: at, signalsSeen: 1 })).toMatchObject({ wakeAt: at });
      expect((await cp.updateThread(lease, { status: 'waiting', wakeAt: at, signalsSeen: 0 })).wakeAt).toBeLessThanOrEqual(Date.now() + 1_000);
      // An earlier time than now stays as it is.
      expect(await cp.updateThread(lease, { wakeAt: 10, signalsSeen: 0 })).toMatchObject({ wakeAt: 10 });
    });

    it("lists threads by status 'waiting'", async () => {
      await waiting('w1', null);
      await waiting('w2', LATER());
      await cp.releaseThread(await create('r1'));
      expect((await cp.listThreads({ status: 'waiting' })).map((t) => t.id)).toEqual(['w1', 'w2']);
      expect((await cp.listThreads({ status: ['waiting', 'running'] })).map((t) => t.id)).toEqual(['r1', 'w1', 'w2']);
    });
  });

  describe('waits: claims of waiting threads (capabilities.claims)', () => {
    beforeEach(() => {
      cp = suite.cp;
    });

    it('claims waiting threads that are due, never those not yet due or waiting for a signal only; the lease shows them waiting', async () => {
      if (!cp.capabilities.claims) return;
      await waiting('due', Date.now() - 1_000);
      await waiting('later', LATER());
      await waiting('signal-only', null);
      const claimed = await cp.claimThreads!({ owner: remoteOwner('worker'), leaseMs: LONG_LEASE, limit: 10 });
      expect(claimed.map((lease) => lease.threadId)).toEqual(['due']);
      expect(claimed[0]!.thread).toMatchObject({ status: 'waiting', head: 0 });
      expect(claimed[0]!.thread.wakeAt).toBeLessThanOrEqual(Date.now());
      expect(await cp.claimThreads!({ owner: remoteOwner('worker'), leaseMs: LONG_LEASE, limit: 10 })).toEqual([]);
    });

    it('a thread becomes claimable when its time comes', async () => {
      if (!cp.capabilities.claims) return;
      // A second ahead: the write and the first claim must both come before it, on a loaded machine too.
      const wakeAt = Date.now() + 1_000;
      await waiting('soon', wakeAt);
      expect(await cp.claimThreads!({ owner: remoteOwner('worker'), leaseMs: LONG_LEASE, limit: 10 })).toEqual([]);
      await sleep(Math.max(0, wakeAt - Date.now()) + 100);
      expect((await cp.claimThreads!({ owner: remoteOwner('worker'), leaseMs: LONG_LEASE, limit: 10 })).map((l) => l.threadId)).toEqual(['soon']);
    });

    it('a due waiting thread under a live lease is not claimed', async () => {
      if (!cp.capabilities.claims) return;
      await waiting('held', Date.now() - 1_000, { keep: true });
      expect(await cp.claimThreads!({ owner: remoteOwner('worker'), leaseMs: LONG_LEASE, limit: 10 })).toEqual([]);
    });

    it('running and due waiting threads are claimed together, oldest update first, of the graph asked for', async () => {
      if (!cp.capabilities.claims) return;
      await waiting('a', Date.now() - 1_000, { metadata: { graph: 'g' } });
      await sleep(3);
      await cp.releaseThread(await create('b', { metadata: { graph: 'g' } }));
      await sleep(3);
      await waiting('c', Date.now() - 1_000, { metadata: { graph: 'g' } });
      await sleep(3);
      await waiting('d', Date.now() - 1_000, { metadata: { graph: 'other' } });
      const claimed = await cp.claimThreads!({ owner: remoteOwner('worker'), leaseMs: LONG_LEASE, limit: 10, graph: 'g' });
      expect(claimed.map((lease) => [lease.threadId, lease.thread.status])).toEqual([
        ['a', 'waiting'],
        ['b', 'running'],
        ['c', 'waiting'],
      ]);
    });
  });

  describe('waits: nextLeaseExpiry counts wake times (capabilities.leaseExpiry)', () => {
    beforeEach(() => {
      cp = suite.cp;
    });

    it("is the earlier of the leases on running threads and the waiting threads' wake times, of the graph when given", async () => {
      if (!cp.capabilities.leaseExpiry) return;
      const soon = Date.now() + 10 * LONG_LEASE;
      const sooner = Date.now() + LONG_LEASE / 2;
      await waiting('signal-only', null);
      expect(await cp.nextLeaseExpiry!()).toBeNull();
      await waiting('w1', soon, { metadata: { graph: 'g' } });
      expect(await cp.nextLeaseExpiry!()).toBe(soon);
      const held = await create('held', { leaseMs: LONG_LEASE });
      expect(await cp.nextLeaseExpiry!()).toBe(held.expiresAt);
      await waiting('w2', sooner, { metadata: { graph: 'g2' } });
      expect(await cp.nextLeaseExpiry!()).toBe(sooner);
      expect(await cp.nextLeaseExpiry!('g')).toBe(soon);
      expect(await cp.nextLeaseExpiry!('g2')).toBe(sooner);
      expect(await cp.nextLeaseExpiry!('none')).toBeNull();
    });

    it('a past wake time is returned as it is (a worker claims at once); a held waiting thread counts once its lease is up too', async () => {
      if (!cp.capabilities.leaseExpiry) return;
      const past = Date.now() - 5_000;
      const lease = await waiting('held', past, { keep: true });
      expect(await cp.nextLeaseExpiry!()).toBe(lease.expiresAt);
      await cp.releaseThread(lease);
      expect(await cp.nextLeaseExpiry!()).toBe(past);
    });
  });
}
