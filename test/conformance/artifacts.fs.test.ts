import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { FsArtifactStore } from '../../src/artifacts/fs/index.js';
import { artifactStoreSuite } from '../../src/testing/artifact-store.suite.js';

artifactStoreSuite<FsArtifactStore>({
  name: 'fs',
  // The root is a not-yet-existing child of the temp dir: the store must create it.
  create: async () => new FsArtifactStore(join(await mkdtemp(join(tmpdir(), 'cairn-artifacts-')), 'root')),
  destroy: (store) => rm(dirname(store.root), { recursive: true, force: true }),
  // Rewrites the blob in place at its documented path, as a disk fault or a stray editor would.
  corrupt: (store, ref, bytes) => writeFile(join(store.root, 'blobs', 'sha256', ref.sha256.slice(0, 2), ref.sha256), bytes),
});
