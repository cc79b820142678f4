/**
 * @module artifacts/base-artifact-store
 * The {@link ArtifactStore} contract implemented once over an {@link ArtifactBackend}:
 * validation before any storage call, hashing while staging, verification on
 * every read, tenancy, idempotency by key, freshness for the collector.
 */
import { createHash } from 'node:crypto';
import type {
  ArtifactBody,
  ArtifactDeleteOptions,
  ArtifactInfo,
  ArtifactListOptions,
  ArtifactPage,
  ArtifactPutOptions,
  ArtifactRef,
  ArtifactStore,
  ArtifactStreamOptions,
  ArtifactSweepOptions,
  ArtifactSweepReport,
} from '../contracts/artifact-store.js';
import { ARTIFACT_PAGE_LIMIT } from '../defaults.js';
import { AccessDeniedError, ArtifactIntegrityError, ArtifactNotFoundError, CairnError, InvalidOptionError } from '../errors.js';
import { crashPoint } from '../internal/crash-points.js';
import { Lifecycle } from '../internal/lifecycle.js';
import type { ArtifactBackend, BlobReader, RecordAddress, StoredRecord } from './backend.js';
import { checkArtifactKey, checkMediaType, checkMetadata, checkTenant, formatRefId, parseRefId, type ParsedRefId } from './refs.js';
import { HashingTap, bodyChunks, cancelBody, iteratorStream } from './streams.js';

/** What a store and all its tenant views share. */
interface Shared {
  backend: ArtifactBackend;
  lifecycle: Lifecycle;
  /** In-process serialisation of writes to one record address. */
  locks: Map<string, Promise<unknown>>;
}

/**
 * The shared implementation behind `MemoryArtifactStore`, `FsArtifactStore` and
 * `S3ArtifactStore`. Backends subclass it only to add their own extras (a root
 * path, presigned URLs, test hooks).
 */
export class BaseArtifactStore implements ArtifactStore {
  readonly engine: string;
  readonly tenant: string | null;
  /** @internal */
  protected readonly shared: Shared;

  constructor(backend: ArtifactBackend | Shared, tenant: string | null = null) {
    this.shared = 'lifecycle' in backend ? backend : { backend, lifecycle: new Lifecycle(backend.name, { close: () => backend.close() }), locks: new Map() };
    this.engine = this.shared.backend.name;
    if (tenant !== null) checkTenant(tenant);
    this.tenant = tenant;
  }

  private get store(): ArtifactBackend {
    this.shared.lifecycle.assertOpen();
    return this.shared.backend;
  }

  forTenant(tenant: string): ArtifactStore {
    checkTenant(tenant);
    if (this.tenant !== null && this.tenant !== tenant) {
      throw new AccessDeniedError(this.tenant, ['artifacts', tenant], 'open a view of another tenant', { engine: this.engine });
    }
    return new BaseArtifactStore(this.shared, tenant);
  }

  async put(data: ArtifactBody, options: ArtifactPutOptions): Promise<ArtifactRef> {
    if (options?.key !== undefined) return this.putNamed(options.key, data, options);
    const store = this.store;
    checkMediaType(options?.mediaType);
    checkMetadata(options.metadata);
    const { sha256, size } = await this.writeBlob(data, options.signal);
    const address: RecordAddress = { tenant: this.tenant, kind: 'content', name: sha256 };
    // Identical bytes stored before keep their first ref (and media type).
    return this.locked(address, async () => {
      const existing = await store.readRecord(address);
      if (existing && (await store.freshen(address, existing))) return { ...existing.ref };
      const ref: ArtifactRef = { id: formatRefId(this.tenant, 'content', sha256), sha256, media_type: options.mediaType, size_bytes: size };
      return this.createRecord(address, ref, options.metadata ?? {});
    });
  }

  async putNamed(key: string, data: ArtifactBody, options: Omit<ArtifactPutOptions, 'key'>): Promise<ArtifactRef> {
    const store = this.store;
    checkArtifactKey(key);
    checkMediaType(options?.mediaType);
    checkMetadata(options.metadata);
    const address: RecordAddress = { tenant: this.tenant, kind: 'key', name: key };
    return this.locked(address, async () => {
      const existing = await store.readRecord(address);
      if (existing && (await store.freshen(address, existing))) {
        await cancelBody(data);
        return { ...existing.ref };
      }
      const { sha256, size } = await this.writeBlob(data, options.signal);
      const ref: ArtifactRef = { id: formatRefId(this.tenant, 'key', key), sha256, media_type: options.mediaType, size_bytes: size };
      return this.createRecord(address, ref, options.metadata ?? {});
    });
  }

  async head(key: string): Promise<ArtifactRef | null> {
    const store = this.store;
    checkArtifactKey(key);
    const address: RecordAddress = { tenant: this.tenant, kind: 'key', name: key };
    const record = await store.readRecord(address);
    // Refreshed: a probe's answer usually ends up in a committed position soon.
    if (!record || !(await store.freshen(address, record))) return null;
    return { ...record.ref };
  }

