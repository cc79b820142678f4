/**
 * @module testing/checkpointer/commits
 * Checkpointer conformance. Step commits: atomic position, items, snapshot, head anchor and
 * status; the head check (no silent forks, no overwrite, no gap), per-namespace heads, the
 * pending writes a commit folds in, and the ledger entries of the effects a commit carries.
 * Registered by {@link checkpointerSuite}, inside its describe block.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { Checkpointer } from '../../contracts/checkpointer.js';
import type { LedgerEntry } from '../../contracts/ledger.js';
import { HeadMovedError, InvalidOptionError, LeaseLostError } from '../../errors.js';
import { commitOf, committedEffect, expectError, fakeHash, forked, item, linearPosition } from './fixtures.js';
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

  describe('commitStep with effects', () => {
    beforeEach(() => {
      cp = suite.cp;
    });

    /** The done entry a committed effect reads back as. */
    const doneEntry = (effect: ReturnType<typeof committedEffect>): LedgerEntry => {
      const { outcome, completedAt, ...entry } = effect;
      return { ...entry, status: 'done', outcome, completedAt };
    };

    it('stores each effect as a done entry of the ledger, with its outcome, createdAt and completedAt', async () => {
      const lease = await create('t1');
      const charge = committedEffect('t1', 'n:0#0', { argsDigest: 'd1', createdAt: 1_000, completedAt: 1_250 });
      const mail = committedEffect('t1', 'n:0#1', { name: 'mail', call: 1, outcome: '"sent ü"', createdAt: 1_001, completedAt: 1_300 });
      await cp.commitStep(lease, commitOf(linearPosition(0), null, { items: [item('m', 0, '"a"')], effects: [mail, charge] }));
      expect(await cp.getPosition('t1', '', 0)).toEqual(linearPosition(0));
      const { ledger } = suite.engine;
      expect(await ledger.get('t1', 'n:0#0')).toEqual(doneEntry(charge));
      expect(await ledger.get('t1', 'n:0#1')).toEqual(doneEntry(mail));
      expect(await ledger.listForTask('t1', '', 0, 'n:0')).toEqual([doneEntry(charge), doneEntry(mail)]);
      // Another namespace's commit, with an effect of its own step.
      const child = committedEffect('t1', 'c:0#0', { ns: 'sub:0@0', task: 'c:0', node: 'c' });
      await cp.commitStep(lease, commitOf(linearPosition(0, { ns: 'sub:0@0', hash: fakeHash(50) }), null, { effects: [child] }));
      expect(await ledger.listForTask('t1', 'sub:0@0', 0, 'c:0')).toEqual([doneEntry(child)]);
      expect(await ledger.list('t1')).toHaveLength(3);
    });

    it('a commit refused for a lost lease or a moved head writes no ledger entry', async () => {
      const { stale, fresh } = await takenOver('t1');
      await expectError(() => cp.commitStep(stale, commitOf(linearPosition(0), null, { effects: [committedEffect('t1', 'lost')] })), LeaseLostError);
      expect(await suite.engine.ledger.get('t1', 'lost')).toBeNull();
      await commitLine(fresh, 1);
      for (const wrong of [null, 0, 5]) {
        await expectError(() => cp.commitStep(fresh, commitOf(linearPosition(2), wrong, { effects: [committedEffect('t1', `moved-${wrong}`)] })), HeadMovedError);
        expect(await suite.engine.ledger.get('t1', `moved-${wrong}`)).toBeNull();
      }
      // A position already at that seq (two commits that both passed the head check): refused too.
      await expectError(() => cp.commitStep(fresh, commitOf(linearPosition(1, { hash: fakeHash(999) }), 1, { effects: [committedEffect('t1', 'taken')] })), HeadMovedError);
      expect(await suite.engine.ledger.list('t1')).toEqual([]);
      await cp.commitStep(fresh, commitOf(linearPosition(2), 1, { effects: [committedEffect('t1', 'landed', { seq: 1 })] }));
      expect((await suite.engine.ledger.list('t1')).map((e) => e.key)).toEqual(['landed']);
    });

    it('makes an intent of the same key done with the commit’s outcome; a done entry keeps its first outcome', async () => {
      const lease = await create('t1');
      const { ledger } = suite.engine;
      const { outcome: _o, completedAt: _c, ...entry } = committedEffect('t1', 'k');
      const intent = await ledger.writeIntent({ ...entry, key: 'intent', createdAt: 900 });
      await ledger.writeIntent({ ...entry, key: 'done', createdAt: 901 });
      await ledger.writeOutcome('t1', 'done', '"first"', 950);
      const effects = [
        committedEffect('t1', 'intent', { createdAt: 1_000, outcome: '"from the commit"', completedAt: 1_100 }),
        committedEffect('t1', 'done', { outcome: '"second"', completedAt: 1_200 }),
      ];
      await cp.commitStep(lease, commitOf(linearPosition(0), null, { effects }));
      expect(await ledger.get('t1', 'intent')).toEqual({ ...intent, status: 'done', outcome: '"from the commit"', completedAt: 1_100 });
      expect(await ledger.get('t1', 'done')).toMatchObject({ status: 'done', outcome: '"first"', createdAt: 901, completedAt: 950 });
      // A recorded output of the key is kept as well (it is done).
      await ledger.writeRecord({ ...entry, kind: 'record', key: 'record', outcome: '"recorded"' });
      await cp.commitStep(lease, commitOf(linearPosition(1), 0, { effects: [committedEffect('t1', 'record', { outcome: '"effect"' })] }));
      expect(await ledger.get('t1', 'record')).toMatchObject({ kind: 'record', status: 'done', outcome: '"recorded"' });
    });

    it('a commit without effects (or with none) leaves the ledger as it is', async () => {
      const lease = await create('t1');
      const { ledger } = suite.engine;
      const { outcome: _o, completedAt: _c, ...entry } = committedEffect('t1', 'pending');
      const intent = await ledger.writeIntent(entry);
      await cp.commitStep(lease, commitOf(linearPosition(0), null));
      await cp.commitStep(lease, commitOf(linearPosition(1), 0, { effects: [] }));
      expect(await ledger.list('t1')).toEqual([intent]);
      expect(await cp.getHead('t1', '')).toEqual({ seq: 1, hash: linearPosition(1).hash });
    });

    it('refuses effects that are not storable effect entries of the lease’s thread with InvalidOptionError, and writes nothing', async () => {
      const lease = await create('t1');
      await create('t2');
      const bad: [string, unknown][] = [
        ['another thread', committedEffect('t2', 'k')],
        ['a record', committedEffect('t1', 'k', { kind: 'record' })],
        ['an outcome that is not a string', committedEffect('t1', 'k', { outcome: { ok: true } as unknown as string })],
        ['an outcome with U+0000', committedEffect('t1', 'k', { outcome: '"a\u0000b"' })],
        ['a lone surrogate in the key', committedEffect('t1', 'k\uD800')],
        ['an empty key', committedEffect('t1', '')],
        ['a completedAt that is not finite', committedEffect('t1', 'k', { completedAt: Number.NaN })],
        ['a createdAt that is not a number', committedEffect('t1', 'k', { createdAt: '1' as unknown as number })],
        ['a fractional seq', committedEffect('t1', 'k', { seq: 0.5 })],
        ['a negative call', committedEffect('t1', 'k', { call: -1 })],
        ['a bad meta', committedEffect('t1', 'k', { meta: { kind: 'nope' } as never })],
        ['not an object', null],
      ];
      for (const [what, effect] of bad) {
        const code = await cp.commitStep(lease, commitOf(linearPosition(0), null, { effects: [effect as never] })).then(() => 'resolved', (error: { code?: unknown }) => error.code);
        expect(code, what).toBe(InvalidOptionError.code);
      }
      const twice = committedEffect('t1', 'twice');
      await expectError(() => cp.commitStep(lease, commitOf(linearPosition(0), null, { effects: [twice, { ...twice, call: 1 }] })), InvalidOptionError);
      await expectError(() => cp.commitStep(lease, commitOf(linearPosition(0), null, { effects: 'k' as never })), InvalidOptionError);
      expect(await cp.getHead('t1', '')).toBeNull();
      expect(await suite.engine.ledger.list('t1')).toEqual([]);
      expect(await suite.engine.ledger.list('t2')).toEqual([]);
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
