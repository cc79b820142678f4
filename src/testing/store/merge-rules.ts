/**
 * @module testing/store/merge-rules
 * Store conformance. Merge rules: reject, lastWins with its overwrite records, and merge functions.
 * Registered by {@link storeSuite}, inside its describe block.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { Store } from '../../contracts/store.js';
import { InvalidKeyError, InvalidOptionError, VersionConflictError } from '../../errors.js';
import { expectError } from './fixtures.js';
import type { StoreSuiteContext } from './context.js';

/** Registers the tests of this feature. */
export function mergeRuleTests(suite: StoreSuiteContext): void {
  let store: Store;

  describe('merge rules: concurrent writers never lose an update unless declared', () => {
    beforeEach(() => {
      store = suite.store;
    });

    /** Two writers read version 1, then both write based on it. */
    async function twoWriters(namespace: string[]) {
      await store.put(namespace, 'doc', { tags: ['base'] });
      const read = (await store.get<{ tags: string[] }>(namespace, 'doc'))!;
      const first = await store.put(namespace, 'doc', { tags: [...read.value.tags, 'first'] }, { ifVersion: read.version });
      return { read, first, second: () => store.put(namespace, 'doc', { tags: [...read.value.tags, 'second'] }, { ifVersion: read.version }) };
    }

    it('reject (the default): the second writer gets VersionConflictError and the first write stands', async () => {
      expect(store.mergeRuleOf(['anything'])).toBe('reject');
      const { first, second } = await twoWriters(['plain']);
      await expectError(second, VersionConflictError);
      expect(await store.get(['plain'], 'doc')).toEqual(first);
      expect(await store.listOverwrites([])).toEqual([]);
    });

    it('lastWins: the second write wins and the value it replaced is kept as an overwrite record', async () => {
      store.declare(['prefs'], { merge: 'lastWins' });
      const { first, second } = await twoWriters(['prefs', 'u1']);
      const won = await second();
      expect(won).toMatchObject({ value: { tags: ['base', 'second'] }, version: 3 });
      const records = await store.listOverwrites(['prefs']);
      expect(records).toEqual([
        {
          id: expect.any(Number),
          namespace: ['prefs', 'u1'],
          key: 'doc',
          operation: 'put',
          expectedVersion: 1,
          overwritten: { value: first.value, version: 2, updatedAt: first.updatedAt },
          version: 3,
          at: won.updatedAt,
        },
      ]);
      // A write that conflicts with nothing, or declares no basis, records nothing.
      await store.put(['prefs', 'u1'], 'doc', 'x', { ifVersion: 3 });
      await store.put(['prefs', 'u1'], 'doc', 'y');
      expect(await store.listOverwrites(['prefs'])).toHaveLength(1);
    });

    it('lastWins: a stale versioned delete deletes anyway and keeps the value it removed', async () => {
      store.declare(['prefs'], { merge: 'lastWins' });
      await store.put(['prefs'], 'k', 'one');
      await store.put(['prefs'], 'k', 'two');
      expect(await store.delete(['prefs'], 'k', { ifVersion: 1 })).toBe(true);
      expect(await store.get(['prefs'], 'k')).toBeNull();
      const [record] = await store.listOverwrites(['prefs']);
      expect(record).toMatchObject({ operation: 'delete', expectedVersion: 1, overwritten: { value: 'two', version: 2 }, version: 2 });
    });

    it('overwrite records page by id and stay under their prefix', async () => {
      store.declare(['lw'], { merge: 'lastWins' });
      store.declare(['lw-x'], { merge: 'lastWins' });
      for (const namespace of [['lw', 'a'], ['lw', 'b'], ['lw-x']]) {
        await store.put(namespace, 'k', 0);
        await store.put(namespace, 'k', 1, { ifVersion: 0 });
      }
      const all = await store.listOverwrites(['lw']);
      expect(all.map((r) => r.namespace)).toEqual([['lw', 'a'], ['lw', 'b']]);
      expect(all[0]!.id).toBeLessThan(all[1]!.id);
      expect(await store.listOverwrites(['lw'], { afterId: all[0]!.id })).toEqual([all[1]]);
      expect(await store.listOverwrites(['lw'], { limit: 1 })).toEqual([all[0]]);
      expect(await store.listOverwrites([])).toHaveLength(3);
    });

    it('a merge function combines the conflicting write with the current value (in its CAS loop)', async () => {
      const calls: unknown[] = [];
      store.declare(['sets'], {
        merge: (current: { tags: string[] } | undefined, incoming: { tags: string[] }, info) => {
          calls.push({ current, incoming, info });
          return { tags: [...new Set([...(current?.tags ?? []), ...incoming.tags])].sort() };
        },
      });
      const { second } = await twoWriters(['sets']);
      const merged = await second();
      expect(merged).toMatchObject({ value: { tags: ['base', 'first', 'second'] }, version: 3 });
      expect(calls).toEqual([
        { current: { tags: ['base', 'first'] }, incoming: { tags: ['base', 'second'] }, info: { namespace: ['sets'], key: 'doc', currentVersion: 2 } },
      ]);
      // Based on a version that was since deleted: merged with "absent".
      await store.delete(['sets'], 'doc');
      expect((await store.put(['sets'], 'doc', { tags: ['z'] }, { ifVersion: 3 })).value).toEqual({ tags: ['z'] });
    });

    it('a merge function keeps every writer of 20 concurrent read-modify-writes', async () => {
      store.declare(['sets'], { merge: (current: string[] | undefined, incoming: string[]) => [...new Set([...(current ?? []), ...incoming])].sort() });
      await store.put(['sets'], 'members', []);
      await Promise.all(
        Array.from({ length: 20 }, async (_, i) => {
          const read = (await store.get<string[]>(['sets'], 'members'))!;
          await store.put(['sets'], 'members', [...read.value, `m${String(i).padStart(2, '0')}`], { ifVersion: read.version });
        }),
      );
      expect((await store.get<string[]>(['sets'], 'members'))!.value).toEqual(Array.from({ length: 20 }, (_, i) => `m${String(i).padStart(2, '0')}`));
    });

    it('the longest declared prefix wins, bounded at label boundaries; [] sets the default', async () => {
      const fn = (_c: unknown, incoming: unknown) => incoming;
      store.declare(['a'], { merge: 'lastWins' });
      store.declare(['a', 'b'], { merge: fn });
      expect(store.mergeRuleOf(['a'])).toBe('lastWins');
      expect(store.mergeRuleOf(['a', 'x', 'y'])).toBe('lastWins');
      expect(store.mergeRuleOf(['a', 'b', 'c'])).toBe(fn);
      expect(store.mergeRuleOf(['a', 'bc'])).toBe('lastWins');
      expect(store.mergeRuleOf(['ab'])).toBe('reject');
      store.declare([], { merge: 'lastWins' });
      expect(store.mergeRuleOf(['ab'])).toBe('lastWins');
      await expectError(async () => store.declare(['x'], { merge: 'firstWins' as never }), InvalidOptionError);
      await expectError(async () => store.declare(['x', ''], { merge: 'reject' }), InvalidKeyError);
    });

    it('rules apply to batch operations too; checks stay strict', async () => {
      store.declare(['lw'], { merge: 'lastWins' });
      await store.put(['lw'], 'k', 'v1');
      await store.put(['lw'], 'k', 'v2');
      const [item] = await store.batch([{ op: 'put', namespace: ['lw'], key: 'k', value: 'v3', ifVersion: 1 }]);
      expect(item).toMatchObject({ value: 'v3', version: 3 });
      await expectError(() => store.batch([{ op: 'check', namespace: ['lw'], key: 'k', version: 1 }]), VersionConflictError);
      expect(await store.listOverwrites(['lw'])).toHaveLength(1);
    });
  });
}
