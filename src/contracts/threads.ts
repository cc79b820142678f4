/**
 * @module contracts/threads
 * The thread record: identity and continuity of a run. Shared by the
 * {@link Checkpointer} contract and everything that lists or inspects threads.
 */

/** What a thread is for. Informational; the runtime treats every kind alike. */
export type ThreadKind = 'conversation' | 'task' | 'session' | 'workflow';

/**
 * - `running`: a run is under way, or one stopped mid-way (crash) and will resume on the next `run()`.
 * - `interrupted`: paused waiting for a person: `app.resume({ thread, answer | input })`.
 * - `completed`: the last run reached END.
 * - `failed`: a node exhausted its retries; `run()` again starts a new attempt.
 * - `needs_attention`: an at-most-once effect's outcome is unknown; a person must decide.
 * - `waiting`: a node waits for a time (`ctx.sleep`) or a signal (`ctx.waitFor`);
 *   {@link ThreadRecord.wakeAt} says when it is due (null: only a signal wakes it).
 *   Workers claim it once due; a signal sent to it makes it due at once.
 */
export type ThreadStatus = 'running' | 'interrupted' | 'completed' | 'failed' | 'needs_attention' | 'waiting';

/** A thread as stored: identity, status, head, attempts, the holder of its lease, metadata and times. */
export interface ThreadRecord {
  id: string;
  kind: ThreadKind;
  status: ThreadStatus;
  /**
   * Seq of the head position of the root namespace, or null before the first commit.
   * The head is always the highest seq: every new position (a step, an input, a fork)
   * takes seq = head + 1 and becomes the head.
   */
  head: number | null;
  /** Attempts made in this thread: every run start and every node retry counts one. */
  attempts: number;
  tenant: string | null;
  metadata: Record<string, unknown>;
  /**
   * Why the last run stopped on an error: set with status `failed` or `needs_attention`,
   * and also, with the status left as it was (`running`, say), when the run stopped for
   * a reason that leaves the thread resumable (its run cancelled by the caller's signal,
   * the database out of reach). Cleared when the next attempt starts. Null otherwise.
   */
  lastError: ThreadError | null;
  /**
   * When a `waiting` thread becomes due (ms since the epoch): workers claim it from
   * then on. Null when the thread is not waiting, or waits for a signal only. Written
   * by the commit or thread update that sets the status; any other status clears it.
   */
  wakeAt: number | null;
  createdAt: number;
  updatedAt: number;
}

/** A failure kept on the thread: a message and a code, never a live Error. */
export interface ThreadError {
  code: string;
  message: string;
  node?: string;
  seq?: number;
  attempt?: number;
  at: number;
}

/** Who holds a thread's lease. `host` + `pid` let a same-host successor see a dead holder at once. */
export interface LeaseOwner {
  runId: string;
  pid: number;
  host: string;
}

/** Proof that a run holds a thread. Every write under it is fenced by `runId` + `epoch`. */
export interface ThreadLease {
  threadId: string;
  runId: string;
  /** Fencing token: increases on every acquisition of the thread. */
  epoch: number;
  expiresAt: number;
  /** The thread as it was when the lease was granted. */
  thread: ThreadRecord;
}

/** A time window in ms since the epoch: `from` inclusive, `to` exclusive; either may be left open. */
export interface TimeRange {
  from?: number;
  to?: number;
}

/**
 * A metadata filter: top-level keys of `metadata` and the value each must equal.
 * Values are scalars (a string, a finite number, a boolean, or null for a key
 * whose value is null; a missing key never matches). Keys and values are sent as
 * query parameters, never spliced into SQL.
 */
export type MetadataFilter = Record<string, string | number | boolean | null>;

/**
 * Filters and paging for {@link Checkpointer.listThreads}. Every filter given must
 * hold (AND); a list of values matches any of them (OR).
 *
 * @example
 * ```ts
 * // Failed support conversations of tenant acme, updated in the last day, 50 at a time.
 * let page = await cp.listThreads({ status: ['failed', 'needs_attention'], kind: 'conversation', tenant: 'acme',
 *   metadata: { queue: 'support' }, updatedAt: { from: Date.now() - 86_400_000 }, limit: 50 });
 * page = await cp.listThreads({ ...sameFilters, after: page.at(-1)!.id });
 * ```
 */
