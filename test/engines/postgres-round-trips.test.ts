/**
 * One round trip per step commit on PostgreSQL: every query the engine sends goes
 * through a counting wrapper of its pool (pool.query and the query of every client
 * it checks out), and a successful commitStep (position, items, snapshot, folded
 * pending writes, status change, effects for the ledger) sends exactly one. A failed commit sends a second,
 * cheap query to say why, and only then. Also prints the median time of a commit
 * next to a raw one-row INSERT on the same pool.
 */
import { describe, expect, it } from 'vitest';
import type { StoredPosition } from '../../src/contracts/checkpointer.js';
import { postgres, type PgQueryConfig, type PoolClientLike, type PoolLike } from '../../src/engines/postgres/index.js';
import { HeadMovedError, LeaseLostError } from '../../src/errors.js';
import { usePostgresSchema } from '../helpers/postgres.js';
import { linearPosition } from '../helpers/positions.js';

const pg = usePostgresSchema();

/** A pool that counts every query sent through it or through a client it hands out. */
function counting(inner: PoolLike): PoolLike & { sent: string[] } {
  const sent: string[] = [];
  return {
    sent,
    query: (config: PgQueryConfig) => {
      sent.push(config.text);
      return inner.query(config);
    },
    connect: async () => {
      const client = await inner.connect();
      const wrapped: PoolClientLike = {
        query: (config: PgQueryConfig) => {
          sent.push(config.text);
          return client.query(config);
        },
        release: (error) => client.release(error),
      };
      return wrapped;
    },
    end: () => inner.end(),
  };
}

const KB = 'x'.repeat(1024);
const owner = { runId: 'round-trips', pid: 4242, host: 'cairn-test.remote.invalid' };

