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
import { listArtifacts } from '../artifacts/helpers.js';
import { readAll } from '../artifacts/streams.js';
import { AccessDeniedError, ArtifactIntegrityError, ArtifactNotFoundError, InvalidKeyError } from '../errors.js';

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
  /**
   * The store keeps each ref's bytes in a blob of its own, sealed (`encryptedArtifacts`):
   * identical bytes under two refs are two blobs, and a sweep counts the sealed sizes.
   */
  sealsBlobs?: boolean;
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
  const { name, create, destroy, corrupt, sealsBlobs = false } = options;

  describe(`ArtifactStore conformance: ${name}`, () => {
    let store: S;

    beforeEach(async () => {
      store = await create();
    });

    afterEach(async () => {
      await store.close?.();
      await destroy?.(store);
    });

    it('names itself in `engine`, as checkpointers and stores do', () => {
      expect(typeof store.engine).toBe('string');
      expect(store.engine.length).toBeGreaterThan(0);
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
        expect(await listRefs(store)).toEqual([first]);
      });

      it('gives identical bytes put with another media type the same artifact, with the media type asked for in the ref', async () => {
        const first = await store.put('same text', { mediaType: 'text/plain' });
        const second = await store.put('same text', { mediaType: 'text/markdown' });
        expect(second).toEqual({ ...first, media_type: 'text/markdown' });
        // One artifact: stored once, both refs read it, and the record keeps its first media type.
        expect(await listRefs(store)).toEqual([first]);
        expect(new TextDecoder().decode(await store.get(second))).toBe('same text');
        expect(new TextDecoder().decode(await store.get(first))).toBe('same text');
        expect((await store.stat(second))!.ref).toEqual(first);
        // The same bytes again as the first type: the first ref, unchanged.
        expect(await store.put('same text', { mediaType: 'text/plain' })).toEqual(first);
      });

      it('gives different bytes different refs', async () => {
        const a = await store.put('a', { mediaType: 'text/plain' });
        const b = await store.put('b', { mediaType: 'text/plain' });
        expect(a.id).not.toBe(b.id);
        expect(await listRefs(store)).toHaveLength(2);
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
        // Parameters become part of a Content-Type header: no control characters, no line breaks, ASCII only.
        for (const mediaType of ['text/plain; charset=utf-8\r\nX-Injected: 1', 'text/plain;\u0000', 'text/plain; a=\u007f', 'text/plain; name=é']) {
          await expect(store.put('x', { mediaType }), JSON.stringify(mediaType)).rejects.toMatchObject({ code: InvalidKeyError.code });
        }
        expect(await listRefs(store)).toEqual([]);
        expect((await store.put('x', { mediaType: 'text/plain;\tcharset="utf-8"; q=0.5' })).media_type).toBe('text/plain;\tcharset="utf-8"; q=0.5');
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
        expect(await listRefs(store)).toEqual([first]);
      });

      it('gives concurrent puts of one key a single ref, whose bytes get returns', async () => {
        const bodies = Array.from({ length: 8 }, (_, i) => `writer ${i}`);
        const refs = await Promise.all(bodies.map((body) => store.putNamed('contended', body, { mediaType: 'text/plain' })));
        for (const ref of refs) expect(ref).toEqual(refs[0]);
        const text = new TextDecoder().decode(await store.get(refs[0]!));
        expect(bodies).toContain(text);
        expect(await listRefs(store)).toEqual([refs[0]]);
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
        expect((await listRefs(store)).map((r) => r.id)).toEqual(keys.map((k) => `key:${k}`).sort(byString));
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
      // Bigger than one read chunk (256 KiB), so a stream delivers several chunks before the last.
      const original = pattern(600_000, 8);
      // Same length as `original`, so only the digest can tell the two apart.
      const other = pattern(600_000, 9);
      const damages: [string, (bytes: Uint8Array) => Uint8Array][] = [
        ['had one bit flipped in the middle', (b) => Uint8Array.from(b, (v, i) => (i === 300_000 ? v ^ 0x01 : v))],
        ['had the last bit flipped', (b) => Uint8Array.from(b, (v, i) => (i === b.byteLength - 1 ? v ^ 0x80 : v))],
        ['were truncated by one byte', (b) => b.slice(0, -1)],
        ['had one byte appended', (b) => Uint8Array.from([...b, 0])],
        ["were swapped for another artifact's bytes", () => other],
        ['were emptied', () => new Uint8Array(0)],
      ];
      const kinds: [string, (s: S) => Promise<ArtifactRef>, (s: S) => ArtifactStore][] = [
        ['content', (s) => s.put(original, { mediaType: 'application/octet-stream' }), (s) => s],
        ['named', (s) => s.putNamed('victim', original, { mediaType: 'application/octet-stream' }), (s) => s],
        ['tenant', (s) => s.forTenant('acme').putNamed('victim', original, { mediaType: 'application/octet-stream' }), (s) => s.forTenant('acme')],
      ];
      const readers: [string, (s: ArtifactStore, ref: ArtifactRef) => Promise<{ bytes: number; error: unknown }>][] = [
        ['get', (s, ref) => s.get(ref).then((b) => ({ bytes: b.byteLength, error: undefined }), (error: unknown) => ({ bytes: 0, error }))],
        ['stream (verify before)', (s, ref) => s.stream(ref).then(drain, (error: unknown) => ({ bytes: 0, error }))],
        ['stream (verify during)', (s, ref) => s.stream(ref, { verify: 'during' }).then(drain, (error: unknown) => ({ bytes: 0, error }))],
      ];
      for (const [kind, putOriginal, view] of kinds) {
        for (const [damage, apply] of damages) {
          for (const [reader, read] of readers) {
            it(`${reader} of a ${kind} artifact whose stored bytes ${damage} throws ArtifactIntegrityError`, async () => {
              const ref = await putOriginal(store);
              await store.put(other, { mediaType: 'application/octet-stream' });
              await corrupt!(store, ref, apply(original.slice()));
              const { bytes, error } = await read(view(store), ref);
              expect(error, `${reader} delivered ${bytes} bytes and ended cleanly`).toMatchObject({ code: 'ERR_ARTIFACT_INTEGRITY' });
              expect(ArtifactIntegrityError.is(error)).toBe(true);
              // `get` and a verify-before stream hand over nothing; a verify-during stream never the whole.
              if (reader === 'stream (verify during)') expect(bytes).toBeLessThan(original.byteLength);
              else expect(bytes).toBe(0);
            });
          }
        }
      }
    });

    describe('streaming', () => {
      it('put takes a ReadableStream of many chunks and gives the same ref as the bytes', async () => {
        const bytes = pattern(1_000_000, 11);
        const source = chunked(bytes, 65_536);
        const ref = await store.put(source.stream, { mediaType: 'application/octet-stream' });
        expect(ref).toEqual({ id: `sha256:${sha256(bytes)}`, sha256: sha256(bytes), media_type: 'application/octet-stream', size_bytes: bytes.byteLength });
        expectSameBytes(await store.get(ref), bytes);
      });

      it('put and putNamed take an AsyncIterable of chunks (strings count as UTF-8)', async () => {
        const bytes = pattern(300_000, 12);
        const ref = await store.putNamed('iterated', generate(bytes, 10_000), { mediaType: 'application/octet-stream' });
        expect(ref.sha256).toBe(sha256(bytes));
        async function* words() {
          yield 'héllo ';
          yield new TextEncoder().encode('wörld');
        }
        const text = await store.put(words(), { mediaType: 'text/plain' });
        expect(new TextDecoder().decode(await store.get(text))).toBe('héllo wörld');
      });

      it('stream returns the verified bytes, in verify-before and verify-during modes', async () => {
        const bytes = pattern(1_500_000, 13);
        const ref = await store.put(bytes, { mediaType: 'application/octet-stream' });
        expectSameBytes(await readAll(await store.stream(ref)), bytes);
        expectSameBytes(await readAll(await store.stream(ref, { verify: 'during' })), bytes);
        const empty = await store.put(new Uint8Array(0), { mediaType: 'application/octet-stream' });
        expect((await readAll(await store.stream(empty))).byteLength).toBe(0);
      });

      it('stream of a ref that is not stored throws ArtifactNotFoundError when called', async () => {
        const zeros = '0'.repeat(64);
        await expect(store.stream({ id: `sha256:${zeros}`, sha256: zeros, media_type: 'text/plain', size_bytes: 1 })).rejects.toMatchObject({ code: ArtifactNotFoundError.code });
      });

      it('a stream can be cancelled part way', async () => {
        const ref = await store.put(pattern(2_000_000, 14), { mediaType: 'application/octet-stream' });
        const reader = (await store.stream(ref)).getReader();
        expect((await reader.read()).done).toBe(false);
        await reader.cancel();
        expect((await store.get(ref)).byteLength).toBe(2_000_000);
      });

      it('putNamed of an existing key cancels the stream it was given, unread', async () => {
        const first = await store.putNamed('kept/once', 'first', { mediaType: 'text/plain' });
        const source = chunked(pattern(100_000, 15), 1000);
        expect(await store.putNamed('kept/once', source.stream, { mediaType: 'text/plain' })).toEqual(first);
        expect(source.pulls()).toBeLessThanOrEqual(1);
        expect(source.cancelled()).toBe(true);
      });

      it('a source that fails mid-way stores nothing and rethrows its error', async () => {
        const source = chunked(pattern(500_000, 16), 50_000, 3);
        await expect(store.putNamed('failed/upload', source.stream, { mediaType: 'application/octet-stream' })).rejects.toThrow('source failed mid-way');
        expect(await store.head('failed/upload')).toBeNull();
        expect(await listRefs(store)).toEqual([]);
      });

      it('an aborted put stores nothing', async () => {
        const controller = new AbortController();
        async function* slow() {
          yield new Uint8Array(1000);
          controller.abort();
          yield new Uint8Array(1000);
        }
        await expect(store.putNamed('aborted', slow(), { mediaType: 'application/octet-stream', signal: controller.signal })).rejects.toThrow();
        expect(await store.head('aborted')).toBeNull();
        expect(await listRefs(store)).toEqual([]);
      });

      it('a chunk that is not bytes is rejected and nothing is stored', async () => {
        async function* bad() {
          yield new Uint8Array(3);
          yield 42 as unknown as Uint8Array;
        }
        await expect(store.put(bad(), { mediaType: 'application/octet-stream' })).rejects.toMatchObject({ code: 'ERR_INVALID_OPTION' });
        expect(await listRefs(store)).toEqual([]);
      });
    });

    describe('stat, metadata and freshness', () => {
      it('stat returns the ref, tenant, metadata and freshAt by the store clock; null when absent', async () => {
        const before = await store.now();
        const ref = await store.putNamed('with/meta', 'x', { mediaType: 'text/plain', metadata: { source: 'crawler', page: '7' } });
        const info = await store.stat(ref);
        expect(info).toMatchObject({ ref, tenant: null, metadata: { source: 'crawler', page: '7' } });
        // Backends with second-resolution clocks (S3) may round down.
        expect(info!.freshAt).toBeGreaterThanOrEqual(before - 1000);
        expect(info!.freshAt).toBeLessThanOrEqual((await store.now()) + 1000);
        await store.delete(ref);
        expect(await store.stat(ref)).toBeNull();
      });

      it('rejects metadata that is not small string pairs', async () => {
        for (const metadata of [{ Name: 'x' }, { a: 1 }, { 'a b': 'x' }, { big: 'x'.repeat(9000) }, [] as unknown]) {
          await expect(store.put('x', { mediaType: 'text/plain', metadata: metadata as Record<string, string> })).rejects.toMatchObject({ code: InvalidKeyError.code });
        }
        expect(await listRefs(store)).toEqual([]);
      });

      it('delete with staleBefore deletes only what was not refreshed since', async () => {
        const ref = await store.putNamed('aging', 'x', { mediaType: 'text/plain' });
        const info = (await store.stat(ref))!;
        expect(await store.delete(ref, { staleBefore: info.freshAt })).toBe(false);
        expect(await store.head('aging')).toEqual(ref);
        expect(await store.delete(ref, { staleBefore: (await store.now()) + 60_000 })).toBe(true);
        expect(await store.delete(ref)).toBe(false);
        expect(await store.head('aging')).toBeNull();
      });
    });

    describe('list paging', () => {
      it('walks every artifact once, page by page, and ends with a null cursor', async () => {
        const refs: ArtifactRef[] = [];
        for (let i = 0; i < 12; i++) refs.push(await store.put(`content ${i}`, { mediaType: 'text/plain' }));
        for (let i = 0; i < 11; i++) refs.push(await store.putNamed(`named/${i}`, `named ${i}`, { mediaType: 'text/plain' }));
        const seen: string[] = [];
        let cursor: string | undefined;
        let pages = 0;
        do {
          const page = await store.list({ limit: 5, ...(cursor !== undefined ? { cursor } : {}) });
          expect(page.items.length).toBeLessThanOrEqual(5);
          seen.push(...page.items.map((i) => i.ref.id));
          cursor = page.cursor ?? undefined;
          pages++;
        } while (cursor !== undefined && pages < 50);
        expect(pages).toBeGreaterThanOrEqual(5);
        expect([...seen].sort(byString)).toEqual(refs.map((r) => r.id).sort(byString));
      });

      it('rejects a cursor no page of this listing returned (InvalidOptionError), and reads nothing', async () => {
        for (let i = 0; i < 3; i++) await store.putNamed(`paged/${i}`, `paged ${i}`, { mediaType: 'text/plain' });
        const { cursor } = await store.list({ limit: 1 });
        expect(cursor).toEqual(expect.any(String));
        // Made up, a position in some backend's own key order, another tenant's listing, every tenant's.
        for (const bogus of ['garbage', 'zzzz', '../../..', 'keys/ff/' + 'f'.repeat(64) + '.json']) {
          await expect(store.list({ limit: 1, cursor: bogus })).rejects.toMatchObject({ code: 'ERR_INVALID_OPTION' });
        }
        await expect(store.forTenant('acme').list({ limit: 1, cursor: cursor! })).rejects.toMatchObject({ code: 'ERR_INVALID_OPTION' });
        await expect(store.list({ limit: 1, cursor: cursor!, allTenants: true })).rejects.toMatchObject({ code: 'ERR_INVALID_OPTION' });
        expect((await store.list({ limit: 1, cursor: cursor! })).items).toHaveLength(1);
      });

      it('rejects a limit that is not a positive integer', async () => {
        for (const limit of [0, -1, 1.5, Number.NaN]) await expect(store.list({ limit })).rejects.toMatchObject({ code: 'ERR_INVALID_OPTION' });
      });

      it('takes a limit past what one request of the backend returns, and null options as none', async () => {
        const refs: ArtifactRef[] = [];
        for (let i = 0; i < 3; i++) refs.push(await store.put(`large limit ${i}`, { mediaType: 'text/plain' }));
        const ids = refs.map((r) => r.id).sort(byString);
        for (const limit of [1001, 2 ** 31, Number.MAX_SAFE_INTEGER]) {
          const page = await store.list({ limit });
          expect(page.items.map((i) => i.ref.id).sort(byString)).toEqual(ids);
          expect(page.cursor).toBeNull();
        }
        expect((await store.list(null as never)).items.map((i) => i.ref.id).sort(byString)).toEqual(ids);
      });
    });

    describe('tenants', () => {
      it("a tenant's refs carry the tenant; another tenant reading them gets AccessDeniedError", async () => {
        const acme = store.forTenant('acme');
        const beta = store.forTenant('beta corp');
        const ref = await acme.putNamed('report', 'acme only', { mediaType: 'text/plain' });
        expect(ref.id).toBe('tenant:acme/key:report');
        expect(acme.tenant).toBe('acme');
        for (const op of [() => beta.get(ref), () => beta.stream(ref), () => beta.stat(ref), () => beta.delete(ref)]) {
          await expect(op()).rejects.toMatchObject({ code: AccessDeniedError.code });
        }
        // Forging the id into the reader's tenant finds nothing: the bytes live in acme's scope.
        await expect(beta.get({ ...ref, id: 'tenant:beta%20corp/key:report' })).rejects.toMatchObject({ code: ArtifactNotFoundError.code });
        // An unscoped ref is not a tenant's either.
        const shared = await store.put('unscoped', { mediaType: 'text/plain' });
        await expect(acme.get(shared)).rejects.toMatchObject({ code: AccessDeniedError.code });
        expect(new TextDecoder().decode(await acme.get(ref))).toBe('acme only');
        // The unscoped store is the operator's view: it reads every tenant.
        expect(new TextDecoder().decode(await store.get(ref))).toBe('acme only');
      });

      it('keeps keys and content of each tenant apart', async () => {
        const acme = store.forTenant('acme');
        const beta = store.forTenant('beta');
        const a = await acme.putNamed('same/key', 'a', { mediaType: 'text/plain' });
        const b = await beta.putNamed('same/key', 'b', { mediaType: 'text/plain' });
        expect(await store.head('same/key')).toBeNull();
        expect(new TextDecoder().decode(await beta.get(b))).toBe('b');
        const c1 = await acme.put('same bytes', { mediaType: 'text/plain' });
        const c2 = await beta.put('same bytes', { mediaType: 'text/plain' });
        expect(c1.sha256).toBe(c2.sha256);
        expect(c1.id).not.toBe(c2.id);
        expect((await listRefs(acme)).map((r) => r.id)).toEqual([a.id, c1.id].sort(byString));
        expect(await listRefs(store)).toEqual([]);
        expect((await listRefs(store, true)).map((r) => r.id)).toEqual([a.id, b.id, c1.id, c2.id].sort(byString));
        await expect(acme.list({ allTenants: true })).rejects.toMatchObject({ code: AccessDeniedError.code });
        expect(() => acme.forTenant('beta')).toThrow(expect.objectContaining({ code: AccessDeniedError.code }));
      });

      it('rejects hostile tenant names and hostile tenant ids with InvalidKeyError', async () => {
        for (const tenant of ['', 'a\u0000b', 'x'.repeat(257), 42, null, '\uD800']) {
          expect(() => store.forTenant(tenant as string)).toThrow(expect.objectContaining({ code: InvalidKeyError.code }));
        }
        for (const id of ['tenant:/key:a', 'tenant:a', 'tenant:%zz/key:a', 'tenant:a%62/key:a', 'tenant:a/tenant:b/key:a', 'tenant:a%00/key:a', 'tenant:a/../key:a']) {
          await expect(store.get({ id, sha256: '0'.repeat(64), media_type: 'text/plain', size_bytes: 0 })).rejects.toMatchObject({ code: InvalidKeyError.code });
        }
      });
    });

    describe('sweep', () => {
      it('removes blobs no ref points at once they are older than the cutoff, and keeps shared ones', async () => {
        const gone = await store.put(pattern(5000, 17), { mediaType: 'application/octet-stream' });
        const kept = await store.putNamed('keeps/blob', pattern(6000, 18), { mediaType: 'application/octet-stream' });
        await store.put(pattern(6000, 18), { mediaType: 'application/octet-stream' }).then((r) => store.delete(r));
        await store.delete(gone);
        const future = (await store.now()) + 60_000;
        expect(await store.sweep({ staleBefore: (await store.now()) - 60_000 })).toMatchObject({ blobs: 0 });
        if (sealsBlobs) {
          // Two sealed blobs of their own: `gone`'s, and the deleted copy of `kept`'s bytes.
          const dry = await store.sweep({ staleBefore: future, dryRun: true });
          expect(dry.blobs).toBe(2);
          expect(dry.bytes).toBeGreaterThan(11_000);
          expect(await store.sweep({ staleBefore: future })).toEqual(dry);
        } else {
          expect(await store.sweep({ staleBefore: future, dryRun: true })).toMatchObject({ blobs: 1, bytes: 5000 });
          expect(await store.sweep({ staleBefore: future })).toMatchObject({ blobs: 1, bytes: 5000 });
        }
        expect(await store.sweep({ staleBefore: future })).toMatchObject({ blobs: 0 });
        expectSameBytes(await store.get(kept), pattern(6000, 18));
        // The swept bytes can be stored again.
        expectSameBytes(await store.get(await store.put(pattern(5000, 17), { mediaType: 'application/octet-stream' })), pattern(5000, 17));
      });
    });

    describe('options', () => {
      it('refuses an option a call does not take (a misspelt staleBefore or dryRun), touching nothing', async () => {
        const ref = await store.put('kept by its options', { mediaType: 'text/plain' });
        const gone = await store.put('unreferenced', { mediaType: 'text/plain' });
        await store.delete(gone);
        const future = (await store.now()) + 60_000;
        const refused: [string, () => Promise<unknown>][] = [
          ['put', () => store.put('x', { mediaType: 'text/plain', metdata: { a: 'b' } } as never)],
          ['putNamed', () => store.putNamed('opts/x', 'x', { mediaType: 'text/plain', key: 'other' } as never)],
          ['stream', () => store.stream(ref, { verfy: 'during' } as never)],
          ['delete', () => store.delete(ref, { stalebefore: 0 } as never)],
          ['list', () => store.list({ allTenant: true } as never)],
          ['sweep', () => store.sweep({ staleBefore: future, dryrun: true } as never)],
          ['now', () => store.now({ readonly: true } as never)],
        ];
        for (const [call, run] of refused) {
          const error = await run().then(() => undefined, (e: unknown) => e);
          expect(error, call).toMatchObject({ code: 'ERR_INVALID_OPTION' });
          expect((error as Error).message, call).toContain(`${call}: unknown option`);
        }
        expect(await store.stat(ref)).not.toBeNull();
        expect(await store.head('opts/x')).toBeNull();
        expect(await listRefs(store)).toEqual([ref]);
        // The blob the misspelt dry run would have swept is still there to sweep.
        expect(await store.sweep({ staleBefore: future, dryRun: true })).toMatchObject({ blobs: 1 });
      });

      it('refuses a flag that is not a boolean: a dryRun of "true" sweeps nothing', async () => {
        await store.delete(await store.put('unreferenced', { mediaType: 'text/plain' }));
        const future = (await store.now()) + 60_000;
        for (const dryRun of ['true', 1, null]) {
          await expect(store.sweep({ staleBefore: future, dryRun } as never), String(dryRun)).rejects.toMatchObject({ code: 'ERR_INVALID_OPTION' });
        }
        await expect(store.list({ allTenants: 'false' } as never)).rejects.toMatchObject({ code: 'ERR_INVALID_OPTION' });
        expect(await store.sweep({ staleBefore: future, dryRun: true })).toMatchObject({ blobs: 1 });
      });
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
        expect(await listRefs(store)).toEqual([kept]);
        expect(await store.head('kept')).toEqual(kept);
      });
    });

    describe('delete', () => {
      it('forgets a content ref: get throws ArtifactNotFoundError and list leaves it out', async () => {
        const ref = await store.put('to delete', { mediaType: 'text/plain' });
        await store.delete(ref);
        await expect(store.get(ref)).rejects.toMatchObject({ code: ArtifactNotFoundError.code });
        expect(await listRefs(store)).toEqual([]);
      });

      it('forgets a named ref: head returns null and get throws ArtifactNotFoundError', async () => {
        const ref = await store.putNamed('to/delete', 'bytes', { mediaType: 'text/plain' });
        await store.delete(ref);
        expect(await store.head('to/delete')).toBeNull();
        await expect(store.get(ref)).rejects.toMatchObject({ code: ArtifactNotFoundError.code });
        expect(await listRefs(store)).toEqual([]);
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
        expect(await listRefs(store)).toEqual([content, second].sort((a, b) => byString(a.id, b.id)));
      });

      it('of a ref that is not stored does nothing', async () => {
        const kept = await store.put('kept', { mediaType: 'text/plain' });
        const zeros = '0'.repeat(64);
        await store.delete({ id: `sha256:${zeros}`, sha256: zeros, media_type: 'text/plain', size_bytes: 0 });
        await store.delete({ id: 'key:absent', sha256: zeros, media_type: 'text/plain', size_bytes: 0 });
        expect(await listRefs(store)).toEqual([kept]);
      });
    });

    describe('list', () => {
      it('is empty for a new store', async () => {
        expect(await listRefs(store)).toEqual([]);
      });

      it('returns every content and named ref, sorted by id', async () => {
        const refs = [
          await store.putNamed('zeta', 'z', { mediaType: 'text/plain' }),
          await store.put('content one', { mediaType: 'text/plain' }),
          await store.putNamed('alpha/beta', 'a', { mediaType: 'application/json' }),
          await store.put(pattern(10, 10), { mediaType: 'application/octet-stream' }),
          await store.putNamed('Alpha', 'A', { mediaType: 'text/plain' }),
        ];
        expect(await listRefs(store)).toEqual([...refs].sort((a, b) => byString(a.id, b.id)));
      });
    });
  });
}