export interface ThreadQuery {
  status?: ThreadStatus | readonly ThreadStatus[];
  kind?: ThreadKind | readonly ThreadKind[];
  /** The tenant, or null for threads without one. */
  tenant?: string | null;
  metadata?: MetadataFilter;
  /**
   * Only threads whose id starts with this text (case-sensitive; `''` matches every
   * thread). Run as a range of ids (`id >= prefix AND id < the next prefix` in code
   * point order), so the id index serves it. May not contain U+0000 or a lone surrogate.
   */
  idPrefix?: string;
  createdAt?: TimeRange;
  /** On {@link ThreadRecord.updatedAt} (which a step commit advances). */
  updatedAt?: TimeRange;
  /**
   * `id` (default): ascending id, a stable walk of every thread however they change.
   * `updatedAt`: most recently updated first, ties by ascending id; a thread that is
   * updated while you page moves to the front, so it may be missed or seen twice.
   */
  order?: 'id' | 'updatedAt';
  /**
   * Paging: continue after this thread, the last of the previous page. Order `id`
   * takes its id (a string) or the record; order `updatedAt` needs the record (its
   * `id` and `updatedAt`).
   */
  after?: string | Pick<ThreadRecord, 'id' | 'updatedAt'>;
  /** At most this many threads (a non-negative integer). Default: all. */
  limit?: number;
}

/** Options of {@link Checkpointer.deleteThread}. */
export interface DeleteThreadOptions {
  /** Delete only if the thread's status is this one (or one of these); otherwise nothing is deleted. */
  ifStatus?: ThreadStatus | readonly ThreadStatus[];
  /**
   * The caller holds the thread under this lease: its own live hold does not refuse
   * the delete (a run removing a thread it created and could not start). Fenced:
   * LeaseLostError, and nothing deleted, when the lease no longer holds the thread.
   */
  lease?: ThreadLease;
}

/** How many rows of each kind a thread's deletion removed (child namespaces included). */
export interface DeletedThreadRows {
  positions: number;
  items: number;
  snapshots: number;
  pendingWrites: number;
  failures: number;
  ledgerEntries: number;
  /** Artifact pins the thread held (the artifacts themselves are left to GC). */
  pins: number;
  /** Signals queued for the thread, pending and consumed. */
  signals: number;
}

/**
 * A signal as stored: a named payload queued for a thread, consumed at most once.
 * Signals are kept after they are consumed (who took it, and when), until the thread
 * is deleted.
 *
 * @example
 * ```ts
 * const signal = await cp.sendSignal('order_7', { name: 'approved', payload: encode({ by: 'ana' }) });
 * // { threadId: 'order_7', id: 1, name: 'approved', payload: '{"by":"ana"}', sentAt: 1700000000000, consumedBy: null, consumedAt: null }
 * ```
 */
export interface StoredSignal {
  threadId: string;
  /** Per thread: 1, 2, 3… in send order. Never reused while the thread exists. */
  id: number;
  /** What the signal is called; a wait names the signals it takes. */
  name: string;
  /** Codec text of the payload (the caller encodes it; engines never interpret it). */
  payload: string;
  /** When it was sent (ms since the epoch). */
  sentAt: number;
  /** The key of the wait that consumed it, or null while it is pending. */
  consumedBy: string | null;
  /** When it was consumed (ms since the epoch), or null while it is pending. */
  consumedAt: number | null;
}

/** What {@link Checkpointer.sendSignal} is given. */
export interface SignalSend {
  /** Non-empty, at most 256 characters (`MAX_SIGNAL_NAME_LENGTH`), no control characters. */
  name: string;
  /** Codec text of the payload: at most 256 KiB of UTF-8 (`MAX_SIGNAL_PAYLOAD_BYTES`, the size limit of a state field). */
  payload: string;
  /** The time to record as sent, instead of now: an import keeps the exported one. */
  sentAt?: number;
}

/** Filters of {@link Checkpointer.listSignals}; every filter given must hold. */
export interface SignalQuery {
  /** Only signals of this name. */
  name?: string;
  /** true: only unconsumed signals; false: only consumed ones. Default: both. */
  pending?: boolean;
  /** Only signals consumed by this wait's key. */
  consumedBy?: string;
}

/** What {@link Checkpointer.consumeSignal} is asked: which signal, and the key of the wait that takes it. */
export interface SignalConsume {
  id: number;
  /** The consuming wait's key: consuming again with the same key is a no-op. */
  by: string;
  /** The time to record as consumed, instead of now: an import keeps the exported one. */
  consumedAt?: number;
}

/** What {@link Checkpointer.deleteThread} did. */
export type DeleteThreadResult =
  | { deleted: true; threadId: string; removed: DeletedThreadRows }
  /** No such thread (already deleted, or never created): nothing to do. */
  | { deleted: false; threadId: string; reason: 'missing' }
  /** The thread's status is not in `ifStatus`: it was left as it is. */
  | { deleted: false; threadId: string; reason: 'status'; status: ThreadStatus };
