/**
 * @module crypto/artifacts
 * Artifact bytes sealed at rest: {@link encryptedArtifacts} wraps cairn's fs, S3 or
 * memory artifact store so that every blob is written as AES-256-GCM segments under
 * a data key of the writer's scope, and read back through the same keys.
 *
 * A sealed blob is a header and segments:
 *
 * ```
 * "CAF1" ‖ key id length (1 byte) ‖ key id ‖ nonce (16 bytes) ‖ segment size (u32 BE)
 * segment i: AES-256-GCM(k, iv = 0⁷ ‖ i (u32 BE) ‖ last (1 byte), aad = header) ‖ tag
 * k = HKDF-SHA-256(data key, salt = nonce, info = "cairn-artifact-v1")
 * ```
 *
 * Each blob gets its own key (the random nonce), so the segment counter is a safe IV;
 * the index and the last-segment flag in the IV make a reordered, dropped or cut-short
 * segment fail its tag, and the header (key id, nonce, segment size) is bound to every
 * segment. Segments are 64 KiB, so writing and reading stay bounded in memory whatever
 * the artifact's size. The record beside the blob keeps the plaintext's sha256 and size
 * (the ref: a read verifies both after opening), and the caller's metadata sealed.
 *
 * The scope of an artifact is its tenant's (`tenant:<t>`, for refs written through a
 * tenant view, which is how a thread with a tenant writes) or the shared `artifacts`
 * scope (the unscoped store, which threads without a tenant write to: its ids are
 * shared by every such thread, so their bytes cannot belong to one of them). Erasing a
 * tenant destroys the keys of its artifacts with the rest of its data.
 *
 * Kept in the clear, as names: the ref (id, which holds a key or the plaintext's
 * sha256; media type; size) and the tenant. Do not put personal data in keys.
 *
 * @example
 * ```ts
 * const engine = encrypted(sqlite('./cairn.db'), { keys: keyFile('./cairn-keys.json') });
 * const artifacts = encryptedArtifacts(fsArtifacts('./artifacts'), { engine });
 * ```
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import type { ArtifactStore } from '../contracts/artifact-store.js';
import type { Engine } from '../contracts/engine.js';
import { BaseArtifactStore } from '../artifacts/base-artifact-store.js';
import type { BlobSealer } from '../artifacts/backend.js';
import { DecryptionError, InvalidOptionError } from '../errors.js';
import { unknownOption } from '../internal/option-keys.js';
import { openText, sealText, type DataKey } from './envelope.js';
import { tenantScope, type KeyringApi } from './scopes.js';

/** The scope of artifacts written through the unscoped store (threads without a tenant, scripts). */
export const SHARED_ARTIFACT_SCOPE = 'artifacts';

/** Plaintext bytes per sealed segment. */
export const ARTIFACT_SEGMENT_BYTES = 64 * 1024;

const MAGIC = Buffer.from('CAF1', 'latin1');
const NONCE_BYTES = 16;
const TAG_BYTES = 16;

/** Options of {@link encryptedArtifacts}: the keys, from an encrypted engine or a keyring. */
export type EncryptedArtifactsOptions =
  | { engine: Pick<Engine, 'encryption'>; required?: boolean }
  | { keyring: KeyringApi; required?: boolean };

/** The scope an artifact written through a view of `tenant` belongs to. */
export function artifactScope(tenant: string | null): string {
  return tenant === null ? SHARED_ARTIFACT_SCOPE : tenantScope(tenant);
}

/**
 * An artifact store over the same backend as `store` whose blobs are sealed (see the
 * module documentation). `store` must be one of cairn's (fs, S3, memory); the two
 * share their backend, so close either one. Records written in the clear (before
 * encryption was turned on) still read, unless `required` (default: the engine's
 * `encryption.required`) refuses them with PlaintextRowError.
 *
 * @example
 * ```ts
 * const artifacts = encryptedArtifacts(s3Artifacts({ bucket: 'cairn' }), { engine });
 * const app = graph.compile({ engine, artifacts });
 * ```
 */
export function encryptedArtifacts(store: ArtifactStore, options: EncryptedArtifactsOptions): BaseArtifactStore {
  if (!(store instanceof BaseArtifactStore)) {
    throw new InvalidOptionError(`encryptedArtifacts wraps cairn's artifact stores (fs, s3, memory); the ${store.engine} store is not one of them.`);
  }
  if (store.tenant !== null) throw new InvalidOptionError('encryptedArtifacts wraps the unscoped store; take tenant views of what it returns.');
  const unknown = options !== null && typeof options === 'object' ? unknownOption('encryptedArtifacts', options, ['engine', 'keyring', 'required']) : undefined;
  if (unknown) throw new InvalidOptionError(unknown);
  let keyring: KeyringApi;
  let required: boolean;
  if ('keyring' in options) {
    keyring = options.keyring;
    required = options.required ?? false;
  } else {
    const encryption = options.engine?.encryption;
    if (!encryption) throw new InvalidOptionError('encryptedArtifacts({ engine }) needs an encrypted engine (encrypted(engine, { keys }) from cairn/crypto).');
    keyring = encryption.keyring;
    required = options.required ?? encryption.required;
  }
  return store.withSealer(artifactSealer(keyring, required));
}

