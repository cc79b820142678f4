/**
 * @module contracts/ledger
 * The effect ledger: intents and outcomes of side effects, and recorded
 * nondeterministic outputs (model completions, tool results, clock readings).
 *
 * Contract:
 * - Entries are keyed by (thread, key). The first write of a key wins: writing an
 *   intent or a record for a key that exists returns the stored entry unchanged.
 * - {@link Ledger.writeIntent} is durable before it resolves: the runtime runs the
 *   effect only after that.
 * - {@link Ledger.writeOutcome} turns an intent into `done` once; a second outcome
 *   for a done entry is ignored (the first observation stands).
 * - Effects are never deleted by the runtime; {@link Ledger.discardRecords} deletes
 *   only `record` entries (outputs of an attempt that failed, so a retry calls again).
 * - **Fencing**: {@link Ledger.discardRecords} is fenced like a commit: it takes the
 *   run's {@link ThreadLease} and checks, in the same transaction as the delete, that
 *   the lease's `runId` and `epoch` still hold the thread. A run that lost its lease
 *   gets {@link LeaseLostError} and deletes nothing, so it cannot discard records its
 *   successor relies on.
 * - An entry's `meta` is stored as written with it (first write wins, like the rest
 *   of the entry) and read back equal; an entry written without one reads without one.
 * - Writes name an existing thread: a write for a missing (or deleted) thread is
 *   {@link ThreadNotFoundError} and stores nothing.
 * - Lifecycle and driver failures as in the {@link Checkpointer} contract
 *   (EngineClosedError after close, EngineError with the driver's error as `cause`).
 *   {@link BaseLedger} implements these rules once; engines extend it.
 */
import type { ThreadLease } from './threads.js';

/** A recorded output (`record`: served on re-execution) or a side effect (`effect`: intent, then outcome). */
export type LedgerKind = 'effect' | 'record';

/** What a recorded output was: a model call, a tool result, or anything else (a clock, a random draw). */
export type RecordKind = 'model' | 'tool' | 'other';

/** Token counts of a model call, as its provider reported them. */
export interface TokenUsage {
  inputTokens?: number;
  outputTokens?: number;
  totalTokens?: number;
}

/**
 * What is known about a recorded output besides its value: its kind and, for a model
 * call, the model, its provider and the tokens it used; how long the call took. Kept
 * beside the entry for inspection and tracing; never served to a node, and not part
 * of the output's digest (a position binds the value, not the description).
 *
 * @example `{ kind: 'model', model: 'gpt-5-mini', provider: 'openai', usage: { inputTokens: 812, outputTokens: 64 }, latencyMs: 930 }`
 */
export interface RecordMeta {
  kind: RecordKind;
  /** The model's id (a model call). */
  model?: string;
  /** Who serves the model (`openai`, `anthropic`…). */
  provider?: string;
  /** The tool's own name (a tool call), when the record is named otherwise (`tool:search` through cairn/ai-sdk). */
  tool?: string;
  usage?: TokenUsage;
  /** Wall time of the call that produced the value, in ms (not of serving it again). */
  latencyMs?: number;
}

/** One recorded output, or one effect's intent and (once observed) outcome. */
export interface LedgerEntry {
  threadId: string;
  key: string;
  kind: LedgerKind;
  name: string;
  ns: string;
  /** Seq of the position the step started from. */
  seq: number;
  node: string;
  /** Task id `node:index`. */
  task: string;
  /** Index of the call among the task's record/effect calls. */
  call: number;
  /** Digest of the effect's declared arguments, or null. */
  argsDigest: string | null;
  status: 'intent' | 'done';
  /** Canonical tagged JSON of the outcome, when done. */
  outcome: string | null;
  createdAt: number;
  completedAt: number | null;
  /** What the recorded output was (`record` entries written by `ctx.record`); absent when nothing was said. */
  meta?: RecordMeta;
}

/** An entry as written first: before its outcome is known. */
export type NewLedgerEntry = Omit<LedgerEntry, 'status' | 'outcome' | 'completedAt'>;

/**
 * The record of a thread's nondeterminism: each recorded output (`ctx.record`) and each
 * effect's intent and outcome (`ctx.effect`), keyed per thread, written before the
 * step that used them commits, and served when the step runs again.
 */
export interface Ledger {
  readonly engine: string;
  /** The entry for (thread, key), or null. */
  get(threadId: string, key: string): Promise<LedgerEntry | null>;
  /** Entries of one task of one step, by call index. */
  listForTask(threadId: string, ns: string, seq: number, task: string): Promise<LedgerEntry[]>;
  /** Entries of a thread, oldest first. */
  list(threadId: string): Promise<LedgerEntry[]>;
  /** Durably records an effect's intent (insert if absent) and returns the stored entry. */
  writeIntent(entry: NewLedgerEntry): Promise<LedgerEntry>;
  /** Durably records an effect's outcome. Ignored when the entry is already done. */
  writeOutcome(threadId: string, key: string, outcome: string, at: number): Promise<void>;
  /** Durably records a nondeterministic output (insert if absent) and returns the stored entry. */
  writeRecord(entry: NewLedgerEntry & { outcome: string }): Promise<LedgerEntry>;
  /**
   * Deletes the `record` entries of `lease.threadId` with these keys, in one transaction
   * (effects are kept; a key with no record is skipped). Fenced: when `lease` no longer
   * holds the thread (taken over, released, or the thread deleted) it throws
   * {@link LeaseLostError} and deletes nothing, even for an empty list.
   *
   * @example
   * ```ts
   * // A failed attempt's recorded outputs, so that its retry calls the model again:
   * await ledger.discardRecords(lease, ['n:0#0', 'n:0#1']);
   * ```
   */
  discardRecords(lease: ThreadLease, keys: string[]): Promise<void>;
}
