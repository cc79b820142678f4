import { spawn } from 'node:child_process';
import { execFileSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, readdir, rm, stat, unlink, utimes, writeFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { createHash } from 'node:crypto';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { ArtifactRef } from '../../src/contracts/artifact-store.js';
import { FsArtifactStore, fsArtifacts } from '../../src/artifacts/fs/index.js';
import { hostileArtifactKeys } from '../../src/testing/artifact-store.suite.js';
import { BUILD_MARKER } from './build.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const distEntry = join(repoRoot, 'dist', 'artifacts', 'fs', 'index.js');

const sha256 = (data: Uint8Array | string) => createHash('sha256').update(data).digest('hex');
const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

/** Every file and directory under `dir`, with file sizes: a before/after fingerprint. */
async function tree(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(`${path}/`, ...(await tree(path)));
    else out.push(`${path} ${(await stat(path)).size}`);
  }
  return out.sort();
}

/** Relative paths of the files under the store root. */
async function files(store: FsArtifactStore): Promise<string[]> {
  return (await tree(store.root)).filter((p) => !p.endsWith('/')).map((p) => relative(store.root, p.split(' ')[0]!).split('\\').join('/'));
}

const blobFile = (store: FsArtifactStore, digest: string) => join(store.root, 'blobs', 'sha256', digest.slice(0, 2), digest);
const keyFile = (store: FsArtifactStore, key: string) => join(store.root, 'keys', sha256(key).slice(0, 2), `${sha256(key)}.json`);

let parent: string;
let store: FsArtifactStore;

beforeEach(async () => {
  parent = await mkdtemp(join(tmpdir(), 'cairn-fs-artifacts-'));
  store = fsArtifacts(join(parent, 'nested', 'root'));
});

afterEach(async () => {
  await store.close();
  await rm(parent, { recursive: true, force: true });
});

describe('FsArtifactStore layout', () => {
  it('writes blobs/sha256/<2>/<64>, content/sha256/<2>/<64>.json and keys/<2>/<64>.json, and nothing else', async () => {
    const content = await store.put('content', { mediaType: 'text/plain' });
    const named = await store.putNamed('docs/Report.pdf', 'named', { mediaType: 'application/pdf' });
    expect(await files(store)).toEqual(
      [
        `blobs/sha256/${content.sha256.slice(0, 2)}/${content.sha256}`,
        `blobs/sha256/${named.sha256.slice(0, 2)}/${named.sha256}`,
        `content/sha256/${content.sha256.slice(0, 2)}/${content.sha256}.json`,
        `keys/${sha256('docs/Report.pdf').slice(0, 2)}/${sha256('docs/Report.pdf')}.json`,
      ].sort(),
    );
    expect(JSON.parse(await readFile(keyFile(store, 'docs/Report.pdf'), 'utf8'))).toEqual({ v: 2, ref: named, tenant: null, metadata: {} });
  });

  it('keeps one blob for bytes stored by content and under two keys', async () => {
    await store.put('shared', { mediaType: 'text/plain' });
    await store.putNamed('one', 'shared', { mediaType: 'text/plain' });
    await store.putNamed('two', 'shared', { mediaType: 'text/plain' });
    expect((await files(store)).filter((f) => f.startsWith('blobs/'))).toHaveLength(1);
  });

  it('names key files by digest only, whatever the key (reserved names, trailing dots, colons, case, 512 chars)', async () => {
    const keys = ['con', 'NUL', 'aux.txt', 'a.', 'a..', 'x:stream', 'Case', 'case', 'k'.repeat(512)];
    for (const key of keys) await store.putNamed(key, key, { mediaType: 'text/plain' });
    const keyFiles = (await files(store)).filter((f) => f.startsWith('keys/'));
    expect(keyFiles).toHaveLength(keys.length);
    for (const f of keyFiles) expect(f).toMatch(/^keys\/[0-9a-f]{2}\/[0-9a-f]{64}\.json$/);
  });
});

