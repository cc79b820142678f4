import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openTextsUnchecked } from '../../src/crypto/bulk-open.js';
import { isSealed, openText, sealText, sealedKeyId } from '../../src/crypto/envelope.js';
import { envKey, keyFile } from '../../src/crypto/key-provider.js';
import { Keyring } from '../../src/crypto/keyring.js';
import { memory } from '../../src/engines/memory/index.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { DecryptionError, InvalidOptionError, KeyUnavailableError } from '../../src/errors.js';
import { tempDir } from '../helpers/temp-dirs.js';

const key = { id: 'dk-test', key: randomBytes(32) };

describe('sealed envelopes', () => {
  it('seal and open round-trip any text, with the key id readable and a fresh IV each time', () => {
    for (const text of ['', '{"a":1}', 'é😀'.repeat(500), 'x'.repeat(100_000)]) {
      const sealed = sealText(key, text, 't|ns|1|body');
      expect(isSealed(sealed)).toBe(true);
      expect(sealedKeyId(sealed)).toBe('dk-test');
      expect(openText(key, sealed, 't|ns|1|body', 'row')).toBe(text);
    }
    expect(sealText(key, 'same', 'a')).not.toBe(sealText(key, 'same', 'a'));
    expect(isSealed('{"a":1}')).toBe(false);
  });

  it('a ciphertext opened as another row, changed, or under another key is DecryptionError', () => {
    const sealed = sealText(key, 'secret', 't|ns|1|body');
    expect(() => openText(key, sealed, 't|ns|2|body', 'row 2')).toThrow(DecryptionError);
    const flipped = sealed.slice(0, -4) + (sealed.at(-4) === 'A' ? 'B' : 'A') + sealed.slice(-3);
    expect(() => openText(key, flipped, 't|ns|1|body', 'row')).toThrow(DecryptionError);
    expect(() => openText({ id: 'dk-test', key: randomBytes(32) }, sealed, 't|ns|1|body', 'row')).toThrow(DecryptionError);
    expect(() => openText(key, '~c1:dk-test:AAAA', 'x', 'row')).toThrow(DecryptionError);
  });

  it('the bulk opener returns what the checked one does', () => {
    const texts = Array.from({ length: 300 }, (_, i) => JSON.stringify({ i, s: 'ü'.repeat(i) }));
    const sealed = texts.map((t, i) => sealText(key, t, `aad${i}`));
    expect(openTextsUnchecked(key, sealed, 'items')).toEqual(texts);
    expect(openTextsUnchecked(key, [], 'items')).toEqual([]);
  });
});

