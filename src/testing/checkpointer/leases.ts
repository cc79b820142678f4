/**
 * @module testing/checkpointer/leases
 * Checkpointer conformance. Leases and fencing: one holder at a time, takeover after expiry or a
 * dead holder, renewals and releases, and every write under a lost lease refused with nothing
 * written.
 * Registered by {@link checkpointerSuite}, inside its describe block.
 */
import { hostname } from 'node:os';
import { beforeEach, describe, expect, it } from 'vitest';
import type { Checkpointer } from '../../contracts/checkpointer.js';
import { LeaseLostError, ThreadBusyError, ThreadNotFoundError } from '../../errors.js';
import { commitOf, deadPid, expectError, item, linearPosition, LONG_LEASE, remoteOwner, SHORT_LEASE, sleep } from './fixtures.js';
import type { CheckpointerSuiteContext } from './context.js';

/** Registers the tests of this feature. */
export function leaseTests(suite: CheckpointerSuiteContext): void {
  const { create, takenOver } = suite;
  let cp: Checkpointer;

  describe('threads and leases', () => {
    beforeEach(() => {
      cp = suite.cp;
    });

    it('creates a thread on acquire with create, with the given attributes and empty log', async () => {
      const owner = remoteOwner();
      const lease = await cp.acquireThread('t1', {
        owner,
        leaseMs: LONG_LEASE,
        create: { kind: 'conversation', tenant: 'acme', metadata: { user: 'u1', tags: ['a'] } },
      });
      expect(lease.threadId).toBe('t1');
      expect(lease.runId).toBe(owner.runId);
      expect(lease.epoch).toBeGreaterThan(0);
      expect(lease.expiresAt).toBeGreaterThan(Date.now());
      const expected = {
        id: 't1',
        kind: 'conversation',
        status: 'running',
        head: null,
        attempts: 0,
        tenant: 'acme',
        metadata: { user: 'u1', tags: ['a'] },
        lastError: null,
      };
      expect(lease.thread).toMatchObject(expected);
      const stored = await cp.getThread('t1');
      expect(stored).toMatchObject(expected);
      expect(typeof stored!.createdAt).toBe('number');
      expect(stored!.updatedAt).toBeGreaterThanOrEqual(stored!.createdAt);
    });

    it('returns null from getThread for a missing thread', async () => {
      expect(await cp.getThread('missing')).toBeNull();
    });

    it('throws ThreadNotFoundError on acquire of a missing thread without create, and creates nothing', async () => {
      const error = await expectError(() => cp.acquireThread('missing', { owner: remoteOwner(), leaseMs: LONG_LEASE }), ThreadNotFoundError);
      expect(error.threadId).toBe('missing');
      expect(await cp.getThread('missing')).toBeNull();
    });

    it('keeps an existing thread as it is when acquired with create', async () => {
      const first = await create('t1', { kind: 'task', tenant: 'acme', metadata: { a: 1 } });
      await cp.releaseThread(first);
      const again = await cp.acquireThread('t1', {
        owner: remoteOwner(),
        leaseMs: LONG_LEASE,
        create: { kind: 'session', tenant: 'other', metadata: { b: 2 } },
      });
      expect(again.thread).toMatchObject({ kind: 'task', tenant: 'acme', metadata: { a: 1 } });
      expect(await cp.getThread('t1')).toMatchObject({ kind: 'task', tenant: 'acme', metadata: { a: 1 } });
    });

    it('throws ThreadBusyError for a second acquire while the lease is live', async () => {
      await create('t1');
      const error = await expectError(() => cp.acquireThread('t1', { owner: remoteOwner(), leaseMs: LONG_LEASE }), ThreadBusyError);
      expect(error.threadId).toBe('t1');
    });

    it('throws ThreadBusyError to another run of the same process (same host and pid, other runId)', async () => {
      const me = { pid: process.pid, host: hostname() };
      await create('t1', { owner: { runId: 'first', ...me } });
      await expectError(() => cp.acquireThread('t1', { owner: { runId: 'second', ...me }, leaseMs: LONG_LEASE }), ThreadBusyError);
    });

    it('grants a live lease again to its own holder (same runId): an acquire made again after its answer was lost', async () => {
      const me = { runId: 'mine', pid: process.pid, host: hostname() };
      const first = await create('t1', { owner: me });
      const again = await cp.acquireThread('t1', { owner: me, leaseMs: LONG_LEASE });
      expect(again.runId).toBe('mine');
      expect(again.epoch).toBeGreaterThanOrEqual(first.epoch);
      expect((await cp.updateThread(again, { attempts: 1 })).attempts).toBe(first.thread.attempts + 1);
      await expectError(() => cp.acquireThread('t1', { owner: { ...me, runId: 'other' }, leaseMs: LONG_LEASE }), ThreadBusyError);
    });

    it('lets exactly one of two concurrent acquires win', async () => {
      await cp.releaseThread(await create('t1'));
      const results = await Promise.allSettled([
        cp.acquireThread('t1', { owner: remoteOwner('a'), leaseMs: LONG_LEASE }),
        cp.acquireThread('t1', { owner: remoteOwner('b'), leaseMs: LONG_LEASE }),
      ]);
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      const rejected = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
      expect(rejected).toHaveLength(1);
      expect((rejected[0]!.reason as { code?: string }).code).toBe(ThreadBusyError.code);
    });

    it('lets another owner take the thread over once the lease expired', async () => {
      const { stale, fresh } = await takenOver('t1');
      expect(fresh.runId).not.toBe(stale.runId);
      expect(fresh.epoch).toBeGreaterThan(stale.epoch);
    });

    it('takes a live lease over with takeover, fencing the holder: its commit, renewal and update throw LeaseLostError and write nothing', async () => {
      const holder = await create('t1');
      const taker = await cp.acquireThread('t1', { owner: remoteOwner('canceller'), leaseMs: LONG_LEASE, takeover: true });
      expect(taker.epoch).toBeGreaterThan(holder.epoch);
      await expectError(() => cp.commitStep(holder, commitOf(linearPosition(0), null)), LeaseLostError);
      await expectError(() => cp.renewLease(holder, LONG_LEASE), LeaseLostError);
      await expectError(() => cp.updateThread(holder, { status: 'completed' }), LeaseLostError);
      expect(await cp.getThread('t1')).toMatchObject({ head: null, status: 'running' });
      await cp.updateThread(taker, { status: 'failed' });
      expect((await cp.getThread('t1'))!.status).toBe('failed');
    });

    it('treats a holder on this host whose process no longer exists as dead, before its lease expires', async () => {
      const dead = { runId: 'dead-run', pid: deadPid(), host: hostname() };
      const first = await create('t1', { owner: dead, leaseMs: LONG_LEASE });
      const next = await cp.acquireThread('t1', { owner: remoteOwner(), leaseMs: LONG_LEASE });
      expect(next.epoch).toBeGreaterThan(first.epoch);
    });

    it('increases the epoch on every grant: create, re-acquire after release, takeover after expiry', async () => {
      const a = await create('t1');
      await cp.releaseThread(a);
      const b = await cp.acquireThread('t1', { owner: remoteOwner(), leaseMs: SHORT_LEASE });
      expect(b.epoch).toBeGreaterThan(a.epoch);
      await sleep(SHORT_LEASE * 2);
      const c = await cp.acquireThread('t1', { owner: remoteOwner(), leaseMs: LONG_LEASE });
      expect(c.epoch).toBeGreaterThan(b.epoch);
      await cp.releaseThread(c);
      const d = await cp.acquireThread('t1', { owner: { ...remoteOwner(), runId: a.runId }, leaseMs: LONG_LEASE });
      expect(d.epoch).toBeGreaterThan(c.epoch);
    });

    it('renewLease extends the lease so it outlives its first expiry', async () => {
      const lease = await create('t1', { leaseMs: SHORT_LEASE });
      const renewed = await cp.renewLease(lease, LONG_LEASE);
      expect(renewed.runId).toBe(lease.runId);
      expect(renewed.epoch).toBe(lease.epoch);
      expect(renewed.expiresAt).toBeGreaterThan(lease.expiresAt);
      await sleep(SHORT_LEASE * 2);
      await expectError(() => cp.acquireThread('t1', { owner: remoteOwner(), leaseMs: LONG_LEASE }), ThreadBusyError);
      await cp.commitStep(renewed, commitOf(linearPosition(0), null));
      expect((await cp.getThread('t1'))!.head).toBe(0);
    });

    it('releaseThread frees the thread for another owner at once', async () => {
      const lease = await create('t1');
      await cp.releaseThread(lease);
      const next = await cp.acquireThread('t1', { owner: remoteOwner(), leaseMs: LONG_LEASE });
      expect(next.epoch).toBeGreaterThan(lease.epoch);
    });

    it('a released lease can no longer write', async () => {
      const lease = await create('t1');
      await cp.releaseThread(lease);
      await expectError(() => cp.commitStep(lease, commitOf(linearPosition(0), null)), LeaseLostError);
      await expectError(() => cp.updateThread(lease, { status: 'failed' }), LeaseLostError);
      expect(await cp.getPosition('t1', '', 0)).toBeNull();
      expect((await cp.getThread('t1'))!.status).toBe('running');
    });

    it('releasing a lost lease is a no-op: the successor keeps the thread', async () => {
      const { stale, fresh } = await takenOver('t1');
      await cp.releaseThread(stale);
      await expectError(() => cp.acquireThread('t1', { owner: remoteOwner(), leaseMs: LONG_LEASE }), ThreadBusyError);
      await cp.commitStep(fresh, commitOf(linearPosition(0), null));
      expect((await cp.getThread('t1'))!.head).toBe(0);
    });

    it('releasing twice is a no-op', async () => {
      const lease = await create('t1');
      await cp.releaseThread(lease);
      await cp.releaseThread(lease);
      await cp.acquireThread('t1', { owner: remoteOwner(), leaseMs: LONG_LEASE });
    });
  });

  describe('fencing: a lease lost to a takeover writes nothing', () => {
    beforeEach(() => {
      cp = suite.cp;
    });

    it('renewLease throws LeaseLostError and does not extend the successor', async () => {
      const { stale, fresh } = await takenOver('t1');
      const error = await expectError(() => cp.renewLease(stale, LONG_LEASE), LeaseLostError);
      expect(error.threadId).toBe('t1');
      // The successor still holds and can still write.
      await cp.updateThread(fresh, { attempts: 1 });
    });

    it('updateThread throws LeaseLostError and changes nothing', async () => {
      const { stale } = await takenOver('t1');
      const before = await cp.getThread('t1');
      await expectError(
        () =>
          cp.updateThread(stale, {
            status: 'failed',
            attempts: 3,
            lastError: { code: 'ERR_X', message: 'boom', at: 1 },
            failure: { ns: '', code: 'ERR_X', message: 'boom', at: 1 },
          }),
        LeaseLostError,
      );
      expect(await cp.getThread('t1')).toEqual(before);
      expect(await cp.listFailures('t1')).toEqual([]);
    });

    it('putSnapshot throws LeaseLostError and stores nothing', async () => {
      const { stale, fresh } = await takenOver('t1');
      await cp.commitStep(fresh, commitOf(linearPosition(0), null));
      await expectError(() => cp.putSnapshot(stale, { ns: '', seq: 0, text: '{"s":0}' }), LeaseLostError);
      expect(await cp.getSnapshot('t1', '', [{ from: 0, to: 10 }])).toBeNull();
    });

    it('putPendingWrite throws LeaseLostError and stores nothing', async () => {
      const { stale } = await takenOver('t1');
      await expectError(() => cp.putPendingWrite(stale, { ns: '', baseSeq: 0, task: 'a:0', body: '{"x":1}' }), LeaseLostError);
      expect(await cp.getPendingWrites('t1', '', 0)).toEqual([]);
    });

    it('commitStep throws LeaseLostError and writes no position, item, snapshot or head', async () => {
      const stale = await create('t1', { leaseMs: SHORT_LEASE });
      await cp.commitStep(stale, commitOf(linearPosition(0), null));
      await sleep(SHORT_LEASE * 2);
      const fresh = await cp.acquireThread('t1', { owner: remoteOwner(), leaseMs: LONG_LEASE });
      await cp.putPendingWrite(fresh, { ns: '', baseSeq: 0, task: 'a:0', body: '{}' });
      await expectError(
        () => cp.commitStep(stale, commitOf(linearPosition(1), 0, { items: [item('messages', 0, '"hi"')], snapshot: '{"s":1}', status: 'completed' })),
        LeaseLostError,
      );
      expect(await cp.getPosition('t1', '', 1)).toBeNull();
      expect(await cp.getItems('t1', '', 'messages', [{ from: 0, to: 10 }])).toEqual([]);
      expect(await cp.getSnapshot('t1', '', [{ from: 0, to: 10 }])).toBeNull();
      expect(await cp.getThread('t1')).toMatchObject({ head: 0, status: 'running' });
      expect(await cp.getPendingWrites('t1', '', 0)).toHaveLength(1);
      // The successor extends the same head.
      await cp.commitStep(fresh, commitOf(linearPosition(1), 0));
    });
  });
}
