import { memoryArtifacts, type MemoryArtifactStore } from '../../src/artifacts/memory/index.js';
import { artifactStoreSuite } from '../../src/testing/artifact-store.suite.js';

artifactStoreSuite<MemoryArtifactStore>({
  name: 'memory',
  create: () => memoryArtifacts(),
  corrupt: (store, ref, bytes) => store.corruptForTesting(ref.id, bytes),
});
