/**
 * @module testing/artifact-store.suite
 * The conformance suite every {@link ArtifactStore} backend runs: content
 * addressing, idempotency by key, verification on read, corruption detection,
 * hostile keys, delete and list. Call it from a vitest test file; it registers
 * its own `describe`/`it` blocks.
 *
 * @example
 * ```ts
 * import { artifactStoreSuite } from 'cairn/testing';
 * import { memoryArtifacts, type MemoryArtifactStore } from 'cairn/memory';
 *
 * artifactStoreSuite<MemoryArtifactStore>({
 *   name: 'memory',
 *   create: () => memoryArtifacts(),
 *   corrupt: (store, ref, bytes) => store.corruptForTesting(ref.id, bytes),
 * });
 * ```
 */
import { createHash, randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ArtifactRef, ArtifactStore } from '../contracts/artifact-store.js';
import { ArtifactIntegrityError, ArtifactNotFoundError, InvalidKeyError } from '../errors.js';

/** Options of {@link artifactStoreSuite}. */
export interface ArtifactStoreSuiteOptions<S extends ArtifactStore> {
  /** Shown in the test names, e.g. `fs`. */
  name: string;
  /** A fresh, empty store; called before every test. */
  create: () => Promise<S> | S;
  /** Releases what `create` made (a temp dir, a bucket); called after every test, after `close()`. */
  destroy?: (store: S) => Promise<void> | void;
  /**
   * Replaces the stored bytes of `ref` with `bytes` behind the store's back, leaving
   * the ref as it is, the way a disk fault or a stray write would. Without it the
   * corruption tests are skipped (and say so).
   */
  corrupt?: (store: S, ref: ArtifactRef, bytes: Uint8Array) => Promise<void> | void;
}

/** One value that must be rejected as an artifact key, with what makes it hostile. */
export interface HostileKey {
  why: string;
  key: unknown;
}

/**
 * More than 200 values that no backend may accept as an artifact key: traversal,
 * absolute paths, empty and dot segments, NUL and control characters, backslashes,
 * percent-encoded traversal, look-alike unicode, over-long strings and non-strings.
 * Each string form also appears nested under and above a valid segment.
 *
 * @example
 * ```ts
 * for (const { key } of hostileArtifactKeys()) await expect(store.head(key as string)).rejects.toThrow();
 * ```
 */
