/**
 * @module checkpointer/base-checkpointer
 * What every thread log shares, written once above the engines: the lifecycle
 * guard (lazy open, EngineClosedError after close) around every storage call,
 * thread-id checks, thread-query and `deleteThread` option validation, the lease
 * rules (a live holder refuses an acquire or a delete with ThreadBusyError, a
 * caller's own lease lets it delete), the errors of fenced writes (LeaseLostError,
 * HeadMovedError, PositionNotFoundError), the shortcuts of empty reads, signal
 * validation and the rules of consuming one (SignalConsumedError, SignalNotFoundError),
 * and the optional methods' capabilities (NotSupportedError where one is not declared).
 *
 * An engine extends {@link BaseCheckpointer} and implements storage primitives
 * only. The primitives that must decide inside their transaction are handed the
 * decision: `acquire` and `removeThread` read the thread as it is locked and call
 * the judge they are given, which throws, or says what to do.
 *
 * @example
 * ```ts
 * class MyCheckpointer extends BaseCheckpointer {
 *   readonly engine = 'mine';
 *   readonly capabilities = { claims: false, wakeUps: false, leaseExpiry: false, leaseHolders: false, itemPacks: false };
 *   protected async readThread(threadId) { ... }
 *   protected async acquire(threadId, request, admit) {
 *     // In one transaction: read the thread; admit(it or null) throws, or says 'create' or 'take'; do that.
 *   }
 *   ...
 * }
 * ```
 */
import type {
  AcquireRequest,
  AttemptFailure,
  Checkpointer,
  CheckpointerCapabilities,
  ClaimRequest,
  CommittedEffect,
  CompactionRequest,
  CompactionResult,
  HeadAnchor,
  ItemPack,
  LeaseHolderQuery,
  PendingWrite,
  PositionItem,
  RangeItem,
  SeqRange,
  StepCommit,
  StoredPosition,
  ThreadPatch,
} from '../contracts/checkpointer.js';
import type {
  DeleteThreadOptions,
  DeleteThreadResult,
  DeletedThreadRows,
  LeaseOwner,
  SignalConsume,
  SignalQuery,
  SignalSend,
  StoredSignal,
  ThreadLease,
  ThreadQuery,
  ThreadRecord,
  ThreadStatus,
} from '../contracts/threads.js';
import { MAX_SIGNAL_NAME_LENGTH, MAX_SIGNAL_PAYLOAD_BYTES } from '../defaults.js';
import { isSealed, sealedLength } from '../crypto/envelope.js';
import {
  EngineError,
  HeadMovedError,
  InvalidOptionError,
  LeaseLostError,
  NotSupportedError,
  PositionNotFoundError,
  SignalConsumedError,
  SignalNotFoundError,
  ThreadBusyError,
  ThreadNotFoundError,
} from '../errors.js';
import { checkSignalName, checkThreadId } from '../internal/keys.js';
import { checkMeta } from '../ledger/base-ledger.js';
import { describeHolder, holderIsLive, type HeldThread } from '../internal/lease.js';
import type { Lifecycle } from '../internal/lifecycle.js';
import { checkDeleteThreadOptions, checkNewThread, normalizeIfStatus, normalizeThreadQuery, type NormalizedThreadQuery } from '../internal/thread-query.js';

export type { HeldThread };

/** Why a fenced, head-checked commit wrote nothing. */
export type CommitRefusal =
  /** The lease no longer holds the thread. */
  | { reason: 'lease' }
  /** The namespace's head is `head`, not the commit's `expectedHead` (or the position does not take head + 1). */
  | { reason: 'head'; head: number | null };

/** True when `commit` extends the namespace whose head is `head`: the head it expects, and seq head + 1. */
export function extendsHead(commit: StepCommit, head: number | null): boolean {
  return head === commit.expectedHead && commit.position.seq === (head ?? -1) + 1;
}

/** Counts for a deletion that has not removed anything yet. */
export function noRowsRemoved(): DeletedThreadRows {
  return { positions: 0, items: 0, snapshots: 0, pendingWrites: 0, failures: 0, ledgerEntries: 0, pins: 0, signals: 0 };
}

/**
 * The wake time a thread keeps once a commit or an update gives it `status`: none for
 * any status but `waiting`; else `wakeAt` (when not given, the `current` one), made
 * due at `now` when the thread holds a signal newer than the `signalsSeen` the writer
 * looked at (sent in between, it did not wake the thread).
 */
