/** `cairn erase`: without --yes it lists and erases nothing (exit 1); with it, the tenant's threads, store rows and artifacts go and the report says backups are not covered (no encryption). */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { fsArtifacts } from '../../src/artifacts/fs/index.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { canaries, canaryApp, runTenant } from '../helpers/canary-tenants.js';
import { cairn } from './run-cli.js';
import { workedExample } from '../../src/testing/worked-example.js';
import { z } from 'zod';
import { defineState, END, field, graph, START } from '../../src/index.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cairn-cli-erase-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

it('cairn erase --tenant: a listing without --yes, the erasure and its report with it; bad usage is refused', async () => {
  const db = join(dir, 'cairn.db');
  const engine = sqlite(db);
  const app = canaryApp(engine, fsArtifacts(join(dir, 'artifacts')));
  await runTenant(app, 'A', canaries('A'));
  await runTenant(app, 'B', canaries('B'), 1);
  await engine.close();

  const dry = await cairn(['erase', '--tenant', 'A', '--db', db, '--artifacts', join(dir, 'artifacts')]);
  expect(dry.code).toBe(1);
  expect(dry.stdout).toMatch(/would erase tenant A: 2 threads \(A-t0, A-t1\)\. Nothing erased: pass --yes/);

  const run = await cairn(['erase', '--tenant', 'A', '--db', db, '--artifacts', join(dir, 'artifacts'), '--store', 'tenants/A', '--yes', '--json']);
  expect(run.code).toBe(0);
  const report = JSON.parse(run.stdout);
  expect(report).toMatchObject({ scope: 'tenant:A', threads: ['A-t0', 'A-t1'], store: { items: 1 }, artifacts: { deleted: 1 }, keys: { encrypted: false }, covers: { backups: false }, found: true });

  const human = await cairn(['erase', '--thread', 'B-t0', '--db', db]);
  expect(human.code).toBe(1);
  const refused = await cairn(['erase', '--thread', 'B-t0', '--db', db, '--yes']);
  expect(refused.code).toBe(2);
  expect(refused.stderr).toMatch(/belongs to tenant "B"/);
  expect((await cairn(['erase', '--db', db, '--yes'])).code).not.toBe(0);

  const check = sqlite(db);
  expect((await check.checkpointer.listThreads()).map((t) => t.id)).toEqual(['B-t0']);
  await check.close();
});

it('cairn erase --tenant of a tenant with nothing stored says nothing was found, and still exits 0 (an erasure is safe to retry)', async () => {
  const db = join(dir, 'typo.db');
  const engine = sqlite(db);
  const app = canaryApp(engine, fsArtifacts(join(dir, 'typo-artifacts')));
  await runTenant(app, 'A', canaries('A'));
  await engine.close();

  const dry = await cairn(['erase', '--tenant', 'nope', '--db', db]);
  expect(dry.code).toBe(1);
  expect(dry.stdout).toContain('would erase tenant nope: 0 threads (no thread of this tenant was found: check the name');
  const human = await cairn(['erase', '--tenant', 'nope', '--db', db, '--yes']);
  expect(human.code, human.stderr).toBe(0);
  expect(human.stdout).toContain('erased tenant:nope: nothing found: no threads, store rows, artifacts or data keys of tenant "nope". Check the name');
  const json = await cairn(['erase', '--tenant', 'nope', '--db', db, '--artifacts', join(dir, 'typo-artifacts'), '--store', 'tenants/nope', '--yes', '--json']);
  expect(json.code, json.stderr).toBe(0);
  expect(JSON.parse(json.stdout)).toMatchObject({ scope: 'tenant:nope', threads: [], store: { items: 0 }, artifacts: { deleted: 0 }, found: false });

  // The real tenant is found; erased again, nothing of it is left to find.
  const first = await cairn(['erase', '--tenant', 'A', '--db', db, '--store', 'tenants/A', '--yes', '--json']);
  expect(JSON.parse(first.stdout)).toMatchObject({ threads: ['A-t0', 'A-t1'], found: true });
  const again = await cairn(['erase', '--tenant', 'A', '--db', db, '--store', 'tenants/A', '--yes']);
  expect(again.code).toBe(0);
  expect(again.stdout).toContain('erased tenant:A: nothing found');
});

it('cairn erase --thread reports its counts with the right plurals (1 signal, 1 blob)', async () => {
  const db = join(dir, 'worked.db');
  const artifacts = join(dir, 'worked-artifacts');
  const engine = sqlite(db);
  await workedExample({ engine, artifacts: fsArtifacts(artifacts) }).run({ thread: 'cust_42', input: { customerId: 'cust_42' } });
  await engine.close();
  expect((await cairn(['signal', 'cust_42', 'payment', '--db', db])).code).toBe(0);
  const run = await cairn(['erase', '--thread', 'cust_42', '--db', db, '--artifacts', artifacts, '--yes']);
  expect(run.code, run.stderr).toBe(0);
  expect(run.stdout).toContain('  rows: 5 positions, 4 items, 0 snapshots, 0 pending writes, 0 failures, 5 ledger entries, 1 signal, 0 pins\n');
  expect(run.stdout).toMatch(/ {2}artifacts: 1 deleted \(1 blob, \d+ bytes\), 0 kept/);
});

it('cairn erase without --yes: a thread that is not there is ERR_THREAD_NOT_FOUND, as with --yes; a tenant\'s threads are all counted, past one page', async () => {
  const db = join(dir, 'many.db');
  const engine = sqlite(db);
  const State = defineState({ fields: { n: field.model(z.number(), { default: 0 }) } });
  const app = graph(State).node('one', () => ({ n: 1 })).edge(START, 'one').edge('one', END).compile({ engine });
  for (let i = 0; i < 1001; i++) await app.run({ thread: `m-${String(i).padStart(4, '0')}`, tenant: 'many' });
  await engine.close();

  const missing = await cairn(['erase', '--thread', 'nope', '--db', db, '--json']);
  expect(missing.code).toBe(1);
  expect(missing.stdout).toBe('');
  expect((JSON.parse(missing.stderr) as { error: { code: string } }).error.code).toBe('ERR_THREAD_NOT_FOUND');

  const listed = await cairn(['erase', '--tenant', 'many', '--db', db]);
  expect(listed.code).toBe(1);
  expect(listed.stdout).toContain('would erase tenant many: 1001 threads (m-0000, ');
  const json = await cairn(['erase', '--tenant', 'many', '--db', db, '--json']);
  expect((JSON.parse(json.stdout) as { threads: string[] }).threads).toHaveLength(1001);
}, 120_000);
