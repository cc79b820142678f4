/**
 * A database migrated by a newer cairn (it records migrations this cairn does not
 * know) is refused when an engine opens it, for writing as for reading, with
 * DatabaseFromFutureError (ERR_DATABASE_FROM_FUTURE): an application's run writes no
 * thread into it, and the CLI says the same. On SQLite and PostgreSQL.
 */
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Engine } from '../../src/contracts/engine.js';
import { migrate as migratePostgres, postgres, POSTGRES_MIGRATIONS } from '../../src/engines/postgres/index.js';
import { openDatabase } from '../../src/engines/sqlite/driver.js';
import { sqlite, SQLITE_MIGRATIONS } from '../../src/engines/sqlite/index.js';
import { DatabaseFromFutureError } from '../../src/errors.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import { field } from '../../src/state/fields.js';
import { defineState } from '../../src/state/schema.js';
import { cairn } from '../cli/run-cli.js';
import { PG_URL, usePostgresSchema } from '../helpers/postgres.js';

const State = defineState({ fields: { n: field.model(z.number(), { default: 0 }) } });
const appOn = (engine: Engine) =>
  graph(State)
    .node('a', (s) => ({ n: s.n + 1 }))
    .edge(START, 'a')
    .edge('a', END)
    .compile({ engine });

const dir = mkdtempSync(join(tmpdir(), 'cairn-future-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function refusal(engine: Engine, what: (engine: Engine) => Promise<unknown>): Promise<unknown> {
  try {
    await what(engine);
    return undefined;
  } catch (error) {
    return error;
  } finally {
    await engine.close();
  }
}

function expectFromFuture(error: unknown, latest: number) {
  expect(DatabaseFromFutureError.is(error), String(error)).toBe(true);
  expect((error as DatabaseFromFutureError).code).toBe('ERR_DATABASE_FROM_FUTURE');
  expect(error).toMatchObject({ newer: [12_000, 12_001], latest });
  expect(String(error)).toContain(`migrated by a newer cairn (migration 12001 "more"; this cairn knows up to ${latest})`);
  expect(String(error)).toContain('Upgrade cairn here');
}

describe('SQLite: a database migrated by a newer cairn', () => {
  const latest = Math.max(...SQLITE_MIGRATIONS.map((m) => m.id));
  const copy = join(dir, 'copy.db');
  const fut = join(dir, 'fut.db');
  const count = (sql: string) => {
    const db = openDatabase(fut, 1000);
    try {
      return db.prepare(sql).pluck().get();
    } finally {
      db.close();
    }
  };

  it('is refused by a read-write open: an application run writes no thread', async () => {
    const writer = sqlite(copy);
    await appOn(writer).run({ thread: 'before' });
    await writer.close();
    copyFileSync(copy, fut);
    const raw = openDatabase(fut, 1000);
    raw.exec(`INSERT INTO cairn_migrations (id, name, applied_at) VALUES (12000, 'future', 1), (12001, 'more', 1)`);
    raw.close();

    const error = await refusal(sqlite(fut), (engine) => appOn(engine).run({ thread: 'after' }));
    expectFromFuture(error, latest);
    expect(count(`SELECT count(*) FROM cairn_threads`)).toBe(1);
    expect(count(`SELECT count(*) FROM cairn_migrations`)).toBe(SQLITE_MIGRATIONS.length + 2);
  });

  it('is refused by a read-only open with the same error, and by the CLI', async () => {
    expectFromFuture(await refusal(sqlite(fut, { readOnly: true }), (engine) => engine.checkpointer.listThreads()), latest);
    const listed = await cairn(['threads', '--db', fut]);
    expect(listed.code).not.toBe(0);
    expect(listed.stderr).toContain('migrated by a newer cairn (migration 12001 "more"');
    const migrated = await cairn(['migrate', '--apply', '--db', fut]);
    expect(migrated.code).not.toBe(0);
    expect(migrated.stderr).toContain('migrated by a newer cairn');
    expect(count(`SELECT count(*) FROM cairn_threads`)).toBe(1);
  });
});

describe('PostgreSQL: a schema migrated by a newer cairn', () => {
  const pg = usePostgresSchema();
  const latest = Math.max(...POSTGRES_MIGRATIONS.map((m) => m.id));

  it('is refused by a read-write and a read-only open alike; nothing is written', async () => {
    const schema = `${pg.schema}_fut`;
    try {
      await migratePostgres(pg.pool, schema);
      await pg.pool.query(`INSERT INTO "${schema}".cairn_migrations (id, name, applied_at) VALUES (12000, 'future', 1), (12001, 'more', 1)`);
      const written = await refusal(postgres(PG_URL, { schema }), (engine) => appOn(engine).run({ thread: 'after' }));
      expectFromFuture(written, latest);
      expect(String(written)).toContain('or point this process at another schema');
      expectFromFuture(await refusal(postgres(PG_URL, { schema, readOnly: true }), (engine) => engine.checkpointer.listThreads()), latest);
      expectFromFuture(await migratePostgres(pg.pool, schema).catch((e: unknown) => e), latest);
      expect((await pg.pool.query(`SELECT count(*)::int AS n FROM "${schema}".cairn_threads`)).rows[0].n).toBe(0);
      const listed = await cairn(['threads', '--db', `${PG_URL}#${schema}`]);
      expect(listed.code).not.toBe(0);
      expect(listed.stderr).toContain('migrated by a newer cairn (migration 12001 "more"');
    } finally {
      await pg.pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    }
  });
});
