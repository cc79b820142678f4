/**
 * @module artifacts/s3/s3-artifact-store
 * Artifacts in an S3-compatible bucket (AWS S3, MinIO, R2, Ceph...), through
 * `@aws-sdk/client-s3`, loaded on first use.
 *
 * Layout under the prefix (object names built from hex digests only):
 *
 * ```
 * blobs/sha256/<64 hex>                         the bytes, shared by every ref to them
 * refs/_/content/<64 hex>.json                  one content-addressed ref, unscoped
 * refs/_/keys/<64 hex>.json                     one named ref; the name is sha256(key)
 * refs/t-<64 hex>/…                             the same for one tenant (sha256(tenant))
 * fresh/…                                       empty markers: when a blob or ref was last handed out again
 * tmp/<random>                                  uploads in progress (single or multipart)
 * ```
 *
 * A write streams the bytes to `tmp/` (a multipart upload of `partSize` parts, or
 * one PUT when small), hashing them on the way, copies the object to its blob name
 * server-side, then PUTs the ref. A multipart upload that is never completed is
 * invisible; a crash leaves at worst a temp object or an unreferenced blob.
 *
 * `freshAt` is an object's `LastModified` (the server's clock, 1 s resolution).
 */
import { createHash, randomBytes } from 'node:crypto';
import type { ArtifactRef, ArtifactSweepReport } from '../../contracts/artifact-store.js';
import { S3_PART_BYTES, S3_PRESIGN_EXPIRES_MS } from '../../defaults.js';
import { ArtifactIntegrityError, ArtifactNotFoundError, CairnError, DriverMissingError, EngineError, InvalidOptionError } from '../../errors.js';
import { unknownOption } from '../../internal/option-keys.js';
import { referencedDigests, type ArtifactBackend, type ArtifactRecord, type BlobReader, type RecordAddress, type RecordPage, type Staged, type StoredRecord } from '../backend.js';
import { BaseArtifactStore } from '../base-artifact-store.js';
import { checkArtifactKey, checkDigest, checkTenant, parseRefId } from '../refs.js';

/** The part of an `S3Client` cairn uses: typed structurally, so cairn's types never import the SDK's. */
export interface S3ClientLike {
  send(command: unknown, options?: { abortSignal?: AbortSignal }): Promise<unknown>;
  destroy?(): void;
}

/** Options of {@link s3Artifacts}. */
export interface S3ArtifactStoreOptions {
  bucket: string;
  /** Object name prefix, e.g. `cairn/prod/` (ends with `/`; default none). */
  prefix?: string;
  /** An `S3Client` you configured, or the config to build one (`{ region, endpoint, credentials, forcePathStyle }`). */
  client?: S3ClientLike | Record<string, unknown>;
  /** Multipart part size in bytes (default 8 MiB, at least 5 MiB). Memory use of a write is about two parts. */
  partSize?: number;
}

const BACKEND = 's3';
const MIN_PART = 5 * 1024 * 1024;
const MAX_COPY = 5 * 1024 * 1024 * 1024;
const HEX64 = /^[0-9a-f]{64}$/;

type Sdk = typeof import('@aws-sdk/client-s3');

interface S3Staged extends Staged {
  key: string;
}

interface ObjectInfo {
  key: string;
  lastModified: number;
  size: number;
}

class S3Backend implements ArtifactBackend {
  readonly name = BACKEND;
  private sdk: Sdk | undefined;
  private client: S3ClientLike | undefined;
  private readonly ownsClient: boolean;
  readonly bucket: string;
  readonly prefix: string;
  private readonly partSize: number;

