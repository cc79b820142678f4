/**
 * Retention beyond the root namespace, and by ledger age (`applyRetention`):
 * - a positions rule compacts long child namespaces (subgraph runs) too, each on its
 *   own keepLast / age: the child verifies, its history and kept positions read as
 *   before, a cut child position is ERR_POSITION_COMPACTED, the parent's replay still
 *   serves the child from its namespace, a child interrupted part-way resumes, and a
 *   failed thread resumes inside its compacted child without running kept steps again;
 * - a base is never an interrupt or resume position of a superstep that stopped
 *   part-way and finished since (the positions after it bind records keyed below it);
 * - a ledger rule removes the ledger rows older than its age with the steps they
 *   belong to (status and tenant filters hold), keeps and counts the rows a kept or
 *   resumable step needs (a failed step's effect outcome: its retry does not repeat
 *   the side effect), and every kept thread verifies.
 * A dry run reports exactly what the real run removes. Memory, SQLite (real files)
 * and PostgreSQL (a private schema).
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineState } from '../../src/state/schema.js';
import { field } from '../../src/state/fields.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import type { Engine } from '../../src/contracts/engine.js';
import { applyRetention, type RetentionReport } from '../../src/inspect/retention.js';
import { verifyThread } from '../../src/inspect/verify.js';
import { threadHistory } from '../../src/inspect/history.js';
import { ENGINES, useEngine } from '../runtime/engines.js';

const Parent = defineState({
  fields: {
    topic: field.model(z.string(), { default: '' }),
    notes: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
  },
});
const Research = defineState({
  fields: {
    question: field.model(z.string(), { default: '' }),
    n: field.model(z.number(), { default: 0 }),
    log: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
  },
});

/** plan -> research (a child run of 30 steps, each recording a search; optionally asking, or failing once, at step 20) -> publish. */
function researchApp(engine: Engine, options: { ask?: boolean; failOnce?: boolean } = {}) {
  const calls = { search: 0 };
  let failures = options.failOnce ? 1 : 0;
  const research = graph(Research)
    .node('search', async (s, c) => {
      if (options.ask && s.n === 20) await c.interrupt({ question: 'go on?' }, { answer: z.string() });
      if (s.n === 20 && failures > 0) {
        failures--;
        throw new Error('search engine down');
      }
      const hit = await c.record('search', async () => (calls.search++, `hit ${s.n + 1} for ${s.question}`));
      return { n: s.n + 1, log: [hit] };
    })
    .edge(START, 'search')
    .conditionalEdge('search', (s) => (s.n >= 30 ? END : 'search'));
  const app = graph(Parent)
    .node('plan', () => ({ topic: 'tides' }))
    .subgraph('research', research, { input: (s) => ({ question: s.topic }), output: (r) => ({ notes: [`${r.question}: ${r.log.length} hits`] }) })
    .node('publish', (s) => ({ notes: [`published ${s.notes.length}`] }))
    .edge(START, 'plan')
    .edge('plan', 'research')
    .edge('research', 'publish')
    .edge('publish', END)
    .compile({ engine, snapshotEvery: 5, recursionLimit: 100, retry: { maxAttempts: 1 } });
  return { app, calls };
}

const Counter = defineState({
  fields: {
    n: field.model(z.number(), { default: 0 }),
    log: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
  },
});

/** Each step records a note and charges once (an effect); `failAt` makes that step throw after its charge. */
function ledgerApp(engine: Engine, options: { stopAt?: number; failAt?: number; snapshotEvery?: number } = {}) {
  const charges = new Map<string, number>();
  const app = graph(Counter)
    .node('step', async (s, c) => {
      const note = await c.record('note', async () => `note ${s.n + 1}`);
      await c.effect('charge', { run: (key) => (charges.set(key, (charges.get(key) ?? 0) + 1), key) });
      if (s.n + 1 === options.failAt) throw new Error('card declined');
      return { n: s.n + 1, log: [note] };
    })
    .edge(START, 'step')
    .conditionalEdge('step', (s) => (s.n % (options.stopAt ?? 10) === 0 ? END : 'step'))
    .compile({ engine, snapshotEvery: options.snapshotEvery ?? 4, recursionLimit: 100, retry: { maxAttempts: 1 } });
  return { app, charges };
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 15));
/** A report without its dryRun flag: what a dry run and the real run must agree on. */
const comparable = (r: RetentionReport) => ({ ...r, dryRun: undefined });

