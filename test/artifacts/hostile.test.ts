/**
 * Hostile input at every backend: the corpus of hostile keys (and hostile tenants
 * and ids) through every method, plus thousands of keys generated from traversal
 * fragments, some valid and some not. Every invalid one is rejected with
 * InvalidKeyError before storage is touched; every valid one lands inside the
 * store's root (fs) or prefix (S3); nothing outside changes.
 */
import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ArtifactRef, ArtifactStore } from '../../src/contracts/artifact-store.js';
import { FsArtifactStore } from '../../src/artifacts/fs/index.js';
import { memoryArtifacts } from '../../src/artifacts/memory/index.js';
import { hostileArtifactKeys } from '../../src/testing/artifact-store.suite.js';
import { BUCKET, freshS3Store, startS3Server, type S3Server } from './s3-server.js';

/** Deterministic keys built from path-ish fragments: a mix of valid and hostile. */
function generatedKeys(count: number): string[] {
  const fragments = ['..', '.', '/', '//', '\\', '%2e', '%2f', '\u0000', ' ', 'a', 'B', '0', ':', '@', '~', '$', 'é', '\u202e', 'con', '-', '_', '+', '='];
  let state = 12345;
  const next = () => ((state = (Math.imul(state, 1103515245) + 12345) & 0x7fffffff), state);
  const keys = new Set<string>();
  while (keys.size < count) {
    let key = '';
    const parts = 1 + (next() % 6);
    for (let i = 0; i < parts; i++) key += fragments[next() % fragments.length];
    keys.add(key);
  }
  return [...keys];
}

/** The key rule, restated independently of the implementation. */
function isValidKey(key: string): boolean {
  return key.length >= 1 && key.length <= 512 && /^[A-Za-z0-9._\-:@=+/]+$/.test(key) && key.split('/').every((s) => s !== '' && s !== '.' && s !== '..');
}

async function tree(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true }).catch(() => [])) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) out.push(`${path}/`, ...(await tree(path)));
    else out.push(`${path} ${(await stat(path)).size}`);
  }
  return out.sort();
}

interface Outcome {
  operations: number;
  rejected: number;
  accepted: number;
  failures: string[];
}

/** Every method with every hostile key: each must throw InvalidKeyError. */
async function attack(store: ArtifactStore, kept: ArtifactRef): Promise<Outcome> {
  const outcome: Outcome = { operations: 0, rejected: 0, accepted: 0, failures: [] };
  const expectRejected = async (what: string, op: () => unknown) => {
    outcome.operations++;
    try {
      await op();
      outcome.failures.push(`${what} was accepted`);
    } catch (error) {
      if ((error as { code?: string }).code === 'ERR_INVALID_KEY') outcome.rejected++;
      else outcome.failures.push(`${what} threw ${(error as Error).message}`);
    }
  };
  for (const { key, why } of hostileArtifactKeys()) {
    const forged = { ...kept, id: typeof key === 'string' ? `key:${key}` : key } as unknown as ArtifactRef;
    // A tenant name is hashed before it names anything, so any printable string is a valid tenant:
    // ids forged with an invalid one are rejected, valid ones just find nothing.
    const tenantValid = typeof key === 'string' && key.length >= 1 && key.length <= 256 && !/[\u0000-\u001f\u007f]/.test(key) && !/[\uD800-\uDFFF]/.test(key.replace(/[\uD800-\uDBFF][\uDC00-\uDFFF]/g, ''));
    const tenantForged = { ...kept, id: typeof key === 'string' ? `tenant:${tenantValid ? encodeURIComponent(key) : key}/key:a` : key } as unknown as ArtifactRef;
    const label = `${why} ${typeof key === 'string' ? JSON.stringify(key).slice(0, 40) : Object.prototype.toString.call(key)}`;
    await expectRejected(`putNamed ${label}`, () => store.putNamed(key as string, 'x', { mediaType: 'text/plain' }));
    if (key !== undefined) await expectRejected(`put key ${label}`, () => store.put('x', { mediaType: 'text/plain', key: key as string }));
    await expectRejected(`head ${label}`, () => store.head(key as string));
    await expectRejected(`get ${label}`, () => store.get(forged));
    await expectRejected(`stream ${label}`, () => store.stream(forged));
    await expectRejected(`stat ${label}`, () => store.stat(forged));
    await expectRejected(`delete ${label}`, () => store.delete(forged));
    if (!tenantValid) {
      await expectRejected(`forTenant ${label}`, () => store.forTenant(key as string));
      await expectRejected(`get tenant id ${label}`, () => store.get(tenantForged));
      await expectRejected(`delete tenant id ${label}`, () => store.delete(tenantForged));
    } else {
      outcome.operations += 2;
      if (store.forTenant(key as string).tenant !== key || (await store.stat(tenantForged)) !== null) outcome.failures.push(`tenant ${label} found something`);
      outcome.accepted += 2;
    }
  }
  return outcome;
}