export function wakeAtFor(
  status: ThreadStatus,
  wakeAt: number | null | undefined,
  current: number | null,
  signals: { seen: number | undefined; newest: number; now: number },
): number | null {
  if (status !== 'waiting') return null;
  const at = wakeAt === undefined ? current : wakeAt;
  if (signals.seen !== undefined && signals.newest > signals.seen) return at === null ? signals.now : Math.min(at, signals.now);
  return at;
}

/** Why a compaction removed nothing: the lease, the base (not stored with its hash), or where the base lies (above the head, below an earlier base). */
export type CompactionRefusal = { refused: 'lease' } | { refused: 'position' } | { refused: 'head'; head: number | null } | { refused: 'base'; base: number };

/**
 * The refusal a compaction's checks give inside its transaction, or null to go on:
 * `head` and `base` are the namespace's anchored head seq and compaction base seq
 * (null when none), `stored` the hash of the position at the request's base (null when
 * none is stored).
 */
export function judgeCompaction(request: CompactionRequest, head: number | null, base: number | null, stored: string | null): CompactionRefusal | null {
  if (stored === null || stored !== request.base.hash) return { refused: 'position' };
  if (head === null || request.base.seq > head) return { refused: 'head', head };
  if (base !== null && request.base.seq < base) return { refused: 'base', base };
  return null;
}

/** Counts for a compaction that has not removed anything yet. */
export function noneCompacted(): CompactionResult {
  return { positions: 0, items: 0, snapshots: 0, pendingWrites: 0, ledgerEntries: 0, namespaces: 0 };
}

/** A signal as a primitive stores it: validated, with its send time decided. */
export interface SignalToStore {
  name: string;
  payload: string;
  sentAt: number;
}

/** A consumption as a primitive makes it: validated, with its time decided. */
export interface ConsumptionToStore {
  id: number;
  by: string;
  consumedAt: number;
}

/** U+0000 (no place in PostgreSQL text) or a lone surrogate (no UTF-8 form): codec text holds neither. */
export const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

const finiteTime = (what: string, value: unknown): number => {
  if (typeof value !== 'number' || !Number.isFinite(value)) throw new InvalidOptionError(`${what} must be a finite number of ms since the epoch, got ${String(value)}.`);
  return value;
};

/** True when `pack` lies wholly inside one of `ranges`: the packs `getItemPacks` returns. */
export function packInRanges(pack: { fromSeq: number; toSeq: number }, ranges: readonly SeqRange[]): boolean {
  return ranges.some((r) => r.from <= pack.fromSeq && pack.toSeq <= r.to);
}

/** A commit's packs: each of one field, ending at the commit's position, over seqs it can span, with its items counted and a text. */
function checkPacks(commit: StepCommit): void {
  const packs = commit.packs;
  if (!Array.isArray(packs)) throw new InvalidOptionError('commitStep: packs must be an array of item packs.');
  const fields = new Set<string>();
  for (const pack of packs) {
    if (pack === null || typeof pack !== 'object') throw new InvalidOptionError('commitStep: each pack must be an item pack ({ field, fromSeq, toSeq, count, text }).');
    const at = `commitStep: the pack of field ${JSON.stringify(pack.field)}`;
    if (typeof pack.field !== 'string' || UNSTORABLE.test(pack.field)) throw new InvalidOptionError(`${at}: field must be a string without U+0000 or lone surrogates.`);
    if (fields.has(pack.field)) throw new InvalidOptionError(`${at} is given twice.`);
    fields.add(pack.field);
    if (pack.toSeq !== commit.position.seq) throw new InvalidOptionError(`${at} ends at seq ${String(pack.toSeq)}, not at the commit's position (${commit.position.seq}).`);
    if (!Number.isSafeInteger(pack.fromSeq) || pack.fromSeq < 0 || pack.fromSeq > pack.toSeq) throw new InvalidOptionError(`${at}: fromSeq must be a whole number from 0 to toSeq, got ${String(pack.fromSeq)}.`);
    if (!Number.isSafeInteger(pack.count) || pack.count < 1) throw new InvalidOptionError(`${at}: count must be a whole number above 0, got ${String(pack.count)}.`);
    if (typeof pack.text !== 'string' || UNSTORABLE.test(pack.text)) throw new InvalidOptionError(`${at}: text must be a string without U+0000 or lone surrogates.`);
  }
}

