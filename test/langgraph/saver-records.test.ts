/**
 * What CairnSaver stores per checkpoint, and when: a task's writes land in the next
 * checkpoint's transaction when its put follows at once, and on their own otherwise
 * (durable before putWrites resolves either way); the record leaves out what the
 * position holds already (its time, its parent's id) and keeps the folded writes by
 * task, its versions, versions seen and metadata as their difference from what its
 * parent and its position say (in full at a namespace's first position and at each
 * snapshot); records in the earlier forms (ts, metadata text, parentId, parentWrites,
 * versions in full) are still read, and extended; a list a reducer changed in place
 * is stored as it is.
 */
import { join } from 'node:path';
import { emptyCheckpoint, uuid5, type Checkpoint } from '@langchain/langgraph-checkpoint';
import { describe, expect, it } from 'vitest';
import { GENESIS_HASH } from '../../src/codec/hash.js';
import { decode, encode } from '../../src/codec/tagged-json.js';
import { memory } from '../../src/engines/memory/index.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { CairnSaver } from '../../src/langgraph/index.js';
import { hashPosition } from '../../src/runtime/position.js';
import { compactNamespace, planCompaction } from '../../src/inspect/compact.js';
import type { StoredPosition } from '../../src/contracts/checkpointer.js';
import { derivedTaskId, type SaverBody } from '../../src/langgraph/saver-body.js';
import type { CheckpointMetadata } from '@langchain/langgraph-checkpoint';
import { tempDir } from '../helpers/temp-dirs.js';

const owner = { runId: 'writer', pid: process.pid, host: 'here' };
const loop = (step: number) => ({ source: 'loop' as const, step, parents: {} });
const config = (id?: string) => ({ configurable: { thread_id: 't', checkpoint_ns: '', ...(id ? { checkpoint_id: id } : {}) } });

function checkpoint(id: string, values: Record<string, unknown>, versions: Record<string, number>): Checkpoint {
  return { ...emptyCheckpoint(), id, ts: new Date(Date.UTC(2026, 0, 1, 0, 0, Number(id.slice(-2)))).toISOString(), channel_values: values, channel_versions: versions };
}

const ID = (n: number) => `1f000000-0000-6000-8000-0000000000${String(n).padStart(2, '0')}`;

