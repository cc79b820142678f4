/**
 * @module artifacts/fs/fs-artifact-store
 * Artifacts as files under one root directory.
 *
 * Layout (every name below is derived from hex digests, never from caller text):
 *
 * ```
 * <root>/blobs/sha256/<2 hex>/<64 hex>          the bytes, shared by every ref to them
 * <root>/content/sha256/<2 hex>/<64 hex>.json   one content-addressed ref (`put` without a key)
 * <root>/keys/<2 hex>/<64 hex>.json             one named ref; the name is sha256(key)
 * ```
 *
 * A key file is named after the sha256 of the key rather than an encoding of its
 * segments: a valid key may be 512 characters in one segment, which no encoding fits
 * into a 255-byte file name, and `Report` and `report` are different keys that a
 * case-insensitive filesystem (macOS, Windows) would merge. Hex names also make
 * `con`, `nul`, trailing dots and `:` harmless. The file holds the full ref, whose
 * id carries the key, so a listing still shows every key.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { FileHandle } from 'node:fs/promises';
import { link, mkdir, open, readdir, readFile, rename, stat, unlink, utimes } from 'node:fs/promises';
import { dirname, join, resolve, sep } from 'node:path';
import type { ArtifactData, ArtifactPutOptions, ArtifactRef, ArtifactStore } from '../../contracts/artifact-store.js';
import { ArtifactIntegrityError, ArtifactNotFoundError, CairnError, EngineError, InvalidKeyError } from '../../errors.js';
import { Lifecycle } from '../../internal/lifecycle.js';
import { CONTENT_PREFIX, KEY_PREFIX, checkArtifactKey, checkDigest, checkMediaType, makeRef, parseRefId, toBytes, verifyBytes } from '../refs.js';

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
const REF_FILE_VERSION = 1;
const SHARD = /^[0-9a-f]{2}$/;
const REF_FILE = /^([0-9a-f]{64})\.json$/;

/** What a content or key file holds. */
interface RefFile {
  v: number;
  ref: ArtifactRef;
}

/**
 * An {@link ArtifactStore} on the local filesystem: crash-safe (temp file, fsync,
 * rename, directory fsync), safe for several processes sharing one directory.
 *
 * @example
 * ```ts
 * const artifacts = new FsArtifactStore('./.cairn/artifacts');
 * const ref = await artifacts.put(pdfBytes, { mediaType: 'application/pdf' });
 * const same = await artifacts.get(ref); // verified against ref.sha256
 * ```
 */
export class FsArtifactStore implements ArtifactStore {
  readonly backend = BACKEND;
  /** Absolute path of the root directory (created on the first write). */
  readonly root: string;
  private readonly fsync: boolean;
  private readonly lifecycle = new Lifecycle(BACKEND, () => undefined);

  constructor(dir: string, options: FsArtifactStoreOptions = {}) {
    if (typeof dir !== 'string' || dir.length === 0) {
      throw new InvalidKeyError('the fs artifact store needs a directory path, e.g. fsArtifacts("./.cairn/artifacts").', { place: { engine: BACKEND } });
    }
    this.root = resolve(dir);
    this.fsync = options.fsync ?? true;
  }

  async put(data: ArtifactData, options: ArtifactPutOptions): Promise<ArtifactRef> {
    if (options.key !== undefined) return this.putNamed(options.key, data, options);
    this.lifecycle.assertOpen();
    checkMediaType(options.mediaType);
    const bytes = toBytes(data);
    const ref = makeRef(bytes, options.mediaType);
    await this.writeBlob(ref.sha256, bytes);
    // The ref file comes after the blob is durable: a crash in between leaves an
    // unreferenced blob, never a ref to missing or partial bytes. When identical bytes
    // were stored before, the first ref (and its media type) stands.
    const path = this.contentPath(ref.sha256);
    const expect = { kind: 'content', digest: ref.sha256 } as const;
    return (await this.readRefFile(path, expect)) ?? this.createRefFile(path, ref, expect);
  }

  async putNamed(key: string, data: ArtifactData, options: { mediaType: string }): Promise<ArtifactRef> {
    this.lifecycle.assertOpen();
    checkArtifactKey(key);
    checkMediaType(options.mediaType);
    const path = this.keyPath(key);
    const existing = await this.readRefFile(path, { kind: 'key', key });
    if (existing) return existing;
    const bytes = toBytes(data);
    const ref = makeRef(bytes, options.mediaType, key);
    await this.writeBlob(ref.sha256, bytes);
    // If another writer (this process or another) creates the key between our check
    // and our link, its ref wins. Our blob may then be unreferenced; it is left for a
    // GC rather than deleted, since a third writer may be about to reference it.
    return this.createRefFile(path, ref, { kind: 'key', key });
  }

