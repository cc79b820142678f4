/**
 * @module artifacts/backend
 * What an artifact backend implements: storage primitives only. Everything the
 * {@link ArtifactStore} contract promises beyond them (validation, hashing,
 * verification, streaming, tenancy, idempotency) lives once in
 * {@link BaseArtifactStore}, so the memory, fs and s3 backends differ only in
 * where bytes and records go.
 *
 * Two kinds of objects:
 * - a **blob**: the bytes, named by their sha256, shared by every record that
 *   points at them;
 * - a **record**: one ref (content-addressed or named, in a tenant or not) with
 *   its metadata. Its `freshAt` is when it was written or last refreshed.
 *
 * A write stages the bytes (hashing them on the way), places the blob, then
 * creates the record: a crash leaves at worst a staged temp or an unreferenced
 * blob, which {@link ArtifactBackend.sweep} removes later; never a record without
 * its whole blob.
 */
import type { ArtifactClockOptions, ArtifactRef, ArtifactSweepReport } from '../contracts/artifact-store.js';

/** Where one record lives: its tenant (null when unscoped), and a digest or key. */
export interface RecordAddress {
  tenant: string | null;
  kind: 'content' | 'key';
  /** The digest (content) or the key (named). Validated before it gets here. */
  name: string;
}

/** What a backend keeps for one artifact: its ref, its tenant and its metadata. */
export interface ArtifactRecord {
  ref: ArtifactRef;
  tenant: string | null;
  metadata: Record<string, string>;
}

/** A record as read back, with when it was last written or refreshed. */
export interface StoredRecord extends ArtifactRecord {
  /** Last write or refresh, by the backend's clock (ms). */
  freshAt: number;
}

/** Bytes staged by {@link ArtifactBackend.stage}; the backend's own handle. */
export interface Staged {
  readonly size: number;
}

/** An open blob. `chunks()` reads it from the start each time it is called. */
export interface BlobReader {
  readonly size: number;
  chunks(signal?: AbortSignal): AsyncIterable<Uint8Array>;
  close(): Promise<void>;
}

export interface RecordPage {
  items: StoredRecord[];
  cursor: string | null;
}

/** The storage primitives of an artifact store (memory, fs, s3): {@link BaseArtifactStore} builds the contract on them. */
export interface ArtifactBackend {
  readonly name: string;
  /** Writes `chunks` to a temporary place (durably, where the backend is durable). Nothing is visible yet. */
  stage(chunks: AsyncIterable<Uint8Array>, signal?: AbortSignal): Promise<Staged>;
  /**
   * Makes the blob `sha256` exist with the staged bytes: moves them into place, or,
   * when the blob is already stored whole, refreshes it and drops the staged copy.
   */
  commitBlob(staged: Staged, sha256: string): Promise<void>;
  /** Drops staged bytes (after a failure or an abort). Never throws. */
  discard(staged: Staged): Promise<void>;
  /** The record at `address`, or null. Throws ArtifactIntegrityError for a damaged record. */
  readRecord(address: RecordAddress): Promise<StoredRecord | null>;
  /** Creates the record unless one exists: returns null when created, else the existing one. */
  createRecord(address: RecordAddress, record: ArtifactRecord): Promise<StoredRecord | null>;
  /** Refreshes the record and its blob; false when the record no longer exists. */
  freshen(address: RecordAddress, record: StoredRecord): Promise<boolean>;
  /** Deletes the record, only if still stale when `staleBefore` is given; true when deleted. */
  deleteRecord(address: RecordAddress, staleBefore?: number): Promise<boolean>;
  /** Opens the blob, or null when it is missing. */
  openBlob(sha256: string): Promise<BlobReader | null>;
  /**
   * Deletes the blob now, whatever its age (an erasure removing the bytes of what it
   * deleted); the caller has checked that no record points at it. True when deleted.
   */
  deleteBlob(sha256: string): Promise<boolean>;
  /** Records of one tenant (`null`: unscoped ones; `undefined`: every tenant), in a stable order. */
  listRecords(options: { tenant: string | null | undefined; cursor: string | undefined; limit: number }): Promise<RecordPage>;
  /** The clock `freshAt` is measured with; with `readOnly`, read without writing anything. */
  now(options?: ArtifactClockOptions): Promise<number>;
  sweep(olderThan: number, dryRun: boolean): Promise<ArtifactSweepReport>;
  close(): Promise<void>;
}

/**
 * Metadata a sealed record keeps beside its ref (the names are reserved: a put may
 * not use the `cairn-sealed-` prefix). A sealed artifact's ref keeps the plaintext's
 * sha256 and size; its bytes live in their own blob, named by the sealed bytes' sha256.
 */
export const SEALED_BLOB_META = 'cairn-sealed-blob';
/** The sealed blob's size in bytes (decimal). */
export const SEALED_SIZE_META = 'cairn-sealed-size';
/** The caller's metadata, sealed (absent when there was none). */
export const SEALED_METADATA_META = 'cairn-sealed-meta';
export const SEALED_META_PREFIX = 'cairn-sealed-';

/**
 * Seals the bytes of artifacts at rest: a store made by `encryptedArtifacts`
 * (`cairn/crypto`) passes every blob it writes and reads through one. The base store
 * keeps everything else (hashing the plaintext, verification, records, tenancy).
 */
export interface BlobSealer {
  /** Refuse records stored in the clear (written without encryption). */
  readonly required: boolean;
  /** The sealed form of `chunks`, for an artifact written through a view of `tenant` (null: the unscoped store). */
  seal(tenant: string | null, chunks: AsyncIterable<Uint8Array>): AsyncIterable<Uint8Array>;
  /** The plaintext of a sealed blob, segment by segment; DecryptionError on any damage, truncation or reordering. */
  open(chunks: AsyncIterable<Uint8Array>): AsyncIterable<Uint8Array>;
  /** Seals the caller's metadata of the artifact `refId`. */
  sealMetadata(tenant: string | null, refId: string, metadata: Record<string, string>): Promise<string>;
  /** Opens what {@link sealMetadata} sealed. */
  openMetadata(refId: string, sealed: string): Promise<Record<string, string>>;
}

/** The sha256 of every blob some record (content or named, any tenant) points at: what a blob sweep must keep. */
export async function referencedDigests(backend: Pick<ArtifactBackend, 'listRecords'>): Promise<Set<string>> {
  const referenced = new Set<string>();
  for (let cursor: string | undefined; ; ) {
    const page = await backend.listRecords({ tenant: undefined, cursor, limit: 1000 });
    for (const record of page.items) {
      referenced.add(record.ref.sha256);
      // A sealed record's bytes are in a blob of their own.
      const sealed = record.metadata[SEALED_BLOB_META];
      if (sealed !== undefined) referenced.add(sealed);
    }
    if (page.cursor === null) return referenced;
    cursor = page.cursor;
  }
}
