/**
 * Streaming without holding the payload: a 1 GiB artifact through the fs backend
 * and 256 MiB through S3 (a local s3rver in its own process), each in a child
 * process whose V8 heap is capped far below the payload. The child puts a
 * generated stream, streams it back (verify-before: two reads) and reports its
 * peak memory; the figures are printed for the record.
 */
import { execFile } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startS3Server, type S3Server } from './s3-server.js';
import { ensureBuilt } from './build.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const dist = join(repoRoot, 'dist');
const script = fileURLToPath(new URL('./fixtures/big-stream.mjs', import.meta.url));

interface Outcome {
  ref: { sha256: string; size_bytes: number };
  expected: string;
  readSha256: string;
  readBytes: number;
  putSeconds: number;
  streamSeconds: number;
  peakMiB: { rss: number; heapUsed: number; external: number; arrayBuffers: number };
}

function runChild(heapMiB: number, args: string[]): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    execFile(process.execPath, [`--max-old-space-size=${heapMiB}`, '--no-warnings', script, dist, ...args], { timeout: 120_000, maxBuffer: 1 << 20 }, (error, stdout, stderr) => {
      if (error) return reject(new Error(`child failed (${error.message}): ${stderr}`));
      resolve(JSON.parse(stdout.trim().split('\n').pop()!) as Outcome);
    });
  });
}

beforeAll(() => ensureBuilt(), 120_000);

describe('bounded memory', () => {
  it('streams 1 GiB into the fs store and back with a 64 MiB heap', { timeout: 150_000 }, async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cairn-1gib-'));
    try {
      const size = 1024 * 1024 * 1024;
      const out = await runChild(64, ['fs', join(dir, 'artifacts'), String(size)]);
      console.log(`[fs 1 GiB] put ${out.putSeconds}s, stream ${out.streamSeconds}s, peak MiB ${JSON.stringify(out.peakMiB)}`);
      expect(out.ref.size_bytes).toBe(size);
      expect(out.ref.sha256).toBe(out.expected);
      expect(out.readSha256).toBe(out.expected);
      expect(out.readBytes).toBe(size);
      // The payload is 1024 MiB; the process as a whole stayed a small fraction of it.
      expect(out.peakMiB.heapUsed).toBeLessThan(64);
      expect(out.peakMiB.rss).toBeLessThan(256);
      const blob = join(dir, 'artifacts', 'blobs', 'sha256', out.expected.slice(0, 2), out.expected);
      expect(existsSync(blob) && statSync(blob).size).toBe(size);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  describe('through S3', () => {
    let server: S3Server;
    beforeAll(async () => {
      server = await startS3Server();
    });
    afterAll(() => server?.stop());

    it('streams 256 MiB into an S3 bucket and back with a 96 MiB heap', { timeout: 150_000 }, async () => {
      const size = 256 * 1024 * 1024;
      const out = await runChild(96, ['s3', server.endpoint, String(size)]);
      console.log(`[s3 256 MiB] put ${out.putSeconds}s, stream ${out.streamSeconds}s, peak MiB ${JSON.stringify(out.peakMiB)}`);
      expect(out.ref.size_bytes).toBe(size);
      expect(out.ref.sha256).toBe(out.expected);
      expect(out.readSha256).toBe(out.expected);
      expect(out.peakMiB.heapUsed).toBeLessThan(96);
      expect(out.peakMiB.rss).toBeLessThan(256);
    });
  });
});
