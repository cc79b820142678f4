/**
 * @module bench/drivers
 *
 * cairn's step on its two SQLite drivers: better-sqlite3 (on this Node) against
 * node:sqlite (on this Node if it has it, else on a Node 22 binary from the npm
 * registry, `npx -p node@22`), the append loop steps-only at N = 500, fresh
 * processes alternating, {@link DRIVER_ROUNDS} each. Reported per driver as the
 * median of the last-100 per-step means, and as the ratio of the two medians.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { median, runChild } from './measure.js';

/** Runs per driver: enough for a median, few enough to stay within ~30 s. */
export const DRIVER_ROUNDS = 3;

const CHILD = 'bench/children/driver-steps.ts';

interface DriverRun {
  driver: string;
  node: string;
  n: number;
  firstMsPerStep: number;
  lastMsPerStep: number;
}

export interface DriverBenchResult {
  n: number;
  betterSqlite3: { node: string; lastMsPerStep: number; runs: number[] };
  nodeSqlite: { node: string; lastMsPerStep: number; runs: number[] };
  /** node:sqlite / better-sqlite3, last-100 per-step medians (above 1×: node:sqlite is slower). */
  ratio: number;
  seconds: number;
}

/** A Node binary with node:sqlite: this one if it has it, else Node 22 from the npm registry. */
function nodeWithSqlite(): string {
  try {
    execFileSync(process.execPath, ['-e', "require('node:sqlite')"], { stdio: 'ignore' });
    return process.execPath;
  } catch {
    return execFileSync('npx', ['-y', '-p', 'node@22', '-c', 'node -p process.execPath'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();
  }
}

/** Both drivers' per-step figures at `n`; throws when either cannot run (the caller reports why). */
export async function benchDrivers(n = 500): Promise<DriverBenchResult> {
  const started = performance.now();
  const builtIn = nodeWithSqlite();
  const dir = mkdtempSync(join(tmpdir(), 'cairn-bench-drivers-'));
  const native: DriverRun[] = [];
  const node: DriverRun[] = [];
  try {
    for (let round = 0; round < DRIVER_ROUNDS; round++) {
      native.push(await runChild<DriverRun>(CHILD, ['better-sqlite3', String(n), dir]));
      node.push(await runChild<DriverRun>(CHILD, ['node:sqlite', String(n), dir], { node: builtIn }));
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const last = (runs: DriverRun[]) => median(runs.map((r) => r.lastMsPerStep));
  return {
    n,
    betterSqlite3: { node: native[0]!.node, lastMsPerStep: last(native), runs: native.map((r) => r.lastMsPerStep) },
    nodeSqlite: { node: node[0]!.node, lastMsPerStep: last(node), runs: node.map((r) => r.lastMsPerStep) },
    ratio: last(node) / last(native),
    seconds: (performance.now() - started) / 1000,
  };
}
