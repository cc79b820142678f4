/**
 * @module bench/measure
 *
 * Timing helpers shared by the contenders: per-step means over the first and
 * last 100 steps, medians, and running a measurement in a fresh Node process.
 *
 * Why fresh processes for loads: a load measured in the process that just
 * wrote the data finds the SQLite page cache, V8's JIT and every module already
 * warm. Loading a thread "later" (after a restart, on another worker) is the
 * case that matters, so load measurements run in a child process that starts
 * cold, and only the load itself is timed, inside the child (process start-up
 * and module loading are excluded; they are not the contender's cost).
 */
import { spawn } from 'node:child_process';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Repository root: children run from here so `--import tsx` resolves. */
const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');

/** How many steps the first/last means cover. */
export const EDGE_STEPS = 100;

/**
 * Mean of the first and last {@link EDGE_STEPS} per-step samples (ms). With
 * fewer than 100 steps both windows cover all of them.
 */
export function firstLastMeans(stepMs: readonly number[]): { firstMsPerStep: number; lastMsPerStep: number } {
  const k = Math.min(EDGE_STEPS, stepMs.length);
  return {
    firstMsPerStep: mean(stepMs.slice(0, k)),
    lastMsPerStep: mean(stepMs.slice(stepMs.length - k)),
  };
}

/**
 * Mean of steps 101–200 (1-based; samples 100..199), or `undefined` with fewer
 * than 200 steps: the "early" window after the first 100 steps' warm-up.
 */
export function secondWindowMean(stepMs: readonly number[]): number | undefined {
  return stepMs.length < 2 * EDGE_STEPS ? undefined : mean(stepMs.slice(EDGE_STEPS, 2 * EDGE_STEPS));
}

export function mean(xs: readonly number[]): number {
  return xs.length === 0 ? Number.NaN : xs.reduce((a, b) => a + b, 0) / xs.length;
}

export function median(xs: readonly number[]): number {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/**
 * What every child script prints as its last stdout line (JSON): the time it
 * measured, and a count that lets the parent check the load was complete.
 */
export interface ChildReport {
  ms: number;
  count: number;
}

/**
 * Run `script` (a path relative to the repository root, TypeScript allowed) in
 * a fresh `node --import tsx` process and parse the JSON of its last stdout
 * line: a {@link ChildReport} unless the caller expects something else.
 * `node`: another Node binary to run it with; `env`: variables added to this process's.
 */
export function runChild<T = ChildReport>(
  script: string,
  args: readonly string[],
  options: { node?: string; env?: Record<string, string> } = {},
): Promise<T> {
  return new Promise((resolvePromise, reject) => {
    const child = spawn(options.node ?? process.execPath, ['--import', 'tsx', script, ...args], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(options.env ? { env: { ...process.env, ...options.env } } : {}),
    });
    let out = '';
    let err = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    child.on('error', reject);
    child.on('close', (code) => {
      const last = out.trim().split('\n').pop() ?? '';
      if (code !== 0) {
        reject(new Error(`${script} ${args.join(' ')} exited with ${code}:\n${err}${out}`));
        return;
      }
      try {
        resolvePromise(JSON.parse(last) as T);
      } catch {
        reject(new Error(`${script} printed no JSON report:\n${out}\n${err}`));
      }
    });
  });
}

/** The median of several fresh-process runs, with every run's ms (in run order). */
export interface FreshRunsReport extends ChildReport {
  runs: number[];
}

/**
 * Run the same child `runs` times, one after another (never in parallel, so
 * they do not compete for the 2 cores or the disk), and return the median ms
 * (and every sample, so the spread can be reported).
 * Throws if any run's count differs from `expectedCount`: a fast load that did
 * not load everything must not pass for a result.
 */
export async function medianOfFreshRuns(
  script: string,
  args: readonly string[],
  runs: number,
  expectedCount?: number,
): Promise<FreshRunsReport> {
  const times: number[] = [];
  let count = 0;
  for (let r = 0; r < runs; r++) {
    const rep = await runChild(script, args);
    if (expectedCount !== undefined && rep.count !== expectedCount) {
      throw new Error(`${script} ${args.join(' ')}: loaded ${rep.count}, expected ${expectedCount}`);
    }
    times.push(rep.ms);
    count = rep.count;
  }
  return { ms: median(times), count, runs: times };
}
