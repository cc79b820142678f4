/**
 * @module artifacts/memory-artifact-store
 * Artifacts in process memory, for tests and development.
 */
import type { ArtifactData, ArtifactPutOptions, ArtifactRef, ArtifactStore } from '../contracts/artifact-store.js';
import { ArtifactNotFoundError } from '../errors.js';
import { checkArtifactKey, checkMediaType, makeRef, parseRefId, toBytes, verifyBytes } from './refs.js';

export class MemoryArtifactStore implements ArtifactStore {
  readonly backend = 'memory';
  /** Stored bytes by ref id, with the ref. Kept as copies: callers cannot mutate them. */
  private readonly blobs = new Map<string, { ref: ArtifactRef; bytes: Uint8Array }>();

  async put(data: ArtifactData, options: ArtifactPutOptions): Promise<ArtifactRef> {
    if (options.key !== undefined) return this.putNamed(options.key, data, options);
    checkMediaType(options.mediaType);
    const bytes = toBytes(data);
    const ref = makeRef(bytes, options.mediaType);
    if (!this.blobs.has(ref.id)) this.blobs.set(ref.id, { ref, bytes: bytes.slice() });
    return { ...this.blobs.get(ref.id)!.ref };
  }

  async putNamed(key: string, data: ArtifactData, options: { mediaType: string }): Promise<ArtifactRef> {
    checkArtifactKey(key);
    checkMediaType(options.mediaType);
    // Checked and stored without an await in between: two concurrent puts of one key end with one ref.
    const existing = this.blobs.get(`key:${key}`);
    if (existing) return { ...existing.ref };
    const bytes = toBytes(data);
    const ref = makeRef(bytes, options.mediaType, key);
    this.blobs.set(ref.id, { ref, bytes: bytes.slice() });
    return { ...ref };
  }

  async head(key: string): Promise<ArtifactRef | null> {
    checkArtifactKey(key);
    const blob = this.blobs.get(`key:${key}`);
    return blob ? { ...blob.ref } : null;
  }

  async get(ref: ArtifactRef): Promise<Uint8Array> {
    parseRefId(ref.id);
    const blob = this.blobs.get(ref.id);
    if (!blob) throw new ArtifactNotFoundError(`artifact ${ref.id} is not stored.`, { place: { engine: this.backend } });
    return verifyBytes(ref, blob.bytes.slice(), this.backend);
  }

  async delete(ref: ArtifactRef): Promise<void> {
    parseRefId(ref.id);
    this.blobs.delete(ref.id);
  }

  async list(): Promise<ArtifactRef[]> {
    return [...this.blobs.values()].map((b) => ({ ...b.ref })).sort((a, b) => (a.id < b.id ? -1 : 1));
  }

  /** Test hook: replaces stored bytes without updating the ref (to prove corruption is detected). */
  corruptForTesting(id: string, bytes: Uint8Array): void {
    const blob = this.blobs.get(id);
    if (blob) blob.bytes = bytes;
  }
}

/** Creates an in-memory artifact store. */
export function memoryArtifacts(): MemoryArtifactStore {
  return new MemoryArtifactStore();
}
