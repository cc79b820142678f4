/**
 * @module bench/langgraph
 *
 * The workload through LangGraph.js (`@langchain/langgraph` StateGraph +
 * `@langchain/langgraph-checkpoint-sqlite` SqliteSaver on a file), in two modes
 * (see {@link buildAppendGraph}): `default` (standard append reducer, full list
 * in every checkpoint) and `delta` (beta `DeltaChannel` via `DeltaValue`).
 *
 * What one "step" is. Two ways to get one checkpoint per appended message:
 * - N `invoke` calls on one thread_id, each appending one message: every invoke
 *   saves 3 checkpoints (input at step -1, the START superstep, the node), i.e.
 *   3 full copies of the list per message in `default` mode, plus per-run
 *   start-up. Measured: 3 invokes = 9 checkpoints. Unfair to LangGraph.
 * - ONE run of a graph whose node loops back to itself N times
 *   (recursionLimit > N): exactly one checkpoint per appended message (+2 for
 *   the input and START supersteps). This is what LangGraph does for an agent
 *   loop, and it is the cheapest path, so it is the one used here.
 * Per-step wall clock comes from streaming the run with `streamMode: "updates"`:
 * step k lasts from the (k-1)-th node update to the k-th (the first from the
 * start of the run, the last up to the end of the stream, so the final
 * checkpoint is counted and the steps add up to the run's wall clock).
 *
 * `durability: "sync"`: each step's checkpoint is saved before the next step
 * starts, the same guarantee as the other contenders' per-step commit. (The
 * default, "async", would only overlap the save with the next node; SqliteSaver
 * is synchronous better-sqlite3 underneath, so there is nothing to overlap.)
 *
 * The saver gets a connection we open with the shared {@link SQLITE_SETTINGS}
 * (SqliteSaver itself only sets WAL; synchronous=FULL is also better-sqlite3's
 * default, so this changes nothing for LangGraph and makes it explicit).
 */
import Database from 'better-sqlite3';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';
import { payloadBytes, type WorkloadResult } from './workload.js';
import { firstLastMeans, medianOfFreshRuns, secondWindowMean } from './measure.js';
import { SQLITE_SETTINGS, applySqliteSettings, checkpointedDbBytes, freshDbPath } from './sqlite-util.js';
import { LANGGRAPH_THREAD_ID, buildAppendGraph, runTimed, type LangGraphMode } from './langgraph-graph.js';

export type { LangGraphMode } from './langgraph-graph.js';

/** Largest N each mode is meant to run at (`default` grows quadratically). */
export const LANGGRAPH_MAX_N: Record<LangGraphMode, number> = { default: 1000, delta: 5000 };

/** Fresh processes per load measurement; the median is reported. */
export const LANGGRAPH_LOAD_RUNS = 3;

const LOAD_CHILD = 'bench/children/langgraph-load.ts';

export interface LangGraphBenchOptions {
  n: number;
  mode: LangGraphMode;
  dir: string;
  /**
   * Also time `graph.getStateHistory` (every position's full state) in a fresh
   * process and add it to `notes`. Off by default: in `delta` mode it rebuilds
   * each state from writes, which is slow and not what `historyMs` measures.
   */
  stateHistory?: boolean;
}

/**
 * Run the workload through LangGraph and measure it.
 *
 * - `firstMsPerStep` / `lastMsPerStep`: see the module comment.
 * - `dbBytes`: main + WAL after `wal_checkpoint(TRUNCATE)`.
 * - `headLoadMs`: `graph.getState({ configurable: { thread_id } })` in a fresh
 *   process. `getState` rather than `saver.getTuple` because only `getState`
 *   returns the full state in `delta` mode (the tuple holds a sentinel; the
 *   list is rebuilt from ancestor writes); the same call is used in both modes.
 * - `midLoadMs`: `getState` with the `checkpoint_id` of the checkpoint holding
 *   exactly n/2 messages (metadata `step` = n/2).
 * - `historyMs` / `historyCount`:
 *   `saver.list({ configurable: { thread_id, checkpoint_ns: '' } })` drained:
 *   every checkpoint tuple, deserialized, newest first: the cheapest full
 *   listing LangGraph offers (`getStateHistory` is this plus rebuilding each
 *   state). The explicit `checkpoint_ns` matters: without it SqliteSaver's
 *   query cannot walk the primary key in order and sorts all rows first.
 *   Count = n + 2 (the input and START checkpoints).
 * - `history1000Ms` / `history1000Count`: the same listing with `limit: 1000`
 *   (the newest 1000 checkpoints).
 * Each load is the median of {@link LANGGRAPH_LOAD_RUNS} fresh processes, timed
 * after the saver has opened the database (see `children/langgraph-load.ts`),
 * and the parent checks the number of messages the child actually loaded.
 */
