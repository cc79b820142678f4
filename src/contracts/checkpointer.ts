/**
 * @module contracts/checkpointer
 * The thread log: one append-only log of positions per thread (a tree once
 * forked), snapshots beside it, and the threads table. Engines store and fetch
 * rows; they never interpret a position's body. Materializing state (snapshot +
 * deltas + appended items, then upcast, then derive) is shared code in
 * `runtime/materialize.ts`, so every engine loads state identically.
 *
 * Contract for every implementation:
 * - **Atomicity**: {@link Checkpointer.commitStep} writes the position, its
 *   items, its snapshot, the head advance, the thread status, the removal of
 *   the folded-in pending writes and the ledger entries of the effects it carries
 *   ({@link StepCommit.effects}) in one transaction: all of it or none of it. A
 *   refused commit (LeaseLostError, HeadMovedError) writes no ledger row either.
 * - **Fencing**: every write that takes a {@link ThreadLease} checks, in the same
 *   transaction, that the lease's `runId` and `epoch` still hold the thread; if
 *   not it throws {@link LeaseLostError} and writes nothing.
 * - **No silent forks**: a commit's position must be `expectedHead + 1` with
 *   `expectedHead` the namespace's current head; otherwise {@link HeadMovedError}
 *   and nothing is written.
 * - **Anchored heads**: each namespace's head (seq and chain hash) is kept in the
 *   thread's record, written by the commit that moves it, in its transaction
 *   ({@link Checkpointer.getHead}). Deleting the newest positions cannot pass for
 *   an older head: readers load the anchored head and check its hash.
 * - **Immutability**: positions, items and snapshots are never updated once written.
 * - **Durability**: when a method's promise resolves, what it wrote survives a
 *   crash of the process (and, for durable engines, of the machine).
 * - **Capabilities**: the optional methods (workers' claims, wake-ups and lease
 *   expiry) work where {@link Checkpointer.capabilities} says so; elsewhere they are
 *   absent or throw {@link NotSupportedError}. Callers read the capabilities, never
 *   probe for a method.
 * - **Lifecycle**: the first call opens the engine; after `close()` every call throws
 *   {@link EngineClosedError}. Driver failures are {@link EngineError}s naming the
 *   operation, with the driver's error as `cause`.
 *
 * {@link BaseCheckpointer} implements the rules that need no storage (validation,
 * lease decisions, fencing errors, the lifecycle) once; engines extend it.
 *
 * @example A minimal engine test: `checkpointerSuite({ name: 'mine', create: () => myEngine() })` from `cairn/testing`.
 */
import type {
  DeleteThreadOptions,
  DeleteThreadResult,
  LeaseOwner,
  SignalConsume,
  SignalQuery,
  SignalSend,
  StoredSignal,
  ThreadKind,
  ThreadLease,
  ThreadQuery,
  ThreadRecord,
  ThreadStatus,
  ThreadError,
} from './threads.js';
import type { NewLedgerEntry } from './ledger.js';

/** A position as stored: fixed columns the engine indexes, plus an opaque canonical body. */
export interface StoredPosition {
  /** Checkpoint namespace: '' for the thread's root graph, `parent|node:task` for child runs. */
  ns: string;
  seq: number;
  parent: number | null;
  /** First seq of the linear run of positions (each the child of the previous) this one belongs to. */
  segment: number;
  /** Superstep number along this branch (0 for the input position). */
  step: number;
  schemaVersion: number;
  createdAt: number;
  /** Canonical JSON of the position body (changes, next nodes, effects...). Opaque to engines. */
  body: string;
  /** Hex chain hash: H(parent hash ‖ header ‖ body ‖ items). */
  hash: string;
}

/** One item appended to an append-reducer field by a position. Stored once, never copied. */
export interface PositionItem {
  field: string;
  /** Index among the items this position appended to this field (0-based). */
  index: number;
  /** Canonical tagged JSON of the item. */
  text: string;
}