  constructor(private readonly options: S3ArtifactStoreOptions) {
    const unknown = options !== null && typeof options === 'object' ? unknownOption('s3Artifacts', options, ['bucket', 'prefix', 'client', 'partSize']) : undefined;
    if (unknown) throw new InvalidOptionError(unknown, { place: { engine: BACKEND } });
    if (typeof options?.bucket !== 'string' || !/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(options.bucket)) {
      throw new InvalidOptionError(`the s3 artifact store needs a bucket name (3-63 of a-z 0-9 . -), got ${JSON.stringify(options?.bucket)}.`, { place: { engine: BACKEND } });
    }
    const prefix = options.prefix ?? '';
    if (typeof prefix !== 'string' || (prefix !== '' && (!prefix.endsWith('/') || prefix.startsWith('/') || prefix.split('/').slice(0, -1).some((s) => s === '' || s === '.' || s === '..') || !/^[A-Za-z0-9._\-/]+$/.test(prefix)))) {
      throw new InvalidOptionError(`the s3 prefix must be empty or segments of A-Z a-z 0-9 . _ - each followed by "/", e.g. "cairn/prod/"; got ${JSON.stringify(prefix)}.`, { place: { engine: BACKEND } });
    }
    this.bucket = options.bucket;
    this.prefix = prefix;
    this.partSize = options.partSize ?? S3_PART_BYTES;
    if (!Number.isSafeInteger(this.partSize) || this.partSize < MIN_PART) throw new InvalidOptionError(`partSize must be at least ${MIN_PART} bytes (an S3 limit).`, { place: { engine: BACKEND } });
    const given = options.client;
    this.ownsClient = !(given && typeof (given as S3ClientLike).send === 'function');
    if (!this.ownsClient) this.client = given as S3ClientLike;
  }

  /** Loads the SDK (once) and builds the client if none was given. */
  async use(): Promise<{ sdk: Sdk; client: S3ClientLike }> {
    if (!this.sdk) {
      try {
        this.sdk = await import('@aws-sdk/client-s3');
      } catch (cause) {
        throw new DriverMissingError('the s3 artifact store needs the AWS SDK: run `npm install @aws-sdk/client-s3`.', { cause, place: { engine: BACKEND } });
      }
    }
    this.client ??= new this.sdk.S3Client((this.options.client as Record<string, unknown> | undefined) ?? {}) as S3ClientLike;
    return { sdk: this.sdk, client: this.client };
  }

  private async send<T>(what: string, make: (sdk: Sdk) => unknown, signal?: AbortSignal): Promise<T> {
    const { sdk, client } = await this.use();
    try {
      return (await client.send(make(sdk), signal ? { abortSignal: signal } : undefined)) as T;
    } catch (error) {
      throw this.failure(what, error);
    }
  }

  failure(what: string, error: unknown): Error {
    if (CairnError.is(error) || (error as Error)?.name === 'AbortError') return error as Error;
    const reason = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
    return new EngineError(`${what} in bucket ${this.bucket} failed: ${reason}`, { cause: error, place: { engine: BACKEND } });
  }

  // ------------------------------------------------------------ names

  blobKey(digest: string): string {
    checkDigest(digest);
    return `${this.prefix}blobs/sha256/${digest}`;
  }

  recordKey(address: RecordAddress): string {
    const scope = address.tenant === null ? '_' : (checkTenant(address.tenant), `t-${sha256(address.tenant)}`);
    if (address.kind === 'content') {
      checkDigest(address.name);
      return `${this.prefix}refs/${scope}/content/${address.name}.json`;
    }
    checkArtifactKey(address.name);
    return `${this.prefix}refs/${scope}/keys/${sha256(address.name)}.json`;
  }

  private freshKey(objectKey: string): string {
    return `${this.prefix}fresh/${objectKey.slice(this.prefix.length)}`;
  }

  // ------------------------------------------------------------ objects

