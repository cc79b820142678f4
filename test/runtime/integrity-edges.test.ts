/**
 * A read never returns what the chain did not prove, on the engines whose rows can
 * be changed behind cairn's back (a SQLite file, a PostgreSQL schema):
 * - an item appended before the nearest snapshot, changed: every load that uses it
 *   refuses it (the snapshot holds a digest of the items it points at);
 * - the newest positions deleted: the thread record's anchored head says so;
 * - a snapshot damaged, or moved to another position: loads and verify both say so;
 * - a recorded output changed in the ledger: verify and replay say so.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import pg from 'pg';
import type Database from 'better-sqlite3';
import { CorruptRecordError } from '../../src/errors.js';
import { defineState } from '../../src/state/schema.js';
import { field } from '../../src/state/fields.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import type { Engine } from '../../src/contracts/engine.js';
import { caught, openRaw, tidOf, useEngine, type EngineName } from './engines.js';

const State = defineState({
  fields: {
    // Larger than any step's changes: snapshots come every 4 positions, not sooner.
    pad: field.model(z.string(), { default: 'p'.repeat(500) }),
    n: field.model(z.number(), { default: 0 }),
    log: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
    answer: field.model(z.string().optional()),
  },
});

const THREAD = 'edges';
const STEPS = 8;

/** 8 steps, each setting n, appending `entry-<n>` and recording an output; a snapshot every 4 positions. */
function loopApp(engine: Engine) {
  return graph(State)
    .node('step', async (s, ctx) => ({ n: s.n + 1, log: [`entry-${s.n + 1}`], answer: await ctx.record('model', () => `answer-${s.n + 1}`) }))
    .edge(START, 'step')
    .conditionalEdge('step', (s) => (s.n < STEPS ? 'step' : END))
    .compile({ engine, retry: { maxAttempts: 1 }, snapshotEvery: 4 });
}

/** Direct access to the stored rows of one engine, the way a disk fault or a stray script would change them. */
interface Rows {
  /** Sets one item's text (found by its current text). */
  setItem(from: string, to: string): Promise<number>;
  deletePositionsFrom(seq: number): Promise<void>;
  snapshotSeqs(): Promise<number[]>;
  snapshotText(seq: number): Promise<string>;
  setSnapshot(seq: number, text: string): Promise<void>;
  setLedgerOutcome(from: string, to: string): Promise<number>;
  close(): Promise<void>;
}

function sqliteRows(path: string): Rows {
  const db: Database.Database = openRaw(path);
  const tid = tidOf(db, THREAD);
  return {
    async setItem(from, to) {
      return db.prepare('UPDATE cairn_items SET body = ? WHERE tid = ? AND body = ?').run(to, tid, from).changes;
    },
    async deletePositionsFrom(seq) {
      db.prepare('DELETE FROM cairn_items WHERE tid = ? AND seq >= ?').run(tid, seq);
      db.prepare('DELETE FROM cairn_snapshots WHERE tid = ? AND seq >= ?').run(tid, seq);
      db.prepare('DELETE FROM cairn_positions WHERE tid = ? AND seq >= ?').run(tid, seq);
    },
    async snapshotSeqs() {
      return db.prepare('SELECT seq FROM cairn_snapshots WHERE tid = ? ORDER BY seq').pluck().all(tid) as number[];
    },
    async snapshotText(seq) {
      return db.prepare('SELECT body FROM cairn_snapshots WHERE tid = ? AND seq = ?').pluck().get(tid, seq) as string;
    },
    async setSnapshot(seq, text) {
      db.prepare('INSERT OR REPLACE INTO cairn_snapshots (tid, ns, seq, body) VALUES (?, ?, ?, ?)').run(tid, '', seq, text);
    },
    async setLedgerOutcome(from, to) {
      return db.prepare('UPDATE cairn_ledger SET outcome = ? WHERE tid = ? AND outcome = ?').run(to, tid, from).changes;
    },
    async close() {
      db.close();
    },
  };
}

function postgresRows(pool: pg.Pool, schema: string): Rows {
  const s = `"${schema}"`;
  const tid = `(SELECT tid FROM ${s}.cairn_threads WHERE id = '${THREAD}')`;
  const run = async (text: string, values: unknown[] = []) => (await pool.query(text, values)).rowCount ?? 0;
  return {
    setItem: (from, to) => run(`UPDATE ${s}.cairn_items SET body = $1 WHERE tid = ${tid} AND body = $2`, [to, from]),
    async deletePositionsFrom(seq) {
      for (const table of ['cairn_items', 'cairn_snapshots', 'cairn_positions']) await run(`DELETE FROM ${s}.${table} WHERE tid = ${tid} AND seq >= $1`, [seq]);
    },
    async snapshotSeqs() {
      return (await pool.query(`SELECT seq FROM ${s}.cairn_snapshots WHERE tid = ${tid} ORDER BY seq`)).rows.map((r) => Number(r.seq));
    },
    async snapshotText(seq) {
      return (await pool.query(`SELECT body FROM ${s}.cairn_snapshots WHERE tid = ${tid} AND seq = $1`, [seq])).rows[0].body;
    },
    async setSnapshot(seq, text) {
      await run(`INSERT INTO ${s}.cairn_snapshots (tid, ns, seq, body) VALUES (${tid}, '', $1, $2) ON CONFLICT (tid, ns, seq) DO UPDATE SET body = excluded.body`, [seq, text]);
    },
    setLedgerOutcome: (from, to) => run(`UPDATE ${s}.cairn_ledger SET outcome = $1 WHERE tid = ${tid} AND outcome = $2`, [to, from]),
    async close() {},
  };
}