export function hostileArtifactKeys(): HostileKey[] {
  const strings: HostileKey[] = [];
  const add = (why: string, ...keys: string[]) => keys.forEach((key) => strings.push({ why, key }));

  add('empty', '');
  add('dot segment', '.', './a', 'a/.', 'a/./b', './.', '/./');
  add('traversal', '..', '../x', '../../etc/passwd', '../'.repeat(12) + 'tmp/x', 'a/..', 'a/../b', 'a/../../b', '../', '/..', '../..');
  add('absolute or empty segment', '/', '//', '/abs', '/etc/passwd', '///etc/passwd', '//server/share', 'a/', 'a//b', 'a/b/', 'file:///etc/passwd', 'http://host/x');
  add('backslash', '\\', '\\abs', 'a\\b', '..\\x', '..\\..\\x', 'a\\..\\b', 'C:\\Windows\\x', '\\\\server\\share', '.\\a', 'a\\');
  add('percent-encoded traversal', '%2e%2e', '%2E%2E', '%2e%2e/x', '..%2f', '%2e%2e%2f', '%2e%2e%5c', '..%5c', '%252e%252e', '%c0%ae%c0%ae', '%2f', '%5c', 'a%2fb', '%00', '%2e');
  for (let code = 0; code < 0x20; code++) add('control character', `a${String.fromCharCode(code)}b`);
  add('control character', '\u007f', 'a\u007f', '..\u0000', 'a\u0000/../b', '\u0000', 'a\n', '\ta', 'a\r\n');
  for (const char of ` !"#$%&'()*,;<>?[]^\`{|}~`) add('character outside the allowed set', `a${char}b`);
  add('surrounding space', ' a', 'a ', '.. ', ' ..', '. ', 'a /b');
  add(
    'look-alike or invisible unicode',
    '\u2024\u2024', // one dot leader
    '\u2025', // two dot leader
    '\uFF0E\uFF0E', // fullwidth full stop
    '\uFE52\uFE52', // small full stop
    '\u3002\u3002', // ideographic full stop
    'a\uFF0Fb', // fullwidth solidus
    'a\u2215b', // division slash
    'a\u2044b', // fraction slash
    'a\u29F8b', // big solidus
    'a\uFF3Cb', // fullwidth reverse solidus
    'a\u200Bb', // zero-width space
    'a\u200Db', // zero-width joiner
    'a\u202Etxt.exe', // right-to-left override
    '\uFEFFa', // byte order mark
    'a\u00A0b', // no-break space
    'a\u0307', // combining dot above
    '\u0430', // cyrillic a
    'caf\u00E9', // precomposed e acute
    'cafe\u0301', // combining acute
    '\u212A', // kelvin sign (folds to K)
    '\u0130', // dotted capital I
    '\uFB00', // ff ligature
    '\uFF41', // fullwidth a
    '\uD800', // lone high surrogate
    'a\uDC00', // lone low surrogate
    '\u{1F600}',
    'a\u0085b', // next line
    'a\u2028b', // line separator
  );
  add('too long', 'a'.repeat(513), 'a'.repeat(1024), 'a'.repeat(100_000), `${'x'.repeat(256)}/${'y'.repeat(256)}`, `${'ab/'.repeat(171)}ab`, 'a/'.repeat(300));

  // Each string hostile in itself stays hostile nested under, above or between valid segments.
  const nested = strings.flatMap(({ why, key }) => [
    { why: `${why}, under a valid segment`, key: `ok/${key as string}` },
    { why: `${why}, above a valid segment`, key: `${key as string}/ok` },
    { why: `${why}, between valid segments`, key: `ok/${key as string}/ok` },
  ]);

  const cyclic: Record<string, unknown> = {};
  cyclic.self = cyclic;
  const nonStrings: HostileKey[] = [
    undefined,
    null,
    0,
    1,
    -1,
    Number.NaN,
    Number.POSITIVE_INFINITY,
    true,
    false,
    {},
    [],
    ['a'],
    ['..'],
    Symbol('a'),
    10n,
    () => 'a',
    new String('a'),
    { toString: () => 'a' },
    cyclic,
    new Uint8Array([97]),
    new Date(0),
    Object.create(null),
  ].map((key) => ({ why: `not a string (${typeof key})`, key }));

  const seen = new Set<unknown>();
  return [...strings, ...nested, ...nonStrings].filter(({ key }) => (seen.has(key) ? false : (seen.add(key), true)));
}

/** Ref ids that name no key and no digest; `get` and `delete` must reject them. */
function forgedIds(): unknown[] {
  const zeros = '0'.repeat(64);
  return [
    '',
    'sha256:',
    'key:',
    zeros,
    `sha256:${'A'.repeat(64)}`,
    `sha256:${'g'.repeat(64)}`,
    `sha256:${'0'.repeat(63)}`,
    `sha256:${'0'.repeat(65)}`,
    `sha256:${zeros}\u0000`,
    `sha256:../../${zeros.slice(6)}`,
    `sha256:${zeros}/../x`,
    `sha512:${zeros}`,
    `SHA256:${zeros}`,
    `KEY:a`,
    'a',
    undefined,
    null,
    42,
    {},
  ];
}

/**
 * Registers the artifact store conformance tests for one backend. Each test gets a
 * fresh store from `create`, and `destroy` cleans up after it.
 *
 * @example
 * ```ts
 * artifactStoreSuite({
 *   name: 'fs',
 *   create: async () => fsArtifacts(await mkdtemp(join(tmpdir(), 'cairn-'))),
 *   destroy: (store) => rm(store.root, { recursive: true, force: true }),
 * });
 * ```
 */
