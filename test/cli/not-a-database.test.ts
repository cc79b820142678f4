/**
 * `--db` naming something that is not a cairn database: a folder, an empty file, a
 * text file, another program's SQLite database. A command that reads says "no cairn
 * database at …" and why (it is a folder, the file is not a SQLite database, the file
 * holds no cairn tables), with ERR_DATABASE_NOT_FOUND, and exits 1; a command that
 * changes a database refuses it the same way and leaves the file as it was, never
 * creating cairn's tables in it. Only `migrate --apply`, `import` and copy's target
 * create a database.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/temp-dirs.js';
import { cairn } from './run-cli.js';

const dir = tempDir('cairn-cli-notdb-');
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
