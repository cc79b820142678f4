/**
 * Retention with artifacts on SQLite and PostgreSQL, with a directory of artifacts:
 * threads deleted and positions compacted release what only they referred to, and the
 * collection after them never leaves a kept thread (or a kept position) with a dangling
 * ref; a dry run reports exactly what the real run then removes; store rows go by
 * namespace prefix and age; a thread a run holds is skipped; an interrupted thread's
 * suspended step is never cut into.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineState, type StateOf } from '../../src/state/schema.js';
import { field } from '../../src/state/fields.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import type { Engine } from '../../src/contracts/engine.js';
import { fsArtifacts, type FsArtifactStore } from '../../src/artifacts/fs/index.js';
import { listArtifacts } from '../../src/artifacts/helpers.js';
import { applyRetention, type RetentionOptions, type RetentionReport } from '../../src/inspect/retention.js';
import { verifyThread } from '../../src/inspect/verify.js';
import { verifyArtifacts } from '../../src/inspect/artifact-verify.js';
import { useEngine } from '../runtime/engines.js';
import { encode } from '../../src/codec/tagged-json.js';

const Ref = z.object({ id: z.string(), sha256: z.string(), media_type: z.string(), size_bytes: z.number() });
const State = defineState({
  fields: {
    n: field.model(z.number(), { default: 0 }),
    latest: field.model(Ref.optional()),
    shared: field.model(Ref.optional()),
    pages: field.model(z.array(Ref), { reduce: 'append', default: [] }),
  },
});

/** Each run takes 8 steps; each step replaces `latest` with a fresh artifact and appends a page; `shared` is the same bytes in every thread. */
function app(engine: Engine, artifacts: FsArtifactStore) {
  return graph(State)
    .node('step', async (s, ctx) => ({
      n: s.n + 1,
      latest: await ctx.artifacts.put(`latest ${ctx.threadId} ${s.n + 1}`, { mediaType: 'text/plain' }),
      pages: [await ctx.artifacts.put(`page ${ctx.threadId} ${s.n + 1}`, { mediaType: 'text/plain' })],
      ...(s.n === 0 ? { shared: await ctx.artifacts.put('shared by every thread', { mediaType: 'text/plain' }) } : {}),
    }))
    .edge(START, 'step')
    .conditionalEdge('step', (s) => (s.n % 8 === 0 ? END : 'step'))
    .compile({ engine, artifacts, snapshotEvery: 5, recursionLimit: 50 });
}

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
const tick = () => new Promise((resolve) => setTimeout(resolve, 5));

async function artifactIds(artifacts: FsArtifactStore): Promise<Set<string>> {
  const ids = new Set<string>();
  for await (const info of listArtifacts(artifacts, { allTenants: true })) ids.add(info.ref.id);
  return ids;
}

/** The report without what only a real run knows (the artifact store's clock). */
/** What a retention run over `engine` and `artifacts` takes: no grace, a clock a minute ahead. */
function retentionOn(engine: Engine, artifacts: FsArtifactStore, policy: RetentionOptions['policy']) {
  return { checkpointer: engine.checkpointer, ledger: engine.ledger, store: engine.store, artifacts, graceMs: 0, now: Date.now() + 60_000, policy };
}

const comparable = (r: RetentionReport) => ({ ...r, dryRun: undefined, artifacts: r.artifacts && { count: r.artifacts.count, bytes: r.artifacts.bytes, victims: r.artifacts.gc.victims.map((v) => v.ref.id).sort() } });