/** The order of a position's items wherever it matters (the chain hash, storage): by field name, then index. */
export function comparePositionItems(a: PositionItem, b: PositionItem): number {
  return a.field < b.field ? -1 : a.field > b.field ? 1 : a.index - b.index;
}

/** One item with the seq of the position that appended it (see {@link Checkpointer.getRangeItems}). */
export interface RangeItem extends PositionItem {
  seq: number;
}

/** A namespace's head as the thread record anchors it: the newest position's seq and its chain hash. */
export interface HeadAnchor {
  seq: number;
  /** Hex chain hash of the position at `seq`. */
  hash: string;
  /**
   * Set once the namespace was compacted ({@link Checkpointer.compactThread}): the oldest
   * position kept, by seq and chain hash. Reads start there (its snapshot is the base);
   * a position below it, or one not descending from it, is gone.
   */
  base?: CompactionAnchor;
}

/** The oldest position a compacted namespace keeps: the seq and chain hash a read and `verify` start from. */
export interface CompactionAnchor {
  seq: number;
  /** Hex chain hash of the position at `seq`. */
  hash: string;
}

/**
 * What {@link Checkpointer.compactThread} removes from one namespace, and the base it keeps.
 * The runtime builds it (`compactNamespace` in `cairn/inspect`); engines store and delete rows.
 */
export interface CompactionRequest {
  ns: string;
  /** The oldest position kept; recorded as the namespace's compaction anchor. Must be stored with this hash. */
  base: CompactionAnchor;
  /** The sealed snapshot stored at `base.seq` (replacing any): it holds inline every item the kept positions need from below the base. */
  snapshot: string;
  /** Kept snapshots above the base, rewritten to take those items from the base's snapshot (each replaces the stored one). */
  snapshots?: { seq: number; text: string }[];
  /** Positions above the base that do not descend from it (branches forked below it): removed too. */
  drop?: number[];
  /** Namespaces of child runs started by removed positions: removed whole (positions, items, snapshots, pending writes, anchor, ledger entries). */
  dropNamespaces?: string[];
  /** Also remove the ledger entries of the removed steps (entries of `ns` keyed by a seq below the base or in `drop`). */
  ledger?: boolean;
}

/** The rows {@link Checkpointer.compactThread} removed. */
export interface CompactionResult {
  positions: number;
  items: number;
  snapshots: number;
  pendingWrites: number;
  ledgerEntries: number;
  /** Child namespaces removed whole. */
  namespaces: number;
}

/** An inclusive range of seqs; a position's ancestors are a few such ranges. */
export interface SeqRange {
  from: number;
  to: number;
}

/** Everything one step boundary writes, in one transaction. */
export interface StepCommit {
  position: StoredPosition;
  items: PositionItem[];
  /** Canonical snapshot text to store at `position.seq`, when the snapshot policy asks for one. */
  snapshot?: string;
  /** The thread's status once this commit lands. */
  status: ThreadStatus;
  /**
   * With status `waiting`: when the thread becomes due (ms since the epoch; null or
   * absent: only a signal wakes it), written in the commit's transaction. A commit of
   * any other status clears it. Only a root-namespace commit sets the thread's status
   * and wake time.
   */
  wakeAt?: number | null;
  /**
   * With status `waiting`: the highest signal id the wait looked at (0: none). When the
   * thread holds a newer signal at commit time, the commit makes it due at once
   * (`wakeAt = now`): a signal sent between the wait's look and this commit (while the
   * thread was still `running`, so sending did not wake it) is not missed.
   */
  signalsSeen?: number;
  /** The namespace's head when the step started (null before its first position); `position.seq` is that + 1. */
  expectedHead: number | null;
  /**
   * Effects whose intent and outcome are written with the step (`ctx.effect(..., { commit: 'with-step' })`),
   * in the commit's transaction: each is stored as a done `effect` entry of the ledger. Where the thread
   * already has an entry of that key: an intent gets this outcome (done), a done entry is kept as it is
   * (the first observation stands, as Ledger.writeOutcome does).
   */
  effects?: CommittedEffect[];
  /**
   * Packs to store with the step, in its transaction, where `capabilities.itemPacks`
   * (ignored elsewhere): each holds a field's items over a span of positions this commit
   * completes (see {@link ItemPack}).
   */
  packs?: ItemPack[];
}

