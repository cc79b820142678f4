/**
 * @module artifacts/base-artifact-store
 * The {@link ArtifactStore} contract implemented once over an {@link ArtifactBackend}:
 * validation before any storage call, hashing while staging, verification on
 * every read, tenancy, idempotency by key, freshness for the collector.
 *
 * With a {@link BlobSealer} (a store made by `encryptedArtifacts`), every blob is
 * written sealed and in a blob of its own (named by the sealed bytes' sha256, so two
 * tenants' identical bytes never share one), and the record keeps the plaintext's
 * sha256 and size in its ref, the blob's name and size and the sealed metadata beside
 * it. Reads open the blob through the sealer and verify the plaintext as ever.
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
  ArtifactClockOptions,
  ArtifactSweepOptions,
  ArtifactSweepReport,
} from '../contracts/artifact-store.js';
import { ARTIFACT_PAGE_LIMIT } from '../defaults.js';
import { AccessDeniedError, ArtifactIntegrityError, ArtifactNotFoundError, CairnError, DecryptionError, InvalidOptionError, KeyUnavailableError, PlaintextRowError } from '../errors.js';
import { crashPoint } from '../internal/crash-points.js';
import { unknownOption } from '../internal/option-keys.js';
import { Lifecycle } from '../internal/lifecycle.js';
import {
  SEALED_BLOB_META,
  SEALED_META_PREFIX,
  SEALED_METADATA_META,
  SEALED_SIZE_META,
  referencedDigests,
  type ArtifactBackend,
  type BlobReader,
  type BlobSealer,
  type RecordAddress,
  type Staged,
  type StoredRecord,
} from './backend.js';
import { checkArtifactKey, checkMediaType, checkMetadata, checkTenant, formatRefId, parseRefId, type ParsedRefId } from './refs.js';
import { HashingTap, bodyChunks, cancelBody, iteratorStream } from './streams.js';

/** What a store and all its tenant views share. */
interface Shared {
  backend: ArtifactBackend;
  lifecycle: Lifecycle;
  /** In-process serialisation of writes to one record address. */
  locks: Map<string, Promise<unknown>>;
  /** Present on an encrypting store: seals every blob written, opens every sealed blob read. */
  sealer?: BlobSealer;
}

/** What {@link BaseArtifactStore.purge} removed. */
export interface ArtifactPurgeReport {
  /** Records deleted. */
  records: number;
  /** Blobs deleted (those no remaining record points at). */
  blobs: number;
  /** Bytes of the deleted blobs, as stored. */
  bytes: number;
}

/**
 * What each call takes. Another key is refused, not ignored: a misspelt option acts as
 * its default while the caller believes it applied (`stalebefore` deleting an artifact
 * a writer just refreshed, `dryrun` sweeping for real, `allTenant` listing one tenant).
 */
const CALL_OPTIONS = {
  put: ['mediaType', 'key', 'metadata', 'signal'],
  putNamed: ['mediaType', 'metadata', 'signal'],
  stream: ['verify', 'signal'],
  delete: ['staleBefore'],
  list: ['limit', 'cursor', 'allTenants'],
  sweep: ['staleBefore', 'olderThan', 'dryRun'],
  now: ['readOnly'],
} as const;

/**
 * Refuses, with InvalidOptionError, a call's options that are not an object or that hold
 * a key the call does not take. Undefined and null pass (each call reads them as before).
 */
function checkCallOptions(call: keyof typeof CALL_OPTIONS, options: unknown, engine: string): void {
  if (options === undefined || options === null) return;
  const place = { place: { engine } };
  if (typeof options !== 'object' || Array.isArray(options)) throw new InvalidOptionError(`${call} options must be an object, got ${JSON.stringify(options) ?? String(options)}.`, place);
  const unknown = unknownOption(call, options, CALL_OPTIONS[call]);
  if (unknown) throw new InvalidOptionError(unknown, place);
}

