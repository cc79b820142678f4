/**
 * @module bench/cairn
 *
 * The workload through cairn itself (the BUILT package, `dist/`): the append
 * loop of {@link buildCairnApp} on the SQLite engine, `sqlite(file, { durability })`
 * (WAL + synchronous=FULL by default), measured exactly as the LangGraph
 * contender is:
 *
 * - per-step wall clock from the run's `step.commit` events (the event is
 *   emitted once the step's transaction has committed): step k lasts from the
 *   (k-1)-th append commit to the k-th, the first from the start of `run()`
 *   (so it also carries acquiring the thread and committing the input
 *   position, as LangGraph's first step carries its input and START
 *   checkpoints), and the tail after the last commit (releasing the thread
 *   lease: one more small transaction) is charged to the last step, so the
 *   steps add up to the run's wall clock;
 * - `dbBytes`: main + WAL after `wal_checkpoint(TRUNCATE)` ({@link checkpointedDbBytes}),
 *   on a connection opened after the engine closed;
 * - head load (`app.getState`), N/2 load (`app.stateAt({ thread, seq: n/2 })`: seq k
 *   holds k messages), the whole history (`app.history`, paged newest-first
 *   1000 at a time) and the newest 1000 positions (`app.history({ limit: 1000 })`),
 *   each the median of {@link CAIRN_LOAD_RUNS} fresh processes timing only the
 *   load, after the engine has opened the database (see `children/cairn-load.ts`).
 */
import Database from 'better-sqlite3';
import { encrypted, keyFile } from '../dist/crypto/index.js';
import { sqlite } from '../dist/engines/sqlite/index.js';
import type { RunEvent } from '../dist/index.js';
import type { Engine } from '../dist/contracts/engine.js';
import { CAIRN_THREAD_ID, buildCairnApp } from './cairn-graph.js';
import { firstLastMeans, medianOfFreshRuns, secondWindowMean } from './measure.js';
import { checkpointedDbBytes, freshDbPath } from './sqlite-util.js';
import { payloadBytes, type WorkloadResult } from './workload.js';

/**
 * The floor's decoder when it is compared with cairn: cairn's own `decode`
 * (cairn stores canonical tagged JSON; on plain JSON `decode` is `JSON.parse`
 * plus one walk of its containers), imported by the floor's child before its clock.
 */
export const CAIRN_FLOOR_DECODER = { module: './dist/codec/tagged-json.js', exportName: 'decode' };

/** Fresh processes per load measurement; the median is reported. */
export const CAIRN_LOAD_RUNS = 5;

/** The load child: `DB head|mid|history|history-1000 [SEQ]` (see the script). */
export const CAIRN_LOAD_CHILD = 'bench/children/cairn-load.ts';
const LOAD_CHILD = CAIRN_LOAD_CHILD;

export interface CairnBenchOptions {
  n: number;
  dir: string;
  /** The engine's durability: `full` (default, synchronous=FULL) or `normal`. */
  durability?: 'full' | 'normal';
  /**
   * Also measure the loads (default true). `false` runs and measures the steps
   * only: for repeated per-step measurements.
   */
  loads?: boolean;
  /**
   * Run on `encrypted(sqlite(file), { keys: keyFile(<file>.keys.json) })`: every
   * payload sealed with AES-256-GCM (the `cairn-encrypted` contender). The load child
   * opens a file with a key file beside it encrypted too.
   */
  encrypted?: boolean;
}

/** The key file of an encrypted contender's database: beside it, so its load children find it. */
export function keyFileOf(dbFile: string): string {
  return `${dbFile}.keys.json`;
}

/** The SQLite settings a cairn run actually ran with, read back from its connection. */
export interface CairnSqliteSettings {
  journal_mode: string;
  synchronous: string;
  page_size: number;
}

/** {@link WorkloadResult} plus what only cairn reports. */
export interface CairnResult extends WorkloadResult {
  /** Settings read from the engine's own connection during the run. */
  settings: CairnSqliteSettings;
  /** Bytes per table/index (SQLite `dbstat`), when the SQLite build has it. */
  tableBytes?: Record<string, number>;
  /** Rows of the snapshot table (a snapshot is written every 50 positions by default). */
  snapshots: number;
}

const SYNCHRONOUS = ['OFF', 'NORMAL', 'FULL', 'EXTRA'];

