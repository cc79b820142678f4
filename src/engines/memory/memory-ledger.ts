/**
 * @module engines/memory/memory-ledger
 * The effect ledger in process memory.
 */
import type { CommittedEffect } from '../../contracts/checkpointer.js';
import type { LedgerEntry, NewLedgerEntry } from '../../contracts/ledger.js';
import type { ThreadLease } from '../../contracts/threads.js';
import type { Lifecycle } from '../../internal/lifecycle.js';
import { BaseLedger } from '../../ledger/base-ledger.js';

/** A copy the caller cannot change the stored entry through (meta is nested). */
function copy(entry: LedgerEntry): LedgerEntry {
  return entry.meta ? { ...entry, meta: structuredClone(entry.meta) } : { ...entry };
}

/** What the ledger asks of the engine's thread table. */
export interface MemoryLedgerThreads {
  /** True when the thread exists: an entry is never written for a missing (or deleted) thread. */
  exists(threadId: string): boolean;
  /** True when `lease` still holds its thread: discards are fenced by it. */
  holds(lease: ThreadLease): boolean;
}

/**
 * The effect ledger contract in memory. `memory()` builds one, on its checkpointer's threads.
 *
 * @example `const ledger = memory().ledger;`
 */
export class MemoryLedger extends BaseLedger {
  readonly engine = 'memory';
  private readonly entries = new Map<string, LedgerEntry>();

  /** `threads`: the engine's thread table (without one, every thread exists and every lease holds). */
  constructor(
    lifecycle: Lifecycle,
    private readonly threads: MemoryLedgerThreads = { exists: () => true, holds: () => true },
  ) {
    super(lifecycle);
  }

  private id(threadId: string, key: string): string {
    return `${threadId}\u0000${key}`;
  }

  protected async readEntry(threadId: string, key: string): Promise<LedgerEntry | null> {
    const entry = this.entries.get(this.id(threadId, key));
    return entry ? copy(entry) : null;
  }

  protected async readTask(threadId: string, ns: string, seq: number, task: string): Promise<LedgerEntry[]> {
    return (await this.readThreadEntries(threadId)).filter((e) => e.ns === ns && e.seq === seq && e.task === task).sort((a, b) => a.call - b.call);
  }

  protected async readThreadEntries(threadId: string): Promise<LedgerEntry[]> {
    return [...this.entries.values()].filter((e) => e.threadId === threadId).map(copy);
  }

  protected async insert(entry: NewLedgerEntry, status: 'intent' | 'done', outcome: string | null): Promise<LedgerEntry | null> {
    if (!this.threads.exists(entry.threadId)) return null;
    const id = this.id(entry.threadId, entry.key);
    const existing = this.entries.get(id);
    if (existing) return copy(existing);
    const { meta, ...fields } = entry;
    const stored: LedgerEntry = { ...fields, status, outcome, completedAt: status === 'done' ? entry.createdAt : null, ...(meta ? { meta } : {}) };
    this.entries.set(id, copy(stored));
    return copy(stored);
  }

  protected async complete(threadId: string, key: string, outcome: string, at: number): Promise<boolean> {
    if (!this.threads.exists(threadId)) return false;
    const entry = this.entries.get(this.id(threadId, key));
    if (entry && entry.status !== 'done') {
      entry.status = 'done';
      entry.outcome = outcome;
      entry.completedAt = at;
    }
    return true;
  }

  protected async dropRecords(lease: ThreadLease, keys: string[]): Promise<boolean> {
    if (!this.threads.holds(lease)) return false;
    for (const key of keys) {
      const id = this.id(lease.threadId, key);
      if (this.entries.get(id)?.kind === 'record') this.entries.delete(id);
    }
    return true;
  }

  /**
   * Stores the effects a step commit carries (the engine's `commitStep`, in its turn):
   * each as a done entry; an intent of the key becomes done with the effect's outcome,
   * a done entry is kept.
   */
  putCommitted(effects: readonly CommittedEffect[]): void {
    for (const effect of effects) {
      const id = this.id(effect.threadId, effect.key);
      const existing = this.entries.get(id);
      if (existing) {
        if (existing.status !== 'done') {
          existing.status = 'done';
          existing.outcome = effect.outcome;
          existing.completedAt = effect.completedAt;
        }
        continue;
      }
      const { meta, outcome, completedAt, ...fields } = effect;
      this.entries.set(id, copy({ ...fields, status: 'done', outcome, completedAt, ...(meta ? { meta } : {}) }));
    }
  }

  /** Deletes every entry of a thread (the engine's `deleteThread`); returns how many. */
  dropThread(threadId: string): number {
    let dropped = 0;
    for (const [id, entry] of this.entries) {
      if (entry.threadId === threadId) {
        this.entries.delete(id);
        dropped++;
      }
    }
    return dropped;
  }

  /** Drops the thread's entries of namespace `ns` whose step seq `drop` says goes (compaction); returns how many. */
  dropSteps(threadId: string, ns: string, drop: (seq: number) => boolean): number {
    let dropped = 0;
    for (const [id, entry] of this.entries) {
      if (entry.threadId === threadId && entry.ns === ns && drop(entry.seq)) {
        this.entries.delete(id);
        dropped++;
      }
    }
    return dropped;
  }

  /** Forgets every entry: the engine's close. */
  clear(): void {
    this.entries.clear();
  }
}