describe.each([['sqlite'], ['postgres']] as const)('retention with artifacts on %s', (name) => {
  const ctx = useEngine(name);

  it('deletes old threads and compacts long ones; the artifacts collected after never leave a kept ref dangling; the dry run reports the same', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-retention-'));
    dirs.push(dir);
    const artifacts = fsArtifacts(dir, { fsync: false });
    const a = app(ctx.engine, artifacts);
    await a.run({ thread: 'old', tenant: 'gone' });
    await a.run({ thread: 'kept', tenant: 'acme' });
    for (let i = 0; i < 3; i++) await a.run({ thread: 'long', tenant: 'acme', ...(i ? { input: { n: 8 * i } } : {}) });
    await ctx.engine.store.put(['cache', 'pages'], 'p1', { big: 'x'.repeat(100) });
    await ctx.engine.store.put(['prefs'], 'u1', { theme: 'dark' });
    const longBefore = await a.getState({ thread: 'long' });
    const keptBefore = await a.getState({ thread: 'kept' });
    await tick();

    const options = retentionOn(ctx.engine, artifacts, { threads: [{ tenant: 'gone', olderThanMs: 1000 }], positions: [{ tenant: 'acme', keepLast: 12 }], store: [{ namespace: ['cache'], olderThanMs: 1000 }] });
    const progress: string[] = [];
    const dry = await applyRetention({ ...options, dryRun: true });
    const beforeIds = await artifactIds(artifacts);
    const real = await applyRetention({ ...options, onProgress: (p) => progress.push(p.phase) });
    expect(comparable(dry)).toEqual(comparable(real));
    expect(real.threads.deleted).toEqual(['old']);
    expect(real.threads.rows.positions).toBe(9);
    expect(real.positions.compacted.map((c) => c.thread)).toEqual(['long']);
    expect(real.positions.skipped).toEqual([{ thread: 'kept', reason: 'nothing-to-cut' }]);
    expect(real.store.items).toBe(1);
    expect(await ctx.engine.store.get(['cache', 'pages'], 'p1')).toBeNull();
    expect(await ctx.engine.store.get(['prefs'], 'u1')).not.toBeNull();
    expect(new Set(progress)).toEqual(new Set(['threads', 'positions', 'store', 'artifacts']));

    // What only the old thread and the compacted positions referred to is gone: the old
    // thread's 8 `latest` and 8 pages, and the compacted positions' replaced `latest` values.
    expect(real.artifacts!.count).toBeGreaterThan(16 + 5);
    const afterIds = await artifactIds(artifacts);
    expect(afterIds.size).toBe(beforeIds.size - real.artifacts!.count);
    const check = await verifyArtifacts({ artifacts, checkpointer: ctx.engine.checkpointer, store: ctx.engine.store });
    expect(check.dangling).toEqual([]);
    expect((await a.getState({ thread: 'long' })).shared).toEqual(keptBefore.shared);

    for (const thread of ['long', 'kept']) expect((await verifyThread(ctx.engine, thread)).problems).toEqual([]);
    const reader = app(ctx.reopen(), artifacts);
    expect(await reader.getState({ thread: 'long' })).toEqual(longBefore);
    expect(await reader.getState({ thread: 'kept' })).toEqual(keptBefore);

    // Applied again, nothing more goes.
    const again = await applyRetention(options);
    expect(again.threads.deleted).toEqual([]);
    expect(again.artifacts!.count).toBe(0);
  });

  it('compacts a long child run and old ledger rows: the artifacts only their cut positions and rows referred to go, kept refs never dangle, and the dry run reports the same', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-retention-'));
    dirs.push(dir);
    const artifacts = fsArtifacts(dir, { fsync: false });
    const Outer = defineState({ fields: { pages: field.model(z.array(Ref), { reduce: 'append', default: [] }) } });
    // The child replaces `latest` with a fresh artifact each step and records a fetched
    // one in the ledger (ctx.recordArtifact): 24 steps, snapshot every 5.
    const child = graph(State)
      .node('step', async (s, c) => ({
        n: s.n + 1,
        latest: await c.artifacts.put(`child latest ${c.threadId} ${s.n + 1}`, { mediaType: 'text/plain' }),
        pages: [await c.recordArtifact('fetch', async () => `fetched ${c.threadId} ${s.n + 1}`, { mediaType: 'text/plain' })],
      }))
      .edge(START, 'step')
      .conditionalEdge('step', (s) => (s.n >= 24 ? END : 'step'));
    const outer = graph(Outer)
      .subgraph('crawl', child, { output: (r) => ({ pages: r.latest ? [r.latest] : [] }) })
      .edge(START, 'crawl')
      .edge('crawl', END)
      .compile({ engine: ctx.engine, artifacts, snapshotEvery: 5, recursionLimit: 50 });
    await outer.run({ thread: 'crawler', tenant: 'acme' });
    const ns = (await ctx.engine.checkpointer.listNamespaces('crawler')).find((n) => n !== '')!;
    const childState = await outer.getState<StateOf<typeof State>>({ thread: 'crawler', ns });
    await tick();

    const options = retentionOn(ctx.engine, artifacts, { positions: [{ keepLast: 15 }], ledger: [{ tenant: 'acme', olderThanMs: 1000 }] });
    const dry = await applyRetention({ ...options, dryRun: true });
    const beforeIds = await artifactIds(artifacts);
    const real = await applyRetention(options);
    expect(comparable(dry)).toEqual(comparable(real));
    // Every row is old: the ledger rule cuts the child further than keepLast would.
    expect(real.ledger.compacted.map((c) => c.ns)).toEqual([ns]);
    expect(real.ledger.rows.ledgerEntries).toBe(real.ledger.compacted[0]!.base);
    expect(real.artifacts!.count).toBeGreaterThan(0);
    expect((await artifactIds(artifacts)).size).toBe(beforeIds.size - real.artifacts!.count);
    expect((await verifyArtifacts({ artifacts, checkpointer: ctx.engine.checkpointer, store: ctx.engine.store })).dangling).toEqual([]);
    expect((await verifyThread(ctx.engine, 'crawler')).problems).toEqual([]);
    expect(await outer.getState({ thread: 'crawler', ns })).toEqual(childState);
    // Every page the kept child state holds (the items inline in its base snapshot too) is still there.
    expect(childState.pages).toHaveLength(24);
    for (const page of childState.pages) expect(await artifacts.stat(page)).not.toBeNull();
  });

  it('a store row written again after the scan is kept: the delete is conditional on the version the scan saw, in every merge rule', async () => {
    const store = ctx.engine.store;
    store.declare(['cache', 'shared'], { merge: 'lastWins' });
    for (const ns of [['cache', 'a'], ['cache', 'shared']]) for (const key of ['first', 'second']) await store.put(ns, key, { old: true });
    await new Promise((resolve) => setTimeout(resolve, 30));
    // Another writer writes three of the four rows again right after retention's scan read them.
    let rewritten = false;
    const racing = new Proxy(store, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target) as unknown;
        if (prop !== 'search') return typeof value === 'function' ? value.bind(target) : value;
        return async (...args: Parameters<typeof store.search>) => {
          const page = await target.search(...args);
          if (!rewritten) {
            rewritten = true;
            await store.put(['cache', 'a'], 'second', { fresh: true });
            await store.put(['cache', 'shared'], 'first', { fresh: true });
            await store.put(['cache', 'shared'], 'second', { fresh: true });
          }
          return page;
        };
      },
    });
    const report = await applyRetention({ checkpointer: ctx.engine.checkpointer, store: racing, policy: { store: [{ namespace: ['cache'], olderThanMs: 20 }] } });
    expect(rewritten).toBe(true);
    expect(report.store.items).toBe(1);
    expect(await store.get(['cache', 'a'], 'first')).toBeNull();
    const left = await store.list(['cache']);
    expect(left.map((i) => [i.namespace.join('/'), i.key, i.value])).toEqual([
      ['cache/a', 'second', { fresh: true }],
      ['cache/shared', 'first', { fresh: true }],
      ['cache/shared', 'second', { fresh: true }],
    ]);
    // Nothing was overwritten in the lastWins namespace either: retention's deletes never settle as conflicts.
    expect(await store.listOverwrites(['cache'])).toEqual([]);
  });

  it('a dry run with a store rule reports the artifacts only the rows it removes refer to, as the real run then collects', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-retention-'));
    dirs.push(dir);
    const artifacts = fsArtifacts(dir, { fsync: false });
    const cached = await artifacts.put('cached page', { mediaType: 'text/plain' });
    const kept = await artifacts.put('preference', { mediaType: 'text/plain' });
    await ctx.engine.store.put(['cache', 'pages'], 'p1', { page: cached });
    await ctx.engine.store.put(['prefs'], 'u1', { avatar: kept });
    await tick();
    // Two rules whose prefixes overlap find the row twice: it goes, and counts, once.
    const options = retentionOn(ctx.engine, artifacts, { store: [{ namespace: ['cache'], olderThanMs: 1000 }, { namespace: ['cache', 'pages'], olderThanMs: 1000 }] });
    const dry = await applyRetention({ ...options, dryRun: true });
    const real = await applyRetention(options);
    expect(real.store.items).toBe(1);
    expect(real.artifacts!.gc.victims.map((v) => v.ref.id)).toEqual([cached.id]);
    expect(comparable(dry)).toEqual(comparable(real));
    expect(await artifacts.stat(kept)).not.toBeNull();
  });

  it('removes old store rows whatever value they hold (a BigInt, a Map, a Date), counting the codec text they held; the dry run reports the same', async () => {
    const store = ctx.engine.store;
    const values: [string, unknown][] = [
      ['bigint', { n: 10n }],
      ['map', new Map([['a', 1]])],
      ['set', new Set([1, 2])],
      ['date', new Date(0)],
      ['plain', { a: 1 }],
    ];
    for (const [key, value] of values) await store.put(['cache'], key, value);
    await store.put(['prefs'], 'kept', { n: 1n });
    const policy = { store: [{ namespace: ['cache'], olderThanMs: 0 }] };
    const options = { checkpointer: ctx.engine.checkpointer, store, policy, now: Date.now() + 60_000 };
    const dry = await applyRetention({ ...options, dryRun: true });
    const real = await applyRetention(options);
    const text = values.reduce((sum, [, value]) => sum + encode(value).length, 0);
    expect(dry.store).toEqual({ items: values.length, bytes: text });
    expect(real.store).toEqual(dry.store);
    expect(await store.list(['cache'])).toEqual([]);
    expect((await store.get(['prefs'], 'kept'))?.value).toEqual({ n: 1n });
  });

  it('skips a thread a run holds, and never cuts into an interrupted thread\'s suspended step', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-retention-'));
    dirs.push(dir);
    const artifacts = fsArtifacts(dir, { fsync: false });
    const paused = graph(State)
      .node('step', async (s, ctx) => {
        if (s.n === 30) await ctx.interrupt({ question: 'go on?' }, { answer: z.string() });
        return { n: s.n + 1 };
      })
      .edge(START, 'step')
      .conditionalEdge('step', (s) => (s.n >= 31 ? END : 'step'))
      .compile({ engine: ctx.engine, artifacts, snapshotEvery: 5, recursionLimit: 50 });
    await paused.run({ thread: 'asks' });
    expect((await paused.getThread({ thread: 'asks' }))!.status).toBe('interrupted');
    const head = (await paused.getThread({ thread: 'asks' }))!.head!;

    const held = await ctx.engine.checkpointer.acquireThread('asks', { owner: { runId: 'someone', pid: 1, host: 'elsewhere.invalid' }, leaseMs: 60_000 });
    const policy = { positions: [{ keepLast: 1 }] };
    const busy = await applyRetention({ checkpointer: ctx.engine.checkpointer, ledger: ctx.engine.ledger, policy });
    expect(busy.positions.skipped).toEqual([{ thread: 'asks', reason: 'busy' }]);
    await ctx.engine.checkpointer.releaseThread(held);

    const done = await applyRetention({ checkpointer: ctx.engine.checkpointer, ledger: ctx.engine.ledger, policy });
    expect(done.positions.compacted).toHaveLength(1);
    expect(done.positions.compacted[0]!.base).toBeLessThan(head);
    expect((await verifyThread(ctx.engine, 'asks')).problems).toEqual([]);
    // The answer resumes the suspended step as if nothing had been compacted.
    await paused.resume({ thread: 'asks', answer: 'yes' });
    expect((await paused.getState({ thread: 'asks' })).n).toBe(31);
    expect((await verifyThread(ctx.engine, 'asks')).problems).toEqual([]);
  });
});