/**
 * The effects a commit carries, checked before anything is written: an array of
 * `effect` entries of the lease's thread, with distinct keys, storable strings (no
 * U+0000, no lone surrogate), non-negative integer seqs and call indexes, finite times
 * and a readable `meta`.
 */
function checkCommittedEffects(threadId: string, effects: readonly CommittedEffect[], engine: string): void {
  if (!Array.isArray(effects)) throw new InvalidOptionError('commitStep: effects must be an array of committed effects.');
  const keys = new Set<string>();
  for (const effect of effects) {
    if (effect === null || typeof effect !== 'object') throw new InvalidOptionError('commitStep: each effect must be a ledger entry with its outcome and completedAt.');
    const at = `commitStep: effect ${JSON.stringify(effect.key)}`;
    if (effect.threadId !== threadId) throw new InvalidOptionError(`${at} is of thread ${JSON.stringify(effect.threadId)}, not of the lease's thread ${JSON.stringify(threadId)}.`);
    if (effect.kind !== 'effect') throw new InvalidOptionError(`${at} has kind ${JSON.stringify(effect.kind)}: a commit carries only 'effect' entries (records go through ledger.writeRecord).`);
    for (const field of ['key', 'name', 'ns', 'node', 'task', 'outcome'] as const) {
      const value = effect[field];
      if (typeof value !== 'string' || UNSTORABLE.test(value)) throw new InvalidOptionError(`${at}: ${field} must be a string without U+0000 or lone surrogates, got ${typeof value}.`);
    }
    if (effect.key === '') throw new InvalidOptionError('commitStep: an effect has an empty key.');
    if (effect.argsDigest !== null && (typeof effect.argsDigest !== 'string' || UNSTORABLE.test(effect.argsDigest))) {
      throw new InvalidOptionError(`${at}: argsDigest must be null or a string without U+0000 or lone surrogates.`);
    }
    for (const field of ['seq', 'call'] as const) {
      if (!Number.isSafeInteger(effect[field]) || effect[field] < 0) throw new InvalidOptionError(`${at}: ${field} must be an integer, 0 or more, got ${String(effect[field])}.`);
    }
    finiteTime(`${at}: createdAt`, effect.createdAt);
    finiteTime(`${at}: completedAt`, effect.completedAt);
    if (effect.meta !== undefined && effect.meta !== null) checkMeta(effect.meta, effect.key, engine);
    if (keys.has(effect.key)) throw new InvalidOptionError(`${at} is given twice: each effect of a commit has its own key.`);
    keys.add(effect.key);
  }
}

/**
 * The {@link Checkpointer} contract over storage primitives. Every public method
 * validates what it is given, then runs its primitive through the engine's
 * {@link Lifecycle}, then turns what the primitive reports into the contract's result
 * or error.
 */
export abstract class BaseCheckpointer implements Checkpointer {
  abstract readonly engine: string;
  abstract readonly capabilities: CheckpointerCapabilities;

  /** `lifecycle`: the engine's, shared with its ledger and store (closing one closes the engine). */
  constructor(protected readonly lifecycle: Lifecycle) {}

  // ---------------------------------------------------------------- primitives: threads and leases

  /** The thread's record, or null. */
  protected abstract readThread(threadId: string): Promise<ThreadRecord | null>;
  /** Threads matching `query` (validated), in its order, after its cursor, at most its limit. */
  protected abstract queryThreads(query: NormalizedThreadQuery): Promise<ThreadRecord[]>;
  /** The thread's failures, oldest first ([] for a missing thread). */
  protected abstract readFailures(threadId: string): Promise<AttemptFailure[]>;
  /**
   * Grants `request.owner` the lease, in one transaction (or a compare-and-set on what
   * was read): reads the thread as it is, calls `admit` with it (null when missing),
   * which throws ThreadNotFoundError or ThreadBusyError, or says to `create` the thread
   * (`request.create` is then set) or `take` its lease (epoch + 1).
   */
  protected abstract acquire(threadId: string, request: AcquireRequest, admit: (held: HeldThread | null) => 'create' | 'take'): Promise<ThreadLease>;
  /** Extends the lease (fenced); the new expiry, or null when the lease no longer holds the thread. */
  protected abstract renew(lease: ThreadLease, leaseMs: number): Promise<number | null>;
  /** Clears the holder if `lease` still holds the thread; otherwise does nothing. */
  protected abstract release(lease: ThreadLease): Promise<void>;
  /** Applies `patch` (fenced); the new record, or null when the lease no longer holds the thread. */
  protected abstract update(lease: ThreadLease, patch: ThreadPatch): Promise<ThreadRecord | null>;
  /**
   * Deletes the thread and all it owns, in one transaction: reads the thread as it is
   * (locked against every write of it), calls `judge` with it (null when missing),
   * which throws (ThreadBusyError, LeaseLostError) or returns the result to report
   * without deleting anything; when it returns null, deletes and reports the rows removed.
   */
  protected abstract removeThread(threadId: string, judge: (held: HeldThread | null) => DeleteThreadResult | null): Promise<DeleteThreadResult>;

