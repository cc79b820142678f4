/**
 * `cairn attempts` tells where a killed attempt stopped: the worked example killed
 * with SIGKILL inside `put_object` (its effect ran, checkpoint C never landed)
 * stopped at put_object, in the step that starts from seq 2 (checkpoint B), not at
 * the first step it committed. While nothing has resumed it the attempt is
 * `running` there; once a second run finished it, it is `continued` there.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cairn } from './run-cli.js';
import { ensureBuilt } from '../artifacts/build.js';

let dir: string;
let db: string;
let artifacts: string;

beforeAll(() => {
  ensureBuilt();
  dir = mkdtempSync(join(tmpdir(), 'cairn-cli-attempts-'));
  db = join(dir, 'cairn.db');
  artifacts = join(dir, 'artifacts');
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

interface Attempt {
  attempt: number;
  outcome: string;
  node: string | null;
  seq: number | null;
  committed: { seq: number }[];
}

async function attempts(): Promise<Attempt[]> {
  const run = await cairn(['attempts', 'cust_42', '--db', db, '--json']);
  expect(run.code, run.stderr).toBe(0);
  return (JSON.parse(run.stdout) as { attempts: Attempt[] }).attempts;
}

describe('cairn attempts after a run killed inside put_object', () => {
  it('reports the killed attempt at put_object @ seq 2, running until resumed, then continued', async () => {
    const { runExampleProcess } = await import('../../dist/testing/crash-harness.js');
    const killed = await runExampleProcess({ db, artifacts, args: ['--fixed-clock'], crashAt: 'after-effect:put_object' });
    expect(killed.signal, killed.stderr).toBe('SIGKILL');

    expect(await attempts()).toMatchObject([{ attempt: 1, outcome: 'running', node: 'put_object', seq: 2, committed: [{ seq: 0 }, { seq: 1 }, { seq: 2 }] }]);

    const resumed = await runExampleProcess({ db, artifacts, args: ['--fixed-clock'] });
    expect(resumed.result?.status, resumed.stderr).toBe('completed');
    const story = await attempts();
    expect(story).toMatchObject([
      { attempt: 1, outcome: 'continued', node: 'put_object', seq: 2, committed: [{ seq: 0 }, { seq: 1 }, { seq: 2 }] },
      { attempt: 2, outcome: 'completed', node: 'put_object', seq: 3, committed: [{ seq: 3 }, { seq: 4 }] },
    ]);

    const table = await cairn(['attempts', 'cust_42', '--db', db]);
    expect(table.stdout).toMatch(/^attempt\s+outcome\s+node\s+seq\s+at\s+committed\s+error$/m);
    expect(table.stdout).toMatch(/^#1\s+continued\s+put_object\s+2\s+\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z\s+0,1,2\s/m);
  }, 60_000);
});
