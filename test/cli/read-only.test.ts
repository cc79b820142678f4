/**
 * Read commands never create or migrate: on a mistyped SQLite path they create no
 * file, on a PostgreSQL URL whose schema does not exist they create no schema, and
 * on a database older than this cairn they change nothing; each says what is wrong
 * and what to do, and exits 1. `cairn migrate --apply` is the command that creates
 * or upgrades a database.
 */
import { chmodSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fsArtifacts } from '../../src/artifacts/fs/index.js';
import { openDatabase } from '../../src/engines/sqlite/driver.js';
import { migrate, sqlite, SQLITE_MIGRATIONS } from '../../src/engines/sqlite/index.js';
import { workedExample } from '../../src/testing/worked-example.js';
import { PG_URL, usePostgresSchema } from '../helpers/postgres.js';
import { cairn } from './run-cli.js';

const pg = usePostgresSchema();
let dir: string;
let artifacts: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-cli-ro-'));
  artifacts = join(dir, 'artifacts');
  const engine = sqlite(join(dir, 'cairn.db'));
  const app = workedExample({ engine, artifacts: fsArtifacts(artifacts) });
  await app.run({ thread: 'cust_42', input: { customerId: 'cust_42' } });
  await engine.close();
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Every command that only reads, on database `db`. */
function readCommands(db: string): string[][] {
  return [
    ['threads', '--db', db],
    ['attempts', 'cust_42', '--db', db],
    ['history', 'cust_42', '--db', db],
    ['show', 'cust_42', '--db', db],
    ['effects', 'cust_42', '--db', db],
    ['verify', '--db', db],
    ['verify', 'cust_42', '--db', db, '--artifacts', artifacts],
    ['export', '--all', '--db', db],
    ['gc', '--db', db, '--artifacts', artifacts, '--dry-run'],
    ['migrate', '--check', '--db', db],
  ];
}

describe('read commands on a SQLite path with no database', () => {
  it('create no file, say there is no cairn database there, and exit 1', async () => {
    const typo = join(dir, 'cairn.bd');
    for (const args of [...readCommands(typo), ['delete-thread', 'cust_42', '--db', typo], ['gc', '--db', typo, '--artifacts', artifacts]]) {
      const run = await cairn(args);
      expect(run.code, `${args.join(' ')}: ${run.stderr}`).toBe(1);
      expect(run.stderr, args.join(' ')).toContain(`no cairn database at ${typo}: there is no such file. Nothing was created.`);
      expect(existsSync(typo), args.join(' ')).toBe(false);
    }
  });
});

describe('read commands on a PostgreSQL schema that does not exist', () => {
  it('create no schema, say there is no cairn database there, and exit 1', async () => {
    const typo = `${pg.schema}_typo`;
    const db = `${PG_URL}#${typo}`;
    for (const args of [...readCommands(db), ['delete-thread', 'cust_42', '--db', db]]) {
      const run = await cairn(args);
      expect(run.code, `${args.join(' ')}: ${run.stderr}`).toBe(1);
      expect(run.stderr, args.join(' ')).toContain(`no cairn database at ${db}: there is no schema "${typo}" in this database.`);
      expect(run.stdout, args.join(' ')).not.toContain('no threads');
    }
    expect((await pg.pool.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [typo])).rowCount).toBe(0);
  }, 60_000);

  it('reads a schema that exists', async () => {
    await (await pg.engine()).close();
    const run = await cairn(['threads', '--db', `${PG_URL}#${pg.schema}`]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trim()).toBe('no threads');
  });
});

describe('read commands on a database older than this cairn', () => {
  it('change nothing and name the command that upgrades it; migrate --apply upgrades it, then they read', async () => {
    const old = join(dir, 'old.db');
    const raw = openDatabase(old, 1000);
    migrate(raw, SQLITE_MIGRATIONS.slice(0, -1));
    raw.close();
    const latest = SQLITE_MIGRATIONS.at(-1)!.id;
    const migrations = () => {
      const db = openDatabase(old, 1000);
      try {
        return db.prepare('SELECT id FROM cairn_migrations ORDER BY id').pluck().all();
      } finally {
        db.close();
      }
    };

    for (const args of [['threads', '--db', old], ['verify', '--db', old], ['migrate', '--check', '--db', old]]) {
      const run = await cairn(args);
      expect(run.code, `${args.join(' ')}: ${run.stderr}`).toBe(1);
      expect(run.stderr).toContain(`the cairn database at ${old} is older than this cairn: it lacks migration ${latest}`);
      expect(run.stderr).toContain(`cairn migrate --apply --db ${old}`);
    }
    expect(migrations()).toHaveLength(latest - 1);

    const apply = await cairn(['migrate', '--apply', '--db', old]);
    expect(apply.code, apply.stderr).toBe(0);
    expect(apply.stdout).toContain(`upgraded ${old}: applied migration ${latest} (now at ${latest})`);
    expect(migrations()).toHaveLength(latest);
    expect((await cairn(['threads', '--db', old])).stdout.trim()).toBe('no threads');
    const again = await cairn(['migrate', '--apply', '--db', old, '--json']);
    expect(JSON.parse(again.stdout)).toMatchObject({ outcome: 'current', applied: [], latest });
  });

  it('migrate --apply creates a database where there is none', async () => {
    const fresh = join(dir, 'fresh.db');
    const run = await cairn(['migrate', '--apply', '--db', fresh]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain(`created a cairn database at ${fresh}`);
    expect((await cairn(['threads', '--db', fresh])).stdout.trim()).toBe('no threads');
  });
});

describe('a database in a folder this user cannot write', () => {
  it('a read writes nothing there and says why SQLite refuses: the -shm file a WAL read needs, and what to do', async () => {
    const folder = mkdtempSync(join(tmpdir(), 'cairn-cli-ro-folder-'));
    const db = join(folder, 'cairn.db');
    const engine = sqlite(db);
    await workedExample({ engine, artifacts: fsArtifacts(join(dir, 'folder-artifacts')) }).run({ thread: 'cust_42', input: { customerId: 'cust_42' } });
    await engine.close();
    chmodSync(folder, 0o555);
    // Root writes anywhere: the command then runs as nobody, which cannot.
    const user = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : undefined;
    try {
      const run = await cairn(['threads', '--db', db], user ? { user } : {});
      expect(run.code, run.stderr).toBe(1);
      expect(run.stderr).toContain('(SQLITE_READONLY_DIRECTORY)');
      expect(run.stderr).toContain(`Nothing was written: SQLite reads a database in WAL mode through a ${db}-shm file beside it, and could not create one in a folder this user cannot write.`);
      expect(run.stderr).toContain('copy the database (with its -wal file, if there is one) to a folder you can write');
      expect(readdirSync(folder)).toEqual(['cairn.db']);
    } finally {
      chmodSync(folder, 0o755);
      rmSync(folder, { recursive: true, force: true });
    }
  });
});
