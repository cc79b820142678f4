/**
 * @module artifacts/fs/fs-artifact-store
 * Artifacts as files under one root directory.
 *
 * Layout (every name below is derived from hex digests, never from caller text):
 *
 * ```
 * <root>/blobs/sha256/<2 hex>/<64 hex>             the bytes, shared by every ref to them
 * <root>/content/sha256/<2 hex>/<64 hex>.json      one content-addressed ref (`put` without a key)
 * <root>/keys/<2 hex>/<64 hex>.json                one named ref; the name is sha256(key)
 * <root>/tenants/<64 hex>/content/… and /keys/…    the same for one tenant; the name is sha256(tenant)
 * <root>/tmp/.tmp-*                                bytes being staged (a crash may leave one)
 * ```
 *
 * A key file is named after the sha256 of the key rather than an encoding of its
 * segments: a valid key may be 512 characters in one segment, which no encoding fits
 * into a 255-byte file name, and `Report` and `report` are different keys that a
 * case-insensitive filesystem (macOS, Windows) would merge. Hex names also make
 * `con`, `nul`, trailing dots and `:` harmless. The file holds the full ref, whose
 * id carries the key, so a listing still shows every key.
 *
 * Freshness (`freshAt`) is a file's mtime: set when it is written, and by `utimes`
 * when the artifact is handed out again. Processes sharing the directory over a
 * network filesystem need clocks that agree to well within the collector's grace.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';
import { link, mkdir, open, readdir, readFile, rename, stat, unlink, utimes } from 'node:fs/promises';
import { basename, dirname, join, resolve, sep } from 'node:path';
import type { ArtifactRef, ArtifactSweepReport } from '../../contracts/artifact-store.js';
import { FS_TEMP_FILE_AGE_MS } from '../../defaults.js';
import { ArtifactIntegrityError, CairnError, EngineError, InvalidKeyError, InvalidOptionError } from '../../errors.js';
import { checkOptionKeys } from '../../internal/option-keys.js';
import { crashPoint } from '../../internal/crash-points.js';
import { referencedDigests, type ArtifactBackend, type ArtifactRecord, type BlobReader, type RecordAddress, type RecordPage, type Staged, type StoredRecord } from '../backend.js';
import { BaseArtifactStore } from '../base-artifact-store.js';
import { checkArtifactKey, checkDigest, checkTenant, parseRefId } from '../refs.js';
import { READ_CHUNK } from '../streams.js';

/** Options of {@link fsArtifacts}. */
export interface FsArtifactStoreOptions {
  /**
   * fsync every file and directory a write touches (default `true`). Turning it off
   * keeps writes atomic (a reader never sees a partial file) but not durable across
   * a power cut: only for scratch directories and tests.
   */
  fsync?: boolean;
}

/** Options of {@link FsArtifactStore.sweepTemp}. */
export interface SweepTempOptions {
  /**
   * Only remove temp files last modified at least this long ago (default one hour),
   * so that a sweep never pulls a file from under a write still in progress in
   * another process. Pass `0` when no other process uses the directory.
   */
  olderThanMs?: number;
}

const BACKEND = 'fs';
const TEMP_PREFIX = '.tmp-';
/** A file a collector set aside: `.gc-<original name>.<random>`; restored or removed by the next sweep if the collector died. */
const TOMB_PREFIX = '.gc-';
const RECORD_VERSION = 2;
const SHARD = /^[0-9a-f]{2}$/;
const HEX64 = /^[0-9a-f]{64}$/;
const RECORD_FILE = /^([0-9a-f]{64})\.json$/;

/** What a record file holds. Version 1 files (`{v:1, ref}`) are still read. */
interface RecordFile {
  v: number;
  ref: ArtifactRef;
  tenant?: string | null;
  metadata?: Record<string, string>;
}

interface FsStaged extends Staged {
  path: string;
}

class FsBackend implements ArtifactBackend {
  readonly name = BACKEND;

  constructor(
    readonly root: string,
    private readonly fsync: boolean,
  ) {}

  // ------------------------------------------------------------ paths

  /** Joins under the root and proves the result stayed there: a second fence behind validation. */
  inside(...parts: string[]): string {
    const path = resolve(this.root, ...parts);
    if (!path.startsWith(this.root + sep)) {
      throw new InvalidKeyError(`path ${JSON.stringify(parts.join('/'))} resolves outside the artifact root ${this.root}.`, { place: { engine: BACKEND } });
    }
    return path;
  }

