/**
 * Snapshots and append fields: snapshots land at the configured
 * cadence (also across a resume) and never change what a position loads as;
 * an append field stores each item once, and a snapshot records only a cursor,
 * never the items; a long append thread loads identically from its head and from
 * every position in the middle. Every test runs on memory and on SQLite (row
 * counts are read with better-sqlite3 on the SQLite file).
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineState } from '../../src/state/schema.js';
import { field } from '../../src/state/fields.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import type { Engine } from '../../src/contracts/engine.js';
import { ENGINES, openRaw, snapshots, tidOf, useEngine } from './engines.js';

const State = defineState({
  fields: {
    // A constant bigger than any step's changes, so only `snapshotEvery` decides when to snapshot.
    pad: field.model(z.string(), { default: 'p'.repeat(1000) }),
    n: field.model(z.number(), { default: 0 }),
    log: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
  },
});

const item = (i: number) => `item-content-${i}`;

/** A loop of `steps` steps: step i sets n = i and appends item(i). `failAt` makes the step that reaches it fail once. */
function loopApp(engine: Engine, steps: number, snapshotEvery: number, failAt?: number) {
  let failed = false;
  return graph(State)
    .node('step', (s) => {
      if (failAt !== undefined && s.n + 1 === failAt && !failed) {
        failed = true;
        throw new Error('one-off failure');
      }
      return { n: s.n + 1, log: [item(s.n + 1)] };
    })
    .edge(START, 'step')
    .conditionalEdge('step', (s) => (s.n < steps ? 'step' : END))
    .compile({ engine, snapshotEvery, recursionLimit: steps + 5, retry: { maxAttempts: 1, initialDelayMs: 0 } });
}

const expected = (k: number) => ({ pad: 'p'.repeat(1000), n: k, log: Array.from({ length: k }, (_, i) => item(i + 1)) });

describe.each(ENGINES)('snapshots on %s', (name) => {
  const ctx = useEngine(name);

  function sqliteCount(sql: string, thread: string): number | undefined {
    if (!ctx.path) return undefined;
    const db = openRaw(ctx.path);
    try {
      return db.prepare(sql).pluck().get(tidOf(db, thread)) as number;
    } finally {
      db.close();
    }
  }

  it('with snapshotEvery 5 over 12 steps, snapshots land every 5 positions (seq 4 and 9)', async () => {
    await loopApp(ctx.engine, 12, 5).run({ thread: 'snap' });
    expect((await snapshots(ctx.engine, 'snap')).map((s) => s.seq)).toEqual([4, 9]);
    const rows = sqliteCount('SELECT count(*) FROM cairn_snapshots WHERE tid = ?', 'snap');
    if (rows !== undefined) expect(rows).toBe(2);
  });

  it('a run resumed part-way keeps the cadence (the policy counts from the last snapshot, not from the resume)', async () => {
    const app = loopApp(ctx.engine, 12, 5, 7);
    await expect(app.run({ thread: 'snap' })).rejects.toMatchObject({ code: 'ERR_NODE_FAILED' });
    expect((await app.getThread({ thread: 'snap' }))!.head).toBe(6);
    await app.run({ thread: 'snap' });
    expect((await snapshots(ctx.engine, 'snap')).map((s) => s.seq)).toEqual([4, 9]);
  });

  it('stateAt of every seq equals what a run without snapshots gives', async () => {
    await loopApp(ctx.engine, 12, 5).run({ thread: 'snap' });
    const plain = loopApp(ctx.engine, 12, 1000);
    await plain.run({ thread: 'plain' });
    expect(await snapshots(ctx.engine, 'plain')).toEqual([]);
    const snapped = loopApp(ctx.reopen(), 12, 5);
    for (let seq = 0; seq <= 12; seq++) {
      const a = await snapped.stateAt({ thread: 'snap', seq });
      expect(a).toEqual(await plain.stateAt({ thread: 'plain', seq }));
      expect(a).toEqual(expected(seq));
    }
  });

  it('an append field stores each item once and a snapshot never copies items', async () => {
    await loopApp(ctx.engine, 12, 2).run({ thread: 'snap' });
    const stored = await ctx.engine.checkpointer.getItems('snap', '', 'log', [{ from: 0, to: 12 }]);
    expect(stored).toEqual(Array.from({ length: 12 }, (_, i) => JSON.stringify(item(i + 1))));
    const rows = sqliteCount('SELECT count(*) FROM cairn_items WHERE tid = ?', 'snap');
    if (rows !== undefined) expect(rows).toBe(12);

    const snaps = await snapshots(ctx.engine, 'snap');
    expect(snaps.length).toBeGreaterThanOrEqual(5);
    for (const s of snaps) expect(s.text).not.toContain('item-content');
    for (const p of await ctx.engine.checkpointer.getPositions('snap', '', { from: 0, to: 12 })) expect(p.body).not.toContain('item-content');
  });

  it('snapshots are taken sooner when the changes since the last one outweigh the state', async () => {
    const Big = defineState({ fields: { blob: field.model(z.string(), { default: '' }), i: field.model(z.number(), { default: 0 }) } });
    const app = graph(Big)
      .node('rewrite', (s) => ({ blob: `${s.i}`.padEnd(300, 'x'), i: s.i + 1 }))
      .edge(START, 'rewrite')
      .conditionalEdge('rewrite', (s) => (s.i < 8 ? 'rewrite' : END))
      .compile({ engine: ctx.engine, snapshotEvery: 1000 });
    await app.run({ thread: 'big' });
    expect((await snapshots(ctx.engine, 'big')).length).toBeGreaterThan(0);
    for (let seq = 1; seq <= 8; seq++) expect(await app.stateAt({ thread: 'big', seq })).toEqual({ blob: `${seq - 1}`.padEnd(300, 'x'), i: seq });
  });

  it('a 300-step append thread loads identically from its head and from every position in the middle', async () => {
    const app = loopApp(ctx.engine, 300, 50);
    const result = await app.run({ thread: 'long' });
    expect(result.seq).toBe(300);
    expect(result.state).toEqual(expected(300));

    const reader = loopApp(ctx.reopen(), 300, 50);
    expect(await reader.getState({ thread: 'long' })).toEqual(expected(300));
    for (let seq = 0; seq <= 300; seq++) expect(await reader.stateAt({ thread: 'long', seq })).toEqual(expected(seq));

    const snaps = await snapshots(ctx.engine, 'long');
    expect(snaps.map((s) => s.seq)).toEqual([49, 99, 149, 199, 249, 299]);
    // A snapshot's size does not grow with the history: it holds cursors, not items.
    const sizes = snaps.map((s) => s.text.length);
    expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThan(10);
    const rows = sqliteCount('SELECT count(*) FROM cairn_items WHERE tid = ?', 'long');
    if (rows !== undefined) expect(rows).toBe(300);
    expect((await reader.verify({ thread: 'long' })).ok).toBe(true);
  });
});
