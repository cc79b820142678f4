/**
 * The indexes listing by update time walks (migration 7: the root heads' time; since
 * SQLite migration 12 and PostgreSQL migration 11, the second of updatedAt kept on the
 * thread row) on databases made at migration 6, on SQLite and PostgreSQL: the engine
 * opening it runs both, fills each thread's second from its row and its root head
 * (never a child's) and records the migrations, and threads made before list most
 * recently updated first, whether their time is the row's or their head's (several in
 * one second), paged without a repeat or a miss.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Engine } from '../../src/contracts/engine.js';
import { migrate as migratePostgres, postgres, POSTGRES_MIGRATIONS } from '../../src/engines/postgres/index.js';
import { openDatabase } from '../../src/engines/sqlite/driver.js';
import { migrate as migrateSqlite, sqlite, SQLITE_MIGRATIONS } from '../../src/engines/sqlite/index.js';
import { PG_URL, usePostgresSchema } from '../helpers/postgres.js';

/** [id, row updated_at, root head time or null]: the later of the two is the thread's updatedAt. */
const THREADS: [string, number, number | null][] = [
  ['a', 1000, 5000],
  ['b', 4000, 2000],
  ['c', 3000, null],
  ['d', 1500, 4500],
  ['e', 4500, 4500],
  ['f', 6000, 100],
  ['g', 100, 4500],
];
/** Each thread's second of updatedAt, as the migration fills it in (a child's head, newer, never counts). */
const SECONDS = THREADS.map(([id, row, head]) => ({ id, updated_second: Math.trunc(Math.max(row, head ?? 0) / 1000) }));

/** Most recently updated first, ties by id. */
const EXPECTED = THREADS.map(([id, row, head]) => ({ id, at: Math.max(row, head ?? 0) }))
  .sort((x, y) => y.at - x.at || (x.id < y.id ? -1 : 1))
  .map((t) => t.id);

const threadRows = (tid: (i: number) => string) =>
  THREADS.map(([id, row], i) => `(${tid(i)}'${id}', 'task', 'completed', 1, '{"n":${i}}', 1, 1, ${row})`).join(', ');

async function listsByUpdate(engine: Engine): Promise<void> {
  const cp = engine.checkpointer;
  const all = await cp.listThreads({ order: 'updatedAt' });
  expect(all.map((t) => t.id)).toEqual(EXPECTED);
  expect(all.map((t) => t.updatedAt)).toEqual(EXPECTED.map((id) => THREADS.find((t) => t[0] === id)!).map(([, row, head]) => Math.max(row, head ?? 0)));
  for (const size of [1, 2, 3]) {
    const seen: string[] = [];
    for (let page = await cp.listThreads({ order: 'updatedAt', limit: size }); page.length; ) {
      seen.push(...page.map((t) => t.id));
      page = await cp.listThreads({ order: 'updatedAt', limit: size, after: page.at(-1)! });
    }
    expect(seen, `pages of ${size}`).toEqual(EXPECTED);
  }
  expect((await cp.listThreads({ order: 'updatedAt', updatedAt: { from: 4500 } })).map((t) => t.id)).toEqual(EXPECTED.slice(0, 5));
  expect((await cp.listThreads({ order: 'updatedAt', updatedAt: { to: 4500 } })).map((t) => t.id)).toEqual(EXPECTED.slice(5));
}

describe('migrations 7 and 12 (PostgreSQL 11) on a database from before them', () => {
  it('SQLite: adds the index by the second, and threads made before list by update time, row or head', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-listing-'));
    const file = join(dir, 'old.db');
    try {
      const raw = openDatabase(file, 1000);
      migrateSqlite(raw, SQLITE_MIGRATIONS.filter((m) => m.id < 7));
      raw.exec(`INSERT INTO cairn_threads (tid, id, kind, status, attempts, metadata, epoch, created_at, updated_at) VALUES ${threadRows((i) => `${i + 1}, `)}`);
      THREADS.forEach(([, , head], i) => {
        if (head !== null) raw.exec(`INSERT INTO cairn_heads (tid, ns, seq, hash, created_at) VALUES (${i + 1}, '', 0, x'${'0'.repeat(63)}1', ${head})`);
      });
      // A child run's head, newer than everything: never the thread's updatedAt.
      raw.exec(`INSERT INTO cairn_heads (tid, ns, seq, hash, created_at) VALUES (3, 'sub:0@1', 0, x'${'0'.repeat(63)}1', 99999)`);
      raw.close();
      const engine = sqlite(file);
      try {
        await listsByUpdate(engine);
      } finally {
        await engine.close();
      }
      const check = openDatabase(file, 1000);
      expect(check.prepare('SELECT id FROM cairn_migrations WHERE id = 7').pluck().get()).toBe(7);
      expect(check.prepare('SELECT id FROM cairn_migrations WHERE id = 12').pluck().get()).toBe(12);
      expect(check.prepare("SELECT sql FROM sqlite_master WHERE name = 'cairn_threads_by_second'").pluck().get()).toMatch(/\(updated_second, id\)/);
      expect(check.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'cairn_heads_by_time'").pluck().get()).toBe(0);
      expect(check.prepare('SELECT id, updated_second FROM cairn_threads ORDER BY id').all()).toEqual(SECONDS);
      check.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  const pg = usePostgresSchema();

  it('PostgreSQL: adds the index by the second, and threads made before list by update time, row or head', async () => {
    const schema = `${pg.schema}_old7`;
    await migratePostgres(pg.pool, schema, POSTGRES_MIGRATIONS.filter((m) => m.id < 7));
    await pg.pool.query(`INSERT INTO "${schema}".cairn_threads (id, kind, status, attempts, metadata, epoch, created_at, updated_at) VALUES ${threadRows(() => '')}`);
    for (const [id, , head] of THREADS) {
      if (head === null) continue;
      await pg.pool.query(`INSERT INTO "${schema}".cairn_heads (tid, ns, seq, hash, created_at) SELECT tid, '', 0, decode('${'0'.repeat(63)}1', 'hex'), $1 FROM "${schema}".cairn_threads WHERE id = $2`, [head, id]);
    }
    await pg.pool.query(`INSERT INTO "${schema}".cairn_heads (tid, ns, seq, hash, created_at) SELECT tid, 'sub:0@1', 0, decode('${'0'.repeat(63)}1', 'hex'), 99999 FROM "${schema}".cairn_threads WHERE id = 'c'`);
    const engine = postgres(PG_URL, { schema, max: 1 });
    try {
      await listsByUpdate(engine);
      expect((await pg.pool.query(`SELECT id FROM "${schema}".cairn_migrations WHERE id = 7`)).rows[0].id).toBe(7);
      expect((await pg.pool.query(`SELECT id FROM "${schema}".cairn_migrations WHERE id = 11`)).rows[0].id).toBe(11);
      const index = await pg.pool.query(`SELECT indexname, indexdef FROM pg_indexes WHERE schemaname = $1 AND indexname IN ('cairn_heads_by_time', 'cairn_threads_by_second')`, [schema]);
      expect(index.rows.map((row) => row.indexname)).toEqual(['cairn_threads_by_second']);
      expect(index.rows[0].indexdef).toMatch(/\(updated_second, id\)/);
      const seconds = await pg.pool.query(`SELECT id, updated_second::int FROM "${schema}".cairn_threads ORDER BY id`);
      expect(seconds.rows).toEqual(SECONDS);
    } finally {
      await engine.close();
      await pg.pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    }
  });
});