/**
 * Every item one field was appended by the positions `fromSeq`..`toSeq` of a namespace,
 * kept together as one opaque text beside the item rows: a second copy, which a load may
 * read instead of the rows (an encrypted engine seals its packs, so that a load opens
 * a few packs, not thousands of rows). The rows stay the record; a pack is dropped with
 * any position it spans.
 */
export interface ItemPack {
  field: string;
  /** The first and the last seq of the positions whose items of `field` it holds: all of them, of every position in between. */
  fromSeq: number;
  toSeq: number;
  /** How many items it holds (at least one). */
  count: number;
  text: string;
}

/**
 * An effect a {@link StepCommit} writes to the ledger, intent and outcome at once: an
 * entry of kind `effect` of the lease's thread, with its outcome (canonical tagged
 * JSON) and the time it was observed. Keys are distinct within one commit.
 */
export type CommittedEffect = NewLedgerEntry & { outcome: string; completedAt: number };

/** The finished work of one task in a superstep that has not committed yet. */
export interface PendingWrite {
  ns: string;
  /** Seq of the position the superstep started from. */
  baseSeq: number;
  /** Task id: `node:index`. */
  task: string;
  /** Canonical JSON of the task's writes. */
  body: string;
}

/** A failure of one attempt, kept on the thread. */
export interface AttemptFailure extends ThreadError {
  ns: string;
}

/** What {@link Checkpointer.acquireThread} is asked: who takes the lease, for how long, and the thread to create when missing. */
export interface AcquireRequest {
  owner: LeaseOwner;
  leaseMs: number;
  /**
   * Create the thread with these attributes when it does not exist; without it a missing
   * thread is ThreadNotFoundError. `createdAt` / `updatedAt` (ms since the epoch) record
   * times other than now: an import keeps the exported thread's (`updatedAt` defaults to
   * `createdAt`). Both are ignored when the thread exists.
   */
  create?: { kind: ThreadKind; tenant: string | null; metadata: Record<string, unknown>; createdAt?: number; updatedAt?: number };
  /**
   * Take the lease even from a live holder, fencing it: the grant increases `epoch`
   * as every grant does, so the holder's next fenced write (a commit, a renewal, a
   * thread update) throws LeaseLostError and writes nothing. For a person stopping a
   * run (`cancelThread`), never for a run's own start.
   */
  takeover?: boolean;
}

/** What a worker asks for when it looks for work. */
export interface ClaimRequest {
  owner: LeaseOwner;
  leaseMs: number;
  /** Most threads to claim at once. */
  limit: number;
  /** Only threads of this graph (`metadata.graph`, set by `compile({ name })`). */
  graph?: string;
  /**
   * Lease holders the caller found dead (from {@link Checkpointer.leaseHolders}): their
   * threads are claimable at once, as if their leases had expired, but only once the
   * engine has judged each one dead itself by the rule {@link Checkpointer.acquireThread}
   * applies (a process of this host that no longer exists; never this process, never
   * another host). A named holder that is alive is ignored, so naming one can never take
   * a thread from a live process. Engines that judge every holder anyway (memory,
   * SQLite) need not be told.
   */
  deadHolders?: LeaseOwner[];
}

/** Which lease holders {@link Checkpointer.leaseHolders} lists. */
export interface LeaseHolderQuery {
  /** Holders on this host only (the liveness of a process can be checked only on its own machine). */
  host: string;
  /** Only holders of threads of this graph. */
  graph?: string;
}

