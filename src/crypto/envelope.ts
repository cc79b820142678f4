/**
 * @module crypto/envelope
 * The sealed form of one stored text: AES-256-GCM under a data key, with the row's
 * identity as associated data, written where the plaintext would have been.
 *
 * `~c1:<key id>:<base64 of iv ‖ ciphertext ‖ tag>`. The `~` can never begin the
 * canonical JSON cairn stores, so a reader tells a sealed row from a plaintext one by
 * its first character, and an engine that requires encryption refuses the latter.
 * The key id travels with the row: data keys rotate for new writes while old rows
 * keep opening with the key they were sealed with.
 *
 * {@link openText} opens one row, checking its tag (and so the associated data); the
 * read path's bulk item loads open many at once without their tags, in `bulk-open`.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { DecryptionError } from '../errors.js';

/** What marks a sealed text: JSON never starts with it. */
export const SEALED_PREFIX = '~c1:';
export const IV_BYTES = 12;
export const TAG_BYTES = 16;

/** A data key in the clear, as the keyring hands it out. */
export interface DataKey {
  /** Stable id, written into every row sealed with the key (no `:`). */
  id: string;
  /** 32 bytes. */
  key: Buffer;
}

/** True when `text` is a sealed envelope rather than plaintext. */
export function isSealed(text: string): boolean {
  return text.startsWith(SEALED_PREFIX);
}

/** The key id a sealed text names, or null for plaintext / a malformed envelope. */
export function sealedKeyId(text: string): string | null {
  if (!isSealed(text)) return null;
  const end = text.indexOf(':', SEALED_PREFIX.length);
  return end < 0 ? null : text.slice(SEALED_PREFIX.length, end);
}

/** The longest sealed text a plaintext of `plainBytes` UTF-8 bytes can become (a key id of up to 64 characters). */
export function sealedLength(plainBytes: number): number {
  return SEALED_PREFIX.length + 65 + Math.ceil((IV_BYTES + plainBytes + TAG_BYTES) / 3) * 4;
}

/**
 * IVs are drawn from the CSPRNG 256 at a time: one `randomBytes` call costs about 18 µs
 * here whatever its size (twice per step commit), a slice of a drawn pool nothing. Each
 * IV is still used once: the pool is consumed, never reread.
 */
const IV_POOL_COUNT = 256;
let ivPool = Buffer.alloc(0);
let ivNext = 0;

function freshIv(): Buffer {
  if (ivNext + IV_BYTES > ivPool.length) {
    ivPool = randomBytes(IV_BYTES * IV_POOL_COUNT);
    ivNext = 0;
  }
  const iv = ivPool.subarray(ivNext, ivNext + IV_BYTES);
  ivNext += IV_BYTES;
  return iv;
}

/** Seals `plaintext` for the row `aad` names, under `key`. A fresh random IV every time. */
export function sealText(key: DataKey, plaintext: string, aad: string): string {
  const iv = freshIv();
  const cipher = createCipheriv('aes-256-gcm', key.key, iv);
  cipher.setAAD(Buffer.from(aad, 'utf8'));
  const body = cipher.update(plaintext, 'utf8');
  const tail = cipher.final();
  const packed = Buffer.concat([iv, body, tail, cipher.getAuthTag()]);
  return `${SEALED_PREFIX}${key.id}:${packed.toString('base64')}`;
}

/** The `iv ‖ ciphertext ‖ tag` a sealed text's base64 holds (empty when it has none). */
export function packedOf(text: string): Buffer {
  const start = text.indexOf(':', SEALED_PREFIX.length);
  return start < 0 ? Buffer.alloc(0) : Buffer.from(text.slice(start + 1), 'base64');
}

/**
 * Opens one sealed text, checking its tag against `aad`: DecryptionError when the row
 * was changed, sealed for another row, or sealed under another key. `where` names the
 * row in the error.
 */
export function openText(key: DataKey, text: string, aad: string, where: string): string {
  return openPacked(key, packedOf(text), aad, where).toString('utf8');
}

/**
 * Opens `iv ‖ ciphertext ‖ tag` (a sealed text's packed bytes, or sealed bytes past
 * their header), checking the tag against `aad`, into the plaintext's bytes (a pack's
 * caller slices them itself). DecryptionError as {@link openText}.
 */
export function openPacked(key: DataKey, packed: Uint8Array, aad: string, where: string): Buffer {
  if (packed.length < IV_BYTES + TAG_BYTES) throw new DecryptionError(`${where}: the sealed row is truncated or malformed.`);
  const all = Buffer.from(packed.buffer, packed.byteOffset, packed.length);
  try {
    const decipher = createDecipheriv('aes-256-gcm', key.key, all.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(aad, 'utf8'));
    decipher.setAuthTag(all.subarray(all.length - TAG_BYTES));
    const head = decipher.update(all.subarray(IV_BYTES, all.length - TAG_BYTES));
    const tail = decipher.final();
    return tail.length === 0 ? head : Buffer.concat([head, tail]);
  } catch (err) {
    throw new DecryptionError(`${where}: the sealed row does not open (changed, moved from another row, or sealed under another key).`, { cause: err });
  }
}
