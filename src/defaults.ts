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

/** Limit on a signal's encoded payload, bytes (UTF-8): the same as a state field's, since a wait hands it to state. */
export const MAX_SIGNAL_PAYLOAD_BYTES = MAX_FIELD_BYTES;

/** Longest signal name, characters. */
export const MAX_SIGNAL_NAME_LENGTH = 256;

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

/**
 * The SQLite drivers, in the order the default choice tries them: better-sqlite3
 * (native, fastest, any Node ≥ 20), then Node's built-in node:sqlite (22.13+).
 */
export const SQLITE_DRIVERS = ['better-sqlite3', 'node:sqlite'] as const;

/** Environment variable that forces a SQLite driver (`better-sqlite3` or `node:sqlite`) where no `driver` option is given: for tests and CI. */
export const SQLITE_DRIVER_ENV = 'CAIRN_SQLITE_DRIVER';

/** How much of a SQLite file is read through a memory map, bytes. */
export const SQLITE_MMAP_BYTES = 256 * 1024 * 1024;

/** Connections of a PostgreSQL pool the engine creates from a URL (`postgres(url, { max })`). */
export const POSTGRES_POOL_MAX = 10;

/** Pool size of a PostgreSQL database a CLI command opens (`--max-connections`); `cairn worker` uses its concurrency + 2. */
export const CLI_POSTGRES_POOL_MAX = 4;

/** Wait before a PostgreSQL LISTEN connection is tried again: after a failed connect, and after a lost or failed LISTEN, ms. */
export const POSTGRES_LISTEN_RETRY_MS = { connect: 1_000, listen: 200 } as const;

/** Part size of an S3 multipart upload, bytes (`s3Artifacts({ partSize })`). */
export const S3_PART_BYTES = 8 * 1024 * 1024;

/** How long a presigned S3 URL works (`presignGet(ref, { expiresInMs })`), ms. */
export const S3_PRESIGN_EXPIRES_MS = 15 * 60 * 1000;

/** Attempts of a `store.update()` whose compare-and-set keeps losing, before UpdateConflictError (`{ maxRetries }`). */
export const STORE_UPDATE_RETRIES = 64;

/** Temporary files of unfinished fs artifact writes older than this are swept (`sweepTempFiles({ olderThanMs })`), ms. */
export const FS_TEMP_FILE_AGE_MS = 60 * 60 * 1000;

/** Artifacts a page of `artifacts.list()` holds when no limit is given. */
export const ARTIFACT_PAGE_LIMIT = 1000;

/** Artifacts written or reused this recently are never collected, ms (24 hours). */
export const GC_GRACE_MS = 24 * 60 * 60 * 1000;

/** The address `cairn inspect` binds when no `--host` is given: this machine only. */
export const INSPECTOR_HOST = '127.0.0.1';

/** The port `cairn inspect` listens on when no `--port` is given: 0, a free one the system picks. */
export const INSPECTOR_PORT = 0;

/** Threads a page of the web inspector's thread list holds when no limit is given. */
export const INSPECTOR_THREAD_PAGE = 50;

/** Positions a page of the web inspector's timeline holds when no limit is given. */
export const INSPECTOR_HISTORY_PAGE = 50;

/** The largest page (threads or positions) the web inspector's API serves. */
export const INSPECTOR_MAX_PAGE = 500;

/** Threads one evaluation from the web inspector takes when its request gives no limit. */
export const INSPECTOR_EVAL_THREADS = 20;

/** The most threads one evaluation from the web inspector may take: each re-runs the thread's model calls. */
export const INSPECTOR_EVAL_MAX = 200;

/**
 * How often an idle worker looks whether a process holding leases on its host died,
 * ms: a local check (no database round trip), so a SIGKILLed worker's threads are
 * taken over this soon after its death, not when its leases expire. Each look is one
 * `kill(pid, 0)` per holder, only while the worker is idle and a holder is listed: a
 * hundred a second cost next to nothing, and halve the wait of a takeover against 50 ms.
 */
export const WORKER_HOLDER_CHECK_MS = 10;

/** How often an idle worker asks the database which processes of its host hold leases, ms. */
export const WORKER_HOLDER_REFRESH_MS = 1_000;

/**
 * Page size of a SQLite file cairn creates, bytes: SQLite's own default. `sqlite(path,
 * { pageSize: 8192 })` packs ~1 KB items better (seven a page where 4 KiB holds three
 * and leaves a quarter empty) at the cost of writing twice the bytes per commit.
 */
export const SQLITE_PAGE_SIZE = 4096;
