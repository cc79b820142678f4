import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import wabt from 'wabt';
import { describe, expect, it } from 'vitest';
import { BULK_OPEN_KERNEL, openTextsUnchecked } from '../../src/crypto/bulk-open.js';
import { openText, sealText } from '../../src/crypto/envelope.js';
import type { Keyring } from '../../src/crypto/keyring.js';
import { sealedToBytes } from '../../src/crypto/sealed-bytes.js';
import { Sealer } from '../../src/crypto/sealer.js';
import { DecryptionError } from '../../src/errors.js';

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

  it('all-ASCII rows (read as slices of one string) and one non-ASCII row among them (each read on its own) open alike', () => {
    const ascii = Array.from({ length: 200 }, (_, i) => JSON.stringify({ i, text: 'plain '.repeat(i % 37) }));
    const sealed = ascii.map((t) => sealText(key, t, 'a'));
    expect(openTextsUnchecked(key, sealed, 'items')).toEqual(ascii);
    const mixed = [...ascii.slice(0, 100), '{"text":"naïve ☕"}', ...ascii.slice(100)];
    expect(openTextsUnchecked(key, mixed.map((t) => sealText(key, t, 'a')), 'items')).toEqual(mixed);
  });

  it('a truncated or malformed row among good ones is DecryptionError', () => {
    const good = sealText(key, 'fine', 'a');
    expect(() => openTextsUnchecked(key, [good, '~c1:dk-test:AAAA'], 'items')).toThrow(DecryptionError);
    expect(() => openTextsUnchecked(key, [good, good.slice(0, -1)], 'items')).toThrow(DecryptionError);
    expect(() => openTextsUnchecked(key, ['{"plain":true}'], 'items')).toThrow(DecryptionError);
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

  it('a row under another key (text or bytes) makes it return null; the sealer then opens each under its own key', async () => {
    const other = { id: 'dk-other-key', key: randomBytes(32) };
    const rows = [sealText(key, 'one', 'a'), sealedToBytes(sealText(other, 'two', 'a'))!, sealText(other, 'three', 'a'), sealedToBytes(sealText(key, 'four', 'a'))!];
    expect(openTextsUnchecked(key, rows, 'items')).toBeNull();
    expect(openTextsUnchecked(key, [rows[0]!, rows[2]!], 'items')).toBeNull();
    const keyring = { keyById: async (id: string) => (id === key.id ? key : other) } as unknown as Keyring;
    expect(await new Sealer(keyring, true).openAllUnchecked(rows, 'items')).toEqual(['one', 'two', 'three', 'four']);
  });
});