/** A flag given as anything but true or false is refused: `dryRun: "false"` would read as true elsewhere, `"true"` as false here. */
function checkFlag(call: string, name: string, value: unknown, engine: string): void {
  if (value !== undefined && typeof value !== 'boolean') {
    throw new InvalidOptionError(`${call}: ${name} must be true or false, got ${JSON.stringify(value) ?? String(value)}.`, { place: { engine } });
  }
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
    // A store may be wrapped once: its views and the wrapped one share the backend and lifecycle.
    this.engine = this.shared.backend.name;
    if (tenant !== null) checkTenant(tenant);
    this.tenant = tenant;
  }

  private get store(): ArtifactBackend {
    this.shared.lifecycle.assertOpen();
    return this.shared.backend;
  }

  /** True when this store seals what it writes (it was made by `encryptedArtifacts`). */
  get sealed(): boolean {
    return this.shared.sealer !== undefined;
  }

  /**
   * @internal A store over the same backend (and lifecycle: closing one closes both)
   * that seals with `sealer`: what `encryptedArtifacts` (`cairn/crypto`) returns.
   */
  withSealer(sealer: BlobSealer): BaseArtifactStore {
    if (this.shared.sealer) throw new InvalidOptionError('this artifact store already encrypts: wrap the plain store once.', { place: { engine: this.engine } });
    return new BaseArtifactStore({ ...this.shared, sealer }, this.tenant);
  }

  forTenant(tenant: string): ArtifactStore {
    checkTenant(tenant);
    if (this.tenant !== null && this.tenant !== tenant) {
      throw new AccessDeniedError(this.tenant, ['artifacts', tenant], 'open a view of another tenant', { engine: this.engine });
    }
    return new BaseArtifactStore(this.shared, tenant);
  }

  async put(data: ArtifactBody, options: ArtifactPutOptions): Promise<ArtifactRef> {
    checkCallOptions('put', options, this.engine);
    if (options?.key !== undefined) {
      const { key, ...named } = options;
      return this.putNamed(key, data, named);
    }
    const store = this.store;
    checkMediaType(options?.mediaType);
    checkMetadata(options.metadata);
    if (this.shared.sealer) return this.putSealed(data, options);
    const { sha256, size } = await this.writeBlob(data, options.signal);
    const address: RecordAddress = { tenant: this.tenant, kind: 'content', name: sha256 };
    return this.locked(address, async () => {
      const existing = await store.readRecord(address);
      if (existing && (await store.freshen(address, storageView(existing)))) return askedFor(existing.ref, options.mediaType);
      const ref: ArtifactRef = { id: formatRefId(this.tenant, 'content', sha256), sha256, media_type: options.mediaType, size_bytes: size };
      return this.createRecord(address, ref, options.metadata ?? {});
    });
  }

  /** `put` by content on a sealing store: the plaintext is hashed while it is sealed and staged; known bytes drop the staged copy. */
  private async putSealed(data: ArtifactBody, options: ArtifactPutOptions): Promise<ArtifactRef> {
    const store = this.store;
    const written = await this.stageSealed(data, options.signal);
    const address: RecordAddress = { tenant: this.tenant, kind: 'content', name: written.sha256 };
    return this.locked(address, async () => {
      try {
        const existing = await store.readRecord(address);
        if (existing && (await store.freshen(address, storageView(existing)))) {
          await store.discard(written.staged);
          return askedFor(existing.ref, options.mediaType);
        }
        const ref: ArtifactRef = { id: formatRefId(this.tenant, 'content', written.sha256), sha256: written.sha256, media_type: options.mediaType, size_bytes: written.size };
        await store.commitBlob(written.staged, written.blob);
        return await this.createRecord(address, ref, await this.sealedMetadata(ref, written, options.metadata));
      } catch (error) {
        await store.discard(written.staged);
        throw error;
      }
    });
  }

  async putNamed(key: string, data: ArtifactBody, options: Omit<ArtifactPutOptions, 'key'>): Promise<ArtifactRef> {
    const store = this.store;
    checkCallOptions('putNamed', options, this.engine);
    checkArtifactKey(key);
    checkMediaType(options?.mediaType);
    checkMetadata(options.metadata);
    const address: RecordAddress = { tenant: this.tenant, kind: 'key', name: key };
    return this.locked(address, async () => {
      const existing = await store.readRecord(address);
      if (existing && (await store.freshen(address, storageView(existing)))) {
        await cancelBody(data);
        return { ...existing.ref };
      }
      if (this.shared.sealer) {
        const written = await this.stageSealed(data, options.signal);
        const ref: ArtifactRef = { id: formatRefId(this.tenant, 'key', key), sha256: written.sha256, media_type: options.mediaType, size_bytes: written.size };
        try {
          await store.commitBlob(written.staged, written.blob);
        } catch (error) {
          await store.discard(written.staged);
          throw error;
        }
        return this.createRecord(address, ref, await this.sealedMetadata(ref, written, options.metadata));
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
    if (!record || !(await store.freshen(address, storageView(record)))) return null;
    return { ...record.ref };
  }

  async stat(ref: ArtifactRef): Promise<ArtifactInfo | null> {
    const store = this.store;
    const record = await store.readRecord(this.address(ref));
    return record ? this.info(record) : null;
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

  async stream(ref: ArtifactRef, given?: ArtifactStreamOptions | null): Promise<ReadableStream<Uint8Array>> {
    checkCallOptions('stream', given, this.engine);
    const options = given ?? {};
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

  async delete(ref: ArtifactRef, given?: ArtifactDeleteOptions | null): Promise<boolean> {
    const store = this.store;
    checkCallOptions('delete', given, this.engine);
    const options = given ?? {};
    const address = this.address(ref);
    if (options.staleBefore !== undefined && !Number.isFinite(options.staleBefore)) {
      throw new InvalidOptionError(`staleBefore must be a time in ms, got ${String(options.staleBefore)}.`);
    }
    return this.locked(address, () => store.deleteRecord(address, options.staleBefore));
  }

  /**
   * Deletes the records of `refs` and, at once, every blob they pointed at that no
   * remaining record points at: an erasure's delete, which must not leave the bytes
   * for a later sweep. Only the unscoped store purges. A blob whose bytes another
   * write of the very same plaintext is placing at this moment (unsealed stores only;
   * a sealed blob is never shared) may go with it; that write's ref then fails
   * verification.
   */
  async purge(refs: readonly ArtifactRef[]): Promise<ArtifactPurgeReport> {
    const store = this.store;
    if (this.tenant !== null) throw new AccessDeniedError(this.tenant, ['artifacts'], 'purge artifacts', { engine: this.engine });
    const report: ArtifactPurgeReport = { records: 0, blobs: 0, bytes: 0 };
    const freed = new Map<string, number>();
    for (const ref of refs) {
      const address = this.address(ref);
      await this.locked(address, async () => {
        const record = await store.readRecord(address);
        if (!record) return;
        const blob = storageView(record).ref;
        if (await store.deleteRecord(address)) {
          report.records++;
          freed.set(blob.sha256, blob.size_bytes);
        }
      });
    }
    if (freed.size === 0) return report;
    const referenced = await referencedDigests(store);
    for (const [digest, size] of freed) {
      if (referenced.has(digest)) continue;
      if (await store.deleteBlob(digest)) {
        report.blobs++;
        report.bytes += size;
      }
    }
    return report;
  }

  /**
   * Where the bytes of `ref` are stored: the blob's name (its sha256) and size, and
   * whether they are sealed (for tools and tests; never write there). Null when absent.
   */
  async storedBlob(ref: ArtifactRef): Promise<{ sha256: string; size: number; sealed: boolean } | null> {
    const record = await this.store.readRecord(this.address(ref));
    if (!record) return null;
    const { sha256, size_bytes } = storageView(record).ref;
    return { sha256, size: size_bytes, sealed: record.metadata[SEALED_BLOB_META] !== undefined };
  }

  async list(given?: ArtifactListOptions | null): Promise<ArtifactPage> {
    const store = this.store;
    // null reads as no options, as the stores' listings take it.
    const options = given ?? {};
    if (typeof options !== 'object' || Array.isArray(options)) throw new InvalidOptionError(`list options must be an object, got ${JSON.stringify(options) ?? String(options)}.`);
    checkCallOptions('list', options, this.engine);
    checkFlag('list', 'allTenants', options.allTenants, this.engine);
    const limit = options.limit ?? ARTIFACT_PAGE_LIMIT;
    if (!Number.isSafeInteger(limit) || limit < 1) throw new InvalidOptionError(`list limit must be a positive integer, got ${String(limit)}.`);
    if (options.cursor !== undefined && typeof options.cursor !== 'string') throw new InvalidOptionError('list cursor must be the string a previous page returned.');
    if (options.allTenants && this.tenant !== null) {
      throw new AccessDeniedError(this.tenant, ['artifacts'], 'list every tenant', { engine: this.engine });
    }
    const scope = listingScope(this.engine, options.allTenants ? undefined : this.tenant);
    const cursor = options.cursor === undefined ? undefined : openCursor(options.cursor, scope);
    const page = await store.listRecords({ tenant: options.allTenants ? undefined : this.tenant, cursor, limit });
    const items: ArtifactInfo[] = [];
    for (const record of page.items) items.push(await this.info(record));
    return { items, cursor: page.cursor === null ? null : sealCursor(page.cursor, scope) };
  }

  async now(options?: ArtifactClockOptions): Promise<number> {
    checkCallOptions('now', options, this.engine);
    checkFlag('now', 'readOnly', options?.readOnly, this.engine);
    return this.store.now(options?.readOnly === true ? { readOnly: true } : undefined);
  }

  /** @deprecated Since 0.2.0: use {@link engine}. */
  get backend(): string {
    return this.engine;
  }

  async sweep(options: ArtifactSweepOptions): Promise<ArtifactSweepReport> {
    if (this.tenant !== null) throw new AccessDeniedError(this.tenant, ['artifacts'], 'sweep the store', { engine: this.engine });
    checkCallOptions('sweep', options, this.engine);
    checkFlag('sweep', 'dryRun', options?.dryRun, this.engine);
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
    const sealedBlob = record.metadata[SEALED_BLOB_META];
    if (sealedBlob !== undefined) return this.openSealed(ref, record, sealedBlob);
    if (this.shared.sealer?.required) {
      throw new PlaintextRowError(`artifact ${ref.id} is stored in the clear, and this store requires encryption: it was written by a store without it.`, { place: { engine: this.engine } });
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
      if (await store.freshen(address, storageView(existing))) return { ...existing.ref };
    }
    throw new CairnError(`the record of ${ref.id} keeps being created and deleted by other writers; could not store it.`, { place: { engine: this.engine } });
  }

  /** A sealed record's blob, opened through the sealer: the reader hands out plaintext, decryption failures are integrity errors. */
  private async openSealed(ref: ArtifactRef, record: StoredRecord, blob: string): Promise<BlobReader> {
    const sealer = this.shared.sealer;
    if (!sealer) {
      throw new KeyUnavailableError('(artifact)', `artifact ${ref.id} is stored sealed: open the artifact store with encryptedArtifacts (cairn/crypto) and the engine's keys to read it.`, { place: { engine: this.engine } });
    }
    const reader = await this.store.openBlob(blob);
    if (!reader) throw this.integrity(ref, `is referenced but its sealed blob ${blob} is missing`);
    const sealedSize = Number(record.metadata[SEALED_SIZE_META]);
    if (reader.size !== sealedSize) {
      await reader.close();
      throw this.integrity(ref, `has ${reader.size} sealed bytes stored, its record says ${sealedSize}`);
    }
    const integrity = (cause: unknown) => this.integrity(ref, 'does not open: its sealed bytes were changed, cut short or reordered', cause);
    return {
      size: ref.size_bytes,
      async *chunks(signal) {
        try {
          yield* sealer.open(reader.chunks(signal));
        } catch (error) {
          throw DecryptionError.is(error) ? integrity(error) : error;
        }
      },
      close: () => reader.close(),
    };
  }

  /** Seals and stages `data`: the plaintext's sha256 and size, the sealed blob's name (its sha256) and size. */
  private async stageSealed(data: ArtifactBody, signal?: AbortSignal): Promise<{ sha256: string; size: number; blob: string; blobSize: number; staged: Staged }> {
    const store = this.store;
    signal?.throwIfAborted();
    const plain = new HashingTap((index) => index === 1 && crashPoint('artifact-mid-stage'));
    const sealedTap = new HashingTap();
    const staged = await store.stage(sealedTap.pipe(this.shared.sealer!.seal(this.tenant, plain.pipe(bodyChunks(data, signal)))), signal);
    try {
      signal?.throwIfAborted();
      crashPoint('artifact-after-stage');
    } catch (error) {
      await store.discard(staged);
      throw error;
    }
    return { sha256: plain.digest(), size: plain.size, blob: sealedTap.digest(), blobSize: sealedTap.size, staged };
  }

  /** The metadata a sealed record keeps: its blob, the blob's size, and the caller's metadata sealed. */
  private async sealedMetadata(ref: ArtifactRef, written: { blob: string; blobSize: number }, metadata: Record<string, string> | undefined): Promise<Record<string, string>> {
    const out: Record<string, string> = { [SEALED_BLOB_META]: written.blob, [SEALED_SIZE_META]: String(written.blobSize) };
    if (metadata && Object.keys(metadata).length) out[SEALED_METADATA_META] = await this.shared.sealer!.sealMetadata(this.tenant, ref.id, metadata);
    return out;
  }

  /** A record as the caller sees it: the reserved metadata of a sealed record opened or left out. */
  private async info(record: StoredRecord): Promise<ArtifactInfo> {
    const { ref, tenant, freshAt } = record;
    if (record.metadata[SEALED_BLOB_META] === undefined) return { ref: { ...ref }, tenant, metadata: { ...record.metadata }, freshAt };
    const sealedMeta = record.metadata[SEALED_METADATA_META];
    let metadata: Record<string, string> = {};
    if (sealedMeta !== undefined) {
      if (!this.shared.sealer) metadata = {};
      else {
        try {
          metadata = await this.shared.sealer.openMetadata(ref.id, sealedMeta);
        } catch (error) {
          throw DecryptionError.is(error) ? this.integrity(ref, 'has sealed metadata that does not open', error) : error;
        }
      }
    }
    for (const name of Object.keys(metadata)) if (name.startsWith(SEALED_META_PREFIX)) delete metadata[name];
    return { ref: { ...ref }, tenant, metadata, freshAt };
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

/**
 * The ref a content-addressed `put` of bytes already stored returns: the stored one
 * (same id, digest and size, so every ref to the bytes is one artifact to reads,
 * verification, pins and GC) with the media type this put gave. A ref says what its
 * writer meant the bytes to be (`loadValue` decodes by it, the inspector serves by
 * it), and the same bytes can be a text to one writer and a JSON value to another.
 * The record, which `stat` and `list` show, keeps the media type it was created with.
 */
function askedFor(stored: ArtifactRef, mediaType: string): ArtifactRef {
  return { ...stored, media_type: mediaType };
}

/**
 * What a list cursor is valid for: the backend kind and the listing (one tenant, the
 * unscoped records, or every tenant). A backend's own cursor is a position in its own
 * key order: handed to another backend or another listing it would silently skip or
 * repeat records, so the cursor a page returns names its listing and is checked.
 */
function listingScope(engine: string, tenant: string | null | undefined): string {
  return JSON.stringify([engine, tenant === undefined ? '*' : tenant]);
}

function sealCursor(position: string, scope: string): string {
  return Buffer.from(JSON.stringify([scope, position]), 'utf8').toString('base64url');
}

function openCursor(cursor: string, scope: string): string {
  let parsed: unknown;
  try {
    parsed = /^[A-Za-z0-9_-]+$/.test(cursor) ? JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) : undefined;
  } catch {
    parsed = undefined;
  }
  if (!Array.isArray(parsed) || parsed.length !== 2 || typeof parsed[0] !== 'string' || typeof parsed[1] !== 'string') {
    throw new InvalidOptionError(`list cursor ${describeCursor(cursor)} is not one a list() page returned: pass the page's cursor as it is.`);
  }
  if (parsed[0] !== scope) {
    throw new InvalidOptionError(`list cursor ${describeCursor(cursor)} belongs to another listing (another store, tenant or allTenants setting): pass it back to the listing that returned it.`);
  }
  return parsed[1];
}

function describeCursor(cursor: string): string {
  return JSON.stringify(cursor.length > 40 ? `${cursor.slice(0, 40)}…` : cursor);
}

/**
 * The record as the backend must see it to refresh or free its blob: a sealed
 * record's blob is the sealed one (its own name and size), not the plaintext's.
 */
function storageView(record: StoredRecord): StoredRecord {
  const blob = record.metadata[SEALED_BLOB_META];
  if (blob === undefined) return record;
  return { ...record, ref: { ...record.ref, sha256: blob, size_bytes: Number(record.metadata[SEALED_SIZE_META]) } };
}
