/**
 * @module artifacts/memory/memory-artifact-store
 * Artifacts in process memory, for tests and development. Same contract as the
 * durable backends (verification, tenancy, freshness), without durability: a
 * stream put here is held in memory, since memory is where it is stored.
 */
import { SEALED_BLOB_META } from '../backend.js';
import type { ArtifactRef, ArtifactSweepReport } from '../../contracts/artifact-store.js';
import type { ArtifactBackend, ArtifactRecord, BlobReader, RecordAddress, RecordPage, Staged, StoredRecord } from '../backend.js';
import { BaseArtifactStore } from '../base-artifact-store.js';
import { READ_CHUNK } from '../streams.js';

interface MemoryStaged extends Staged {
  bytes: Uint8Array;
}

/** Sort key of a record: unscoped first, then by tenant, then kind and name. */
function recordKey(address: RecordAddress): string {
  return `${address.tenant === null ? '0' : `1${address.tenant}`}\u0000${address.kind}\u0000${address.name}`;
}

class MemoryBackend implements ArtifactBackend {
  readonly name = 'memory';
  readonly blobs = new Map<string, { bytes: Uint8Array; freshAt: number }>();
  readonly records = new Map<string, StoredRecord>();
  private clock = 0;

  /** Strictly increasing, so two writes in one millisecond still order. */
  private tick(): number {
    this.clock = Math.max(this.clock + 0.001, Date.now());
    return this.clock;
  }

  async stage(chunks: AsyncIterable<Uint8Array>): Promise<Staged> {
    const parts: Uint8Array[] = [];
    let size = 0;
    for await (const chunk of chunks) {
      // Copied: the caller may reuse its buffer after put resolves.
      parts.push(chunk.slice());
      size += chunk.byteLength;
    }
    const bytes = new Uint8Array(size);
    let offset = 0;
    for (const part of parts) {
      bytes.set(part, offset);
      offset += part.byteLength;
    }
    return { size, bytes } as MemoryStaged;
  }

  async commitBlob(staged: Staged, sha256: string): Promise<void> {
    const existing = this.blobs.get(sha256);
    // A damaged blob (wrong size) is replaced by good bytes; a whole one is only refreshed.
    if (existing && existing.bytes.byteLength === staged.size) existing.freshAt = this.tick();
    else this.blobs.set(sha256, { bytes: (staged as MemoryStaged).bytes, freshAt: this.tick() });
  }

  async discard(): Promise<void> {}

  async readRecord(address: RecordAddress): Promise<StoredRecord | null> {
    const record = this.records.get(recordKey(address));
    return record ? structuredClone(record) : null;
  }

  async createRecord(address: RecordAddress, record: ArtifactRecord): Promise<StoredRecord | null> {
    const key = recordKey(address);
    const existing = this.records.get(key);
    if (existing) return structuredClone(existing);
    this.records.set(key, { ...structuredClone(record), freshAt: this.tick() });
    return null;
  }

  async freshen(address: RecordAddress, record: StoredRecord): Promise<boolean> {
    const stored = this.records.get(recordKey(address));
    if (!stored) return false;
    const now = this.tick();
    stored.freshAt = now;
    const blob = this.blobs.get(record.ref.sha256);
    if (blob) blob.freshAt = now;
    return true;
  }

  async deleteRecord(address: RecordAddress, staleBefore?: number): Promise<boolean> {
    const key = recordKey(address);
    const stored = this.records.get(key);
    if (!stored || (staleBefore !== undefined && stored.freshAt >= staleBefore)) return false;
    return this.records.delete(key);
  }

  async deleteBlob(sha256: string): Promise<boolean> {
    return this.blobs.delete(sha256);
  }

  async openBlob(sha256: string): Promise<BlobReader | null> {
    const blob = this.blobs.get(sha256);
    if (!blob) return null;
    const bytes = blob.bytes;
    return {
      size: bytes.byteLength,
      async *chunks() {
        for (let offset = 0; offset < bytes.byteLength; offset += READ_CHUNK) yield bytes.slice(offset, offset + READ_CHUNK);
      },
      close: async () => undefined,
    };
  }

  async listRecords(options: { tenant: string | null | undefined; cursor: string | undefined; limit: number }): Promise<RecordPage> {
    const keys = [...this.records.keys()]
      .filter((key) => options.tenant === undefined || this.records.get(key)!.tenant === options.tenant)
      .filter((key) => options.cursor === undefined || key > options.cursor)
      .sort();
    const page = keys.slice(0, options.limit);
    return { items: page.map((key) => structuredClone(this.records.get(key)!)), cursor: keys.length > options.limit ? page[page.length - 1]! : null };
  }

  async now(): Promise<number> {
    return Date.now();
  }

  async sweep(olderThan: number, dryRun: boolean): Promise<ArtifactSweepReport> {
    const referenced = new Set([...this.records.values()].flatMap((r) => [r.ref.sha256, r.metadata[SEALED_BLOB_META] ?? r.ref.sha256]));
    const report: ArtifactSweepReport = { blobs: 0, bytes: 0, temps: 0 };
    for (const [sha256, blob] of this.blobs) {
      if (referenced.has(sha256) || blob.freshAt >= olderThan) continue;
      report.blobs++;
      report.bytes += blob.bytes.byteLength;
      if (!dryRun) this.blobs.delete(sha256);
    }
    return report;
  }

  async close(): Promise<void> {}
}

/**
 * An {@link ArtifactStore} in process memory.
 *
 * @example
 * ```ts
 * import { memoryArtifacts } from 'cairn/memory';
 * const artifacts = memoryArtifacts();
 * const ref = await artifacts.put('hello', { mediaType: 'text/plain' });
 * ```
 */
export class MemoryArtifactStore extends BaseArtifactStore {
  private readonly memory: MemoryBackend;

  constructor() {
    const backend = new MemoryBackend();
    super(backend);
    this.memory = backend;
  }

  /** Test hook: replaces the stored bytes behind `ref` without touching its record (to prove corruption is detected). */
  corruptForTesting(ref: ArtifactRef | string, bytes: Uint8Array): void {
    const id = typeof ref === 'string' ? ref : ref.id;
    const record = [...this.memory.records.values()].find((r) => r.ref.id === id);
    // A sealed record's bytes are in a blob of their own.
    const blob = record && this.memory.blobs.get(record.metadata[SEALED_BLOB_META] ?? record.ref.sha256);
    if (blob) blob.bytes = bytes;
  }

  /** Test hook: sets when an artifact was last written or refreshed, as if time had passed. */
  ageForTesting(ref: ArtifactRef, freshAt: number): void {
    for (const record of this.memory.records.values()) if (record.ref.id === ref.id) record.freshAt = freshAt;
    const blob = this.memory.blobs.get(ref.sha256);
    if (blob) blob.freshAt = Math.min(blob.freshAt, freshAt);
  }
}

/**
 * Creates an in-memory artifact store (tests, development): the same contract as
 * `fsArtifacts` and `s3Artifacts`, gone with the process.
 *
 * @example
 * ```ts
 * const app = graph(State).node(...).compile({ engine: memory(), artifacts: memoryArtifacts() });
 * ```
 */
export function memoryArtifacts(): MemoryArtifactStore {
  return new MemoryArtifactStore();
}
