/**
 * SQLite migration 4: positions point at their items (first rowid and count) and the
 * (tid, ns, field, seq, idx) items index is dropped. A file written before it (the
 * committed schema-evolution fixtures) is upgraded on open with every item still
 * reachable through its position and every chain verifying (the chain hashes every
 * item, so a lost or misplaced one fails it). The states those files hold are checked
 * value by value in test/state/schema-evolution.test.ts.
 */
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { END, START, defineState, field, graph } from '../../src/index.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { verifyThread } from '../../src/inspect/verify.js';
import { tempDir } from '../helpers/temp-dirs.js';

const fixture = (name: string) => new URL(`../fixtures/schema-evolution/${name}`, import.meta.url).pathname;
const opened: { close(): Promise<void> }[] = [];
afterAll(async () => {
  for (const engine of opened) await engine.close();
});

function copyOf(name: string): string {
  const file = join(tempDir('cairn-items-layout-'), name);
  copyFileSync(fixture(name), file);
  return file;
}

describe.each([['v1.db'], ['v2.db']])('upgrading %s to positions that point at their items', (name) => {
  it('keeps every item reachable, in order, and every chain valid', async () => {
    const file = copyOf(name);
    // What the old layout holds, read directly before cairn opens (and migrates) the file.
    const raw = new Database(file, { readonly: true });
    const before = raw.prepare('SELECT tid, ns, seq, field, idx, body FROM cairn_items ORDER BY tid, ns, seq, field, idx').all();
    const threads = raw.prepare("SELECT id FROM cairn_threads ORDER BY id").pluck().all() as string[];
    expect(raw.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'cairn_items_by_field'").pluck().get()).toBe(1);
    raw.close();
    expect(before.length).toBeGreaterThan(0);

    const engine = sqlite(file);
    opened.push(engine);
    const cp = engine.checkpointer;
    for (const thread of threads) {
      const report = await verifyThread(cp, thread);
      expect(report.ok, `${thread}: ${JSON.stringify(report.problems)}`).toBe(true);
    }

    const db = new Database(file, { readonly: true });
    try {
      expect(db.prepare("SELECT count(*) FROM sqlite_master WHERE name = 'cairn_items_by_field'").pluck().get()).toBe(0);
      // Every item is covered by exactly one position's range, which names the item's own position.
      const covered = db
        .prepare(
          `SELECT i.tid, i.ns, i.seq, i.field, i.idx, i.body FROM cairn_positions p
           JOIN cairn_items i ON i.rowid BETWEEN p.items_from AND p.items_from + p.items_count - 1
           WHERE i.tid = p.tid AND i.ns = p.ns AND i.seq = p.seq ORDER BY i.tid, i.ns, i.seq, i.field, i.idx`,
        )
        .all();
      expect(covered).toEqual(before);
      const counted = db.prepare('SELECT sum(items_count) FROM cairn_positions').pluck().get();
      expect(counted).toBe(before.length);
    } finally {
      db.close();
    }
  });
});

describe('migration 11: item rowids survive VACUUM', () => {
  const Log = z.object({ step: z.number() });
  const State = defineState({ fields: { n: field.model(z.number(), { default: 0 }), log: field.model(z.array(Log), { reduce: 'append', default: [] }) } });
  const app = (file: string) => {
    const engine = sqlite(file);
    opened.push(engine);
    return {
      engine,
      app: graph(State)
        .node('step', (s) => ({ n: s.n + 1, log: [{ step: s.n }] }))
        .edge(START, 'step')
        .conditionalEdge('step', (s) => (s.n < 6 ? 'step' : END))
        .compile({ engine, snapshotEvery: 4 }),
    };
  };

  it('a database with gaps in its items (a deleted thread) reads and verifies after VACUUM and in a VACUUM INTO copy', async () => {
    const dir = tempDir('cairn-vacuum-');
    const file = join(dir, 'cairn.db');
    const { engine, app: run } = app(file);
    for (const id of ['a', 'b', 'c']) await run.run({ thread: id, input: {} });
    // Thread a's items are the lowest rowids: deleting it leaves the gap a VACUUM would close.
    await run.deleteThread({ thread: 'a' });
    const before = await run.getState({ thread: 'c' });
    await engine.close();

    const db = new Database(file);
    db.exec('VACUUM');
    db.exec(`VACUUM INTO '${join(dir, 'copy.db')}'`);
    db.close();
    for (const target of [file, join(dir, 'copy.db')]) {
      const { engine: reopened, app: again } = app(target);
      for (const id of ['b', 'c']) {
        const report = await verifyThread(reopened.checkpointer, id);
        expect(report.ok, `${target} ${id}: ${JSON.stringify(report.problems)}`).toBe(true);
      }
      expect(await again.getState({ thread: 'c' })).toEqual(before);
      await reopened.close();
    }
  });

  it('an old file migrated to 11 keeps its items where its positions point, VACUUM or not', async () => {
    const file = copyOf('v2.db');
    const engine = sqlite(file);
    opened.push(engine);
    const threads = (await engine.checkpointer.listThreads()).map((t) => t.id);
    await engine.close();
    const db = new Database(file);
    expect(db.prepare("SELECT count(*) FROM pragma_table_info('cairn_items') WHERE name = 'id' AND pk = 1").pluck().get()).toBe(1);
    db.exec('VACUUM');
    db.close();
    const reopened = sqlite(file);
    opened.push(reopened);
    for (const thread of threads) {
      const report = await verifyThread(reopened.checkpointer, thread);
      expect(report.ok, `${thread}: ${JSON.stringify(report.problems)}`).toBe(true);
    }
  });
});