describe('FsArtifactStore with hostile keys', () => {
  it('writes nothing outside the root, or anywhere at all, for the whole hostile corpus', async () => {
    const kept = await store.putNamed('kept', 'kept', { mediaType: 'text/plain' });
    const before = await tree(parent);
    for (const { key } of hostileArtifactKeys()) {
      const forged = { ...kept, id: typeof key === 'string' ? `key:${key}` : key } as unknown as ArtifactRef;
      await expect(store.putNamed(key as string, 'x', { mediaType: 'text/plain' })).rejects.toMatchObject({ code: 'ERR_INVALID_KEY' });
      if (key !== undefined) await expect(store.put('x', { mediaType: 'text/plain', key: key as string })).rejects.toMatchObject({ code: 'ERR_INVALID_KEY' });
      await expect(store.head(key as string)).rejects.toMatchObject({ code: 'ERR_INVALID_KEY' });
      await expect(store.get(forged)).rejects.toMatchObject({ code: 'ERR_INVALID_KEY' });
      await expect(store.delete(forged)).rejects.toMatchObject({ code: 'ERR_INVALID_KEY' });
    }
    expect(await tree(parent)).toEqual(before);
  });
});

describe('FsArtifactStore after a crash', () => {
  /** Leaves temp files where a write killed before its rename would: next to the final names. */
  async function leaveTempFiles(key: string, bytes: string): Promise<string[]> {
    const temps = [
      join(dirname(keyFile(store, key)), '.tmp-0123456789abcdef'),
      join(dirname(blobFile(store, sha256(bytes))), '.tmp-fedcba9876543210'),
      join(store.root, 'content', 'sha256', sha256(bytes).slice(0, 2), '.tmp-00000000000000aa'),
    ];
    for (const temp of temps) {
      await mkdir(dirname(temp), { recursive: true });
      await writeFile(temp, bytes.slice(0, 3)); // a partial write
    }
    return temps;
  }

  it('ignores temp files in head, get and list', async () => {
    const kept = await store.putNamed('kept', 'kept', { mediaType: 'text/plain' });
    await leaveTempFiles('crashed', 'crashed bytes');
    await leaveTempFiles('kept', 'kept');
    expect(await store.head('crashed')).toBeNull();
    expect(await store.head('kept')).toEqual(kept);
    expect(text(await store.get(kept))).toBe('kept');
    expect((await store.list()).items.map((i) => i.ref)).toEqual([kept]);
  });

  it('sweepTemp removes temp files older than the grace period and keeps recent ones', async () => {
    await store.putNamed('kept', 'kept', { mediaType: 'text/plain' });
    const [old, ...recent] = await leaveTempFiles('crashed', 'crashed bytes');
    const anHourAgo = new Date(Date.now() - 61 * 60 * 1000);
    await utimes(old!, anHourAgo, anHourAgo);

    expect(await store.sweepTemp()).toBe(1);
    expect(existsSync(old!)).toBe(false);
    for (const temp of recent) expect(existsSync(temp)).toBe(true);

    expect(await store.sweepTemp({ olderThanMs: 0 })).toBe(recent.length);
    expect((await files(store)).some((f) => f.includes('.tmp-'))).toBe(false);
    expect(text(await store.get((await store.head('kept'))!))).toBe('kept');
  });

  it('leaves no temp file behind after successful writes', async () => {
    await store.put('a', { mediaType: 'text/plain' });
    await store.putNamed('b', 'b', { mediaType: 'text/plain' });
    await store.putNamed('b', 'b again', { mediaType: 'text/plain' });
    expect((await files(store)).some((f) => f.includes('.tmp-'))).toBe(false);
  });

  it('treats a blob without a ref (a crash between the two writes) as absent, and a later put completes it', async () => {
    const path = blobFile(store, sha256('orphan'));
    await mkdir(dirname(path), { recursive: true });
    await writeFile(path, 'orphan');
    expect(await store.head('late')).toBeNull();
    expect((await store.list()).items).toEqual([]);
    const ref = await store.putNamed('late', 'orphan', { mediaType: 'text/plain' });
    expect(text(await store.get(ref))).toBe('orphan');
  });

  it('replaces a damaged blob of the wrong size when the same bytes are put again', async () => {
    const ref = await store.put('whole bytes', { mediaType: 'text/plain' });
    await writeFile(blobFile(store, ref.sha256), 'whole');
    await expect(store.get(ref)).rejects.toMatchObject({ code: 'ERR_ARTIFACT_INTEGRITY' });
    await store.put('whole bytes', { mediaType: 'text/plain' });
    expect(text(await store.get(ref))).toBe('whole bytes');
  });
});