function position(seq: number, body?: string): StoredPosition {
  return { ...linearPosition(seq, body), createdAt: Date.now() };
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

describe('PostgreSQL engine: round trips per step commit', () => {
  it('a successful commitStep sends exactly one query, whatever it writes', async () => {
    await pg.empty();
    const pool = counting(pg.pool);
    const engine = postgres(pool, { schema: pg.schema });
    try {
      const cp = engine.checkpointer;
      const lease = await cp.acquireThread('t1', { owner, leaseMs: 60_000, create: { kind: 'task', tenant: null, metadata: {} } });
      await cp.commitStep(lease, { position: position(0), items: [], status: 'running', expectedHead: null });
      await cp.putPendingWrite(lease, { ns: '', baseSeq: 0, task: 'a:0', body: '{}' });

      const effect = { threadId: 't1', kind: 'effect' as const, name: 'send', ns: '', seq: 0, node: 'a', task: 'a:0', argsDigest: null, createdAt: 1, completedAt: 2 };
      const { completedAt: _c, ...intent } = effect;
      await engine.ledger.writeIntent({ ...intent, key: 'a:0#0', call: 0 });

      // Everything one commit can carry: items, a snapshot, a pending write folded in, a status change, effects (one new, one completing an intent).
      pool.sent.length = 0;
      await cp.commitStep(lease, {
        position: position(1),
        items: [
          { field: 'messages', index: 0, text: '"a"' },
          { field: 'messages', index: 1, text: '"b"' },
          { field: 'log', index: 0, text: '{"n":1}' },
        ],
        snapshot: '{"snap":1}',
        status: 'completed',
        expectedHead: 0,
        effects: [
          { ...effect, key: 'a:0#0', call: 0, outcome: '"sent"' },
          { ...effect, key: 'a:0#1', call: 1, outcome: '"also sent"' },
        ],
      });
      expect(pool.sent).toHaveLength(1);
      expect((await engine.ledger.listForTask('t1', '', 0, 'a:0')).map((e) => [e.key, e.status, e.outcome])).toEqual([
        ['a:0#0', 'done', '"sent"'],
        ['a:0#1', 'done', '"also sent"'],
      ]);

      // And it all landed.
      expect(await cp.getThread('t1')).toMatchObject({ head: 1, status: 'completed' });
      expect(await cp.getItems('t1', '', 'messages', [{ from: 0, to: 1 }])).toEqual(['"a"', '"b"']);
      expect(await cp.getSnapshot('t1', '', [{ from: 0, to: 1 }])).toEqual({ seq: 1, text: '{"snap":1}' });
      expect(await cp.getPendingWrites('t1', '', 0)).toEqual([]);

      // A plain step, the common case.
      pool.sent.length = 0;
      await cp.commitStep(lease, { position: position(2), items: [{ field: 'messages', index: 0, text: '"c"' }], status: 'completed', expectedHead: 1 });
      expect(pool.sent).toHaveLength(1);
      // A commit without effects (or with none) sends the statement without the ledger upsert.
      expect(pool.sent[0]).not.toContain('cairn_ledger');
      pool.sent.length = 0;
      await cp.commitStep(lease, { position: position(3), items: [], status: 'completed', expectedHead: 2, effects: [] });
      expect(pool.sent).toHaveLength(1);
      expect(pool.sent[0]).not.toContain('cairn_ledger');
    } finally {
      await engine.close();
    }
  });

  it('a failed commitStep sends the commit and, for a moved head, one query to find it; a lost lease is told by the commit itself', async () => {
    await pg.empty();
    const pool = counting(pg.pool);
    const engine = postgres(pool, { schema: pg.schema });
    try {
      const cp = engine.checkpointer;
      const lease = await cp.acquireThread('t1', { owner, leaseMs: 60_000, create: { kind: 'task', tenant: null, metadata: {} } });
      await cp.commitStep(lease, { position: position(0), items: [], status: 'running', expectedHead: null });

      pool.sent.length = 0;
      await expect(cp.commitStep(lease, { position: position(5), items: [], status: 'running', expectedHead: 4 })).rejects.toSatisfy((e) =>
        HeadMovedError.is(e),
      );
      expect(pool.sent).toHaveLength(2);

      await cp.releaseThread(lease);
      pool.sent.length = 0;
      await expect(cp.commitStep(lease, { position: position(1), items: [], status: 'running', expectedHead: 0 })).rejects.toSatisfy((e) =>
        LeaseLostError.is(e),
      );
      expect(pool.sent).toHaveLength(1);
    } finally {
      await engine.close();
    }
  });

  it('a commit that changes the root status is written whole, even by an engine that did not see the status it changes', async () => {
    await pg.empty();
    const pool = counting(pg.pool);
    const engine = postgres(pool, { schema: pg.schema });
    const other = postgres(pg.pool, { schema: pg.schema });
    try {
      const cp = engine.checkpointer;
      const lease = await cp.acquireThread('t1', { owner, leaseMs: 60_000, create: { kind: 'task', tenant: null, metadata: {} } });
      await cp.commitStep(lease, { position: position(0), items: [], status: 'running', expectedHead: null });
      // The status changes through another engine: this one still takes the thread for running.
      await other.checkpointer.updateThread(lease, { status: 'interrupted' });

      pool.sent.length = 0;
      await cp.commitStep(lease, { position: position(1), items: [{ field: 'messages', index: 0, text: '"a"' }], status: 'running', expectedHead: 0 });
      // The lean statement found the row's status not the commit's and wrote nothing; the full one wrote it all.
      expect(pool.sent).toHaveLength(2);
      expect(await cp.getThread('t1')).toMatchObject({ head: 1, status: 'running' });
      expect(await cp.getItems('t1', '', 'messages', [{ from: 0, to: 1 }])).toEqual(['"a"']);

      // This engine patched it itself: one statement.
      await cp.updateThread(lease, { status: 'interrupted' });
      pool.sent.length = 0;
      await cp.commitStep(lease, { position: position(2), items: [], status: 'running', expectedHead: 1 });
      expect(pool.sent).toHaveLength(1);
      expect(await cp.getThread('t1')).toMatchObject({ head: 2, status: 'running' });
    } finally {
      await engine.close();
      await other.close();
    }
  });

  it('measures ms per commitStep (100 sequential, median) against a raw one-row INSERT on the same pool', async () => {
    await pg.empty();
    const pool = pg.pool;
    const engine = postgres(pool, { schema: pg.schema });
    const raw = `"${pg.schema}".raw_insert`;
    await pool.query(`CREATE TABLE IF NOT EXISTS ${raw} (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, seq bigint NOT NULL, body text NOT NULL)`);
    try {
      const cp = engine.checkpointer;
      const N = 100;
      const lease = (threadId: string) => cp.acquireThread(threadId, { owner, leaseMs: 600_000, create: { kind: 'task', tenant: null, metadata: {} } });
      const bodyLease = await lease('body-1kb');
      const itemLease = await lease('item-1kb');
      let seq = 0;
      const contenders: Record<string, () => Promise<unknown>> = {
        raw: () => pool.query({ name: 'raw_insert', text: `INSERT INTO ${raw} (seq, body) VALUES ($1, $2)`, values: [seq, KB] }),
        body: () =>
          cp.commitStep(bodyLease, { position: position(seq, JSON.stringify({ kind: 'step', seq, out: KB })), items: [], status: 'running', expectedHead: seq === 0 ? null : seq - 1 }),
        item: () =>
          cp.commitStep(itemLease, {
            position: position(seq),
            items: [{ field: 'messages', index: 0, text: JSON.stringify(KB) }],
            status: 'running',
            expectedHead: seq === 0 ? null : seq - 1,
          }),
      };
      // Interleaved, so drift in the machine's load falls on all three alike. The first
      // rounds warm every pooled connection's prepared statements and are not counted.
      const ms: Record<string, number[]> = { raw: [], body: [], item: [] };
      for (; seq < N + 10; seq++) {
        for (const [name, run] of Object.entries(contenders)) {
          const started = performance.now();
          await run();
          if (seq >= 10) ms[name]!.push(performance.now() - started);
        }
      }
      const rawMs = median(ms.raw!);
      const bodyOnly = median(ms.body!);
      const withItem = median(ms.item!);

      const report = {
        rawInsertMs: +rawMs.toFixed(3),
        commitStep1KbBodyMs: +bodyOnly.toFixed(3),
        commitStep1KbItemMs: +withItem.toFixed(3),
        ratioBody: +(bodyOnly / rawMs).toFixed(2),
        ratioItem: +(withItem / rawMs).toFixed(2),
      };
      console.log(`[postgres round trips] median of ${N}: ${JSON.stringify(report)}`);
      expect(bodyOnly).toBeGreaterThan(0);
    } finally {
      await engine.close();
    }
  });

  it('opening a schema that is already current sends two reads on the pool: no transaction, no migration lock', async () => {
    await pg.empty();
    const pool = counting(pg.pool);
    const engine = postgres(pool, { schema: pg.schema });
    try {
      await engine.checkpointer.getThread('t1');
      expect(pool.sent).toHaveLength(3);
      expect(pool.sent[0]).toMatch(/to_regclass/);
      expect(pool.sent[1]).toMatch(/FROM "[^"]+"\.cairn_migrations/);
      expect(pool.sent.some((text) => /^BEGIN|advisory/.test(text))).toBe(false);
    } finally {
      await engine.close();
    }
    // A schema not made yet is made under the lock, as before.
    const fresh = `${pg.schema}_fresh`;
    const again = counting(pg.pool);
    const other = postgres(again, { schema: fresh });
    try {
      expect(await other.checkpointer.getThread('t1')).toBeNull();
      expect(again.sent.some((text) => /advisory/.test(text))).toBe(true);
    } finally {
      await other.close();
      await pg.pool.query(`DROP SCHEMA IF EXISTS "${fresh}" CASCADE`);
    }
  });
});