  // ---------------------------------------------------------------- primitives: the log

  /**
   * Commits one step boundary in one transaction (see {@link Checkpointer.commitStep}):
   * nothing is written, and the refusal returned, when the lease no longer holds the
   * thread or the commit does not {@link extendsHead extend} the namespace's head.
   */
  protected abstract commit(lease: ThreadLease, commit: StepCommit): Promise<CommitRefusal | undefined>;
  protected abstract readHead(threadId: string, ns: string): Promise<HeadAnchor | null>;
  /** Stores or replaces the snapshot (fenced): `lease` when the lease no longer holds the thread, `position` when there is no such position. */
  protected abstract writeSnapshot(lease: ThreadLease, snapshot: { ns: string; seq: number; text: string }): Promise<'stored' | 'lease' | 'position'>;
  /** Stores or replaces the task's pending write (fenced); false when the lease no longer holds the thread. */
  protected abstract writePending(lease: ThreadLease, write: PendingWrite): Promise<boolean>;
  protected abstract readPendingWrites(threadId: string, ns: string, baseSeq: number): Promise<PendingWrite[]>;
  /** Pending writes whose base seq is in `range`, by base seq then task. Default: one read per seq; engines override it with one query. */
  protected async readPendingWritesIn(threadId: string, ns: string, range: SeqRange): Promise<PendingWrite[]> {
    const writes: PendingWrite[] = [];
    for (let seq = range.from; seq <= range.to; seq++) writes.push(...(await this.readPendingWrites(threadId, ns, seq)));
    return writes;
  }
  protected abstract readPosition(threadId: string, ns: string, seq: number): Promise<StoredPosition | null>;
  protected abstract readPositions(threadId: string, ns: string, range: SeqRange): Promise<StoredPosition[]>;
  protected abstract readNamespaces(threadId: string): Promise<string[]>;
  protected abstract readPositionPage(threadId: string, ns: string, page: { beforeSeq?: number; limit?: number }): Promise<StoredPosition[]>;
  /** The newest snapshot inside `ranges` (never empty). */
  protected abstract readSnapshot(threadId: string, ns: string, ranges: SeqRange[]): Promise<{ seq: number; text: string } | null>;
  protected abstract readSnapshots(threadId: string, ns: string, range: SeqRange): Promise<{ seq: number; text: string }[]>;
  /** The texts of `field`'s items inside `ranges` (never empty), by (seq, index). */
  protected abstract readItems(threadId: string, ns: string, field: string, ranges: SeqRange[]): Promise<string[]>;
  /** One position's items of `fields` (never empty), in field order given, then index. */
  protected abstract readPositionItems(threadId: string, ns: string, seq: number, fields: readonly string[]): Promise<PositionItem[]>;
  protected abstract readRangeItems(threadId: string, ns: string, range: SeqRange): Promise<RangeItem[]>;
  /** Where `capabilities.itemPacks`: the packs of `field` wholly inside one of `ranges` (never empty), by fromSeq. */
  protected async readItemPacks(_threadId: string, _ns: string, _field: string, _ranges: SeqRange[]): Promise<ItemPack[]> {
    return [];
  }

  // ---------------------------------------------------------------- primitives: signals

  /**
   * Queues the signal (id: the thread's highest + 1) and, in the same transaction, makes
   * a `waiting` thread due (`wake_at = min(wake_at, now)` on the engine's clock), telling
   * wake-up listeners where the engine has them. Null when the thread does not exist.
   */
  protected abstract insertSignal(threadId: string, signal: SignalToStore): Promise<StoredSignal | null>;
  /** The thread's signals matching `query` (validated), by ascending id; [] for a missing thread. */
  protected abstract readSignals(threadId: string, query: SignalQuery): Promise<StoredSignal[]>;
  /**
   * Fenced: marks the signal consumed by `consumption.by` if it is pending, and returns
   * it as it is afterwards (consumed by whoever consumed it); `lease` when the lease no
   * longer holds the thread, `missing` when the thread has no such signal.
   */
  protected abstract markConsumed(lease: ThreadLease, consumption: ConsumptionToStore): Promise<StoredSignal | 'lease' | 'missing'>;

