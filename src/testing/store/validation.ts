/**
 * @module testing/store/validation
 * Store conformance. Validation before storage: namespaces, keys and values are checked first,
 * a namespace and key written take at most MAX_STORE_KEY_BYTES of UTF-8 together, values
 * nest at most MAX_VALUE_DEPTH levels, and nothing is written on a failure.
 * Registered by {@link storeSuite}, inside its describe block.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import { MAX_VALUE_DEPTH } from '../../codec/tagged-json.js';
import type { Store } from '../../contracts/store.js';
import { InvalidKeyError, InvalidOptionError, UnencodableValueError, ValueTooDeepError, VersionConflictError } from '../../errors.js';
import { MAX_STORE_KEY_BYTES } from '../../internal/keys.js';
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

    describe('MAX_STORE_KEY_BYTES: the namespace and key written together', () => {
      /**
       * `count` characters of `width` bytes of UTF-8 each, from a fixed pseudo-random
       * sequence: text no index can compress, the worst case for PostgreSQL's btree entry.
       */
      const scrambled = (count: number, width: 1 | 2 | 3 | 4, seed: number): string => {
        const [lo, span] = ({ 1: [0x21, 0x5e], 2: [0x100, 0x700], 3: [0x4e00, 0x5000], 4: [0x1f300, 0x700] } as const)[width];
        let state = seed;
        let text = '';
        for (let i = 0; i < count; i++) {
          state = (Math.imul(state, 1_103_515_245) + 12_345) >>> 0;
          text += String.fromCodePoint(lo + (state >>> 8) % span);
        }
        return text;
      };
      const bytes = (text: string) => new TextEncoder().encode(text).byteLength;
      /** A namespace of `depth` labels of `width`-byte characters and a key, together exactly `total` bytes as stored (each label followed by a one-byte separator). */
      const entry = (total: number, depth: number, width: 1 | 2 | 3 | 4, seed: number): { namespace: string[]; key: string } => {
        const perLabel = Math.max(1, Math.min(256, Math.floor((total / 2 - depth) / depth / width)));
        const namespace = Array.from({ length: depth }, (_, i) => scrambled(perLabel, width, seed + i));
        const used = namespace.reduce((sum, label) => sum + bytes(label) + 1, 0);
        const rest = total - used;
        // The key: as many `width`-byte characters as fit, then one-byte ones to the exact total.
        const key = scrambled(Math.floor(rest / width), width, seed + 99) + scrambled(rest % width, 1, seed + 98);
        expect(used + bytes(key)).toBe(total);
        return { namespace, key };
      };
      const shapes: [string, number, 1 | 2 | 3 | 4][] = [
        ['one label of 3-byte characters', 1, 3],
        ['8 labels of 4-byte characters', 8, 4],
        ['300 labels of 2-byte characters', 300, 2],
        ['1,000 labels of one character', 1000, 1],
      ];

      it('is 2048 bytes', () => {
        expect(MAX_STORE_KEY_BYTES).toBe(2048);
      });

      for (const [shape, depth, width] of shapes) {
        it(`stores an item at the limit and refuses one byte more with InvalidKeyError in put, update and batch: ${shape}`, async () => {
          const at = entry(MAX_STORE_KEY_BYTES, depth, width, depth * 7 + width);
          const stored = await store.put(at.namespace, at.key, 'fits');
          expect((await store.get(at.namespace, at.key))!.value).toBe('fits');
          expect((await store.update(at.namespace, at.key, () => 'updated')).version).toBe(stored.version + 1);
          expect(await store.batch([{ op: 'put', namespace: at.namespace, key: at.key, value: 'batched' }])).toHaveLength(1);

          const over = { namespace: at.namespace, key: `${at.key}x` };
          const error = await expectError(() => store.put(over.namespace, over.key, 'too long'), InvalidKeyError);
          expect(error.message).toContain(`take ${MAX_STORE_KEY_BYTES + 1} bytes of UTF-8 together`);
          await expectError(() => store.update(over.namespace, over.key, () => 'too long'), InvalidKeyError);
          await expectError(() => store.batch([{ op: 'put', namespace: ns, key: 'first', value: 1 }, { op: 'put', namespace: over.namespace, key: over.key, value: 'too long' }]), InvalidKeyError);
          // Past what PostgreSQL's index takes (about 2,700 bytes): refused the same way, never a driver error.
          const far = entry(2800, depth, width, depth * 7 + width + 1);
          await expectError(() => store.put(far.namespace, far.key, 'far too long'), InvalidKeyError);
          // Nothing of the refused writes landed, and reading or deleting the long key finds nothing (no driver error).
          expect(await store.get(ns, 'first')).toBeNull();
          expect(await store.get(over.namespace, over.key)).toBeNull();
          expect(await store.delete(over.namespace, over.key)).toBe(false);
          // Past PostgreSQL's index limit too: such an item cannot exist, so it is absent to every read, delete and check.
          expect(await store.get(far.namespace, far.key)).toBeNull();
          expect(await store.delete(far.namespace, far.key)).toBe(false);
          expect(await store.delete(far.namespace, far.key, { ifVersion: 0 })).toBe(false);
          expect(await store.batch([{ op: 'check', namespace: far.namespace, key: far.key, version: 0 }, { op: 'delete', namespace: far.namespace, key: far.key }])).toEqual([null, false]);
          await expectError(() => store.batch([{ op: 'check', namespace: far.namespace, key: far.key, version: 1 }]), VersionConflictError);
          expect((await store.get(at.namespace, at.key))!.value).toBe('batched');
        });
      }
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

    it('reads take null options as none, and refuse options that are not an object with InvalidOptionError', async () => {
      await store.put(ns, 'k', 1);
      // A caller passing null for "no options" gets the defaults, not a TypeError.
      const none = null as never;
      expect((await store.search(ns, none)).items.map((i) => i.key)).toEqual(['k']);
      expect((await store.list(ns, none)).map((i) => i.key)).toEqual(['k']);
      expect(await store.listNamespaces(none)).toContainEqual(ns);
      expect(Array.isArray(await store.listOverwrites(ns, none))).toBe(true);
      for (const bad of [5, 'limit', [1]] as never[]) {
        await expectError(() => store.search(ns, bad), InvalidOptionError);
        await expectError(() => store.listNamespaces(bad), InvalidOptionError);
        await expectError(() => store.listOverwrites(ns, bad), InvalidOptionError);
      }
      // A principal's view takes null options as the store does.
      expect(await store.as('reader').listNamespaces(none)).toContainEqual(ns);
    });

    it('writes take null options as none, and refuse options that are not an object with InvalidOptionError, writing nothing', async () => {
      const none = null as never;
      const first = await store.put(ns, 'k', 1, none);
      expect(first.version).toBe(1);
      expect((await store.update<number>(ns, 'k', (n = 0) => n + 1, none)).value).toBe(2);
      for (const bad of [5, 'ifVersion', [1], true] as never[]) {
        await expectError(() => store.put(ns, 'k', 'bad', bad), InvalidOptionError);
        await expectError(() => store.put(ns, 'new', 'bad', bad), InvalidOptionError);
        await expectError(() => store.update(ns, 'k', () => 'bad', bad), InvalidOptionError);
        await expectError(() => store.delete(ns, 'k', bad), InvalidOptionError);
      }
      expect((await store.get(ns, 'k'))!.value).toBe(2);
      expect(await store.get(ns, 'new')).toBeNull();
      expect(await store.delete(ns, 'k', none)).toBe(true);
    });

    it('a call or batch op given an option it does not take (a misspelt ifVersion or limit) is InvalidOptionError, and nothing is written', async () => {
      const first = await store.put(ns, 'k', 1);
      const loose = store as unknown as Record<string, (...args: unknown[]) => Promise<unknown>>;
      const calls: [string, () => Promise<unknown>][] = [
        ['put', () => loose.put!(ns, 'k', 'bad', { ifversion: first.version })],
        ['put ttl', () => loose.put!(ns, 'k', 'bad', { ttl: 1000 })],
        ['delete', () => loose.delete!(ns, 'k', { ifversion: first.version })],
        ['update', () => loose.update!(ns, 'k', () => 'bad', { retries: 3 })],
        ['batch put', () => loose.batch!([{ op: 'put', namespace: ns, key: 'k', value: 'bad', ifversion: first.version }])],
        ['batch check', () => loose.batch!([{ op: 'check', namespace: ns, key: 'k', ifVersion: first.version }, { op: 'put', namespace: ns, key: 'k', value: 'bad' }])],
        ['search', () => loose.search!(ns, { limt: 1 })],
        ['listNamespaces', () => loose.listNamespaces!({ prefx: ns })],
        ['listOverwrites', () => loose.listOverwrites!(ns, { after: 1 })],
      ];
      for (const [label, call] of calls) {
        const error = await expectError(call, InvalidOptionError);
        expect(error.message, label).toMatch(/unknown option/);
      }
      expect(() => store.declare(ns, { merge: 'lastWins', when: 'always' } as never)).toThrow(InvalidOptionError);
      expect(await store.get(ns, 'k')).toMatchObject({ value: 1, version: first.version });
    });
  });
}
