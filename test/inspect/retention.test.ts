/**
 * Retention (`applyRetention`): a long thread compacted keeps verifying and reads its
 * head and every kept position identically; a compacted position is a typed error;
 * the thread goes on after compaction; a dry run reports what the real run removes;
 * a suspended superstep is never cut into; a held thread is skipped. Memory, SQLite
 * and PostgreSQL.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineState } from '../../src/state/schema.js';
import { field } from '../../src/state/fields.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import type { Engine } from '../../src/contracts/engine.js';
import { applyRetention } from '../../src/inspect/retention.js';
import { verifyThread } from '../../src/inspect/verify.js';
import { threadHistory } from '../../src/inspect/history.js';
import { exportThreads } from '../../src/inspect/transfer.js';
import { ENGINES, useEngine } from '../runtime/engines.js';

const State = defineState({
  fields: {
    n: field.model(z.number(), { default: 0 }),
    note: field.model(z.string(), { default: '' }),
    log: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
  },
});

/** Each run takes `input.steps` more steps: step i sets n and note and appends item i. */
function loopApp(engine: Engine, snapshotEvery = 5) {
  return graph(State)
    .node('step', async (s, ctx) => ({ n: s.n + 1, note: await ctx.record('note', async () => `at ${s.n + 1}`), log: [`item-${s.n + 1}`] }))
    .edge(START, 'step')
    .conditionalEdge('step', (s) => (s.n % 20 === 0 ? END : 'step'))
    .compile({ engine, snapshotEvery, recursionLimit: 100 });
}

describe.each(ENGINES)('retention on %s', (name) => {
  const ctx = useEngine(name);

  it('compacts a long thread: it verifies, reads its head and kept positions identically, refuses compacted ones, and goes on', async () => {
    const app = loopApp(ctx.engine);
    await app.run({ thread: 'long' });
    await app.run({ thread: 'long', input: { note: 'again' } });
    const head = (await app.getThread({ thread: 'long' }))!.head!;
    const before = await app.getState({ thread: 'long' });
    const kept: Record<number, unknown> = {};
    for (let seq = head - 12; seq <= head; seq++) kept[seq] = await app.stateAt({ thread: 'long', seq });

    const policy = { positions: [{ keepLast: 10 }] };
    const dry = await applyRetention({ checkpointer: ctx.engine.checkpointer, ledger: ctx.engine.ledger, policy, dryRun: true });
    const real = await applyRetention({ checkpointer: ctx.engine.checkpointer, ledger: ctx.engine.ledger, policy });
    expect(real.positions.compacted).toHaveLength(1);
    expect(dry.positions).toEqual(real.positions);
    const { base, rows } = real.positions.compacted[0]!;
    expect(base).toBeLessThanOrEqual(head - 10);
    expect(rows.positions).toBe(base);
    expect(rows.ledgerEntries).toBeGreaterThan(0);
    expect(rows.bytes).toBeGreaterThan(0);

    const report = await verifyThread(ctx.engine, 'long');
    expect(report.problems).toEqual([]);
    expect(report.positions).toBe(head - base + 1);
    const reader = loopApp(ctx.reopen());
    expect((await reader.getState({ thread: 'long' }))).toEqual(before);
    for (let seq = base; seq <= head; seq++) expect((await reader.stateAt({ thread: 'long', seq }))).toEqual(kept[seq]);
    await expect(reader.stateAt({ thread: 'long', seq: base - 1 })).rejects.toMatchObject({ code: 'ERR_POSITION_COMPACTED' });
    await expect(reader.fork({ thread: 'long', seq: 0 })).rejects.toMatchObject({ code: 'ERR_POSITION_COMPACTED' });
    await expect(reader.replay({ thread: 'long', from: 0 })).rejects.toMatchObject({ code: 'ERR_POSITION_COMPACTED' });
    const replayed = await reader.replay({ thread: 'long', from: base });
    expect(replayed.steps.length).toBe(head - base);
    expect(replayed.steps.every((s) => s.same && s.divergences.length === 0)).toBe(true);
    const history = await threadHistory(ctx.engine.checkpointer, 'long');
    expect(history.map((p) => p.seq)).toEqual(Array.from({ length: head - base + 1 }, (_, i) => head - i));
    expect((await app.history({ thread: 'long' })).length).toBe(head - base + 1);

    // An export, which an import would replay from the first position, is refused.
    await expect(exportThreads(ctx.engine, ['long']).next()).rejects.toMatchObject({ code: 'ERR_NOT_SUPPORTED' });

    // The thread goes on from its compacted head, and a second compaction moves the base up.
    await reader.run({ thread: 'long', input: { note: 'third' } });
    const state = await reader.getState({ thread: 'long' });
    expect(state.n).toBe(60);
    expect(state.log).toEqual(Array.from({ length: 60 }, (_, i) => `item-${i + 1}`));
    expect((await verifyThread(ctx.engine, 'long')).problems).toEqual([]);
    const again = await applyRetention({ checkpointer: ctx.engine.checkpointer, ledger: ctx.engine.ledger, policy });
    expect(again.positions.compacted[0]!.base).toBeGreaterThan(base);
    expect((await verifyThread(ctx.engine, 'long')).problems).toEqual([]);
    expect((await loopApp(ctx.reopen()).getState({ thread: 'long' }))).toEqual(state);
  });
});
