/**
 * The page size of SQLite files: a file cairn creates has SQLite's 4 KiB pages, or the
 * `pageSize` asked for (8 KiB packs ~1 KB items seven to a page instead of three); a
 * file that exists (the committed fixtures, or one someone else created) keeps its own
 * and still opens, migrates and verifies; a size SQLite would ignore is refused.
 */
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { SQLITE_PAGE_SIZE } from '../../src/defaults.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { InvalidOptionError } from '../../src/errors.js';
import { verifyThread } from '../../src/inspect/verify.js';
import { tempDir } from '../helpers/temp-dirs.js';

const opened: { close(): Promise<void> }[] = [];
afterAll(async () => {
  for (const engine of opened) await engine.close();
});

const pageSize = (file: string) => {
  const db = new Database(file, { readonly: true });
  try {
    return db.pragma('page_size', { simple: true });
  } finally {
    db.close();
  }
};
const dir = () => tempDir('cairn-page-size-');

describe('SQLite page size', () => {
  it('creates new files with 4 KiB pages, or the pageSize asked for', async () => {
    expect(SQLITE_PAGE_SIZE).toBe(4096);
    for (const [options, size] of [
      [{}, 4096],
      [{ pageSize: 8192 }, 8192],
      [{ pageSize: 65536 }, 65536],
    ] as const) {
      const file = join(dir(), 'new.db');
      const engine = sqlite(file, options);
      opened.push(engine);
      await engine.checkpointer.listThreads();
      await engine.close();
      expect(pageSize(file)).toBe(size);
    }
  });

  it('leaves the page size of a file that exists: created before, or by someone else', async () => {
    const old = join(dir(), 'v2.db');
    copyFileSync(new URL('../fixtures/schema-evolution/v2.db', import.meta.url).pathname, old);
    const theirs = join(dir(), 'theirs.db');
    const db = new Database(theirs);
    db.pragma('page_size = 16384');
    db.exec('CREATE TABLE mine (x)');
    db.close();
    for (const [file, size] of [
      [old, 4096],
      [theirs, 16384],
    ] as const) {
      const engine = sqlite(file, { pageSize: 8192 });
      opened.push(engine);
      const threads = await engine.checkpointer.listThreads();
      for (const thread of threads) expect((await verifyThread(engine.checkpointer, thread.id)).ok).toBe(true);
      await engine.close();
      expect(pageSize(file)).toBe(size);
    }
  });

  it('refuses a page size SQLite would ignore, at once', () => {
    for (const pageSize of [0, 1000, 256, 131072, 4096.5]) {
      expect(() => sqlite(join(dir(), 'x.db'), { pageSize }), String(pageSize)).toThrow(InvalidOptionError);
    }
  });
});
