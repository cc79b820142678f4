/**
 * A thread row keeps the second of its updatedAt (`updated_second`, SQLite migration 12,
 * PostgreSQL migration 11), which a step commit writes only when it changes; no index
 * holds the head's time. So a step commit within the same second writes no index page:
 * on SQLite one page fewer (a WAL frame) than a commit that changes the second, on
 * PostgreSQL the head's update is HOT (no new index entries, no bloat of the head
 * table). Listing by update time over those seconds is in the conformance suite
 * (testing/checkpointer/threads.ts) and listing-migration.test.ts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import type { Checkpointer } from '../../src/contracts/checkpointer.js';
import type { ThreadLease } from '../../src/contracts/threads.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { commitOf, linearPosition, LONG_LEASE, remoteOwner } from '../../src/testing/checkpointer/fixtures.js';
import { usePostgresSchema } from '../helpers/postgres.js';

/** A whole second's start, in ms: its 1,000 milliseconds share one `updated_second`. */
const SECOND = 1_700_000_000_000;

/** Creates `id` and commits `times.length` root positions at those times; a child position too when `child`. */
async function commitAt(cp: Checkpointer, id: string, times: number[], child = false): Promise<ThreadLease> {
  // Created long before its positions, so that its updatedAt is its head's time.
  const lease = await cp.acquireThread(id, { owner: remoteOwner(), leaseMs: LONG_LEASE, create: { kind: 'task', tenant: null, metadata: {}, createdAt: 1_000 } });
  for (const [seq, createdAt] of times.entries()) await cp.commitStep(lease, commitOf(linearPosition(seq, { createdAt }), seq === 0 ? null : seq - 1));
  if (child) await cp.commitStep(lease, commitOf(linearPosition(0, { ns: 'sub:0@1', createdAt: times.at(-1)! + 5_000 }), null));
  return lease;
}

describe('SQLite: a thread row keeps the second of its updatedAt', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-head-second-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it("the second follows the root head's time and the row's own time, whichever is later; a child run's head moves it not", async () => {
    const file = join(dir, 'seconds.db');
    const engine = sqlite(file);
    const second = () => {
      const raw = new Database(file, { readonly: true });
      const row = raw.prepare("SELECT updated_second FROM cairn_threads WHERE id = 't'").get() as { updated_second: number };
      raw.close();
      return row.updated_second;
    };
    try {
      const cp = engine.checkpointer;
      const lease = await commitAt(cp, 't', [SECOND + 10, SECOND + 999, SECOND + 1_000, SECOND + 7_654], true);
      expect(second()).toBe(SECOND / 1000 + 7);
      expect((await cp.getThread('t'))!.updatedAt).toBe(SECOND + 7_654);
      // An update with an earlier time leaves the head's the later one; a later one wins.
      await cp.updateThread(lease, { status: 'completed', updatedAt: SECOND + 2_000 });
      expect(second()).toBe(SECOND / 1000 + 7);
      await cp.updateThread(lease, { updatedAt: SECOND + 9_500 });
      expect(second()).toBe(SECOND / 1000 + 9);
    } finally {
      await engine.close();
    }
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

describe('PostgreSQL: a thread row keeps the second of its updatedAt', () => {
  const pg = usePostgresSchema();

  it('step commits within one second update the head in place (HOT), and the head table does not grow', async () => {
    const engine = await pg.engine({ max: 1 });
    const commits = 300;
    try {
      await commitAt(engine.checkpointer, 'hot', Array.from({ length: commits }, (_, i) => SECOND + i));
      const second = await pg.pool.query(`SELECT updated_second::bigint AS s FROM "${pg.schema}".cairn_threads WHERE id = 'hot'`);
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
    // While the head's time was indexed, none was HOT: every commit changed an indexed value.
    expect(seen.hot).toBeGreaterThanOrEqual(Math.floor(seen.updates * 0.9));
  });
});
