/**
 * The worked example killed with SIGKILL at every crash point it reaches, then
 * resumed in a new process: the final state equals a crash-free run's, no
 * committed step is lost, the object is uploaded once, the store write applies
 * once, the hash chain verifies and `PRAGMA integrity_check` is ok.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { recoveryChecks, runExampleProcess, type ExampleRun } from '../../dist/testing/crash-harness.js';
import { sqlite } from '../../dist/engines/sqlite/index.js';
import { caseDir, referenceRun, WORKED_EXAMPLE_CRASHES } from './crash-setup.js';

const ARGS = ['--fixed-clock', '--snapshot-every', '2'];
let reference: ExampleRun;
beforeAll(async () => {
  reference = await referenceRun('worked', ARGS);
});

describe('worked example survives SIGKILL', () => {
  it.each(WORKED_EXAMPLE_CRASHES)('at %s', async (crashAt) => {
    const { db, artifacts, dir } = caseDir('worked');
    const effectLog = join(dir, 'effects.log');
    const args = [...ARGS, '--effect-log', effectLog];

    const first = await runExampleProcess({ db, artifacts, args, crashAt });
    expect(first.signal, `the crash point ${crashAt} must be reached`).toBe('SIGKILL');
    const second = await runExampleProcess({ db, artifacts, args });
    expect(second.exitCode, second.stderr).toBe(0);

    for (const check of await recoveryChecks({ db, thread: 'cust_42', first, last: second, reference })) {
      expect(check.ok, `${check.name}: ${check.detail}`).toBe(true);
    }
    const uploads = existsSync(effectLog) ? readFileSync(effectLog, 'utf8').split('\n').filter((l) => l.startsWith('put_object ')) : [];
    expect(uploads, 'the object is uploaded exactly once').toHaveLength(1);
    const engine = sqlite(db);
    try {
      expect((await engine.store.get(['user', '42'], 'prefs'))?.version, 'the store write applies once').toBe(1);
      const effects = (await engine.ledger.list('cust_42')).filter((e) => e.kind === 'effect');
      expect(effects.map((e) => e.status)).toEqual(['done', 'done']);
    } finally {
      await engine.close();
    }
  });
});