/** Changes to a held thread's record. */
export interface ThreadPatch {
  /** The new status; any status but `waiting` also clears {@link ThreadRecord.wakeAt}. */
  status?: ThreadStatus;
  /**
   * When the `waiting` thread becomes due, ms since the epoch; null: only a signal
   * wakes it. Absent: kept as it is. Whatever the patch says, a thread whose status
   * after the patch is not `waiting` has no wake time.
   */
  wakeAt?: number | null;
  /** As {@link StepCommit.signalsSeen}: with a `waiting` status, a signal newer than this id makes the thread due at once. */
  signalsSeen?: number;
  lastError?: ThreadError | null;
  /** Count this many more attempts. */
  attempts?: number;
  /** A failure to keep in the thread's attempt history. */
  failure?: AttemptFailure;
  /**
   * Record this (ms since the epoch) as the thread's update time instead of now: an
   * import ends with the exported thread's. The record's `updatedAt` is never earlier
   * than its head position's time.
   */
  updatedAt?: number;
}

/**
 * What an engine's thread log supports beyond the required methods. Each flag says
 * whether one optional method works; the conformance suite runs that method's tests
 * only where the flag is set, and checks that an unset one's method does not work.
 *
 * @example
 * ```ts
 * if (cp.capabilities.wakeUps) unsubscribe = await cp.subscribeRunnable!(wake);
 * ```
 */
export interface CheckpointerCapabilities {
  /** {@link Checkpointer.claimThreads}: workers can be handed runnable threads. */
  claims: boolean;
  /** {@link Checkpointer.subscribeRunnable}: workers are told when a thread may have become runnable. */
  wakeUps: boolean;
  /** {@link Checkpointer.nextLeaseExpiry}: workers can sleep until the earliest time a thread may become claimable (a lease expiry, a wake time). */
  leaseExpiry: boolean;
  /** {@link Checkpointer.leaseHolders}: workers can watch the processes holding leases on their host, and take over a dead one's threads at once. */
  leaseHolders: boolean;
  /**
   * {@link Checkpointer.getItemPacks}, and {@link StepCommit.packs} stored: an engine an
   * encrypted one can keep sealed packs in. Absent reads as false (engines written before it).
   */
  itemPacks?: boolean;
}

/** The thread log contract. See the module documentation for the rules every method keeps. */
export interface Checkpointer {
  /** Engine name used in messages, e.g. `sqlite`. */
  readonly engine: string;
  /** Which optional methods work (see {@link CheckpointerCapabilities}). */
  readonly capabilities: CheckpointerCapabilities;

  /** The thread record, or null. Never throws for a missing thread. */
  getThread(threadId: string): Promise<ThreadRecord | null>;
  /**
   * Threads matching every filter of the query, in the query's order (ascending id by
   * default), after `query.after`, at most `query.limit`. Filter values are query
   * parameters, never spliced into SQL. Throws InvalidOptionError for a malformed query
   * (an unknown status or kind, a non-scalar metadata value, a negative limit...).
   */
  listThreads(query?: ThreadQuery): Promise<ThreadRecord[]>;
  /** Failures recorded in this thread, oldest first. */
  listFailures(threadId: string): Promise<AttemptFailure[]>;

  /**
   * Takes the thread's lease for `request.owner`, creating the thread if asked.
   * Exactly one holder at a time: when a live holder's lease has not expired,
   * throws {@link ThreadBusyError}. A holder is dead when its lease expired or,
   * on the same host, its process no longer exists. Each grant increases `epoch`.
   * With `request.takeover` a live holder is fenced instead of refused. A request whose
   * `owner.runId` is the holder's own is granted (again): an acquire retried after its
   * answer was lost (a dropped connection, a timeout) gets the thread it already took.
   */
  acquireThread(threadId: string, request: AcquireRequest): Promise<ThreadLease>;
  /** Extends the lease. Throws {@link LeaseLostError} if it was taken over. */
  renewLease(lease: ThreadLease, leaseMs: number): Promise<ThreadLease>;
  /** Gives the lease up. A lease already lost is not an error (nothing to release). */
  releaseThread(lease: ThreadLease): Promise<void>;
  /** Updates the held thread's record (fenced). Returns the new record. */
  updateThread(lease: ThreadLease, patch: ThreadPatch): Promise<ThreadRecord>;

