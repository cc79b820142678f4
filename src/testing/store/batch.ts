/**
 * @module testing/store/batch
 * Store conformance. Batches: every operation in order in one transaction, or none of them.
 * Registered by {@link storeSuite}, inside its describe block.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { Store, StoreItem } from '../../contracts/store.js';
import { InvalidKeyError, InvalidOptionError, UnencodableValueError, VersionConflictError } from '../../errors.js';
import { expectError, where } from './fixtures.js';
import type { StoreSuiteContext } from './context.js';

/** Registers the tests of this feature. */
export function batchTests(suite: StoreSuiteContext): void {
  const { ns } = suite;
  let store: Store;

  describe('batch', () => {
    beforeEach(() => {
      store = suite.store;
    });

    it('applies every operation in order, one result per operation; a later op sees an earlier one', async () => {
      await store.put(ns, 'gone', 'x');
      const results = await store.batch([
        { op: 'put', namespace: ns, key: 'a', value: 1 },
        { op: 'put', namespace: ns, key: 'a', value: 2, ifVersion: 1 },
        { op: 'check', namespace: ns, key: 'a', version: 2 },
        { op: 'check', namespace: ns, key: 'never', version: 0 },
        { op: 'delete', namespace: ns, key: 'gone' },
        { op: 'delete', namespace: ns, key: 'gone' },
        { op: 'put', namespace: ['other'], key: 'b', value: { deep: [1] } },
      ]);
      expect(results.map((r) => (r && typeof r === 'object' ? (r as StoreItem).version : r))).toEqual([1, 2, null, null, true, false, 1]);
      expect(where(await store.list([]))).toEqual(['other/b', 'user/42/a']);
      expect((await store.get(ns, 'a'))!.value).toBe(2);
    });

    it('is all or nothing: a failing check or ifVersion anywhere applies none of it', async () => {
      await store.put(ns, 'x', 'original');
      const before = await store.list([]);
      for (const failing of [
        { op: 'check' as const, namespace: ns, key: 'x', version: 7 },
        { op: 'put' as const, namespace: ns, key: 'x', value: 'lost', ifVersion: 5 },
        { op: 'delete' as const, namespace: ns, key: 'x', ifVersion: 9 },
      ]) {
        const error = await expectError(
          () =>
            store.batch([
              { op: 'put', namespace: ns, key: 'new', value: 1 },
              { op: 'put', namespace: ns, key: 'x', value: 'changed' },
              { op: 'delete', namespace: ns, key: 'x' },
              failing,
            ]),
          VersionConflictError,
        );
        expect(error.key).toBe('x');
      }
      expect(await store.list([])).toEqual(before);
    });

    it('validates every operation before touching anything', async () => {
      const good = { op: 'put' as const, namespace: ns, key: 'a', value: 1 };
      await expectError(() => store.batch([good, { op: 'put', namespace: ['a', ''], key: 'k', value: 1 }]), InvalidKeyError);
      await expectError(() => store.batch([good, { op: 'put', namespace: ns, key: 'k', value: () => 1 }]), UnencodableValueError);
      await expectError(() => store.batch([good, { op: 'frobnicate', namespace: ns, key: 'k' } as never]), InvalidOptionError);
      // An op that is none of the three is named as such, whatever else it lacks.
      await expect(store.batch([good, { op: 'upsert' } as never])).rejects.toThrow(/batch op 1: unknown op "upsert" \(put, delete or check\)/);
      await expectError(() => store.batch([good, { op: 'check', namespace: ns, key: 'k', version: -1 }]), InvalidOptionError);
      await expectError(() => store.batch('ops' as never), InvalidOptionError);
      expect(await store.list([])).toEqual([]);
      expect(await store.batch([])).toEqual([]);
    });
  });
}
