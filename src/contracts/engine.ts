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

/** What an engine did to make rows deleted under {@link Engine.purging} unreadable in its files, and what it could not. */
export interface PurgeReport {
  /** What was done, in words (`secure_delete on`, `WAL checkpointed and truncated`, `VACUUM cairn_positions`…). */
  done: string[];
  /** Where deleted bytes may still be, in words (dead tuples until reused, a WAL another reader holds, replicas…). */
  remains: string[];
}

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
  /**
   * Runs `work` (deletes) so that what it deletes does not stay readable in the
   * database's files: SQLite overwrites deleted content (`secure_delete`) and then
   * truncates its WAL; PostgreSQL vacuums cairn's tables after it. Erasure uses it;
   * an engine without it deletes as usual and says nothing about its files.
   */
  purging?<T>(work: () => Promise<T>, options?: { vacuum?: boolean | 'full' }): Promise<{ result: T; purge: PurgeReport }>;
  close(): Promise<void>;
}