export function artifactStoreSuite<S extends ArtifactStore>(options: ArtifactStoreSuiteOptions<S>): void {
  const { name, create, destroy, corrupt } = options;

  describe(`ArtifactStore conformance: ${name}`, () => {
    let store: S;

    beforeEach(async () => {
      store = await create();
    });

    afterEach(async () => {
      await store.close?.();
      await destroy?.(store);
    });

    it('names its backend', () => {
      expect(typeof store.backend).toBe('string');
      expect(store.backend.length).toBeGreaterThan(0);
    });

    describe('put (content-addressed)', () => {
      it('returns a ref whose id is sha256:<digest of the bytes>, with size and media type', async () => {
        const bytes = pattern(100, 1);
        const ref = await store.put(bytes, { mediaType: 'application/octet-stream' });
        expect(ref).toEqual({ id: `sha256:${sha256(bytes)}`, sha256: sha256(bytes), media_type: 'application/octet-stream', size_bytes: 100 });
      });

      it('gives identical bytes the same ref and stores them once', async () => {
        const first = await store.put(pattern(64, 2), { mediaType: 'application/octet-stream' });
        const second = await store.put(pattern(64, 2), { mediaType: 'application/octet-stream' });
        expect(second).toEqual(first);
        expect(await store.list()).toEqual([first]);
      });

      it('returns the first ref when identical bytes come back with another media type', async () => {
        const first = await store.put('same text', { mediaType: 'text/plain' });
        const second = await store.put('same text', { mediaType: 'text/markdown' });
        expect(second).toEqual(first);
      });

      it('gives different bytes different refs', async () => {
        const a = await store.put('a', { mediaType: 'text/plain' });
        const b = await store.put('b', { mediaType: 'text/plain' });
        expect(a.id).not.toBe(b.id);
        expect(await store.list()).toHaveLength(2);
      });

      it('stores a string as its UTF-8 bytes', async () => {
        const text = 'héllo ✓ 🌍';
        const utf8 = new TextEncoder().encode(text);
        const ref = await store.put(text, { mediaType: 'text/plain; charset=utf-8' });
        expect(ref.sha256).toBe(sha256(utf8));
        expect(ref.size_bytes).toBe(utf8.byteLength);
        expectSameBytes(await store.get(ref), utf8);
      });

      it('with options.key stores under the key, exactly as putNamed', async () => {
        const ref = await store.put('keyed', { mediaType: 'text/plain', key: 'via/put' });
        expect(ref.id).toBe('key:via/put');
        expect(await store.head('via/put')).toEqual(ref);
        expect(await store.putNamed('via/put', 'other', { mediaType: 'text/plain' })).toEqual(ref);
      });

      it('rejects a malformed media type with InvalidKeyError', async () => {
        await expect(store.put('x', { mediaType: 'not a media type' })).rejects.toMatchObject({ code: InvalidKeyError.code });
        await expect(store.putNamed('k', 'x', { mediaType: '' })).rejects.toMatchObject({ code: InvalidKeyError.code });
        expect(await store.list()).toEqual([]);
      });
    });

    describe('putNamed', () => {
      it('returns a ref whose id is key:<key>, with the digest, size and media type of the bytes', async () => {
        const bytes = pattern(10, 3);
        const ref = await store.putNamed('runs/r1/output', bytes, { mediaType: 'application/json' });
        expect(ref).toEqual({ id: 'key:runs/r1/output', sha256: sha256(bytes), media_type: 'application/json', size_bytes: 10 });
      });

      it('is idempotent by key: a second put with other bytes returns the first ref and keeps the first bytes', async () => {
        const first = await store.putNamed('report', 'first', { mediaType: 'text/plain' });
        const second = await store.putNamed('report', 'second, longer', { mediaType: 'text/csv' });
        expect(second).toEqual(first);
        expectSameBytes(await store.get(first), new TextEncoder().encode('first'));
        expect(await store.list()).toEqual([first]);
      });

      it('gives concurrent puts of one key a single ref, whose bytes get returns', async () => {
        const bodies = Array.from({ length: 8 }, (_, i) => `writer ${i}`);
        const refs = await Promise.all(bodies.map((body) => store.putNamed('contended', body, { mediaType: 'text/plain' })));
        for (const ref of refs) expect(ref).toEqual(refs[0]);
        const text = new TextDecoder().decode(await store.get(refs[0]!));
        expect(bodies).toContain(text);
        expect(await store.list()).toEqual([refs[0]]);
      });

      it('treats keys that differ only in case as different keys', async () => {
        const upper = await store.putNamed('Report', 'upper', { mediaType: 'text/plain' });
        const lower = await store.putNamed('report', 'lower', { mediaType: 'text/plain' });
        expect(lower.id).not.toBe(upper.id);
        expect(new TextDecoder().decode(await store.get(upper))).toBe('upper');
        expect(new TextDecoder().decode(await store.get(lower))).toBe('lower');
      });

      it('accepts every valid key shape, including the longest and names special on some filesystems', async () => {
        const keys = [
          'a',
          'a/b/c/d/e/f/g/h',
          'x'.repeat(512),
          `${'s'.repeat(255)}/${'t'.repeat(256)}`,
          'con',
          'nul',
          'aux/com1/lpt1',
          'a.',
          'a..',
          '...',
          '..a',
          '.hidden',
          'a:b@c=d+e_f-g',
          'c:',
          '-',
          'blobs',
          'keys/sha256/00',
        ];
        for (const key of keys) {
          const ref = await store.putNamed(key, `body of ${key}`, { mediaType: 'text/plain' });
          expect(ref.id).toBe(`key:${key}`);
        }
        for (const key of keys) {
          const ref = await store.head(key);
          expect(ref, key).not.toBeNull();
          expect(new TextDecoder().decode(await store.get(ref!))).toBe(`body of ${key}`);
        }
        expect((await store.list()).map((r) => r.id)).toEqual(keys.map((k) => `key:${k}`).sort(byString));
      });
    });

    describe('head', () => {
      it('returns the ref of a stored key', async () => {
        const ref = await store.putNamed('present', 'here', { mediaType: 'text/plain' });
        expect(await store.head('present')).toEqual(ref);
      });

      it('returns null for a key that was never stored', async () => {
        expect(await store.head('absent')).toBeNull();
      });

      it('does not find a key by a prefix or an extension of it', async () => {
        await store.putNamed('a/b', 'x', { mediaType: 'text/plain' });
        expect(await store.head('a')).toBeNull();
        expect(await store.head('a/b/c')).toBeNull();
      });
    });

    describe('get', () => {
      it('returns identical binary bytes (all 256 byte values)', async () => {
        const bytes = Uint8Array.from({ length: 512 }, (_, i) => i % 256);
        const got = await store.get(await store.put(bytes, { mediaType: 'application/octet-stream' }));
        expect(got).toBeInstanceOf(Uint8Array);
        expectSameBytes(got, bytes);
      });

      it('returns identical bytes for a named artifact', async () => {
        const bytes = pattern(300, 4);
        expectSameBytes(await store.get(await store.putNamed('named/binary', bytes, { mediaType: 'application/octet-stream' })), bytes);
      });

      it('stores and returns an empty artifact', async () => {
        const ref = await store.put(new Uint8Array(0), { mediaType: 'application/octet-stream' });
        expect(ref.size_bytes).toBe(0);
        expect(ref.sha256).toBe(sha256(new Uint8Array(0)));
        expect((await store.get(ref)).byteLength).toBe(0);
        const named = await store.putNamed('empty', '', { mediaType: 'text/plain' });
        expect((await store.get(named)).byteLength).toBe(0);
      });

      it('stores and returns a 5 MB artifact', { timeout: 30_000 }, async () => {
        const bytes = new Uint8Array(randomBytes(5 * 1024 * 1024));
        const ref = await store.put(bytes, { mediaType: 'application/octet-stream' });
        expect(ref.size_bytes).toBe(bytes.byteLength);
        expectSameBytes(await store.get(ref), bytes);
      });

      it('returns a copy: changing it does not change the stored artifact', async () => {
        const ref = await store.put(pattern(32, 5), { mediaType: 'application/octet-stream' });
        const got = await store.get(ref);
        got.fill(0);
        expectSameBytes(await store.get(ref), pattern(32, 5));
      });

      it('keeps its own copy: changing the input after put does not change the stored artifact', async () => {
        const input = pattern(32, 6);
        const ref = await store.putNamed('copied', input, { mediaType: 'application/octet-stream' });
        input.fill(0);
        expectSameBytes(await store.get(ref), pattern(32, 6));
      });

      it('throws ArtifactNotFoundError for a content ref that was never stored', async () => {
        const bytes = pattern(16, 7);
        const ref: ArtifactRef = { id: `sha256:${sha256(bytes)}`, sha256: sha256(bytes), media_type: 'application/octet-stream', size_bytes: 16 };
        await expect(store.get(ref)).rejects.toMatchObject({ code: ArtifactNotFoundError.code });
      });

      it('throws ArtifactNotFoundError for a named ref that was never stored', async () => {
        const ref: ArtifactRef = { id: 'key:never/stored', sha256: sha256(new Uint8Array(0)), media_type: 'text/plain', size_bytes: 0 };
        await expect(store.get(ref)).rejects.toMatchObject({ code: ArtifactNotFoundError.code });
      });

      it('throws ArtifactIntegrityError when the ref carries another digest or size than the stored bytes', async () => {
        const content = await store.put('content bytes', { mediaType: 'text/plain' });
        const named = await store.putNamed('named', 'named bytes', { mediaType: 'text/plain' });
        const otherDigest = sha256(new TextEncoder().encode('something else'));
        for (const ref of [content, named]) {
          await expect(store.get({ ...ref, sha256: otherDigest })).rejects.toMatchObject({ code: ArtifactIntegrityError.code });
          await expect(store.get({ ...ref, size_bytes: ref.size_bytes + 1 })).rejects.toMatchObject({ code: ArtifactIntegrityError.code });
        }
      });
    });

    describe.skipIf(!corrupt)(`integrity${corrupt ? '' : ' (skipped: no corrupt hook was given to the suite)'}`, () => {
      const original = pattern(1000, 8);
      // Same length as `original`, so only the digest can tell the two apart.
      const other = pattern(1000, 9);
      const damages: [string, (bytes: Uint8Array) => Uint8Array][] = [
        ['had one bit flipped', (b) => Uint8Array.from(b, (v, i) => (i === 500 ? v ^ 0x01 : v))],
        ['were truncated by one byte', (b) => b.slice(0, -1)],
        ['had one byte appended', (b) => Uint8Array.from([...b, 0])],
        ["were swapped for another artifact's bytes", () => other],
        ['were emptied', () => new Uint8Array(0)],
      ];
      const kinds: [string, (s: S) => Promise<ArtifactRef>][] = [
        ['content', (s) => s.put(original, { mediaType: 'application/octet-stream' })],
        ['named', (s) => s.putNamed('victim', original, { mediaType: 'application/octet-stream' })],
      ];
      for (const [kind, putOriginal] of kinds) {
        for (const [damage, apply] of damages) {
          it(`get of a ${kind} artifact whose stored bytes ${damage} throws ArtifactIntegrityError`, async () => {
            const ref = await putOriginal(store);
            await store.put(other, { mediaType: 'application/octet-stream' });
            await corrupt!(store, ref, apply(original.slice()));
            const error = await store.get(ref).then(
              (bytes) => new Error(`get returned ${bytes.byteLength} bytes instead of throwing`),
              (err: unknown) => err,
            );
            expect(error).toMatchObject({ code: 'ERR_ARTIFACT_INTEGRITY' });
            expect(ArtifactIntegrityError.is(error)).toBe(true);
          });
        }
      }
    });

    describe('hostile keys', () => {
      const corpus = hostileArtifactKeys();

      it('the corpus holds at least 200 keys', () => {
        expect(corpus.length).toBeGreaterThanOrEqual(200);
      });

      it('putNamed rejects every hostile key with InvalidKeyError', async () => {
        expect(await rejections(corpus, (key) => store.putNamed(key as string, 'x', { mediaType: 'text/plain' }))).toEqual([]);
      });

      it('put with options.key rejects every hostile key with InvalidKeyError', async () => {
        // `key: undefined` is no key at all: a content-addressed put.
        const keyed = corpus.filter(({ key }) => key !== undefined);
        expect(await rejections(keyed, (key) => store.put('x', { mediaType: 'text/plain', key: key as string }))).toEqual([]);
      });

      it('head rejects every hostile key with InvalidKeyError', async () => {
        expect(await rejections(corpus, (key) => store.head(key as string))).toEqual([]);
      });

      it('get rejects a ref whose id carries a hostile key with InvalidKeyError', async () => {
        expect(await rejections(corpus, (key) => store.get(forgedRef(key)))).toEqual([]);
      });

      it('delete rejects a ref whose id carries a hostile key with InvalidKeyError', async () => {
        expect(await rejections(corpus, (key) => store.delete(forgedRef(key)))).toEqual([]);
      });

      it('get and delete reject forged ids that are neither sha256:<digest> nor key:<key>', async () => {
        const ids = forgedIds().map((id) => ({ why: 'forged id', key: id }));
        const asRef = (id: unknown) => ({ id, sha256: '0'.repeat(64), media_type: 'text/plain', size_bytes: 0 }) as unknown as ArtifactRef;
        expect(await rejections(ids, (id) => store.get(asRef(id)))).toEqual([]);
        expect(await rejections(ids, (id) => store.delete(asRef(id)))).toEqual([]);
      });

      it('leave the store as it was', async () => {
        const kept = await store.putNamed('kept', 'kept', { mediaType: 'text/plain' });
        await rejections(corpus, (key) => store.putNamed(key as string, 'x', { mediaType: 'text/plain' }));
        await rejections(corpus, (key) => store.delete(forgedRef(key)));
        expect(await store.list()).toEqual([kept]);
        expect(await store.head('kept')).toEqual(kept);
      });
    });

    describe('delete', () => {
      it('forgets a content ref: get throws ArtifactNotFoundError and list leaves it out', async () => {
        const ref = await store.put('to delete', { mediaType: 'text/plain' });
        await store.delete(ref);
        await expect(store.get(ref)).rejects.toMatchObject({ code: ArtifactNotFoundError.code });
        expect(await store.list()).toEqual([]);
      });

      it('forgets a named ref: head returns null and get throws ArtifactNotFoundError', async () => {
        const ref = await store.putNamed('to/delete', 'bytes', { mediaType: 'text/plain' });
        await store.delete(ref);
        expect(await store.head('to/delete')).toBeNull();
        await expect(store.get(ref)).rejects.toMatchObject({ code: ArtifactNotFoundError.code });
        expect(await store.list()).toEqual([]);
      });

      it('frees the key: a later putNamed stores new bytes under it', async () => {
        await store.delete(await store.putNamed('reused', 'old', { mediaType: 'text/plain' }));
        const ref = await store.putNamed('reused', 'new', { mediaType: 'text/plain' });
        expect(new TextDecoder().decode(await store.get(ref))).toBe('new');
      });

      it('of a content ref leaves named artifacts with the same bytes readable', async () => {
        const named = await store.putNamed('shares', 'shared bytes', { mediaType: 'text/plain' });
        await store.delete(await store.put('shared bytes', { mediaType: 'text/plain' }));
        expect(new TextDecoder().decode(await store.get(named))).toBe('shared bytes');
      });

      it('of a named ref leaves content refs and other keys with the same bytes readable', async () => {
        const content = await store.put('shared bytes', { mediaType: 'text/plain' });
        const first = await store.putNamed('first', 'shared bytes', { mediaType: 'text/plain' });
        const second = await store.putNamed('second', 'shared bytes', { mediaType: 'text/plain' });
        await store.delete(first);
        expect(new TextDecoder().decode(await store.get(content))).toBe('shared bytes');
        expect(new TextDecoder().decode(await store.get(second))).toBe('shared bytes');
        expect(await store.list()).toEqual([content, second].sort((a, b) => byString(a.id, b.id)));
      });

      it('of a ref that is not stored does nothing', async () => {
        const kept = await store.put('kept', { mediaType: 'text/plain' });
        const zeros = '0'.repeat(64);
        await store.delete({ id: `sha256:${zeros}`, sha256: zeros, media_type: 'text/plain', size_bytes: 0 });
        await store.delete({ id: 'key:absent', sha256: zeros, media_type: 'text/plain', size_bytes: 0 });
        expect(await store.list()).toEqual([kept]);
      });
    });

    describe('list', () => {
      it('is empty for a new store', async () => {
        expect(await store.list()).toEqual([]);
      });

      it('returns every content and named ref, sorted by id', async () => {
        const refs = [
          await store.putNamed('zeta', 'z', { mediaType: 'text/plain' }),
          await store.put('content one', { mediaType: 'text/plain' }),
          await store.putNamed('alpha/beta', 'a', { mediaType: 'application/json' }),
          await store.put(pattern(10, 10), { mediaType: 'application/octet-stream' }),
          await store.putNamed('Alpha', 'A', { mediaType: 'text/plain' }),
        ];
        expect(await store.list()).toEqual([...refs].sort((a, b) => byString(a.id, b.id)));
      });
    });
  });
}