  private async headObject(key: string): Promise<ObjectInfo | null> {
    try {
      const out = await this.send<{ LastModified?: Date; ContentLength?: number }>(`HEAD ${key}`, (s) => new s.HeadObjectCommand({ Bucket: this.bucket, Key: key }));
      return { key, lastModified: out.LastModified?.getTime() ?? 0, size: out.ContentLength ?? 0 };
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
  }

  private async putObject(key: string, body: Uint8Array | string, signal?: AbortSignal): Promise<void> {
    const bytes = typeof body === 'string' ? Buffer.from(body) : body;
    await this.send(`PUT ${key}`, (s) => new s.PutObjectCommand({ Bucket: this.bucket, Key: key, Body: bytes, ContentLength: bytes.byteLength }), signal);
  }

  private async deleteObject(key: string): Promise<void> {
    try {
      await this.send(`DELETE ${key}`, (s) => new s.DeleteObjectCommand({ Bucket: this.bucket, Key: key }));
    } catch (error) {
      if (!isNotFound(error)) throw error;
    }
  }

  private async getText(key: string): Promise<{ text: string; lastModified: number } | null> {
    try {
      const out = await this.send<{ Body?: { transformToString(): Promise<string> }; LastModified?: Date }>(`GET ${key}`, (s) => new s.GetObjectCommand({ Bucket: this.bucket, Key: key }));
      return { text: (await out.Body?.transformToString()) ?? '', lastModified: out.LastModified?.getTime() ?? 0 };
    } catch (error) {
      if (isNotFound(error)) return null;
      throw error;
    }
  }

  /** Keys under `prefix`, after `startAfter`, at most `limit` (one request): and whether more follow. */
  private async listPage(prefix: string, startAfter: string | undefined, limit: number): Promise<{ objects: ObjectInfo[]; more: boolean }> {
    const out = await this.send<{ Contents?: { Key?: string; LastModified?: Date; Size?: number }[]; IsTruncated?: boolean }>(`LIST ${prefix}`, (s) =>
      // S3 answers at most 1,000 keys a request, and refuses a MaxKeys past 2^31 - 1 (s3rver, MinIO).
      new s.ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, MaxKeys: Math.min(limit, LIST_PAGE_MAX), ...(startAfter !== undefined ? { StartAfter: startAfter } : {}) }),
    );
    const objects = (out.Contents ?? []).filter((c) => c.Key).map((c) => ({ key: c.Key!, lastModified: c.LastModified?.getTime() ?? 0, size: c.Size ?? 0 }));
    return { objects, more: out.IsTruncated === true && objects.length > 0 };
  }

  private async *listAll(prefix: string): AsyncGenerator<ObjectInfo> {
    let after: string | undefined;
    for (;;) {
      const page = await this.listPage(prefix, after, 1000);
      yield* page.objects;
      if (!page.more) return;
      after = page.objects[page.objects.length - 1]!.key;
    }
  }

  // ------------------------------------------------------------ writing

  async stage(chunks: AsyncIterable<Uint8Array>, signal?: AbortSignal): Promise<Staged> {
    const key = `${this.prefix}tmp/${Date.now().toString(36)}-${randomBytes(8).toString('hex')}`;
    const part = new Uint8Array(this.partSize);
    let filled = 0;
    let size = 0;
    let uploadId: string | undefined;
    const parts: { PartNumber: number; ETag: string }[] = [];
    const flush = async () => {
      if (uploadId === undefined) {
        const out = await this.send<{ UploadId?: string }>(`start upload ${key}`, (s) => new s.CreateMultipartUploadCommand({ Bucket: this.bucket, Key: key }), signal);
        uploadId = out.UploadId!;
      }
      const number = parts.length + 1;
      // A copy of the filled part: the buffer is reused for the next one.
      const body = part.slice(0, filled);
      const out = await this.send<{ ETag?: string }>(`upload part ${number} of ${key}`, (s) => new s.UploadPartCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId, PartNumber: number, Body: body, ContentLength: body.byteLength }), signal);
      parts.push({ PartNumber: number, ETag: out.ETag ?? '' });
      filled = 0;
    };
    try {
      for await (const chunk of chunks) {
        size += chunk.byteLength;
        for (let offset = 0; offset < chunk.byteLength; ) {
          const take = Math.min(chunk.byteLength - offset, this.partSize - filled);
          part.set(chunk.subarray(offset, offset + take), filled);
          filled += take;
          offset += take;
          if (filled === this.partSize) await flush();
        }
      }
      if (uploadId === undefined) {
        await this.putObject(key, part.slice(0, filled), signal);
      } else {
        if (filled > 0) await flush();
        await this.send(`complete upload ${key}`, (s) => new s.CompleteMultipartUploadCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId, MultipartUpload: { Parts: parts } }), signal);
      }
    } catch (error) {
      if (uploadId !== undefined) {
        const id = uploadId;
        await this.send('abort upload', (s) => new s.AbortMultipartUploadCommand({ Bucket: this.bucket, Key: key, UploadId: id })).catch(() => undefined);
      }
      throw error;
    }
    return { size, key } as S3Staged;
  }

  async commitBlob(staged: Staged, digest: string): Promise<void> {
    const { key: temp, size } = staged as S3Staged;
    const blob = this.blobKey(digest);
    try {
      // Refreshed before the check: a collector that reads the marker after our
      // check sees it fresh and keeps the blob.
      await this.putObject(this.freshKey(blob), '');
      const existing = await this.headObject(blob);
      if (existing?.size !== size) {
        if (size > MAX_COPY) throw new InvalidOptionError(`artifact of ${size} bytes is over the 5 GiB a single S3 copy allows; split it.`, { place: { engine: BACKEND } });
        await this.send(`COPY ${temp} to ${blob}`, (s) => new s.CopyObjectCommand({ Bucket: this.bucket, Key: blob, CopySource: `${this.bucket}/${encodeURI(temp)}` }));
      }
    } finally {
      await this.deleteObject(temp).catch(() => undefined);
    }
  }

  async discard(staged: Staged): Promise<void> {
    await this.deleteObject((staged as S3Staged).key).catch(() => undefined);
  }

  async createRecord(address: RecordAddress, record: ArtifactRecord): Promise<StoredRecord | null> {
    const key = this.recordKey(address);
    const existing = await this.readRecord(address);
    if (existing) return existing;
    const text = `${JSON.stringify({ v: 2, ref: record.ref, tenant: record.tenant, metadata: record.metadata })}\n`;
    try {
      // If-None-Match makes the create atomic across processes on servers that support
      // it (AWS S3, MinIO, R2); within one process writes to one key are serialised.
      await this.send(`PUT ${key}`, (s) => new s.PutObjectCommand({ Bucket: this.bucket, Key: key, Body: Buffer.from(text), ContentLength: Buffer.byteLength(text), IfNoneMatch: '*' }));
    } catch (error) {
      const status = httpStatus((error as { cause?: unknown }).cause);
      if (status === 412 || status === 409) return this.readRecord(address);
      throw error;
    }
    return null;
  }

  async freshen(address: RecordAddress, record: StoredRecord): Promise<boolean> {
    const key = this.recordKey(address);
    // Marker first, then the record rewritten: a collector that deleted the record
    // before our rewrite sees the marker and puts it back; one that deletes after is
    // undone by the rewrite itself.
    await this.putObject(this.freshKey(this.blobKey(record.ref.sha256)), '');
    await this.putObject(this.freshKey(key), '');
    const current = await this.getText(key);
    if (!current) return false;
    await this.putObject(key, current.text);
    return true;
  }

  async deleteRecord(address: RecordAddress, staleBefore?: number): Promise<boolean> {
    const key = this.recordKey(address);
    const current = await this.getText(key);
    if (!current) return false;
    if (staleBefore !== undefined && current.lastModified >= staleBefore) return false;
    await this.deleteObject(key);
    if (staleBefore !== undefined) {
      const marker = await this.headObject(this.freshKey(key));
      if (marker && marker.lastModified >= staleBefore) {
        // Refreshed while we deleted it: put it back.
        await this.putObject(key, current.text);
        return false;
      }
    }
    return true;
  }

  // ------------------------------------------------------------ reading

  async readRecord(address: RecordAddress): Promise<StoredRecord | null> {
    const key = this.recordKey(address);
    const found = await this.getText(key);
    return found ? this.parseRecord(key, found.text, found.lastModified) : null;
  }

  private parseRecord(key: string, text: string, lastModified: number): StoredRecord {
    const damaged = (why: string, cause?: unknown) =>
      new ArtifactIntegrityError(`object ${key} is not a valid artifact ref (${why}); it was damaged or written by something else. Delete it to forget the artifact.`, {
        place: { engine: BACKEND },
        ...(cause !== undefined ? { cause } : {}),
      });
    let file: { v?: number; ref?: ArtifactRef; tenant?: string | null; metadata?: Record<string, string> };
    try {
      file = JSON.parse(text) as typeof file;
    } catch (error) {
      throw damaged('not JSON', error);
    }
    const ref = file?.ref;
    if (file?.v !== 2 || !ref || typeof ref.id !== 'string' || !HEX64.test(String(ref.sha256)) || typeof ref.media_type !== 'string' || !Number.isSafeInteger(ref.size_bytes) || ref.size_bytes < 0) {
      throw damaged('expected {"v":2,"ref":{id,sha256,media_type,size_bytes}}');
    }
    let parsed;
    try {
      parsed = parseRefId(ref.id);
    } catch (error) {
      throw damaged('its id is invalid', error);
    }
    const home = this.recordKey({ tenant: parsed.tenant, kind: parsed.kind, name: parsed.kind === 'content' ? parsed.digest : parsed.key });
    if (home !== key || (file.tenant ?? null) !== parsed.tenant || (parsed.kind === 'content' && parsed.digest !== ref.sha256)) throw damaged(`it holds ${JSON.stringify(ref.id.slice(0, 600))}`);
    return {
      ref: { id: ref.id, sha256: ref.sha256, media_type: ref.media_type, size_bytes: ref.size_bytes },
      tenant: parsed.tenant,
      metadata: file.metadata && typeof file.metadata === 'object' ? { ...file.metadata } : {},
      freshAt: lastModified,
    };
  }

  async deleteBlob(digest: string): Promise<boolean> {
    const key = this.blobKey(digest);
    if (!(await this.headObject(key))) return false;
    await this.deleteObject(key);
    await this.deleteObject(this.freshKey(key));
    return true;
  }

  async openBlob(digest: string): Promise<BlobReader | null> {
    const key = this.blobKey(digest);
    const head = await this.headObject(key);
    if (!head) return null;
    const readers: { destroy?: () => void }[] = [];
    return {
      size: head.size,
      chunks: (signal?: AbortSignal) => this.readObject(key, readers, signal),
      close: async () => {
        for (const body of readers) body.destroy?.();
      },
    };
  }

  private async *readObject(key: string, readers: { destroy?: () => void }[], signal?: AbortSignal): AsyncGenerator<Uint8Array> {
    const out = await this.send<{ Body?: AsyncIterable<Uint8Array> & { destroy?: () => void } }>(`GET ${key}`, (s) => new s.GetObjectCommand({ Bucket: this.bucket, Key: key }), signal);
    if (!out.Body) return;
    readers.push(out.Body);
    try {
      for await (const chunk of out.Body) yield chunk;
    } catch (error) {
      throw this.failure(`GET ${key}`, error);
    } finally {
      out.Body.destroy?.();
    }
  }

  async listRecords(options: { tenant: string | null | undefined; cursor: string | undefined; limit: number }): Promise<RecordPage> {
    const scope = options.tenant === undefined ? '' : options.tenant === null ? '_/' : (checkTenant(options.tenant), `t-${sha256(options.tenant)}/`);
    const prefix = `${this.prefix}refs/${scope}`;
    if (options.cursor !== undefined && !options.cursor.startsWith(prefix)) throw new InvalidOptionError('list cursor does not belong to this listing.', { place: { engine: BACKEND } });
    const items: StoredRecord[] = [];
    let after = options.cursor;
    let last: string | undefined;
    let more = true;
    while (items.length < options.limit && more) {
      const page = await this.listPage(prefix, after, options.limit - items.length);
      more = page.more;
      const objects = page.objects.filter((o) => o.key.endsWith('.json'));
      const found = await mapLimit(objects, 8, async (o) => {
        const got = await this.getText(o.key);
        return got ? this.parseRecord(o.key, got.text, got.lastModified) : null;
      });
      for (const record of found) if (record) items.push(record);
      if (page.objects.length) after = last = page.objects[page.objects.length - 1]!.key;
    }
    return { items, cursor: more && last !== undefined ? last : null };
  }

  async now(options?: { readOnly?: boolean }): Promise<number> {
    if (options?.readOnly) return this.serverDate();
    // The server's clock, as LastModified measures it.
    const key = `${this.prefix}fresh/clock`;
    await this.putObject(key, '');
    return (await this.headObject(key))?.lastModified ?? Date.now();
  }

  /**
   * The server's clock without a write: the `Date` header of a one-key listing under
   * the prefix (whole seconds, rounded down, as LastModified is). The local clock when
   * the answer has none (a client that is not an SDK `S3Client`, a proxy that drops it).
   */
  private async serverDate(): Promise<number> {
    let date: string | undefined;
    await this.send('read the clock', (s) => {
      const command = new s.ListObjectsV2Command({ Bucket: this.bucket, Prefix: `${this.prefix}fresh/`, MaxKeys: 1 });
      command.middlewareStack.add(
        (next) => async (args) => {
          const result = await next(args);
          const headers = (result.response as { headers?: Record<string, string | undefined> } | undefined)?.headers;
          date = headers?.date ?? headers?.Date;
          return result;
        },
        { step: 'deserialize', name: 'cairnServerDate' },
      );
      return command;
    });
    const at = date === undefined ? NaN : Date.parse(date);
    return Number.isFinite(at) ? at : Date.now();
  }

  // ------------------------------------------------------------ sweeping

  async sweep(olderThan: number, dryRun: boolean): Promise<ArtifactSweepReport> {
    const report: ArtifactSweepReport = { blobs: 0, bytes: 0, temps: 0 };
    for await (const temp of this.listAll(`${this.prefix}tmp/`)) {
      if (temp.lastModified >= olderThan) continue;
      if (!dryRun) await this.deleteObject(temp.key);
      report.temps++;
    }
    report.temps += await this.abortStaleUploads(olderThan, dryRun);
    // Blobs before records: see the fs backend; markers say when a blob was last reused.
    const candidates: ObjectInfo[] = [];
    for await (const blob of this.listAll(`${this.prefix}blobs/sha256/`)) if (blob.lastModified < olderThan) candidates.push(blob);
    if (candidates.length === 0) return report;
    const referenced = await referencedDigests(this);
    for (const blob of candidates) {
      const digest = blob.key.slice(blob.key.lastIndexOf('/') + 1);
      if (!HEX64.test(digest) || referenced.has(digest)) continue;
      const marker = await this.headObject(this.freshKey(blob.key));
      if (marker && marker.lastModified >= olderThan) continue;
      if (!dryRun) {
        await this.deleteObject(blob.key);
        await this.deleteObject(this.freshKey(blob.key));
      }
      report.blobs++;
      report.bytes += blob.size;
    }
    return report;
  }

  /** Multipart uploads started before `olderThan` and never completed (a crashed write). */
  private async abortStaleUploads(olderThan: number, dryRun: boolean): Promise<number> {
    let out: { Uploads?: { Key?: string; UploadId?: string; Initiated?: Date }[] };
    try {
      out = await this.send('list uploads', (s) => new s.ListMultipartUploadsCommand({ Bucket: this.bucket, Prefix: `${this.prefix}tmp/` }));
    } catch (error) {
      // Some S3-compatible servers do not implement listing uploads; a bucket
      // lifecycle rule (AbortIncompleteMultipartUpload) does the same job there.
      if (/NotImplemented/.test(String((error as Error).message))) return 0;
      throw error;
    }
    let aborted = 0;
    for (const upload of out.Uploads ?? []) {
      if (!upload.Key || !upload.UploadId || (upload.Initiated?.getTime() ?? 0) >= olderThan) continue;
      if (!dryRun) await this.send('abort upload', (s) => new s.AbortMultipartUploadCommand({ Bucket: this.bucket, Key: upload.Key, UploadId: upload.UploadId }));
      aborted++;
    }
    return aborted;
  }

  async close(): Promise<void> {
    if (this.ownsClient) this.client?.destroy?.();
  }
}

