/**
 * @module testing/checkpointer/delete-thread
 * Checkpointer conformance. Deleting a thread: everything it owns goes in one transaction, other
 * threads are untouched, a live holder refuses it unless it is the caller, a missing thread or
 * another status is reported.
 * Registered by {@link checkpointerSuite}, inside its describe block.
 */
import { hostname } from 'node:os';
import { beforeEach, describe, expect, it } from 'vitest';
import type { Checkpointer } from '../../contracts/checkpointer.js';
import type { Engine } from '../../contracts/engine.js';
import type { ThreadQuery, ThreadStatus } from '../../contracts/threads.js';
import { HeadMovedError, InvalidOptionError, LeaseLostError, ThreadBusyError, ThreadNotFoundError } from '../../errors.js';
import { PIN_NAMESPACE, threadPinKey } from '../../internal/pins.js';
import { commitOf, expectError, fakeHash, item, linearPosition, LONG_LEASE, remoteOwner, SHORT_LEASE, sleep } from './fixtures.js';
import type { CheckpointerSuiteContext } from './context.js';

/** Registers the tests of this feature. */
export function deleteThreadTests(suite: CheckpointerSuiteContext): void {
  const { create, takenOver, commitLine } = suite;
  let cp: Checkpointer;
  let engine: Engine;

  describe("deleteThread under the caller's lease", () => {
    beforeEach(() => {
      cp = suite.cp;
    });

    it('deletes a thread the caller holds (its own live hold does not refuse it)', async () => {
      const lease = await create('t1');
      await commitLine(lease, 1);
      expect(await cp.deleteThread('t1', { lease })).toMatchObject({ deleted: true });
      expect(await cp.getThread('t1')).toBeNull();
    });

    it('refuses a lease that no longer holds the thread with LeaseLostError, and deletes nothing', async () => {
      const { stale } = await takenOver('t1');
      await expectError(() => cp.deleteThread('t1', { lease: stale }), LeaseLostError);
      expect(await cp.getThread('t1')).not.toBeNull();
    });
  });

  describe('deleteThread', () => {
    beforeEach(() => {
      cp = suite.cp;
      engine = suite.engine;
    });

    const ids = async (query?: ThreadQuery) => (await cp.listThreads(query)).map((t) => t.id);
    const ref = (n: number) => ({ id: `sha256:${fakeHash(n)}`, sha256: fakeHash(n), media_type: 'text/plain', size_bytes: n });

    /**
     * A thread with something in every place a thread owns: root and child positions,
     * items, snapshots, a pending write, failures, ledger effects and records, a pin
     * (and an unpinned one). Released (or left held with `keep`).
     */
    async function populated(threadId: string, options: { keep?: boolean; leaseMs?: number; status?: ThreadStatus } = {}) {
      const lease = await create(threadId, { leaseMs: options.leaseMs ?? LONG_LEASE, tenant: 'acme', metadata: { n: threadId } });
      await cp.commitStep(lease, commitOf(linearPosition(0), null, { items: [item('m', 0, '"m0"'), item('m', 1, '"m1"')], snapshot: '{"s":0}' }));
      await cp.commitStep(lease, commitOf(linearPosition(1), 0, { items: [item('m', 0, '"m2"')] }));
      await cp.commitStep(lease, commitOf(linearPosition(0, { ns: 'parent|child:0', hash: fakeHash(50) }), null, { items: [item('c', 0, '"c0"')], snapshot: '{"c":0}' }));
      await cp.putPendingWrite(lease, { ns: '', baseSeq: 1, task: 'a:0', body: '{"w":1}' });
      await cp.updateThread(lease, { attempts: 2, failure: { ns: '', code: 'ERR_A', message: 'a', node: 'n', seq: 1, attempt: 1, at: 1 } });
      await cp.updateThread(lease, { failure: { ns: '', code: 'ERR_B', message: 'b', node: 'n', seq: 1, attempt: 2, at: 2 }, ...(options.status ? { status: options.status } : {}) });
      const entry = { threadId, kind: 'effect' as const, name: 'put', ns: '', seq: 1, node: 'n', task: 'n:0', call: 0, argsDigest: null, createdAt: 5 };
      await engine.ledger.writeIntent({ ...entry, key: 'effect-1' });
      await engine.ledger.writeOutcome(threadId, 'effect-1', '{"ok":true}', 6);
      await engine.ledger.writeRecord({ ...entry, kind: 'record', key: 'record-1', call: 1, outcome: '"answer"' });
      await engine.store.put([...PIN_NAMESPACE], threadPinKey(ref(1).id, threadId), { ref: ref(1), note: 'thread pin', thread: threadId });
      await engine.store.put([...PIN_NAMESPACE], threadPinKey(ref(2).id, threadId), { ref: ref(2), note: 'unpinned later', thread: threadId });
      await engine.store.delete([...PIN_NAMESPACE], threadPinKey(ref(2).id, threadId));
      await cp.sendSignal(threadId, { name: 'approved', payload: '1' });
      await cp.sendSignal(threadId, { name: 'approved', payload: '2' });
      await cp.consumeSignal(lease, { id: 1, by: 'wait-1' });
      if (!options.keep) await cp.releaseThread(lease);
      return lease;
    }

    /** Everything readable about a thread through the contracts. */
    async function everything(threadId: string) {
      const ranges = [{ from: 0, to: 100 }];
      return {
        thread: await cp.getThread(threadId),
        positions: await cp.getPositions(threadId, '', { from: 0, to: 100 }),
        child: await cp.getPositions(threadId, 'parent|child:0', { from: 0, to: 100 }),
        items: await cp.getItems(threadId, '', 'm', ranges),
        childItems: await cp.getItems(threadId, 'parent|child:0', 'c', ranges),
        snapshot: await cp.getSnapshot(threadId, '', ranges),
        childSnapshot: await cp.getSnapshot(threadId, 'parent|child:0', ranges),
        pending: await cp.getPendingWrites(threadId, '', 1),
        failures: await cp.listFailures(threadId),
        ledger: await engine.ledger.list(threadId),
        pin: await engine.store.get([...PIN_NAMESPACE], threadPinKey(ref(1).id, threadId)),
        signals: await cp.listSignals(threadId),
      };
    }

    it('removes the thread and every position, item, snapshot, pending write, failure, signal, ledger entry and pin it owns', async () => {
      await populated('doomed');
      await populated('other');
      await engine.store.put([...PIN_NAMESPACE], ref(1).id, { ref: ref(1), note: 'global pin' });
      const otherBefore = await everything('other');
      expect(otherBefore.positions).toHaveLength(2);
      expect(otherBefore.ledger).toHaveLength(2);

      const result = await cp.deleteThread('doomed');
      expect(result).toEqual({
        deleted: true,
        threadId: 'doomed',
        removed: { positions: 3, items: 4, snapshots: 2, pendingWrites: 1, failures: 2, ledgerEntries: 2, pins: 1, signals: 2 },
      });

      expect(await everything('doomed')).toEqual({
        signals: [],
        thread: null,
        positions: [],
        child: [],
        items: [],
        childItems: [],
        snapshot: null,
        childSnapshot: null,
        pending: [],
        failures: [],
        ledger: [],
        pin: null,
      });
      expect(await engine.ledger.get('doomed', 'effect-1')).toBeNull();
      expect(await ids()).toEqual(['other']);
      // The unpinned pin's row is gone too: nothing under the pins namespace names the thread.
      const pins = await engine.store.search([...PIN_NAMESPACE]);
      expect(pins.items.map((i) => i.key).sort()).toEqual([ref(1).id, threadPinKey(ref(1).id, 'other')].sort());
      // Another thread, and a global pin of the same artifact, are untouched.
      expect(await everything('other')).toEqual(otherBefore);
      expect((await engine.store.get([...PIN_NAMESPACE], ref(1).id))?.value).toMatchObject({ note: 'global pin' });
    });

    it("keeps overwrite record ids increasing after a deleted thread's pins take their records with them", async () => {
      // Pins written over in a lastWins namespace leave overwrite records, which deleteThread removes with the pins.
      engine.store.declare([...PIN_NAMESPACE], { merge: 'lastWins' });
      await populated('doomed');
      engine.store.declare(['kept'], { merge: 'lastWins' });
      await engine.store.put(['kept'], 'k', 0);
      const first = await engine.store.put([...PIN_NAMESPACE], threadPinKey(ref(1).id, 'doomed'), { ref: ref(1), note: 'again' }, { ifVersion: 0 });
      await engine.store.put(['kept'], 'k', 1, { ifVersion: 0 });
      const pin = await engine.store.put([...PIN_NAMESPACE], threadPinKey(ref(1).id, 'doomed'), { ref: ref(1), note: 'and again' }, { ifVersion: first.version - 1 });
      expect(pin.version).toBe(first.version + 1);
      const before = await engine.store.listOverwrites([]);
      expect(before.map((r) => r.namespace[0])).toEqual([PIN_NAMESPACE[0], 'kept', PIN_NAMESPACE[0]]);

      await cp.deleteThread('doomed');
      const left = await engine.store.listOverwrites([]);
      expect(left.map((r) => r.namespace[0])).toEqual(['kept']);
      // A record made after the delete gets an id above every id handed out before, so paging by afterId finds it.
      await engine.store.put(['kept'], 'k', 2, { ifVersion: 0 });
      const newest = await engine.store.listOverwrites([], { afterId: Math.max(...before.map((r) => r.id)) });
      expect(newest.map((r) => [r.namespace, r.overwritten?.value])).toEqual([[['kept'], 1]]);
    });

    it('a thread created again under a deleted id starts empty', async () => {
      await populated('t1');
      await cp.deleteThread('t1');
      const lease = await create('t1', { kind: 'session' });
      expect(lease.thread).toMatchObject({ id: 't1', kind: 'session', head: null, attempts: 0, tenant: null, metadata: {}, lastError: null });
      expect(await cp.getPositions('t1', '', { from: 0, to: 100 })).toEqual([]);
      expect(await cp.getItems('t1', '', 'm', [{ from: 0, to: 100 }])).toEqual([]);
      expect(await cp.getSnapshot('t1', '', [{ from: 0, to: 100 }])).toBeNull();
      expect(await cp.getPendingWrites('t1', '', 1)).toEqual([]);
      expect(await cp.listFailures('t1')).toEqual([]);
      expect(await engine.ledger.list('t1')).toEqual([]);
      await commitLine(lease, 1);
      expect((await cp.getThread('t1'))!.head).toBe(1);
    });

    it('removes every namespace: none is listed after, and a thread created again under the id has no child positions', async () => {
      await populated('t1');
      const grandchild = 'parent|child:0|deeper:1@0';
      const lease = await cp.acquireThread('t1', { owner: remoteOwner(), leaseMs: LONG_LEASE });
      await cp.commitStep(lease, commitOf(linearPosition(0, { ns: grandchild, hash: fakeHash(60) }), null));
      await cp.commitStep(lease, commitOf(linearPosition(1, { ns: grandchild, hash: fakeHash(61) }), 0));
      await cp.releaseThread(lease);
      expect(await cp.listNamespaces('t1')).toEqual(['', 'parent|child:0', grandchild]);

      expect(await cp.deleteThread('t1')).toMatchObject({ deleted: true, removed: { positions: 5 } });
      expect(await cp.listNamespaces('t1')).toEqual([]);

      const again = await create('t1');
      expect(await cp.listNamespaces('t1')).toEqual([]);
      expect(await cp.getPositions('t1', 'parent|child:0', { from: 0, to: 100 })).toEqual([]);
      expect(await cp.getPositions('t1', grandchild, { from: 0, to: 100 })).toEqual([]);
      expect(await cp.getSnapshot('t1', 'parent|child:0', [{ from: 0, to: 100 }])).toBeNull();
      expect(await cp.getItems('t1', 'parent|child:0', 'c', [{ from: 0, to: 100 }])).toEqual([]);
      // No head survives either: the child namespace starts again at seq 0 from null.
      await expectError(() => cp.commitStep(again, commitOf(linearPosition(2, { ns: grandchild, hash: fakeHash(62) }), 1)), HeadMovedError);
      await cp.commitStep(again, commitOf(linearPosition(0, { ns: grandchild, hash: fakeHash(70) }), null));
      expect(await cp.listNamespaces('t1')).toEqual([grandchild]);
    });

    it('deletes the newest thread, then creates threads: none sees the deleted one\'s rows', async () => {
      await populated('a');
      await populated('z');
      await cp.deleteThread('z');
      const lease = await create('fresh');
      expect(await cp.getPositions('fresh', '', { from: 0, to: 100 })).toEqual([]);
      expect(await cp.listFailures('fresh')).toEqual([]);
      expect(await engine.ledger.list('fresh')).toEqual([]);
      await commitLine(lease, 0);
      expect(await cp.getPositions('a', '', { from: 0, to: 100 })).toHaveLength(2);
    });

    it('refuses a thread whose lease is live with ThreadBusyError and deletes nothing', async () => {
      await populated('t1', { keep: true });
      const before = await everything('t1');
      const error = await expectError(() => cp.deleteThread('t1'), ThreadBusyError);
      expect(error.threadId).toBe('t1');
      // What to do is about deleting: onBusy is a run's option, which deleteThread does not take.
      expect(error.message).not.toContain('onBusy');
      expect(await everything('t1')).toEqual(before);
    });

    it('refuses a thread held by another live run of this process', async () => {
      await create('t1', { owner: { runId: 'mine', pid: process.pid, host: hostname() } });
      await expectError(() => cp.deleteThread('t1'), ThreadBusyError);
      expect(await cp.getThread('t1')).not.toBeNull();
    });

    it('deletes a thread whose holder is dead; the dead holder\'s late writes then fail and write nothing', async () => {
      const stale = await populated('t1', { keep: true, leaseMs: SHORT_LEASE });
      await sleep(SHORT_LEASE * 2);
      expect((await cp.deleteThread('t1')).deleted).toBe(true);
      await expectError(() => cp.commitStep(stale, commitOf(linearPosition(2), 1)), LeaseLostError);
      await expectError(() => cp.updateThread(stale, { status: 'failed', failure: { ns: '', code: 'ERR_LATE', message: 'late', at: 3 } }), LeaseLostError);
      await expectError(() => cp.putPendingWrite(stale, { ns: '', baseSeq: 1, task: 'b:0', body: '{}' }), LeaseLostError);
      await expectError(() => cp.putSnapshot(stale, { ns: '', seq: 1, text: '{}' }), LeaseLostError);
      await expectError(() => cp.renewLease(stale, LONG_LEASE), LeaseLostError);
      const late = { threadId: 't1', key: 'late', kind: 'effect' as const, name: 'x', ns: '', seq: 1, node: 'n', task: 'n:0', call: 2, argsDigest: null, createdAt: 9 };
      await expectError(() => engine.ledger.writeIntent(late), ThreadNotFoundError);
      await expectError(() => engine.ledger.writeRecord({ ...late, kind: 'record', outcome: '1' }), ThreadNotFoundError);
      await cp.releaseThread(stale);
      expect(await cp.getThread('t1')).toBeNull();
      expect(await engine.ledger.list('t1')).toEqual([]);
      expect(await cp.listFailures('t1')).toEqual([]);
      expect(await cp.getPendingWrites('t1', '', 1)).toEqual([]);
    });

    it('ifStatus: deletes only a thread in one of the given statuses', async () => {
      await populated('done', { status: 'completed' });
      await populated('broken', { status: 'failed' });
      expect(await cp.deleteThread('done', { ifStatus: 'failed' })).toEqual({ deleted: false, threadId: 'done', reason: 'status', status: 'completed' });
      expect(await cp.deleteThread('done', { ifStatus: ['failed', 'needs_attention'] })).toMatchObject({ deleted: false, reason: 'status' });
      expect((await everything('done')).positions).toHaveLength(2);
      expect(await cp.deleteThread('done', { ifStatus: ['failed', 'completed'] })).toMatchObject({ deleted: true });
      expect(await cp.deleteThread('broken', { ifStatus: 'failed' })).toMatchObject({ deleted: true, removed: { positions: 3 } });
      expect(await ids()).toEqual([]);
    });

    it('a missing thread is reported, not thrown; deleting twice is harmless', async () => {
      await populated('other');
      const before = await everything('other');
      expect(await cp.deleteThread('missing')).toEqual({ deleted: false, threadId: 'missing', reason: 'missing' });
      await populated('t1');
      expect((await cp.deleteThread('t1')).deleted).toBe(true);
      expect(await cp.deleteThread('t1')).toEqual({ deleted: false, threadId: 't1', reason: 'missing' });
      expect(await everything('other')).toEqual(before);
    });

    it('rejects an unknown ifStatus with InvalidOptionError and deletes nothing', async () => {
      await populated('t1');
      await expectError(() => cp.deleteThread('t1', { ifStatus: 'done' as ThreadStatus }), InvalidOptionError);
      expect(await cp.getThread('t1')).not.toBeNull();
    });
  });
}
