import { afterAll, beforeAll } from 'vitest';
import type { S3ArtifactStore } from '../../src/artifacts/s3/index.js';
import { artifactStoreSuite } from '../../src/testing/artifact-store.suite.js';
import { freshS3Store, overwriteObject, startS3Server, type S3Server } from '../artifacts/s3-server.js';

let server: S3Server;
beforeAll(async () => {
  server = await startS3Server();
});
afterAll(() => server?.stop());

artifactStoreSuite<S3ArtifactStore>({
  name: 's3',
  // A fresh prefix per test in one bucket of a local s3rver started for this file.
  create: () => freshS3Store(server),
  // Rewrites the blob object in place, as a faulty replica or a stray writer would.
  corrupt: (store, ref, bytes) => overwriteObject(server, store.blobKey(ref.sha256), bytes),
});
