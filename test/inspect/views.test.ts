/**
 * The inspect functions behind the inspector's richer views, on memory, a SQLite file
 * and PostgreSQL (a fresh schema): the timeline as a tree (a fork's branch, a retried
 * step, a pending interrupt, child runs, paging), the graph the runtime stored and
 * where the run is in it, a position's recorded outputs and effects (an effect in
 * doubt), an artifact opened from a state (ok, corrupt, not referenced), and the
 * graph stored once per app instance and version.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fsArtifacts } from '../../src/artifacts/fs/index.js';
import type { ArtifactStore } from '../../src/contracts/artifact-store.js';
import type { Engine } from '../../src/contracts/engine.js';
import { memory } from '../../src/engines/memory/index.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { ArtifactIntegrityError, ArtifactNotFoundError, UnknownNodeError } from '../../src/errors.js';
import { describeGraph, graphNamespace, openThreadArtifact, positionLedger, threadGraph, threadTimeline } from '../../src/inspect/index.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import { usePostgresSchema } from '../helpers/postgres.js';
import { corruptFsBlob, PNG, writeViewThreads } from '../inspector/views-fixture.js';
import { z } from 'zod';
import { field } from '../../src/state/fields.js';
import { defineState } from '../../src/state/schema.js';

const pg = usePostgresSchema();

const engines: { name: string; open: (dir: string) => Promise<Engine> }[] = [
  { name: 'memory', open: async () => memory() },
  { name: 'sqlite', open: async (dir) => sqlite(join(dir, 'cairn.db')) },
  { name: 'postgres', open: () => pg.engine() },
];

async function bytes(stream: ReadableStream<Uint8Array>): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  for await (const c of stream as unknown as AsyncIterable<Uint8Array>) chunks.push(c);
  return Buffer.concat(chunks);
}

describe.each(engines)('inspector views on $name', ({ open }) => {
  let dir: string;
  let engine: Engine;
  let artifacts: ArtifactStore;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'cairn-views-'));
    engine = await open(dir);
    artifacts = fsArtifacts(join(dir, 'artifacts'));
    await writeViewThreads(engine, artifacts);
  }, 60_000);

  afterAll(async () => {
    await engine?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("tells a fork's branch, the retried step and its failure, the pending interrupt and the child runs", async () => {
    const page = await threadTimeline(engine.checkpointer, 'story');
    expect(page.status).toBe('interrupted');
    expect(page.positions.map((p) => p.seq)).toEqual([8, 7, 6, 5, 4, 3, 2, 1, 0]);
    expect(page.next).toBeNull();
    const at = (seq: number) => page.positions.find((p) => p.seq === seq)!;
    // Bob's fork (seq 5, from seq 1) starts a branch the head is on; the first branch is 0..4.
    expect(at(5)).toMatchObject({ kind: 'fork', parent: 1, branch: 5, actor: 'bob', retries: 0 });
    expect(page.positions.filter((p) => p.branch === 0).map((p) => p.seq)).toEqual([4, 3, 2, 1, 0]);
    expect(page.branches).toEqual([
      { start: 0, forkOf: null, parentBranch: null, depth: 0, onHeadPath: true },
      { start: 5, forkOf: 1, parentBranch: 0, depth: 1, onHeadPath: true },
    ]);
    // draft failed once from seq 1, and its retry committed seq 2.
    expect(at(1).failed).toEqual([expect.objectContaining({ node: 'draft', message: expect.stringContaining('model overloaded') })]);
    expect(at(2)).toMatchObject({ nodes: ['draft'], retries: 1 });
    expect(at(6)).toMatchObject({ nodes: ['draft'], retries: 0 });
    // Only the head's interrupt is pending; the first branch's was left behind by the fork.
    expect(page.positions.filter((p) => p.pending).map((p) => p.seq)).toEqual([8]);
    expect(at(4).interrupts).toHaveLength(1);
    expect(at(3).children).toEqual(['research:0@2']);
    expect(at(7).children).toEqual(['research:0@6']);

    const child = await threadTimeline(engine.checkpointer, 'story', { ns: 'research:0@2' });
    expect(child.positions.map((p) => [p.seq, p.nodes])).toEqual([
      [1, ['answer']],
      [0, []],
    ]);
  });

  it('pages: a small page has a next seq, and the older page has the branches its positions are on', async () => {
    const first = await threadTimeline(engine.checkpointer, 'story', { limit: 3 });
    expect(first.positions.map((p) => p.seq)).toEqual([8, 7, 6]);
    expect(first.next).toBe(6);
    // The page's branch and the one it forks from, nothing more.
    expect(first.branches.map((b) => b.start)).toEqual([0, 5]);
    const second = await threadTimeline(engine.checkpointer, 'story', { limit: 3, beforeSeq: first.next! });
    expect(second.positions.map((p) => p.seq)).toEqual([5, 4, 3]);
  });

  it('returns the graph the runtime stored, with the interrupted node, and the node that needs attention', async () => {
    const story = await threadGraph(engine, 'story');
    expect(story.name).toBe('story');
    expect(story.versions).toBe(1);
    expect(story.description!.nodes.map((n) => [n.name, n.kind])).toEqual([
      ['gather', 'node'],
      ['draft', 'node'],
      ['research', 'subgraph'],
      ['review', 'node'],
    ]);
    expect(story.description!.nodes[2]!.child!.nodes.map((n) => n.name)).toEqual(['answer']);
    expect(story.description!.edges).toContainEqual({ from: 'review', to: 'draft', conditional: true });
    expect(story.description!.edges).toContainEqual({ from: 'review', to: END, conditional: true });
    expect(story.current).toEqual([{ ns: '', path: [], node: 'review', state: 'interrupted' }]);

    const charge = await threadGraph(engine, 'charge');
    expect(charge.current).toEqual([{ ns: '', path: [], node: 'charge', state: 'needs_attention' }]);
    expect(charge.description!.nodes.map((n) => n.name)).toEqual(['charge']);
  });

  it("reads a position's recorded outputs and effects, and the head's effect in doubt", async () => {
    const gather = await positionLedger(engine, 'story', { seq: 1 });
    expect(gather.records.map((r) => [r.name, r.outcome])).toEqual([['model', 'notes on cairns: cairns mark trails']]);
    // What the record was, as the runtime kept it: shown by the page, passed through as is.
    expect(gather.records[0]!.meta).toMatchObject({ kind: 'model', model: 'mock-writer', usage: { inputTokens: 12, outputTokens: 7 } });
    expect(gather.effects.map((e) => [e.name, e.status, e.recovery])).toEqual([
      ['put_notes', 'done', 'done'],
      ['put_chart', 'done', 'done'],
    ]);
    expect(gather.effects[0]!.outcome).toMatchObject({ id: 'key:notes-cairns.txt', media_type: 'text/plain' });
    expect(gather.effects[0]!.argsDigest).toMatch(/^[0-9a-f]{64}$/);
    expect(gather.inProgress).toEqual([]);

    const charge = await positionLedger(engine, 'charge', { seq: 0 });
    expect(charge.effects).toEqual([]);
    expect(charge.inProgress).toEqual([expect.objectContaining({ name: 'charge_card', status: 'intent', recovery: 'in_doubt', needsAttention: true })]);
  });

  it('opens an artifact the state refers to, verified; tells a corrupt one and one the state does not hold', async () => {
    const doc = await openThreadArtifact({ checkpointer: engine.checkpointer, artifacts }, 'story', { seq: 1, id: 'key:notes-cairns.txt' });
    expect(doc.ref.media_type).toBe('text/plain');
    expect((await bytes(doc.stream)).toString()).toBe('notes on cairns: cairns mark trails');
    const chart = await openThreadArtifact({ checkpointer: engine.checkpointer, artifacts }, 'story', { id: 'key:chart-cairns.png' });
    expect((await bytes(chart.stream)).equals(PNG)).toBe(true);

    await expect(openThreadArtifact({ checkpointer: engine.checkpointer, artifacts }, 'story', { seq: 0, id: 'key:notes-cairns.txt' })).rejects.toSatisfy((e) => ArtifactNotFoundError.is(e));
    corruptFsBlob(join(dir, 'artifacts'), chart.ref.sha256);
    await expect(openThreadArtifact({ checkpointer: engine.checkpointer, artifacts }, 'story', { id: 'key:chart-cairns.png' })).rejects.toSatisfy((e) => ArtifactIntegrityError.is(e));
  });
});

describe('the graph description the runtime stores', () => {
  it('is written once per app instance and graph version, not per step; a changed graph is a second version', async () => {
    const engine = memory();
    const S = defineState({ fields: { n: field.model(z.number(), { default: 0 }) } });
    let puts = 0;
    const put = engine.store.put.bind(engine.store);
    engine.store.put = ((...args: Parameters<typeof put>) => {
      if (args[0][0] === 'cairn' && args[0][1] === 'graphs') puts++;
      return put(...args);
    }) as typeof put;
    const build = (extra: boolean) => {
      const g = graph(S).node('a', (s) => ({ n: s.n + 1 })).node('b', (s) => ({ n: s.n + 1 }));
      if (extra) g.node('c', (s) => ({ n: s.n + 1 })).edge('b', 'c').edge('c', END);
      else g.edge('b', END);
      return g.edge(START, 'a').edge('a', 'b').compile({ engine, name: 'counter' });
    };
    const app = build(false);
    for (let i = 0; i < 5; i++) await app.run({ thread: `t${i}`, input: { n: i } });
    expect(puts).toBe(1);
    // Another instance of the same graph asks once more and changes nothing.
    await build(false).run({ thread: 'again' });
    expect(puts).toBe(2);
    expect(await engine.store.list(graphNamespace('counter'))).toHaveLength(1);
    expect((await engine.store.list(graphNamespace('counter')))[0]!.version).toBe(1);
    await build(true).run({ thread: 'v2' });
    const versions = await engine.store.list(graphNamespace('counter'));
    expect(versions).toHaveLength(2);
    // Each thread gets the version that has the nodes its run is at (here: the newest, for completed threads).
    expect((await threadGraph(engine, 'v2')).description!.nodes.map((n) => n.name)).toEqual(['a', 'b', 'c']);
    await engine.close();
  });

  it('tells where the run is: a node waiting, and an interrupt inside a child run at both levels', async () => {
    const engine = memory();
    const S = defineState({ fields: { n: field.model(z.number(), { default: 0 }) } });
    await graph(S)
      .node('nap', async (_s, ctx) => {
        await ctx.sleep(60_000);
      })
      .edge(START, 'nap')
      .edge('nap', END)
      .compile({ engine, name: 'napper' })
      .run({ thread: 'w', input: {} });
    expect((await threadGraph(engine, 'w')).current).toEqual([{ ns: '', path: [], node: 'nap', state: 'waiting' }]);

    const inner = graph(S)
      .node('ask', async (_s, ctx) => {
        await ctx.interrupt({ q: 'ok?' });
      })
      .edge(START, 'ask')
      .edge('ask', END);
    await graph(S).subgraph('research', inner).edge(START, 'research').edge('research', END).compile({ engine, name: 'outer' }).run({ thread: 'c', input: {} });
    const { current } = await threadGraph(engine, 'c');
    expect(current).toEqual([
      { ns: '', path: [], node: 'research', state: 'interrupted' },
      { ns: expect.stringMatching(/^research:0@\d+$/), path: ['research'], node: 'ask', state: 'interrupted' },
    ]);
    await engine.close();
  });

  it('tells how recovery settled effects found in doubt: probe found, probe absent and ran again, no probe and ran again', async () => {
    const engine = memory();
    const S = defineState({ fields: { n: field.model(z.number(), { default: 0 }) } });
    const landed = new Map<string, string>();
    const failOnce = new Set(['found', 'again', 'blind']);
    const effect = (name: string, withProbe: boolean, landsBeforeFailing: boolean) => ({
      run: (key: string) => {
        if (failOnce.delete(name)) {
          if (landsBeforeFailing) landed.set(key, `${name} done`);
          throw new Error(`${name}: connection reset`);
        }
        landed.set(key, `${name} done`);
        return `${name} done`;
      },
      ...(withProbe ? { probe: (key: string) => landed.get(key) ?? null } : {}),
    });
    const retry = { retry: { maxAttempts: 2, initialDelayMs: 1 } };
    await graph(S)
      .node('a', async (_s, ctx) => void (await ctx.effect('found', effect('found', true, true))), retry)
      .node('b', async (_s, ctx) => void (await ctx.effect('again', effect('again', true, false))), retry)
      .node('c', async (_s, ctx) => void (await ctx.effect('blind', effect('blind', false, false))), retry)
      .node('d', async (_s, ctx) => void (await ctx.effect('plain', effect('plain', false, false))), retry)
      .edge(START, 'a')
      .edge('a', 'b')
      .edge('b', 'c')
      .edge('c', 'd')
      .edge('d', END)
      .compile({ engine })
      .run({ thread: 'pay', input: {} });
    const decided = [];
    for (const seq of [1, 2, 3, 4]) for (const e of (await positionLedger(engine, 'pay', { seq })).effects) decided.push([e.name, e.recovery]);
    expect(decided).toEqual([
      ['found', 'probe_found'],
      ['again', 'probe_absent_reran'],
      ['blind', 'reran'],
      ['plain', 'done'],
    ]);
    await engine.close();
  });

  it('marks the node that failed a failed thread', async () => {
    const engine = memory();
    const S = defineState({ fields: { n: field.model(z.number(), { default: 0 }) } });
    const app = graph(S)
      .node('ok', () => undefined)
      .node('boom', () => {
        throw new Error('disk full');
      }, { retry: { maxAttempts: 1 } })
      .edge(START, 'ok')
      .edge('ok', 'boom')
      .edge('boom', END)
      .compile({ engine, name: 'fails' });
    await expect(app.run({ thread: 'f', input: {} })).rejects.toThrow('disk full');
    expect((await threadGraph(engine, 'f')).current).toEqual([{ ns: '', path: [], node: 'boom', state: 'failed' }]);
    const page = await threadTimeline(engine.checkpointer, 'f');
    expect(page.positions[0]!.failed).toEqual([expect.objectContaining({ node: 'boom', message: expect.stringContaining('disk full') })]);
    await engine.close();
  });

  it('tells graphs that share a name apart by the nodes each thread used', async () => {
    const engine = memory();
    const S = defineState({ fields: { n: field.model(z.number(), { default: 0 }) } });
    const one = graph(S).node('plan', () => undefined).edge(START, 'plan').edge('plan', END).compile({ engine });
    const two = graph(S).node('approve', () => undefined).edge(START, 'approve').edge('approve', END).compile({ engine });
    await one.run({ thread: 'p', input: {} });
    await two.run({ thread: 'a', input: {} });
    expect((await engine.store.list(graphNamespace('default'))).length).toBe(2);
    expect((await threadGraph(engine, 'p')).description!.nodes.map((n) => n.name)).toEqual(['plan']);
    expect((await threadGraph(engine, 'a')).description!.nodes.map((n) => n.name)).toEqual(['approve']);
    await engine.close();
  });

  it("describes a conditional edge by its declared targets, or as an unknown target; rejects a declared target that is not a node", () => {
    const S = defineState({ fields: { n: field.model(z.number(), { default: 0 }) } });
    const spec = graph(S)
      .node('a', () => undefined)
      .node('b', () => undefined)
      .edge(START, 'a')
      .conditionalEdge('a', (s) => (s.n > 0 ? 'b' : END), { targets: ['b', END] })
      .conditionalEdge('b', () => END)
      .check();
    expect(describeGraph(spec, 'g').edges).toEqual([
      { from: START, to: 'a' },
      { from: 'a', to: 'b', conditional: true },
      { from: 'a', to: END, conditional: true },
      { from: 'b', to: null, conditional: true },
    ]);
    expect(() =>
      graph(S)
        .node('a', () => undefined)
        .edge(START, 'a')
        .conditionalEdge('a', () => END, { targets: ['nope' as 'a'] })
        .check(),
    ).toThrow(UnknownNodeError);
  });

  it('does not stop a run when the store refuses the description', async () => {
    const engine = memory();
    engine.store.put = (async () => {
      throw new Error('store is down');
    }) as typeof engine.store.put;
    const S = defineState({ fields: { n: field.model(z.number(), { default: 0 }) } });
    const result = await graph(S).node('a', (s) => ({ n: s.n + 1 })).edge(START, 'a').edge('a', END).compile({ engine }).run({ thread: 't', input: { n: 1 } });
    expect(result.status).toBe('completed');
    await engine.close();
  });
});
