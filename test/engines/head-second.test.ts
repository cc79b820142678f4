/**
 * Root heads are indexed by the second of their time (`created_second`, SQLite
 * migration 12, PostgreSQL migration 11), so a step commit within the same second
 * leaves that index alone: on SQLite it writes one page fewer (a WAL frame), on
 * PostgreSQL the head's update is HOT (no new index entries, no bloat of the head
 * table). Listing by update time over those heads is in the conformance suite
 * (testing/checkpointer/threads.ts) and listing-migration.test.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import type { Checkpointer } from '../../src/contracts/checkpointer.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { commitOf, linearPosition, LONG_LEASE, remoteOwner } from '../../src/testing/checkpointer/fixtures.js';
import { usePostgresSchema } from '../helpers/postgres.js';

/** A whole second's start, in ms: its 1,000 milliseconds share one `created_second`. */
const SECOND = 1_700_000_000_000;

/** Creates `id` and commits `times.length` root positions at those times; a child position too when `child`. */
async function commitAt(cp: Checkpointer, id: string, times: number[], child = false): Promise<void> {
  const lease = await cp.acquireThread(id, { owner: remoteOwner(), leaseMs: LONG_LEASE, create: { kind: 'task', tenant: null, metadata: {} } });
  for (const [seq, createdAt] of times.entries()) await cp.commitStep(lease, commitOf(linearPosition(seq, { createdAt }), seq === 0 ? null : seq - 1));
  if (child) await cp.commitStep(lease, commitOf(linearPosition(0, { ns: 'sub:0@1', createdAt: times.at(-1)! + 5_000 }), null));
}

describe('SQLite: root heads keep the second of their time', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-head-second-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('a root head holds its second, moved with the head; a child head holds none', async () => {
    const file = join(dir, 'seconds.db');
    const engine = sqlite(file);
    try {
      await commitAt(engine.checkpointer, 't', [SECOND + 10, SECOND + 999, SECOND + 1_000, SECOND + 7_654], true);
    } finally {
      await engine.close();
    }
    const raw = new Database(file, { readonly: true });
    expect(raw.prepare('SELECT ns, created_at, created_second FROM cairn_heads ORDER BY ns').all()).toEqual([
      { ns: '', created_at: SECOND + 7_654, created_second: SECOND / 1000 + 7 },
      { ns: 'sub:0@1', created_at: SECOND + 12_654, created_second: null },
    ]);
    raw.close();
  });

  it('a commit in the same second as the head writes no index page: fewer WAL frames than commits that each change the second', async () => {
    const file = join(dir, 'frames.db');
    const engine = sqlite(file);
    await engine.checkpointer.getThread('none'); // opened, migrated and in WAL mode before the probe opens it
    const probe = new Database(file);
    const framesOf = async (id: string, times: number[]) => {
      probe.pragma('wal_checkpoint(TRUNCATE)');
      await commitAt(engine.checkpointer, id, times);
      return (probe.pragma('wal_checkpoint(PASSIVE)') as { log: number }[])[0]!.log;
    };
    try {
      const commits = 30;
      const sameSecond = await framesOf('same', Array.from({ length: commits }, (_, i) => SECOND + i));
      const newSecondEach = await framesOf('new', Array.from({ length: commits }, (_, i) => SECOND + i * 1_000));
      // About one frame per commit: the index page that the changing second rewrites.
      expect(newSecondEach - sameSecond).toBeGreaterThanOrEqual(commits - 5);
    } finally {
      probe.close();
      await engine.close();
    }
  });
});

describe('PostgreSQL: root heads keep the second of their time', () => {
  const pg = usePostgresSchema();

  it('step commits within one second update the head in place (HOT), and the head table does not grow', async () => {
    const engine = await pg.engine({ max: 1 });
    const commits = 300;
    try {
      await commitAt(engine.checkpointer, 'hot', Array.from({ length: commits }, (_, i) => SECOND + i));
      const second = await pg.pool.query(`SELECT created_second::bigint AS s FROM "${pg.schema}".cairn_heads WHERE ns = ''`);
      expect(Number(second.rows[0].s)).toBe(SECOND / 1000);
    } finally {
      await engine.close();
    }
    // The engine's backend reports its table statistics as it exits.
    const stats = async () =>
      (await pg.pool.query(`SELECT n_tup_upd::int AS updates, n_tup_hot_upd::int AS hot FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = 'cairn_heads'`, [pg.schema])).rows[0] as {
        updates: number;
        hot: number;
      };
    const deadline = Date.now() + 10_000;
    let seen = await stats();
    while (seen.updates < commits - 1 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      seen = await stats();
    }
    expect(seen.updates).toBeGreaterThanOrEqual(commits - 1);
    // Before the index was by the second, none was HOT: every commit changed an indexed value.
    expect(seen.hot).toBeGreaterThanOrEqual(Math.floor(seen.updates * 0.9));
  });
});
