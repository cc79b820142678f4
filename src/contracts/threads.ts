/**
 * @module contracts/threads
 * The thread record: identity and continuity of a run. Shared by the
 * {@link Checkpointer} contract and everything that lists or inspects threads.
 */

/** What a thread is for. Informational; the runtime treats every kind alike. */
export type ThreadKind = 'conversation' | 'task' | 'session' | 'workflow';

/**
 * - `running`: a run is under way, or one stopped mid-way (crash) and will resume on the next `run()`.
 * - `interrupted`: paused at a step boundary waiting for `resume(thread, input)`.
 * - `completed`: the last run reached END.
 * - `failed`: a node exhausted its retries; `run()` again starts a new attempt.
 * - `needs_attention`: an at-most-once effect's outcome is unknown; a person must decide.
 */
export type ThreadStatus = 'running' | 'interrupted' | 'completed' | 'failed' | 'needs_attention';

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
  /** The last failure, when status is `failed` or `needs_attention`. */
  lastError: ThreadError | null;
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

/** Filters for listing threads. */
export interface ThreadQuery {
  status?: ThreadStatus;
  kind?: ThreadKind;
  tenant?: string;
  limit?: number;
  /** Return threads whose id sorts after this one (paging). */
  after?: string;
}
