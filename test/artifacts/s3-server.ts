/**
 * Starts the local S3-compatible server (s3rver) in a child process for a test
 * file, and builds stores and raw clients against it. A fresh prefix per store
 * keeps tests apart inside the one bucket.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { S3Client, PutObjectCommand } from '@aws-sdk/client-s3';
import { S3ArtifactStore } from '../../src/artifacts/s3/index.js';

export const BUCKET = 'cairn-test';
const FIXTURE = fileURLToPath(new URL('./fixtures/s3-server.mjs', import.meta.url));

export interface S3Server {
  endpoint: string;
  /** Where the server keeps the objects (to scan their bytes). */
  directory: string;
  clientConfig: Record<string, unknown>;
  stop(): Promise<void>;
}

export async function startS3Server(): Promise<S3Server> {
  const child: ChildProcess = spawn(process.execPath, ['--openssl-legacy-provider', '--no-warnings', FIXTURE], { stdio: ['pipe', 'pipe', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (c: Buffer) => (err += c.toString()));
  const { port, dir } = await new Promise<{ port: number; dir: string }>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const line = out.split('\n')[0];
      if (out.includes('\n')) resolve(JSON.parse(line!) as { port: number; dir: string });
    });
    child.on('exit', (code) => reject(new Error(`s3rver exited ${code}: ${err}`)));
  });
  const endpoint = `http://127.0.0.1:${port}`;
  const clientConfig = { endpoint, region: 'us-east-1', forcePathStyle: true, credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' } };
  return {
    endpoint,
    directory: dir,
    clientConfig,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
      }),
  };
}

let counter = 0;

/** A store under a prefix no other store of this process uses. */
export function freshS3Store(server: S3Server, options: { partSize?: number } = {}): S3ArtifactStore {
  return new S3ArtifactStore({ bucket: BUCKET, prefix: `t${process.pid}-${Date.now().toString(36)}-${counter++}/`, client: server.clientConfig, ...options });
}

/** Overwrites an object behind the store's back (to prove corruption is detected). */
export async function overwriteObject(server: S3Server, key: string, bytes: Uint8Array): Promise<void> {
  const client = new S3Client(server.clientConfig);
  try {
    await client.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: bytes }));
  } finally {
    client.destroy();
  }
}
