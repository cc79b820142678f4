/**
 * What only the S3 backend does: presigned expiring URLs (with tenant rules),
 * multipart uploads across part boundaries, the object layout under the prefix,
 * a sweep of temp objects a crashed upload left, and dry runs of a collection that
 * write nothing to the bucket (not even a clock probe).
 */
import { ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { END, START, defineState, field, graph } from '../../src/index.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { collectArtifacts } from '../../src/inspect/gc.js';
import { applyRetention } from '../../src/inspect/retention.js';
import { tmpFile } from '../runtime/engines.js';
import { BUCKET, freshS3Store, startS3Server, type S3Server } from './s3-server.js';

let server: S3Server;
beforeAll(async () => {
  server = await startS3Server();
});
afterAll(() => server?.stop());

/** Every object under `prefix` as the server lists it: name, size, ETag and LastModified. */
async function objectsUnder(prefix: string): Promise<{ key: string; size: number | undefined; etag: string | undefined; lastModified: number | undefined }[]> {
  const client = new S3Client(server.clientConfig);
  try {
    const out = await client.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: prefix }));
    expect(out.IsTruncated).toBeFalsy();
    return (out.Contents ?? []).map((c) => ({ key: c.Key!, size: c.Size, etag: c.ETag, lastModified: c.LastModified?.getTime() })).sort((a, b) => a.key.localeCompare(b.key));
  } finally {
    client.destroy();
  }
}

async function keysUnder(prefix: string): Promise<string[]> {
  const client = new S3Client(server.clientConfig);
  try {
    const out = await client.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: prefix }));
    return (out.Contents ?? []).map((c) => c.Key!.slice(prefix.length)).sort();
  } finally {
    client.destroy();
  }
}