  // ---------------------------------------------------------------- primitives: workers (by capability)

  /**
   * Compacts one namespace in one fenced transaction (see {@link Checkpointer.compactThread}):
   * reads the fence, the namespace's head and base and the base position's hash, asks
   * {@link judgeCompaction}, then removes and stores. Engines without it refuse with
   * NotSupportedError.
   */
  protected compact(lease: ThreadLease, request: CompactionRequest): Promise<CompactionResult | CompactionRefusal> {
    return Promise.reject(new NotSupportedError('compactThread is not supported by this engine.', { place: { engine: this.engine } }));
  }

  /** Claims runnable threads (`capabilities.claims`). */
  protected claim(request: ClaimRequest): Promise<ThreadLease[]> {
    return Promise.reject(this.undeclared('claimThreads'));
  }

  /** Listens for threads that may have become runnable (`capabilities.wakeUps`). */
  protected watchRunnable(listener: (threadId: string) => void): Promise<() => Promise<void>> {
    return Promise.reject(this.undeclared('subscribeRunnable'));
  }

  /** The earliest lease expiry on a runnable thread (`capabilities.leaseExpiry`). */
  protected earliestLeaseExpiry(graph: string | undefined): Promise<number | null> {
    return Promise.reject(this.undeclared('nextLeaseExpiry'));
  }

  /** The distinct owners of unexpired leases on one host (`capabilities.leaseHolders`). */
  protected listHolders(query: LeaseHolderQuery): Promise<LeaseOwner[]> {
    return Promise.reject(this.undeclared('leaseHolders'));
  }

  // ---------------------------------------------------------------- the contract

  getThread(threadId: string): Promise<ThreadRecord | null> {
    return this.lifecycle.run(() => this.readThread(threadId));
  }

  async listThreads(query: ThreadQuery = {}): Promise<ThreadRecord[]> {
    const q = normalizeThreadQuery(query);
    return this.lifecycle.run(() => this.queryThreads(q));
  }

  listFailures(threadId: string): Promise<AttemptFailure[]> {
    return this.lifecycle.run(() => this.readFailures(threadId));
  }

  async acquireThread(threadId: string, request: AcquireRequest): Promise<ThreadLease> {
    checkThreadId(threadId);
    if (request.create) checkNewThread(request.create, 'acquireThread');
    return this.lifecycle.run(() =>
      this.acquire(threadId, request, (held) => {
        if (!held) {
          if (!request.create) throw new ThreadNotFoundError(threadId, { engine: this.engine });
          return 'create';
        }
        // The caller's own lease (an acquire made again after its answer was lost) is granted again.
        if (held.holder.runId === request.owner.runId) return 'take';
        // A takeover fences the holder: the grant's new epoch fails its next write.
        if (!request.takeover && holderIsLive(held.holder, held.now)) throw new ThreadBusyError(threadId, describeHolder(held.holder), { engine: this.engine });
        return 'take';
      }),
    );
  }

  async renewLease(lease: ThreadLease, leaseMs: number): Promise<ThreadLease> {
    const expiresAt = await this.lifecycle.run(() => this.renew(lease, leaseMs));
    if (expiresAt === null) throw this.lost(lease);
    return { ...lease, expiresAt };
  }

  releaseThread(lease: ThreadLease): Promise<void> {
    return this.lifecycle.run(() => this.release(lease));
  }

  async updateThread(lease: ThreadLease, patch: ThreadPatch): Promise<ThreadRecord> {
    const record = await this.lifecycle.run(() => this.update(lease, patch));
    if (!record) throw this.lost(lease);
    return record;
  }

  async commitStep(lease: ThreadLease, commit: StepCommit): Promise<void> {
    if (commit.effects !== undefined) checkCommittedEffects(lease.threadId, commit.effects, this.engine);
    if (commit.packs !== undefined) checkPacks(commit);
    const refusal = await this.lifecycle.run(() => this.commit(lease, commit));
    if (!refusal) return;
    if (refusal.reason === 'lease') throw this.lost(lease);
    throw new HeadMovedError(lease.threadId, commit.expectedHead, refusal.head, { engine: this.engine });
  }

  getHead(threadId: string, ns: string): Promise<HeadAnchor | null> {
    return this.lifecycle.run(() => this.readHead(threadId, ns));
  }