async function expectCorrupt(load: () => Promise<unknown>, pattern?: RegExp): Promise<void> {
  const error = await caught(load);
  expect(CorruptRecordError.is(error), String(error)).toBe(true);
  expect(error.message).toContain(THREAD);
  if (pattern) expect(error.message).toMatch(pattern);
}

for (const name of ['sqlite', 'postgres'] as EngineName[]) {
  describe(`integrity at the edges on ${name}`, () => {
    const ctx = useEngine(name);

    async function stored() {
      const app = loopApp(ctx.engine);
      await app.run({ thread: THREAD });
      expect((await app.verify({ thread: THREAD })).ok).toBe(true);
      const rows = name === 'sqlite' ? sqliteRows(ctx.path!) : postgresRows(ctx.pg!.pool, ctx.pg!.schema);
      return { app, rows };
    }

    it('an item appended before the nearest snapshot, changed, fails every load that uses it, and verify names its seq', async () => {
      const { app, rows } = await stored();
      try {
        expect(await rows.snapshotSeqs()).toEqual([3, 7]);
        // entry-2 was appended by seq 2, below the snapshots at 3 and 7.
        expect(await rows.setItem('"entry-2"', '"entry-X"')).toBe(1);
        await expectCorrupt(() => app.getState({ thread: THREAD }), /checksum|hash/);
        await expectCorrupt(() => app.stateAt({ thread: THREAD, seq: 7 }));
        await expectCorrupt(() => app.stateAt({ thread: THREAD, seq: 5 }));
        await expectCorrupt(() => app.stateAt({ thread: THREAD, seq: 3 }));
        // Below the change, nothing uses the row.
        expect((await app.stateAt({ thread: THREAD, seq: 1 })).log).toEqual(['entry-1']);
        // A new run loads the head first: it fails, and nothing is written.
        await expectCorrupt(() => app.run({ thread: THREAD, input: { n: 0 } }));
        expect((await app.history({ thread: THREAD })).length).toBe(STEPS + 1);
        const report = await app.verify({ thread: THREAD });
        expect(report.ok).toBe(false);
        expect(report.problems.filter((p) => p.kind === 'position').map((p) => p.seq)).toEqual([2]);
      } finally {
        await rows.close();
      }
    });

    it('the newest positions deleted (a truncated tail): loads and verify say so instead of returning the older head', async () => {
      const { app, rows } = await stored();
      try {
        await rows.deletePositionsFrom(7);
        await expectCorrupt(() => app.getState({ thread: THREAD }), /removed/);
        await expectCorrupt(() => app.run({ thread: THREAD }), /removed/);
        const report = await app.verify({ thread: THREAD });
        expect(report.ok).toBe(false);
        expect(report.problems).toEqual([expect.objectContaining({ kind: 'head', seq: 8, message: expect.stringMatching(/removed/) })]);
        // What is still stored still reads.
        expect((await app.stateAt({ thread: THREAD, seq: 6 })).n).toBe(6);
      } finally {
        await rows.close();
      }
    });

    it('a damaged snapshot fails the loads that use it and verify reports it', async () => {
      const { app, rows } = await stored();
      try {
        const text = await rows.snapshotText(3);
        expect(text).toContain('"n":3');
        await rows.setSnapshot(3, text.replace('"n":3', '"n":5'));
        await expectCorrupt(() => app.stateAt({ thread: THREAD, seq: 5 }), /snapshot at seq 3/);
        const report = await app.verify({ thread: THREAD });
        expect(report.problems).toEqual([expect.objectContaining({ kind: 'snapshot', seq: 3 })]);
        // The head reads from the snapshot at 7, which is intact.
        expect((await app.getState({ thread: THREAD })).n).toBe(8);
      } finally {
        await rows.close();
      }
    });

    it('a sound snapshot copied to another position is refused: it is bound to the position it was taken at', async () => {
      const { app, rows } = await stored();
      try {
        await rows.setSnapshot(7, await rows.snapshotText(3));
        await expectCorrupt(() => app.getState({ thread: THREAD }), /another position/);
        expect((await app.verify({ thread: THREAD })).problems).toEqual([expect.objectContaining({ kind: 'snapshot', seq: 7 })]);
      } finally {
        await rows.close();
      }
    });

    it('a changed recorded output is reported by verify (bound to its position by digest) and by replay, never served', async () => {
      const { app, rows } = await stored();
      try {
        expect(await rows.setLedgerOutcome('"answer-3"', '"answer-Z"')).toBe(1);
        const report = await app.verify({ thread: THREAD });
        expect(report.ok).toBe(false);
        expect(report.problems).toEqual([expect.objectContaining({ kind: 'ledger', seq: 3 })]);
        expect(report.problems[0]!.message).toMatch(/digest/);
        const replay = await app.replay({ thread: THREAD, from: 0 });
        expect(replay.sameStates).toBe(false);
        const step = replay.steps.find((s) => s.seq === 3)!;
        expect(step.divergences[0]!.reason).toMatch(/does not match the digest/);
        // The stored state was never built from the ledger: it still reads as written.
        expect((await app.stateAt({ thread: THREAD, seq: 3 })).answer).toBe('answer-3');
      } finally {
        await rows.close();
      }
    });
  });
}
