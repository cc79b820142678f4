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

/**
 * type/subtype, then optional parameters in printable ASCII: a media type becomes a
 * Content-Type header (S3, the inspector's downloads), where a control character or a
 * line break would be refused by the server or split the header.
 */
const MEDIA_TYPE = /^[\w.+-]+\/[\w.+-]+([ \t]*;[\t\x20-\x7e]*)?$/;

export function checkMediaType(mediaType: unknown): asserts mediaType is string {
  if (typeof mediaType !== 'string' || !MEDIA_TYPE.test(mediaType) || mediaType.length > 255) {
    throw new InvalidKeyError(`media type ${describeValue(mediaType)} is not of the form type/subtype (with parameters after ";" in printable ASCII).`);
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

export const TENANT_PREFIX = 'tenant:';

/** Half of a UTF-16 surrogate pair on its own: not encodable as UTF-8. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Validates a tenant name: 1–256 characters, no control characters. */
export function checkTenant(tenant: unknown): asserts tenant is string {
  // eslint-disable-next-line no-control-regex
  if (typeof tenant !== 'string' || tenant.length === 0 || tenant.length > 256 || /[\u0000-\u001f\u007f]/.test(tenant) || LONE_SURROGATE.test(tenant)) {
    throw new InvalidKeyError(`a tenant must be a string of 1 to 256 characters without control characters, got ${describeValue(tenant)}.`);
  }
}

/** The parts of a ref id: its tenant (null when unscoped), and a digest or a key. */
export type ParsedRefId = ({ kind: 'content'; digest: string } | { kind: 'key'; key: string }) & { tenant: string | null };

/** The ref id of bytes stored by content (`key` undefined) or under a key, in a tenant or not. */
export function formatRefId(tenant: string | null, kind: 'content' | 'key', name: string): string {
  const inner = kind === 'content' ? CONTENT_PREFIX + name : KEY_PREFIX + name;
  return tenant === null ? inner : `${TENANT_PREFIX}${encodeURIComponent(tenant)}/${inner}`;
}

/** Splits a ref id into its tenant, kind and name, validating each part. */
export function parseRefId(id: unknown): ParsedRefId {
  let tenant: string | null = null;
  let rest = id;
  if (typeof id === 'string' && id.startsWith(TENANT_PREFIX)) {
    const slash = id.indexOf('/', TENANT_PREFIX.length);
    const encoded = slash < 0 ? '' : id.slice(TENANT_PREFIX.length, slash);
    let decoded: string;
    try {
      decoded = decodeURIComponent(encoded);
    } catch {
      throw new InvalidKeyError(`artifact id ${describeValue(id)} has a malformed tenant.`);
    }
    checkTenant(decoded);
    // One spelling per tenant: "a%62" and "ab" must not be two ids for one artifact.
    if (encodeURIComponent(decoded) !== encoded) throw new InvalidKeyError(`artifact id ${describeValue(id)} spells its tenant in a non-canonical way.`);
    tenant = decoded;
    rest = id.slice(slash + 1);
  }
  if (typeof rest === 'string' && rest.startsWith(CONTENT_PREFIX)) {
    const digest = rest.slice(CONTENT_PREFIX.length);
    checkDigest(digest);
    return { tenant, kind: 'content', digest };
  }
  if (typeof rest === 'string' && rest.startsWith(KEY_PREFIX)) {
    const key = rest.slice(KEY_PREFIX.length);
    checkArtifactKey(key);
    return { tenant, kind: 'key', key };
  }
  throw new InvalidKeyError(`artifact id ${describeValue(id)} is neither "sha256:<digest>" nor "key:<key>" (optionally behind "tenant:<tenant>/").`);
}

/** Validates put metadata: at most 64 pairs of `[a-z0-9_-]{1,64}` names and string values, 8 KiB in all. */
export function checkMetadata(metadata: unknown): asserts metadata is Record<string, string> {
  if (metadata === undefined) return;
  if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata)) {
    throw new InvalidKeyError(`artifact metadata must be an object of string values, got ${describeValue(metadata)}.`);
  }
  const entries = Object.entries(metadata);
  let size = 0;
  for (const [name, value] of entries) {
    if (!/^[a-z0-9_-]{1,64}$/.test(name)) throw new InvalidKeyError(`artifact metadata name ${describeValue(name)} must be 1 to 64 of a-z 0-9 _ -.`);
    if (name.startsWith('cairn-sealed-')) throw new InvalidKeyError(`artifact metadata name ${describeValue(name)} is reserved: names starting "cairn-sealed-" are what an encrypted store keeps.`);
    if (typeof value !== 'string' || LONE_SURROGATE.test(value)) throw new InvalidKeyError(`artifact metadata "${name}" must be a string, got ${describeValue(value)}.`);
    size += name.length + Buffer.byteLength(value);
  }
  if (entries.length > 64 || size > 8192) throw new InvalidKeyError(`artifact metadata holds ${entries.length} pairs and ${size} bytes; the limits are 64 pairs and 8192 bytes.`);
}

/**
 * True for a value shaped like an {@link ArtifactRef}.
 *
 * @example
 * ```ts
 * if (isArtifactRef(state.page)) console.log(state.page.media_type, state.page.size_bytes);
 * ```
 */
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

/**
 * Every artifact ref inside a value (state, a change, a store value), depth first.
 *
 * @example
 * ```ts
 * const refs = findArtifactRefs(await app.getState({ thread: 'cust_42' }));
 * ```
 */
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