// ------------------------------------------------------------ helpers

function sha256(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/** Deterministic bytes: distinct seeds give distinct contents of the same length. */
function pattern(length: number, seed: number): Uint8Array {
  const bytes = new Uint8Array(length);
  let state = (seed * 2654435761) >>> 0 || 1;
  for (let i = 0; i < length; i++) {
    state ^= state << 13;
    state ^= state >>> 17;
    state ^= state << 5;
    bytes[i] = state & 0xff;
  }
  return bytes;
}

function byString(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Compares by length and digest, so a 5 MB mismatch prints two lines rather than five million. */
function expectSameBytes(actual: Uint8Array, expected: Uint8Array): void {
  expect({ size: actual.byteLength, sha256: sha256(actual) }).toEqual({ size: expected.byteLength, sha256: sha256(expected) });
}

/** A ref whose id names `key`: `key:<key>` for strings, the raw value otherwise (so `1` does not become the valid key `"1"`). */
function forgedRef(key: unknown): ArtifactRef {
  const id = typeof key === 'string' ? `key:${key}` : key;
  return { id, sha256: '0'.repeat(64), media_type: 'text/plain', size_bytes: 0 } as unknown as ArtifactRef;
}

/** Runs `op` on every key; returns a line for each key that was not rejected with InvalidKeyError. */
async function rejections(keys: HostileKey[], op: (key: unknown) => Promise<unknown>): Promise<string[]> {
  const failures: string[] = [];
  for (const { why, key } of keys) {
    let outcome: string;
    try {
      await op(key);
      outcome = 'was accepted';
    } catch (err) {
      if (InvalidKeyError.is(err)) continue;
      outcome = `threw ${(err as Error)?.name}: ${(err as Error)?.message}`;
    }
    failures.push(`${printable(key)} (${why}) ${outcome}`);
  }
  return failures;
}

function printable(value: unknown): string {
  if (typeof value === 'symbol' || typeof value === 'bigint' || typeof value === 'function') return String(value);
  try {
    const text = JSON.stringify(value) ?? String(value);
    return text.length > 60 ? `${text.slice(0, 60)}… (${text.length} chars)` : text;
  } catch {
    return Object.prototype.toString.call(value);
  }
}
