/**
 * @module testing/store/purge
 * Store conformance. `purgeNamespaces`: every row of the namespaces it is told to purge
 * goes for good (live items, the tombstones deleted and expired items leave, overwrite
 * records), and nothing else does.
 * Registered by {@link storeSuite}, inside its describe block.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { Store } from '../../contracts/store.js';
import { InvalidOptionError, NotSupportedError } from '../../errors.js';
import { expectError, sleep } from './fixtures.js';
import type { StoreSuiteContext } from './context.js';

/** Whether the store purges: it has `purgeNamespaces`, and not BaseStore's default, which an engine's store of its own may keep. */
async function purges(store: Store): Promise<boolean> {
  if (typeof store.purgeNamespaces !== 'function') return false;
  try {
    await store.purgeNamespaces(() => false);
    return true;
  } catch (error) {
    if (NotSupportedError.is(error)) return false;
    throw error;
  }
}

/** Registers the tests of this feature. */
export function purgeTests(suite: StoreSuiteContext): void {
  let store: Store;

  /** Two tenants' namespaces, each with a live item, a deleted one and (with ttl) an expired one, and one holding only a deleted item. */
  async function seed(tenant: string): Promise<void> {
    await store.put(['tenants', tenant, 'notes'], 'live', { text: `${tenant} live` });
    await store.put(['tenants', tenant, 'notes'], 'deleted', { text: `${tenant} deleted` });
    await store.delete(['tenants', tenant, 'notes'], 'deleted');
    await store.put(['tenants', tenant, 'emptied'], 'only', 1);
    await store.delete(['tenants', tenant, 'emptied'], 'only');
    if (store.capabilities.ttl) await store.put(['tenants', tenant, 'notes'], 'expired', 1, { ttlMs: 30 });
  }

  describe('purgeNamespaces', () => {
    beforeEach(() => {
      store = suite.store;
    });

    it('deletes every row of the namespaces it matches, tombstones included: a key written again starts at version 1', async () => {
      // A store without a purge has nothing to check here (erasure reports what it leaves).
      if (!(await purges(store))) return;
      await seed('a');
      await seed('b');
      if (store.capabilities.ttl) await sleep(60);
      const seen: string[][] = [];
      const purged = await store.purgeNamespaces!((ns) => {
        seen.push(ns);
        return ns[1] === 'a';
      });
      // It was offered the namespace with no live item too.
      expect(seen).toContainEqual(['tenants', 'a', 'emptied']);
      expect(purged.namespaces).toEqual([
        ['tenants', 'a', 'emptied'],
        ['tenants', 'a', 'notes'],
      ]);
      expect(purged).toMatchObject({ items: 1, tombstones: store.capabilities.ttl ? 3 : 2, overwrites: 0 });
      expect(await store.list(['tenants', 'a'])).toEqual([]);
      for (const [ns, key] of [
        [['tenants', 'a', 'notes'], 'live'],
        [['tenants', 'a', 'notes'], 'deleted'],
        [['tenants', 'a', 'emptied'], 'only'],
      ] as const) {
        expect((await store.put([...ns], key, 'again')).version).toBe(1);
      }
      // The other tenant's rows are untouched: its live item stays, its deleted ones keep their versions.
      expect(await store.get(['tenants', 'b', 'notes'], 'live')).toMatchObject({ value: { text: 'b live' }, version: 1 });
      expect((await store.put(['tenants', 'b', 'notes'], 'deleted', 'again')).version).toBe(2);
      expect((await store.put(['tenants', 'b', 'emptied'], 'only', 'again')).version).toBe(2);
    });

    it('deletes the overwrite records of a lastWins namespace with its rows', async () => {
      // A store without a purge has nothing to check here (erasure reports what it leaves).
      if (!(await purges(store))) return;
      for (const tenant of ['a', 'b']) {
        const ns = ['tenants', tenant, 'wins'];
        store.declare(ns, { merge: 'lastWins' });
        const first = await store.put(ns, 'k', 1);
        await store.put(ns, 'k', 2);
        await store.put(ns, 'k', 3, { ifVersion: first.version });
      }
      expect(await store.listOverwrites(['tenants', 'a'])).toHaveLength(1);
      const purged = await store.purgeNamespaces!((ns) => ns[1] === 'a');
      expect(purged).toMatchObject({ namespaces: [['tenants', 'a', 'wins']], items: 1, tombstones: 0, overwrites: 1 });
      expect(await store.listOverwrites(['tenants', 'a'])).toEqual([]);
      expect(await store.listOverwrites(['tenants', 'b'])).toHaveLength(1);
    });

    it('a namespace left with only overwrite records is offered and purged', async () => {
      // A store without a purge has nothing to check here (erasure reports what it leaves).
      if (!(await purges(store))) return;
      const ns = ['tenants', 'a', 'records'];
      store.declare(ns, { merge: 'lastWins' });
      const item = await store.put(ns, 'k', 1);
      await store.put(ns, 'k', 2);
      // A lastWins delete at an old version deletes anyway and keeps the value it removed.
      await store.delete(ns, 'k', { ifVersion: item.version });
      expect(await store.listNamespaces()).toEqual([]);
      const purged = await store.purgeNamespaces!(() => true);
      expect(purged).toMatchObject({ namespaces: [ns], items: 0, tombstones: 1, overwrites: 1 });
      expect(await store.listOverwrites([])).toEqual([]);
    });

    it('matching nothing deletes nothing; a match that is not a function is InvalidOptionError', async () => {
      // A store without a purge has nothing to check here (erasure reports what it leaves).
      if (!(await purges(store))) return;
      await seed('a');
      expect(await store.purgeNamespaces!(() => false)).toEqual({ namespaces: [], items: 0, tombstones: 0, overwrites: 0 });
      expect(await store.get(['tenants', 'a', 'notes'], 'live')).toMatchObject({ version: 1 });
      await expectError(() => store.purgeNamespaces!(['tenants', 'a'] as never), InvalidOptionError);
      expect(await store.get(['tenants', 'a', 'notes'], 'live')).toMatchObject({ version: 1 });
    });
  });
}