/** The sealer behind {@link encryptedArtifacts}: segments under the keyring's data keys. */
export function artifactSealer(keyring: KeyringApi, required = false): BlobSealer {
  return {
    required,
    seal: (tenant, chunks) => sealBlob(() => keyring.keyForWrite(artifactScope(tenant)), chunks),
    open: (chunks) => openBlob((id) => keyring.keyById(id), chunks),
    async sealMetadata(tenant, refId, metadata) {
      const key = await keyring.keyForWrite(artifactScope(tenant));
      return sealText(key, JSON.stringify(metadata), metadataAad(refId));
    },
    async openMetadata(refId, sealed) {
      const keyId = sealed.slice(4, sealed.indexOf(':', 4));
      const key = await keyring.keyById(keyId);
      return JSON.parse(openText(key, sealed, metadataAad(refId), `metadata of artifact ${refId}`)) as Record<string, string>;
    },
  };
}

function metadataAad(refId: string): string {
  return `cairn-artifact-meta|${refId}`;
}

function blobKey(key: DataKey, nonce: Buffer): Buffer {
  return Buffer.from(hkdfSync('sha256', key.key, nonce, Buffer.from('cairn-artifact-v1'), 32));
}

function segmentIv(index: number, last: boolean): Buffer {
  const iv = Buffer.alloc(12);
  iv.writeUInt32BE(index, 7);
  iv[11] = last ? 1 : 0;
  return iv;
}

/** Seals `source` in segments; the data key is fetched when the first byte is needed. */
export async function* sealBlob(keyFor: () => Promise<DataKey>, source: AsyncIterable<Uint8Array>, segmentBytes = ARTIFACT_SEGMENT_BYTES): AsyncGenerator<Uint8Array> {
  const key = await keyFor();
  const id = Buffer.from(key.id, 'utf8');
  if (id.length > 255) throw new InvalidOptionError(`data key id ${key.id} is too long to name in a sealed artifact.`);
  const nonce = randomBytes(NONCE_BYTES);
  const size = Buffer.alloc(4);
  size.writeUInt32BE(segmentBytes);
  const header = Buffer.concat([MAGIC, Buffer.from([id.length]), id, nonce, size]);
  const k = blobKey(key, nonce);
  let index = 0;
  const seal = (plain: Uint8Array, last: boolean): Buffer => {
    const cipher = createCipheriv('aes-256-gcm', k, segmentIv(index++, last));
    cipher.setAAD(header);
    return Buffer.concat([cipher.update(plain), cipher.final(), cipher.getAuthTag()]);
  };
  yield header;
  // Held back until more bytes follow: only then is a full segment known not to be the last.
  let held: Buffer = Buffer.alloc(0);
  for await (const chunk of source) {
    // A copy: the caller may reuse its chunk's memory once it is handed on.
    held = Buffer.concat([held, chunk]);
    while (held.length > segmentBytes) {
      yield seal(held.subarray(0, segmentBytes), false);
      held = held.subarray(segmentBytes);
    }
  }
  yield seal(held, true);
}

/** Opens a sealed blob segment by segment; DecryptionError for a bad header, a failed tag, or a blob cut short. */
export async function* openBlob(keyById: (id: string) => Promise<DataKey>, source: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
  let buffer: Buffer = Buffer.alloc(0);
  let header: Buffer | undefined;
  let k: Buffer | undefined;
  let segment = 0;
  let index = 0;
  const open = (sealed: Buffer, last: boolean): Buffer => {
    if (sealed.length < TAG_BYTES) throw new DecryptionError('a sealed artifact ends inside a segment: it was cut short.');
    try {
      const decipher = createDecipheriv('aes-256-gcm', k!, segmentIv(index++, last));
      decipher.setAAD(header!);
      decipher.setAuthTag(sealed.subarray(sealed.length - TAG_BYTES));
      return Buffer.concat([decipher.update(sealed.subarray(0, sealed.length - TAG_BYTES)), decipher.final()]);
    } catch (error) {
      throw new DecryptionError(`segment ${index - 1} of a sealed artifact does not open (changed, reordered, or the artifact was cut short).`, { cause: error });
    }
  };
  for await (const chunk of source) {
    buffer = buffer.length === 0 ? Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength) : Buffer.concat([buffer, chunk]);
    if (!header) {
      if (buffer.length < MAGIC.length + 1) continue;
      if (!buffer.subarray(0, MAGIC.length).equals(MAGIC)) throw new DecryptionError('a sealed artifact does not start with its header.');
      const end = MAGIC.length + 1 + buffer[MAGIC.length]! + NONCE_BYTES + 4;
      if (buffer.length < end) continue;
      header = Buffer.from(buffer.subarray(0, end));
      const keyId = header.subarray(MAGIC.length + 1, end - NONCE_BYTES - 4).toString('utf8');
      segment = header.readUInt32BE(end - 4);
      if (segment === 0) throw new DecryptionError('a sealed artifact names a segment size of 0.');
      k = blobKey(await keyById(keyId), header.subarray(end - NONCE_BYTES - 4, end - 4));
      buffer = buffer.subarray(end);
    }
    while (buffer.length > segment + TAG_BYTES) {
      yield open(buffer.subarray(0, segment + TAG_BYTES), false);
      buffer = buffer.subarray(segment + TAG_BYTES);
    }
  }
  if (!header) throw new DecryptionError('a sealed artifact ends inside its header.');
  yield open(buffer, true);
}