  /**
   * Commits one step boundary atomically (fenced, head-checked): the position, its
   * items, its snapshot, the namespace's head anchor (`position.seq` and
   * `position.hash`), the thread status, the removal of the folded-in pending
   * writes and the ledger entries of its effects. See {@link StepCommit}. InvalidOptionError,
   * and nothing written, for an effect that is not a storable `effect` entry of the lease's thread.
   */
  commitStep(lease: ThreadLease, commit: StepCommit): Promise<void>;
  /**
   * The namespace's anchored head: the seq and hash the last {@link commitStep} of
   * the namespace wrote, or null when it has none (a missing thread included). It
   * is what a reader compares the newest stored position with, so a truncated log
   * is an error, not an older head.
   *
   * @example
   * ```ts
   * const head = await cp.getHead('cust_42', '');   // { seq: 3, hash: '9f2c…' }
   * ```
   */
  getHead(threadId: string, ns: string): Promise<HeadAnchor | null>;
  /**
   * Stores, or replaces, the snapshot of an existing position (fenced). Snapshots are
   * derived data outside the chain; `cairn migrate --rewrite-snapshots` writes fresh
   * ones at the current schema version with this. PositionNotFoundError if the
   * position does not exist.
   */
  putSnapshot(lease: ThreadLease, snapshot: { ns: string; seq: number; text: string }): Promise<void>;
  /** Durably keeps one finished task's writes until its superstep commits (fenced). Idempotent per task. */
  putPendingWrite(lease: ThreadLease, write: PendingWrite): Promise<void>;
  /** Pending writes of the superstep that starts from `baseSeq`, in task order. */
  getPendingWrites(threadId: string, ns: string, baseSeq: number): Promise<PendingWrite[]>;
  /**
   * Pending writes of every superstep that starts from a seq in `range` (inclusive), by
   * base seq then task: a history's writes in one read instead of one per position.
   * Optional for checkpointers written before it (callers then read position by position);
   * every engine of cairn's has it.
   */
  getPendingWritesIn?(threadId: string, ns: string, range: SeqRange): Promise<PendingWrite[]>;

  /** One position, or null. */
  getPosition(threadId: string, ns: string, seq: number): Promise<StoredPosition | null>;
  /** Positions with `from <= seq <= to`, ascending by seq (no ancestry check: pass ranges from one branch). */
  getPositions(threadId: string, ns: string, range: SeqRange): Promise<StoredPosition[]>;
  /**
   * The namespaces of the thread that hold at least one position or a head anchor, each once, ascending
   * in code point order (the byte order of their UTF-8, as `listThreads` orders ids):
   * `''` (the root graph) first when it has positions, then child runs such as
   * `research:0@4` and `research:0@4|deep:1@2`. `[]` for a missing thread. Inspection
   * tools (verify, export, GC, migrate checks) walk every namespace through this, since
   * each one is an independent hash chain.
   *
   * @example
   * ```ts
   * for (const ns of await cp.listNamespaces('cust_42')) console.log(ns || '(root)');
   * ```
   */
  listNamespaces(threadId: string): Promise<string[]>;
  /** Positions newest first, for history listings. `beforeSeq` pages backwards. */
  listPositions(threadId: string, ns: string, page?: { beforeSeq?: number; limit?: number }): Promise<StoredPosition[]>;
  /** The snapshot with the highest seq inside `ranges`, or null. */
  getSnapshot(threadId: string, ns: string, ranges: SeqRange[]): Promise<{ seq: number; text: string } | null>;
  /** Every snapshot with `from <= seq <= to`, ascending by seq (`verify` checks each). */
  getSnapshots(threadId: string, ns: string, range: SeqRange): Promise<{ seq: number; text: string }[]>;
  /**
   * The texts of the items appended to `field` by positions inside `ranges`, ordered
   * by (seq, index). One query: this is the bulk of loading a long thread.
   */
  getItems(threadId: string, ns: string, field: string, ranges: SeqRange[]): Promise<string[]>;
  /**
   * The items one position appended to `fields` (the fields its body says it appended
   * to), in (field order given, index) order. Used to verify the chain.
   */
  getPositionItems(threadId: string, ns: string, seq: number, fields: readonly string[]): Promise<PositionItem[]>;
  /**
   * Every item of every position with `from <= seq <= to`, whatever its field, ordered
   * by (seq, field, index): one query for the chain checks of many positions (a load's
   * positions after its snapshot, a verify batch).
   */
  getRangeItems(threadId: string, ns: string, range: SeqRange): Promise<RangeItem[]>;
  /**
   * Optional, where `capabilities.itemPacks`: the packs of `field` lying wholly inside one
   * of `ranges`, ordered by `fromSeq`.
   */
  getItemPacks?(threadId: string, ns: string, field: string, ranges: SeqRange[]): Promise<ItemPack[]>;