  blobPath(digest: string): string {
    checkDigest(digest);
    return this.inside('blobs', 'sha256', digest.slice(0, 2), digest);
  }

  /** The directory (relative to the root) holding a tenant's records, `''` when unscoped. */
  tenantDir(tenant: string | null): string {
    if (tenant === null) return '';
    checkTenant(tenant);
    return join('tenants', sha256(tenant));
  }

  recordPath(address: RecordAddress): string {
    const base = this.tenantDir(address.tenant);
    if (address.kind === 'content') {
      checkDigest(address.name);
      return this.inside(base, 'content', 'sha256', address.name.slice(0, 2), `${address.name}.json`);
    }
    checkArtifactKey(address.name);
    const hash = sha256(address.name);
    return this.inside(base, 'keys', hash.slice(0, 2), `${hash}.json`);
  }

  // ------------------------------------------------------------ writing

  async stage(chunks: AsyncIterable<Uint8Array>): Promise<Staged> {
    const dir = this.inside('tmp');
    await this.ensureDir(dir);
    const path = join(dir, TEMP_PREFIX + randomBytes(8).toString('hex'));
    let handle: FileHandle | undefined;
    let size = 0;
    try {
      handle = await open(path, 'wx');
      for await (const chunk of chunks) {
        let offset = 0;
        while (offset < chunk.byteLength) offset += (await handle.write(chunk, offset, chunk.byteLength - offset)).bytesWritten;
        size += chunk.byteLength;
      }
      if (this.fsync) await handle.sync();
      await handle.close();
      handle = undefined;
    } catch (error) {
      await handle?.close().catch(() => undefined);
      await unlink(path).catch(() => undefined);
      // The caller's stream failing (or an abort) is rethrown as it is; only our own I/O is wrapped.
      throw errno(error) === undefined ? error : fsFailure('write', path, error);
    }
    return { size, path } as FsStaged;
  }

  async commitBlob(staged: Staged, digest: string): Promise<void> {
    const { path: temp, size } = staged as FsStaged;
    const path = this.blobPath(digest);
    if (await this.freshenFile(path, size)) {
      await unlink(temp).catch(() => undefined);
      return;
    }
    // A missing blob, or one of the wrong size (damaged): the staged bytes take its place.
    // Two writers of the same bytes may both rename; the last replaces an identical file.
    await this.ensureDir(dirname(path));
    try {
      await rename(temp, path);
    } catch (error) {
      await unlink(temp).catch(() => undefined);
      throw fsFailure('move', path, error);
    }
    await this.syncDir(dirname(path));
  }

  async discard(staged: Staged): Promise<void> {
    await unlink((staged as FsStaged).path).catch(() => undefined);
  }

  async createRecord(address: RecordAddress, record: ArtifactRecord): Promise<StoredRecord | null> {
    const path = this.recordPath(address);
    const file: RecordFile = { v: RECORD_VERSION, ref: record.ref, tenant: record.tenant, metadata: record.metadata };
    if (await this.createFile(path, `${JSON.stringify(file)}\n`)) return null;
    return this.readRecord(address).then((existing) => existing ?? null);
  }

  async freshen(address: RecordAddress, record: StoredRecord): Promise<boolean> {
    // The blob first: a collector keeps a blob that a live record points at, and
    // a fresh blob survives even a record deleted and re-created meanwhile.
    await this.freshenFile(this.blobPath(record.ref.sha256), record.ref.size_bytes);
    return this.freshenFile(this.recordPath(address));
  }

  async deleteRecord(address: RecordAddress, staleBefore?: number): Promise<boolean> {
    const path = this.recordPath(address);
    if (staleBefore === undefined) return this.unlinkDurably(path);
    return this.deleteIfStale(path, staleBefore);
  }

  /**
   * Deletes `path` only if its mtime is still before `staleBefore`, without a window
   * in which a concurrent refresh is lost: the file is first renamed aside, then its
   * mtime is read from the renamed file. A writer's `utimes` either landed before the
   * rename (and the mtime shows it: the file is put back) or fails with ENOENT after
   * it (and the writer writes the artifact again).
   */
  async deleteIfStale(path: string, staleBefore: number): Promise<boolean> {
    try {
      if ((await stat(path)).mtimeMs >= staleBefore) return false;
    } catch (error) {
      if (errno(error) === 'ENOENT') return false;
      throw fsFailure('stat', path, error);
    }
    const tomb = join(dirname(path), `${TOMB_PREFIX}${basename(path)}.${randomBytes(4).toString('hex')}`);
    try {
      await rename(path, tomb);
    } catch (error) {
      if (errno(error) === 'ENOENT') return false;
      throw fsFailure('set aside', path, error);
    }
    crashPoint('artifact-gc-tomb');
    return this.settleTomb(tomb, path, staleBefore);
  }

