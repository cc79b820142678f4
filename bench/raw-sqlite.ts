/**
 * @module bench/raw-sqlite
 *
 * The physical limits the other contenders are measured against, on the same
 * SQLite build and the same durability settings:
 *
 * - {@link benchRawInsert}: the cheapest durable append there is: one INSERT of
 *   one ~1 KB row per transaction, no framework, no state. A contender's ms per
 *   step minus this figure is what its own bookkeeping costs.
 * - {@link benchOneRowFloor}: the cheapest load there is: the whole final state
 *   as a single TEXT row, read and decoded in a fresh process. No history, no
 *   reconstruction, just "read N KB and parse them".
 */
import Database from 'better-sqlite3';
import { makeMessage, payloadBytes, type WorkloadResult } from './workload.js';
import { firstLastMeans, medianOfFreshRuns, secondWindowMean } from './measure.js';
import { SQLITE_SETTINGS, applySqliteSettings, checkpointedDbBytes, freshDbPath } from './sqlite-util.js';

/** The settings the raw baselines run with (re-exported for the report). */
export const RAW_SQLITE_SETTINGS = SQLITE_SETTINGS;

/** Fresh processes per floor measurement; the median is reported. */
export const FLOOR_RUNS = 5;

/** The floor's load child: `DB [MODULE EXPORT]` (see the script). */
export const ONE_ROW_CHILD = 'bench/children/one-row-load.ts';

/**
 * Insert `n` messages, one row per transaction, into a fresh file under `dir`,
 * timing each insert (wall clock around the statement, which in autocommit mode
 * is a whole transaction including its fsync).
 */
export async function benchRawInsert({ n, dir }: { n: number; dir: string }): Promise<WorkloadResult> {
  const file = freshDbPath(dir, 'raw');
  const db = new Database(file);
  try {
    applySqliteSettings(db);
    db.exec('CREATE TABLE raw(id INTEGER PRIMARY KEY, body TEXT NOT NULL)');
    const insert = db.prepare('INSERT INTO raw(id, body) VALUES (?, ?)');
    const stepMs: number[] = [];
    for (let i = 0; i < n; i++) {
      const t0 = performance.now();
      // Autocommit: each run() is its own transaction, committed (and fsynced,
      // synchronous=FULL) before it returns. Encoding is inside the step, as it
      // is for every other contender.
      insert.run(i, JSON.stringify(makeMessage(i)));
      stepMs.push(performance.now() - t0);
    }
    return {
      contender: 'raw-sqlite',
      n,
      dbFile: file,
      ...firstLastMeans(stepMs),
      ...(stepMs.length >= 200 ? { secondMsPerStep: secondWindowMean(stepMs)! } : {}),
      dbBytes: checkpointedDbBytes(db, file),
      payloadBytes: payloadBytes(n),
      notes: `one row per transaction; journal_mode=${SQLITE_SETTINGS.journal_mode}, synchronous=${SQLITE_SETTINGS.synchronous}`,
    };
  } finally {
    db.close();
  }
}

/**
 * The decoder the floor's child process uses. `undefined` means `JSON.parse`.
 * Otherwise the child imports `module` (a path, absolute or relative to the
 * repository root, or a package specifier) and calls its export `exportName`
 * with the row's TEXT (the `JSON.stringify` of `{ messages }`); it must return
 * the decoded `{ messages: [...] }`.
 */
export type FloorDecoder = { module: string; exportName: string } | undefined;

/**
 * Store the final state of an `n`-step run, `{ messages: [makeMessage(0..n-1)] }`,
 * as ONE TEXT row, then read and decode it in {@link FLOOR_RUNS} fresh
 * processes. `headLoadMs` is the median of the times measured inside the
 * children (statement prepare + read + decode; the connection is opened, its
 * schema read and the decoder imported before the clock starts).
 *
 * This contender does not step, so `firstMsPerStep` and `lastMsPerStep` are
 * `NaN`; `dbBytes` is the size of the one-row file.
 */
export async function benchOneRowFloor({
  n,
  dir,
  decode,
}: {
  n: number;
  dir: string;
  decode?: FloorDecoder;
}): Promise<WorkloadResult> {
  const file = freshDbPath(dir, 'one-row');
  const db = new Database(file);
  let dbBytes: number;
  try {
    applySqliteSettings(db);
    db.exec('CREATE TABLE one_row(id INTEGER PRIMARY KEY, body TEXT NOT NULL)');
    const messages = Array.from({ length: n }, (_, i) => makeMessage(i));
    db.prepare('INSERT INTO one_row(id, body) VALUES (1, ?)').run(JSON.stringify({ messages }));
    dbBytes = checkpointedDbBytes(db, file);
  } finally {
    db.close();
  }
  const args = decode ? [file, decode.module, decode.exportName] : [file];
  const { ms, runs } = await medianOfFreshRuns(ONE_ROW_CHILD, args, FLOOR_RUNS, n);
  const decoder = decode ? `${decode.module}#${decode.exportName}` : 'JSON.parse';
  return {
    contender: 'one-row-floor',
    n,
    dbFile: file,
    firstMsPerStep: Number.NaN,
    lastMsPerStep: Number.NaN,
    dbBytes,
    payloadBytes: payloadBytes(n),
    headLoadMs: ms,
    loadRuns: { head: runs },
    notes: `whole state as one TEXT row, decoded with ${decoder}; median of ${FLOOR_RUNS} fresh processes`,
  };
}
