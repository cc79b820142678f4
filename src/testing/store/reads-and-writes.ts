/**
 * @module testing/store/reads-and-writes
 * Store conformance. Reads and writes: versions that only grow, compare-and-set with ifVersion,
 * idempotent retries, deletes that keep the count going.
 * Registered by {@link storeSuite}, inside its describe block.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { Store } from '../../contracts/store.js';
import { VersionConflictError } from '../../errors.js';
import { expectError, where } from './fixtures.js';
import type { StoreSuiteContext } from './context.js';

/** Registers the tests of this feature. */
export function readWriteTests(suite: StoreSuiteContext): void {
  const { ns } = suite;
  let store: Store;

  describe('get and put', () => {
    beforeEach(() => {
      store = suite.store;
    });

    it('get of a missing item returns null', async () => {
      expect(await store.get(ns, 'missing')).toBeNull();
      expect(await store.get([], 'missing')).toBeNull();
    });

    it('put returns the item at version 1, then 2, 3; get returns the last write', async () => {
      const first = await store.put(ns, 'prefs', { theme: 'dark' });
      expect(first).toMatchObject({ namespace: ns, key: 'prefs', value: { theme: 'dark' }, version: 1 });
      expect(typeof first.createdAt).toBe('number');
      expect(first.updatedAt).toBeGreaterThanOrEqual(first.createdAt);
      expect((await store.put(ns, 'prefs', { theme: 'light' })).version).toBe(2);
      const third = await store.put(ns, 'prefs', { theme: 'blue' });
      expect(third.version).toBe(3);
      const got = await store.get(ns, 'prefs');
      expect(got).toEqual(third);
      expect(got!.createdAt).toBe(first.createdAt);
      expect(got!.updatedAt).toBeGreaterThanOrEqual(first.updatedAt);
    });

    it('keeps items apart by namespace and key', async () => {
      await store.put(['a'], 'k', 1);
      await store.put(['a', 'b'], 'k', 2);
      await store.put(['a'], 'k2', 3);
      await store.put([], 'k', 4);
      expect((await store.get(['a'], 'k'))!.value).toBe(1);
      expect((await store.get(['a', 'b'], 'k'))!.value).toBe(2);
      expect((await store.get(['a'], 'k2'))!.value).toBe(3);
      expect((await store.get([], 'k'))!).toMatchObject({ namespace: [], value: 4 });
      expect(await store.get(['b'], 'k')).toBeNull();
      expect(await store.get(['a', 'b', 'c'], 'k')).toBeNull();
    });

    it('round-trips plain and tagged values', async () => {
      const value = {
        text: 'héllo 🧭',
        n: 1.5,
        negative: -3,
        flag: false,
        none: null,
        list: [1, 'two', [3], { four: 4 }],
        at: new Date('2024-02-29T12:34:56.789Z'),
        big: 12345678901234567890123n,
        bytes: new Uint8Array([0, 1, 2, 254, 255]),
        map: new Map<unknown, unknown>([
          ['a', 1],
          [2, { nested: new Set(['x']) }],
        ]),
        set: new Set([1, 'b', 3n]),
        nested: { deeper: { dates: [new Date(0)], tag: { $t: 'not a tag' } } },
        special: [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY],
        buffer: Buffer.from('héllo'),
        bare: Object.assign(Object.create(null) as Record<string, unknown>, { k: 1 }),
        // eslint-disable-next-line no-sparse-arrays
        sparse: [1, , 3, undefined],
      };
      await store.put(ns, 'v', value);
      const got = (await store.get<typeof value>(ns, 'v'))!.value;
      expect(got).toEqual(value);
      expect(Buffer.isBuffer(got.buffer)).toBe(true);
      expect(Buffer.isBuffer(got.bytes)).toBe(false);
      expect(Object.getPrototypeOf(got.bare)).toBeNull();
      expect([0, 1, 2, 3].map((i) => i in got.sparse)).toEqual([true, false, true, true]);
      expect(got.at).toBeInstanceOf(Date);
      expect(typeof got.big).toBe('bigint');
      expect(got.bytes).toBeInstanceOf(Uint8Array);
      expect(got.map).toBeInstanceOf(Map);
      expect(got.set).toBeInstanceOf(Set);
      expect(got.nested.deeper.tag).toEqual({ $t: 'not a tag' });
      for (const scalar of ['text', 0, -0.25, true, null, 10n, new Date(5)]) {
        await store.put(ns, 'scalar', scalar);
        expect((await store.get(ns, 'scalar'))!.value).toEqual(scalar);
      }
    });

    it('stores copies: mutating a value after put, or a value returned by get, changes nothing stored', async () => {
      const value = { list: [1, 2], inner: { a: 1 }, map: new Map([['k', 'v']]) };
      const put = await store.put(ns, 'k', value);
      value.list.push(3);
      value.inner.a = 99;
      value.map.set('k', 'changed');
      (put.value as typeof value).list.push(4);
      const got = await store.get<typeof value>(ns, 'k');
      expect(got!.value).toEqual({ list: [1, 2], inner: { a: 1 }, map: new Map([['k', 'v']]) });
      got!.value.list.push(5);
      expect((await store.get<typeof value>(ns, 'k'))!.value.list).toEqual([1, 2]);
    });
  });

  describe('compare-and-set with ifVersion', () => {
    beforeEach(() => {
      store = suite.store;
    });

    it('writes when ifVersion matches the current version', async () => {
      await store.put(ns, 'k', 'a');
      const next = await store.put(ns, 'k', 'b', { ifVersion: 1 });
      expect(next).toMatchObject({ value: 'b', version: 2 });
    });

    it('throws VersionConflictError with expected and actual on a mismatch, and changes nothing', async () => {
      await store.put(ns, 'k', 'a');
      const before = await store.put(ns, 'k', 'b');
      for (const stale of [1, 3, 0]) {
        const error = await expectError(() => store.put(ns, 'k', 'lost', { ifVersion: stale }), VersionConflictError);
        expect(error.expected).toBe(stale);
        expect(error.actual).toBe(2);
        expect(error.key).toBe('k');
        expect(error.namespace).toEqual(ns);
      }
      expect(await store.get(ns, 'k')).toEqual(before);
    });

    it('ifVersion 0 writes only if the item is absent', async () => {
      const created = await store.put(ns, 'k', 'first', { ifVersion: 0 });
      expect(created.version).toBe(1);
      const error = await expectError(() => store.put(ns, 'k', 'second', { ifVersion: 0 }), VersionConflictError);
      expect(error).toMatchObject({ expected: 0, actual: 1 });
      expect((await store.get(ns, 'k'))!.value).toBe('first');
    });

    it('a non-zero ifVersion on an absent item conflicts with actual 0 and creates nothing', async () => {
      const error = await expectError(() => store.put(ns, 'k', 'x', { ifVersion: 1 }), VersionConflictError);
      expect(error).toMatchObject({ expected: 1, actual: 0 });
      expect(await store.get(ns, 'k')).toBeNull();
    });
  });

  describe('idempotent writes', () => {
    beforeEach(() => {
      store = suite.store;
    });

    it('repeating the last write\'s idempotencyKey returns the item without writing again', async () => {
      const first = await store.put(ns, 'k', { n: 1 }, { idempotencyKey: 'write-1' });
      expect(first.version).toBe(1);
      const retried = await store.put(ns, 'k', { n: 1 }, { idempotencyKey: 'write-1' });
      expect(retried).toEqual(first);
      // Even a retry carrying another value (or a stale ifVersion) is absorbed: the first write stands.
      const retriedAgain = await store.put(ns, 'k', { n: 'other' }, { idempotencyKey: 'write-1', ifVersion: 0 });
      expect(retriedAgain).toEqual(first);
      expect(await store.get(ns, 'k')).toEqual(first);
    });

    it('a different key writes, and an older key is no longer the last write', async () => {
      await store.put(ns, 'k', 1, { idempotencyKey: 'w1' });
      expect(await store.put(ns, 'k', 2, { idempotencyKey: 'w2' })).toMatchObject({ value: 2, version: 2 });
      expect(await store.put(ns, 'k', 3, { idempotencyKey: 'w1' })).toMatchObject({ value: 3, version: 3 });
      expect(await store.put(ns, 'k', 4)).toMatchObject({ value: 4, version: 4 });
      // A write without a key clears the last key: repeating w1 writes again.
      expect(await store.put(ns, 'k', 5, { idempotencyKey: 'w1' })).toMatchObject({ value: 5, version: 5 });
    });

    it('idempotency keys are per item', async () => {
      await store.put(ns, 'a', 1, { idempotencyKey: 'same' });
      expect(await store.put(ns, 'b', 2, { idempotencyKey: 'same' })).toMatchObject({ key: 'b', value: 2, version: 1 });
    });
  });

  describe('delete', () => {
    beforeEach(() => {
      store = suite.store;
    });

    it('returns true when the item existed and false otherwise', async () => {
      await store.put(ns, 'k', 1);
      expect(await store.delete(ns, 'k')).toBe(true);
      expect(await store.get(ns, 'k')).toBeNull();
      expect(await store.delete(ns, 'k')).toBe(false);
      expect(await store.delete(ns, 'never')).toBe(false);
    });

    it('honours ifVersion: a mismatch throws VersionConflictError and keeps the item', async () => {
      await store.put(ns, 'k', 1);
      await store.put(ns, 'k', 2);
      const error = await expectError(() => store.delete(ns, 'k', { ifVersion: 1 }), VersionConflictError);
      expect(error).toMatchObject({ expected: 1, actual: 2 });
      expect((await store.get(ns, 'k'))!.version).toBe(2);
      expect(await store.delete(ns, 'k', { ifVersion: 2 })).toBe(true);
      expect(await store.get(ns, 'k')).toBeNull();
      await expectError(() => store.delete(ns, 'k', { ifVersion: 2 }), VersionConflictError);
      expect(await store.delete(ns, 'k', { ifVersion: 0 })).toBe(false);
    });

    it('versions never go backwards: a re-put after a delete at version 3 gives version 4', async () => {
      for (let i = 1; i <= 3; i++) await store.put(ns, 'k', i);
      await store.delete(ns, 'k');
      const again = await store.put(ns, 'k', 'again', { ifVersion: 0 });
      expect(again).toMatchObject({ value: 'again', version: 4 });
      await store.delete(ns, 'k', { ifVersion: 4 });
      expect((await store.put(ns, 'k', 'third life')).version).toBe(5);
    });

    it('a deleted item is absent for ifVersion and is not listed', async () => {
      await store.put(ns, 'k', 1);
      await store.put(ns, 'other', 1);
      await store.delete(ns, 'k');
      await expectError(() => store.put(ns, 'k', 'x', { ifVersion: 1 }), VersionConflictError);
      expect(where(await store.list(ns))).toEqual(['user/42/other']);
    });
  });
}
