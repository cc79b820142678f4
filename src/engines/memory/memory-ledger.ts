/**
 * @module engines/memory/memory-ledger
 * The effect ledger in process memory.
 */
import type { Ledger, LedgerEntry, NewLedgerEntry } from '../../contracts/ledger.js';
import { ThreadNotFoundError } from '../../errors.js';
import type { Lifecycle } from '../../internal/lifecycle.js';

export class MemoryLedger implements Ledger {
  readonly engine = 'memory';
  private readonly entries = new Map<string, LedgerEntry>();

  /** `threadExists`: the engine's thread table, so that an entry is never written for a missing (or deleted) thread. */
  constructor(
    private readonly lifecycle: Lifecycle,
    private readonly threadExists: (threadId: string) => boolean = () => true,
  ) {}

  /** The entry id, after checking the thread exists (as the durable engines' inserts do). */
  private writable(threadId: string, key: string): string {
    const id = this.id(threadId, key);
    if (!this.threadExists(threadId)) throw new ThreadNotFoundError(threadId, { engine: this.engine });
    return id;
  }

  private id(threadId: string, key: string): string {
    this.lifecycle.assertOpen();
    return `${threadId}\u0000${key}`;
  }

  async get(threadId: string, key: string): Promise<LedgerEntry | null> {
    const entry = this.entries.get(this.id(threadId, key));
    return entry ? { ...entry } : null;
  }

  async listForTask(threadId: string, ns: string, seq: number, task: string): Promise<LedgerEntry[]> {
    return (await this.list(threadId)).filter((e) => e.ns === ns && e.seq === seq && e.task === task).sort((a, b) => a.call - b.call);
  }

  async list(threadId: string): Promise<LedgerEntry[]> {
    this.lifecycle.assertOpen();
    return [...this.entries.values()].filter((e) => e.threadId === threadId).map((e) => ({ ...e }));
  }

  async writeIntent(entry: NewLedgerEntry): Promise<LedgerEntry> {
    const id = this.writable(entry.threadId, entry.key);
    const existing = this.entries.get(id);
    if (existing) return { ...existing };
    const stored: LedgerEntry = { ...entry, status: 'intent', outcome: null, completedAt: null };
    this.entries.set(id, stored);
    return { ...stored };
  }

  async writeOutcome(threadId: string, key: string, outcome: string, at: number): Promise<void> {
    const entry = this.entries.get(this.id(threadId, key));
    if (!entry || entry.status === 'done') return;
    entry.status = 'done';
    entry.outcome = outcome;
    entry.completedAt = at;
  }

  async writeRecord(entry: NewLedgerEntry & { outcome: string }): Promise<LedgerEntry> {
    const id = this.writable(entry.threadId, entry.key);
    const existing = this.entries.get(id);
    if (existing) return { ...existing };
    const stored: LedgerEntry = { ...entry, status: 'done', completedAt: entry.createdAt };
    this.entries.set(id, stored);
    return { ...stored };
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

  async discardRecords(threadId: string, keys: string[]): Promise<void> {
    for (const key of keys) {
      const id = this.id(threadId, key);
      if (this.entries.get(id)?.kind === 'record') this.entries.delete(id);
    }
  }
}
