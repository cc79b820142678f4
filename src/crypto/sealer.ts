/**
 * @module crypto/sealer
 * What the encrypted engine's parts share: sealing a text for a scope under the
 * scope's current data key, and opening what they read under the key each row names,
 * with the rule of require mode (a plaintext row is {@link PlaintextRowError}) applied
 * in one place.
 *
 * Associated data is the row's identity as a JSON array (`["pos", thread, ns, seq]`):
 * unambiguous whatever the ids hold (namespaces contain `|`), so a ciphertext moved to
 * any other row, of the same kind or not, fails its tag.
 */
import { DecryptionError, PlaintextRowError } from '../errors.js';
import { openTextsUnchecked } from './bulk-open.js';
import { isSealed, openText, sealText, sealedKeyId, type DataKey } from './envelope.js';
import type { Keyring } from './keyring.js';

/** The associated data of a row: its kind and identity. */
export function rowAad(kind: string, ...identity: (string | number)[]): string {
  return JSON.stringify([kind, ...identity]);
}

export class Sealer {
  constructor(
    readonly keyring: Keyring,
    /** Refuse plaintext rows on read. */
    readonly required: boolean,
  ) {}

  /** `text` sealed for `scope`'s current data key, bound to `aad`. */
  async seal(scope: string, text: string, aad: string): Promise<string> {
    return sealText(await this.keyring.keyForWrite(scope), text, aad);
  }

  /** The current data key of `scope`, for sealing several texts of one row set without a lookup each. */
  keyFor(scope: string): Promise<DataKey> {
    return this.keyring.keyForWrite(scope);
  }

  /**
   * Opens one row read back, checking its tag against `aad`. A plaintext row is returned
   * as it is, unless encryption is required. `where` names the row in errors.
   */
  async open(text: string, aad: string, where: string): Promise<string> {
    if (!isSealed(text)) return this.plain(text, where);
    return openText(await this.keyOf(text, where), text, aad, where);
  }

  /**
   * Opens many rows of one read (a field's items) without their tags: one key lookup
   * per data key, one AES call per key (see `openTextsUnchecked`). Plaintext rows as in
   * {@link open}.
   */
  async openAllUnchecked(texts: readonly string[], where: string): Promise<string[]> {
    if (texts.length === 0) return [];
    const first = sealedKeyId(texts[0]!);
    // The common case: every row sealed under one key (no rotation inside the range).
    if (first !== null && texts.every((text) => text.startsWith(`~c1:${first}:`))) {
      return openTextsUnchecked(await this.keyOf(texts[0]!, where), texts, where);
    }
    const out = new Array<string>(texts.length);
    const byKey = new Map<string, number[]>();
    texts.forEach((text, i) => {
      const id = sealedKeyId(text);
      if (id === null) out[i] = this.plain(text, where);
      else {
        let list = byKey.get(id);
        if (!list) byKey.set(id, (list = []));
        list.push(i);
      }
    });
    for (const [, indexes] of byKey) {
      const key = await this.keyOf(texts[indexes[0]!]!, where);
      const opened = openTextsUnchecked(key, indexes.map((i) => texts[i]!), where);
      indexes.forEach((i, j) => (out[i] = opened[j]!));
    }
    return out;
  }

  private plain(text: string, where: string): string {
    if (this.required) {
      throw new PlaintextRowError(`${where} is stored in the clear, and this engine requires encryption: a writer without encryption (or with it off) wrote it. Nothing of the row was returned.`);
    }
    return text;
  }

  private async keyOf(text: string, where: string): Promise<DataKey> {
    const id = sealedKeyId(text);
    if (id === null) throw new DecryptionError(`${where}: the sealed row is truncated or malformed.`);
    return this.keyring.keyById(id);
  }
}