  async putSnapshot(lease: ThreadLease, snapshot: { ns: string; seq: number; text: string }): Promise<void> {
    const outcome = await this.lifecycle.run(() => this.writeSnapshot(lease, snapshot));
    if (outcome === 'lease') throw this.lost(lease);
    if (outcome === 'position') throw new PositionNotFoundError(lease.threadId, snapshot.seq, { engine: this.engine });
  }

  async putPendingWrite(lease: ThreadLease, write: PendingWrite): Promise<void> {
    if (!(await this.lifecycle.run(() => this.writePending(lease, write)))) throw this.lost(lease);
  }

  getPendingWritesIn(threadId: string, ns: string, range: SeqRange): Promise<PendingWrite[]> {
    return this.lifecycle.run(() => this.readPendingWritesIn(threadId, ns, range));
  }

  getPendingWrites(threadId: string, ns: string, baseSeq: number): Promise<PendingWrite[]> {
    return this.lifecycle.run(() => this.readPendingWrites(threadId, ns, baseSeq));
  }

  getPosition(threadId: string, ns: string, seq: number): Promise<StoredPosition | null> {
    return this.lifecycle.run(() => this.readPosition(threadId, ns, seq));
  }

  getPositions(threadId: string, ns: string, range: SeqRange): Promise<StoredPosition[]> {
    return this.lifecycle.run(() => this.readPositions(threadId, ns, range));
  }

  listNamespaces(threadId: string): Promise<string[]> {
    return this.lifecycle.run(() => this.readNamespaces(threadId));
  }

  listPositions(threadId: string, ns: string, page: { beforeSeq?: number; limit?: number } = {}): Promise<StoredPosition[]> {
    // An engine would read a negative limit as none (SQLite's LIMIT -1) and a string as 0 rows.
    const { beforeSeq, limit } = page;
    if (beforeSeq !== undefined && !(Number.isSafeInteger(beforeSeq) && beforeSeq >= 0)) {
      return Promise.reject(new InvalidOptionError(`listPositions: beforeSeq must be a seq (an integer, 0 or more), got ${String(beforeSeq)}.`));
    }
    if (limit !== undefined && !(Number.isSafeInteger(limit) && limit >= 0)) {
      return Promise.reject(new InvalidOptionError(`listPositions: limit must be an integer, 0 or more, got ${String(limit)}.`));
    }
    return this.lifecycle.run(() => this.readPositionPage(threadId, ns, page));
  }

  getSnapshot(threadId: string, ns: string, ranges: SeqRange[]): Promise<{ seq: number; text: string } | null> {
    return this.lifecycle.run(() => (ranges.length === 0 ? null : this.readSnapshot(threadId, ns, ranges)));
  }

  getSnapshots(threadId: string, ns: string, range: SeqRange): Promise<{ seq: number; text: string }[]> {
    return this.lifecycle.run(() => this.readSnapshots(threadId, ns, range));
  }

  getItems(threadId: string, ns: string, field: string, ranges: SeqRange[]): Promise<string[]> {
    return this.lifecycle.run(() => (ranges.length === 0 ? [] : this.readItems(threadId, ns, field, ranges)));
  }

  getPositionItems(threadId: string, ns: string, seq: number, fields: readonly string[]): Promise<PositionItem[]> {
    return this.lifecycle.run(() => (fields.length === 0 ? [] : this.readPositionItems(threadId, ns, seq, fields)));
  }

  getRangeItems(threadId: string, ns: string, range: SeqRange): Promise<RangeItem[]> {
    return this.lifecycle.run(() => this.readRangeItems(threadId, ns, range));
  }

  getItemPacks(threadId: string, ns: string, field: string, ranges: SeqRange[]): Promise<ItemPack[]> {
    if (!this.capabilities.itemPacks) return Promise.reject(this.unsupported('getItemPacks', 'itemPacks'));
    return this.lifecycle.run(() => (ranges.length === 0 ? [] : this.readItemPacks(threadId, ns, field, ranges)));
  }

  claimThreads(request: ClaimRequest): Promise<ThreadLease[]> {
    if (!this.capabilities.claims) return Promise.reject(this.unsupported('claimThreads', 'claims'));
    return this.lifecycle.run(() => this.claim(request));
  }

  subscribeRunnable(listener: (threadId: string) => void): Promise<() => Promise<void>> {
    if (!this.capabilities.wakeUps) return Promise.reject(this.unsupported('subscribeRunnable', 'wakeUps'));
    return this.lifecycle.run(() => this.watchRunnable(listener));
  }

