/**
 * @module inspect/effects
 * A thread's ledger as the inspection tools show it: every recorded output and
 * effect (intent, and outcome once it landed), oldest first. A pure function over
 * the {@link Checkpointer} and {@link Ledger} contracts, used by `cairn effects`.
 *
 * @example
 * ```ts
 * for (const e of await threadEffects(engine, 'cust_42')) console.log(e.kind, e.status, e.seq, e.node, e.name, e.key);
 * ```
 */
import type { Engine } from '../contracts/engine.js';
import type { LedgerEntry } from '../contracts/ledger.js';
import { ThreadNotFoundError } from '../errors.js';

/**
 * The ledger entries of a thread, every namespace's, oldest first.
 * ThreadNotFoundError for a missing thread (a thread with no entries yet reads as `[]`).
 *
 * @example
 * ```ts
 * const pending = (await threadEffects(engine, 'cust_42')).filter((e) => e.kind === 'effect' && e.status === 'intent');
 * ```
 */
export async function threadEffects(engine: Pick<Engine, 'checkpointer' | 'ledger'>, threadId: string): Promise<LedgerEntry[]> {
  if (!(await engine.checkpointer.getThread(threadId))) throw new ThreadNotFoundError(threadId, { engine: engine.checkpointer.engine });
  return engine.ledger.list(threadId);
}
