/**
 * @module artifacts/memory
 * The in-memory artifact store: the {@link ArtifactStore} contract (content
 * addressing, verification, tenancy, freshness) over process memory, for tests and
 * development. Nothing survives the process. Published as part of `cairn/memory`.
 *
 * @example
 * ```ts
 * import { memoryArtifacts } from 'cairn/memory';
 * const artifacts = memoryArtifacts();
 * const ref = await artifacts.put('hello', { mediaType: 'text/plain' });
 * ```
 */
export { MemoryArtifactStore, memoryArtifacts } from './memory-artifact-store.js';
