/**
 * Shared by the crash tests: a fresh folder per case and the crash-free reference
 * run each fixture is compared with. The tests run the BUILT package (dist/), as a
 * user would: `npm test` builds first.
 */
import { mkdtempSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runExampleProcess, type ExampleRun } from '../../dist/testing/crash-harness.js';

export function caseDir(prefix: string): { dir: string; db: string; artifacts: string } {
  const dir = mkdtempSync(join(tmpdir(), `cairn-crash-${prefix}-`));
  mkdirSync(join(dir, 'artifacts'));
  return { dir, db: join(dir, 'cairn.db'), artifacts: join(dir, 'artifacts') };
}

export async function referenceRun(fixture: 'worked' | 'parallel', args: string[]): Promise<ExampleRun> {
  const { db, artifacts, dir } = caseDir(`${fixture}-ref`);
  const run = await runExampleProcess({ db, artifacts, fixture, args: [...args, '--audit', join(dir, 'audit.log')] });
  if (run.result?.status !== 'completed') throw new Error(`reference run failed: ${run.stderr}`);
  return run;
}
