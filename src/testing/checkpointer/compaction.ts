/**
 * @module testing/checkpointer/compaction
 * Checkpointer conformance. Compacting a namespace (`compactThread`): the positions below
 * the base and the dropped ones go with their items, snapshots, pending writes and (asked)
 * ledger entries, dropped child namespaces go whole, the snapshots are stored, the base is
 * anchored beside the head and survives later commits; fenced, checked, one transaction;
 * other threads untouched. Skipped where the engine has no `compactThread`.
 * Registered by {@link checkpointerSuite}, inside its describe block.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { Checkpointer } from '../../contracts/checkpointer.js';
import type { Engine } from '../../contracts/engine.js';
import { InvalidOptionError, LeaseLostError, PositionNotFoundError } from '../../errors.js';
import { commitOf, expectError, fakeHash, forked, item, linearPosition } from './fixtures.js';
import type { CheckpointerSuiteContext } from './context.js';

/** Registers the tests of this feature. */
export function compactionTests(suite: CheckpointerSuiteContext): void {
  const { create, takenOver } = suite;
  let cp: Checkpointer;
  let engine: Engine;

  describe('compactThread', () => {
    beforeEach(() => {
      cp = suite.cp;
      engine = suite.engine;
    });

    /** Positions 0..9 in a line, each with one item and a ledger record, snapshots at 4 and 8, a fork 10 from 2, a child run of step 1 and one of step 6. */
    async function populated(threadId: string) {
      const lease = await create(threadId);
      for (let seq = 0; seq <= 9; seq++) {
        const snapshot = seq === 4 || seq === 8 ? `{"s":${seq}}` : undefined;
        await cp.commitStep(lease, commitOf(linearPosition(seq), seq === 0 ? null : seq - 1, { items: [item('m', 0, `"m${seq}"`)], ...(snapshot ? { snapshot } : {}) }));
        await engine.ledger.writeRecord({ threadId, key: `r${seq}`, kind: 'record', name: 'r', ns: '', seq, node: 'n', task: 'n:0', call: 0, argsDigest: null, createdAt: 1, outcome: '1' });
      }
      await cp.commitStep(lease, commitOf(forked(10, 2), 9));
      for (const [ns, origin] of [['sub:0@1', 1], ['sub:0@6', 6]] as const) {
        await cp.commitStep(lease, commitOf(linearPosition(0, { ns, hash: fakeHash(100 + origin) }), null, { items: [item('c', 0, '"c"')] }));
        await engine.ledger.writeRecord({ threadId, key: `c${origin}`, kind: 'record', name: 'r', ns, seq: 0, node: 'n', task: 'n:0', call: 0, argsDigest: null, createdAt: 1, outcome: '1' });
      }
      await cp.putPendingWrite(lease, { ns: '', baseSeq: 3, task: 'n:0', body: '{}' });
      await cp.putPendingWrite(lease, { ns: '', baseSeq: 9, task: 'n:0', body: '{}' });
      return lease;
    }

    it('removes what lies below the base and what was dropped, keeps the rest, and anchors the base beside the head', async (t) => {
      t.skip(!suite.cp.compactThread, 'the engine has no compactThread');
      const lease = await populated('t1');
      const other = await populated('t2');
      const result = await cp.compactThread!(lease, {
        ns: '',
        base: { seq: 4, hash: fakeHash(5) },
        snapshot: '{"base":4}',
        snapshots: [{ seq: 8, text: '{"rewritten":8}' }],
        drop: [10],
        dropNamespaces: ['sub:0@1'],
        ledger: true,
      });
      expect(result).toEqual({ positions: 6, items: 5, snapshots: 0, pendingWrites: 1, ledgerEntries: 5, namespaces: 1 });
      expect((await cp.getPositions('t1', '', { from: 0, to: 20 })).map((p) => p.seq)).toEqual([4, 5, 6, 7, 8, 9]);
      expect(await cp.getItems('t1', '', 'm', [{ from: 0, to: 20 }])).toEqual(['"m4"', '"m5"', '"m6"', '"m7"', '"m8"', '"m9"']);
      expect(await cp.getSnapshots('t1', '', { from: 0, to: 20 })).toEqual([{ seq: 4, text: '{"base":4}' }, { seq: 8, text: '{"rewritten":8}' }]);
      expect(await cp.getPendingWrites('t1', '', 3)).toEqual([]);
      expect(await cp.getPendingWrites('t1', '', 9)).toHaveLength(1);
      expect(await cp.listNamespaces('t1')).toEqual(['', 'sub:0@6']);
      expect((await engine.ledger.list('t1')).map((e) => e.key).sort()).toEqual(['c6', 'r4', 'r5', 'r6', 'r7', 'r8', 'r9']);
      expect(await cp.getHead('t1', '')).toEqual({ seq: 10, hash: fakeHash(11), base: { seq: 4, hash: fakeHash(5) } });
      // A later commit moves the head and keeps the base.
      await cp.commitStep(lease, commitOf(linearPosition(11, { parent: 9, segment: 0 }), 10));
      expect(await cp.getHead('t1', '')).toEqual({ seq: 11, hash: fakeHash(12), base: { seq: 4, hash: fakeHash(5) } });
      // Another thread is untouched.
      expect(await cp.getPositions('t2', '', { from: 0, to: 20 })).toHaveLength(11);
      expect(await engine.ledger.list('t2')).toHaveLength(12);
      expect((await cp.getHead('t2', ''))?.base).toBeUndefined();
      await cp.releaseThread(other);
    });

    it('keeps the ledger without `ledger`, and a later compaction moves the base up', async (t) => {
      t.skip(!suite.cp.compactThread, 'the engine has no compactThread');
      const lease = await populated('t1');
      expect((await cp.compactThread!(lease, { ns: '', base: { seq: 4, hash: fakeHash(5) }, snapshot: '{}' })).ledgerEntries).toBe(0);
      expect(await engine.ledger.list('t1')).toHaveLength(12);
      expect((await cp.compactThread!(lease, { ns: '', base: { seq: 8, hash: fakeHash(9) }, snapshot: '{}' })).positions).toBe(4);
      expect((await cp.getHead('t1', ''))?.base).toEqual({ seq: 8, hash: fakeHash(9) });
    });

    it('refuses a lost lease, a base not stored with that hash, above the head or below an earlier base, and removes nothing', async (t) => {
      t.skip(!suite.cp.compactThread, 'the engine has no compactThread');
      const { stale, fresh } = await takenOver('t1');
      await suite.commitLine(fresh, 5);
      const request = { ns: '', base: { seq: 3, hash: fakeHash(4) }, snapshot: '{}' };
      await expectError(() => cp.compactThread!(stale, request), LeaseLostError);
      await expectError(() => cp.compactThread!(fresh, { ...request, base: { seq: 3, hash: fakeHash(99) } }), PositionNotFoundError);
      await expectError(() => cp.compactThread!(fresh, { ...request, base: { seq: 9, hash: fakeHash(10) } }), PositionNotFoundError);
      await expectError(() => cp.compactThread!(fresh, { ...request, drop: [2] }), InvalidOptionError);
      await expectError(() => cp.compactThread!(fresh, { ...request, dropNamespaces: [''] }), InvalidOptionError);
      await expectError(() => cp.compactThread!(fresh, { ...request, base: { seq: 3, hash: 'nope' } }), InvalidOptionError);
      expect(await cp.getPositions('t1', '', { from: 0, to: 9 })).toHaveLength(6);
      await cp.compactThread!(fresh, request);
      await expectError(() => cp.compactThread!(fresh, { ...request, base: { seq: 2, hash: fakeHash(3) } }), PositionNotFoundError);
      expect((await cp.getHead('t1', ''))?.base).toEqual({ seq: 3, hash: fakeHash(4) });
    });

    it('deleteThread removes a compacted thread, anchor included', async (t) => {
      t.skip(!suite.cp.compactThread, 'the engine has no compactThread');
      const lease = await populated('t1');
      await cp.compactThread!(lease, { ns: '', base: { seq: 4, hash: fakeHash(5) }, snapshot: '{}' });
      await cp.releaseThread(lease);
      expect(await cp.deleteThread('t1')).toMatchObject({ deleted: true });
      expect(await cp.getHead('t1', '')).toBeNull();
      expect(await cp.listNamespaces('t1')).toEqual([]);
    });
  });
}
