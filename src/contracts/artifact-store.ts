/**
 * @module contracts/artifact-store
 * Big payloads kept out of state, referenced by an {@link ArtifactRef}.
 *
 * Contract for every backend (memory, fs, s3 and third-party ones proven by
 * `artifactStoreSuite` from `cairn/testing`):
 * - **Content addressing**: `put` without a key stores by sha256: identical bytes
 *   are stored once and get the same ref (`id` = `sha256:<hex>`).
 * - **Idempotency by key**: `putNamed(key, …)` returns the stored ref when the key
 *   exists and writes nothing (`id` = `key:<key>`); concurrent calls with one key end
 *   with one ref. `head(key)` answers whether it exists: the recovery probe.
 * - **Atomicity**: a write is all or nothing. A crash at any point leaves no ref or
 *   a ref to whole, durable bytes; never a ref to a partial blob.
 * - **Verification**: `get` and `stream` check size and sha256 against the caller's
 *   ref and throw {@link ArtifactIntegrityError} rather than hand over bytes that do
 *   not match (see {@link ArtifactStreamOptions.verify} for what that means for a stream).
 * - **Streaming**: `put` accepts a `ReadableStream` or an `AsyncIterable` of bytes and
 *   `stream` returns one; neither holds the whole payload in memory (except the
 *   memory backend, whose storage is memory).
 * - **Validation first**: keys, ids, tenants and digests are validated before any
 *   path or object key is built ({@link InvalidKeyError}); an option a call does not
 *   take, or a flag (`dryRun`, `allTenants`, `readOnly`) that is not a boolean, is
 *   InvalidOptionError before anything is touched.
 * - **Tenancy**: `forTenant(t)` is a view whose refs carry the tenant
 *   (`tenant:<t>/sha256:…`); reading another tenant's ref throws {@link AccessDeniedError}.
 * - **Freshness for GC**: every call that hands out a ref to bytes already stored
 *   (`put` of known bytes, `putNamed` of an existing key, `head`) refreshes the
 *   artifact's `freshAt`, so a collector with a grace period never deletes what a
 *   step that has not committed yet just obtained.
 */
import type { AccessDeniedError, ArtifactIntegrityError, InvalidKeyError } from '../errors.js';

/** A reference to a stored artifact: small enough to keep in state. */
export interface ArtifactRef {
  /** `sha256:<hex>`, `key:<key>`, or either behind `tenant:<tenant>/`. */
  id: string;
  /** 64 lowercase hex characters. */
  sha256: string;
  media_type: string;
  size_bytes: number;
}

/** Bytes in memory: a `Uint8Array`, or a string stored as its UTF-8 bytes. */
export type ArtifactData = Uint8Array | string;

/** What `put` accepts: bytes in memory, or a stream of byte chunks read once, front to back. */
export type ArtifactBody = ArtifactData | ReadableStream<Uint8Array> | AsyncIterable<Uint8Array | string>;

/** Options of {@link ArtifactStore.put}: the media type, an optional key to store under, metadata. */
export interface ArtifactPutOptions {
  /** `type/subtype`, e.g. `application/pdf`. */
  mediaType: string;
  /** Store under this key (the artifact's name: its id is `key:<key>`) instead of by content, as `putNamed` does. */
  key?: string;
  /**
   * Small string pairs kept with the ref (not part of it): lowercase names of
   * `[a-z0-9_-]`, at most 8 KiB in all. Returned by `stat` and `list`.
   */
  metadata?: Record<string, string>;
  /** Aborts the write; nothing is stored. */
  signal?: AbortSignal;
}

/** Options of {@link ArtifactStore.stream}: when the bytes are verified against the ref. */
export interface ArtifactStreamOptions {
  /**
   * - `before` (default): the bytes are hashed once before the first chunk is
   *   delivered, then read again and delivered; corruption throws before any byte
   *   is handed over. Costs a second read of the blob.
   * - `during`: one pass; the last chunk is held back until the digest is checked,
   *   so a corrupted stream never ends cleanly, it errors. For consumers that can
   *   discard what they received (writing a temp file, then renaming it).
   */
  verify?: 'before' | 'during';
  signal?: AbortSignal;
}

/** A stored artifact's ref with what the store knows about it. */
export interface ArtifactInfo {
  ref: ArtifactRef;
  tenant: string | null;
  metadata: Record<string, string>;
  /**
   * When the artifact was last written or handed out again (ms, by the backend's
   * clock: see {@link ArtifactStore.now}). A collector's grace period counts from here.
   */
  freshAt: number;
}

