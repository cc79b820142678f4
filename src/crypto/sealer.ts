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
import { sealedBytesKeyId } from './sealed-bytes.js';
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
   * per data key, one AES call per key (see `openTextsUnchecked`). A row is a text or
   * the sealed bytes an engine stored it as (crypto/sealed-bytes). Plaintext rows as in
   * {@link open}.
   */
  async openAllUnchecked(rows: readonly (string | Uint8Array)[], where: string): Promise<string[]> {
    if (rows.length === 0) return [];
    // The common case: every row sealed under the first row's key (no rotation inside
    // the range), which the bulk opener checks as it goes.
    const first = rowKeyId(rows[0]!);
    const opened = first === null ? null : openTextsUnchecked(await this.keyring.keyById(first), rows, where);
    if (opened) return opened;
    const out = new Array<string>(rows.length);
    const byKey = new Map<string, number[]>();
    rows.forEach((row, i) => {
      const id = rowKeyId(row);
      if (id === null) out[i] = typeof row === 'string' ? this.plain(row, where) : malformed(where);
      else {
        let list = byKey.get(id);
        if (!list) byKey.set(id, (list = []));
        list.push(i);
      }
    });
    for (const [id, indexes] of byKey) {
      const texts = openTextsUnchecked(await this.keyring.keyById(id), indexes.map((i) => rows[i]!), where)!;
      indexes.forEach((i, j) => (out[i] = texts[j]!));
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

/** The key id a row of a bulk read names: a text's envelope or sealed bytes; null for plaintext (or bytes that are not sealed). */
function rowKeyId(row: string | Uint8Array): string | null {
  return typeof row === 'string' ? sealedKeyId(row) : sealedBytesKeyId(row);
}

function malformed(where: string): never {
  throw new DecryptionError(`${where}: the sealed row is truncated or malformed.`);
}
