/**
 * Artifact writes killed with SIGKILL at each of their crash points, on the fs and
 * S3 backends: afterwards there is no ref, or a ref to whole bytes (never a ref to
 * a partial blob), the same write then succeeds, and a sweep removes what the
 * crash left behind. Then the worked example, killed inside its artifact upload,
 * resumes to the crash-free result with one stored object.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ArtifactStore } from '../../src/contracts/artifact-store.js';
import { fsArtifacts } from '../../src/artifacts/fs/index.js';
import { listArtifacts } from '../../src/artifacts/helpers.js';
import { ensureBuilt } from '../artifacts/build.js';
import { BUCKET, startS3Server, type S3Server } from '../artifacts/s3-server.js';
import { S3ArtifactStore } from '../../src/artifacts/s3/index.js';
// crash-setup is imported once dist/ is built; its folders are removed by the hook this import registers now.
import '../helpers/temp-dirs.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const dist = join(repoRoot, 'dist');
const writer = fileURLToPath(new URL('../artifacts/fixtures/crash-writer.mjs', import.meta.url));

/** The bytes crash-writer.mjs writes. */
function payload(): Uint8Array {
  const bytes = new Uint8Array(6 * 1024 * 1024 + 123);
  for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 31 + (i >>> 12)) & 0xff;
  return bytes;
}
const PAYLOAD = payload();
const DIGEST = createHash('sha256').update(PAYLOAD).digest('hex');

function run(args: string[], crashAt?: string): Promise<{ signal: NodeJS.Signals | null; code: number | null; stderr: string }> {
  const env = { ...process.env };
  delete env.CAIRN_CRASH_AT;
  if (crashAt) env.CAIRN_CRASH_AT = crashAt;
  return new Promise((resolve) => {
    const child = execFile(process.execPath, ['--no-warnings', writer, dist, ...args], { env, timeout: 60_000 }, (error, _stdout, stderr) => {
      resolve({ signal: child.signalCode, code: child.exitCode, stderr });
    });
  });
}

/** Every listed ref resolves to whole, verified bytes; returns the refs. */
async function everyRefWhole(store: ArtifactStore): Promise<string[]> {
  const ids: string[] = [];
  for await (const { ref } of listArtifacts(store)) {
    const bytes = await store.get(ref);
    expect(bytes.byteLength).toBe(ref.size_bytes);
    ids.push(ref.id);
  }
  return ids;
}

/** What each write crash point must leave: a ref (whole) or none. */
const WRITE_POINTS: [string, 'ref' | 'none'][] = [
  ['artifact-mid-stage', 'none'],
  ['artifact-after-stage', 'none'],
  ['artifact-after-blob', 'none'],
  ['artifact-after-ref', 'ref'],
];

beforeAll(() => ensureBuilt(), 120_000);

interface Backend {
  name: string;
  open(): Promise<{ store: ArtifactStore; args: string[]; cleanup(): Promise<void>; leftovers(): Promise<number> }>;
}

let server: S3Server;
const backends: Backend[] = [
  {
    name: 'fs',
    async open() {
      const dir = await mkdtemp(join(tmpdir(), 'cairn-crash-artifacts-'));
      const root = join(dir, 'root');
      const store = fsArtifacts(root);
      return {
        store,
        args: ['fs', root],
        cleanup: () => rm(dir, { recursive: true, force: true }),
        leftovers: async () => (await readdir(join(root, 'tmp')).catch(() => [])).length,
      };
    },
  },
  {
    name: 's3',
    async open() {
      const prefix = `crash-${Date.now().toString(36)}-${Math.random().toString(36).slice(2)}/`;
      const store = new S3ArtifactStore({ bucket: BUCKET, prefix, client: server.clientConfig });
      return { store, args: ['s3', server.endpoint, prefix], cleanup: () => store.close(), leftovers: async () => 0 };
    },
  },
];

beforeAll(async () => {
  server = await startS3Server();
});
afterAll(() => server?.stop());

