/**
 * `putWrites` from a saver whose id index is stale: another saver (another process, a
 * second engine on the same database) deleted the thread, and perhaps wrote it again,
 * after this saver last wrote or read it. The writes land on the checkpoint LangGraph
 * named, wherever it is now, or fail with CheckpointNotFoundError: never on whatever
 * checkpoint took its position (the saver's tip, or its index, names a seq that now
 * holds another checkpoint), never at a position no checkpoint holds (where the next
 * checkpoint to take that seq would pick them up as its own), and a deleted thread is
 * not created again to hold them.
 */
import { emptyCheckpoint, type Checkpoint } from '@langchain/langgraph-checkpoint';
import { afterEach, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/contracts/engine.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { CheckpointNotFoundError } from '../../src/errors.js';
import { CairnSaver } from '../../src/langgraph/index.js';
import { usePostgresSchema } from '../helpers/postgres.js';
import { tempFile } from '../helpers/temp-dirs.js';

const pg = usePostgresSchema();

/** Two engines on one database: what two processes have. */
const kits: { name: string; open: () => Promise<[Engine, Engine]> }[] = [
  {
    name: 'sqlite',
    open: async () => {
      const file = tempFile('cairn-lg-stale-', 'cairn.db');
      return [sqlite(file), sqlite(file)];
    },
  },
  { name: 'postgres', open: async () => [await pg.engine(), await pg.engine()] },
];

const ID = (n: number) => `1f000000-0000-6000-8000-0000000000${String(n).padStart(2, '0')}`;
const config = (id?: string) => ({ configurable: { thread_id: 't', checkpoint_ns: '', ...(id ? { checkpoint_id: id } : {}) } });
const loop = (step: number) => ({ source: 'loop' as const, step, parents: {} });

function checkpoint(id: string, log: string[]): Checkpoint {
  return { ...emptyCheckpoint(), id, channel_values: { log }, channel_versions: { log: Number(id.slice(-2)) } };
}

/** Puts `ids` as a chain on thread `t`, through `saver`, and gives its lease back. */
async function chain(saver: CairnSaver, ids: number[]): Promise<void> {
  let parent: string | undefined;
  for (const [i, n] of ids.entries()) {
    await saver.put(config(parent), checkpoint(ID(n), ids.slice(0, i + 1).map(String)), loop(i), { log: n });
    parent = ID(n);
  }
  await saver.release();
}

/** Every pending write stored on thread `t`, as a fresh saver (another process) reads it: checkpoint id → task ids. */
async function writesByCheckpoint(engine: Engine): Promise<Record<string, string[]>> {
  const found: Record<string, string[]> = {};
  for await (const tuple of new CairnSaver({ engine }).list(config())) {
    if (tuple.pendingWrites?.length) found[tuple.checkpoint.id.slice(-2)] = tuple.pendingWrites.map(([task]) => task);
  }
  return found;
}

describe.each(kits)('putWrites against a stale id index ($name)', (kit) => {
  let engines: Engine[] = [];
  afterEach(async () => {
    for (const engine of engines) await engine.close();
    engines = [];
  });

  async function twoSavers(): Promise<[CairnSaver, CairnSaver, Engine]> {
    const [a, b] = await kit.open();
    engines = [a, b];
    return [new CairnSaver({ engine: a, writesWaitMs: 200 }), new CairnSaver({ engine: b }), b];
  }

  it('the tip it wrote was deleted and another checkpoint took its seq: CheckpointNotFoundError, not a write on that checkpoint', async () => {
    const [a, b, engine] = await twoSavers();
    await chain(a, [1, 2]);
    await b.deleteThread('t');
    await chain(b, [8, 9]);
    await expect(a.putWrites(config(ID(2)), [['log', ['x']]], 'task-a')).rejects.toSatisfy((e: unknown) => CheckpointNotFoundError.is(e));
    expect(await writesByCheckpoint(engine)).toEqual({});
    await a.release();
  });

  it('a checkpoint its index knows, below the tip: the same', async () => {
    const [a, b, engine] = await twoSavers();
    await chain(a, [1, 2, 3]);
    // The saver reads the thread, so its index holds every checkpoint.
    for await (const _tuple of a.list(config()));
    await b.deleteThread('t');
    await chain(b, [7, 8, 9]);
    await expect(a.putWrites(config(ID(1)), [['log', ['x']]], 'task-a')).rejects.toSatisfy((e: unknown) => CheckpointNotFoundError.is(e));
    expect(await writesByCheckpoint(engine)).toEqual({});
    await a.release();
  });

  it('the checkpoint LangGraph names is at another seq now: the writes land on it', async () => {
    const [a, b, engine] = await twoSavers();
    await chain(a, [1, 2]);
    await b.deleteThread('t');
    // Written again with the same checkpoint (an import, a copy) one position further on.
    await chain(b, [7, 8, 2]);
    await a.putWrites(config(ID(2)), [['log', ['x']]], 'task-a');
    await a.release();
    expect(await writesByCheckpoint(engine)).toEqual({ '02': ['task-a'] });
  });

  it('the thread was deleted: CheckpointNotFoundError, no thread created to hold the writes, none left for a later checkpoint at that seq', async () => {
    const [a, b, engine] = await twoSavers();
    await chain(a, [1, 2]);
    await b.deleteThread('t');
    await expect(a.putWrites(config(ID(2)), [['log', ['x']]], 'task-a')).rejects.toSatisfy((e: unknown) => CheckpointNotFoundError.is(e));
    await a.release();
    expect(await engine.checkpointer.getThread('t')).toBeNull();
    // The thread written again: its checkpoint at the old tip's seq has no writes of the old one.
    await chain(b, [8, 9]);
    expect(await writesByCheckpoint(engine)).toEqual({});
  });

  it('writes of a saver on the thread it wrote itself land where they belong, on the tip and below it', async () => {
    const [a, , engine] = await twoSavers();
    await chain(a, [1]);
    await a.put(config(ID(1)), checkpoint(ID(2), ['1', '2']), loop(1), { log: 2 });
    await a.putWrites(config(ID(2)), [['log', ['x']]], 'task-a');
    await a.putWrites(config(ID(1)), [['log', ['y']]], 'task-b');
    await a.release();
    expect(await writesByCheckpoint(engine)).toEqual({ '01': ['task-b'], '02': ['task-a'] });
  });
});