export async function benchLangGraph({ n, mode, dir, stateHistory = false }: LangGraphBenchOptions): Promise<WorkloadResult> {
  const file = freshDbPath(dir, `langgraph-${mode}`);
  const db = new Database(file);
  let stepMs: number[];
  let dbBytes: number;
  let headCheckpoint: CheckpointAtStep;
  let midCheckpoint: CheckpointAtStep;
  try {
    applySqliteSettings(db);
    const saver = new SqliteSaver(db);
    // Create the tables outside the timed steps (raw-sqlite creates its table
    // untimed too). `setup()` is protected; a lookup on the empty thread runs it.
    await saver.getTuple({ configurable: { thread_id: LANGGRAPH_THREAD_ID } });
    const graph = buildAppendGraph({ mode, n, saver });
    stepMs = await runTimed(graph, n);
    headCheckpoint = checkpointAtStep(db, n);
    midCheckpoint = checkpointAtStep(db, n >> 1);
    dbBytes = checkpointedDbBytes(db, file);
  } finally {
    db.close();
  }

  const head = await medianOfFreshRuns(LOAD_CHILD, [file, mode, 'head'], LANGGRAPH_LOAD_RUNS, n);
  const mid = await medianOfFreshRuns(LOAD_CHILD, [file, mode, 'mid', midCheckpoint.id], LANGGRAPH_LOAD_RUNS, n >> 1);
  const history = await medianOfFreshRuns(LOAD_CHILD, [file, mode, 'history'], LANGGRAPH_LOAD_RUNS, n + 2);
  const history1000 = await medianOfFreshRuns(LOAD_CHILD, [file, mode, 'history-1000'], LANGGRAPH_LOAD_RUNS, Math.min(1000, n + 2));

  const notes = [
    `StateGraph self-loop, one run, durability=sync; SqliteSaver, journal_mode=${SQLITE_SETTINGS.journal_mode}, synchronous=${SQLITE_SETTINGS.synchronous}`,
    mode === 'delta' ? 'DeltaValue/DeltaChannel (beta), snapshotFrequency=100' : 'ReducedValue concat reducer',
    `slowest step ${Math.max(...stepMs).toFixed(1)} ms`,
    'head/mid: graph.getState; history: saver.list',
  ];
  if (mode === 'delta') {
    // How much replay a load needed: a DeltaSnapshot is written every 100
    // updates, so the figure depends on where n and n/2 fall relative to one.
    notes.push(
      `updates since last DeltaSnapshot: head ${headCheckpoint.updatesSinceSnapshot}, mid ${midCheckpoint.updatesSinceSnapshot}`,
    );
  }
  if (stateHistory) {
    const sh = await medianOfFreshRuns(LOAD_CHILD, [file, mode, 'state-history'], LANGGRAPH_LOAD_RUNS, n + 2);
    notes.push(`graph.getStateHistory: ${sh.ms.toFixed(1)} ms for ${sh.count} states`);
  }

  return {
    contender: `langgraph-${mode}`,
    n,
    dbFile: file,
    ...firstLastMeans(stepMs),
    ...(stepMs.length >= 200 ? { secondMsPerStep: secondWindowMean(stepMs)! } : {}),
    dbBytes,
    payloadBytes: payloadBytes(n),
    headLoadMs: head.ms,
    midLoadMs: mid.ms,
    historyMs: history.ms,
    historyCount: history.count,
    history1000Ms: history1000.ms,
    history1000Count: history1000.count,
    loadRuns: { head: head.runs, mid: mid.runs, history: history.runs, history1000: history1000.runs },
    notes: notes.join('; '),
  };
}


/** A checkpoint row's id and the part of its metadata the report uses. */
interface CheckpointAtStep {
  id: string;
  /** `DeltaChannel` writes since its last `DeltaSnapshot` (delta mode only). */
  updatesSinceSnapshot: number | undefined;
}

/**
 * The checkpoint holding exactly `step` messages: after the input (step -1)
 * and START (step 0) checkpoints, the checkpoint of step k holds k. Read
 * straight from the saver's table so that finding it costs no state load.
 */
function checkpointAtStep(db: Database.Database, step: number): CheckpointAtStep {
  const row = db
    .prepare(
      `SELECT checkpoint_id, CAST(metadata AS TEXT) AS metadata FROM checkpoints
       WHERE thread_id = ? AND checkpoint_ns = '' AND json_extract(CAST(metadata AS TEXT), '$.step') = ?`,
    )
    .get(LANGGRAPH_THREAD_ID, step) as { checkpoint_id: string; metadata: string } | undefined;
  if (!row) throw new Error(`no checkpoint at step ${step}`);
  const metadata = JSON.parse(row.metadata) as { counters_since_delta_snapshot?: Record<string, [number, number]> };
  return { id: row.checkpoint_id, updatesSinceSnapshot: metadata.counters_since_delta_snapshot?.['messages']?.[0] };
}