describe.each(ENGINES)('retention of child namespaces and ledger rows on %s', (name) => {
  const ctx = useEngine(name);

  it('a positions rule compacts a long child namespace on its own: it verifies, reads its kept positions identically, refuses cut ones, and the parent still resolves it', async () => {
    const { app, calls } = researchApp(ctx.engine);
    await app.run({ thread: 't' });
    const [step] = (await app.history({ thread: 't' })).filter((p) => p.children.length);
    const ns = step!.children[0]!;
    const childHead = (await ctx.engine.checkpointer.getHead('t', ns))!.seq;
    expect(childHead).toBe(30);
    const kept: Record<number, unknown> = {};
    for (let seq = childHead - 12; seq <= childHead; seq++) kept[seq] = await app.stateAt({ thread: 't', ns, seq });
    const childState = await app.getState({ thread: 't', ns });
    const rootState = await app.getState({ thread: 't' });

    const options = { checkpointer: ctx.engine.checkpointer, ledger: ctx.engine.ledger, policy: { positions: [{ keepLast: 8 }] } };
    const dry = await applyRetention({ ...options, dryRun: true });
    const real = await applyRetention(options);
    expect(comparable(dry)).toEqual(comparable(real));
    // The root (4 positions) is too short to cut; the child is cut on its own count.
    expect(real.positions.compacted.map((c) => c.ns)).toEqual([ns]);
    expect(real.positions.skipped).toEqual([]);
    const { base, rows } = real.positions.compacted[0]!;
    expect(base).toBeLessThanOrEqual(childHead - 8);
    expect(base).toBeGreaterThan(childHead - 8 - 5);
    expect(rows.positions).toBe(base);
    // One recorded search per step, keyed by the seq it started from: seqs 0 to base - 1.
    expect(rows.ledgerEntries).toBe(base);
    expect((await ctx.engine.checkpointer.getHead('t', ns))!.base).toEqual({ seq: base, hash: (await ctx.engine.checkpointer.getPosition('t', ns, base))!.hash });
    expect((await ctx.engine.checkpointer.getHead('t', ''))!.base).toBeUndefined();

    const report = await verifyThread(ctx.engine, 't');
    expect(report.problems).toEqual([]);
    const reader = researchApp(ctx.reopen());
    expect(await reader.app.getState({ thread: 't', ns })).toEqual(childState);
    expect(await reader.app.getState({ thread: 't' })).toEqual(rootState);
    for (let seq = base; seq <= childHead; seq++) expect(await reader.app.stateAt({ thread: 't', ns, seq })).toEqual(kept[seq]);
    await expect(reader.app.stateAt({ thread: 't', ns, seq: base - 1 })).rejects.toMatchObject({ code: 'ERR_POSITION_COMPACTED' });
    await expect(reader.app.stateAt({ thread: 't', ns, seq: 0 })).rejects.toMatchObject({ code: 'ERR_POSITION_COMPACTED' });
    expect((await threadHistory(ctx.engine.checkpointer, 't', { ns })).map((p) => p.seq)).toEqual(Array.from({ length: childHead - base + 1 }, (_, i) => childHead - i));
    // The parent's positions are all kept, and the child run their step ran is served from its namespace.
    const replayed = await reader.app.replay({ thread: 't', from: 0 });
    expect(replayed.sameStates).toBe(true);
    expect(reader.calls.search).toBe(0);
    expect(calls.search).toBe(30);

    // Applied again, nothing more goes.
    const again = await applyRetention(options);
    expect(again.positions.compacted).toEqual([]);
  });

  it('an interrupted child is never cut into its suspended step, and resumes after compaction; a base is never a position of a superstep that stopped part-way', async () => {
    const { app, calls } = researchApp(ctx.engine, { ask: true });
    await app.run({ thread: 'asks' });
    expect((await app.getThread({ thread: 'asks' }))!.status).toBe('interrupted');
    const ns = (await app.history({ thread: 'asks' })).flatMap((p) => p.children)[0]!;
    const suspendedHead = (await ctx.engine.checkpointer.getHead('asks', ns))!.seq;
    const policy = { positions: [{ keepLast: 1 }] };
    const done = await applyRetention({ checkpointer: ctx.engine.checkpointer, ledger: ctx.engine.ledger, policy });
    const child = done.positions.compacted.find((c) => c.ns === ns)!;
    expect(child.base).toBeLessThan(suspendedHead);
    expect((await verifyThread(ctx.engine, 'asks')).problems).toEqual([]);
    await app.resume({ thread: 'asks', answer: 'yes' });
    expect(await app.getState({ thread: 'asks', ns })).toMatchObject({ n: 30 });
    expect(calls.search).toBe(30);
    expect((await verifyThread(ctx.engine, 'asks')).problems).toEqual([]);

    // With a snapshot at every position, cutting at the interrupt or resume position would
    // strand the records of the step that finished the superstep: the base goes below.
    const stepper = graph(Counter)
      .node('step', async (s, c) => {
        if (s.n === 6) await c.interrupt({ question: 'on?' }, { answer: z.string() });
        return { n: s.n + 1, log: [await c.record('note', async () => `note ${s.n + 1}`)] };
      })
      .edge(START, 'step')
      .conditionalEdge('step', (s) => (s.n >= 12 ? END : 'step'))
      .compile({ engine: ctx.engine, snapshotEvery: 1, recursionLimit: 50 });
    await stepper.run({ thread: 'paused' });
    await stepper.resume({ thread: 'paused', answer: 'yes' });
    const history = await stepper.history({ thread: 'paused' });
    const head = history[0]!.seq;
    const stopped = history.filter((p) => p.kind === 'interrupt' || p.kind === 'resume').map((p) => p.seq);
    expect(stopped.length).toBe(2);
    const cutAt = Math.max(...stopped);
    const report = await applyRetention({ checkpointer: ctx.engine.checkpointer, ledger: ctx.engine.ledger, policy: { positions: [{ status: 'completed', keepLast: head - cutAt }] } });
    const base = report.positions.compacted.find((c) => c.thread === 'paused')!.base;
    expect(base).toBeLessThan(Math.min(...stopped));
    expect((await verifyThread(ctx.engine, 'paused')).problems).toEqual([]);
  });

  it('a failed thread whose child run is compacted resumes inside the child: its kept steps are not run again', async () => {
    const { app, calls } = researchApp(ctx.engine, { failOnce: true });
    await expect(app.run({ thread: 'down' })).rejects.toThrow(/search engine down/);
    expect((await app.getThread({ thread: 'down' }))!.status).toBe('failed');
    const ns = (await ctx.engine.checkpointer.listNamespaces('down')).find((n) => n !== '')!;
    expect((await ctx.engine.checkpointer.getHead('down', ns))!.seq).toBe(20);
    const report = await applyRetention({ checkpointer: ctx.engine.checkpointer, ledger: ctx.engine.ledger, policy: { positions: [{ status: 'failed', keepLast: 3 }] } });
    expect(report.positions.compacted.map((c) => c.ns)).toEqual([ns]);
    expect((await verifyThread(ctx.engine, 'down')).problems).toEqual([]);
    expect(calls.search).toBe(20);
    const result = await app.run({ thread: 'down' });
    expect(result.status).toBe('completed');
    expect(result.state.notes).toEqual(['tides: 30 hits', 'published 1']);
    // Only the failed step and those after it ran: 10 more searches, none again.
    expect(calls.search).toBe(30);
    expect((await verifyThread(ctx.engine, 'down')).problems).toEqual([]);
  });

  it('a ledger rule removes the rows older than its age with their steps, keeps and counts what a kept or resumable step needs, and a retried step does not repeat its effect', async () => {
    const chat = ledgerApp(ctx.engine);
    await chat.app.run({ thread: 'chat', tenant: 'acme' });
    await chat.app.run({ thread: 'other', tenant: 'beta' });
    const failing = ledgerApp(ctx.engine, { failAt: 6 });
    await expect(failing.app.run({ thread: 'card', tenant: 'acme' })).rejects.toThrow(/card declined/);
    await tick();
    const cutoff = Date.now();
    await tick();
    await chat.app.run({ thread: 'chat', input: { n: 10 } });
    const oldRows = (await ctx.engine.ledger.list('chat')).filter((e) => e.createdAt < cutoff);
    expect(oldRows.length).toBe(20);
    const chatHead = (await chat.app.getThread({ thread: 'chat' }))!.head!;
    const chatState = await chat.app.getState({ thread: 'chat' });
    const keptStates: Record<number, unknown> = {};
    for (let seq = 0; seq <= chatHead; seq++) keptStates[seq] = await chat.app.stateAt({ thread: 'chat', seq });
    const otherRows = (await ctx.engine.ledger.list('other')).length;

    const options = { checkpointer: ctx.engine.checkpointer, ledger: ctx.engine.ledger, now: cutoff + 60_000, policy: { ledger: [{ tenant: 'acme', olderThanMs: 60_000 }] } };
    const dry = await applyRetention({ ...options, dryRun: true });
    const real = await applyRetention(options);
    expect(comparable(dry)).toEqual(comparable(real));
    expect(real.positions.compacted).toEqual([]);
    const compacted = Object.fromEntries(real.ledger.compacted.map((c) => [c.thread, c]));
    expect(Object.keys(compacted).sort()).toEqual(['card', 'chat']);

    // chat: the old rows are those of steps from 0 to 9; the cut is at most 10, at a snapshot.
    const { base, rows } = compacted.chat!;
    expect(base).toBeLessThanOrEqual(10);
    expect(base).toBeGreaterThan(10 - 4);
    expect(rows.ledgerEntries).toBe(2 * base);
    expect(rows.positions).toBe(base);
    expect(rows.bytes).toBeGreaterThan(0);
    const left = await ctx.engine.ledger.list('chat');
    expect(left.every((e) => e.seq >= base)).toBe(true);
    expect(left.filter((e) => e.createdAt < cutoff).length).toBe(20 - 2 * base);
    // card: its failed step (from the head) keeps its record and its charge; those below go.
    const cardHead = (await failing.app.getThread({ thread: 'card' }))!.head!;
    expect(cardHead).toBe(5);
    const cardLeft = await ctx.engine.ledger.list('card');
    expect(cardLeft.some((e) => e.seq === cardHead && e.kind === 'effect' && e.status === 'done')).toBe(true);
    expect(cardLeft.every((e) => e.seq >= compacted.card!.base)).toBe(true);
    expect(real.ledger.kept).toBe(20 - 2 * base + cardLeft.length);
    // The other tenant's thread is untouched.
    expect((await ctx.engine.ledger.list('other')).length).toBe(otherRows);

    for (const thread of ['chat', 'card', 'other']) expect((await verifyThread(ctx.engine, thread)).problems).toEqual([]);
    const reader = ledgerApp(ctx.reopen());
    expect(await reader.app.getState({ thread: 'chat' })).toEqual(chatState);
    for (let seq = base; seq <= chatHead; seq++) expect(await reader.app.stateAt({ thread: 'chat', seq })).toEqual(keptStates[seq]);
    await expect(reader.app.stateAt({ thread: 'chat', seq: base - 1 })).rejects.toMatchObject({ code: 'ERR_POSITION_COMPACTED' });
    await expect(reader.app.replay({ thread: 'chat', from: 0 })).rejects.toMatchObject({ code: 'ERR_POSITION_COMPACTED' });
    const replayed = await reader.app.replay({ thread: 'chat', from: base });
    expect(replayed.steps.every((s) => s.same)).toBe(true);
    expect(reader.charges.size).toBe(0);

    // The failed step runs again: its charge is served from the ledger, not made twice.
    const retry = ledgerApp(ctx.engine);
    const result = await retry.app.run({ thread: 'card' });
    expect(result.state.n).toBe(10);
    const cardCharge = cardLeft.find((e) => e.seq === cardHead && e.kind === 'effect')!;
    expect(retry.charges.has(cardCharge.key)).toBe(false);
    expect(retry.charges.size).toBe(4);
    expect((await verifyThread(ctx.engine, 'card')).problems).toEqual([]);

    // A status filter holds, and applied again nothing more goes.
    const completedOnly = await applyRetention({ ...options, now: Date.now() + 60_000, policy: { ledger: [{ status: 'failed' as const, olderThanMs: 60_000 }] } });
    expect(completedOnly.ledger.compacted).toEqual([]);
    expect((await ctx.engine.ledger.list('other')).length).toBe(otherRows);
    // The failed step has committed since: its old rows are no longer needed, and go now.
    const again = await applyRetention(options);
    expect(again.ledger.compacted.map((c) => c.thread)).toEqual(['card']);
    expect((await ctx.engine.ledger.list('card')).every((e) => e.createdAt >= cutoff)).toBe(true);
    expect(again.ledger.kept).toBe(20 - 2 * base);
    expect((await verifyThread(ctx.engine, 'card')).problems).toEqual([]);
    const third = await applyRetention(options);
    expect(third.ledger.compacted).toEqual([]);
  });

  it('a ledger rule removes the rows a `ledger: false` compaction left below the base, the base staying', async () => {
    const { app } = ledgerApp(ctx.engine, { stopAt: 20 });
    await app.run({ thread: 'audit' });
    const cp = ctx.engine.checkpointer;
    const first = await applyRetention({ checkpointer: cp, ledger: ctx.engine.ledger, policy: { positions: [{ keepLast: 6, ledger: false }] } });
    const base = first.positions.compacted[0]!.base;
    expect(first.positions.compacted[0]!.rows.ledgerEntries).toBe(0);
    const below = (await ctx.engine.ledger.list('audit')).filter((e) => e.seq < base);
    expect(below.length).toBe(2 * base);
    expect((await verifyThread(ctx.engine, 'audit')).problems).toEqual([]);

    // Old: the rows written before the first kept step's, so those below the base only.
    const threshold = Math.min(...(await ctx.engine.ledger.list('audit')).filter((e) => e.seq >= base).map((e) => e.createdAt));
    const anchor = (await cp.getHead('audit', ''))!.base;
    const options = { checkpointer: cp, ledger: ctx.engine.ledger, now: threshold + 60_000, policy: { ledger: [{ olderThanMs: 60_000 }] } };
    const dry = await applyRetention({ ...options, dryRun: true });
    const real = await applyRetention(options);
    expect(comparable(dry)).toEqual(comparable(real));
    expect(real.ledger.compacted).toEqual([{ thread: 'audit', ns: '', base, rows: expect.objectContaining({ positions: 0, items: 0, snapshots: 0, ledgerEntries: 2 * base }) }]);
    expect(real.ledger.rows.bytes).toBe(below.reduce((n, e) => n + (e.outcome?.length ?? 0), 0));
    expect(real.ledger.kept).toBe(0);
    expect((await cp.getHead('audit', ''))!.base).toEqual(anchor);
    expect((await ctx.engine.ledger.list('audit')).every((e) => e.seq >= base)).toBe(true);
    expect((await verifyThread(ctx.engine, 'audit')).problems).toEqual([]);
    expect(await ledgerApp(ctx.reopen()).app.getState({ thread: 'audit' })).toMatchObject({ n: 20 });
    expect((await applyRetention(options)).ledger.compacted).toEqual([]);
  });

  it('a ledger rule and a positions rule on one thread make one compaction per namespace, at the further cut, child runs included', async () => {
    const { app } = researchApp(ctx.engine);
    await app.run({ thread: 'both' });
    const ns = (await app.history({ thread: 'both' })).flatMap((p) => p.children)[0]!;
    const options = {
      checkpointer: ctx.engine.checkpointer,
      ledger: ctx.engine.ledger,
      now: Date.now() + 60_000,
      policy: { positions: [{ keepLast: 20 }], ledger: [{ olderThanMs: 30_000 }] },
    };
    const dry = await applyRetention({ ...options, dryRun: true });
    const real = await applyRetention(options);
    expect(comparable(dry)).toEqual(comparable(real));
    // Every row is old: the ledger's cut (past the newest row) is further than keepLast's in the child.
    expect(real.positions.compacted).toEqual([]);
    expect(real.ledger.compacted.map((c) => c.ns)).toEqual([ns]);
    expect(real.ledger.compacted[0]!.base).toBeGreaterThan(30 - 20);
    // The root's rows (none: plan and publish record nothing) and the child's kept step rows.
    expect(real.ledger.kept).toBe((await ctx.engine.ledger.list('both')).length);
    expect((await verifyThread(ctx.engine, 'both')).problems).toEqual([]);
    expect(await app.getState({ thread: 'both', ns })).toMatchObject({ n: 30 });
  });
});