  /** Removes a set-aside file if it is still stale, else puts it back (unless a new file took its name). */
  private async settleTomb(tomb: string, path: string, staleBefore: number): Promise<boolean> {
    let mtime: number;
    try {
      mtime = (await stat(tomb)).mtimeMs;
    } catch (error) {
      if (errno(error) === 'ENOENT') return false;
      throw fsFailure('stat', tomb, error);
    }
    if (mtime >= staleBefore) {
      try {
        await link(tomb, path);
      } catch (error) {
        // EEXIST: a writer created the file anew meanwhile; it stands.
        if (errno(error) !== 'EEXIST') throw fsFailure('restore', path, error);
      }
      await unlink(tomb).catch(() => undefined);
      await this.syncDir(dirname(path));
      return false;
    }
    await unlink(tomb).catch((error: unknown) => {
      if (errno(error) !== 'ENOENT') throw fsFailure('delete', tomb, error);
    });
    await this.syncDir(dirname(path));
    return true;
  }

  // ------------------------------------------------------------ reading

  async readRecord(address: RecordAddress): Promise<StoredRecord | null> {
    return this.readRecordFile(this.recordPath(address));
  }

  /**
   * Reads a record file; null when it does not exist. Checks that the file is a
   * well-formed ref and belongs at its path, so a file copied or edited by hand
   * cannot make one key answer for another.
   */
  private async readRecordFile(path: string): Promise<StoredRecord | null> {
    let text: string;
    let mtime: number;
    let handle: FileHandle | undefined;
    try {
      handle = await open(path, 'r');
      mtime = (await handle.stat()).mtimeMs;
      text = await handle.readFile('utf8');
    } catch (error) {
      if (errno(error) === 'ENOENT') return null;
      throw fsFailure('read', path, error);
    } finally {
      await handle?.close().catch(() => undefined);
    }
    const damaged = (why: string, cause?: unknown) =>
      new ArtifactIntegrityError(`${path} is not a valid artifact ref (${why}); it was damaged or edited by hand. Restore it from a backup, or delete it to forget the artifact.`, {
        place: { engine: BACKEND },
        ...(cause !== undefined ? { cause } : {}),
      });
    let file: RecordFile;
    try {
      file = JSON.parse(text) as RecordFile;
    } catch (error) {
      throw damaged('not JSON', error);
    }
    const ref = file?.ref;
    if ((file?.v !== 1 && file?.v !== RECORD_VERSION) || !isRefShape(ref)) throw damaged(`expected {"v":${RECORD_VERSION},"ref":{id,sha256,media_type,size_bytes}}`);
    let parsed;
    try {
      parsed = parseRefId(ref.id);
    } catch (error) {
      throw damaged(`its id ${JSON.stringify(String(ref.id).slice(0, 600))} is invalid`, error);
    }
    const tenant = parsed.tenant;
    const home = this.recordPath({ tenant, kind: parsed.kind, name: parsed.kind === 'content' ? parsed.digest : parsed.key });
    if ((file.tenant ?? null) !== tenant || (parsed.kind === 'content' && parsed.digest !== ref.sha256) || home !== path) {
      throw damaged(`it holds ${JSON.stringify(ref.id.slice(0, 600))}`);
    }
    const metadata = file.metadata && typeof file.metadata === 'object' ? { ...file.metadata } : {};
    return { ref: { id: ref.id, sha256: ref.sha256, media_type: ref.media_type, size_bytes: ref.size_bytes }, tenant, metadata, freshAt: mtime };
  }

  async deleteBlob(digest: string): Promise<boolean> {
    return this.unlinkDurably(this.blobPath(digest));
  }

  /** Removes `path` and syncs its directory, so the removal survives a crash; false when it was not there. */
  private async unlinkDurably(path: string): Promise<boolean> {
    try {
      await unlink(path);
    } catch (error) {
      if (errno(error) === 'ENOENT') return false;
      throw fsFailure('delete', path, error);
    }
    await this.syncDir(dirname(path));
    return true;
  }