describe('FsArtifactStore with damaged files', () => {
  it('raises ArtifactIntegrityError when a ref points at a missing blob', async () => {
    const ref = await store.putNamed('lost', 'lost bytes', { mediaType: 'text/plain' });
    await unlink(blobFile(store, ref.sha256));
    await expect(store.get(ref)).rejects.toMatchObject({ code: 'ERR_ARTIFACT_INTEGRITY' });
  });

  it('raises ArtifactIntegrityError from head, get and list for a key file that is not a ref', async () => {
    const ref = await store.putNamed('mangled', 'bytes', { mediaType: 'text/plain' });
    await writeFile(keyFile(store, 'mangled'), '{"v":1,"ref":');
    await expect(store.head('mangled')).rejects.toMatchObject({ code: 'ERR_ARTIFACT_INTEGRITY' });
    await expect(store.get(ref)).rejects.toMatchObject({ code: 'ERR_ARTIFACT_INTEGRITY' });
    await expect(store.list()).rejects.toMatchObject({ code: 'ERR_ARTIFACT_INTEGRITY' });
  });

  it("rejects a key file copied under another key's name", async () => {
    await store.putNamed('a', 'a bytes', { mediaType: 'text/plain' });
    await mkdir(dirname(keyFile(store, 'b')), { recursive: true });
    await writeFile(keyFile(store, 'b'), await readFile(keyFile(store, 'a')));
    await expect(store.head('b')).rejects.toMatchObject({ code: 'ERR_ARTIFACT_INTEGRITY' });
  });
});

describe('FsArtifactStore delete and blob reuse', () => {
  it('removes the ref file and leaves the blob for a garbage collector', async () => {
    const ref = await store.putNamed('gone', 'gone bytes', { mediaType: 'text/plain' });
    await store.delete(ref);
    expect(existsSync(keyFile(store, 'gone'))).toBe(false);
    expect(existsSync(blobFile(store, ref.sha256))).toBe(true);
  });

  it('refreshes the mtime of a blob it reuses, so a grace-period GC will not collect it', async () => {
    const ref = await store.put('reused', { mediaType: 'text/plain' });
    const longAgo = new Date(Date.now() - 24 * 60 * 60 * 1000);
    await utimes(blobFile(store, ref.sha256), longAgo, longAgo);
    await store.putNamed('reuser', 'reused', { mediaType: 'text/plain' });
    expect((await stat(blobFile(store, ref.sha256))).mtimeMs).toBeGreaterThan(Date.now() - 60_000);
  });
});

describe('FsArtifactStore lifecycle', () => {
  it('refuses every call after close() with EngineClosedError', async () => {
    await store.close();
    await expect(store.head('k')).rejects.toMatchObject({ code: 'ERR_ENGINE_CLOSED' });
    await expect(store.put('x', { mediaType: 'text/plain' })).rejects.toMatchObject({ code: 'ERR_ENGINE_CLOSED' });
    await expect(store.list()).rejects.toMatchObject({ code: 'ERR_ENGINE_CLOSED' });
  });

  it('creates nothing on disk until the first write', async () => {
    expect(await store.head('k')).toBeNull();
    expect((await store.list()).items).toEqual([]);
    expect(existsSync(store.root)).toBe(false);
  });
});

