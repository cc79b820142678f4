/**
 * @module defaults
 * Every default cairn applies, in one place: what a run, a worker, an engine and the
 * state do when an option is left out. Each option's documentation names its default;
 * the value lives here.
 */

/** Lease length of a run (`compile({ leaseMs })`), ms; a run renews it while it works. */
export const LEASE_MS = 30_000;

/** Longest wait for a busy thread under `onBusy: 'wait'`, ms. */
export const BUSY_WAIT_MS = 30_000;

/** A snapshot at least every this many positions (`compile({ snapshotEvery })`). */
export const SNAPSHOT_EVERY = 50;

/** Most supersteps one run may take (`compile({ recursionLimit })`). */
export const RECURSION_LIMIT = 100;

/** Most supersteps of a child run whose graph was given as a builder (a compiled app keeps its own). */
export const CHILD_RECURSION_LIMIT = 100;

/** How many times a step runs again because its validateAtCommit reads went stale, before StaleReadLimitError. */
export const MAX_STALE_RERUNS = 8;

/** Default limit on one field's encoded size, bytes: big payloads belong in artifacts. */
export const MAX_FIELD_BYTES = 256 * 1024;

/** A node's retry policy when neither the node nor the graph sets one (cairn's own errors are not retried). */
export const RETRY = {
  maxAttempts: 3,
  initialDelayMs: 200,
  backoff: 2,
  maxDelayMs: 10_000,
} as const;

/** Threads a worker runs at once. */
export const WORKER_CONCURRENCY = 4;

/** Longest sleep of an idle worker without any wake-up, ms. */
export const WORKER_POLL_MS = 5_000;

/** Pause of a worker before claiming again after a failed claim, ms. */
export const WORKER_CLAIM_RETRY_MS = 1_000;

/** How long a SQLite writer waits for another connection's write lock, ms. */
export const SQLITE_BUSY_TIMEOUT_MS = 5_000;

/** How much of a SQLite file is read through a memory map, bytes. */
export const SQLITE_MMAP_BYTES = 256 * 1024 * 1024;

/** Artifacts written or reused this recently are never collected, ms (24 hours). */
export const GC_GRACE_MS = 24 * 60 * 60 * 1000;