  async openBlob(digest: string): Promise<BlobReader | null> {
    const path = this.blobPath(digest);
    let handle: FileHandle;
    try {
      handle = await open(path, 'r');
    } catch (error) {
      if (errno(error) === 'ENOENT') return null;
      throw fsFailure('read', path, error);
    }
    let size: number;
    try {
      size = (await handle.stat()).size;
    } catch (error) {
      await handle.close();
      throw fsFailure('stat', path, error);
    }
    // Every pass reads the same open file: a rename over the path meanwhile does not
    // change what this reader sees.
    return {
      size,
      async *chunks(signal?: AbortSignal) {
        for (let position = 0; ; ) {
          signal?.throwIfAborted();
          const buffer = new Uint8Array(READ_CHUNK);
          let read: number;
          try {
            ({ bytesRead: read } = await handle.read(buffer, 0, READ_CHUNK, position));
          } catch (error) {
            throw fsFailure('read', path, error);
          }
          if (read === 0) return;
          position += read;
          yield read === READ_CHUNK ? buffer : buffer.subarray(0, read);
        }
      },
      close: () => handle.close().catch(() => undefined),
    };
  }

  async listRecords(options: { tenant: string | null | undefined; cursor: string | undefined; limit: number }): Promise<RecordPage> {
    const bases =
      options.tenant === undefined
        ? ['', ...(await readdirOrEmpty(this.inside('tenants'))).filter((h) => HEX64.test(h)).sort().map((h) => join('tenants', h))]
        : [this.tenantDir(options.tenant)];
    const items: StoredRecord[] = [];
    let last: string | undefined;
    const cursor = options.cursor;
    outer: for (const base of bases) {
      for (const area of ['content/sha256', 'keys']) {
        const areaRel = base ? `${base.split(sep).join('/')}/${area}` : area;
        if (cursor !== undefined && areaRel < cursor && !cursor.startsWith(`${areaRel}/`)) continue;
        const areaDir = this.inside(...areaRel.split('/'));
        for (const shard of (await readdirOrEmpty(areaDir)).filter((s) => SHARD.test(s)).sort()) {
          const shardRel = `${areaRel}/${shard}`;
          if (cursor !== undefined && shardRel < cursor && !cursor.startsWith(`${shardRel}/`)) continue;
          for (const name of (await readdirOrEmpty(join(areaDir, shard))).sort()) {
            const hex = RECORD_FILE.exec(name)?.[1];
            if (hex === undefined || !hex.startsWith(shard)) continue;
            const rel = `${shardRel}/${name}`;
            if (cursor !== undefined && rel <= cursor) continue;
            const record = await this.readRecordFile(join(areaDir, shard, name));
            // A file can vanish between readdir and read when another process deletes it.
            if (record) items.push(record);
            last = rel;
            if (items.length >= options.limit) break outer;
          }
        }
      }
    }
    return { items, cursor: items.length >= options.limit && last !== undefined ? last : null };
  }

  async now(): Promise<number> {
    return Date.now();
  }

  // ------------------------------------------------------------ sweeping

  async sweep(olderThan: number, dryRun: boolean): Promise<ArtifactSweepReport> {
    const report: ArtifactSweepReport = { blobs: 0, bytes: 0, temps: 0 };
    report.temps += await this.sweepTempFiles(olderThan, dryRun);
    // Blobs are listed before records: a blob placed after this listing is not a
    // candidate, and one listed here whose record appears later is refreshed (its
    // mtime moves past the cutoff) by the writer that placed or reused it.
    const candidates: { path: string; digest: string; size: number }[] = [];
    const blobsDir = this.inside('blobs', 'sha256');
    for (const shard of (await readdirOrEmpty(blobsDir)).filter((s) => SHARD.test(s))) {
      for (const name of await readdirOrEmpty(join(blobsDir, shard))) {
        if (!HEX64.test(name) || !name.startsWith(shard)) continue;
        const path = join(blobsDir, shard, name);
        try {
          const info = await stat(path);
          if (info.mtimeMs < olderThan) candidates.push({ path, digest: name, size: info.size });
        } catch (error) {
          if (errno(error) !== 'ENOENT') throw fsFailure('stat', path, error);
        }
      }
    }
    if (candidates.length === 0) return report;
    const referenced = await referencedDigests(this);
    for (const blob of candidates) {
      if (referenced.has(blob.digest)) continue;
      if (dryRun || (await this.deleteIfStale(blob.path, olderThan))) {
        report.blobs++;
        report.bytes += blob.size;
      }
    }
    return report;
  }

