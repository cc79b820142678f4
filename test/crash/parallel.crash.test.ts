/**
 * A 21-superstep run with parallel nodes, killed with SIGKILL at crash points
 * across its records, effects, pending writes, commits and snapshots, then
 * resumed: the final state equals a crash-free run's and every effect reached the
 * outside world exactly once.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { recoveryChecks, runExampleProcess, type ExampleRun } from '../../dist/testing/crash-harness.js';
import { PARALLEL_ROUNDS } from '../../dist/testing/parallel-example.js';
import { caseDir, referenceRun } from './crash-setup.js';

const ARGS = ['--snapshot-every', '3'];

export const PARALLEL_CRASHES = [
  'after-record:left',
  'after-record:right#4',
  'before-intent:left#2',
  'after-intent:right',
  'before-effect:left#5',
  'after-effect:right#3',
  'after-effect:left#7',
  'before-outcome:left',
  'after-outcome:right#6',
  'after-pending-write#1',
  'after-pending-write#4',
  'after-pending-write#7',
  'before-commit#3',
  'before-commit#11',
  'before-commit#22',
  'after-commit#6',
  'after-commit#21',
  'inside-snapshot#1',
  'inside-snapshot#5',
];

let reference: ExampleRun;
beforeAll(async () => {
  reference = await referenceRun('parallel', ARGS);
});

describe('parallel run survives SIGKILL', () => {
  it('the reference run takes 21 supersteps (22 positions with its input) with two parallel nodes per round', () => {
    const commits = reference.lines.filter((l) => l.type === 'step.commit');
    expect(commits).toHaveLength(1 + 3 * PARALLEL_ROUNDS);
    expect(commits.filter((c) => (c.nodes as string[]).join() === 'left,right')).toHaveLength(PARALLEL_ROUNDS);
  });

  it.each(PARALLEL_CRASHES)('at %s', async (crashAt) => {
    const { db, artifacts, dir } = caseDir('parallel');
    const audit = join(dir, 'audit.log');
    const args = [...ARGS, '--audit', audit];

    const first = await runExampleProcess({ db, artifacts, fixture: 'parallel', args, crashAt });
    expect(first.signal, `the crash point ${crashAt} must be reached`).toBe('SIGKILL');
    const second = await runExampleProcess({ db, artifacts, fixture: 'parallel', args });
    expect(second.exitCode, second.stderr).toBe(0);

    for (const check of await recoveryChecks({ db, thread: 'cust_42', first, last: second, reference })) {
      expect(check.ok, `${check.name}: ${check.detail}`).toBe(true);
    }
    const keys = readFileSync(audit, 'utf8').split('\n').filter(Boolean);
    expect(keys, 'every effect reached the outside world').toHaveLength(2 * PARALLEL_ROUNDS);
    expect(new Set(keys).size, 'and none twice').toBe(keys.length);
  });
});