describe('CairnSaver records', () => {
  it("folds a task's writes into the next checkpoint's transaction when its put follows at once", async () => {
    const engine = memory();
    const saver = new CairnSaver({ engine });
    await saver.put(config(), checkpoint(ID(1), { log: ['a'] }, { log: 1 }), loop(0), { log: 1 });
    // LangGraph hands the writes over and puts the next checkpoint without waiting between them.
    const written = saver.putWrites(config(ID(1)), [['log', ['b']], ['route', 'next']], 'task-1', 'path-1');
    const put = saver.put(config(ID(1)), checkpoint(ID(2), { log: ['a', 'b'] }, { log: 2 }), loop(1), { log: 2 });
    await Promise.all([written, put]);
    // No pending row was written and deleted: the writes are in the child's body, once.
    expect(await engine.checkpointer.getPendingWrites('t', '', 0)).toEqual([]);
    const child = (await engine.checkpointer.getPosition('t', '', 1))!;
    const record = decode<SaverBody>(child.body).langgraph;
    expect(record.parentTasks).toEqual([{ task: 'task-1', path: 'path-1', writes: [{ channel: 'log', ref: [0, 1] }, { channel: 'route', value: 'next' }] }]);
    const tuple = await new CairnSaver({ engine }).getTuple(config(ID(1)));
    expect(tuple?.pendingWrites).toEqual([
      ['task-1', 'log', ['b']],
      ['task-1', 'route', 'next'],
    ]);
    await engine.close();
  });

  it('stores writes whose put does not follow on their own, durable once putWrites resolves', async () => {
    const file = join(tempDir('cairn-saver-records-'), 'cairn.db');
    const engine = sqlite(file);
    const saver = new CairnSaver({ engine });
    await saver.put(config(), checkpoint(ID(1), { log: ['a'] }, { log: 1 }), loop(0), { log: 1 });
    await saver.putWrites(config(ID(1)), [['log', ['b']]], 'task-1');
    // Another connection (a process started after a crash) sees them at once.
    const other = sqlite(file);
    expect(await other.checkpointer.getPendingWrites('t', '', 0)).toHaveLength(1);
    expect((await new CairnSaver({ engine: other }).getTuple(config(ID(1))))?.pendingWrites).toEqual([['task-1', 'log', ['b']]]);
    await saver.release();
    await other.close();
    await engine.close();
  });

  it('keeps writes handed over before their checkpoint is put until it lands, then stores them at it', async () => {
    const engine = memory();
    const saver = new CairnSaver({ engine });
    await saver.put(config(), checkpoint(ID(1), { log: ['a'] }, { log: 1 }), loop(0), { log: 1 });
    const early = saver.putWrites(config(ID(2)), [['route', 'later']], 'task-2');
    await new Promise((resolve) => setTimeout(resolve, 20));
    await saver.put(config(ID(1)), checkpoint(ID(2), { log: ['a', 'b'] }, { log: 2 }), loop(1), { log: 2 });
    await early;
    expect(await engine.checkpointer.getPendingWrites('t', '', 1)).toHaveLength(1);
    expect((await new CairnSaver({ engine }).getTuple(config(ID(2))))?.pendingWrites).toEqual([['task-2', 'route', 'later']]);
    await engine.close();
  });

  it("leaves out the checkpoint's ts and its parent's id, which the position holds, and gives them back", async () => {
    const engine = memory();
    const saver = new CairnSaver({ engine });
    const first = checkpoint(ID(1), { log: ['a'] }, { log: 1 });
    const second = checkpoint(ID(2), { log: ['a', 'b'] }, { log: 2 });
    await saver.put(config(), first, loop(0), { log: 1 });
    await saver.put(config(ID(1)), second, loop(1), { log: 2 });
    const record = decode<SaverBody>((await engine.checkpointer.getPosition('t', '', 1))!.body).langgraph;
    expect(record.ts).toBeUndefined();
    expect(record.parentId).toBeUndefined();
    // The metadata is what the position says (its step, a loop step, no parents): nothing of it is kept.
    expect([record.meta, record.metadata, record.m]).toEqual([undefined, undefined, undefined]);
    // A ts that is not the position's time, and a parent that was not found, are kept.
    const odd = { ...checkpoint(ID(3), { log: ['a', 'b', 'c'] }, { log: 3 }), ts: 'yesterday' };
    await saver.put(config(ID(2)), odd, loop(2), { log: 3 });
    expect(decode<SaverBody>((await engine.checkpointer.getPosition('t', '', 2))!.body).langgraph.ts).toBe('yesterday');

    const reader = new CairnSaver({ engine });
    const tuple = await reader.getTuple(config(ID(2)));
    expect(tuple?.checkpoint.ts).toBe(second.ts);
    expect(tuple?.parentConfig?.configurable?.checkpoint_id).toBe(ID(1));
    expect(tuple?.metadata).toEqual(loop(1));
    const listed = [];
    for await (const t of reader.list(config())) listed.push([t.checkpoint.id, t.checkpoint.ts, t.parentConfig?.configurable?.checkpoint_id]);
    expect(listed).toEqual([
      [ID(3), 'yesterday', ID(2)],
      [ID(2), second.ts, ID(1)],
      [ID(1), first.ts, undefined],
    ]);
    await engine.close();
  });

  it('reads records in the earlier form: ts, metadata as text, parentId and parentWrites', async () => {
    const engine = memory();
    const cp = engine.checkpointer;
    const lease = await cp.acquireThread('t', { owner, leaseMs: 10_000, create: { kind: 'conversation', tenant: null, metadata: { langgraph: true } } });
    const base = { kind: 'step', nodes: [], attempt: 1, lease: lease.epoch, next: [] };
    const bodies = [
      { ...base, changes: { route: { set: 'start' } }, langgraph: { id: ID(1), ts: 'then', v: 4, versions: { route: 1 }, seen: {}, metadata: encode(loop(0)) } },
      {
        ...base,
        changes: { route: { set: 'next' } },
        langgraph: {
          id: ID(2),
          ts: 'later',
          v: 4,
          versions: { route: 2 },
          seen: { node: { route: 1 } },
          metadata: encode(loop(1)),
          parentId: ID(1),
          parentWrites: [{ task: 'task-1', path: '', idx: 0, channel: 'route', value: encode('next') }],
        },
      },
    ];
    let parentHash = GENESIS_HASH;
    for (const [seq, body] of bodies.entries()) {
      const unsigned = { ns: '', seq, parent: seq === 0 ? null : seq - 1, segment: 0, step: seq + 1, schemaVersion: 1, createdAt: 1_700_000_000_000 + seq, body: encode(body) };
      const position: StoredPosition = { ...unsigned, hash: hashPosition(unsigned, [], parentHash) };
      await cp.commitStep(lease, { position, items: [], status: 'completed', expectedHead: seq === 0 ? null : seq - 1 });
      parentHash = position.hash;
    }
    await cp.releaseThread(lease);

    const saver = new CairnSaver({ engine });
    const parent = await saver.getTuple(config(ID(1)));
    expect(parent?.checkpoint.ts).toBe('then');
    expect(parent?.metadata).toEqual(loop(0));
    expect(parent?.pendingWrites).toEqual([['task-1', 'route', 'next']]);
    const child = await saver.getTuple(config());
    expect(child?.checkpoint.ts).toBe('later');
    expect(child?.checkpoint.channel_values).toEqual({ route: 'next' });
    expect(child?.parentConfig?.configurable?.checkpoint_id).toBe(ID(1));
    expect(child?.checkpoint.versions_seen).toEqual({ node: { route: 1 } });
    const listed = [];
    for await (const t of saver.list(config())) listed.push([t.checkpoint.id, t.pendingWrites?.length]);
    expect(listed).toEqual([
      [ID(2), 0],
      [ID(1), 1],
    ]);

    // A checkpoint put on top of them keeps its versions as their difference from the old record's.
    const next = { ...checkpoint(ID(3), { route: 'third' }, { route: 3 }), versions_seen: { node: { route: 2 } } };
    await saver.put(config(ID(2)), next, loop(2), { route: 3 });
    const record = decode<SaverBody>((await cp.getPosition('t', '', 2))!.body).langgraph;
    expect([record.versions, record.seen, record.dv]).toEqual([undefined, undefined, undefined]);
    const reread = await new CairnSaver({ engine }).getTuple(config());
    expect(reread?.checkpoint.channel_versions).toEqual({ route: 3 });
    expect(reread?.checkpoint.versions_seen).toEqual({ node: { route: 2 } });
    expect(reread?.metadata).toEqual(loop(2));
    await engine.close();
  });

  it("keeps versions, versions seen and metadata as their difference from what the parent and the position say, whole at snapshots, and reads back what was put", async () => {
    const engine = memory();
    const saver = new CairnSaver({ engine, snapshotEvery: 3 });
    // Steps as LangGraph takes them (changed channels take the next version after the
    // highest), and steps that do not: a version set apart, a string version, a channel
    // and a node's entry that go, metadata with keys of its own or another source.
    type Step = { versions: Record<string, string | number>; seen: Record<string, Record<string, string | number>>; metadata: CheckpointMetadata; changed: string[] };
    const steps: Step[] = [
      { versions: { __start__: 1 }, seen: { __input__: {} }, metadata: { source: 'input', step: -1, parents: {} }, changed: ['__start__'] },
      { versions: { __start__: 2, log: 2, route: 2 }, seen: { __input__: {}, __start__: { __start__: 1 } }, metadata: loop(0), changed: ['__start__', 'log', 'route'] },
      { versions: { __start__: 2, log: 3, route: 3 }, seen: { __input__: {}, __start__: { __start__: 1 }, node: { route: 2 } }, metadata: loop(1), changed: ['log', 'route'] },
      { versions: { __start__: 2, log: 4, route: 7 }, seen: { __input__: {}, __start__: { __start__: 1 }, node: { route: 3 } }, metadata: { ...loop(2), writes: { node: 1 } } as CheckpointMetadata, changed: ['log', 'route'] },
      { versions: { __start__: 2, log: 8, route: 8 }, seen: { __input__: {}, node: { route: 7 } }, metadata: { source: 'update', step: 3, parents: {} }, changed: ['log', 'route'] },
      { versions: { log: 9, route: 9 }, seen: { __input__: {}, node: { route: 8, log: 8 } }, metadata: { source: 'loop', step: 9, parents: { '': 'x' } }, changed: ['log', 'route'] },
      { versions: { log: '00010.a', route: 9 }, seen: { __input__: {}, node: { route: 9 } }, metadata: loop(5), changed: ['log'] },
      { versions: { log: '00011.b', route: '00011.b' }, seen: { __input__: {}, node: { route: '00010.a' } }, metadata: loop(6), changed: ['log', 'route'] },
      { versions: { log: '00011.b', route: '00011.b', extra: 1 }, seen: { __input__: {}, node: { route: '00011.b' } }, metadata: { source: 'fork', step: 7, parents: {} }, changed: [] },
    ];
    const ids: string[] = [];
    for (const [i, step] of steps.entries()) {
      const log = Array.from({ length: i + 1 }, (_, k) => `entry ${k}`);
      const put = { ...checkpoint(ID(i + 1), { log, route: `r${i}` }, {}), channel_versions: step.versions, versions_seen: step.seen };
      const newVersions = Object.fromEntries(step.changed.map((name) => [name, step.versions[name]!]));
      await saver.put(config(ids[i - 1]), put, step.metadata, newVersions);
      ids.push(ID(i + 1));
    }
    const records = await Promise.all(steps.map(async (_, seq) => decode<SaverBody>((await engine.checkpointer.getPosition('t', '', seq))!.body).langgraph));
    // In full at the first position and where a snapshot was taken (every third); a difference elsewhere.
    expect(records.map((r) => r.versions !== undefined)).toEqual([true, false, true, false, false, true, false, false, true]);
    expect(records[1]).not.toHaveProperty('dv');
    expect(records[3]!.dv).toEqual({ route: 7 });
    expect(records[4]!.seen).toBeDefined();
    expect(records[3]!.ds).toEqual({ node: { route: 3 } });
    expect(records[2]).not.toHaveProperty('m');
    expect(records[3]!.m).toEqual({ writes: { node: 1 } });

    for (const reader of [new CairnSaver({ engine }), saver]) {
      for (const [i, step] of steps.entries()) {
        const tuple = await reader.getTuple(config(ids[i]));
        expect([tuple?.checkpoint.channel_versions, tuple?.checkpoint.versions_seen, tuple?.metadata]).toEqual([step.versions, step.seen, step.metadata]);
      }
      const listed = [];
      for await (const t of reader.list(config())) listed.push([t.checkpoint.channel_versions, t.checkpoint.versions_seen, t.metadata]);
      expect(listed).toEqual(steps.map((step) => [step.versions, step.seen, step.metadata]).reverse());
      const filtered = [];
      for await (const t of reader.list(config(), { filter: { source: 'loop', step: 5 } })) filtered.push(t.checkpoint.id);
      expect(filtered).toEqual([ID(7)]);
    }
    // A branch from an old checkpoint keeps its difference from that checkpoint's.
    const fork = { ...checkpoint(ID(20), { log: ['entry 0', 'entry 1', 'other'], route: 'fork' }, {}), channel_versions: { __start__: 2, log: 4, route: 4 }, versions_seen: { __input__: {}, __start__: { __start__: 1 }, node: { route: 3 } } };
    await new CairnSaver({ engine }).put(config(ID(3)), fork, loop(2), { log: 4, route: 4 });
    const forked = decode<SaverBody>((await engine.checkpointer.getPosition('t', '', steps.length))!.body).langgraph;
    expect([forked.versions, forked.dv]).toEqual([undefined, undefined]);
    const branch = await new CairnSaver({ engine }).getTuple(config(ID(20)));
    expect([branch?.checkpoint.channel_versions, branch?.checkpoint.versions_seen, branch?.parentConfig?.configurable?.checkpoint_id]).toEqual([fork.channel_versions, fork.versions_seen, ID(3)]);
    await engine.close();
  });

  it('says "the same node ran again on the same trigger" with dl, and reads the versions seen back', async () => {
    const engine = memory();
    const saver = new CairnSaver({ engine });
    const put: Checkpoint[] = [];
    for (let i = 0; i < 6; i++) {
      // As LangGraph's loop: the node saw the parent's version of its trigger; at step 4 it also saw another channel.
      const seen: Record<string, Record<string, number>> = i === 0 ? {} : { node: { route: i, ...(i >= 4 ? { other: 1 } : {}) } };
      const c = { ...checkpoint(ID(i + 1), { route: `r${i}` }, { route: i + 1, other: 1 }), versions_seen: seen };
      await saver.put(config(put[i - 1]?.id), c, loop(i), i === 0 ? { route: 1, other: 1 } : { route: i + 1 });
      put.push(c);
    }
    const records = await Promise.all(put.map(async (_, seq) => decode<SaverBody>((await engine.checkpointer.getPosition('t', '', seq))!.body).langgraph));
    expect(records.map((r) => (r.seen ? 'whole' : r.dl ? 'dl' : r.ds ? 'ds' : '-'))).toEqual(['whole', 'ds', 'dl', 'dl', 'ds', 'ds']);
    expect(records[5]!.ds).toEqual({ node: { route: 5 } });
    for (const reader of [new CairnSaver({ engine }), saver]) {
      for (const c of put) expect((await reader.getTuple(config(c.id)))?.checkpoint.versions_seen).toEqual(c.versions_seen);
      const listed = [];
      for await (const t of reader.list(config())) listed.push(t.checkpoint.versions_seen);
      expect(listed).toEqual(put.map((c) => c.versions_seen).reverse());
    }
    await engine.close();
  });

  it("keeps writes folded as the parent's were (same task path, channels and values) as their task ids, whole at snapshots", async () => {
    const engine = memory();
    const saver = new CairnSaver({ engine, snapshotEvery: 4 });
    const ids = Array.from({ length: 7 }, (_, i) => ID(i + 1));
    const expected: unknown[][] = [];
    for (let i = 0; i < ids.length; i++) {
      const log = Array.from({ length: i + 1 }, (_, k) => `entry ${k}`);
      if (i > 0) {
        // The same node writes one new entry and the same route, from step 5 on another one.
        const route = i >= 5 ? 'elsewhere' : 'next';
        const writes = saver.putWrites(config(ids[i - 1]), [['log', [log[i]]], ['route', route]], `task-${i}`, 'path-x');
        expected.push([[`task-${i}`, 'log', [log[i]]], [`task-${i}`, 'route', route]]);
        await Promise.all([writes, saver.put(config(ids[i - 1]), checkpoint(ids[i]!, { log, route }, { log: i + 1, route: i + 1 }), loop(i), { log: i + 1, route: i + 1 })]);
      } else await saver.put(config(), checkpoint(ids[i]!, { log, route: 'start' }, { log: 1, route: 1 }), loop(0), { log: 1, route: 1 });
    }
    const records = await Promise.all(ids.map(async (_, seq) => decode<SaverBody>((await engine.checkpointer.getPosition('t', '', seq))!.body).langgraph));
    // seq 1: the first folded writes; 2: the same shape; 3: a snapshot (whole); 4: as 3's; 5: another value; 6: as 5's.
    expect(records.map((r) => (r.tl ? 'tl' : r.parentTasks ? 'whole' : '-'))).toEqual(['-', 'whole', 'tl', 'whole', 'tl', 'whole', 'tl']);
    expect(records[2]!.tl).toEqual(['task-2']);
    for (const reader of [new CairnSaver({ engine }), saver]) {
      for (let i = 0; i < ids.length - 1; i++) expect((await reader.getTuple(config(ids[i])))?.pendingWrites).toEqual(expected[i]);
      const listed = [];
      for await (const t of reader.list(config())) listed.push(t.pendingWrites);
      expect(listed).toEqual([[], ...expected.slice().reverse()]);
    }
    await engine.close();
  });

  it("keeps 0 for a task id that is LangGraph's own derivation (a pull task from its checkpoint's id), and gives the id back", async () => {
    const engine = memory();
    const saver = new CairnSaver({ engine });
    const ids = Array.from({ length: 5 }, (_, i) => `1f1ee1f4-a767-64b1-83e5-3fb739c1c7${String(i).padStart(2, '0')}`);
    const taskIds: string[] = [];
    for (let i = 0; i < ids.length; i++) {
      const seen: Record<string, Record<string, number>> = i === 0 ? {} : { node: { route: i } };
      const c = { ...checkpoint(ids[i]!, { route: `r${i}` }, { route: i + 1 }), versions_seen: seen };
      if (i === 0) {
        await saver.put(config(), c, loop(0), { route: 1 });
        continue;
      }
      // What LangGraph's algo gives the node's pull task prepared from the parent at step i (at step 3, an id of another making).
      const task = i === 3 ? 'not-derived' : uuid5(JSON.stringify(['node', String(i), 'node', '__pregel_pull', ['route']]), ids[i - 1]!);
      taskIds.push(task);
      const writes = saver.putWrites(config(ids[i - 1]), [['route', 'next']], task, '~__pregel_pull, node');
      await Promise.all([writes, saver.put(config(ids[i - 1]), c, loop(i), { route: i + 1 })]);
    }
    const records = await Promise.all(ids.map(async (_, seq) => decode<SaverBody>((await engine.checkpointer.getPosition('t', '', seq))!.body).langgraph));
    expect(records.map((r) => r.tl ?? r.parentTasks?.map((t) => t.task))).toEqual([undefined, [taskIds[0]], [0], ['not-derived'], [0]]);
    expect(derivedTaskId('~__pregel_pull, node', { ns: 'sub:1', step: 7, parentId: ids[0]!, seenChanged: { node: ['route'] } })).toBe(uuid5(JSON.stringify(['sub:1|node', '7', 'node', '__pregel_pull', ['route']]), ids[0]!));
    for (const reader of [new CairnSaver({ engine }), saver]) {
      for (let i = 0; i < ids.length - 1; i++) expect((await reader.getTuple(config(ids[i])))?.pendingWrites).toEqual([[taskIds[i], 'route', 'next']]);
      const listed = [];
      for await (const t of reader.list(config())) listed.push(t.pendingWrites?.[0]?.[0]);
      expect(listed).toEqual([undefined, ...taskIds.slice().reverse()]);
    }
    await engine.close();
  });

  it('reads every checkpoint a compaction keeps: its base holds its versions in full', async () => {
    const engine = memory();
    const saver = new CairnSaver({ engine, snapshotEvery: 3 });
    const put: Checkpoint[] = [];
    for (let i = 0; i < 10; i++) {
      const c = { ...checkpoint(ID(i + 1), { log: Array.from({ length: i + 1 }, (_, k) => k) }, { log: i + 1 }), versions_seen: { node: { log: i } } };
      await saver.put(config(put[i - 1]?.id), c, loop(i), { log: i + 1 });
      put.push(c);
    }
    await saver.release();
    const plan = await planCompaction(engine.checkpointer, undefined, 't', '', 7);
    if (!('base' in plan)) throw new Error(`no compaction: ${plan.skipped}`);
    expect(plan.base.seq).toBe(5);
    const lease = await engine.checkpointer.acquireThread('t', { owner, leaseMs: 10_000 });
    await compactNamespace(engine.checkpointer, lease, plan);
    await engine.checkpointer.releaseThread(lease);
    const reader = new CairnSaver({ engine });
    const listed = [];
    for await (const t of reader.list(config())) listed.push([t.checkpoint.id, t.checkpoint.channel_versions, t.checkpoint.versions_seen]);
    expect(listed).toEqual(put.slice(5).map((c) => [c.id, c.channel_versions, c.versions_seen]).reverse());
    expect((await reader.getTuple(config(ID(6))))?.checkpoint.versions_seen).toEqual({ node: { log: 5 } });
    await engine.close();
  });

  it('stores a list a reducer changed in place as it is: items pushed onto it, and an item replaced', async () => {
    const engine = memory();
    const saver = new CairnSaver({ engine });
    const list: unknown[] = [{ n: 1 }];
    await saver.put(config(), checkpoint(ID(1), { log: list }, { log: 1 }), loop(0), { log: 1 });
    list.push({ n: 2 });
    await saver.put(config(ID(1)), checkpoint(ID(2), { log: list }, { log: 2 }), loop(1), { log: 2 });
    list[0] = { n: 0 };
    await saver.put(config(ID(2)), checkpoint(ID(3), { log: list }, { log: 3 }), loop(2), { log: 3 });
    const reader = new CairnSaver({ engine });
    const values = [];
    for await (const t of reader.list(config())) values.push(t.checkpoint.channel_values.log);
    expect(values).toEqual([[{ n: 0 }, { n: 2 }], [{ n: 1 }, { n: 2 }], [{ n: 1 }]]);
    await engine.close();
  });
});