/**
 * An {@link ArtifactStore} in an S3-compatible bucket: streaming multipart uploads,
 * server-side copy into content-addressed blobs, verified reads, presigned URLs.
 *
 * @example
 * ```ts
 * import { s3Artifacts } from 'cairn/s3';
 * const artifacts = s3Artifacts({ bucket: 'my-agent-artifacts', prefix: 'prod/', client: { region: 'eu-west-1' } });
 * const ref = await artifacts.put(fs.createReadStream('report.pdf'), { mediaType: 'application/pdf' });
 * const url = await artifacts.presignGet(ref, { expiresIn: 300 }); // for a browser, 5 minutes
 * ```
 */
export class S3ArtifactStore extends BaseArtifactStore {
  readonly bucket: string;
  readonly prefix: string;
  private readonly s3: S3Backend;

  constructor(options: S3ArtifactStoreOptions);
  /** @internal A tenant view sharing `of`'s client and lifecycle. */
  constructor(options: { of: S3ArtifactStore; tenant: string });
  constructor(options: S3ArtifactStoreOptions | { of: S3ArtifactStore; tenant: string }) {
    const parent = 'of' in options ? options.of : undefined;
    const backend = parent ? parent.s3 : new S3Backend(options as S3ArtifactStoreOptions);
    super(parent ? parent.shared : backend, parent ? (options as { tenant: string }).tenant : null);
    this.s3 = backend;
    this.bucket = backend.bucket;
    this.prefix = backend.prefix;
  }

