/**
 * @module engines/memory/memory-engine
 * The in-memory engine: thread log, ledger and store in process memory, sharing
 * one lifecycle. For tests and development; nothing survives the process.
 */
import type { Engine } from '../../contracts/engine.js';
import { Lifecycle } from '../../internal/lifecycle.js';
import { MemoryCheckpointer } from './memory-checkpointer.js';
import { MemoryLedger } from './memory-ledger.js';
import { MemoryStore } from './memory-store.js';

/**
 * Creates an in-memory engine.
 *
 * @example `const app = graph(State).node(...).compile({ engine: memory() });`
 */
export function memory(): Engine {
  const lifecycle = new Lifecycle('memory', {
    close: () => {
      checkpointer.clear();
      ledger.clear();
      store.clear();
    },
  });
  const ledger = new MemoryLedger(lifecycle, { exists: (threadId) => checkpointer.hasThread(threadId), holds: (lease) => checkpointer.holds(lease) });
  const store = new MemoryStore(lifecycle);
  const checkpointer: MemoryCheckpointer = new MemoryCheckpointer(lifecycle, {
    dropLedger: (threadId) => ledger.dropThread(threadId),
    dropKeys: (ns, suffix) => store.dropKeys(ns, suffix),
    dropLedgerSteps: (threadId, ns, drop) => ledger.dropSteps(threadId, ns, drop),
    commitEffects: (effects) => ledger.putCommitted(effects),
  });
  const close = () => lifecycle.close();
  return { name: 'memory', checkpointer, ledger, store, close, [Symbol.asyncDispose]: close };
}
