/**
 * @module testing/store/validation
 * Store conformance. Validation before storage: namespaces, keys and values are checked first,
 * values nest at most MAX_VALUE_DEPTH levels, and nothing is written on a failure.
 * Registered by {@link storeSuite}, inside its describe block.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { MAX_VALUE_DEPTH } from '../../codec/tagged-json.js';
import type { Store } from '../../contracts/store.js';
import { InvalidKeyError, UnencodableValueError, ValueTooDeepError } from '../../errors.js';
import { expectError, where } from './fixtures.js';
import type { StoreSuiteContext } from './context.js';

/** Registers the tests of this feature. */
export function validationTests(suite: StoreSuiteContext): void {
  const { ns } = suite;
  let store: Store;

  describe('validation', () => {
    beforeEach(() => {
      store = suite.store;
    });

    const badNamespaces: [string, unknown][] = [
      ['an empty label', ['a', '']],
      ['a control character', ['a\nb']],
      ['the separator \\u001f', ['a\u001fb']],
      ['a NUL', ['a\u0000']],
      ['a label over 256 characters', ['x'.repeat(257)]],
      ['a non-array', 'tenant'],
      ['a non-string label', ['a', 7]],
    ];
    for (const [label, namespace] of badNamespaces) {
      it(`rejects a namespace with ${label} (InvalidKeyError) in get, put, delete and list`, async () => {
        const bad = namespace as string[];
        await expectError(() => store.put(bad, 'k', 1), InvalidKeyError);
        await expectError(() => store.get(bad, 'k'), InvalidKeyError);
        await expectError(() => store.delete(bad, 'k'), InvalidKeyError);
        await expectError(() => store.list(bad), InvalidKeyError);
        expect(await store.list([])).toEqual([]);
      });
    }

    const badKeys: [string, unknown][] = [
      ['empty', ''],
      ['a control character', 'a\tb'],
      ['a right-to-left override', 'a\u202Eb'],
      ['the separator \\u001f', 'a\u001fb'],
      ['over 1024 characters', 'k'.repeat(1025)],
      ['not a string', 42],
    ];
    for (const [label, key] of badKeys) {
      it(`rejects a key that is ${label} (InvalidKeyError) in get, put and delete`, async () => {
        const bad = key as string;
        await expectError(() => store.put(ns, bad, 1), InvalidKeyError);
        await expectError(() => store.get(ns, bad), InvalidKeyError);
        await expectError(() => store.delete(ns, bad), InvalidKeyError);
        expect(await store.list([])).toEqual([]);
      });
    }

    it('accepts keys and labels at their length limits, with punctuation and Unicode', async () => {
      const key = 'k'.repeat(1024);
      const label = 'l'.repeat(256);
      await store.put([label, "it's/../%00 ✓"], key, 1);
      expect((await store.get([label, "it's/../%00 ✓"], key))!.value).toBe(1);
    });

    class Point {
      constructor(readonly x: number) {}
    }
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    const unencodable: [string, unknown][] = [
      ['a function', { f: () => 1 }],
      ['a class instance', { p: new Point(1) }],
      ['a cycle', cyclic],
      ['a symbol', [Symbol('s')]],
    ];
    for (const [label, value] of unencodable) {
      it(`rejects ${label} with UnencodableValueError and stores nothing`, async () => {
        await expectError(() => store.put(ns, 'new', value), UnencodableValueError);
        expect(await store.get(ns, 'new')).toBeNull();
        const kept = await store.put(ns, 'kept', 'original');
        await expectError(() => store.put(ns, 'kept', value), UnencodableValueError);
        expect(await store.get(ns, 'kept')).toEqual(kept);
      });
    }
  });

  describe('nesting depth (MAX_VALUE_DEPTH)', () => {
    beforeEach(() => {
      store = suite.store;
    });

    /** A value whose stored text nests `levels` objects deep. */
    const nested = (levels: number): unknown => {
      let value: unknown = 'bottom';
      for (let i = 0; i < levels; i++) value = { a: value };
      return value;
    };

    it('stores a value nested MAX_VALUE_DEPTH levels and reads it back; filtered searches over its namespace still work', async () => {
      const deep = nested(MAX_VALUE_DEPTH);
      await store.put(['deep'], 'limit', deep);
      await store.put(['deep'], 'flat', { a: 1 });
      expect((await store.get(['deep'], 'limit'))!.value).toEqual(deep);
      expect(where(await store.list(['deep']))).toEqual(['deep/flat', 'deep/limit']);
      if (store.capabilities.filters) {
        expect(where(await store.list(['deep'], { filter: { a: 1 } }))).toEqual(['deep/flat']);
        expect(where(await store.list(['deep'], { filter: { a: { $exists: true } } }))).toEqual(['deep/flat', 'deep/limit']);
      }
    });

    it('rejects one level more with ValueTooDeepError in put, update and batch, before anything is written', async () => {
      const kept = await store.put(ns, 'kept', 'original');
      const tooDeep = nested(MAX_VALUE_DEPTH + 1);
      for (const key of ['new', 'kept']) {
        const error = await expectError(() => store.put(ns, key, tooDeep), ValueTooDeepError);
        expect(error.limit).toBe(MAX_VALUE_DEPTH);
        expect(error.path.startsWith(`store ${ns.join('/')}/${key}.a.a`)).toBe(true);
        await expectError(() => store.update(ns, key, () => tooDeep), ValueTooDeepError);
        await expectError(() => store.batch([{ op: 'put', namespace: ns, key: 'other', value: 1 }, { op: 'put', namespace: ns, key, value: tooDeep }]), ValueTooDeepError);
      }
      expect(await store.get(ns, 'new')).toBeNull();
      expect(await store.get(ns, 'other')).toBeNull();
      expect(await store.get(ns, 'kept')).toEqual(kept);
    });

    it('rejects 10,000 levels with ValueTooDeepError, not a RangeError', async () => {
      const error = await expectError(() => store.put(ns, 'k', nested(10_000)), ValueTooDeepError);
      expect(error).not.toBeInstanceOf(RangeError);
      expect(await store.get(ns, 'k')).toBeNull();
    });
  });
}