// ------------------------------------------------------------ helpers

/** Every ref of the store's own scope, sorted by id. */
async function listRefs(store: ArtifactStore, allTenants = false): Promise<ArtifactRef[]> {
  const refs: ArtifactRef[] = [];
  for await (const info of listArtifacts(store, { allTenants, limit: 7 })) refs.push(info.ref);
  return refs.sort((a, b) => byString(a.id, b.id));
}

/** A stream of `bytes` in chunks of `chunk` bytes, counting pulls; `fail` errors it after that many chunks. */
function chunked(bytes: Uint8Array, chunk: number, fail?: number): { stream: ReadableStream<Uint8Array>; pulls: () => number; cancelled: () => boolean } {
  let offset = 0;
  let pulls = 0;
  let cancelled = false;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      pulls++;
      if (fail !== undefined && pulls > fail) return controller.error(new Error('source failed mid-way'));
      if (offset >= bytes.byteLength) return controller.close();
      controller.enqueue(bytes.slice(offset, offset + chunk));
      offset += chunk;
    },
    cancel() {
      cancelled = true;
    },
  }, { highWaterMark: 0 });
  return { stream, pulls: () => pulls, cancelled: () => cancelled };
}

async function* generate(bytes: Uint8Array, chunk: number): AsyncGenerator<Uint8Array> {
  for (let offset = 0; offset < bytes.byteLength; offset += chunk) yield bytes.slice(offset, offset + chunk);
}

/** Reads a stream until it ends or errors: what was delivered, and the error. */
async function drain(stream: ReadableStream<Uint8Array>): Promise<{ bytes: number; error: unknown }> {
  const reader = stream.getReader();
  let bytes = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { bytes, error: undefined };
      bytes += value.byteLength;
    }
  } catch (error) {
    return { bytes, error };
  }
}

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