/** Run the workload through cairn and measure it. */
export async function benchCairn({ n, dir, durability, loads = true, encrypted: sealed = false }: CairnBenchOptions): Promise<CairnResult> {
  const file = freshDbPath(dir, sealed ? 'cairn-encrypted' : 'cairn');
  const inner = sqlite(file, durability ? { durability } : {});
  const engine = sealed ? encrypted(inner, { keys: keyFile(keyFileOf(file)) }) : inner;
  let stepMs: number[];
  let settings: CairnSqliteSettings;
  try {
    // Open the database (pragmas, migrations) outside the timed steps, as the
    // other contenders create their tables untimed.
    await engine.checkpointer.getThread(CAIRN_THREAD_ID);
    settings = readSettings(inner);
    stepMs = await runTimed(engine, n);
  } finally {
    await engine.close();
  }

  const db = new Database(file);
  let dbBytes: number;
  let tableBytes: Record<string, number> | undefined;
  let snapshots: number;
  let sinceSnapshot: { head: number; mid: number };
  const mid = n >> 1;
  try {
    tableBytes = dbstat(db);
    snapshots = db.prepare('SELECT count(*) FROM cairn_snapshots').pluck().get() as number;
    // How many positions a load replays (and chain-checks) past its snapshot:
    // where n and n/2 fall relative to the snapshot cadence decides it.
    const lastSnapshot = db.prepare('SELECT max(seq) FROM cairn_snapshots WHERE seq <= ?').pluck();
    const since = (seq: number) => seq - ((lastSnapshot.get(seq) as number | null) ?? -1);
    sinceSnapshot = { head: since(n), mid: since(mid) };
    dbBytes = checkpointedDbBytes(db, file);
  } finally {
    db.close();
  }

  const base = {
    contender: sealed ? 'cairn-encrypted' : durability === 'normal' ? 'cairn-normal' : 'cairn',
    n,
    dbFile: file,
    ...firstLastMeans(stepMs),
    ...optional('secondMsPerStep', secondWindowMean(stepMs)),
    dbBytes,
    payloadBytes: payloadBytes(n),
    settings,
    ...optional('tableBytes', tableBytes),
    snapshots,
  };
  if (!loads) return { ...base, notes: `steps only; slowest step ${Math.max(...stepMs).toFixed(1)} ms` };

  const head = await medianOfFreshRuns(LOAD_CHILD, [file, 'head'], CAIRN_LOAD_RUNS, n);
  const midLoad = await medianOfFreshRuns(LOAD_CHILD, [file, 'mid', String(mid)], CAIRN_LOAD_RUNS, mid);
  const history = await medianOfFreshRuns(LOAD_CHILD, [file, 'history'], CAIRN_LOAD_RUNS, n + 1);
  const history1000 = await medianOfFreshRuns(LOAD_CHILD, [file, 'history-1000'], CAIRN_LOAD_RUNS, Math.min(1000, n + 1));

  const notes = [
    `graph self-loop, one run; ${sealed ? 'encrypted(sqlite), AES-256-GCM, key file; ' : ''}sqlite engine durability=${durability ?? 'full'} (journal_mode=${settings.journal_mode}, synchronous=${settings.synchronous})`,
    `slowest step ${Math.max(...stepMs).toFixed(1)} ms`,
    `${snapshots} snapshots; positions past the last snapshot: head ${sinceSnapshot.head}, mid ${sinceSnapshot.mid}`,
    'head: app.getState; mid: app.stateAt; history: app.history paged by 1000',
  ];
  return {
    ...base,
    headLoadMs: head.ms,
    midLoadMs: midLoad.ms,
    historyMs: history.ms,
    historyCount: history.count,
    history1000Ms: history1000.ms,
    history1000Count: history1000.count,
    loadRuns: { head: head.runs, mid: midLoad.runs, history: history.runs, history1000: history1000.runs },
    notes: notes.join('; '),
  };
}

/** Run the app once to n messages, returning the wall clock of each append step. */
export async function runTimed(engine: Engine, n: number): Promise<number[]> {
  const stepMs: number[] = [];
  let last = 0;
  const onEvent = (e: RunEvent) => {
    // The input position (seq 0) commits with no nodes: it belongs to step 1.
    if (e.type !== 'step.commit' || e.nodes.length === 0) return;
    const now = performance.now();
    stepMs.push(now - last);
    last = now;
  };
  const app = buildCairnApp({ engine, n, onEvent });
  last = performance.now();
  const result = await app.run({ thread: CAIRN_THREAD_ID });
  // After the last commit, run() releases the lease (one more transaction):
  // charge it to the last step so the steps add up to the run.
  const tail = performance.now() - last;
  if (stepMs.length !== n) throw new Error(`expected ${n} append commits, got ${stepMs.length}`);
  if (result.status !== 'completed' || result.seq !== n || result.state.messages.length !== n) {
    throw new Error(`run ended ${result.status} at seq ${result.seq} with ${result.state.messages.length} messages`);
  }
  stepMs[n - 1]! += tail;
  return stepMs;
}

/**
 * journal_mode, synchronous and page_size as the engine's own connection has
 * them. The connection is private to the engine, so this reaches into it; if
 * the internals move, the figures read `?` rather than guessed.
 */
function readSettings(engine: ReturnType<typeof sqlite>): CairnSqliteSettings {
  try {
    const db = (engine.checkpointer as unknown as { conn: { db: Database.Database } }).conn.db;
    const sync = db.pragma('synchronous', { simple: true }) as number;
    return {
      journal_mode: String(db.pragma('journal_mode', { simple: true })).toUpperCase(),
      synchronous: SYNCHRONOUS[sync] ?? String(sync),
      page_size: db.pragma('page_size', { simple: true }) as number,
    };
  } catch {
    return { journal_mode: '?', synchronous: '?', page_size: Number.NaN };
  }
}

/** Bytes per table and index, or undefined when SQLite was built without `dbstat`. */
function dbstat(db: Database.Database): Record<string, number> | undefined {
  try {
    const rows = db.prepare('SELECT name, sum(pgsize) AS bytes FROM dbstat GROUP BY name ORDER BY bytes DESC').all() as {
      name: string;
      bytes: number;
    }[];
    return Object.fromEntries(rows.map((r) => [r.name, r.bytes]));
  } catch {
    return undefined;
  }
}

function optional<K extends string, V>(key: K, value: V | undefined): { [P in K]?: V } {
  return (value === undefined ? {} : { [key]: value }) as { [P in K]?: V };
}
