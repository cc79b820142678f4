/**
 * The benchmark workload shared by every contender: one thread whose `messages`
 * list grows by one ~1 KB message per step. Every contender appends exactly
 * these messages, so payload bytes are identical across engines.
 */
export interface BenchMessage {
  role: 'user' | 'assistant';
  content: string;
  index: number;
}

const FILLER = 'lorem ipsum dolor sit amet, consectetur adipiscing elit. '.repeat(20);

/** The i-th message of the workload: deterministic, about 1 KB encoded. */
export function makeMessage(i: number): BenchMessage {
  const content = `${i}: ${FILLER}`.slice(0, 1000);
  return { role: i % 2 === 0 ? 'user' : 'assistant', content, index: i };
}

/** Bytes of payload the workload writes in `n` steps (JSON-encoded messages). */
export function payloadBytes(n: number): number {
  let total = 0;
  for (let i = 0; i < n; i++) total += Buffer.byteLength(JSON.stringify(makeMessage(i)));
  return total;
}

/** What every contender reports for one workload size. */
export interface WorkloadResult {
  contender: string;
  n: number;
  /** Mean wall-clock ms per step over the first 100 steps. */
  firstMsPerStep: number;
  /** Mean wall-clock ms per step over the last 100 steps. */
  lastMsPerStep: number;
  /**
   * Mean wall-clock ms per step over steps 101–200 (absent below 200 steps): a
   * second "early" window, for when the first 100 steps are dominated by JIT
   * warm-up and first-use costs rather than by the store.
   */
  secondMsPerStep?: number;
  /** Size of the database on disk at the end (main file + WAL), in bytes. */
  dbBytes: number;
  payloadBytes: number;
  /** ms to load the head state, measured in a fresh process (median of runs). */
  headLoadMs?: number;
  /** ms to load the state at position n/2, fresh process. */
  midLoadMs?: number;
  /** ms to list the whole history, fresh process. */
  historyMs?: number;
  /** Number of positions the history listing returned. */
  historyCount?: number;
  /** ms to list the newest 1000 positions (all of them when there are fewer), fresh process. */
  history1000Ms?: number;
  /** Number of positions that listing returned. */
  history1000Count?: number;
  /** The contender's database file (for follow-up measurements; it lives in the run's temp dir). */
  dbFile?: string;
  /** Every fresh-process sample behind the load medians above, ms, in run order. */
  loadRuns?: { head?: number[]; mid?: number[]; history?: number[]; history1000?: number[] };
  notes?: string;
}
