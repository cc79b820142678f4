/**
 * @module testing/store/expiry
 * Store conformance. Expiry: items written with ttlMs read as absent once expired, and
 * sweepExpired turns them into tombstones.
 * Registered by {@link storeSuite}, inside its describe block.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { Store } from '../../contracts/store.js';
import { InvalidOptionError, VersionConflictError } from '../../errors.js';
import { expectError, sleep, where } from './fixtures.js';
import type { StoreSuiteContext } from './context.js';

/** Registers the tests of this feature. */
export function expiryTests(suite: StoreSuiteContext): void {
  const { ns, options } = suite;
  let store: Store;

  describe('expiry (ttlMs) and sweepExpired', () => {
    beforeEach(() => {
      store = suite.store;
    });

    const TTL = 60;
    const expire = () => sleep(TTL + 40);

    it('an item reads as absent once its ttl has passed: get, search, listNamespaces, ifVersion, delete', async (t) => {
      t.skip(!store.capabilities.ttl, `the ${options.name} engine declares no ttl capability`);
      const item = await store.put(['t'], 'short', { v: 1 }, { ttlMs: TTL });
      await store.put(['t'], 'long', { v: 2 }, { ttlMs: 3_600_000 });
      await store.put(['t2'], 'short', 1, { ttlMs: TTL });
      expect(item.expiresAt).toBe(item.updatedAt + TTL);
      expect(await store.get(['t'], 'short')).toEqual(item);
      await expire();
      expect(await store.get(['t'], 'short')).toBeNull();
      expect(where(await store.list(['t']))).toEqual(['t/long']);
      if (store.capabilities.filters) expect(where(await store.list([], { filter: { v: { $exists: true } } }))).toEqual(['t/long']);
      expect(await store.listNamespaces()).toEqual([['t']]);
      expect(await store.delete(['t'], 'short')).toBe(false);
      await expectError(() => store.put(['t'], 'short', 'x', { ifVersion: 1 }), VersionConflictError);
      // Absent for compare-and-set, and the version goes on from where it was.
      expect(await store.put(['t'], 'short', 'again', { ifVersion: 0 })).toMatchObject({ value: 'again', version: 2, expiresAt: null });
    });

    it('each write sets its own lifetime: a write without ttlMs never expires', async (t) => {
      t.skip(!store.capabilities.ttl, `the ${options.name} engine declares no ttl capability`);
      await store.put(ns, 'k', 1, { ttlMs: TTL });
      expect(await store.put(ns, 'k', 2)).toMatchObject({ version: 2, expiresAt: null });
      await expire();
      expect(await store.get(ns, 'k')).toMatchObject({ value: 2 });
      const renewed = await store.update<number>(ns, 'k', (n) => n! + 1, { ttlMs: 3_600_000 });
      expect(renewed.expiresAt).toBe(renewed.updatedAt + 3_600_000);
    });

    it('an expired item is not absorbed as an idempotent retry: the retry writes again', async (t) => {
      t.skip(!store.capabilities.ttl, `the ${options.name} engine declares no ttl capability`);
      await store.put(ns, 'k', 1, { ttlMs: TTL, idempotencyKey: 'w' });
      await expire();
      expect(await store.put(ns, 'k', 1, { idempotencyKey: 'w' })).toMatchObject({ version: 2 });
    });

    it('sweepExpired turns expired items into tombstones and counts them; versions still go on', async (t) => {
      t.skip(!store.capabilities.sweep, `the ${options.name} engine declares no sweep capability`);
      // Long enough that the sweep before expiry runs well inside it on a loaded machine
      // (five writes and a sweep through an encrypted PostgreSQL engine can take 60 ms).
      const ttlMs = 1_000;
      await store.put(ns, 'a', 1, { ttlMs });
      await store.put(ns, 'a', 2, { ttlMs });
      await store.put(ns, 'b', 1, { ttlMs });
      await store.put(ns, 'c', 1, { ttlMs: 3_600_000 });
      await store.put(ns, 'd', 1);
      expect(await store.sweepExpired()).toBe(0);
      await sleep(ttlMs + 40);
      expect(await store.sweepExpired()).toBe(2);
      expect(await store.sweepExpired()).toBe(0);
      expect(where(await store.list(ns))).toEqual(['user/42/c', 'user/42/d']);
      expect(await store.get(ns, 'a')).toBeNull();
      expect((await store.put(ns, 'a', 3, { ifVersion: 0 })).version).toBe(3);
    });

    it('rejects a ttlMs that is not a positive integer (InvalidOptionError), writing nothing', async () => {
      for (const ttlMs of [0, -5, 1.5, Number.NaN, Number.POSITIVE_INFINITY, '100']) {
        await expectError(() => store.put(ns, 'k', 1, { ttlMs: ttlMs as number }), InvalidOptionError);
      }
      expect(await store.get(ns, 'k')).toBeNull();
    });
  });
}