  async stat(ref: ArtifactRef): Promise<ArtifactInfo | null> {
    const store = this.store;
    const record = await store.readRecord(this.address(ref));
    return record ? info(record) : null;
  }

  async get(ref: ArtifactRef): Promise<Uint8Array> {
    const reader = await this.open(ref);
    try {
      const bytes = new Uint8Array(reader.size);
      const hash = createHash('sha256');
      let offset = 0;
      for await (const chunk of reader.chunks()) {
        if (offset + chunk.byteLength > bytes.byteLength) throw this.integrity(ref, `grew past its ${ref.size_bytes} bytes while being read`);
        bytes.set(chunk, offset);
        hash.update(chunk);
        offset += chunk.byteLength;
      }
      this.check(ref, offset, hash.digest('hex'));
      return bytes;
    } finally {
      await reader.close();
    }
  }

  async stream(ref: ArtifactRef, options: ArtifactStreamOptions = {}): Promise<ReadableStream<Uint8Array>> {
    const mode = options.verify ?? 'before';
    if (mode !== 'before' && mode !== 'during') throw new InvalidOptionError(`stream verify must be "before" or "during", got ${JSON.stringify(mode)}.`);
    const reader = await this.open(ref);
    try {
      if (mode === 'before') {
        const hash = createHash('sha256');
        let size = 0;
        for await (const chunk of reader.chunks(options.signal)) {
          hash.update(chunk);
          size += chunk.byteLength;
        }
        this.check(ref, size, hash.digest('hex'));
      }
    } catch (error) {
      await reader.close();
      throw error;
    }
    // `before`: verified already; hashed again while delivering in case the blob is
    // overwritten in place between the two reads. `during`: the only check.
    return iteratorStream(this.verifiedChunks(ref, reader, options.signal), () => reader.close());
  }

  async delete(ref: ArtifactRef, options: ArtifactDeleteOptions = {}): Promise<boolean> {
    const store = this.store;
    const address = this.address(ref);
    if (options.staleBefore !== undefined && !Number.isFinite(options.staleBefore)) {
      throw new InvalidOptionError(`staleBefore must be a time in ms, got ${String(options.staleBefore)}.`);
    }
    return this.locked(address, () => store.deleteRecord(address, options.staleBefore));
  }

  async list(options: ArtifactListOptions = {}): Promise<ArtifactPage> {
    const store = this.store;
    const limit = options.limit ?? ARTIFACT_PAGE_LIMIT;
    if (!Number.isSafeInteger(limit) || limit < 1) throw new InvalidOptionError(`list limit must be a positive integer, got ${String(limit)}.`);
    if (options.cursor !== undefined && typeof options.cursor !== 'string') throw new InvalidOptionError('list cursor must be the string a previous page returned.');
    if (options.allTenants && this.tenant !== null) {
      throw new AccessDeniedError(this.tenant, ['artifacts'], 'list every tenant', { engine: this.engine });
    }
    const page = await store.listRecords({ tenant: options.allTenants ? undefined : this.tenant, cursor: options.cursor, limit });
    return { items: page.items.map(info), cursor: page.cursor };
  }

  async now(): Promise<number> {
    return this.store.now();
  }

  /** @deprecated Since 0.2.0: use {@link engine}. */
  get backend(): string {
    return this.engine;
  }

  async sweep(options: ArtifactSweepOptions): Promise<ArtifactSweepReport> {
    if (this.tenant !== null) throw new AccessDeniedError(this.tenant, ['artifacts'], 'sweep the store', { engine: this.engine });
    const staleBefore = options?.staleBefore ?? options?.olderThan;
    if (typeof staleBefore !== 'number' || !Number.isFinite(staleBefore)) throw new InvalidOptionError(`sweep needs staleBefore, a time in ms by the store's clock (see now()).`);
    return this.store.sweep(staleBefore, options.dryRun === true);
  }