  async head(key: string): Promise<ArtifactRef | null> {
    this.lifecycle.assertOpen();
    checkArtifactKey(key);
    return this.readRefFile(this.keyPath(key), { kind: 'key', key });
  }

  async get(ref: ArtifactRef): Promise<Uint8Array> {
    this.lifecycle.assertOpen();
    const parsed = parseRefId(ref?.id);
    const stored = await this.readRefFile(parsed.kind === 'key' ? this.keyPath(parsed.key) : this.contentPath(parsed.digest), parsed);
    if (!stored) throw new ArtifactNotFoundError(`artifact ${ref.id} is not stored under ${this.root}.`, { place: { engine: BACKEND } });
    return this.readBlob(ref, stored.sha256);
  }

  /**
   * Forgets the ref: the key file or the content ref file. The blob is kept: other
   * refs may share it, and no check for that is both cheap and free of races with a
   * concurrent `put` of the same bytes in another process. Unreferenced blobs are
   * left for a garbage collector with a grace period (`put` refreshes a reused blob's
   * mtime for that purpose).
   */
  async delete(ref: ArtifactRef): Promise<void> {
    this.lifecycle.assertOpen();
    const parsed = parseRefId(ref?.id);
    const path = parsed.kind === 'key' ? this.keyPath(parsed.key) : this.contentPath(parsed.digest);
    try {
      await unlink(path);
    } catch (err) {
      if (errno(err) === 'ENOENT') return;
      throw fsFailure('delete', path, err);
    }
    await this.syncDir(dirname(path));
  }

  async list(): Promise<ArtifactRef[]> {
    this.lifecycle.assertOpen();
    const files = [
      ...(await this.refFiles(join('content', 'sha256'))).map((f) => ({ ...f, kind: 'content' as const })),
      ...(await this.refFiles('keys')).map((f) => ({ ...f, kind: 'key' as const })),
    ];
    const refs: (ArtifactRef | null)[] = [];
    // In batches: one open file per ref file at once could exhaust file descriptors.
    for (let i = 0; i < files.length; i += 64) {
      const batch = files.slice(i, i + 64);
      refs.push(
        ...(await Promise.all(
          batch.map((f) => this.readRefFile(f.path, f.kind === 'content' ? { kind: 'content', digest: f.hex } : { kind: 'key', keyHash: f.hex })),
        )),
      );
    }
    // A file can vanish between readdir and read when another process deletes it.
    return refs.filter((r): r is ArtifactRef => r !== null).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  }

  /**
   * Removes the `.tmp-*` files a crash left behind (a write killed between creating
   * its temp file and renaming it). They are never read: `head`, `get` and `list`
   * ignore them. Returns how many were removed.
   *
   * @example
   * ```ts
   * await artifacts.sweepTemp(); // at startup, or from a maintenance job
   * ```
   */
  async sweepTemp(options: SweepTempOptions = {}): Promise<number> {
    this.lifecycle.assertOpen();
    const cutoff = Date.now() - (options.olderThanMs ?? 60 * 60 * 1000);
    let removed = 0;
    for (const dir of await this.dataDirs()) {
      for (const name of await readdirOrEmpty(dir)) {
        if (!name.startsWith(TEMP_PREFIX)) continue;
        const path = join(dir, name);
        try {
          if ((await stat(path)).mtimeMs > cutoff) continue;
          await unlink(path);
          removed++;
        } catch (err) {
          if (errno(err) !== 'ENOENT') throw fsFailure('sweep', path, err);
        }
      }
    }
    return removed;
  }

  async close(): Promise<void> {
    this.lifecycle.close();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.close();
  }

  // ------------------------------------------------------------ paths

  private blobPath(digest: string): string {
    checkDigest(digest);
    return this.inside('blobs', 'sha256', digest.slice(0, 2), digest);
  }

  private contentPath(digest: string): string {
    checkDigest(digest);
    return this.inside('content', 'sha256', digest.slice(0, 2), `${digest}.json`);
  }

  private keyPath(key: string): string {
    checkArtifactKey(key);
    const hash = keyHash(key);
    return this.inside('keys', hash.slice(0, 2), `${hash}.json`);
  }

  /** Joins under the root and proves the result stayed there: a second fence behind key validation. */
  private inside(...parts: string[]): string {
    const path = resolve(this.root, ...parts);
    if (!path.startsWith(this.root + sep)) {
      throw new InvalidKeyError(`path ${JSON.stringify(parts.join('/'))} resolves outside the artifact root ${this.root}.`, { place: { engine: BACKEND } });
    }
    return path;
  }

  /** Every directory that may hold a data or temp file: the shard directories. */
  private async dataDirs(): Promise<string[]> {
    const dirs: string[] = [];
    for (const base of [join('blobs', 'sha256'), join('content', 'sha256'), 'keys']) {
      const baseDir = this.inside(base);
      for (const shard of await readdirOrEmpty(baseDir)) if (SHARD.test(shard)) dirs.push(join(baseDir, shard));
    }
    return dirs;
  }

