/**
 * @module crypto/sealed-bytes
 * A sealed text as bytes, for an engine that can store them: the SQLite engine keeps
 * a sealed item, position body or snapshot (`~c1:<key id>:<base64>`) as a BLOB of what
 * the base64 encodes, a third smaller than the text and read with no decoding. Every
 * read that returns texts turns it back into exactly the text that was written; the
 * bulk opener of a load takes an item's bytes as they are ({@link ITEMS_AS_STORED}).
 *
 * The bytes: `0xC1`, the key id's length (one byte), the key id (ASCII), then
 * `iv ‖ ciphertext ‖ tag` as the envelope packs them.
 */
import { SEALED_PREFIX } from './envelope.js';

/** First byte of sealed bytes: the `c1` envelope. */
const SEALED_BYTES_MARK = 0xc1;

/**
 * `text` as sealed bytes, or null when it is not a sealed envelope that bytes give back
 * exactly (plaintext, a key id that is not short ASCII, base64 that is not canonical):
 * such a text is stored as it is.
 */
export function sealedToBytes(text: string): Uint8Array | null {
  if (!text.startsWith(SEALED_PREFIX)) return null;
  const end = text.indexOf(':', SEALED_PREFIX.length);
  if (end < 0) return null;
  const keyId = text.slice(SEALED_PREFIX.length, end);
  if (keyId.length === 0 || keyId.length > 255 || !/^[\x21-\x7e]+$/.test(keyId)) return null;
  const encoded = text.slice(end + 1);
  const packed = Buffer.from(encoded, 'base64');
  // Node's decoder skips what is not base64: only a canonical text comes back whole.
  if (packed.toString('base64') !== encoded) return null;
  return Buffer.concat([sealedBytesHeaderFor(keyId), packed]);
}

/** The length of sealed bytes' header (mark, key id length, key id), or -1 when `bytes` are not sealed bytes. */
export function sealedBytesHeader(bytes: Uint8Array): number {
  return bytes.length < 3 || bytes[0] !== SEALED_BYTES_MARK || bytes[1] === 0 || bytes.length < 2 + bytes[1]! ? -1 : 2 + bytes[1]!;
}

/** The key id sealed bytes name, or null when `bytes` are not sealed bytes. */
export function sealedBytesKeyId(bytes: Uint8Array): string | null {
  const header = sealedBytesHeader(bytes);
  return header < 0 ? null : Buffer.from(bytes.buffer, bytes.byteOffset + 2, header - 2).toString('latin1');
}

/** The header sealed bytes under the key `keyId` begin with. */
export function sealedBytesHeaderFor(keyId: string): Buffer {
  const header = Buffer.alloc(2 + keyId.length);
  header[0] = SEALED_BYTES_MARK;
  header[1] = keyId.length;
  header.write(keyId, 2, 'latin1');
  return header;
}

/**
 * The text sealed bytes were made from. Bytes that are not sealed bytes (a BLOB some
 * other writer left) come back as a text no reader takes for an envelope or for JSON,
 * so that they fail as a malformed row rather than pass for data.
 */
export function sealedFromBytes(bytes: Uint8Array): string {
  const header = sealedBytesHeader(bytes);
  const all = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length);
  if (header < 0) return `~bytes:${all.toString('base64')}`;
  return `${SEALED_PREFIX}${all.toString('latin1', 2, header)}:${all.toString('base64', header)}`;
}

/**
 * What an engine that can store bytes stores for `text`: a sealed envelope as its bytes
 * (a third smaller than its base64, and read with no decoding), anything else as it is.
 */
export function storedForm(text: string): string | Uint8Array {
  return text.charCodeAt(0) === 0x7e ? (sealedToBytes(text) ?? text) : text;
}

/** The text {@link storedForm} stored. */
export function textOfStored(stored: string | Uint8Array): string {
  return typeof stored === 'string' ? stored : sealedFromBytes(stored);
}

/**
 * Where an engine that keeps sealed texts as bytes offers its items read as stored: the
 * texts of `getItems`, except that a sealed one comes as its bytes. The encrypted
 * checkpointer's load opens them without re-encoding; any other reader uses getItems.
 */
export const ITEMS_AS_STORED: unique symbol = Symbol.for('cairn.crypto.itemsAsStored');

/** A checkpointer with {@link ITEMS_AS_STORED}. */
export interface ItemsAsStored {
  [ITEMS_AS_STORED](threadId: string, ns: string, field: string, ranges: readonly { from: number; to: number }[]): Promise<(string | Uint8Array)[]>;
}

/** An item pack as an engine that keeps sealed texts as bytes stores it: its text, or the sealed bytes it was stored as. */
export interface StoredItemPack {
  field: string;
  fromSeq: number;
  toSeq: number;
  count: number;
  text: string | Uint8Array;
}

/**
 * Where such an engine offers its item packs read as stored: `getItemPacks`, a sealed
 * pack's text as its bytes (opened with no base64 on the way).
 */
export const PACKS_AS_STORED: unique symbol = Symbol.for('cairn.crypto.packsAsStored');

/** A checkpointer with {@link PACKS_AS_STORED}. */
export interface PacksAsStored {
  [PACKS_AS_STORED](threadId: string, ns: string, field: string, ranges: readonly { from: number; to: number }[]): Promise<StoredItemPack[]>;
}