  /** Temp files of crashed writes, and files a crashed collector set aside (stale ones removed, fresh ones restored). */
  async sweepTempFiles(olderThan: number, dryRun: boolean): Promise<number> {
    let removed = 0;
    for (const dir of await this.dataDirs()) {
      for (const name of await readdirOrEmpty(dir)) {
        const path = join(dir, name);
        if (name.startsWith(TOMB_PREFIX)) {
          if (dryRun) continue;
          const original = /^\.gc-(.+)\.[0-9a-f]{8}$/.exec(name)?.[1];
          if (original) await this.settleTomb(path, join(dir, original), olderThan);
          continue;
        }
        if (!name.startsWith(TEMP_PREFIX)) continue;
        try {
          if ((await stat(path)).mtimeMs >= olderThan) continue;
          if (!dryRun) await unlink(path);
          removed++;
        } catch (error) {
          if (errno(error) !== 'ENOENT') throw fsFailure('sweep', path, error);
        }
      }
    }
    return removed;
  }

  /** Every directory that may hold a temp file or a set-aside file. */
  private async dataDirs(): Promise<string[]> {
    const dirs: string[] = [this.inside('tmp')];
    const bases = ['', ...(await readdirOrEmpty(this.inside('tenants'))).filter((h) => HEX64.test(h)).map((h) => join('tenants', h))];
    const areas = [join('blobs', 'sha256'), ...bases.flatMap((b) => [join(b, 'content', 'sha256'), join(b, 'keys')])];
    for (const area of areas) {
      const areaDir = this.inside(area);
      dirs.push(areaDir);
      for (const shard of await readdirOrEmpty(areaDir)) if (SHARD.test(shard)) dirs.push(join(areaDir, shard));
    }
    return dirs;
  }

  // ------------------------------------------------------------ file primitives

  /** Sets a file's mtime to now; false when it is missing (or, given `size`, of another size). */
  private async freshenFile(path: string, size?: number): Promise<boolean> {
    try {
      if (size !== undefined && (await stat(path)).size !== size) return false;
      const now = new Date();
      await utimes(path, now, now);
      return true;
    } catch (error) {
      if (errno(error) === 'ENOENT') return false;
      throw fsFailure('touch', path, error);
    }
  }

  /**
   * Creates `path` with `text` unless it exists, all or nothing: a temp file in the
   * same directory, fsynced, then hard-linked to `path`. `link` fails with EEXIST
   * when `path` exists, atomically, even across processes: a rename-if-absent.
   * (Checking first and then renaming would let two writers both see "absent".)
   */
  private async createFile(path: string, text: string): Promise<boolean> {
    const dir = dirname(path);
    await this.ensureDir(dir);
    const temp = join(dir, TEMP_PREFIX + randomBytes(8).toString('hex'));
    let handle: FileHandle | undefined;
    let placed = false;
    try {
      handle = await open(temp, 'wx');
      await handle.writeFile(text);
      if (this.fsync) await handle.sync();
      await handle.close();
      handle = undefined;
      try {
        await link(temp, path);
        placed = true;
      } catch (error) {
        if (errno(error) !== 'EEXIST') throw error;
      }
    } catch (error) {
      throw fsFailure('write', path, error);
    } finally {
      await handle?.close().catch(() => undefined);
      await unlink(temp).catch(() => undefined);
    }
    if (placed) await this.syncDir(dir);
    return placed;
  }

  /** Creates `dir` and its missing parents, making each new directory entry durable. */
  private async ensureDir(dir: string): Promise<void> {
    let first: string | undefined;
    try {
      first = await mkdir(dir, { recursive: true });
    } catch (error) {
      throw fsFailure('create directory', dir, error);
    }
    if (first === undefined) return;
    // Every directory from `first` down to `dir` is new; each one's entry lives in its parent.
    for (let d = dir; d !== dirname(d); d = dirname(d)) {
      await this.syncDir(dirname(d));
      if (d === first) break;
    }
  }

