/**
 * The erasure canary test. Tenants A and B run graphs whose state fields, list items,
 * snapshots, recorded outputs, effect outcomes, store values, signals and artifact
 * bytes carry unique canaries, on an encrypted engine with a key file; a backup and an
 * export are taken; A is erased. Then every byte of the database (SQLite: the file and
 * its WAL; PostgreSQL: the schema's table and TOAST files under the data directory, and
 * a pg_dump), the backup, the exports and the artifact store (a directory; the S3
 * server's storage) is scanned for A's canaries: none. The backup and A's export do not
 * open any more (their keys are gone); B's data reads back intact through the API, and
 * B's export imports into another database with the same key file.
 */
import { execFileSync } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { copyFile, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ArtifactStore } from '../../src/contracts/artifact-store.js';
import type { Engine } from '../../src/contracts/engine.js';
import { decode, encode } from '../../src/codec/tagged-json.js';
import { fsArtifacts } from '../../src/artifacts/fs/index.js';
import { encryptedArtifacts } from '../../src/crypto/artifacts.js';
import { encrypted, keyFile, tenantScope, SHARED_STORE_SCOPE } from '../../src/crypto/index.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { postgres } from '../../src/engines/postgres/index.js';
import { exportThreads, importThreads, type TransferRecord } from '../../src/inspect/transfer.js';
import { canaries, canaryApp, runTenant, scan } from '../helpers/canary-tenants.js';
import { usePostgresSchema, PG_URL } from '../helpers/postgres.js';
import { freshS3Store, startS3Server, type S3Server } from '../artifacts/s3-server.js';

const storeScope = (ns: readonly string[]) => (ns[0] === 'tenants' && ns[1] ? tenantScope(ns[1]) : SHARED_STORE_SCOPE);

async function writeExport(engine: Engine, tenant: string, threads: string[], artifacts: ArtifactStore, path: string): Promise<void> {
  const out = createWriteStream(path);
  for await (const record of exportThreads(engine, threads, { store: [['tenants', tenant]], artifacts })) out.write(`${encode(record)}\n`);
  await new Promise((resolve) => out.end(resolve));
}

async function readExport(path: string): Promise<TransferRecord[]> {
  return (await readFile(path, 'utf8')).split('\n').filter(Boolean).map((line) => decode<TransferRecord>(line, 'export line'));
}

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cairn-erase-canary-'));
});
afterAll(() => rm(dir, { recursive: true, force: true }));

/** Runs both tenants, takes the copies, erases A, and checks what both tenants left. */
async function scenario(engine: Engine, plainArtifacts: ArtifactStore, keysPath: string, where: string, backup: () => Promise<string[]>, files: () => Promise<string[]>, fresh: () => Engine) {
  const artifacts = encryptedArtifacts(plainArtifacts, { engine });
  const app = canaryApp(engine, artifacts);
  const a = canaries('A');
  const b = canaries('B');
  const aThreads = await runTenant(app, 'A', a);
  const bThreads = await runTenant(app, 'B', b);

  const exportA = join(dir, `${where}-a.jsonl`);
  const exportB = join(dir, `${where}-b.jsonl`);
  await writeExport(engine, 'A', aThreads, artifacts, exportA);
  await writeExport(engine, 'B', bThreads, artifacts, exportB);
  const backups = await backup();

  const report = await app.erase({ tenant: 'A' });
  expect(report.threads).toEqual(aThreads);
  expect(report.store.items).toBe(1);
  expect(report.artifacts?.deleted).toBe(1);
  expect(report.keys).toMatchObject({ encrypted: true, provider: 'key-file', providerDestroys: true, scopes: ['tenant:A'] });
  expect(report.keys.destroyed).toBeGreaterThan(0);
  expect(report.covers).toEqual({ backups: true, exports: true, artifactCopies: true });

  // Not one of A's canaries in any byte of the database, the copies or the artifacts.
  expect(await scan([...(await files()), ...backups, exportA, exportB], a)).toEqual([]);

  // A's export does not open any more; B's imports into another database with the same keys.
  const target = fresh();
  const targetArtifacts = encryptedArtifacts(fsArtifacts(join(dir, `${where}-target-artifacts`)), { engine: target });
  await expect(importThreads(target, await readExport(exportA), { artifacts: targetArtifacts })).rejects.toMatchObject({ code: 'ERR_KEY_UNAVAILABLE' });
  const imported = await importThreads(target, await readExport(exportB), { artifacts: targetArtifacts });
  expect(imported.threads).toEqual(bThreads);
  const copy = canaryApp(target, targetArtifacts);
  expect((await copy.getState({ thread: bThreads[0]! })).out).toBe(b.record);
  await target.close();

  // B intact through the API: state, items, the recorded output, the artifact, the store value.
  for (const thread of bThreads) {
    const state = await app.getState({ thread });
    expect(state.out).toBe(b.record);
    expect(state.items).toHaveLength(3);
    expect(state.items[2]).toContain(b.signal);
    expect(new TextDecoder().decode(await artifacts.forTenant('B').get(state.file)).startsWith(b.artifact)).toBe(true);
  }
  expect((await engine.store.get(['tenants', 'B', 'prefs'], 'p'))?.value).toEqual({ v: b.store });
  expect(await engine.checkpointer.listThreads({ tenant: 'A' })).toEqual([]);
  void keysPath;
  return { a, b, aThreads, bThreads };
}