  nextLeaseExpiry(graph?: string): Promise<number | null> {
    if (!this.capabilities.leaseExpiry) return Promise.reject(this.unsupported('nextLeaseExpiry', 'leaseExpiry'));
    return this.lifecycle.run(() => this.earliestLeaseExpiry(graph));
  }

  leaseHolders(query: LeaseHolderQuery): Promise<LeaseOwner[]> {
    if (!this.capabilities.leaseHolders) return Promise.reject(this.unsupported('leaseHolders', 'leaseHolders'));
    if (query === null || typeof query !== 'object' || typeof query.host !== 'string') return Promise.reject(new InvalidOptionError('leaseHolders: pass { host, graph? } with the host name as a string.'));
    return this.lifecycle.run(() => this.listHolders(query));
  }

  async sendSignal(threadId: string, signal: SignalSend): Promise<StoredSignal> {
    checkThreadId(threadId);
    if (signal === null || typeof signal !== 'object') throw new InvalidOptionError('sendSignal: the signal must be { name, payload, sentAt? }.');
    checkSignalName(signal.name, MAX_SIGNAL_NAME_LENGTH);
    const { payload } = signal;
    if (typeof payload !== 'string') throw new InvalidOptionError(`sendSignal: payload must be codec text (a string: encode(value)), got ${typeof payload}.`);
    if (UNSTORABLE.test(payload)) throw new InvalidOptionError('sendSignal: payload holds U+0000 or a lone surrogate, which codec text never does: encode the value with encode(value).');
    const bytes = Buffer.byteLength(payload, 'utf8');
    // A sealed payload (an encrypted engine's) was held to the limit before sealing; its envelope may add a third.
    if (bytes > (isSealed(payload) ? sealedLength(MAX_SIGNAL_PAYLOAD_BYTES) : MAX_SIGNAL_PAYLOAD_BYTES)) {
      throw new InvalidOptionError(`sendSignal: the payload is ${bytes} bytes, over the ${MAX_SIGNAL_PAYLOAD_BYTES}-byte limit. Store big payloads as artifacts and send the ref.`);
    }
    const sentAt = signal.sentAt === undefined ? Date.now() : finiteTime('sendSignal: sentAt', signal.sentAt);
    const stored = await this.lifecycle.run(() => this.insertSignal(threadId, { name: signal.name, payload, sentAt }));
    if (!stored) throw new ThreadNotFoundError(threadId, { engine: this.engine });
    return stored;
  }

  async listSignals(threadId: string, query: SignalQuery = {}): Promise<StoredSignal[]> {
    if (query === null || typeof query !== 'object') throw new InvalidOptionError('listSignals: the query must be { name?, pending?, consumedBy? }.');
    if (query.name !== undefined && typeof query.name !== 'string') throw new InvalidOptionError(`listSignals: name must be a string, got ${typeof query.name}.`);
    if (query.pending !== undefined && typeof query.pending !== 'boolean') throw new InvalidOptionError(`listSignals: pending must be a boolean, got ${typeof query.pending}.`);
    if (query.consumedBy !== undefined && typeof query.consumedBy !== 'string') throw new InvalidOptionError(`listSignals: consumedBy must be a string, got ${typeof query.consumedBy}.`);
    const q: SignalQuery = {
      ...(query.name !== undefined ? { name: query.name } : {}),
      ...(query.pending !== undefined ? { pending: query.pending } : {}),
      ...(query.consumedBy !== undefined ? { consumedBy: query.consumedBy } : {}),
    };
    return this.lifecycle.run(() => this.readSignals(threadId, q));
  }