  /** The object name of a blob (for tools and tests; never write there). */
  blobKey(sha256: string): string {
    return this.s3.blobKey(sha256);
  }

  /**
   * A URL that reads the artifact's bytes without credentials until it expires
   * (`expiresInMs`, default 15 minutes, at most 7 days; S3 counts whole seconds, so it
   * is rounded up to one). The URL serves the stored
   * blob directly, unverified: the ref's `sha256` lets the receiver check it.
   * Tenant rules apply: a tenant view presigns only its own refs. Needs
   * `@aws-sdk/s3-request-presigner`.
   *
   * @example
   * ```ts
   * const url = await artifacts.forTenant('acme').presignGet(ref, { expiresInMs: 60_000 });
   * ```
   */
  async presignGet(ref: ArtifactRef, options: PresignOptions = {}): Promise<string> {
    return presign(this, this.s3, ref, options);
  }

  /** A view scoped to `tenant` (see {@link ArtifactStore.forTenant}), with presigned URLs of its own refs. */
  override forTenant(tenant: string): S3ArtifactStore {
    super.forTenant(tenant);
    return new S3ArtifactStore({ of: this, tenant });
  }
}

/** How long a presigned URL works. */
export interface PresignOptions {
  /** Milliseconds, 1 ms to 7 days (rounded up to whole seconds). Default 15 minutes. */
  expiresInMs?: number;
  /** @deprecated Since 0.2.0: use `expiresInMs`. Seconds. */
  expiresIn?: number;
}

