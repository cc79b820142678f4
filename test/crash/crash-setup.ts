/**
 * Shared by the crash tests: a fresh folder per case and the crash-free reference
 * run each fixture is compared with. The tests run the BUILT package (dist/), as a
 * user would: `npm test` builds first.
 */
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { runExampleProcess, type ExampleRun } from '../../dist/testing/crash-harness.js';
import { tempDir } from '../helpers/temp-dirs.js';

export function caseDir(prefix: string): { dir: string; db: string; artifacts: string } {
  const dir = tempDir(`cairn-crash-${prefix}-`);
  mkdirSync(join(dir, 'artifacts'));
  return { dir, db: join(dir, 'cairn.db'), artifacts: join(dir, 'artifacts') };
}

export async function referenceRun(fixture: 'worked' | 'parallel', args: string[]): Promise<ExampleRun> {
  const { db, artifacts, dir } = caseDir(`${fixture}-ref`);
  const run = await runExampleProcess({ db, artifacts, fixture, args: [...args, '--audit', join(dir, 'audit.log')] });
  if (run.result?.status !== 'completed') throw new Error(`reference run failed: ${run.stderr}`);
  return run;
}

const NODES = ['load_customer', 'generate_summary', 'put_object', 'save_prefs'];
const EFFECT_POINTS = ['before-intent', 'after-intent', 'before-effect', 'after-effect', 'before-outcome', 'after-outcome'];

/** Every crash point of the worked example: records, both effects, every commit, snapshots. */
export const WORKED_EXAMPLE_CRASHES = [
  ...['load_customer', 'generate_summary', 'save_prefs'].map((node) => `after-record:${node}`),
  ...EFFECT_POINTS.flatMap((point) => ['put_object', 'save_prefs'].map((node) => `${point}:${node}`)),
  'before-commit#1',
  ...NODES.map((node) => `before-commit:${node}`),
  'after-commit#1',
  ...NODES.map((node) => `after-commit:${node}`),
  'inside-snapshot#1',
  'inside-snapshot#2',
];


/** What a fixture script printed (one JSON line each) and how its process ended. */
export interface FixtureRun<L = Record<string, unknown> & { type: string }> {
  lines: L[];
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
}

/** Runs a fixture script in a new process, armed with CAIRN_CRASH_AT when `crashAt` is given, and collects its lines. */
export function runFixture(script: string, args: string[], crashAt?: string): Promise<FixtureRun> {
  const env = { ...process.env };
  delete env.CAIRN_CRASH_AT;
  if (crashAt) env.CAIRN_CRASH_AT = crashAt;
  const child = spawn(process.execPath, [script, ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (exitCode, signal) => {
      const lines = stdout.split('\n').filter((l) => l.trim()).map((l) => JSON.parse(l) as FixtureRun['lines'][number]);
      resolve({ lines, exitCode, signal, stderr });
    });
  });
}