  /** Closes the store and every tenant view of it. */
  async close(): Promise<void> {
    if (this.tenant !== null) return;
    await this.shared.lifecycle.close();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  // ------------------------------------------------------------ internals

  /** Validates the ref's id, checks this view may use it, and returns its record's address. */
  protected address(ref: ArtifactRef): RecordAddress {
    const parsed: ParsedRefId = parseRefId((ref as ArtifactRef | null)?.id);
    // The unscoped store is the operator's view (collector, verifier): it sees every tenant.
    if (this.tenant !== null && parsed.tenant !== this.tenant) {
      throw new AccessDeniedError(this.tenant, ['artifacts', parsed.tenant ?? '(unscoped)'], `read artifact ${ref.id}`, { engine: this.engine });
    }
    return { tenant: parsed.tenant, kind: parsed.kind, name: parsed.kind === 'content' ? parsed.digest : parsed.key };
  }

  private integrity(ref: ArtifactRef, why: string, cause?: unknown): ArtifactIntegrityError {
    return new ArtifactIntegrityError(`artifact ${ref.id} ${why}. Run \`cairn verify --artifacts\` to find every damaged artifact.`, {
      place: { engine: this.engine },
      ...(cause !== undefined ? { cause } : {}),
    });
  }

  private check(ref: ArtifactRef, size: number, sha256: string): void {
    if (size !== ref.size_bytes) throw this.integrity(ref, `has ${size} bytes stored, its ref says ${ref.size_bytes}`);
    if (sha256 !== ref.sha256) throw this.integrity(ref, `hashes to ${sha256}, its ref says ${ref.sha256}`);
  }

  /** Opens the verified-size blob behind a ref: not found, mismatched record and missing blob all throw here. */
  private async open(ref: ArtifactRef): Promise<BlobReader> {
    const store = this.store;
    const address = this.address(ref);
    const record = await store.readRecord(address);
    if (!record) throw new ArtifactNotFoundError(`artifact ${ref.id} is not stored.`, { place: { engine: this.engine } });
    if (record.ref.sha256 !== ref.sha256 || record.ref.size_bytes !== ref.size_bytes) {
      throw this.integrity(ref, `is stored as ${record.ref.size_bytes} bytes with sha256 ${record.ref.sha256}, but the ref says ${ref.size_bytes} bytes with ${ref.sha256}`);
    }
    const reader = await store.openBlob(ref.sha256);
    if (!reader) throw this.integrity(ref, `is referenced but its blob ${ref.sha256} is missing`);
    // A blob of the wrong size is rejected before a byte of it is read.
    if (reader.size !== ref.size_bytes) {
      await reader.close();
      throw this.integrity(ref, `has ${reader.size} bytes stored, its ref says ${ref.size_bytes}`);
    }
    return reader;
  }

  /** Chunks of the blob, hashed on the way; the last chunk is held back until the digest matches. */
  private async *verifiedChunks(ref: ArtifactRef, reader: BlobReader, signal?: AbortSignal): AsyncGenerator<Uint8Array> {
    const hash = createHash('sha256');
    let size = 0;
    let held: Uint8Array | undefined;
    for await (const chunk of reader.chunks(signal)) {
      hash.update(chunk);
      size += chunk.byteLength;
      if (size > ref.size_bytes) throw this.integrity(ref, `grew past its ${ref.size_bytes} bytes while being read`);
      if (held) yield held;
      held = chunk;
    }
    this.check(ref, size, hash.digest('hex'));
    if (held) yield held;
  }

  /** Stages and places the blob; returns its digest and size. Aborted or failed writes leave nothing visible. */
  private async writeBlob(data: ArtifactBody, signal?: AbortSignal): Promise<{ sha256: string; size: number }> {
    const store = this.store;
    signal?.throwIfAborted();
    // A crash after the first chunk but before the last: a partial temp, never visible.
    const tap = new HashingTap((index) => index === 1 && crashPoint('artifact-mid-stage'));
    const staged = await store.stage(tap.pipe(bodyChunks(data, signal)), signal);
    const sha256 = tap.digest();
    try {
      signal?.throwIfAborted();
      crashPoint('artifact-after-stage');
      await store.commitBlob(staged, sha256);
    } catch (error) {
      await store.discard(staged);
      throw error;
    }
    crashPoint('artifact-after-blob');
    return { sha256, size: tap.size };
  }

  private async createRecord(address: RecordAddress, ref: ArtifactRef, metadata: Record<string, string>): Promise<ArtifactRef> {
    const store = this.store;
    // A retry is needed only if a concurrent writer's record is deleted between our failed create and our read.
    for (let attempt = 0; attempt < 5; attempt++) {
      const existing = await store.createRecord(address, { ref, tenant: address.tenant, metadata });
      if (!existing) {
        crashPoint('artifact-after-ref');
        return { ...ref };
      }
      if (await store.freshen(address, existing)) return { ...existing.ref };
    }
    throw new CairnError(`the record of ${ref.id} keeps being created and deleted by other writers; could not store it.`, { place: { engine: this.engine } });
  }

  /** Runs `fn` after every earlier call on the same address in this process has settled. */
  private async locked<T>(address: RecordAddress, fn: () => Promise<T>): Promise<T> {
    const id = `${address.tenant ?? ''}\u0000${address.kind}\u0000${address.name}`;
    const locks = this.shared.locks;
    const previous = locks.get(id) ?? Promise.resolve();
    const run = previous.then(fn, fn);
    const tail = run.catch(() => undefined);
    locks.set(id, tail);
    try {
      return await run;
    } finally {
      if (locks.get(id) === tail) locks.delete(id);
    }
  }
}

function info(record: StoredRecord): ArtifactInfo {
  return { ref: { ...record.ref }, tenant: record.tenant, metadata: { ...record.metadata }, freshAt: record.freshAt };
}
