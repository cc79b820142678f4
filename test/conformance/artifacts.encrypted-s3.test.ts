/** The artifact conformance suite against encryptedArtifacts over the S3 backend (a local s3rver). */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import type { BaseArtifactStore } from '../../src/artifacts/base-artifact-store.js';
import type { S3ArtifactStore } from '../../src/artifacts/s3/index.js';
import { encryptedArtifacts } from '../../src/crypto/artifacts.js';
import { keyFile } from '../../src/crypto/key-provider.js';
import { Keyring } from '../../src/crypto/keyring.js';
import { memory } from '../../src/engines/memory/index.js';
import { artifactStoreSuite } from '../../src/testing/artifact-store.suite.js';
import { freshS3Store, overwriteObject, startS3Server, type S3Server } from '../artifacts/s3-server.js';

const keysDir = await mkdtemp(join(tmpdir(), 'cairn-enc-keys-'));
const keyring = new Keyring(memory().store, keyFile(join(keysDir, 'keys.json')));
let server: S3Server;
beforeAll(async () => {
  server = await startS3Server();
});
afterAll(async () => {
  await server?.stop();
  await rm(keysDir, { recursive: true, force: true });
});

const plain = new WeakMap<BaseArtifactStore, S3ArtifactStore>();

artifactStoreSuite<BaseArtifactStore>({
  name: 'encrypted s3',
  sealsBlobs: true,
  create: () => {
    const inner = freshS3Store(server);
    const store = encryptedArtifacts(inner, { keyring });
    plain.set(store, inner);
    return store;
  },
  // Rewrites the sealed blob object in place, as a faulty replica or a stray writer would.
  corrupt: async (store, ref, bytes) => overwriteObject(server, plain.get(store)!.blobKey((await store.storedBlob(ref))!.sha256), bytes),
});
