/**
 * What CairnSaver stores per checkpoint, and when: a task's writes land in the next
 * checkpoint's transaction when its put follows at once, and on their own otherwise
 * (durable before putWrites resolves either way); the record leaves out what the
 * position holds already (its time, its parent's id) and keeps the folded writes by
 * task; records in the earlier form (ts, metadata text, parentId, parentWrites) are
 * still read; a list a reducer changed in place is stored as it is.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { emptyCheckpoint, type Checkpoint } from '@langchain/langgraph-checkpoint';
import { describe, expect, it } from 'vitest';
import { GENESIS_HASH } from '../../src/codec/hash.js';
import { decode, encode } from '../../src/codec/tagged-json.js';
import { memory } from '../../src/engines/memory/index.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { CairnSaver } from '../../src/langgraph/index.js';
import { hashPosition } from '../../src/runtime/position.js';
import type { StoredPosition } from '../../src/contracts/checkpointer.js';
import type { SaverBody } from '../../src/langgraph/saver-body.js';

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
    const file = join(mkdtempSync(join(tmpdir(), 'cairn-saver-records-')), 'cairn.db');
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
    expect(record.meta).toEqual(loop(1));
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