  private async syncDir(dir: string): Promise<void> {
    // Windows cannot open a directory for fsync; NTFS journals the rename itself.
    if (!this.fsync || process.platform === 'win32') return;
    let handle: FileHandle | undefined;
    try {
      handle = await open(dir, 'r');
      await handle.sync();
    } catch (error) {
      throw fsFailure('fsync directory', dir, error);
    } finally {
      await handle?.close().catch(() => undefined);
    }
  }

  async close(): Promise<void> {}
}

/**
 * An {@link ArtifactStore} on the local filesystem: crash-safe (temp file, fsync,
 * rename, directory fsync), streaming, safe for several processes sharing one directory.
 *
 * @example
 * ```ts
 * const artifacts = new FsArtifactStore('./.cairn/artifacts');
 * const ref = await artifacts.put(pdfBytes, { mediaType: 'application/pdf' });
 * const same = await artifacts.get(ref); // verified against ref.sha256
 * ```
 */
export class FsArtifactStore extends BaseArtifactStore {
  /** Absolute path of the root directory (created on the first write). */
  readonly root: string;
  private readonly fs: FsBackend;

  constructor(dir: string, options: FsArtifactStoreOptions = {}) {
    if (typeof dir !== 'string' || dir.length === 0) {
      throw new InvalidKeyError('the fs artifact store needs a directory path, e.g. fsArtifacts("./.cairn/artifacts").', { place: { engine: BACKEND } });
    }
    checkOptionKeys('fsArtifacts', options, ['fsync'], { engine: BACKEND });
    if (options.fsync !== undefined && typeof options.fsync !== 'boolean') throw new InvalidOptionError(`fsArtifacts: fsync must be true or false, not ${JSON.stringify(options.fsync)}.`, { place: { engine: BACKEND } });
    const backend = new FsBackend(resolve(dir), options.fsync ?? true);
    super(backend);
    this.fs = backend;
    this.root = backend.root;
  }

  /** Where the bytes of `sha256` live (for tools and tests; never write there). */
  blobPath(sha256: string): string {
    return this.fs.blobPath(sha256);
  }

  /**
   * Removes the temp files a crash left behind (a write killed between creating
   * its temp file and moving it into place). They are never read: `head`, `get` and
   * `list` ignore them. Returns how many were removed. `sweep` does this too, along
   * with unreferenced blobs.
   *
   * @example
   * ```ts
   * await artifacts.sweepTemp(); // at startup, or from a maintenance job
   * ```
   */
  async sweepTemp(options: SweepTempOptions = {}): Promise<number> {
    await this.now();
    return this.fs.sweepTempFiles(Date.now() - (options.olderThanMs ?? FS_TEMP_FILE_AGE_MS), false);
  }
}

/**
 * Creates a filesystem artifact store rooted at `dir` (created on the first write).
 *
 * @example
 * ```ts
 * import { fsArtifacts } from 'cairn/fs';
 * const artifacts = fsArtifacts('./.cairn/artifacts');
 * const ref = await artifacts.putNamed('report/2024-q3', csv, { mediaType: 'text/csv' });
 * ```
 */
export function fsArtifacts(dir: string, options?: FsArtifactStoreOptions): FsArtifactStore {
  return new FsArtifactStore(dir, options);
}

// ------------------------------------------------------------ helpers

function sha256(text: string): string {
  return createHash('sha256').update(text, 'utf8').digest('hex');
}

function isRefShape(ref: unknown): ref is ArtifactRef {
  if (typeof ref !== 'object' || ref === null) return false;
  const r = ref as Record<string, unknown>;
  return (
    typeof r.id === 'string' &&
    typeof r.sha256 === 'string' &&
    HEX64.test(r.sha256) &&
    typeof r.media_type === 'string' &&
    Number.isSafeInteger(r.size_bytes) &&
    (r.size_bytes as number) >= 0
  );
}

function errno(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException | null)?.code;
}

async function readdirOrEmpty(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (error) {
    if (errno(error) === 'ENOENT' || errno(error) === 'ENOTDIR') return [];
    throw fsFailure('list', dir, error);
  }
}

function fsFailure(op: string, path: string, error: unknown): CairnError {
  if (CairnError.is(error)) return error;
  const reason = error instanceof Error ? error.message : String(error);
  const hint = errno(error) === 'EPERM' || errno(error) === 'ENOTSUP' ? ' The artifact directory must be on a filesystem that supports hard links and fsync.' : '';
  return new EngineError(`${op} ${path} failed: ${reason}.${hint}`, { cause: error, place: { engine: BACKEND } });
}