  async consumeSignal(lease: ThreadLease, request: SignalConsume): Promise<StoredSignal> {
    if (request === null || typeof request !== 'object') throw new InvalidOptionError('consumeSignal: the request must be { id, by }.');
    const { id, by } = request;
    if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 1) throw new InvalidOptionError(`consumeSignal: id must be a signal's id (a positive integer), got ${String(id)}.`);
    if (typeof by !== 'string' || by.length === 0 || UNSTORABLE.test(by)) {
      throw new InvalidOptionError(`consumeSignal: by must be the consuming wait's key (a non-empty string without U+0000 or lone surrogates), got ${JSON.stringify(by)}.`);
    }
    const consumedAt = request.consumedAt === undefined ? Date.now() : finiteTime('consumeSignal: consumedAt', request.consumedAt);
    const outcome = await this.lifecycle.run(() => this.markConsumed(lease, { id, by, consumedAt }));
    if (outcome === 'lease') throw this.lost(lease);
    if (outcome === 'missing') throw new SignalNotFoundError(lease.threadId, id, { engine: this.engine });
    if (outcome.consumedBy !== by) throw new SignalConsumedError(lease.threadId, id, outcome.consumedBy!, { engine: this.engine });
    return outcome;
  }

  async deleteThread(threadId: string, options: DeleteThreadOptions = {}): Promise<DeleteThreadResult> {
    checkDeleteThreadOptions(options);
    const ifStatus = normalizeIfStatus(options.ifStatus);
    const { lease } = options;
    return this.lifecycle.run(() =>
      this.removeThread(threadId, (held) => {
        if (!held) return { deleted: false, threadId, reason: 'missing' };
        if (lease) {
          if (held.holder.runId !== lease.runId || held.epoch !== lease.epoch) throw new LeaseLostError(threadId, { engine: this.engine });
        } else if (holderIsLive(held.holder, held.now)) {
          throw new ThreadBusyError(threadId, describeHolder(held.holder), { engine: this.engine }, 'Delete it once that run has ended, or cancel the run first. Nothing was deleted.');
        }
        if (ifStatus && !ifStatus.includes(held.status)) return { deleted: false, threadId, reason: 'status', status: held.status };
        return null;
      }),
    );
  }

  async compactThread(lease: ThreadLease, request: CompactionRequest): Promise<CompactionResult> {
    const { base } = request;
    if (!Number.isSafeInteger(base.seq) || base.seq < 0 || typeof base.hash !== 'string' || !/^[0-9a-f]{64}$/.test(base.hash)) {
      throw new InvalidOptionError(`compactThread: base must be a seq (0 or more) and a 64-digit hex chain hash, got ${JSON.stringify(base)}.`);
    }
    if (typeof request.snapshot !== 'string') throw new InvalidOptionError('compactThread: snapshot must be the sealed snapshot text of the base.');
    for (const seq of request.drop ?? []) {
      if (!Number.isSafeInteger(seq) || seq <= base.seq) throw new InvalidOptionError(`compactThread: drop names seq ${seq}, which is not above the base ${base.seq} (positions below it go anyway).`);
    }
    for (const snapshot of request.snapshots ?? []) {
      if (!Number.isSafeInteger(snapshot.seq) || snapshot.seq <= base.seq) throw new InvalidOptionError(`compactThread: a rewritten snapshot at seq ${snapshot.seq} is not above the base ${base.seq}.`);
    }
    for (const ns of request.dropNamespaces ?? []) {
      if (typeof ns !== 'string' || ns === '' || ns === request.ns) throw new InvalidOptionError(`compactThread: dropNamespaces names ${JSON.stringify(ns)}, which is not a child namespace.`);
    }
    const outcome = await this.lifecycle.run(() => this.compact(lease, request));
    if (!('refused' in outcome)) return outcome;
    if (outcome.refused === 'lease') throw this.lost(lease);
    if (outcome.refused === 'position') throw new PositionNotFoundError(lease.threadId, base.seq, { engine: this.engine, ns: request.ns });
    if (outcome.refused === 'head') throw new InvalidOptionError(`compactThread: the base ${base.seq} is above the namespace's head (${outcome.head ?? 'none'}).`);
    throw new InvalidOptionError(`compactThread: the base ${base.seq} is below the namespace's earlier compaction base ${outcome.base}, whose older positions are gone.`);
  }

  /** Closes the engine (its ledger and store too). */
  close(): Promise<void> {
    return this.lifecycle.close();
  }

  // ---------------------------------------------------------------- internals

  private lost(lease: ThreadLease): LeaseLostError {
    return new LeaseLostError(lease.threadId, { engine: this.engine });
  }

  private unsupported(method: string, capability: keyof CheckpointerCapabilities): NotSupportedError {
    return new NotSupportedError(`${method} is not supported by this engine (capabilities.${capability} is false). Check checkpointer.capabilities before calling it.`, {
      place: { engine: this.engine },
    });
  }

  /** A capability declared without its primitive: a bug of the engine, not of the caller. */
  private undeclared(method: string): EngineError {
    return new EngineError(`the engine declares the capability of ${method} but does not implement it.`, { place: { engine: this.engine } });
  }
}