describe('FsArtifactStore shared by two processes', () => {
  const ROUNDS = 50;

  beforeAll(() => {
    // The child processes import the built package, as a user's processes would.
    // Rebuild when dist is missing or older than the sources it is built from.
    const sources = ['src/artifacts/fs/fs-artifact-store.ts', 'src/artifacts/fs/index.ts', 'src/artifacts/refs.ts', 'src/artifacts/base-artifact-store.ts', 'src/artifacts/streams.ts', 'src/internal/crash-points.ts', 'src/errors.ts', 'src/internal/lifecycle.ts'];
    const newest = Math.max(...sources.map((s) => statSync(join(repoRoot, s)).mtimeMs));
    if (existsSync(distEntry) && existsSync(BUILD_MARKER) && statSync(BUILD_MARKER).mtimeMs >= newest) return;
    const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
    try {
      execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: repoRoot, stdio: 'pipe' });
    } catch {
      // tsc exits non-zero for type errors elsewhere in src/ but still emits; the check below decides.
    }
    if (!existsSync(distEntry)) throw new Error(`could not build ${distEntry}; run \`npm run build\` and look at the errors.`);
  }, 120_000);

  /** Starts a process that opens the store, says "ready", waits for "go", then puts `rounds` keys at once. */
  function racer(root: string, tag: string): { ready: Promise<void>; go: () => void; done: Promise<ArtifactRef[]> } {
    const script = `
      const { fsArtifacts } = await import(${JSON.stringify(pathToFileURL(distEntry).href)});
      const store = fsArtifacts(${JSON.stringify(root)});
      process.stdout.write('ready\\n');
      await new Promise((resolve) => process.stdin.once('data', resolve));
      const refs = await Promise.all(Array.from({ length: ${ROUNDS} }, (_, i) =>
        store.putNamed('race/' + i, ${JSON.stringify(tag)} + ' wrote ' + i, { mediaType: 'text/plain' })));
      process.stdout.write(JSON.stringify(refs) + '\\n');
      process.exit(0);
    `;
    const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['pipe', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    let onReady: () => void = () => undefined;
    const ready = new Promise<void>((resolve) => (onReady = resolve));
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      if (out.startsWith('ready\n')) onReady();
    });
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    const done = new Promise<ArtifactRef[]>((resolve, reject) =>
      child.on('exit', (code) => (code === 0 ? resolve(JSON.parse(out.slice('ready\n'.length)) as ArtifactRef[]) : reject(new Error(`${tag} exited ${code}: ${err}`)))),
    );
    return { ready, go: () => child.stdin.end('go\n'), done };
  }

  it(`racing putNamed on the same ${ROUNDS} keys ends with one ref per key and its content`, { timeout: 60_000 }, async () => {
    const a = racer(store.root, 'A');
    const b = racer(store.root, 'B');
    await Promise.all([a.ready, b.ready]);
    a.go();
    b.go();
    const [refsA, refsB] = await Promise.all([a.done, b.done]);

    expect(refsA).toHaveLength(ROUNDS);
    expect(refsB).toEqual(refsA);
    for (let i = 0; i < ROUNDS; i++) {
      const ref = refsA[i]!;
      expect(await store.head(`race/${i}`)).toEqual(ref);
      const body = text(await store.get(ref));
      expect([`A wrote ${i}`, `B wrote ${i}`]).toContain(body);
      expect(ref.sha256).toBe(sha256(body));
    }
    expect((await store.list()).items.filter((i) => i.ref.id.startsWith('key:race/'))).toHaveLength(ROUNDS);
    expect((await files(store)).filter((f) => f.startsWith('keys/'))).toHaveLength(ROUNDS);
    expect((await files(store)).some((f) => f.includes('.tmp-'))).toBe(false);
  });
});

describe('deprecated spellings of 0.1', () => {
  it('backend reads as engine, and sweep still takes olderThan (the same time as staleBefore)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cairn-fs-deprecated-'));
    const store = fsArtifacts(dir);
    try {
      expect(store.engine).toBe('fs');
      expect(store.backend).toBe('fs');
      const ref = await store.put('orphan', { mediaType: 'text/plain' });
      await store.delete(ref);
      const future = (await store.now()) + 60_000;
      expect(await store.sweep({ olderThan: future, dryRun: true })).toMatchObject({ blobs: 1 });
      expect(await store.sweep({ staleBefore: future })).toMatchObject({ blobs: 1 });
      await expect(store.sweep({} as never)).rejects.toMatchObject({ code: 'ERR_INVALID_OPTION' });
    } finally {
      await store.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