  /**
   * Optional, where `capabilities.claims` (workers): claims up to `limit` runnable
   * threads, each under a fresh lease (epoch + 1), oldest update first. Runnable: no
   * live lease (none, an expired one, or one whose holder is dead: named in
   * {@link ClaimRequest.deadHolders} and judged dead, or, where the engine judges every
   * holder, as {@link acquireThread} judges), and status `running`, or status `waiting`
   * with a {@link ThreadRecord.wakeAt} that is due (`wakeAt <= now`). A waiting thread
   * not yet due, or waiting for a signal only (`wakeAt` null), is never claimed. The
   * lease's `thread` shows the status as it was (`waiting`: the runtime decides what
   * the wait does). Concurrent claimers never get the same thread (PostgreSQL:
   * `FOR UPDATE SKIP LOCKED`).
   */
  claimThreads?(request: ClaimRequest): Promise<ThreadLease[]>;
  /**
   * Optional, where `capabilities.wakeUps` (workers): calls `listener` with a thread id
   * whenever a thread may have become runnable (a lease released with work left: a
   * submitted run, an answered interrupt, a worker shutting down; a signal sent to it). Resolves to an
   * unsubscribe function. A listening connection the server drops is replaced in the
   * background; until then wake-ups are late, never wrong.
   */
  subscribeRunnable?(listener: (threadId: string) => void): Promise<() => Promise<void>>;
  /**
   * Optional, where `capabilities.leaseExpiry` (workers): the earliest time (ms since
   * the epoch) a thread may become claimable (of `graph`, when given), or null when
   * none will without being told: the earlier of the earliest expiry of a lease held on
   * a `running` thread and the earliest {@link ThreadRecord.wakeAt} of a `waiting`
   * thread (already past when one is due). A worker sleeps until then.
   */
  nextLeaseExpiry?(graph?: string): Promise<number | null>;
  /**
   * Optional, where `capabilities.leaseHolders` (workers): the owners of the unexpired
   * leases on `running` and `waiting` threads held by processes on `query.host`, each
   * (run id, pid) once, in no particular order. A worker watches their processes and,
   * when one dies, names it in {@link ClaimRequest.deadHolders}: a SIGKILLed worker's
   * threads are taken over as soon as its death is seen, not when its leases expire.
   * A snapshot: a holder may have released, renewed or died since.
   *
   * @example
   * ```ts
   * const holders = await cp.leaseHolders!({ host: hostname() });   // [{ runId, pid: 4242, host }]
   * ```
   */
  leaseHolders?(query: LeaseHolderQuery): Promise<LeaseOwner[]>;

