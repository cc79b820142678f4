/**
 * The artifact conformance suite against encryptedArtifacts over the fs backend (S3:
 * artifacts.encrypted-s3.test.ts): a sealing store keeps every promise of the
 * contract, and any damage to the sealed bytes is an integrity error.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';
import { FsArtifactStore } from '../../src/artifacts/fs/index.js';
import type { BaseArtifactStore } from '../../src/artifacts/base-artifact-store.js';
import { encryptedArtifacts } from '../../src/crypto/artifacts.js';
import { keyFile } from '../../src/crypto/key-provider.js';
import { Keyring } from '../../src/crypto/keyring.js';
import { memory } from '../../src/engines/memory/index.js';
import { artifactStoreSuite } from '../../src/testing/artifact-store.suite.js';

// One keyring for the file: the data keys are not what these tests are about.
const keysDir = await mkdtemp(join(tmpdir(), 'cairn-enc-keys-'));
const keyring = new Keyring(memory().store, keyFile(join(keysDir, 'keys.json')));
afterAll(() => rm(keysDir, { recursive: true, force: true }));

const roots = new WeakMap<BaseArtifactStore, string>();

artifactStoreSuite<BaseArtifactStore>({
  name: 'encrypted fs',
  sealsBlobs: true,
  create: async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cairn-enc-artifacts-'));
    const store = encryptedArtifacts(new FsArtifactStore(join(dir, 'root')), { keyring });
    roots.set(store, dir);
    return store;
  },
  destroy: (store) => rm(roots.get(store)!, { recursive: true, force: true }),
  // Rewrites the sealed blob in place, as a disk fault or a stray editor would.
  corrupt: async (store, ref, bytes) => {
    const blob = (await store.storedBlob(ref))!;
    await writeFile(join(roots.get(store)!, 'root', 'blobs', 'sha256', blob.sha256.slice(0, 2), blob.sha256), bytes);
  },
});