/** The most keys one ListObjectsV2 request returns. */
const LIST_PAGE_MAX = 1000;

/** Longest a presigned URL may work: S3's limit, 7 days. */
const MAX_PRESIGN_MS = 7 * 24 * 3600 * 1000;

async function presign(view: BaseArtifactStore, s3: S3Backend, ref: ArtifactRef, options: PresignOptions): Promise<string> {
  const ms = options.expiresInMs ?? (options.expiresIn !== undefined ? options.expiresIn * 1000 : S3_PRESIGN_EXPIRES_MS);
  const name = options.expiresInMs === undefined && options.expiresIn !== undefined ? 'expiresIn (seconds)' : 'expiresInMs';
  if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 1 || ms > MAX_PRESIGN_MS) {
    throw new InvalidOptionError(`${name} must be 1 ms to 7 days, got ${String(options.expiresInMs ?? options.expiresIn)}.`, { place: { engine: BACKEND } });
  }
  const expiresIn = Math.ceil(ms / 1000);
  // stat checks the tenant and that the ref is stored as the caller says.
  const info = await view.stat(ref);
  if (!info) throw new ArtifactNotFoundError(`artifact ${ref.id} is not stored.`, { place: { engine: BACKEND } });
  if (info.ref.sha256 !== ref.sha256 || info.ref.size_bytes !== ref.size_bytes) {
    throw new ArtifactIntegrityError(`artifact ${ref.id} is stored with another digest or size than the ref says.`, { place: { engine: BACKEND } });
  }
  const { sdk, client } = await s3.use();
  let presigner: typeof import('@aws-sdk/s3-request-presigner');
  try {
    presigner = await import('@aws-sdk/s3-request-presigner');
  } catch (cause) {
    throw new DriverMissingError('presigned URLs need `npm install @aws-sdk/s3-request-presigner`.', { cause, place: { engine: BACKEND } });
  }
  const command = new sdk.GetObjectCommand({ Bucket: s3.bucket, Key: s3.blobKey(ref.sha256), ResponseContentType: info.ref.media_type });
  return presigner.getSignedUrl(client as never, command, { expiresIn });
}

/**
 * Creates an S3 artifact store. Nothing is loaded or sent until the first call.
 *
 * @example
 * ```ts
 * const artifacts = s3Artifacts({ bucket: 'agents', client: { endpoint: 'http://127.0.0.1:9000', forcePathStyle: true, region: 'us-east-1' } });
 * ```
 */
export function s3Artifacts(options: S3ArtifactStoreOptions): S3ArtifactStore {
  return new S3ArtifactStore(options);
}

// ------------------------------------------------------------ helpers

function sha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

function httpStatus(error: unknown): number | undefined {
  return (error as { $metadata?: { httpStatusCode?: number } } | null)?.$metadata?.httpStatusCode;
}

function isNotFound(error: unknown): boolean {
  const cause = (error as { cause?: unknown }).cause ?? error;
  const name = (cause as Error | null)?.name;
  return httpStatus(cause) === 404 || name === 'NotFound' || name === 'NoSuchKey';
}

async function mapLimit<T, R>(items: T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) {
        const index = next++;
        out[index] = await fn(items[index]!);
      }
    }),
  );
  return out;
}

