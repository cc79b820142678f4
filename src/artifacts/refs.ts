/**
 * @module artifacts/refs
 * Helpers shared by every artifact backend: hashing bytes into a ref, checking
 * bytes against a ref, validating keys and digests before they become paths or
 * object keys.
 */
import { createHash } from 'node:crypto';
import type { ArtifactData, ArtifactRef } from '../contracts/artifact-store.js';
import { ArtifactIntegrityError, InvalidKeyError } from '../errors.js';

export const CONTENT_PREFIX = 'sha256:';
export const KEY_PREFIX = 'key:';

/** Bytes of artifact data (strings are UTF-8). */
export function toBytes(data: ArtifactData): Uint8Array {
  return typeof data === 'string' ? new TextEncoder().encode(data) : data;
}

export function sha256OfBytes(bytes: Uint8Array): string {
  return createHash('sha256').update(bytes).digest('hex');
}

/**
 * A short printable form of a rejected value for an error message. `JSON.stringify`
 * alone throws on BigInt and cyclic objects, which would turn a rejection into a TypeError.
 */
export function describeValue(value: unknown): string {
  let text: string;
  try {
    text = JSON.stringify(value) ?? String(value);
  } catch {
    text = Object.prototype.toString.call(value);
  }
  return text.length > 80 ? `${text.slice(0, 80)}…` : text;
}

/** Validates a sha256 digest: exactly 64 lowercase hex characters. */
export function checkDigest(digest: unknown): asserts digest is string {
  if (typeof digest !== 'string' || !/^[0-9a-f]{64}$/.test(digest)) {
    throw new InvalidKeyError(`an artifact digest must be 64 lowercase hex characters, got ${describeValue(digest)}.`);
  }
}

/**
 * Validates an artifact key: 1–512 characters of letters, digits and `._-:@=+`,
 * with `/` allowed between non-empty segments that are not `.` or `..`; no
 * leading `/`, no NUL or control characters, no backslash.
 */
export function checkArtifactKey(key: unknown): asserts key is string {
  if (typeof key !== 'string' || key.length === 0 || key.length > 512) {
    throw new InvalidKeyError(`an artifact key must be a string of 1 to 512 characters, got ${describeValue(key)}.`);
  }
  if (!/^[A-Za-z0-9._\-:@=+/]+$/.test(key)) {
    throw new InvalidKeyError(`artifact key ${JSON.stringify(key)} may only contain letters, digits and . _ - : @ = + /.`);
  }
  for (const segment of key.split('/')) {
    if (segment === '' || segment === '.' || segment === '..') {
      throw new InvalidKeyError(`artifact key ${JSON.stringify(key)} has an empty, "." or ".." segment.`);
    }
  }
}

export function checkMediaType(mediaType: unknown): asserts mediaType is string {
  if (typeof mediaType !== 'string' || !/^[\w.+-]+\/[\w.+-]+(\s*;.*)?$/.test(mediaType) || mediaType.length > 255) {
    throw new InvalidKeyError(`media type ${describeValue(mediaType)} is not of the form type/subtype.`);
  }
}

/** Builds the ref of bytes stored by content or under a key. */
export function makeRef(bytes: Uint8Array, mediaType: string, key?: string): ArtifactRef {
  const sha256 = sha256OfBytes(bytes);
  return { id: key === undefined ? CONTENT_PREFIX + sha256 : KEY_PREFIX + key, sha256, media_type: mediaType, size_bytes: bytes.byteLength };
}

/** Throws ArtifactIntegrityError unless `bytes` match `ref` in size and sha256. */
export function verifyBytes(ref: ArtifactRef, bytes: Uint8Array, backend: string): Uint8Array {
  if (bytes.byteLength !== ref.size_bytes) {
    throw new ArtifactIntegrityError(`artifact ${ref.id} has ${bytes.byteLength} bytes, its ref says ${ref.size_bytes}.`, { place: { engine: backend } });
  }
  const actual = sha256OfBytes(bytes);
  if (actual !== ref.sha256) {
    throw new ArtifactIntegrityError(`artifact ${ref.id} hashes to ${actual}, its ref says ${ref.sha256}.`, { place: { engine: backend } });
  }
  return bytes;
}

/** Splits a ref id into its kind and name, validating it. */
export function parseRefId(id: string): { kind: 'content'; digest: string } | { kind: 'key'; key: string } {
  if (typeof id === 'string' && id.startsWith(CONTENT_PREFIX)) {
    const digest = id.slice(CONTENT_PREFIX.length);
    checkDigest(digest);
    return { kind: 'content', digest };
  }
  if (typeof id === 'string' && id.startsWith(KEY_PREFIX)) {
    const key = id.slice(KEY_PREFIX.length);
    checkArtifactKey(key);
    return { kind: 'key', key };
  }
  throw new InvalidKeyError(`artifact id ${describeValue(id)} is neither "sha256:<digest>" nor "key:<key>".`);
}

/** True for a value shaped like an {@link ArtifactRef}. */
export function isArtifactRef(value: unknown): value is ArtifactRef {
  if (typeof value !== 'object' || value === null) return false;
  const ref = value as Record<string, unknown>;
  return (
    typeof ref.id === 'string' &&
    typeof ref.sha256 === 'string' &&
    /^[0-9a-f]{64}$/.test(ref.sha256) &&
    typeof ref.media_type === 'string' &&
    typeof ref.size_bytes === 'number'
  );
}

/** Every artifact ref inside a value (state, a change, a store value), depth first. */
export function findArtifactRefs(value: unknown, found: ArtifactRef[] = [], seen = new Set<object>()): ArtifactRef[] {
  if (typeof value !== 'object' || value === null || seen.has(value)) return found;
  seen.add(value);
  if (isArtifactRef(value)) {
    found.push(value);
    return found;
  }
  const children = value instanceof Map ? [...value.values()] : value instanceof Set ? [...value] : Array.isArray(value) ? value : Object.values(value);
  for (const child of children) findArtifactRefs(child, found, seen);
  return found;
}
