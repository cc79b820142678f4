/**
 * Engines opened with `readOnly`: they read an existing cairn database and never
 * create or migrate anything. Where there is no cairn database (a missing SQLite
 * file or folder, a file or schema without cairn's tables, a schema that does not
 * exist) they say so with DatabaseNotFoundError and leave no file or schema behind;
 * a database older than this cairn is DatabaseOutdatedError, left as it was.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/contracts/engine.js';
import { migrate as migratePostgres, postgres, POSTGRES_MIGRATIONS } from '../../src/engines/postgres/index.js';
import { openDatabase } from '../../src/engines/sqlite/driver.js';
import { migrate as migrateSqlite, sqlite, SQLITE_MIGRATIONS } from '../../src/engines/sqlite/index.js';
import { DatabaseNotFoundError, DatabaseOutdatedError, EngineError } from '../../src/errors.js';
import { PG_URL, usePostgresSchema } from '../helpers/postgres.js';

async function failure(engine: Engine): Promise<unknown> {
  try {
    await engine.checkpointer.listThreads();
  } catch (error) {
    return error;
  } finally {
    await engine.close();
  }
  return undefined;
}

describe('SQLite engine with readOnly', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'cairn-ro-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('reads a cairn database and refuses writes with EngineError', async () => {
    const file = join(dir, 'cairn.db');
    const writer = sqlite(file);
    await writer.store.put(['cfg'], 'plan', { seats: 3 });
    await writer.close();
    const reader = sqlite(file, { readOnly: true });
    try {
      expect(await reader.store.get(['cfg'], 'plan')).toMatchObject({ value: { seats: 3 }, version: 1 });
      expect(await reader.checkpointer.listThreads()).toEqual([]);
      const error = await reader.store.put(['cfg'], 'plan', { seats: 4 }).catch((e: unknown) => e);
      expect(EngineError.is(error), String(error)).toBe(true);
      expect(String(error)).toContain('opened with readOnly');
    } finally {
      await reader.close();
    }
  });

  it('creates no file for a path that does not exist, and says there is no cairn database there', async () => {
    for (const file of [join(dir, 'typo.db'), join(dir, 'no-such-folder', 'cairn.db')]) {
      const error = await failure(sqlite(file, { readOnly: true }));
      expect(DatabaseNotFoundError.is(error), String(error)).toBe(true);
      expect((error as DatabaseNotFoundError).message).toContain(`no cairn database at ${file}: there is no such file. Nothing was created.`);
      expect(existsSync(file)).toBe(false);
    }
  });

  it('refuses a SQLite file without cairn tables, and creates none', async () => {
    const file = join(dir, 'other.db');
    const made = openDatabase(file, 1000);
    made.exec('CREATE TABLE t (x)');
    made.close();
    const error = await failure(sqlite(file, { readOnly: true }));
    expect(DatabaseNotFoundError.is(error), String(error)).toBe(true);
    expect(String(error)).toContain('the file holds no cairn tables');
    const raw = openDatabase(file, 1000);
    expect(raw.prepare(`SELECT name FROM sqlite_master WHERE type = 'table'`).pluck().all()).toEqual(['t']);
    raw.close();
  });

  it('refuses a database older than this cairn, naming the migrations it lacks and the command that upgrades it, and migrates nothing', async () => {
    const file = join(dir, 'old.db');
    const raw = openDatabase(file, 1000);
    migrateSqlite(raw, SQLITE_MIGRATIONS.slice(0, -1));
    raw.close();
    const latest = SQLITE_MIGRATIONS.at(-1)!.id;
    const error = await failure(sqlite(file, { readOnly: true }));
    expect(DatabaseOutdatedError.is(error), String(error)).toBe(true);
    expect(error).toMatchObject({ missing: [latest], latest });
    expect(String(error)).toContain(`cairn migrate --apply --db ${file}`);
    const check = openDatabase(file, 1000);
    expect(check.prepare('SELECT max(id) FROM cairn_migrations').pluck().get()).toBe(SQLITE_MIGRATIONS.at(-2)!.id);
    check.close();
  });
});

describe('PostgreSQL engine with readOnly', () => {
  const pg = usePostgresSchema();
  const schemaExists = async (name: string) => (await pg.pool.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [name])).rowCount === 1;

  it('reads a migrated schema', async () => {
    const writer = await pg.engine();
    await writer.store.put(['cfg'], 'plan', { seats: 3 });
    await writer.close();
    const reader = postgres(PG_URL, { schema: pg.schema, readOnly: true });
    try {
      expect(await reader.store.get(['cfg'], 'plan')).toMatchObject({ value: { seats: 3 } });
    } finally {
      await reader.close();
    }
  });

  it('creates no schema for a name that does not exist, and says there is no cairn database there', async () => {
    const typo = `${pg.schema}_typo`;
    const error = await failure(postgres(PG_URL, { schema: typo, readOnly: true }));
    expect(DatabaseNotFoundError.is(error), String(error)).toBe(true);
    expect(String(error)).toContain(`no cairn database at ${PG_URL}#${typo}: there is no schema "${typo}" in this database. Nothing was created.`);
    expect(await schemaExists(typo)).toBe(false);
  });

  it('refuses a schema without cairn tables, and an older one, changing neither', async () => {
    const empty = `${pg.schema}_empty`;
    const old = `${pg.schema}_old`;
    try {
      await pg.pool.query(`CREATE SCHEMA "${empty}"`);
      const none = await failure(postgres(PG_URL, { schema: empty, readOnly: true }));
      expect(DatabaseNotFoundError.is(none), String(none)).toBe(true);
      expect(String(none)).toContain(`schema "${empty}" holds no cairn tables`);
      expect((await pg.pool.query(`SELECT 1 FROM pg_tables WHERE schemaname = $1`, [empty])).rowCount).toBe(0);

      await migratePostgres(pg.pool, old, POSTGRES_MIGRATIONS.slice(0, -1));
      const latest = POSTGRES_MIGRATIONS.at(-1)!.id;
      const outdated = await failure(postgres(PG_URL, { schema: old, readOnly: true }));
      expect(DatabaseOutdatedError.is(outdated), String(outdated)).toBe(true);
      expect(outdated).toMatchObject({ missing: [latest], latest });
      expect((await pg.pool.query(`SELECT max(id) AS id FROM "${old}".cairn_migrations`)).rows[0].id).toBe(POSTGRES_MIGRATIONS.at(-2)!.id);
    } finally {
      await pg.pool.query(`DROP SCHEMA IF EXISTS "${empty}" CASCADE; DROP SCHEMA IF EXISTS "${old}" CASCADE`);
    }
  });

  it('masks the password of the URL it names', async () => {
    const url = PG_URL.replace('postgres://postgres@', 'postgres://postgres:secret@');
    const error = await failure(postgres(url, { schema: `${pg.schema}_nope`, readOnly: true }));
    expect(String(error)).toContain('postgres://postgres:***@');
    expect(String(error)).not.toContain('secret');
  });
});
