/**
 * `cairn gc` and `cairn verify --artifacts` as a user runs them: the built CLI on
 * the worked example's SQLite file and artifact folder (and an S3 bucket).
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PassThrough } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { fsArtifacts } from '../../src/artifacts/fs/index.js';
import { listArtifacts } from '../../src/artifacts/helpers.js';
import { progress } from '../../src/cli/format.js';
import { ensureBuilt } from './build.js';
import { startS3Server, type S3Server } from './s3-server.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const cli = join(repoRoot, 'dist', 'cli', 'main.js');

function cairn(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    const child = execFile(process.execPath, ['--no-warnings', cli, ...args], { env: { ...process.env, ...env }, timeout: 60_000 }, (_error, stdout, stderr) =>
      resolve({ code: child.exitCode ?? -1, stdout, stderr }),
    );
  });
}

let dir: string;
let db: string;
let artifacts: string;

beforeAll(async () => {
  ensureBuilt();
  dir = await mkdtemp(join(tmpdir(), 'cairn-cli-artifacts-'));
  db = join(dir, 'cairn.db');
  artifacts = join(dir, 'artifacts');
  const { runExampleProcess } = await import('../../dist/testing/crash-harness.js');
  const run = await runExampleProcess({ db, artifacts, args: ['--fixed-clock'] });
  expect(run.result?.status, run.stderr).toBe('completed');
}, 120_000);

afterAll(() => rm(dir, { recursive: true, force: true }));

describe('cairn gc', () => {
  it('--dry-run lists what would go and why, and deletes nothing; then gc deletes it and prints a summary', async () => {
    const store = fsArtifacts(artifacts);
    const garbage = await store.put('left behind by a crashed experiment', { mediaType: 'text/plain' });
    await new Promise((resolve) => setTimeout(resolve, 20));

    const dry = await cairn(['gc', '--db', db, '--artifacts', artifacts, '--grace', '10ms', '--dry-run']);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain('cairn gc --dry-run: 2 artifacts');
    expect(dry.stdout).toContain('would delete 1 artifact (');
    expect(dry.stdout).toContain(`${garbage.id}  35 B text/plain`);
    expect(dry.stdout).toContain('no retained position, store value or pin refers to it');
    expect(dry.stdout).toMatch(/kept: 1 referenced/);
    expect(await store.stat(garbage)).not.toBeNull();

    const real = await cairn(['gc', '--db', db, '--artifacts', artifacts, '--grace', '10ms', '--json']);
    expect(real.code, real.stderr).toBe(0);
    const report = JSON.parse(real.stdout) as { victims: { ref: { id: string } }[]; sweep: { blobs: number } };
    expect(report.victims.map((v) => v.ref.id)).toEqual([garbage.id]);
    expect(report.sweep.blobs).toBe(1);
    expect(await store.stat(garbage)).toBeNull();
    const left = [];
    for await (const info of listArtifacts(store)) left.push(info.ref.id);
    expect(left).toEqual(['key:summary-42.txt']);
  });

  it('takes retention rules and pins, and refuses a malformed rule', async () => {
    const expire = await cairn(['gc', '--db', db, '--artifacts', artifacts, '--grace', '0', '--rule', 'artifacts:mediaType=text/*,olderThan=0', '--dry-run']);
    expect(expire.stdout).toContain('expired by rule mediaType=text/* olderThan=0 (still referenced by thread cust_42');
    const pinned = await cairn(['gc', '--db', db, '--artifacts', artifacts, '--grace', '0', '--rule', 'artifacts:mediaType=text/*,olderThan=0', '--pin', 'key:summary-42.txt', '--dry-run']);
    expect(pinned.stdout).toContain('would delete 0 artifacts');
    const bad = await cairn(['gc', '--db', db, '--artifacts', artifacts, '--rule', 'threads:status=finished,olderThan=1d']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('unknown status "finished"');
    const missing = await cairn(['gc', '--db', db, '--artifacts', join(dir, 'nope')]);
    expect(missing.stderr).toContain('no artifact directory');
  });
});

describe('cairn verify --artifacts', () => {
  it('passes on a healthy store, then names the corrupted artifact and the thread and seq whose ref it breaks', async () => {
    const ok = await cairn(['verify', '--db', db, '--artifacts', artifacts]);
    expect(ok.code, ok.stdout + ok.stderr).toBe(0);
    expect(ok.stdout).toMatch(/ok {3}artifacts: 1 re-hashed/);

    const store = fsArtifacts(artifacts);
    const ref = (await store.head('summary-42.txt'))!;
    const original = await store.get(ref);
    await writeFile(store.blobPath(ref.sha256), Uint8Array.from(original, (b, i) => (i === 0 ? b ^ 1 : b)));
    const bad = await cairn(['verify', '--db', db, '--artifacts', artifacts]);
    expect(bad.code).toBe(1);
    expect(bad.stdout).toContain(`corrupted ${ref.id}`);
    expect(bad.stdout).toMatch(/dangling: thread cust_42 seq \d+ refers to key:summary-42\.txt, which has corrupted bytes/);
    const json = JSON.parse((await cairn(['verify', '--db', db, '--artifacts', artifacts, '--json'])).stdout) as { artifacts: { corrupt: unknown[]; dangling: { thread: string; seq: number }[] } };
    expect(json.artifacts.corrupt).toHaveLength(1);
    expect(json.artifacts.dangling[0]!.thread).toBe('cust_42');
    await writeFile(store.blobPath(ref.sha256), original);
  });
});

describe('an S3 location', () => {
  let server: S3Server;
  beforeAll(async () => {
    server = await startS3Server();
  });
  afterAll(() => server?.stop());

  it('gc and verify take s3://bucket/prefix/?endpoint=…&path-style=1 with credentials from the environment', async () => {
    const { S3ArtifactStore } = await import('../../src/artifacts/s3/index.js');
    const store = new S3ArtifactStore({ bucket: 'cairn-test', prefix: 'cli/', client: server.clientConfig });
    await store.put('garbage', { mediaType: 'text/plain' });
    const location = `s3://cairn-test/cli/?endpoint=${encodeURIComponent(server.endpoint)}&path-style=1`;
    const env = { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER' };
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const gc = await cairn(['gc', '--db', db, '--artifacts', location, '--grace', '0', '--json'], env);
    expect(gc.code, gc.stderr).toBe(0);
    expect((JSON.parse(gc.stdout) as { victims: unknown[] }).victims).toHaveLength(1);
    const verify = await cairn(['verify', '--db', db, '--artifacts', location, '--json'], env);
    // The thread's refs live in the fs folder, not in this bucket: they dangle here.
    expect((JSON.parse(verify.stdout) as { artifacts: { dangling: { why: string }[] } }).artifacts.dangling.map((d) => d.why)).toEqual(['missing']);
    await store.close();
  });

  it('gc --dry-run on a bucket writes nothing to it: the object list is the same before and after', async () => {
    const { S3Client, ListObjectsV2Command } = await import('@aws-sdk/client-s3');
    const { S3ArtifactStore } = await import('../../src/artifacts/s3/index.js');
    const store = new S3ArtifactStore({ bucket: 'cairn-test', prefix: 'cli-dry/', client: server.clientConfig });
    await store.put('garbage', { mediaType: 'text/plain' });
    const listing = async () => {
      const client = new S3Client(server.clientConfig);
      try {
        const out = await client.send(new ListObjectsV2Command({ Bucket: 'cairn-test', Prefix: 'cli-dry/' }));
        return (out.Contents ?? []).map((c) => [c.Key, c.Size, c.ETag, c.LastModified?.getTime()]);
      } finally {
        client.destroy();
      }
    };
    const location = `s3://cairn-test/cli-dry/?endpoint=${encodeURIComponent(server.endpoint)}&path-style=1`;
    const env = { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER' };
    // Past LastModified's 1 s resolution, so a rewrite of any object would show.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const before = await listing();
    const dry = await cairn(['gc', '--db', db, '--artifacts', location, '--grace', '0', '--dry-run', '--json'], env);
    expect(dry.code, dry.stderr).toBe(0);
    expect((JSON.parse(dry.stdout) as { dryRun: boolean; victims: unknown[] })).toMatchObject({ dryRun: true, victims: [expect.anything()] });
    expect(await listing()).toEqual(before);
    await store.close();
  });
});

describe('progress bar', () => {
  it('draws on a terminal and stays silent otherwise', () => {
    const written: string[] = [];
    // A terminal as cli-progress sees one: isTTY, a width, and writes.
    const terminal = Object.assign(new PassThrough(), { isTTY: true, columns: 120 });
    terminal.on('data', (chunk: Buffer) => written.push(chunk.toString()));
    const write = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      const off = progress(false);
      off.update('collecting', 1, 2);
      off.done();
      expect(write).not.toHaveBeenCalled();
    } finally {
      write.mockRestore();
    }
    const on = progress(true, terminal);
    on.update('collecting', 5, 10);
    on.done();
    expect(written.join('')).toMatch(/collecting \S{15}\S{15}  50% 5\/10/);
  });
});
