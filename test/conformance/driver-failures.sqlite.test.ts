/**
 * Driver failures on SQLite: the engine runs on a database handle whose statements,
 * transactions and pragmas throw an SQLITE_IOERR once broken. The handle comes from
 * the driver the engine would choose (CAIRN_SQLITE_DRIVER picks node:sqlite).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sqlite, type SqliteDatabase } from '../../src/engines/sqlite/index.js';
import { openDatabase, type SqliteStatement } from '../../src/engines/sqlite/driver.js';
import { driverFailureSuite } from './driver-failures.js';

/** `db` as the engine sees it, every call of which throws `error` while `state.broken`. */
function breakable(db: SqliteDatabase, state: { broken: boolean }, error: Error): SqliteDatabase {
  const check = () => {
    if (state.broken) throw error;
  };
  const statement = (inner: SqliteStatement): SqliteStatement => {
    const guarded: SqliteStatement = {
      run: (...params) => (check(), inner.run(...params)),
      get: (...params) => (check(), inner.get(...params)),
      all: (...params) => (check(), inner.all(...params)),
      iterate: (...params) => (check(), inner.iterate(...params)),
      raw: (toggle) => (toggle === undefined ? inner.raw() : inner.raw(toggle), guarded),
      pluck: (toggle) => (toggle === undefined ? inner.pluck() : inner.pluck(toggle), guarded),
    };
    return guarded;
  };
  return {
    prepare: (sql) => (check(), statement(db.prepare(sql))),
    exec: (sql) => (check(), db.exec(sql)),
    pragma: (source, options) => (check(), db.pragma(source, options)),
    transaction: ((fn: (...args: never[]) => unknown) => {
      const real = db.transaction(fn);
      const checked = (run: (...args: never[]) => unknown) => (...args: never[]) => (check(), run(...args));
      return Object.assign(checked(real), { immediate: checked(real.immediate), deferred: checked(real.deferred), exclusive: checked(real.exclusive) });
    }) as SqliteDatabase['transaction'],
    close: () => db.close(),
    get open() {
      return db.open;
    },
    get name() {
      return db.name;
    },
  };
}

driverFailureSuite({
  name: 'sqlite',
  create: async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-driver-'));
    const db = openDatabase(join(dir, 'cairn.db'), 5000);
    const state = { broken: false };
    const error = Object.assign(new Error('disk I/O error'), { code: 'SQLITE_IOERR' });
    const engine = sqlite(breakable(db, state, error));
    return {
      engine,
      error,
      fail: () => void (state.broken = true),
      heal: () => void (state.broken = false),
      cleanup: async () => {
        await engine.close();
        db.close();
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
});
