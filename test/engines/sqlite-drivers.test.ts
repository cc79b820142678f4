/**
 * The SQLite engine's two drivers: how the driver is chosen (the `driver` option, then
 * CAIRN_SQLITE_DRIVER, then better-sqlite3 if it loads, then node:sqlite), and the
 * node:sqlite adapter speaking better-sqlite3's subset (plain rows, Buffers, raw and
 * pluck, transactions, error codes). Each run asserts what holds on the Node it runs
 * on: on Node 20 node:sqlite is missing and asking for it is DriverMissingError; the
 * Node 22/24 runs (`npm run test:node-versions`) prove the adapter.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { SQLITE_DRIVER_ENV } from '../../src/defaults.js';
import { loadBetterSqlite3 } from '../../src/engines/sqlite/better-sqlite3-driver.js';
import { chooseSqliteDriver, openDatabase } from '../../src/engines/sqlite/driver.js';
import { SqliteConnection, sqlite } from '../../src/engines/sqlite/index.js';
import { loadNodeSqlite, type NodeSqliteDatabaseHandle } from '../../src/engines/sqlite/node-sqlite-driver.js';
import { DriverMissingError, EngineError, InvalidOptionError } from '../../src/errors.js';
import { ensureBuilt } from '../artifacts/build.js';

const hasNodeSqlite = !('error' in loadNodeSqlite());
const hasBetterSqlite3 = !('error' in loadBetterSqlite3());
const dist = fileURLToPath(new URL('../../dist/engines/sqlite/index.js', import.meta.url));

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-drivers-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** Runs `code` (an ES module body with `sqlite` in scope) in a fresh process of this Node; its stdout and stderr. */
function inChild(code: string, env: Record<string, string | undefined> = {}): { stdout: string; stderr: string } {
  const script = `import { sqlite } from ${JSON.stringify(dist)};\n${code}`;
  const childEnv = { ...process.env, ...env };
  for (const [key, value] of Object.entries(env)) if (value === undefined) delete childEnv[key];
  let stderr = '';
  try {
    const stdout = execFileSync(process.execPath, ['--input-type=module', '-e', script], { env: childEnv, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    return { stdout, stderr };
  } catch (error) {
    stderr = String((error as { stderr?: unknown }).stderr);
    throw new Error(`child failed: ${stderr}`);
  }
}

describe('choosing the SQLite driver', () => {
  beforeAll(() => ensureBuilt());

  it(`refuses an unknown driver, from the option or from ${SQLITE_DRIVER_ENV}, with InvalidOptionError naming both drivers`, () => {
    expect(() => chooseSqliteDriver('sqlite3' as never)).toThrow(InvalidOptionError);
    const saved = process.env[SQLITE_DRIVER_ENV];
    process.env[SQLITE_DRIVER_ENV] = 'sqljs';
    try {
      const error = (() => {
        try {
          chooseSqliteDriver();
        } catch (e) {
          return e;
        }
      })();
      expect(InvalidOptionError.is(error)).toBe(true);
      expect(String(error)).toContain(`${SQLITE_DRIVER_ENV}=sqljs`);
      expect(String(error)).toContain('"better-sqlite3" or "node:sqlite"');
    } finally {
      if (saved === undefined) delete process.env[SQLITE_DRIVER_ENV];
      else process.env[SQLITE_DRIVER_ENV] = saved;
    }
  });

  it('by default takes better-sqlite3 when it loads on this Node, else node:sqlite, and prints nothing either way', () => {
    const { stdout, stderr } = inChild(
      `const engine = sqlite(${JSON.stringify(join(dir, 'a.db'))});
       await engine.store.put(['ns'], 'k', { a: 1 });
       console.log(JSON.stringify((await engine.store.get(['ns'], 'k')).value));
       await engine.close();`,
      { [SQLITE_DRIVER_ENV]: undefined },
    );
    expect(stdout.trim()).toBe('{"a":1}');
    // No ExperimentalWarning from node:sqlite, no native-module noise from a better-sqlite3 built for another Node.
    expect(stderr).toBe('');
    const expected = hasBetterSqlite3 ? 'better-sqlite3' : 'node:sqlite';
    const saved = process.env[SQLITE_DRIVER_ENV];
    delete process.env[SQLITE_DRIVER_ENV];
    try {
      expect(chooseSqliteDriver()).toBe(expected);
    } finally {
      if (saved !== undefined) process.env[SQLITE_DRIVER_ENV] = saved;
    }
  });

  it(`the driver option wins over ${SQLITE_DRIVER_ENV}, which wins over the default; the connection says which it runs on`, async () => {
    const available = hasBetterSqlite3 ? 'better-sqlite3' : 'node:sqlite';
    const missing = hasBetterSqlite3 ? (hasNodeSqlite ? undefined : 'node:sqlite') : 'better-sqlite3';
    const saved = process.env[SQLITE_DRIVER_ENV];
    process.env[SQLITE_DRIVER_ENV] = missing ?? (available === 'better-sqlite3' ? 'node:sqlite' : 'better-sqlite3');
    try {
      const conn = new SqliteConnection(join(dir, 'b.db'), { driver: available });
      conn.read('count', (q) => q.stmt('SELECT count(*) FROM cairn_threads').pluck().get());
      expect(conn.driver).toBe(available);
      await conn.close();
      if (missing) {
        const error = (() => {
          try {
            chooseSqliteDriver();
          } catch (e) {
            return e;
          }
        })();
        expect(DriverMissingError.is(error), String(error)).toBe(true);
        expect(String(error)).toContain(`the SQLite driver ${missing} was asked for by ${SQLITE_DRIVER_ENV}`);
      } else {
        expect(chooseSqliteDriver()).toBe(process.env[SQLITE_DRIVER_ENV]);
      }
    } finally {
      if (saved === undefined) delete process.env[SQLITE_DRIVER_ENV];
      else process.env[SQLITE_DRIVER_ENV] = saved;
    }
  });

  if (!hasNodeSqlite) {
    it(`node:sqlite asked for on ${process.version}, which has none: DriverMissingError saying to use Node 22.13+ or better-sqlite3`, async () => {
      const engine = sqlite(join(dir, 'c.db'), { driver: 'node:sqlite' });
      const error = await engine.checkpointer.listThreads().catch((e: unknown) => e);
      expect(DriverMissingError.is(error), String(error)).toBe(true);
      expect(String(error)).toContain('Node 22.13 or later');
      expect(String(error)).toContain('"better-sqlite3"');
      await engine.close();
    });
  }
  if (!hasBetterSqlite3) {
    it(`better-sqlite3 asked for on ${process.version}, where its native module does not load: DriverMissingError saying how to fix it`, async () => {
      const engine = sqlite(join(dir, 'd.db'), { driver: 'better-sqlite3' });
      const error = await engine.checkpointer.listThreads().catch((e: unknown) => e);
      expect(DriverMissingError.is(error), String(error)).toBe(true);
      expect(String(error)).toContain('npm install better-sqlite3@12');
      expect(String(error)).toContain('"node:sqlite"');
      expect((error as Error).cause).toBeInstanceOf(Error);
      await engine.close();
    });
  }
});

if (hasNodeSqlite) {
  describe('the node:sqlite driver speaks better-sqlite3', () => {
    const open = () => openDatabase(join(dir, 'n.db'), 200, { driver: 'node:sqlite' });

    it('returns plain row objects, Buffers for BLOBs, and rows as arrays or single values with raw() and pluck()', () => {
      const db = open();
      db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, body BLOB, name TEXT)');
      expect(db.prepare('INSERT INTO t (body, name) VALUES (?, ?)').run(Buffer.from('hi'), 'x')).toEqual({ changes: 1, lastInsertRowid: 1 });
      const row = db.prepare('SELECT * FROM t').get() as Record<string, unknown>;
      expect(Object.getPrototypeOf(row)).toBe(Object.prototype);
      expect(Buffer.isBuffer(row.body) && row.body.toString()).toBe('hi');
      const statement = db.prepare('SELECT id, body, name FROM t');
      const raw = statement.raw().get() as unknown[];
      expect(raw[0]).toBe(1);
      expect(Buffer.isBuffer(raw[1])).toBe(true);
      expect(raw[2]).toBe('x');
      expect(statement.pluck().all()).toEqual([1]);
      expect(statement.pluck(false).get()).toMatchObject({ id: 1, name: 'x' });
      expect([...db.prepare('SELECT name FROM t').pluck().iterate()]).toEqual(['x']);
      // Stopping early ends the iteration: the statement runs again at once.
      const names = db.prepare('SELECT name FROM t UNION ALL SELECT name FROM t').pluck();
      for (const name of names.iterate()) {
        expect(name).toBe('x');
        break;
      }
      expect(names.all()).toEqual(['x', 'x']);
      expect(db.pragma('journal_mode = WAL', { simple: true })).toBe('wal');
      expect(db.pragma('journal_mode')).toEqual([{ journal_mode: 'wal' }]);
      db.close();
      expect(db.open).toBe(false);
    });

    it('runs transactions as better-sqlite3 does: committed on return, rolled back on a throw, nested ones as savepoints', () => {
      const db = open();
      db.exec('CREATE TABLE t (x INTEGER)');
      const insert = db.prepare('INSERT INTO t (x) VALUES (?)');
      const count = () => db.prepare('SELECT count(*) FROM t').pluck().get();
      const tx = db.transaction((x: number) => insert.run(x));
      tx.immediate(1);
      expect(count()).toBe(1);
      const failing = db.transaction(() => {
        insert.run(2);
        throw new Error('no');
      });
      expect(() => failing.immediate()).toThrow('no');
      expect(count()).toBe(1);
      const outer = db.transaction(() => {
        insert.run(3);
        expect(() => failing()).toThrow('no');
        insert.run(4);
      });
      outer.immediate();
      expect(db.prepare('SELECT x FROM t ORDER BY x').pluck().all()).toEqual([1, 3, 4]);
      db.close();
    });

    it("gives errors better-sqlite3's codes, node's error as cause: SQLITE_CONSTRAINT_PRIMARYKEY, SQLITE_BUSY", () => {
      const db = open();
      db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY)');
      db.exec('INSERT INTO t (id) VALUES (1)');
      let error = (() => {
        try {
          db.exec('INSERT INTO t (id) VALUES (1)');
        } catch (e) {
          return e;
        }
      })() as { code?: string; cause?: { code?: string; errcode?: number } };
      expect(error.code).toBe('SQLITE_CONSTRAINT_PRIMARYKEY');
      expect(error.cause).toMatchObject({ code: 'ERR_SQLITE_ERROR', errcode: 1555 });
      const other = open();
      other.exec('BEGIN IMMEDIATE');
      error = (() => {
        try {
          db.transaction(() => 0).immediate();
        } catch (e) {
          return e;
        }
      })() as typeof error;
      expect(error.code).toBe('SQLITE_BUSY');
      other.exec('ROLLBACK');
      other.close();
      db.close();
    });

    it('a node:sqlite DatabaseSync handle passed to sqlite(db) runs the engine and is left open', async () => {
      const { DatabaseSync } = loadNodeSqlite() as { DatabaseSync: new (path: string) => NodeSqliteDatabaseHandle };
      const handle = new DatabaseSync(join(dir, 'h.db'));
      const engine = sqlite(handle);
      await engine.store.put(['ns'], 'k', { a: 2 });
      expect(await engine.store.get(['ns'], 'k')).toMatchObject({ value: { a: 2 }, version: 1 });
      await engine.close();
      expect(handle.prepare('SELECT count(*) AS n FROM cairn_store').get()).toMatchObject({ n: 1 });
      handle.close();
    });

    it('read-only: refuses writes with EngineError (SQLITE_READONLY) and names the option', async () => {
      const file = join(dir, 'ro.db');
      const writer = sqlite(file, { driver: 'node:sqlite' });
      await writer.store.put(['ns'], 'k', { a: 1 });
      await writer.close();
      const reader = sqlite(file, { driver: 'node:sqlite', readOnly: true });
      const error = await reader.store.put(['ns'], 'k', { a: 2 }).catch((e: unknown) => e);
      expect(EngineError.is(error), String(error)).toBe(true);
      expect(String(error)).toContain('(SQLITE_READONLY');
      expect(String(error)).toContain('opened with readOnly');
      await reader.close();
    });
  });
}