describe.each(backends)('artifact writes killed with SIGKILL ($name)', (backend) => {
  for (const op of ['named', 'content'] as const) {
    it.each(WRITE_POINTS)(`${op} put at %s leaves %s, never a partial one`, async (point, expected) => {
      const { store, args, cleanup, leftovers } = await backend.open();
      try {
        const crashed = await run([...args, op], point);
        expect(crashed.signal, `crash point ${point} must be reached: ${crashed.stderr}`).toBe('SIGKILL');

        const ids = await everyRefWhole(store);
        if (expected === 'none') expect(ids).toEqual([]);
        else expect(ids).toEqual([op === 'named' ? 'key:crash/victim' : `sha256:${DIGEST}`]);
        if (op === 'named') {
          const head = await store.head('crash/victim');
          expect(head === null).toBe(expected === 'none');
        }

        // The same write now completes, and its bytes are the whole payload.
        const again = await run([...args, op]);
        expect(again.code, again.stderr).toBe(0);
        const refs = [];
        for await (const info of listArtifacts(store)) refs.push(info.ref);
        expect(refs).toHaveLength(1);
        expect(refs[0]!.sha256).toBe(DIGEST);
        expect(Buffer.compare(Buffer.from(await store.get(refs[0]!)), Buffer.from(PAYLOAD))).toBe(0);

        // A sweep past the grace removes temp files and unreferenced blobs, and nothing referenced.
        await store.sweep({ staleBefore: (await store.now()) + 60_000 });
        expect(await leftovers()).toBe(0);
        expect((await store.get(refs[0]!)).byteLength).toBe(PAYLOAD.byteLength);
      } finally {
        await cleanup();
      }
    });
  }
});

describe('a collector killed while it set an artifact aside (fs)', () => {
  it.each([
    ['still fresh by the next sweep: restored', -60_000, true],
    ['stale by the next sweep: removed', 60_000, false],
  ] as const)('%s', async (_name, offset, restored) => {
    const { store, args, cleanup } = await backends[0]!.open();
    try {
      expect((await run([...args, 'named'])).code).toBe(0);
      const ref = (await store.head('crash/victim'))!;
      const crashed = await run([...args, 'delete'], 'artifact-gc-tomb');
      expect(crashed.signal, crashed.stderr).toBe('SIGKILL');
      expect(await store.head('crash/victim')).toBeNull();
      await store.sweep({ staleBefore: (await store.now()) + offset });
      if (restored) expect(await store.get(ref)).toHaveLength(PAYLOAD.byteLength);
      else expect(await store.head('crash/victim')).toBeNull();
    } finally {
      await cleanup();
    }
  });
});

describe('the worked example killed inside its artifact upload', () => {
  const ARGS = ['--fixed-clock', '--snapshot-every', '2'];
  let reference: Awaited<ReturnType<typeof import('./crash-setup.js').referenceRun>>;
  beforeAll(async () => {
    const { referenceRun } = await import('./crash-setup.js');
    reference = await referenceRun('worked', ARGS);
  }, 60_000);

  // The summary is one chunk, so the mid-stage point is not reached by this example.
  it.each(['artifact-after-stage', 'artifact-after-blob', 'artifact-after-ref'])('at %s resumes to the crash-free result with one whole object', async (crashAt) => {
    const { caseDir } = await import('./crash-setup.js');
    const { runExampleProcess, recoveryChecks } = await import('../../dist/testing/crash-harness.js');
    const { db, artifacts, dir } = caseDir('artifact');
    const args = [...ARGS, '--effect-log', join(dir, 'effects.log')];
    const first = await runExampleProcess({ db, artifacts, args, crashAt });
    expect(first.signal, `the crash point ${crashAt} must be reached`).toBe('SIGKILL');
    const second = await runExampleProcess({ db, artifacts, args });
    expect(second.exitCode, second.stderr).toBe(0);
    for (const check of await recoveryChecks({ db, thread: 'cust_42', first, last: second, reference })) {
      expect(check.ok, `${check.name}: ${check.detail}`).toBe(true);
    }
    const store = fsArtifacts(artifacts);
    const refs = [];
    for await (const info of listArtifacts(store)) refs.push(info.ref);
    expect(refs.map((r) => r.id)).toEqual(['key:summary-42.txt']);
    expect(refs[0]).toEqual((second.result!.state as { artifact: unknown }).artifact);
    expect(new TextDecoder().decode(await store.get(refs[0]!))).toBe((second.result!.state as { summary: string }).summary);
    await rm(dir, { recursive: true, force: true });
  });
});