describe('key providers and the keyring', () => {
  it('keyFile keeps a KEK per scope in a 0600 file; destroying a scope makes its data keys unavailable, other scopes untouched', async () => {
    const dir = tempDir('cairn-keys-');
    const path = join(dir, 'keys.json');
    const engine = sqlite(join(dir, 'c.db'));
    const ring = new Keyring(engine.store, keyFile(path));
    const a = await ring.keyForWrite('tenant:a');
    const b = await ring.keyForWrite('tenant:b');
    expect((await ring.keyForWrite('tenant:a')).id).toBe(a.id);
    expect(statSync(path).mode & 0o777).toBe(0o600);
    // A second process (a fresh keyring on the same database and key file) opens the same keys.
    const other = new Keyring(engine.store, keyFile(path));
    expect((await other.keyById(a.id)).key.equals(a.key)).toBe(true);
    expect(await ring.destroyScope('tenant:a')).toBe(1);
    expect(readFileSync(path, 'utf8')).not.toContain('tenant:a');
    other.forget();
    await expect(other.keyById(a.id)).rejects.toThrow(KeyUnavailableError);
    expect((await other.keyById(b.id)).key.equals(b.key)).toBe(true);
    await engine.close();
  });

  it('rotating the data key keeps old keys opening; rotating the KEK re-wraps keys, not data', async () => {
    const engine = memory();
    const provider = keyFile(join(tempDir('cairn-keys-'), 'k.json'));
    const ring = new Keyring(engine.store, provider);
    const first = await ring.keyForWrite('s');
    const second = await ring.rotateDataKey('s');
    expect(second.id).not.toBe(first.id);
    expect((await ring.keyForWrite('s')).id).toBe(second.id);
    await provider.rotate('s');
    expect(await ring.rewrap('s')).toBe(2);
    ring.forget();
    expect((await ring.keyById(first.id)).key.equals(first.key)).toBe(true);
    await engine.close();
  });

  it('keyFile providers of one file (two processes) never drop KEKs the other added, nor bring back one an erasure destroyed', async () => {
    const path = join(tempDir('cairn-keys-'), 'keys.json');
    const scopesIn = () => Object.keys((JSON.parse(readFileSync(path, 'utf8')) as { scopes: object }).scopes).sort();
    const app = keyFile(path);
    const cli = keyFile(path);
    await app.wrapKey('tenant:x', randomBytes(32)); // the app holds the file as it read it
    const b = await cli.wrapKey('tenant:b', randomBytes(32));
    await app.wrapKey('tenant:a', randomBytes(32));
    expect(scopesIn()).toEqual(['tenant:a', 'tenant:b', 'tenant:x']);
    expect((await keyFile(path).unwrapKey('tenant:b', b)).length).toBe(32);
    // An erasure in the CLI destroys tenant:x; the app's next write keeps it destroyed.
    const before = (JSON.parse(readFileSync(path, 'utf8')) as { scopes: Record<string, { id: string }[]> }).scopes['tenant:x']![0]!.id;
    await cli.destroyScope('tenant:x');
    await app.wrapKey('tenant:c', randomBytes(32));
    expect(scopesIn()).toEqual(['tenant:a', 'tenant:b', 'tenant:c']);
    // A data key the app wraps for the erased scope is under a new KEK the file holds, not the destroyed one it had read.
    const again = await app.wrapKey('tenant:x', randomBytes(32));
    expect(again.kekId).not.toBe(before);
    expect((await keyFile(path).unwrapKey('tenant:x', again)).length).toBe(32);
    // Many providers adding scopes at once: every one is kept, and no lock is left behind.
    await Promise.all(Array.from({ length: 12 }, (_, i) => keyFile(path).wrapKey(`tenant:p${i}`, randomBytes(32))));
    expect(scopesIn()).toHaveLength(4 + 12);
    expect(existsSync(`${path}.lock`)).toBe(false);
  });

  it('keyFile refuses a key file whose entries are not keys with InvalidOptionError, not a TypeError', async () => {
    const dir = tempDir('cairn-keys-');
    for (const [name, scopes] of [
      ['list.json', { store: 'x' }],
      ['nokey.json', { store: [{ id: 'k', createdAt: 1 }] }],
      ['short.json', { store: [{ id: 'k', key: 'AAAA', createdAt: 1 }] }],
    ] as const) {
      const path = join(dir, name);
      writeFileSync(path, JSON.stringify({ version: 1, scopes }));
      await expect(keyFile(path).wrapKey('store', randomBytes(32))).rejects.toThrow(InvalidOptionError);
      await expect(keyFile(path).unwrapKey('store', { kekId: 'k', wrapped: 'AAAA' })).rejects.toThrow(InvalidOptionError);
    }
  });

  it('envKey derives scope keys from one master key and says clearly when it is missing or malformed', async () => {
    const engine = memory();
    process.env.CAIRN_TEST_MASTER = randomBytes(32).toString('base64');
    const ring = new Keyring(engine.store, envKey('CAIRN_TEST_MASTER'));
    const k = await ring.keyForWrite('tenant:a');
    ring.forget();
    expect((await ring.keyById(k.id)).key.equals(k.key)).toBe(true);
    process.env.CAIRN_TEST_SHORT = 'abcd';
    await expect(new Keyring(engine.store, envKey('CAIRN_TEST_SHORT')).keyForWrite('x')).rejects.toThrow(InvalidOptionError);
    await expect(new Keyring(engine.store, envKey('CAIRN_TEST_UNSET_VARIABLE')).keyForWrite('x')).rejects.toThrow(KeyUnavailableError);
    await engine.close();
  });
});
