/**
 * eraseTenant on a SQLite file and an fs artifact store without encryption: tenant A's
 * threads, store rows and artifacts are deleted and its canaries are gone from the
 * database file, its WAL and the artifact directory; tenant B reads back intact; the
 * backup taken before still holds A, and the report says so. Thread erasure, a tenant
 * thread refused, a live run fenced.
 */
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fsArtifacts } from '../../src/artifacts/fs/index.js';
import { encrypted, keyFile } from '../../src/crypto/index.js';
import { memory } from '../../src/engines/memory/index.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { eraseTenant } from '../../src/inspect/erase.js';
import { canaries, canaryApp, runTenant, scan } from '../helpers/canary-tenants.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cairn-erase-'));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

describe('eraseTenant without encryption (SQLite + fs)', () => {
  it("deletes A's threads, store rows and artifacts, leaves none of A's canaries in the file, its WAL or the artifacts, keeps B, and says backups are not covered", async () => {
    const db = join(dir, 'cairn.db');
    const engine = sqlite(db);
    const artifacts = fsArtifacts(join(dir, 'artifacts'));
    const app = canaryApp(engine, artifacts);
    const a = canaries('A');
    const b = canaries('B');
    const aThreads = await runTenant(app, 'A', a);
    const bThreads = await runTenant(app, 'B', b);
    await copyFile(db, join(dir, 'backup.db'));
    await copyFile(`${db}-wal`, join(dir, 'backup.db-wal'));
    expect((await scan([db, `${db}-wal`, join(dir, 'artifacts')], a)).length).toBeGreaterThan(0);

    const report = await app.erase({ tenant: 'A', store: [['tenants', 'A']] });
    expect(report.threads).toEqual(aThreads);
    expect(report.rows.positions).toBeGreaterThan(0);
    expect(report.rows.snapshots).toBeGreaterThan(0);
    expect(report.rows.ledgerEntries).toBeGreaterThan(0);
    expect(report.rows.signals).toBe(2);
    expect(report.store).toMatchObject({ items: 1, namespaces: [['tenants', 'A', 'prefs']] });
    expect(report.artifacts).toMatchObject({ deleted: 1, blobs: 1, keptShared: 0 });
    expect(report.keys).toMatchObject({ encrypted: false, provider: null, scopes: [] });
    expect(report.covers).toEqual({ backups: false, exports: false, artifactCopies: false });
    expect(report.notes.join(' ')).toMatch(/not encrypted/);
    expect(report.files?.done.join(' ')).toMatch(/secure_delete.*WAL checkpointed and truncated/s);

    // The WAL is truncated and the artifacts' bytes are gone; deleted rows are zeroed, but
    // older versions of rows updated during the runs stay in pages' free space in the
    // clear: only encryption covers those (erase-canary tests), and the report says so.
    expect(await scan([`${db}-wal`, join(dir, 'artifacts')], a)).toEqual([]);
    expect(report.files?.remains.join(' ')).toMatch(/free space inside pages.*in the clear without encryption/);
    // VACUUM (safe since migration 11: items keep their rowids) rewrites the file without them.
    const vacuumed = await eraseTenant(engine, { tenant: 'A', vacuum: true });
    expect(vacuumed.files?.done.join(' ')).toMatch(/VACUUM/);
    expect(await scan([db, `${db}-wal`], a)).toEqual([]);
    // What erasure without encryption cannot reach: the copy taken before.
    expect((await scan([join(dir, 'backup.db'), join(dir, 'backup.db-wal')], a)).length).toBeGreaterThan(0);

    for (const thread of bThreads) {
      const state = await app.getState({ thread });
      expect(state.items).toHaveLength(3);
      expect(state.out).toBe(b.record);
      expect(new TextDecoder().decode(await artifacts.forTenant('B').get(state.file)).startsWith(b.artifact)).toBe(true);
    }
    expect((await engine.store.get(['tenants', 'B', 'prefs'], 'p'))?.value).toEqual({ v: b.store });
    expect(await engine.checkpointer.listThreads({ tenant: 'A' })).toEqual([]);
    expect((await scan([db, join(dir, 'artifacts')], b)).length).toBeGreaterThan(0);
    await engine.close();
  });

  it('reports found: false for a tenant of which nothing is stored (a typo), and found: true for one erased', async () => {
    const engine = sqlite(join(dir, 'cairn.db'));
    const artifacts = fsArtifacts(join(dir, 'artifacts'));
    const app = canaryApp(engine, artifacts);
    await runTenant(app, 'A', canaries('A'));
    const typo = await eraseTenant(engine, { tenant: 'a', artifacts, store: [['tenants', 'a']] });
    expect(typo).toMatchObject({ threads: [], store: { items: 0, pins: 0 }, artifacts: { deleted: 0, keptShared: 0 }, found: false });
    expect((await eraseTenant(engine, { tenant: 'A', artifacts, store: [['tenants', 'A']] })).found).toBe(true);
    expect((await eraseTenant(engine, { tenant: 'A', artifacts, store: [['tenants', 'A']] })).found).toBe(false);
    await engine.close();
  });

  it('refuses options it does not take, and values of the wrong kind, before anything is erased', async () => {
    const engine = sqlite(join(dir, 'cairn.db'));
    const artifacts = fsArtifacts(join(dir, 'artifacts'));
    const app = canaryApp(engine, artifacts);
    await runTenant(app, 'A', canaries('A'), 1);
    const cases: unknown[] = [
      { tenant: 'A', artifact: artifacts },
      { tenant: 'A', stores: [['tenants', 'A']] },
      { tenant: 'A', vacuum: 'yes' },
      { tenant: 'A', actor: 7 },
      { tenant: 'A', store: ['tenants', 'A'] },
      null,
      'A',
    ];
    for (const options of cases) {
      await expect(eraseTenant(engine, options as never), JSON.stringify(options)).rejects.toMatchObject({ code: 'ERR_INVALID_OPTION' });
      await expect(app.erase(options as never), JSON.stringify(options)).rejects.toMatchObject({ code: 'ERR_INVALID_OPTION' });
    }
    expect((await engine.checkpointer.listThreads({ tenant: 'A' })).map((t) => t.id)).toEqual(['A-t0']);
    await engine.close();
  });

  it('refuses a store namespace that is empty (every tenant\'s rows) or holds a label no write accepts, erasing nothing', async () => {
    const engine = sqlite(join(dir, 'cairn.db'));
    const artifacts = fsArtifacts(join(dir, 'artifacts'));
    const app = canaryApp(engine, artifacts);
    await runTenant(app, 'A', canaries('A'), 1);
    await engine.store.put(['tenants', 'A', 'prefs'], 'p', { v: 'a' });
    await engine.store.put(['tenants', 'B', 'prefs'], 'p', { v: 'b' });
    const cases: [unknown, string][] = [
      [[[]], 'ERR_INVALID_OPTION'],
      [[['tenants', 'A'], []], 'ERR_INVALID_OPTION'],
      [[['tenants', '']], 'ERR_INVALID_KEY'],
      [[['tenants', 'A\u0000']], 'ERR_INVALID_KEY'],
    ];
    for (const [store, code] of cases) {
      await expect(eraseTenant(engine, { tenant: 'A', artifacts, store } as never), JSON.stringify(store)).rejects.toMatchObject({ code });
      await expect(app.erase({ tenant: 'A', store } as never), JSON.stringify(store)).rejects.toMatchObject({ code });
    }
    expect((await engine.checkpointer.listThreads({ tenant: 'A' })).map((t) => t.id)).toEqual(['A-t0']);
    expect((await engine.store.get(['tenants', 'A', 'prefs'], 'p'))?.value).toEqual({ v: 'a' });
    expect((await engine.store.get(['tenants', 'B', 'prefs'], 'p'))?.value).toEqual({ v: 'b' });
    await engine.close();
  });

  it('erases a thread without a tenant; refuses a tenant thread and a missing one with typed errors; fences a live run', async () => {
    const engine = sqlite(join(dir, 'cairn.db'));
    const artifacts = fsArtifacts(join(dir, 'artifacts'));
    const app = canaryApp(engine, artifacts);
    const c = canaries('solo');
    await app.run({ thread: 'solo', input: { note: JSON.stringify({ ...c, tenant: 'solo' }) } });
    await runTenant(app, 'T', canaries('T'), 1);
    await expect(eraseTenant(engine, { thread: 'T-t0' })).rejects.toMatchObject({ code: 'ERR_INVALID_OPTION' });
    await expect(eraseTenant(engine, { thread: 'nope' })).rejects.toMatchObject({ code: 'ERR_THREAD_NOT_FOUND' });
    await expect(eraseTenant(engine, {})).rejects.toMatchObject({ code: 'ERR_INVALID_OPTION' });

    // A live holder: the lease taken over, the thread deleted under it.
    const held = await engine.checkpointer.acquireThread('solo', { owner: { runId: 'other', pid: 1, host: 'elsewhere' }, leaseMs: 60_000 });
    const report = await eraseTenant(engine, { thread: 'solo', artifacts });
    expect(report).toMatchObject({ scope: 'thread:solo', tenant: null, threads: ['solo'], fenced: ['solo'] });
    expect(report.artifacts?.deleted).toBe(1);
    await expect(engine.checkpointer.commitStep(held, { position: { ns: '', seq: 99 } as never, items: [], status: 'running', expectedHead: null })).rejects.toBeTruthy();
    expect(await engine.checkpointer.getThread('solo')).toBeNull();
    expect(await engine.checkpointer.getThread('T-t0')).not.toBeNull();
    await engine.close();
  });
});

describe('eraseTenant of a tenant no thread can have', () => {
  it('is InvalidKeyError on a plain and an encrypted engine alike, before anything is erased', async () => {
    for (const engine of [memory(), encrypted(memory(), { keys: keyFile(join(dir, 'keys.json')) })]) {
      for (const tenant of ['a\u0000b', 'a\uD800', 'x'.repeat(257), 'tab\there']) {
        await expect(eraseTenant(engine, { tenant }), JSON.stringify(tenant)).rejects.toMatchObject({ code: 'ERR_INVALID_KEY' });
      }
      await engine.close();
    }
  });
});