describe('erasure canaries', () => {
  it('SQLite + fs: nothing of A in the file, its WAL, a backup taken before, the exports or the artifact directory; the backup opens for B only', async () => {
    const db = join(dir, 'cairn.db');
    const keysPath = join(dir, 'keys.json');
    const engine = encrypted(sqlite(db), { keys: keyFile(keysPath), storeScope });
    const artifactsDir = join(dir, 'artifacts');
    const { aThreads, bThreads, b } = await scenario(
      engine,
      fsArtifacts(artifactsDir),
      keysPath,
      'sqlite',
      async () => {
        await copyFile(db, join(dir, 'backup.db'));
        await copyFile(`${db}-wal`, join(dir, 'backup.db-wal'));
        return [join(dir, 'backup.db'), join(dir, 'backup.db-wal')];
      },
      async () => [db, `${db}-wal`, artifactsDir],
      () => encrypted(sqlite(join(dir, 'target.db')), { keys: keyFile(keysPath), storeScope }),
    );
    await engine.close();
    // The backup, opened with the key file: A's rows do not open, B's do.
    const restored = encrypted(sqlite(join(dir, 'backup.db')), { keys: keyFile(keysPath), storeScope });
    const app = canaryApp(restored, encryptedArtifacts(fsArtifacts(artifactsDir), { engine: restored }));
    await expect(app.getState({ thread: aThreads[0]! })).rejects.toMatchObject({ code: 'ERR_KEY_UNAVAILABLE' });
    expect((await app.getState({ thread: bThreads[0]! })).out).toBe(b.record);
    await restored.close();
  });

  describe('PostgreSQL + S3', () => {
    const pg = usePostgresSchema();
    let server: S3Server;
    beforeAll(async () => {
      server = await startS3Server();
    });
    afterAll(() => server?.stop());

    it('nothing of A in the schema’s table and TOAST files, a pg_dump before and after, the exports or the S3 server’s storage', async () => {
      const keysPath = join(dir, 'pg-keys.json');
      const engine = encrypted(await pg.engine(), { keys: keyFile(keysPath), storeScope });
      const dump = (name: string) => {
        const path = join(dir, name);
        execFileSync('pg_dump', ['--dbname', PG_URL, '--schema', pg.schema, '--file', path]);
        return path;
      };
      const targetSchema = `${pg.schema}_t`;
      await scenario(
        engine,
        freshS3Store(server),
        keysPath,
        'pg',
        async () => [dump('before.sql')],
        async () => {
          // Dirty pages reach the table files at a checkpoint.
          await pg.pool.query('CHECKPOINT');
          const rels = await pg.pool.query<{ path: string }>(
            `SELECT pg_relation_filepath(c.oid) AS path FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
              WHERE n.nspname = $1 AND c.relkind IN ('r', 't', 'i')
             UNION SELECT pg_relation_filepath(t.oid) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_class t ON t.oid = c.reltoastrelid WHERE n.nspname = $1`,
            [pg.schema],
          );
          const dataDir = (await pg.pool.query<{ data_directory: string }>('SHOW data_directory')).rows[0]!.data_directory;
          const paths = rels.rows.filter((r) => r.path).map((r) => join(dataDir, r.path));
          expect(paths.length).toBeGreaterThan(10);
          return [...paths, dump('after.sql'), server.directory];
        },
        () => encrypted(postgres(PG_URL, { schema: targetSchema }), { keys: keyFile(keysPath), storeScope }),
      );
      await engine.close();
      await pg.pool.query(`DROP SCHEMA IF EXISTS "${targetSchema}" CASCADE`);
    });
  });
});