describe('S3ArtifactStore', () => {
  it('presignGet hands out a URL that serves the bytes with the media type, and stops working when it expires', async () => {
    const store = freshS3Store(server);
    const ref = await store.put('{"hello":"world"}', { mediaType: 'application/json' });
    const url = await store.presignGet(ref, { expiresInMs: 60_000 });
    expect(url).toContain('X-Amz-Expires=60');
    const response = await fetch(url);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('application/json');
    expect(await response.text()).toBe('{"hello":"world"}');

    const short = await store.presignGet(ref, { expiresInMs: 1000 });
    await new Promise((resolve) => setTimeout(resolve, 2100));
    expect((await fetch(short)).status).toBe(403);
    await expect(store.presignGet(ref, { expiresInMs: 0 })).rejects.toMatchObject({ code: 'ERR_INVALID_OPTION' });
    await expect(store.presignGet(ref, { expiresInMs: 8 * 24 * 3600 * 1000 })).rejects.toMatchObject({ code: 'ERR_INVALID_OPTION' });
    // The deprecated seconds still work; S3 counts whole seconds, so ms round up.
    expect(await store.presignGet(ref, { expiresIn: 60 })).toContain('X-Amz-Expires=60');
    expect(await store.presignGet(ref, { expiresInMs: 1500 })).toContain('X-Amz-Expires=2');
    expect(await store.presignGet(ref)).toContain('X-Amz-Expires=900');
    await store.close();
  });

  it("presignGet follows tenant rules: a tenant presigns its own refs, never another tenant's; absent refs are not signed", async () => {
    const store = freshS3Store(server);
    const acme = store.forTenant('acme');
    const ref = await acme.putNamed('invoice', 'acme invoice', { mediaType: 'text/plain' });
    expect(await (await fetch(await acme.presignGet(ref))).text()).toBe('acme invoice');
    await expect(store.forTenant('beta').presignGet(ref)).rejects.toMatchObject({ code: 'ERR_ACCESS_DENIED' });
    await expect(acme.presignGet({ ...ref, id: 'tenant:acme/key:absent' })).rejects.toMatchObject({ code: 'ERR_ARTIFACT_NOT_FOUND' });
    await expect(acme.presignGet({ ...ref, size_bytes: 1 })).rejects.toMatchObject({ code: 'ERR_ARTIFACT_INTEGRITY' });
    await store.close();
  });

  it('uploads across multipart boundaries (exactly one part, one byte over, several parts) and reads back the same bytes', { timeout: 60_000 }, async () => {
    const store = freshS3Store(server, { partSize: 5 * 1024 * 1024 });
    for (const size of [5 * 1024 * 1024, 5 * 1024 * 1024 + 1, 11 * 1024 * 1024 + 7]) {
      const bytes = new Uint8Array(size);
      for (let i = 0; i < size; i++) bytes[i] = (i * 7 + (i >>> 10)) & 0xff;
      async function* chunks() {
        for (let offset = 0; offset < size; offset += 700_000) yield bytes.slice(offset, offset + 700_000);
      }
      const ref = await store.put(chunks(), { mediaType: 'application/octet-stream' });
      expect(ref.sha256).toBe(createHash('sha256').update(bytes).digest('hex'));
      expect(Buffer.compare(Buffer.from(await store.get(ref)), Buffer.from(bytes))).toBe(0);
    }
    await store.close();
  });

  it('keeps every object under its prefix: blobs, refs, freshness markers; no temp object after a write', async () => {
    const store = freshS3Store(server);
    const content = await store.put('content', { mediaType: 'text/plain' });
    await store.putNamed('docs/Report.pdf', 'named', { mediaType: 'application/pdf' });
    await store.forTenant('acme').putNamed('k', 'tenant', { mediaType: 'text/plain' });
    const keys = await keysUnder(store.prefix);
    expect(keys.filter((k) => k.startsWith('tmp/'))).toEqual([]);
    expect(keys).toContain(`blobs/sha256/${content.sha256}`);
    expect(keys).toContain(`refs/_/content/${content.sha256}.json`);
    expect(keys.filter((k) => k.startsWith('refs/_/keys/'))).toHaveLength(1);
    expect(keys.filter((k) => /^refs\/t-[0-9a-f]{64}\/keys\/[0-9a-f]{64}\.json$/.test(k))).toHaveLength(1);
    await store.close();
  });

  it("a dry run of a collection (and of retention) writes nothing to the bucket: the object list is the same before and after, and it reports what a real run then deletes", async () => {
    const store = freshS3Store(server);
    const engine = sqlite(tmpFile());
    const State = defineState({ fields: { doc: field.model(z.unknown().optional()) } });
    const app = graph(State)
      .node('write', async (_s, ctx) => ({ doc: await ctx.artifacts.put('kept: a thread refers to it', { mediaType: 'text/plain' }) }))
      .edge(START, 'write')
      .edge('write', END)
      .compile({ engine, artifacts: store });
    await app.run({ thread: 't' });
    await store.put('garbage: nothing refers to it', { mediaType: 'text/plain' });
    const client = new S3Client(server.clientConfig);
    await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: `${store.prefix}tmp/left-by-a-crash`, Body: 'partial' }));
    client.destroy();
    // Past LastModified's 1 s resolution, so a rewrite of any object would show.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    const before = await objectsUnder(store.prefix);
    expect(before.map((o) => o.key)).not.toContain(`${store.prefix}fresh/clock`);

    const dry = await collectArtifacts({ checkpointer: engine.checkpointer, artifacts: store, graceMs: 0, dryRun: true });
    expect(dry.dryRun).toBe(true);
    expect(dry.victims.map((v) => v.reason)).toEqual(['unreferenced']);
    expect(dry.kept.referenced).toBe(1);
    expect(dry.sweep.temps).toBe(1);
    // The store's time, read without a write: the server's, within the second it answered in.
    expect(Math.abs(dry.startedAt - Date.now())).toBeLessThan(5_000);
    expect(dry.startedAt % 1000).toBe(0);
    const retention = await applyRetention({ checkpointer: engine.checkpointer, artifacts: store, policy: { artifacts: [{ olderThan: '0ms' }] }, dryRun: true });
    expect(retention.dryRun).toBe(true);
    expect(await objectsUnder(store.prefix)).toEqual(before);

    const real = await collectArtifacts({ checkpointer: engine.checkpointer, artifacts: store, graceMs: 0 });
    expect(real.victims.map((v) => v.ref.id)).toEqual(dry.victims.map((v) => v.ref.id));
    expect(real.sweep.temps).toBe(1);
    await engine.close();
    await store.close();
  });

  it('a sweep removes temp objects older than the cutoff and keeps recent ones', async () => {
    const store = freshS3Store(server);
    const client = new S3Client(server.clientConfig);
    await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: `${store.prefix}tmp/left-by-a-crash`, Body: 'partial' }));
    client.destroy();
    expect(await store.sweep({ staleBefore: (await store.now()) - 60_000 })).toMatchObject({ temps: 0 });
    expect(await store.sweep({ staleBefore: (await store.now()) + 60_000 })).toMatchObject({ temps: 1 });
    expect((await keysUnder(store.prefix)).filter((k) => k.startsWith('tmp/'))).toEqual([]);
    await store.close();
  });
});
