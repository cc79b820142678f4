/**
 * @module testing/checkpointer/commits
 * Checkpointer conformance. Step commits: atomic position, items, snapshot, head anchor and
 * status; the head check (no silent forks, no overwrite, no gap), per-namespace heads, and the
 * pending writes a commit folds in.
 * Registered by {@link checkpointerSuite}, inside its describe block.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { Checkpointer } from '../../contracts/checkpointer.js';
import { HeadMovedError, LeaseLostError } from '../../errors.js';
import { commitOf, expectError, fakeHash, forked, item, linearPosition } from './fixtures.js';
import type { CheckpointerSuiteContext } from './context.js';

/** Registers the tests of this feature. */
export function commitTests(suite: CheckpointerSuiteContext): void {
  const { create, takenOver, commitLine } = suite;
  let cp: Checkpointer;

  describe('commitStep', () => {
    beforeEach(() => {
      cp = suite.cp;
    });

    it('writes position, items and snapshot and advances head and status', async () => {
      const lease = await create('t1');
      const p0 = linearPosition(0);
      await cp.commitStep(lease, commitOf(p0, null, { items: [item('messages', 0, '"a"'), item('messages', 1, '"b"')], snapshot: '{"snap":0}' }));
      expect(await cp.getPosition('t1', '', 0)).toEqual(p0);
      expect(await cp.getThread('t1')).toMatchObject({ head: 0, status: 'running' });

      const p1 = linearPosition(1, { body: '{"changes":{"x":{"set":1}},"kind":"step"}' });
      await cp.commitStep(lease, commitOf(p1, 0, { items: [item('log', 0, '{"n":1}')], status: 'interrupted' }));
      expect(await cp.getPosition('t1', '', 1)).toEqual(p1);
      expect(await cp.getPositionItems('t1', '', 1, ['log'])).toEqual([item('log', 0, '{"n":1}')]);
      expect(await cp.getPositionItems('t1', '', 0, ['messages'])).toEqual([item('messages', 0, '"a"'), item('messages', 1, '"b"')]);
      expect(await cp.getSnapshot('t1', '', [{ from: 0, to: 1 }])).toEqual({ seq: 0, text: '{"snap":0}' });
      expect(await cp.getThread('t1')).toMatchObject({ head: 1, status: 'interrupted' });
    });

    it('stores every position field and the hash exactly (64 lowercase hex)', async () => {
      const lease = await create('t1');
      const hash = 'ab'.repeat(32);
      const p = linearPosition(0, { step: 7, schemaVersion: 3, createdAt: 1_234_567_890_123, body: '{"kind":"input","nested":{"a":[1,2,"ü"]}}', hash });
      await cp.commitStep(lease, commitOf(p, null));
      const stored = await cp.getPosition('t1', '', 0);
      expect(stored).toEqual(p);
      expect(stored!.hash).toMatch(/^[0-9a-f]{64}$/);
    });

    it('throws HeadMovedError on a wrong expectedHead and writes nothing', async () => {
      const lease = await create('t1');
      await commitLine(lease, 1);
      const before = await cp.getThread('t1');
      for (const wrong of [null, 0, 5]) {
        const error = await expectError(
          () => cp.commitStep(lease, commitOf(linearPosition(2), wrong, { items: [item('m', 0, '1')], snapshot: '{}', status: 'completed' })),
          HeadMovedError,
        );
        expect(error.expected).toBe(wrong);
        expect(error.actual).toBe(1);
      }
      expect(await cp.getPosition('t1', '', 2)).toBeNull();
      expect(await cp.getItems('t1', '', 'm', [{ from: 0, to: 9 }])).toEqual([]);
      expect(await cp.getSnapshot('t1', '', [{ from: 0, to: 9 }])).toBeNull();
      expect(await cp.getThread('t1')).toMatchObject({ head: before!.head, status: before!.status });
    });

    it('throws HeadMovedError for a non-null expectedHead on a thread with no position yet', async () => {
      const lease = await create('t1');
      await expectError(() => cp.commitStep(lease, commitOf(linearPosition(1), 0)), HeadMovedError);
      expect(await cp.getPosition('t1', '', 1)).toBeNull();
      expect((await cp.getThread('t1'))!.head).toBeNull();
    });

    it('throws HeadMovedError unless the position takes seq expectedHead + 1: no overwrite, no gap', async () => {
      const lease = await create('t1');
      await commitLine(lease, 1);
      const before = await cp.getThread('t1');
      const original = await cp.getPosition('t1', '', 1);
      const extra = { status: 'completed' as const, snapshot: '{}', items: [item('m', 0, '1')] };
      // expectedHead is the head, but the seq reuses the head's (an overwrite) or skips one (a gap).
      await expectError(() => cp.commitStep(lease, commitOf(linearPosition(1, { body: '{"kind":"other"}', hash: fakeHash(999) }), 1, extra)), HeadMovedError);
      await expectError(() => cp.commitStep(lease, commitOf(linearPosition(3, { parent: 1 }), 1, extra)), HeadMovedError);
      await expectError(() => cp.commitStep(lease, commitOf(linearPosition(0, { hash: fakeHash(998) }), null, extra)), HeadMovedError);
      expect(await cp.getPosition('t1', '', 1)).toEqual(original);
      expect(await cp.getPosition('t1', '', 3)).toBeNull();
      expect(await cp.getPosition('t1', '', 0)).toEqual(linearPosition(0));
      expect(await cp.getThread('t1')).toMatchObject({ head: before!.head, status: before!.status });
      expect(await cp.getSnapshot('t1', '', [{ from: 0, to: 9 }])).toBeNull();
      expect(await cp.getItems('t1', '', 'm', [{ from: 0, to: 9 }])).toEqual([]);
    });

    it('a fork (parent older than the head) takes seq head + 1 and becomes the head', async () => {
      const lease = await create('t1');
      await commitLine(lease, 2);
      await cp.commitStep(lease, commitOf(forked(3, 1), 2));
      expect((await cp.getThread('t1'))!.head).toBe(3);
      expect(await cp.getPosition('t1', '', 2)).toEqual(linearPosition(2));
      expect(await cp.getPosition('t1', '', 3)).toEqual(forked(3, 1));
      // The next step continues the new branch.
      await cp.commitStep(lease, commitOf(linearPosition(4, { segment: 3, step: 3 }), 3));
      expect((await cp.getThread('t1'))!.head).toBe(4);
    });

    it('each namespace has its own head: a child commit neither checks nor moves the root head', async () => {
      const lease = await create('t1');
      await commitLine(lease, 1);
      const child = 'parent|node:0';
      const c0 = linearPosition(0, { ns: child, hash: fakeHash(100) });
      const c1 = linearPosition(1, { ns: child, hash: fakeHash(101) });
      const c2 = linearPosition(2, { ns: child, hash: fakeHash(102) });
      // The child namespace starts empty: its first position extends null, whatever the root head.
      await cp.commitStep(lease, commitOf(c0, null));
      await cp.commitStep(lease, commitOf(c1, 0, { items: [item('m', 0, '"child"')] }));
      await cp.commitStep(lease, commitOf(c2, 1));
      expect((await cp.getThread('t1'))!.head).toBe(1);
      // The child's head moved to 2; the root's is still 1.
      await expectError(() => cp.commitStep(lease, commitOf(linearPosition(3, { ns: child, hash: fakeHash(103) }), 1)), HeadMovedError);
      expect(await cp.getPosition('t1', child, 1)).toEqual(c1);
      expect(await cp.getPositions('t1', '', { from: 0, to: 9 })).toEqual([linearPosition(0), linearPosition(1)]);
      expect(await cp.getPositions('t1', child, { from: 0, to: 9 })).toEqual([c0, c1, c2]);
      expect(await cp.getItems('t1', '', 'm', [{ from: 0, to: 9 }])).toEqual([]);
      expect(await cp.getItems('t1', child, 'm', [{ from: 0, to: 9 }])).toEqual(['"child"']);
      // The root chain continues from its own head.
      await cp.commitStep(lease, commitOf(linearPosition(2), 1));
      expect((await cp.getThread('t1'))!.head).toBe(2);
    });
  });

  describe('pending writes', () => {
    beforeEach(() => {
      cp = suite.cp;
    });

    it('stores writes per (ns, baseSeq, task), lists them in task order, and replaces a rewrite', async () => {
      const lease = await create('t1');
      await cp.putPendingWrite(lease, { ns: '', baseSeq: 0, task: 'b:0', body: '{"v":"b"}' });
      await cp.putPendingWrite(lease, { ns: '', baseSeq: 0, task: 'a:1', body: '{"v":"a1"}' });
      await cp.putPendingWrite(lease, { ns: '', baseSeq: 0, task: 'a:0', body: '{"v":"a0"}' });
      await cp.putPendingWrite(lease, { ns: '', baseSeq: 1, task: 'a:0', body: '{"v":"other base"}' });
      await cp.putPendingWrite(lease, { ns: 'child|n:0', baseSeq: 0, task: 'a:0', body: '{"v":"other ns"}' });
      // Idempotent per task: the rewrite replaces, never duplicates.
      await cp.putPendingWrite(lease, { ns: '', baseSeq: 0, task: 'b:0', body: '{"v":"b2"}' });

      expect(await cp.getPendingWrites('t1', '', 0)).toEqual([
        { ns: '', baseSeq: 0, task: 'a:0', body: '{"v":"a0"}' },
        { ns: '', baseSeq: 0, task: 'a:1', body: '{"v":"a1"}' },
        { ns: '', baseSeq: 0, task: 'b:0', body: '{"v":"b2"}' },
      ]);
      expect(await cp.getPendingWrites('t1', '', 1)).toEqual([{ ns: '', baseSeq: 1, task: 'a:0', body: '{"v":"other base"}' }]);
      expect(await cp.getPendingWrites('t1', 'child|n:0', 0)).toEqual([{ ns: 'child|n:0', baseSeq: 0, task: 'a:0', body: '{"v":"other ns"}' }]);
      expect(await cp.getPendingWrites('t1', '', 2)).toEqual([]);
      expect(await cp.getPendingWrites('missing', '', 0)).toEqual([]);
    });

    it('lists the writes of a range of base seqs in one read, by base seq then task, of that namespace only', async () => {
      const lease = await create('t1');
      await cp.putPendingWrite(lease, { ns: '', baseSeq: 3, task: 'a:0', body: '{"v":"3a"}' });
      await cp.putPendingWrite(lease, { ns: '', baseSeq: 1, task: 'b:0', body: '{"v":"1b"}' });
      await cp.putPendingWrite(lease, { ns: '', baseSeq: 1, task: 'a:0', body: '{"v":"1a"}' });
      await cp.putPendingWrite(lease, { ns: '', baseSeq: 5, task: 'a:0', body: '{"v":"outside"}' });
      await cp.putPendingWrite(lease, { ns: 'child|n:0', baseSeq: 2, task: 'a:0', body: '{"v":"other ns"}' });
      expect(await cp.getPendingWritesIn!('t1', '', { from: 1, to: 4 })).toEqual([
        { ns: '', baseSeq: 1, task: 'a:0', body: '{"v":"1a"}' },
        { ns: '', baseSeq: 1, task: 'b:0', body: '{"v":"1b"}' },
        { ns: '', baseSeq: 3, task: 'a:0', body: '{"v":"3a"}' },
      ]);
      expect(await cp.getPendingWritesIn!('t1', 'child|n:0', { from: 0, to: 9 })).toEqual([{ ns: 'child|n:0', baseSeq: 2, task: 'a:0', body: '{"v":"other ns"}' }]);
      expect(await cp.getPendingWritesIn!('t1', '', { from: 6, to: 9 })).toEqual([]);
      expect(await cp.getPendingWritesIn!('missing', '', { from: 0, to: 9 })).toEqual([]);
    });

    it('are deleted by the commit whose parent is their baseSeq, and only those', async () => {
      const lease = await create('t1');
      await commitLine(lease, 0);
      await cp.putPendingWrite(lease, { ns: '', baseSeq: 0, task: 'a:0', body: '{}' });
      await cp.putPendingWrite(lease, { ns: '', baseSeq: 0, task: 'b:0', body: '{}' });
      await cp.putPendingWrite(lease, { ns: '', baseSeq: 1, task: 'a:0', body: '{"later":true}' });
      await cp.putPendingWrite(lease, { ns: 'child|n:0', baseSeq: 0, task: 'a:0', body: '{"child":true}' });
      await cp.commitStep(lease, commitOf(linearPosition(1), 0));
      expect(await cp.getPendingWrites('t1', '', 0)).toEqual([]);
      expect(await cp.getPendingWrites('t1', '', 1)).toEqual([{ ns: '', baseSeq: 1, task: 'a:0', body: '{"later":true}' }]);
      expect(await cp.getPendingWrites('t1', 'child|n:0', 0)).toEqual([{ ns: 'child|n:0', baseSeq: 0, task: 'a:0', body: '{"child":true}' }]);
    });

    it('survive a commit that fails the head check', async () => {
      const lease = await create('t1');
      await commitLine(lease, 1);
      await cp.putPendingWrite(lease, { ns: '', baseSeq: 0, task: 'a:0', body: '{}' });
      await expectError(() => cp.commitStep(lease, commitOf(linearPosition(5, { parent: 0 }), 0)), HeadMovedError);
      expect(await cp.getPendingWrites('t1', '', 0)).toHaveLength(1);
    });

    it('are per thread', async () => {
      const a = await create('a');
      await create('b');
      await cp.putPendingWrite(a, { ns: '', baseSeq: 0, task: 'x:0', body: '{}' });
      expect(await cp.getPendingWrites('b', '', 0)).toEqual([]);
    });
  });

  describe('anchored heads', () => {
    beforeEach(() => {
      cp = suite.cp;
    });

    it('commitStep anchors the namespace head (seq and hash); getHead reads it, per namespace, null before the first commit', async () => {
      const lease = await create('t1');
      expect(await cp.getHead('t1', '')).toBeNull();
      await commitLine(lease, 2);
      expect(await cp.getHead('t1', '')).toEqual({ seq: 2, hash: linearPosition(2).hash });
      expect((await cp.getThread('t1'))!.head).toBe(2);
      const child = linearPosition(0, { ns: 'sub:0@2', hash: fakeHash(99) });
      await cp.commitStep(lease, commitOf(child, null));
      expect(await cp.getHead('t1', 'sub:0@2')).toEqual({ seq: 0, hash: fakeHash(99) });
      expect(await cp.getHead('t1', '')).toEqual({ seq: 2, hash: linearPosition(2).hash });
      expect(await cp.getHead('t1', 'other:0@1')).toBeNull();
      expect(await cp.getHead('missing', '')).toBeNull();
    });

    it('a fork moves the anchor to the new position; a refused commit leaves it where it was', async () => {
      const lease = await create('t1');
      await commitLine(lease, 2);
      const fork = forked(3, 1, { hash: fakeHash(77) });
      await cp.commitStep(lease, commitOf(fork, 2));
      expect(await cp.getHead('t1', '')).toEqual({ seq: 3, hash: fakeHash(77) });
      await expectError(() => cp.commitStep(lease, commitOf(linearPosition(5), 4)), HeadMovedError);
      const { stale } = await takenOver('t2');
      await expectError(() => cp.commitStep(stale, commitOf(linearPosition(0), null)), LeaseLostError);
      expect(await cp.getHead('t1', '')).toEqual({ seq: 3, hash: fakeHash(77) });
      expect(await cp.getHead('t2', '')).toBeNull();
    });

    it('deleteThread removes every anchor: a thread created again under the id has none', async () => {
      const lease = await create('t1');
      await commitLine(lease, 1);
      await cp.commitStep(lease, commitOf(linearPosition(0, { ns: 'sub:0@1' }), null));
      await cp.releaseThread(lease);
      expect((await cp.deleteThread('t1')).deleted).toBe(true);
      await create('t1');
      expect(await cp.getHead('t1', '')).toBeNull();
      expect(await cp.getHead('t1', 'sub:0@1')).toBeNull();
      expect(await cp.listNamespaces('t1')).toEqual([]);
    });
  });
}
