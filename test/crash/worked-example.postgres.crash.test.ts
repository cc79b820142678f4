/**
 * The worked example killed with SIGKILL on PostgreSQL, at every crash point where
 * its transactions meet the run: every commit and snapshot, the store write's six
 * effect points, one recorded output. (The upload's effect points and the other
 * recorded outputs write the same ledger rows the same way; every point runs on
 * SQLite in worked-example.crash.test.ts.) Each case in a schema of its own; resumed by a new process, it reaches the crash-free
 * final state with the object uploaded once, the store write applied once, no
 * committed step lost and the chain intact.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recoveryChecks, runExampleProcess, type ExampleRun } from '../../dist/testing/crash-harness.js';
import { postgres } from '../../dist/engines/postgres/index.js';
import { PG_URL } from '../helpers/postgres.js';
import { caseDir, referenceRun, WORKED_EXAMPLE_CRASHES } from './crash-setup.js';

const ARGS = ['--fixed-clock', '--snapshot-every', '2'];
const POSTGRES_CRASHES = WORKED_EXAMPLE_CRASHES.filter((point) => !point.endsWith(':put_object') || point.includes('commit')).filter((point) => !point.startsWith('after-record:') || point === 'after-record:generate_summary');
let admin: pg.Pool;
let reference: ExampleRun;
const schemas: string[] = [];

beforeAll(async () => {
  admin = new pg.Pool({ connectionString: PG_URL, max: 2 });
  reference = await referenceRun('worked', ARGS);
});
afterAll(async () => {
  for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await admin.end();
});

describe('worked example survives SIGKILL on PostgreSQL', () => {
  it.each(POSTGRES_CRASHES)('at %s', async (crashAt) => {
    const { artifacts, dir } = caseDir('pg-worked');
    const pgSchema = `cairn_test_${Date.now()}_crash_${Math.random().toString(36).slice(2, 8)}`;
    schemas.push(pgSchema);
    const effectLog = join(dir, 'effects.log');
    const args = [...ARGS, '--effect-log', effectLog];
    const target = { db: PG_URL, pgSchema, artifacts, args };

    const first = await runExampleProcess({ ...target, crashAt });
    expect(first.signal, `the crash point ${crashAt} must be reached (${first.stderr})`).toBe('SIGKILL');
    const second = await runExampleProcess(target);
    expect(second.exitCode, second.stderr).toBe(0);

    for (const check of await recoveryChecks({ db: PG_URL, pgSchema, thread: 'cust_42', first, last: second, reference })) {
      expect(check.ok, `${check.name}: ${check.detail}`).toBe(true);
    }
    const uploads = existsSync(effectLog) ? readFileSync(effectLog, 'utf8').split('\n').filter((l) => l.startsWith('put_object ')) : [];
    expect(uploads, 'the object is uploaded exactly once').toHaveLength(1);
    const engine = postgres(PG_URL, { schema: pgSchema, max: 2 });
    try {
      expect((await engine.store.get(['user', '42'], 'prefs'))?.version, 'the store write applies once').toBe(1);
      expect((await engine.ledger.list('cust_42')).filter((e) => e.kind === 'effect').map((e) => e.status)).toEqual(['done', 'done']);
    } finally {
      await engine.close();
    }
  });
});