  /** The `<64 hex>.json` files under `<base>/<2 hex>/`; temp files and strays are skipped. */
  private async refFiles(base: string): Promise<{ path: string; hex: string }[]> {
    const baseDir = this.inside(base);
    const found: { path: string; hex: string }[] = [];
    for (const shard of await readdirOrEmpty(baseDir)) {
      if (!SHARD.test(shard)) continue;
      for (const name of await readdirOrEmpty(join(baseDir, shard))) {
        const hex = REF_FILE.exec(name)?.[1];
        if (hex !== undefined && hex.startsWith(shard)) found.push({ path: join(baseDir, shard, name), hex });
      }
    }
    return found;
  }

  // ------------------------------------------------------------ reading

  /**
   * Reads a content or key file; null when it does not exist. Checks that the file
   * is a well-formed ref and belongs at its path, so a file copied or edited by hand
   * cannot make one key answer for another.
   */
  private async readRefFile(
    path: string,
    expect: { kind: 'content'; digest: string } | { kind: 'key'; key: string } | { kind: 'key'; keyHash: string },
  ): Promise<ArtifactRef | null> {
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (err) {
      if (errno(err) === 'ENOENT') return null;
      throw fsFailure('read', path, err);
    }
    const damaged = (why: string, cause?: unknown) =>
      new ArtifactIntegrityError(`${path} is not a valid artifact ref (${why}); it was damaged or edited by hand. Restore it from a backup, or delete it to forget the artifact.`, {
        place: { engine: BACKEND },
        ...(cause !== undefined ? { cause } : {}),
      });
    let file: RefFile;
    try {
      file = JSON.parse(text) as RefFile;
    } catch (err) {
      throw damaged('not JSON', err);
    }
    const ref = file?.ref;
    if (file?.v !== REF_FILE_VERSION || !isRefShape(ref)) throw damaged(`expected {"v":${REF_FILE_VERSION},"ref":{id,sha256,media_type,size_bytes}}`);
    if (expect.kind === 'content') {
      if (ref.id !== CONTENT_PREFIX + expect.digest || ref.sha256 !== expect.digest) throw damaged(`it holds ${ref.id}`);
    } else {
      const key = ref.id.startsWith(KEY_PREFIX) ? ref.id.slice(KEY_PREFIX.length) : '';
      const matches = 'key' in expect ? key === expect.key : isValidKey(key) && keyHash(key) === expect.keyHash;
      if (!matches) throw damaged(`it holds ${JSON.stringify(ref.id.slice(0, 600))}`);
    }
    return { id: ref.id, sha256: ref.sha256, media_type: ref.media_type, size_bytes: ref.size_bytes };
  }

  /** Reads the blob a ref points at and verifies it against the caller's ref before returning it. */
  private async readBlob(ref: ArtifactRef, digest: string): Promise<Uint8Array> {
    const path = this.blobPath(digest);
    const integrity = (message: string, cause?: unknown) =>
      new ArtifactIntegrityError(message, { place: { engine: BACKEND }, ...(cause !== undefined ? { cause } : {}) });
    let handle: FileHandle;
    try {
      handle = await open(path, 'r');
    } catch (err) {
      if (errno(err) === 'ENOENT') throw integrity(`artifact ${ref.id} is referenced but its blob ${path} is missing. Run \`cairn verify\` to find every dangling ref.`, err);
      throw fsFailure('read', path, err);
    }
    let bytes: Uint8Array;
    try {
      // Checking the size first means a file that grew (or was swapped for a huge
      // one) is rejected without reading it into memory.
      const { size } = await handle.stat();
      if (size !== ref.size_bytes) throw integrity(`artifact ${ref.id} has ${size} bytes on disk, its ref says ${ref.size_bytes}.`);
      const buffer = await handle.readFile();
      bytes = new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
    } catch (err) {
      throw CairnError.is(err) ? err : fsFailure('read', path, err);
    } finally {
      await handle.close();
    }
    return verifyBytes(ref, bytes, BACKEND);
  }

  // ------------------------------------------------------------ writing

  /**
   * Creates the ref file at `path` unless one exists, and returns the ref that is
   * there afterwards: ours, or the one an earlier or concurrent writer created.
   */
  private async createRefFile(
    path: string,
    ref: ArtifactRef,
    expect: { kind: 'content'; digest: string } | { kind: 'key'; key: string },
  ): Promise<ArtifactRef> {
    // A retry is needed only if the winner's file is deleted between our failed link and our read.
    for (let attempt = 0; attempt < 5; attempt++) {
      if (await this.writeFile(path, encodeRefFile(ref), 'create')) return ref;
      const existing = await this.readRefFile(path, expect);
      if (existing) return existing;
    }
    throw new EngineError(`${path} keeps being created and deleted by other writers; could not store ${ref.id}.`, { place: { engine: BACKEND } });
  }

