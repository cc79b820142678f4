/**
 * @module cairn/memory
 * Everything in process memory, for tests and development: the engine (thread
 * log, ledger and store) and an artifact store. Nothing survives the process.
 *
 * This file is the `cairn/memory` entry only: the engine lives in
 * `memory-engine.ts` and imports no artifact backend; the artifact store lives
 * beside the other backends (`artifacts/memory/`) and is re-exported here.
 *
 * @example
 * ```ts
 * import { memory, memoryArtifacts } from 'cairn/memory';
 * const app = graph(State).node(...).compile({ engine: memory(), artifacts: memoryArtifacts() });
 * ```
 */
export { memory } from './memory-engine.js';
export { MemoryCheckpointer } from './memory-checkpointer.js';
export { MemoryLedger } from './memory-ledger.js';
export { MemoryStore } from './memory-store.js';
export { MemoryArtifactStore, memoryArtifacts } from '../../artifacts/memory/index.js';
