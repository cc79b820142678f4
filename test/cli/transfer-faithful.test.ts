/**
 * export / import are faithful: a thread arrives with its createdAt and updatedAt
 * (not the import's time), store namespaces travel with `--store`, the artifacts
 * the threads refer to with `--artifacts`, and `verify` (hash chains and
 * artifacts) passes on both sides. Both commands take `--json`. Older format
 * versions still import.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fsArtifacts } from '../../src/artifacts/fs/index.js';
import { decode } from '../../src/codec/tagged-json.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { exportThreads, importThreads, type TransferRecord } from '../../src/inspect/transfer.js';
import { verifyArtifacts } from '../../src/inspect/artifact-verify.js';
import { verifyThread } from '../../src/inspect/verify.js';
import { workedExample } from '../../src/testing/worked-example.js';
import { PG_URL, usePostgresSchema } from '../helpers/postgres.js';
import { cairn } from './run-cli.js';

const pg = usePostgresSchema();
let dir: string;
let db: string;
let artifacts: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-transfer-faithful-'));
  db = join(dir, 'source.db');
  artifacts = join(dir, 'artifacts');
  const engine = sqlite(db);
  const app = workedExample({ engine, artifacts: fsArtifacts(artifacts) });
  await app.run({ thread: 'cust_42', input: { customerId: 'cust_42' } });
  await app.run({ thread: 'cust_7', input: { customerId: 'cust_7' } });
  await engine.store.put(['cfg'], 'plan', { seats: 3 }, { ttlMs: 86_400_000 });
  await engine.close();
  // Any time an import stamped would differ from the exported ones.
  await new Promise((resolve) => setTimeout(resolve, 30));
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

const threadTimes = (threads: { id: string; createdAt: number; updatedAt: number; status: string; head: number | null; attempts: number }[]) =>
  threads.map(({ id, createdAt, updatedAt, status, head, attempts }) => ({ id, createdAt, updatedAt, status, head, attempts }));

describe('exportThreads / importThreads', () => {
  it('SQLite → PostgreSQL keeps thread times, carries store namespaces and artifacts, and verifies on both sides', async () => {
    const source = sqlite(db, { readOnly: true });
    const target = await pg.engine();
    const from = fsArtifacts(artifacts);
    const to = fsArtifacts(join(dir, 'pg-artifacts'));
    try {
      const report = await importThreads(target, exportThreads(source, ['cust_42', 'cust_7'], { store: [['user']], artifacts: from }), { artifacts: to });
      expect(report).toMatchObject({ threads: ['cust_42', 'cust_7'], storeItems: 2, artifacts: 2, artifactsSkipped: 0 });

      expect(threadTimes(await target.checkpointer.listThreads())).toEqual(threadTimes(await source.checkpointer.listThreads()));
      for (const key of ['42', '7']) expect((await target.store.get(['user', key], 'prefs'))?.value).toEqual((await source.store.get(['user', key], 'prefs'))?.value);
      // Only the namespaces asked for.
      expect(await target.store.get(['cfg'], 'plan')).toBeNull();

      for (const id of ['cust_42', 'cust_7']) {
        expect((await verifyThread(source.checkpointer, id)).ok).toBe(true);
        expect((await verifyThread(target.checkpointer, id)).ok).toBe(true);
      }
      const there = await verifyArtifacts({ artifacts: to, checkpointer: target.checkpointer, store: target.store });
      expect(there).toMatchObject({ ok: true, checked: 2, dangling: [] });
      expect(new TextDecoder().decode(await to.get((await to.head('summary-42.txt'))!))).toContain('(cust_42)');
    } finally {
      await Promise.all([source.close(), target.close(), from.close(), to.close()]);
    }
  });

  it('carries expiry, and refuses a store item the target already has', async () => {
    const source = sqlite(db, { readOnly: true });
    const target = sqlite(join(dir, 'store-target.db'));
    try {
      const records: TransferRecord[] = [];
      for await (const r of exportThreads(source, [], { store: [['cfg']] })) records.push(r);
      expect(records.find((r) => r.type === 'store')).toMatchObject({ namespace: ['cfg'], key: 'plan', value: { seats: 3 } });
      await importThreads(target, records);
      const item = (await target.store.get(['cfg'], 'plan'))!;
      expect(item.value).toEqual({ seats: 3 });
      expect(item.expiresAt).toBeGreaterThan(Date.now() + 86_000_000);
      await expect(importThreads(target, records)).rejects.toThrow('store item cfg/plan already exists in the sqlite engine: import refuses to overwrite it.');
    } finally {
      await Promise.all([source.close(), target.close()]);
    }
  });

  it('imports a version 2 export with the thread times it carries', async () => {
    const source = sqlite(db, { readOnly: true });
    const target = sqlite(join(dir, 'v2-target.db'));
    try {
      const records: TransferRecord[] = [];
      for await (const r of exportThreads(source, ['cust_42'])) records.push(r.type === 'header' ? { type: 'header', format: 'cairn-threads', version: 2, exportedAt: r.exportedAt, engine: r.engine } : r);
      await importThreads(target, records);
      expect(threadTimes(await target.checkpointer.listThreads())).toEqual(threadTimes([(await source.checkpointer.getThread('cust_42'))!]));
      expect((await verifyThread(target.checkpointer, 'cust_42')).ok).toBe(true);
    } finally {
      await Promise.all([source.close(), target.close()]);
    }
  });
});

describe('cairn export / import', () => {
  it('--store and --artifacts on both, --json on both; threads keep their times and verify passes on both sides', async () => {
    const file = join(dir, 'export.jsonl');
    const targetDb = join(dir, 'target.db');
    const targetArtifacts = join(dir, 'target-artifacts');

    const exported = await cairn(['export', '--all', '--db', db, '--store', 'user', '--artifacts', artifacts, '--out', file, '--json']);
    expect(exported.code, exported.stderr).toBe(0);
    expect(JSON.parse(exported.stdout)).toEqual({ threads: 2, positions: 10, storeItems: 2, artifacts: 2 });
    const header = decode<TransferRecord>(readFileSync(file, 'utf8').split('\n')[0]!, 'header');
    expect(header).toMatchObject({ type: 'header', version: 6, store: [['user']], artifacts: true });

    const imported = await cairn(['import', '--db', targetDb, '--in', file, '--artifacts', targetArtifacts, '--json']);
    expect(imported.code, imported.stderr).toBe(0);
    expect(JSON.parse(imported.stdout)).toMatchObject({ threads: ['cust_42', 'cust_7'], positions: 10, storeItems: 2, artifacts: 2, artifactsSkipped: 0 });

    const list = async (at: string) => threadTimes(JSON.parse((await cairn(['threads', '--db', at, '--json'])).stdout));
    expect(await list(targetDb)).toEqual(await list(db));
    for (const [at, store] of [[db, artifacts], [targetDb, targetArtifacts]] as const) {
      const verify = await cairn(['verify', '--db', at, '--artifacts', store]);
      expect(verify.code, verify.stdout + verify.stderr).toBe(0);
      expect(verify.stdout).toContain('ok   artifacts: 2 re-hashed');
    }
  });

  it('import without --artifacts says what it skipped; the human summaries name what moved', async () => {
    const exported = await cairn(['export', 'cust_42', '--db', db, '--artifacts', artifacts]);
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.stderr.trim()).toBe('exported 1 thread, 5 positions, 1 artifact');
    const imported = await cairn(['import', '--db', join(dir, 'no-artifacts.db')], { input: exported.stdout });
    expect(imported.code, imported.stderr).toBe(0);
    expect(imported.stdout.trim()).toMatch(/^imported 1 thread, 5 positions, \d+ ledger entries; skipped 1 artifact: pass --artifacts/);
  });

  it("'-' is stdout for export --out and stdin for import --in, never a file named '-'", async () => {
    const exported = await cairn(['export', 'cust_42', '--db', db, '--out', '-', '--json']);
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.stdout.split('\n')[0]).toContain('"type":"header"');
    expect(JSON.parse(exported.stderr)).toEqual({ threads: 1, positions: 5 });
    const imported = await cairn(['import', '--db', join(dir, 'dash.db'), '--in', '-', '--json'], { input: exported.stdout });
    expect(imported.code, imported.stderr).toBe(0);
    expect(JSON.parse(imported.stdout)).toMatchObject({ threads: ['cust_42'], positions: 5 });
    expect(existsSync(join(process.cwd(), '-'))).toBe(false);
  });

  it('export --artifacts refuses, exit 1, when a thread refers to an artifact the store does not hold', async () => {
    const empty = join(dir, 'empty-artifacts');
    mkdirSync(empty);
    const run = await cairn(['export', 'cust_42', '--db', db, '--artifacts', empty, '--out', join(dir, 'never.jsonl')]);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('refers to artifact key:summary-42.txt, which the fs artifact store does not hold');
  });

  it('copy carries store items and artifacts too, to PostgreSQL', async () => {
    await (await pg.engine()).close();
    const run = await cairn(['copy', 'cust_7', '--db', db, '--to', `${PG_URL}#${pg.schema}`, '--store', 'user/7', '--artifacts', artifacts, '--to-artifacts', join(dir, 'copy-artifacts'), '--json']);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ threads: ['cust_7'], storeItems: 1, artifacts: 1, verify: [{ thread: 'cust_7', source: true, target: true }] });
  });
});
