/**
 * @module ledger/base-ledger
 * What every effect ledger shares, written once above the engines: the lifecycle
 * guard around every storage call, and the errors of what the primitives report
 * (ThreadNotFoundError for a write naming a missing thread, LeaseLostError for a
 * fenced discard whose lease no longer holds its thread). Engines extend
 * {@link BaseLedger} and implement storage primitives only.
 *
 * @example
 * ```ts
 * class MyLedger extends BaseLedger {
 *   readonly engine = 'mine';
 *   protected async readEntry(threadId, key) { ... }
 *   protected async dropRecords(lease, keys) { ... } // one transaction: check the fence, then delete
 *   ...
 * }
 * ```
 */
import type { Ledger, LedgerEntry, NewLedgerEntry, RecordMeta } from '../contracts/ledger.js';
import type { ThreadLease } from '../contracts/threads.js';
import { InvalidOptionError, LeaseLostError, ThreadNotFoundError } from '../errors.js';
import type { Lifecycle } from '../internal/lifecycle.js';

/** The {@link Ledger} contract over storage primitives. */
export abstract class BaseLedger implements Ledger {
  abstract readonly engine: string;

  /** `lifecycle`: the engine's, shared with its checkpointer and store. */
  constructor(protected readonly lifecycle: Lifecycle) {}

  protected abstract readEntry(threadId: string, key: string): Promise<LedgerEntry | null>;
  protected abstract readTask(threadId: string, ns: string, seq: number, task: string): Promise<LedgerEntry[]>;
  protected abstract readThreadEntries(threadId: string): Promise<LedgerEntry[]>;
  /**
   * Inserts the entry unless its key exists (durably, before resolving) and returns the
   * stored one, in one transaction; null when the thread does not exist (nothing stored).
   */
  protected abstract insert(entry: NewLedgerEntry, status: 'intent' | 'done', outcome: string | null): Promise<LedgerEntry | null>;
  /** Turns the intent into `done` unless it is done already; false when the thread does not exist. */
  protected abstract complete(threadId: string, key: string, outcome: string, at: number): Promise<boolean>;
  /**
   * In one transaction: checks that `lease` holds its thread (`runId` and `epoch`), and
   * only then deletes the `record` entries with these keys. False, with nothing deleted,
   * when the lease no longer holds the thread.
   */
  protected abstract dropRecords(lease: ThreadLease, keys: string[]): Promise<boolean>;

  get(threadId: string, key: string): Promise<LedgerEntry | null> {
    return this.lifecycle.run(() => this.readEntry(threadId, key));
  }

  listForTask(threadId: string, ns: string, seq: number, task: string): Promise<LedgerEntry[]> {
    return this.lifecycle.run(() => this.readTask(threadId, ns, seq, task));
  }

  list(threadId: string): Promise<LedgerEntry[]> {
    return this.lifecycle.run(() => this.readThreadEntries(threadId));
  }

  writeIntent(entry: NewLedgerEntry): Promise<LedgerEntry> {
    return this.write(entry, 'intent', null);
  }

  writeRecord(entry: NewLedgerEntry & { outcome: string }): Promise<LedgerEntry> {
    return this.write(entry, 'done', entry.outcome);
  }

  async writeOutcome(threadId: string, key: string, outcome: string, at: number): Promise<void> {
    if (!(await this.lifecycle.run(() => this.complete(threadId, key, outcome, at)))) throw new ThreadNotFoundError(threadId, { engine: this.engine });
  }

  async discardRecords(lease: ThreadLease, keys: string[]): Promise<void> {
    if (!(await this.lifecycle.run(() => this.dropRecords(lease, keys)))) throw new LeaseLostError(lease.threadId, { engine: this.engine });
  }

  private async write(entry: NewLedgerEntry, status: 'intent' | 'done', outcome: string | null): Promise<LedgerEntry> {
    if (entry.meta !== undefined && entry.meta !== null) checkMeta(entry.meta, entry.key, this.engine);
    const stored = await this.lifecycle.run(() => this.insert(entry, status, outcome));
    if (!stored) throw new ThreadNotFoundError(entry.threadId, { engine: this.engine });
    return stored;
  }
}

const KINDS = new Set(['model', 'tool', 'other']);
const COUNTS = ['inputTokens', 'outputTokens', 'totalTokens'] as const;

/** A meta the inspector and an import can read back: a known kind, strings and finite numbers where the contract says. */
export function checkMeta(meta: RecordMeta, key: string, engine: string): void {
  const bad = (what: string) => {
    throw new InvalidOptionError(`ledger entry ${key}: meta.${what}. A RecordMeta is { kind: 'model' | 'tool' | 'other', model?, provider?, tool?, usage?, latencyMs? }.`, { place: { engine } });
  };
  if (typeof meta !== 'object' || !KINDS.has(meta.kind)) bad(`kind is ${JSON.stringify((meta as { kind?: unknown })?.kind)}`);
  for (const field of ['model', 'provider', 'tool'] as const) if (meta[field] !== undefined && typeof meta[field] !== 'string') bad(`${field} is not a string`);
  if (meta.latencyMs !== undefined && !Number.isFinite(meta.latencyMs)) bad('latencyMs is not a finite number');
  if (meta.usage !== undefined) {
    if (typeof meta.usage !== 'object' || meta.usage === null) bad('usage is not an object');
    for (const count of COUNTS) if (meta.usage[count] !== undefined && !Number.isFinite(meta.usage[count])) bad(`usage.${count} is not a finite number`);
  }
}