  /** Makes the blob for `digest` exist with these bytes. */
  private async writeBlob(digest: string, bytes: Uint8Array): Promise<void> {
    const path = this.blobPath(digest);
    try {
      const existing = await stat(path);
      if (existing.size === bytes.byteLength) {
        // Reused, not rewritten. Refreshing the mtime tells a future grace-period GC
        // that a ref to this blob is about to be written, so it must not collect it.
        const now = new Date();
        await utimes(path, now, now);
        return;
      }
      // A blob of the wrong size is damaged: fall through and replace it with good bytes.
    } catch (err) {
      if (errno(err) !== 'ENOENT') throw fsFailure('stat', path, err);
    }
    // Same name, same bytes: if two writers race, whichever rename lands last
    // replaces an identical file, so plain rename is enough here.
    await this.writeFile(path, bytes, 'replace');
  }

  /**
   * Writes `bytes` at `path` all or nothing: a temp file in the same directory,
   * fsynced, then moved into place, then the directory fsynced. A crash leaves the
   * old state or the new one, plus at worst a `.tmp-*` file that `sweepTemp` removes.
   *
   * `replace` renames over whatever is there. `create` links the temp file to `path`
   * instead: `link` fails with EEXIST when `path` exists, atomically, even across
   * processes, which makes it a rename-if-absent; returns false when it lost.
   * (Checking for the file first and then renaming would let two writers both see
   * "absent" and the second overwrite the first's ref.)
   */
  private async writeFile(path: string, bytes: Uint8Array | string, mode: 'replace' | 'create'): Promise<boolean> {
    const dir = dirname(path);
    await this.ensureDir(dir);
    const temp = join(dir, TEMP_PREFIX + randomBytes(8).toString('hex'));
    let handle: FileHandle | undefined;
    let placed = false;
    try {
      handle = await open(temp, 'wx');
      await handle.writeFile(bytes);
      if (this.fsync) await handle.sync();
      await handle.close();
      handle = undefined;
      if (mode === 'replace') {
        await rename(temp, path);
        placed = true;
      } else {
        try {
          await link(temp, path);
          placed = true;
        } catch (err) {
          if (errno(err) !== 'EEXIST') throw err;
        }
      }
    } catch (err) {
      throw fsFailure('write', path, err);
    } finally {
      await handle?.close().catch(() => undefined);
      if (!(mode === 'replace' && placed)) await unlink(temp).catch(() => undefined);
    }
    if (placed) await this.syncDir(dir);
    return placed;
  }

  /** Creates `dir` and its missing parents, making each new directory entry durable. */
  private async ensureDir(dir: string): Promise<void> {
    let first: string | undefined;
    try {
      first = await mkdir(dir, { recursive: true });
    } catch (err) {
      throw fsFailure('create directory', dir, err);
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
    } catch (err) {
      throw fsFailure('fsync directory', dir, err);
    } finally {
      await handle?.close().catch(() => undefined);
    }
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

function keyHash(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

function isValidKey(key: string): boolean {
  try {
    checkArtifactKey(key);
    return true;
  } catch {
    return false;
  }
}

function encodeRefFile(ref: ArtifactRef): string {
  const file: RefFile = { v: REF_FILE_VERSION, ref };
  return `${JSON.stringify(file)}\n`;
}

function isRefShape(ref: unknown): ref is ArtifactRef {
  if (typeof ref !== 'object' || ref === null) return false;
  const r = ref as Record<string, unknown>;
  return (
    typeof r.id === 'string' &&
    typeof r.sha256 === 'string' &&
    /^[0-9a-f]{64}$/.test(r.sha256) &&
    typeof r.media_type === 'string' &&
    Number.isSafeInteger(r.size_bytes) &&
    (r.size_bytes as number) >= 0
  );
}

function errno(err: unknown): string | undefined {
  return (err as NodeJS.ErrnoException | null)?.code;
}

async function readdirOrEmpty(dir: string): Promise<string[]> {
  try {
    return await readdir(dir);
  } catch (err) {
    if (errno(err) === 'ENOENT' || errno(err) === 'ENOTDIR') return [];
    throw fsFailure('list', dir, err);
  }
}

function fsFailure(op: string, path: string, err: unknown): CairnError {
  if (CairnError.is(err)) return err;
  const reason = err instanceof Error ? err.message : String(err);
  const hint = errno(err) === 'EPERM' || errno(err) === 'ENOTSUP' ? ' The artifact directory must be on a filesystem that supports hard links and fsync.' : '';
  return new EngineError(`${op} ${path} failed: ${reason}.${hint}`, { cause: err, place: { engine: BACKEND } });
}
