/**
 * SQLite migration 9: thread metadata found through cairn_thread_metadata. A database
 * made at migration 8 is backfilled when the engine opens it; threads created after
 * (through the engine, or by a direct INSERT) are indexed by the triggers; a deleted
 * thread's rows go with it. Every metadata filter lists the same threads as the filter
 * computed here over the seeded rows, in id order and by update time, paged, both for a
 * value few threads have (listed from the index) and for one most have (tested thread
 * by thread along the walk).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/contracts/engine.js';
import type { MetadataFilter, ThreadQuery } from '../../src/contracts/threads.js';
import { openDatabase } from '../../src/engines/sqlite/driver.js';
import { migrate as migrateSqlite, sqlite, SQLITE_MIGRATIONS } from '../../src/engines/sqlite/index.js';

/** More threads share `queue: 'common'` than the index is used for (2,000), so both plans run. */
const COUNT = 2_600;

/** The metadata of seeded thread i: a common value, rarer ones, each JSON type. */
function metadataOf(i: number): Record<string, unknown> {
  return {
    queue: i % 10 === 0 ? 'rare' : 'common',
    n: i % 7,
    score: i % 5 === 0 ? 1.5 : 2,
    ...(i % 400 === 0 ? { vip: true } : i % 3 === 0 ? { vip: false } : {}),
    ...(i % 500 === 1 ? { note: null } : {}),
    // Never matches a scalar filter: objects and arrays are not indexed.
    nested: { queue: 'rare' },
    ...(i % 11 === 0 ? { list: ['rare'] } : {}),
  };
}

const idOf = (i: number) => `t-${String(i).padStart(5, '0')}`;

function matches(metadata: Record<string, unknown>, filter: MetadataFilter): boolean {
  return Object.entries(filter).every(([key, value]) => key in metadata && metadata[key] === value);
}

describe('SQLite migration 9: thread metadata by value', () => {
  let dir: string;
  let file: string;
  let engine: Engine;
  /** id → metadata, as seeded and as created after the migration. */
  const expected = new Map<string, Record<string, unknown>>();

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'cairn-metadata-index-'));
    file = join(dir, 'old.db');
    const raw = openDatabase(file, 1000);
    migrateSqlite(raw, SQLITE_MIGRATIONS.filter((m) => m.id < 9));
    const insert = raw.prepare("INSERT INTO cairn_threads (id, kind, status, attempts, metadata, epoch, created_at, updated_at) VALUES (?, 'task', 'completed', 1, ?, 1, ?, ?)");
    raw.transaction(() => {
      for (let i = 0; i < COUNT; i++) {
        const metadata = metadataOf(i);
        expected.set(idOf(i), metadata);
        insert.run(idOf(i), JSON.stringify(metadata), i, 10_000 + ((i * 7919) % COUNT));
      }
    })();
    raw.close();
    engine = sqlite(file);
    // Created after the migration, through the engine: the insert trigger indexes it.
    const owner = { runId: 'r', pid: process.pid, host: hostname() };
    for (const [id, metadata] of [
      ['u-fresh', { queue: 'rare', n: 3, vip: true }],
      ['u-other', { queue: 'elsewhere' }],
    ] as const) {
      const lease = await engine.checkpointer.acquireThread(id, { owner, leaseMs: 10_000, create: { kind: 'task', tenant: null, metadata } });
      await engine.checkpointer.releaseThread(lease);
      expected.set(id, metadata);
    }
  });

  afterAll(async () => {
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const filters: [string, MetadataFilter][] = [
    ['a rare text', { queue: 'rare' }],
    ['a common text', { queue: 'common' }],
    ['an integer', { n: 3 }],
    ['a real', { score: 1.5 }],
    ['true (few)', { vip: true }],
    ['false', { vip: false }],
    ['null', { note: null }],
    ['two values, rare and common', { queue: 'rare', n: 3 }],
    ['a value nobody has', { queue: 'nobody' }],
    ['a text that only an object or array holds', { list: 'rare' }],
    ['a number given as text', { n: '3' }],
  ];

  for (const [what, metadata] of filters) {
    it(`${what}: the same threads as the filter over the rows, by id and by update time, paged`, async () => {
      const want = [...expected].filter(([, m]) => matches(m, metadata)).map(([id]) => id).sort();
      const byId = await engine.checkpointer.listThreads({ metadata });
      expect(byId.map((t) => t.id)).toEqual(want);
      const walk = async (query: ThreadQuery) => {
        const seen: string[] = [];
        for (let page = await engine.checkpointer.listThreads({ ...query, limit: 97 }); page.length; ) {
          seen.push(...page.map((t) => t.id));
          page = await engine.checkpointer.listThreads({ ...query, limit: 97, after: page.at(-1)! });
        }
        return seen;
      };
      expect(await walk({ metadata })).toEqual(want);
      const byUpdate = await walk({ metadata, order: 'updatedAt' });
      expect([...byUpdate].sort()).toEqual(want);
      expect(new Set(byUpdate).size).toBe(byUpdate.length);
    });
  }

  it('a deleted thread takes its index rows with it; a direct INSERT is indexed too', async () => {
    const raw = openDatabase(file, 1000);
    const rowsOf = (id: string) => raw.prepare('SELECT count(*) FROM cairn_thread_metadata m JOIN cairn_threads t ON t.tid = m.tid WHERE t.id = ?').pluck().get(id) as number;
    expect(rowsOf('u-fresh')).toBe(3);
    raw.close();
    await engine.checkpointer.deleteThread('u-fresh');
    expect((await engine.checkpointer.listThreads({ metadata: { vip: true } })).map((t) => t.id)).not.toContain('u-fresh');
    const again = openDatabase(file, 1000);
    expect(again.prepare('SELECT count(*) FROM cairn_thread_metadata WHERE tid NOT IN (SELECT tid FROM cairn_threads)').pluck().get()).toBe(0);
    again.prepare("INSERT INTO cairn_threads (id, kind, status, attempts, metadata, epoch, created_at, updated_at) VALUES ('v-direct', 'task', 'completed', 1, '{\"queue\":\"direct\"}', 1, 1, 1)").run();
    again.close();
    expect((await engine.checkpointer.listThreads({ metadata: { queue: 'direct' } })).map((t) => t.id)).toEqual(['v-direct']);
  });
});