  /**
   * Queues a signal for the thread: durable when the promise resolves (sent before the
   * wait that takes it, or while no process runs, it is not lost). Not fenced: any
   * process may send, holding no lease. Ids count 1, 2, 3… per thread in send order.
   * In the same transaction, a `waiting` thread is made due
   * (`wakeAt = min(wakeAt ?? +inf, now)`) so that a worker claims it; whether the signal
   * is the one its wait takes is the runtime's to decide (it writes a later `wakeAt`
   * back when not). Engines with `capabilities.wakeUps` tell their listeners too.
   * ThreadNotFoundError for a missing thread; InvalidOptionError for an empty name,
   * one over 256 characters or with control characters, a payload that is not a string
   * or is over `MAX_SIGNAL_PAYLOAD_BYTES`, or a `sentAt` that is not a finite number.
   *
   * @example
   * ```ts
   * const { id } = await cp.sendSignal('order_7', { name: 'approved', payload: encode({ by: 'ana' }) });
   * ```
   */
  sendSignal(threadId: string, signal: SignalSend): Promise<StoredSignal>;
  /**
   * The thread's signals matching every filter of `query`, oldest (lowest id) first;
   * `[]` for a missing thread. Never another thread's: ids are matched exactly.
   */
  listSignals(threadId: string, query?: SignalQuery): Promise<StoredSignal[]>;
  /**
   * Marks signal `request.id` of the held thread consumed by `request.by` (fenced:
   * LeaseLostError, and nothing changed, when the lease no longer holds the thread) and
   * returns it. Idempotent: one already consumed by the same `by` is returned as it is.
   * SignalConsumedError (nothing changed) when another key consumed it;
   * SignalNotFoundError when the thread has no such signal.
   */
  consumeSignal(lease: ThreadLease, request: SignalConsume): Promise<StoredSignal>;

  /**
   * Deletes a thread and everything it owns, in one transaction: its record, every
   * position, item and snapshot of every namespace (child runs included), its pending
   * writes, its failures, its signals, its ledger entries (effects and recorded outputs) and its
   * artifact pins (store items under `['cairn', 'artifact-pins']` that name the thread:
   * see `pinArtifact(..., { thread })`). The artifacts themselves are left to GC. Other
   * threads' rows are never touched.
   *
   * Refuses, with {@link ThreadBusyError} and nothing deleted, a thread whose holder is
   * live (by the same rule as {@link acquireThread}); a thread whose lease expired can
   * be deleted, and a late write under that lease then finds no thread (it fails with
   * LeaseLostError or ThreadNotFoundError and writes nothing). A missing thread, or one
   * whose status is not in `ifStatus`, is reported in the result, not thrown.
   *
   * @example
   * ```ts
   * const result = await cp.deleteThread('cust_42', { ifStatus: 'completed' });
   * if (result.deleted) console.log(`removed ${result.removed.positions} positions`);
   * ```
   */
  deleteThread(threadId: string, options?: DeleteThreadOptions): Promise<DeleteThreadResult>;

  /**
   * Compacts one namespace of the held thread, in one transaction (fenced: LeaseLostError,
   * nothing changed, when the lease no longer holds it): removes every position below
   * `request.base` and those in `request.drop`, with their items, snapshots and pending
   * writes (and, with `request.ledger`, their steps' ledger entries), removes the child
   * namespaces in `request.dropNamespaces` whole, stores the request's snapshots, and
   * records `request.base` as the namespace's compaction anchor ({@link HeadAnchor.base}).
   * The head anchor is left as it is. PositionNotFoundError when the base is not a stored
   * position with that hash; InvalidOptionError when it is above the head, below an
   * earlier base, or `drop` names a seq at or below it. Where `compactThread` is absent
   * (a third-party engine written before it), retention skips compaction.
   *
   * @example
   * ```ts
   * const result = await cp.compactThread!(lease, { ns: '', base: { seq: 900, hash }, snapshot, ledger: true });
   * ```
   */
  compactThread?(lease: ThreadLease, request: CompactionRequest): Promise<CompactionResult>;

  /** Releases connections. Further calls throw {@link EngineClosedError}. */
  close(): Promise<void>;
}
