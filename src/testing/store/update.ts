/**
 * @module testing/store/update
 * Store conformance. update: the compare-and-set loop that never loses a concurrent write.
 * Registered by {@link storeSuite}, inside its describe block.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { Store } from '../../contracts/store.js';
import { InvalidKeyError, InvalidOptionError, UpdateConflictError } from '../../errors.js';
import { expectError } from './fixtures.js';
import type { StoreSuiteContext } from './context.js';

/** Registers the tests of this feature. */
export function updateTests(suite: StoreSuiteContext): void {
  const { ns } = suite;
  let store: Store;

  describe('update (compare-and-set loop)', () => {
    beforeEach(() => {
      store = suite.store;
    });

    it('creates an absent item (fn gets undefined and null) and then updates it', async () => {
      const seen: unknown[] = [];
      const first = await store.update<number>(ns, 'n', (current, item) => {
        seen.push([current, item]);
        return (current ?? 0) + 1;
      });
      expect(first).toMatchObject({ value: 1, version: 1 });
      const second = await store.update<number>(ns, 'n', (current, item) => {
        seen.push([current, item?.version]);
        return current! + 10;
      });
      expect(second).toMatchObject({ value: 11, version: 2 });
      expect(seen).toEqual([
        [undefined, null],
        [1, 1],
      ]);
      expect(await store.get(ns, 'n')).toEqual(second);
    });

    it('50 concurrent increments from one process lose none', async () => {
      let retries = 0;
      await Promise.all(
        Array.from({ length: 50 }, () => store.update<number>(ns, 'counter', (n = 0) => n + 1, { maxRetries: 1000, onRetry: () => void retries++ })),
      );
      expect(await store.get(ns, 'counter')).toMatchObject({ value: 50, version: 50 });
      expect(retries).toBeGreaterThanOrEqual(0);
    });

    it('gives up with UpdateConflictError after maxRetries lost rounds, writing nothing of its own', async () => {
      await store.put(ns, 'k', 0);
      let calls = 0;
      const retried: number[] = [];
      const error = await expectError(
        () =>
          store.update<number>(
            ns,
            'k',
            async (n) => {
              calls++;
              // Another writer gets in between every read and write.
              await store.put(ns, 'k', 1000 + calls);
              return n! + 1;
            },
            { maxRetries: 2, onRetry: ({ attempt }) => void retried.push(attempt) },
          ),
        UpdateConflictError,
      );
      expect(error).toMatchObject({ namespace: ns, key: 'k', attempts: 3 });
      expect(calls).toBe(3);
      expect(retried).toEqual([1, 2]);
      expect(await store.get(ns, 'k')).toMatchObject({ value: 1003, version: 4 });
    });

    it('stays a strict compare-and-set in a lastWins namespace: a lost round retries, nothing is overwritten', async () => {
      store.declare(['lw'], { merge: 'lastWins' });
      await store.put(['lw'], 'k', 0);
      let sabotage = true;
      const item = await store.update<number>(['lw'], 'k', async (n) => {
        if (sabotage) {
          sabotage = false;
          await store.put(['lw'], 'k', 100);
        }
        return n! + 1;
      });
      expect(item).toMatchObject({ value: 101, version: 3 });
      expect(await store.listOverwrites(['lw'])).toEqual([]);
    });

    it('passes ttlMs and idempotencyKey to its write; validates its options', async () => {
      const item = await store.update(ns, 'k', () => 'v', { ttlMs: 60_000, idempotencyKey: 'u1' });
      expect(item.expiresAt).toBe(item.updatedAt + 60_000);
      expect(await store.update(ns, 'k', () => 'other', { idempotencyKey: 'u1' })).toEqual(item);
      await expectError(() => store.update(ns, 'k', () => 1, { maxRetries: -1 }), InvalidOptionError);
      await expectError(() => store.update(ns, 'k', 'nope' as never), InvalidOptionError);
      await expectError(() => store.update(['a', ''], 'k', () => 1), InvalidKeyError);
    });
  });
}
