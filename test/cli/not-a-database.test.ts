/**
 * `--db` naming something that is not a cairn database: a folder, an empty file, a
 * text file, another program's SQLite database. A command that reads says "no cairn
 * database at …" and why (it is a folder, the file is not a SQLite database, the file
 * holds no cairn tables), with ERR_DATABASE_NOT_FOUND, and exits 1; a command that
 * changes a database refuses it the same way and leaves the file as it was, never
 * creating cairn's tables in it. Only `migrate --apply`, `import` and copy's target
 * create a database. `--artifacts` naming a file, not a folder, is refused the same
 * way rather than read as an empty store; a key file that cannot be written (its
 * folder is not there) is bad usage in one line, not an ENOENT stack trace. An empty
 * `--db` is bad usage too (the SQLite driver would open a temporary database).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/temp-dirs.js';
import { cairn } from './run-cli.js';
import { useWorkedExampleDb } from './worked-db.js';

const dir = tempDir('cairn-cli-notdb-');
let worked: string;
useWorkedExampleDb('cairn-cli-notdb-worked-', (files) => (worked = files.db));
let folder: string;
let empty: string;
let text: string;
let foreign: string;

beforeAll(() => {
  folder = join(dir, 'folder.db');
  mkdirSync(folder);
  empty = join(dir, 'empty.db');
  writeFileSync(empty, '');
  text = join(dir, 'notes.db');
  writeFileSync(text, 'not a database\n'.repeat(100));
  foreign = join(dir, 'app.db');
  const db = new Database(foreign);
  db.exec('CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)');
  db.close();
});

/** The tables of a SQLite file. */
function tables(path: string): string[] {
  const db = new Database(path, { readonly: true });
  try {
    return db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`).pluck().all() as string[];
  } finally {
    db.close();
  }
}

/** Commands that change an existing database, on `db`. */
function writeCommands(db: string): string[][] {
  return [
    ['delete-thread', 'cust_42', '--db', db, '--json'],
    ['cancel', 'cust_42', '--db', db, '--json'],
    ['signal', 'cust_42', 'payment', '--db', db, '--json'],
    ['resolve-effect', 'cust_42', 'eff_1', '--outcome', 'true', '--db', db, '--json'],
    ['erase', '--thread', 'cust_42', '--yes', '--db', db, '--json'],
    ['gc', '--artifacts', join(dir, 'artifacts'), '--db', db, '--json'],
  ];
}

describe('a --db that is not a cairn database', () => {
  it('a folder or a text file: read commands say what it is, ERR_DATABASE_NOT_FOUND, exit 1', async () => {
    const cases: [string, string][] = [
      [folder, 'it is a folder, not a database file.'],
      [text, 'the file is not a SQLite database.'],
    ];
    for (const [db, why] of cases) {
      for (const args of [['threads', '--db', db, '--json'], ['show', 'cust_42', '--db', db, '--json']]) {
        const run = await cairn(args);
        expect(run.code, `${args.join(' ')}: ${run.stderr}`).toBe(1);
        const { error } = JSON.parse(run.stderr) as { error: { code: string; message: string } };
        expect(error.code, args.join(' ')).toBe('ERR_DATABASE_NOT_FOUND');
        expect(error.message, args.join(' ')).toContain(`no cairn database at ${db}: ${why}`);
      }
    }
  });

  it('commands that change a database refuse a folder, an empty file, a text file, another program\'s SQLite file, and leave it as it was', async () => {
    const before = { empty: readFileSync(empty), text: readFileSync(text) };
    for (const db of [folder, empty, text, foreign]) {
      for (const args of writeCommands(db)) {
        const run = await cairn(args);
        expect(run.code, `${args.join(' ')}: ${run.stderr}`).toBe(1);
        expect((JSON.parse(run.stderr) as { error: { code: string } }).error.code, args.join(' ')).toBe('ERR_DATABASE_NOT_FOUND');
        expect(run.stdout, args.join(' ')).toBe('');
      }
    }
    expect(readFileSync(empty)).toEqual(before.empty);
    expect(readFileSync(text)).toEqual(before.text);
    expect(tables(foreign)).toEqual(['users']);
  }, 120_000);
});

describe('an empty --db (an unset "$DB")', () => {
  it('is bad usage on every command, never a temporary database that takes the writes and vanishes', async () => {
    for (const args of [
      ['threads', '--db', '', '--json'],
      ['delete-thread', 'cust_42', '--db', '', '--json'],
      ['copy', '--all', '--db', worked, '--to', '', '--json'],
    ]) {
      const run = await cairn(args);
      expect(run.code, `${args.join(' ')}: ${run.stderr}`).toBe(2);
      expect(run.stdout, args.join(' ')).toBe('');
      const { error } = JSON.parse(run.stderr) as { error: { code: string; message: string } };
      expect(error, args.join(' ')).toMatchObject({ code: 'ERR_INVALID_OPTION', message: expect.stringContaining('no database is named (the name is empty)') });
    }
  });
});

describe('an --artifacts that is a file, a key file that cannot be written', () => {
  it('--artifacts naming a file is refused, never read as a store with 0 artifacts', async () => {
    for (const args of [
      ['verify', '--db', worked, '--artifacts', text, '--json'],
      ['gc', '--db', worked, '--artifacts', text, '--dry-run', '--json'],
    ]) {
      const run = await cairn(args);
      expect(run.code, `${args.join(' ')}: ${run.stderr}`).toBe(1);
      expect(run.stdout, args.join(' ')).toBe('');
      expect((JSON.parse(run.stderr) as { error: { message: string } }).error.message).toContain(`${text} is a file, not an artifact directory.`);
    }
  });

  it('copy --to-keys in a folder that is not there: bad usage naming the key file, exit 2, no stack', async () => {
    const keys = join(dir, 'no-such-folder', 'keys.json');
    const run = await cairn(['copy', '--all', '--db', worked, '--to', join(dir, 'sealed.db'), '--to-keys', keys]);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr.trim()).toBe(`[cairn] the key file ${keys} cannot be written (ENOENT).`);
  });
});