/** Options of {@link ArtifactStore.list}: a page size, the previous page's cursor, every tenant or one. */
export interface ArtifactListOptions {
  /** At most this many (default 1000). */
  limit?: number;
  /** The `cursor` of the previous page. */
  cursor?: string;
  /** List every tenant's artifacts, not only this view's (for collectors and verifiers). */
  allTenants?: boolean;
}

/** One page of a listing. Order is stable and backend-defined; `cursor` is null after the last page. */
export interface ArtifactPage {
  items: ArtifactInfo[];
  cursor: string | null;
}

/** Options of {@link ArtifactStore.delete}. */
export interface ArtifactDeleteOptions {
  /**
   * Delete only if the artifact's `freshAt` is still before this time (backend
   * clock). Checked atomically with the delete where the backend can (memory, fs),
   * so a collector never removes an artifact a writer refreshed meanwhile.
   */
  staleBefore?: number;
}

/** What {@link ArtifactStore.sweep} removed (or would remove). */
export interface ArtifactSweepReport {
  /** Blobs no ref points at, older than the cutoff. */
  blobs: number;
  bytes: number;
  /** Temp files and incomplete uploads left by crashed writes. */
  temps: number;
}

/** Which artifacts {@link ArtifactStore.sweep} removes. */
export interface ArtifactSweepOptions {
  /** A time by the store's clock ({@link ArtifactStore.now}), ms: what was last written or used before it goes. */
  staleBefore?: number;
  /** @deprecated Since 0.2.0: use `staleBefore` (the same time; it was never a duration). */
  olderThan?: number;
  /** Count, remove nothing. */
  dryRun?: boolean;
}

/** Options of {@link ArtifactStore.now}. */
export interface ArtifactClockOptions {
  /**
   * Learn the time without writing anything (a dry run's collection): a backend whose
   * clock is read off an object it writes (S3's `LastModified`) answers from a read
   * instead, as near to that clock as a read can come.
   */
  readOnly?: boolean;
}

/** Big payloads kept out of state: stored by content or key, verified on every read, swept when nothing refers to them. */
export interface ArtifactStore {
  /** The store's name in messages and error places, as checkpointers and stores name theirs: `fs`, `s3`, `memory`. */
  readonly engine: string;
  /** @deprecated Since 0.2.0: use `engine`. */
  readonly backend?: string;
  /** The tenant of this view, or null for the unscoped store. */
  readonly tenant: string | null;

  /** Stores by content (or under `options.key`). Idempotent. */
  put(data: ArtifactBody, options: ArtifactPutOptions): Promise<ArtifactRef>;
  /** Stores under `key` unless it exists; returns the stored ref either way (a stream given for an existing key is cancelled unread). */
  putNamed(key: string, data: ArtifactBody, options: Omit<ArtifactPutOptions, 'key'>): Promise<ArtifactRef>;
  /** The ref stored under `key`, or null. Refreshes it (see the module documentation). */
  head(key: string): Promise<ArtifactRef | null>;
  /** The verified bytes, in memory. {@link ArtifactNotFoundError} when absent. */
  get(ref: ArtifactRef): Promise<Uint8Array>;
  /** The verified bytes as a stream, without holding them in memory. */
  stream(ref: ArtifactRef, options?: ArtifactStreamOptions): Promise<ReadableStream<Uint8Array>>;
  /** The artifact's info, or null when absent. Does not read the bytes. */
  stat(ref: ArtifactRef): Promise<ArtifactInfo | null>;
  /** Forgets the ref; true when something was deleted. Bytes shared with other refs stay. */
  delete(ref: ArtifactRef, options?: ArtifactDeleteOptions): Promise<boolean>;
  /** One page of stored artifacts. */
  list(options?: ArtifactListOptions): Promise<ArtifactPage>;
  /** A view scoped to `tenant`: its refs carry the tenant, other tenants' refs are refused. */
  forTenant(tenant: string): ArtifactStore;
  /** The backend's clock (ms): `freshAt` values compare with this, not with the caller's clock. */
  now(options?: ArtifactClockOptions): Promise<number>;
  /**
   * Removes what no ref points at and was last written or used before `staleBefore`
   * (the store's clock): unreferenced blobs, temp files, incomplete uploads. `dryRun`
   * only counts.
   */
  sweep(options: ArtifactSweepOptions): Promise<ArtifactSweepReport>;
  close(): Promise<void>;
}
