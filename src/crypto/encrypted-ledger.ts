/**
 * @module crypto/encrypted-ledger
 * The ledger of an encrypted engine: the outcome of every entry (a recorded output, an
 * effect's result) is sealed for its thread's scope, bound to (thread, key), and opened
 * with its tag checked on every read. In the clear: the key, kind, name, namespace,
 * seq, node, task, call index, argument digest, status, times and `meta` (kind, model,
 * provider, token counts, latency).
 */
import type { Ledger, LedgerEntry, NewLedgerEntry } from '../contracts/ledger.js';
import type { ThreadLease } from '../contracts/threads.js';
import { rowAad, type Sealer } from './sealer.js';
import type { ThreadScopes } from './thread-scopes.js';

/** The associated data of a ledger entry's outcome: its thread and key (the encrypted checkpointer seals a commit's effects with it too). */
export const outcomeAad = (threadId: string, key: string) => rowAad('outcome', threadId, key);

/** Every member of the contract: one added to {@link Ledger} later fails the build here until it is wrapped. */
export const LEDGER_MEMBERS: Record<keyof Ledger, 'wrapped' | 'value'> = {
  engine: 'value',
  get: 'wrapped',
  listForTask: 'wrapped',
  list: 'wrapped',
  writeIntent: 'wrapped',
  writeOutcome: 'wrapped',
  writeRecord: 'wrapped',
  discardRecords: 'wrapped',
};

export class EncryptedLedger implements Ledger {
  readonly engine: string;

  constructor(
    private readonly inner: Ledger,
    private readonly sealer: Sealer,
    private readonly scopes: ThreadScopes,
  ) {
    this.engine = inner.engine;
  }

  async get(threadId: string, key: string): Promise<LedgerEntry | null> {
    const entry = await this.inner.get(threadId, key);
    return entry && this.open(entry);
  }

  async listForTask(threadId: string, ns: string, seq: number, task: string): Promise<LedgerEntry[]> {
    return Promise.all((await this.inner.listForTask(threadId, ns, seq, task)).map((e) => this.open(e)));
  }

  async list(threadId: string): Promise<LedgerEntry[]> {
    return Promise.all((await this.inner.list(threadId)).map((e) => this.open(e)));
  }

  async writeIntent(entry: NewLedgerEntry): Promise<LedgerEntry> {
    return this.open(await this.inner.writeIntent(entry));
  }

  async writeOutcome(threadId: string, key: string, outcome: string, at: number): Promise<void> {
    const sealed = typeof outcome === 'string' ? await this.sealer.seal(await this.scopes.of(threadId), outcome, outcomeAad(threadId, key)) : outcome;
    return this.inner.writeOutcome(threadId, key, sealed, at);
  }

  async writeRecord(entry: NewLedgerEntry & { outcome: string }): Promise<LedgerEntry> {
    if (typeof entry?.outcome !== 'string' || typeof entry.threadId !== 'string') return this.open(await this.inner.writeRecord(entry));
    const outcome = await this.sealer.seal(await this.scopes.of(entry.threadId), entry.outcome, outcomeAad(entry.threadId, entry.key));
    return this.open(await this.inner.writeRecord({ ...entry, outcome }));
  }

  discardRecords(lease: ThreadLease, keys: string[]): Promise<void> {
    return this.inner.discardRecords(lease, keys);
  }

  private async open(entry: LedgerEntry): Promise<LedgerEntry> {
    if (entry.outcome === null) return entry;
    const outcome = await this.sealer.open(entry.outcome, outcomeAad(entry.threadId, entry.key), `thread ${entry.threadId} (outcome of ledger entry ${entry.key})`);
    return { ...entry, outcome };
  }
}
