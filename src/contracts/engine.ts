/**
 * @module contracts/engine
 * An engine bundles the three storage contracts that live in one database
 * (thread log, effect ledger, store), so one file or one connection pool serves
 * all three. `sqlite(path)`, `memory()` and `postgres(url)` return one.
 */
import type { Checkpointer } from './checkpointer.js';
import type { Ledger } from './ledger.js';
import type { Store } from './store.js';
import type { EngineEncryption } from '../crypto/scopes.js';

/**
 * One database's storage, as a run uses it: the checkpointer (threads and their
 * positions), the ledger (recorded outputs and effects) and the store, opened lazily
 * and closed together. `name` is the engine's (`sqlite`, `postgres`, `memory`); each
 * part names it in its `engine`.
 */
export interface Engine extends AsyncDisposable {
  readonly name: string;
  readonly checkpointer: Checkpointer;
  readonly ledger: Ledger;
  readonly store: Store;
  /** How the engine encrypts at rest, when it was wrapped by `encrypted(...)` (`cairn/crypto`); absent: rows are stored in the clear. */
  readonly encryption?: EngineEncryption;
  close(): Promise<void>;
}