/** Generated keys: invalid ones rejected, valid ones stored and read back. */
async function fuzz(store: ArtifactStore, count: number): Promise<Outcome> {
  const outcome: Outcome = { operations: 0, rejected: 0, accepted: 0, failures: [] };
  for (const key of generatedKeys(count)) {
    outcome.operations++;
    try {
      const ref = await store.putNamed(key, key, { mediaType: 'text/plain' });
      if (!isValidKey(key)) outcome.failures.push(`${JSON.stringify(key)} was accepted`);
      else if (new TextDecoder().decode(await store.get(ref)) !== key) outcome.failures.push(`${JSON.stringify(key)} read back other bytes`);
      outcome.accepted++;
    } catch (error) {
      if ((error as { code?: string }).code !== 'ERR_INVALID_KEY') outcome.failures.push(`${JSON.stringify(key)} threw ${(error as Error).message}`);
      else if (isValidKey(key)) outcome.failures.push(`${JSON.stringify(key)} is valid but was rejected`);
      else outcome.rejected++;
    }
  }
  return outcome;
}

const totals: Record<string, Outcome> = {};
afterAll(() => {
  for (const [name, o] of Object.entries(totals)) console.log(`[hostile ${name}] ${o.operations} operations: ${o.rejected} rejected with InvalidKeyError, ${o.accepted} valid keys or tenants handled inside, ${o.failures.length} failures`);
});

describe('hostile keys: memory', () => {
  it('rejects the corpus in every method and sorts generated keys exactly', async () => {
    const store = memoryArtifacts();
    const kept = await store.putNamed('kept', 'kept', { mediaType: 'text/plain' });
    const a = await attack(store, kept);
    const f = await fuzz(store, 3000);
    totals.memory = { operations: a.operations + f.operations, rejected: a.rejected + f.rejected, accepted: a.accepted + f.accepted, failures: [...a.failures, ...f.failures] };
    expect([...a.failures, ...f.failures]).toEqual([]);
  });
});

describe('hostile keys: fs', () => {
  it('touches nothing outside the root, and puts valid generated keys only under it', { timeout: 60_000 }, async () => {
    const parent = await mkdtemp(join(tmpdir(), 'cairn-hostile-'));
    try {
      // Bait next to the root, where a traversal would land.
      await mkdir(join(parent, 'outside'));
      await writeFile(join(parent, 'outside', 'secret'), 'secret');
      const store = new FsArtifactStore(join(parent, 'root'), { fsync: false });
      const kept = await store.putNamed('kept', 'kept', { mediaType: 'text/plain' });
      const before = await tree(parent);
      const a = await attack(store, kept);
      expect(await tree(parent)).toEqual(before);
      const f = await fuzz(store, 3000);
      const after = (await tree(parent)).filter((p) => !before.includes(p));
      // Everything new is inside the root.
      expect(after.filter((p) => relative(join(parent, 'root'), p).startsWith('..'))).toEqual([]);
      expect((await tree(join(parent, 'outside')))).toEqual([`${join(parent, 'outside', 'secret')} 6`]);
      totals.fs = { operations: a.operations + f.operations, rejected: a.rejected + f.rejected, accepted: a.accepted + f.accepted, failures: [...a.failures, ...f.failures] };
      expect([...a.failures, ...f.failures]).toEqual([]);
    } finally {
      await rm(parent, { recursive: true, force: true });
    }
  });
});

describe('hostile keys: s3', () => {
  let server: S3Server;
  beforeAll(async () => {
    server = await startS3Server();
  });
  afterAll(() => server?.stop());

  async function bucketKeys(): Promise<string[]> {
    const client = new S3Client(server.clientConfig);
    try {
      const keys: string[] = [];
      let after: string | undefined;
      for (;;) {
        const out = await client.send(new ListObjectsV2Command({ Bucket: BUCKET, ...(after ? { StartAfter: after } : {}) }));
        keys.push(...(out.Contents ?? []).map((c) => c.Key!));
        if (!out.IsTruncated || !out.Contents?.length) return keys.sort();
        after = out.Contents[out.Contents.length - 1]!.Key;
      }
    } finally {
      client.destroy();
    }
  }

  it('touches no object outside the prefix', { timeout: 90_000 }, async () => {
    const store = freshS3Store(server);
    const bait = freshS3Store(server);
    await bait.put('bait', { mediaType: 'text/plain' });
    const kept = await store.putNamed('kept', 'kept', { mediaType: 'text/plain' });
    const before = await bucketKeys();
    const a = await attack(store, kept);
    expect(await bucketKeys()).toEqual(before);
    const f = await fuzz(store, 400);
    const added = (await bucketKeys()).filter((k) => !before.includes(k));
    expect(added.filter((k) => !k.startsWith(store.prefix))).toEqual([]);
    expect((await bucketKeys()).filter((k) => k.startsWith(bait.prefix))).toEqual(before.filter((k) => k.startsWith(bait.prefix)));
    totals.s3 = { operations: a.operations + f.operations, rejected: a.rejected + f.rejected, accepted: a.accepted + f.accepted, failures: [...a.failures, ...f.failures] };
    expect([...a.failures, ...f.failures]).toEqual([]);
    await store.close();
    await bait.close();
  });
});
