import { execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import wabt from 'wabt';
import { z } from 'zod';
import { BULK_OPEN_KERNEL, openEachRowUnchecked, openTextsUnchecked } from '../../src/crypto/bulk-open.js';
import { openText, sealText } from '../../src/crypto/envelope.js';
import { encrypted } from '../../src/crypto/index.js';
import type { Keyring } from '../../src/crypto/keyring.js';
import { sealedToBytes } from '../../src/crypto/sealed-bytes.js';
import { Sealer } from '../../src/crypto/sealer.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { DecryptionError, PlaintextRowError } from '../../src/errors.js';
import { END, START, defineState, field, graph } from '../../src/index.js';
import { freshKeys } from './encrypted-engines.js';

const key = { id: 'dk-test', key: randomBytes(32) };

describe('the bulk opener', () => {
  it('embeds exactly what bulk-open.wat compiles to', async () => {
    const source = readFileSync(new URL('../../src/crypto/bulk-open.wat', import.meta.url), 'utf8');
    const compiled = (await wabt()).parseWat('bulk-open.wat', source).toBinary({}).buffer;
    expect(Buffer.from(BULK_OPEN_KERNEL).equals(Buffer.from(compiled))).toBe(true);
  });

  it('opens every length across block edges, multi-byte text and large rows as the checked opener does', () => {
    const texts = [
      ...Array.from({ length: 70 }, (_, n) => 'a'.repeat(n)),
      ...Array.from({ length: 40 }, (_, n) => 'é😀ü'.repeat(n)),
      'x'.repeat(300_000),
      JSON.stringify({ nested: { list: Array.from({ length: 500 }, (_, i) => i) } }),
    ];
    const sealed = texts.map((t, i) => sealText(key, t, `aad${i}`));
    expect(openTextsUnchecked(key, sealed, 'items')).toEqual(texts);
    expect(sealed.map((s, i) => openText(key, s, `aad${i}`, 'row'))).toEqual(texts);
  });

  it('opens rows across many keystream windows: rows that straddle a window edge, and a row larger than a window between them', () => {
    // About 1.5 MB of bodies, made 64 KiB of keystream at a time: every window edge falls
    // somewhere inside a run of rows of every length modulo the block.
    const texts = Array.from({ length: 1_000 }, (_, i) => (i === 500 ? 'big '.repeat(40_000) : `${i}:${'r'.repeat((i * 37) % 3_001)}`));
    const sealed = texts.map((t, i) => (i % 3 === 0 ? sealedToBytes(sealText(key, t, 'w'))! : sealText(key, t, 'w')));
    expect(openTextsUnchecked(key, sealed, 'items')).toEqual(texts);
  });

  it('all-ASCII rows (read as slices of one string) and one non-ASCII row among them (each read on its own) open alike', () => {
    const ascii = Array.from({ length: 200 }, (_, i) => JSON.stringify({ i, text: 'plain '.repeat(i % 37) }));
    const sealed = ascii.map((t) => sealText(key, t, 'a'));
    expect(openTextsUnchecked(key, sealed, 'items')).toEqual(ascii);
    const mixed = [...ascii.slice(0, 100), '{"text":"naïve ☕"}', ...ascii.slice(100)];
    expect(openTextsUnchecked(key, mixed.map((t) => sealText(key, t, 'a')), 'items')).toEqual(mixed);
  });

  it('a truncated or malformed row among good ones is DecryptionError; a plaintext one is left to the caller', () => {
    const good = sealText(key, 'fine', 'a');
    expect(() => openTextsUnchecked(key, [good, '~c1:dk-test:AAAA'], 'items')).toThrow(DecryptionError);
    expect(() => openTextsUnchecked(key, [good, good.slice(0, -1)], 'items')).toThrow(DecryptionError);
    // A plaintext row is the caller's to judge (PlaintextRowError, or read as it is).
    expect(openTextsUnchecked(key, ['{"plain":true}'], 'items')).toBeNull();
    expect(() => openTextsUnchecked(key, [good, Buffer.from([0xc1, 7, 1, 2])], 'items')).toThrow(DecryptionError);
    expect(() => openTextsUnchecked(key, [good, sealedToBytes(good)!.subarray(0, 30)], 'items')).toThrow(DecryptionError);
  });

  it('under other key material of the same id it returns other bytes, never the plaintext', () => {
    const sealed = sealText(key, 'the secret text', 'a');
    const [opened] = openTextsUnchecked({ id: 'dk-test', key: randomBytes(32) }, [sealed], 'items')!;
    expect(opened).not.toBe('the secret text');
  });

  it('takes sealed bytes as they are, beside texts, in any mix', () => {
    const texts = Array.from({ length: 120 }, (_, i) => JSON.stringify({ i, s: i % 7 === 0 ? 'ç'.repeat(i) : 'a'.repeat(i) }));
    const sealed = texts.map((t, i) => sealText(key, t, `aad${i}`));
    const rows = sealed.map((s, i) => (i % 3 === 0 ? s : sealedToBytes(s)!));
    expect(openTextsUnchecked(key, rows, 'items')).toEqual(texts);
    expect(openTextsUnchecked(key, sealed.map((s) => sealedToBytes(s)!), 'items')).toEqual(texts);
  });

  it('without WebAssembly the row-by-row opener gives the same plaintexts, null for another key, DecryptionError for a malformed row', () => {
    const texts = Array.from({ length: 60 }, (_, i) => JSON.stringify({ i, s: i % 5 === 0 ? 'ñ'.repeat(i) : 'b'.repeat(i) }));
    const rows = texts.map((t, i) => (i % 2 ? sealText(key, t, 'a') : sealedToBytes(sealText(key, t, 'a'))!));
    expect(openEachRowUnchecked(key, rows, 'items')).toEqual(texts);
    expect(openEachRowUnchecked(key, rows, 'items')).toEqual(openTextsUnchecked(key, rows, 'items'));
    expect(openEachRowUnchecked({ id: 'dk-other', key: key.key }, rows, 'items')).toBeNull();
    expect(() => openEachRowUnchecked(key, [`~c1:dk-test:AAA`], 'items')).toThrow(DecryptionError);
    expect(() => openEachRowUnchecked(key, [Buffer.from([0xc1, 7, 1])], 'items')).toThrow(DecryptionError);
  });

  it('an encrypted SQLite load works in a process without WebAssembly (node --jitless)', async () => {
    const { dir, keys, path } = freshKeys();
    try {
      const file = join(dir, 'cairn.db');
      const engine = encrypted(sqlite(file), { keys });
      const State = defineState({ fields: { notes: field.model(z.array(z.string()), { reduce: 'append', default: [] }), n: field.model(z.number(), { default: 0 }) } });
      await graph(State)
        .node('step', async (s) => ({ notes: [`note ${s.n} ✓`], n: s.n + 1 }))
        .edge(START, 'step')
        .conditionalEdge('step', (s) => (s.n < 6 ? 'step' : END))
        .compile({ engine })
        .run({ thread: 't' });
      await engine.close();
      const script = fileURLToPath(new URL('../fixtures/jitless-load.mjs', import.meta.url));
      const out = execFileSync(process.execPath, ['--jitless', script, file, path, 't', 'notes'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
      expect(JSON.parse(out)).toEqual({ webAssembly: false, items: Array.from({ length: 6 }, (_, n) => JSON.stringify(`note ${n} ✓`)) });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a row under another key (text or bytes) makes it return null; the sealer then opens each under its own key', async () => {
    const other = { id: 'dk-other-key', key: randomBytes(32) };
    const rows = [sealText(key, 'one', 'a'), sealedToBytes(sealText(other, 'two', 'a'))!, sealText(other, 'three', 'a'), sealedToBytes(sealText(key, 'four', 'a'))!];
    expect(openTextsUnchecked(key, rows, 'items')).toBeNull();
    expect(openTextsUnchecked(key, [rows[0]!, rows[2]!], 'items')).toBeNull();
    const keyring = { keyById: async (id: string) => (id === key.id ? key : other) } as unknown as Keyring;
    expect(await new Sealer(keyring, true).openAllUnchecked(rows, 'items')).toEqual(['one', 'two', 'three', 'four']);
  });

  it('a plaintext row after sealed ones is PlaintextRowError where encryption is required, and read as it is where it is not', async () => {
    const rows = [sealedToBytes(sealText(key, '"one"', 'a'))!, '"two"', sealText(key, '"three"', 'a')];
    expect(openTextsUnchecked(key, rows, 'items')).toBeNull();
    expect(openEachRowUnchecked(key, rows, 'items')).toBeNull();
    const keyring = { keyById: async () => key } as unknown as Keyring;
    await expect(new Sealer(keyring, true).openAllUnchecked(rows, 'items')).rejects.toThrow(PlaintextRowError);
    expect(await new Sealer(keyring, false).openAllUnchecked(rows, 'items')).toEqual(['"one"', '"two"', '"three"']);
  });
});
