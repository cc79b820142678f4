/**
 * @module testing/checkpointer/item-packs
 * Checkpointer conformance. Item packs (`capabilities.itemPacks`): a commit's packs are
 * stored in its transaction and read back by `getItemPacks` (those wholly inside the
 * ranges asked, of one field, by fromSeq); a pack is checked against its commit; it goes
 * with the thread and with any position it spans that compaction removes. Where the
 * capability is not declared, the refusal is checked in workers.ts.
 * Registered by {@link checkpointerSuite}, inside its describe block.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { Checkpointer, ItemPack } from '../../contracts/checkpointer.js';
import { InvalidOptionError, NotSupportedError } from '../../errors.js';
import { commitOf, expectError, fakeHash, forked, item, linearPosition } from './fixtures.js';
import type { CheckpointerSuiteContext } from './context.js';

/** Registers the tests of this feature. */
export function itemPackTests(suite: CheckpointerSuiteContext): void {
  const { create } = suite;
  let cp: Checkpointer;

  const pack = (field: string, fromSeq: number, toSeq: number, text = `${field}:${fromSeq}-${toSeq}`): ItemPack => ({ field, fromSeq, toSeq, count: toSeq - fromSeq + 1, text });

  /** Positions 0..11, each with an item of `m` and one of `n`; packs of both fields at 3, 7 and 11 (spans of four). */
  async function packed(threadId: string) {
    const lease = await create(threadId);
    for (let seq = 0; seq <= 11; seq++) {
      const ends = seq % 4 === 3;
      await cp.commitStep(
        lease,
        commitOf(linearPosition(seq), seq === 0 ? null : seq - 1, {
          items: [item('m', 0, `"m${seq}"`), item('n', 0, `"n${seq}"`)],
          ...(ends ? { packs: [pack('m', seq - 3, seq), pack('n', seq - 3, seq)] } : {}),
        }),
      );
    }
    return lease;
  }

  describe('item packs (capabilities.itemPacks)', () => {
    beforeEach(() => {
      cp = suite.cp;
    });

    /** True (after checking the refusal) when the engine keeps no packs: the test has nothing more to check. */
    async function undeclared(): Promise<boolean> {
      if (cp.capabilities.itemPacks) return false;
      if (typeof cp.getItemPacks === 'function') await expectError(() => cp.getItemPacks!('t1', '', 'm', [{ from: 0, to: 1 }]), NotSupportedError);
      return true;
    }

    it('a commit stores its packs; getItemPacks returns those of the field wholly inside the ranges, by fromSeq', async () => {
      if (await undeclared()) return;
      await packed('t1');
      const texts = async (field: string, ranges: { from: number; to: number }[]) => (await cp.getItemPacks!('t1', '', field, ranges)).map((p) => p.text);
      expect(await cp.getItemPacks!('t1', '', 'm', [{ from: 0, to: 11 }])).toEqual([pack('m', 0, 3), pack('m', 4, 7), pack('m', 8, 11)]);
      expect(await texts('n', [{ from: 0, to: 11 }])).toEqual(['n:0-3', 'n:4-7', 'n:8-11']);
      // A range that cuts a pack leaves it out; two ranges each holding one return both.
      expect(await texts('m', [{ from: 1, to: 10 }])).toEqual(['m:4-7']);
      expect(await texts('m', [{ from: 8, to: 11 }, { from: 0, to: 3 }])).toEqual(['m:0-3', 'm:8-11']);
      expect(await texts('m', [{ from: 0, to: 2 }])).toEqual([]);
      expect(await texts('x', [{ from: 0, to: 11 }])).toEqual([]);
      expect(await cp.getItemPacks!('missing', '', 'm', [{ from: 0, to: 11 }])).toEqual([]);
      expect(await cp.getItemPacks!('t1', '', 'm', [])).toEqual([]);
      // The rows are untouched by them.
      expect(await cp.getItems('t1', '', 'm', [{ from: 0, to: 11 }])).toEqual(Array.from({ length: 12 }, (_, seq) => `"m${seq}"`));
    });

    it('a pack that does not end at its commit, or is malformed, is InvalidOptionError and nothing is committed', async () => {
      if (await undeclared()) return;
      const lease = await create('t1');
      await cp.commitStep(lease, commitOf(linearPosition(0), null));
      for (const bad of [
        pack('m', 0, 2),
        { ...pack('m', 0, 1), fromSeq: -1 },
        { ...pack('m', 0, 1), fromSeq: 2 },
        { ...pack('m', 0, 1), count: 0 },
        { ...pack('m', 0, 1), text: 5 as unknown as string },
        { ...pack('m', 0, 1), field: 'a\u0000b' },
      ]) {
        await expectError(() => cp.commitStep(lease, commitOf(linearPosition(1), 0, { packs: [bad] })), InvalidOptionError);
      }
      await expectError(() => cp.commitStep(lease, commitOf(linearPosition(1), 0, { packs: [pack('m', 0, 1), pack('m', 1, 1)] })), InvalidOptionError);
      expect((await cp.getHead('t1', ''))?.seq).toBe(0);
      await cp.commitStep(lease, commitOf(linearPosition(1), 0, { packs: [pack('m', 0, 1)] }));
      expect(await cp.getItemPacks!('t1', '', 'm', [{ from: 0, to: 1 }])).toEqual([pack('m', 0, 1)]);
    });

    it('packs go with their thread: a thread of the same id made again has none', async () => {
      if (await undeclared()) return;
      const lease = await packed('t1');
      await packed('t2');
      await cp.releaseThread(lease);
      expect((await cp.deleteThread('t1')).deleted).toBe(true);
      await create('t1');
      expect(await cp.getItemPacks!('t1', '', 'm', [{ from: 0, to: 11 }])).toEqual([]);
      expect(await cp.getItemPacks!('t2', '', 'm', [{ from: 0, to: 11 }])).toHaveLength(3);
    });

    it('compaction drops every pack spanning a position it removes, below the base or dropped, and keeps the others', async () => {
      // An engine without compactThread has nothing to drop packs with.
      if ((await undeclared()) || !cp.compactThread) return;
      // Positions 0..11 with packs of spans of four, 5 forking from 3 (so that 4 is a branch compaction may drop).
      const lease = await create('t1');
      for (let seq = 0; seq <= 11; seq++) {
        const position = seq === 5 ? forked(5, 3) : linearPosition(seq);
        await cp.commitStep(lease, commitOf(position, seq === 0 ? null : seq - 1, { items: [item('m', 0, `"m${seq}"`)], ...(seq % 4 === 3 ? { packs: [pack('m', seq - 3, seq)] } : {}) }));
      }
      await cp.compactThread!(lease, { ns: '', base: { seq: 2, hash: fakeHash(3) }, snapshot: '{}', drop: [4] });
      expect(await cp.getItemPacks!('t1', '', 'm', [{ from: 0, to: 11 }])).toEqual([pack('m', 8, 11)]);
    });
  });
}
