/**
 * CairnSaver answers as LangGraph's own savers do where their validation suite does not
 * look, on every engine, each case run on LangGraph's saver too (MemorySaver, or
 * SqliteSaver where the two disagree and the database savers agree):
 * - a task's writes handed over again keep the first ones (LangGraph's savers' INSERT
 *   OR IGNORE), while a call of special writes only (`__error__`, `__interrupt__`,
 *   `__resume__`) replaces them: whether the writes are stored on their own, folded into
 *   the next checkpoint, or handed over once that checkpoint landed, by another saver;
 * - a `list` config that names a checkpoint lists that checkpoint alone (with `before`
 *   and `filter` still applied), so `getStateHistory(snapshot.config)` is one snapshot;
 * - a thread another saver (another process) deleted, and perhaps wrote again, reads as
 *   what it holds now: a deleted checkpoint is not found, and a put after it does not
 *   land on whatever checkpoint took its place;
 * - `deleteThread` right after another saver's run wrote the thread deletes it (that
 *   saver's lease, kept for its next write, is waited for as a write waits for it);
 * - `list`'s `filter` is matched as PostgresSaver matches it, `metadata @> filter` (jsonb
 *   containment: nested objects and arrays contain what the filter names), each case run
 *   on a PostgresSaver; MemorySaver and SqliteSaver agree on scalars only;
 * - `list` with `limit` and a `before` or `filter` that passes over many checkpoints
 *   (LangGraph's replay of a subgraph asks for `{ before, limit: 1 }`) gives the same
 *   checkpoints in a few reads, not one read per checkpoint passed over;
 * - a run resumed by a saver new to a long thread (a new process) reads its latest
 *   checkpoint, hands writes over and puts the next one without scanning the thread.
 */
import { BaseCheckpointSaver, MemorySaver, emptyCheckpoint, type Checkpoint, type CheckpointMetadata, type PendingWrite } from '@langchain/langgraph-checkpoint';
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';
import pg from 'pg';
import type { RunnableConfig } from '@langchain/core/runnables';
import { Annotation, END, START, StateGraph } from '@langchain/langgraph';
import { afterEach, describe, expect, it } from 'vitest';
import type { Checkpointer } from '../../src/contracts/checkpointer.js';
import type { Engine } from '../../src/contracts/engine.js';
import { InvalidOptionError, ThreadBusyError } from '../../src/errors.js';
import { CairnSaver } from '../../src/langgraph/index.js';
import { PG_URL } from '../helpers/postgres.js';
import { langGraphEngines } from './engines.js';

const engines = langGraphEngines();

const ID = (n: number) => `1f000000-0000-6000-8000-0000000000${String(n).padStart(2, '0')}`;
const config = (id?: string) => ({ configurable: { thread_id: 't', checkpoint_ns: '', ...(id ? { checkpoint_id: id } : {}) } });
const loop = (step: number) => ({ source: 'loop' as const, step, parents: {} });

function checkpoint(id: string, values: Record<string, unknown>): Checkpoint {
  return { ...emptyCheckpoint(), id, channel_values: values, channel_versions: Object.fromEntries(Object.keys(values).map((k) => [k, Number(id.slice(-2))])) };
}

/** One task's writes handed over twice, and again for special channels: what each saver keeps. */
const RETRIED: [task: string, writes: PendingWrite[]][] = [
  ['task-1', [['log', ['first']], ['route', 'a']]],
  ['task-1', [['log', ['second']]]],
  ['task-1', [['log', ['third']], ['route', 'b'], ['extra', 1]]],
  ['task-2', [['__error__', { message: 'first failure' }]]],
  ['task-2', [['__error__', { message: 'second failure' }]]],
  ['task-3', [['__interrupt__', [{ value: 'first question' }]]]],
  ['task-3', [['__interrupt__', [{ value: 'second question' }]]]],
  ['task-4', [['__resume__', ['one']]]],
  ['task-4', [['__resume__', ['one', 'two']]]],
];

/** A saver on `engine` whose every `listPositions` (a scan of a namespace's positions) is counted in `reads.count`. */
function countingListings(engine: Engine): { counted: CairnSaver; reads: { count: number } } {
  const reads = { count: 0 };
  const real = engine.checkpointer;
  const checkpointer = new Proxy(real, {
    get: (target, key, receiver) => {
      const value: unknown = Reflect.get(target, key, receiver);
      if (key === 'listPositions') return (...args: Parameters<Checkpointer['listPositions']>) => (reads.count++, real.listPositions(...args));
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { counted: new CairnSaver({ engine: Object.assign(Object.create(Object.getPrototypeOf(engine)), engine, { checkpointer }) }), reads };
}

async function pendingAt(saver: BaseCheckpointSaver, id: string) {
  return (await saver.getTuple(config(id)))?.pendingWrites;
}

describe.each(engines)('CairnSaver answers as LangGraph savers do ($name)', (kit) => {
  let engine: Engine | undefined;
  const saver = async () => new CairnSaver({ engine: (engine = await kit.create()) });
  afterEach(async () => {
    if (engine) await kit.destroy(engine);
    engine = undefined;
  });

  it("a task's writes handed over again keep the first ones; special writes replace theirs (stored on their own)", async () => {
    const cairn = await saver();
    const reference = new MemorySaver();
    for (const target of [cairn, reference] as BaseCheckpointSaver[]) {
      await target.put(config(), checkpoint(ID(1), { log: ['seed'] }), loop(0), { log: 1 });
      for (const [task, writes] of RETRIED) await target.putWrites(config(ID(1)), writes, task, task);
    }
    const expected = await pendingAt(reference, ID(1));
    expect(expected).toContainEqual(['task-1', 'log', ['first']]);
    expect(expected).toContainEqual(['task-2', '__error__', { message: 'second failure' }]);
    expect(await pendingAt(cairn, ID(1))).toEqual(expected);
    // Read afresh from the engine, as another process would.
    expect(await pendingAt(new CairnSaver({ engine: engine! }), ID(1))).toEqual(expected);
  });

  it("…when they are folded into the next checkpoint, handed over in the same turn as its put", async () => {
    const cairn = await saver();
    const reference = new MemorySaver();
    for (const target of [cairn, reference] as BaseCheckpointSaver[]) {
      await target.put(config(), checkpoint(ID(1), { log: ['seed'] }), loop(0), { log: 1 });
      const written = RETRIED.map(([task, writes]) => target.putWrites(config(ID(1)), writes, task, task));
      await Promise.all([...written, target.put(config(ID(1)), checkpoint(ID(2), { log: ['seed', 'first'] }), loop(1), { log: 2 })]);
    }
    const expected = await pendingAt(reference, ID(1));
    expect(await pendingAt(cairn, ID(1))).toEqual(expected);
    expect(await pendingAt(new CairnSaver({ engine: engine! }), ID(1))).toEqual(expected);
  });

  it('…when they are handed over again after the next checkpoint landed, by another saver (another process)', async () => {
    const cairn = await saver();
    const reference = new MemorySaver();
    for (const target of [cairn, reference] as BaseCheckpointSaver[]) {
      await target.put(config(), checkpoint(ID(1), { log: ['seed'] }), loop(0), { log: 1 });
      const [first, ...again] = RETRIED;
      await Promise.all([target.putWrites(config(ID(1)), first![1], first![0], first![0]), target.put(config(ID(1)), checkpoint(ID(2), { log: ['seed', 'first'] }), loop(1), { log: 2 })]);
      if (target === cairn) await cairn.release();
      const later = target === cairn ? new CairnSaver({ engine: engine! }) : target;
      for (const [task, writes] of again) await later.putWrites(config(ID(1)), writes, task, task);
      if (later instanceof CairnSaver) await later.release();
    }
    const expected = await pendingAt(reference, ID(1));
    expect(await pendingAt(new CairnSaver({ engine: engine! }), ID(1))).toEqual(expected);
  });

  it("a call mixing special and other writes, handed over again, keeps the first ones, as LangGraph's database savers do", async () => {
    const cairn = await saver();
    // MemorySaver replaces the special write of such a call; SqliteSaver and PostgresSaver keep the whole first call.
    const reference = SqliteSaver.fromConnString(':memory:');
    for (const target of [cairn, reference] as BaseCheckpointSaver[]) {
      await target.put(config(), checkpoint(ID(1), { log: ['seed'] }), loop(0), { log: 1 });
      await target.putWrites(config(ID(1)), [['log', ['first']], ['__error__', { message: 'first failure' }]], 'task-1');
      await target.putWrites(config(ID(1)), [['log', ['second']], ['__error__', { message: 'second failure' }]], 'task-1');
    }
    const expected = await pendingAt(reference, ID(1));
    expect(expected).toContainEqual(['task-1', '__error__', { message: 'first failure' }]);
    expect(await pendingAt(cairn, ID(1))).toEqual(expected);
  });

  it('a list config that names a checkpoint lists it alone, with before and filter applied, in any namespace or thread', async () => {
    const cairn = await saver();
    const reference = new MemorySaver();
    const ids = async (target: BaseCheckpointSaver, listConfig: object, options: object = {}) => {
      const found: string[] = [];
      for await (const tuple of target.list(listConfig, options)) found.push(`${String(tuple.config.configurable?.thread_id)}/${String(tuple.config.configurable?.checkpoint_ns)}/${tuple.checkpoint.id.slice(-2)}`);
      return found;
    };
    for (const target of [cairn, reference] as BaseCheckpointSaver[]) {
      await target.put(config(), checkpoint(ID(1), { log: ['a'] }), loop(0), { log: 1 });
      await target.put(config(ID(1)), checkpoint(ID(2), { log: ['a', 'b'] }), loop(1), { log: 2 });
      await target.put(config(ID(2)), checkpoint(ID(3), { log: ['a', 'b', 'c'] }), loop(2), { log: 3 });
      await target.put({ configurable: { thread_id: 't', checkpoint_ns: 'child:1' } }, checkpoint(ID(4), { log: ['x'] }), loop(0), { log: 4 });
      await target.put({ configurable: { thread_id: 'other', checkpoint_ns: '' } }, checkpoint(ID(5), { log: ['y'] }), loop(0), { log: 5 });
    }
    const cases: [object, object?][] = [
      [config(ID(2))],
      [config(ID(2)), { before: config(ID(3)) }],
      [config(ID(2)), { before: config(ID(2)) }],
      [config(ID(2)), { filter: { step: 1 } }],
      [config(ID(2)), { filter: { step: 2 } }],
      [config(ID(2)), { limit: 1 }],
      [config(ID(4))],
      [{ configurable: { thread_id: 't', checkpoint_id: ID(4) } }],
      [{ configurable: { checkpoint_id: ID(5) } }],
      [config()],
    ];
    for (const [listConfig, options] of cases) {
      expect(await ids(cairn, listConfig, options), JSON.stringify([listConfig, options])).toEqual(await ids(reference, listConfig, options));
    }
    expect(await ids(cairn, config(ID(2)))).toEqual(['t//02']);
  });

  it("list's filter matches as PostgresSaver's metadata @> filter: nested objects and arrays by containment", async () => {
    const cairn = await saver();
    const schema = `lg_filter_${process.pid}_${Date.now()}`;
    const pool = new pg.Pool({ connectionString: PG_URL, max: 2 });
    try {
      const reference = new PostgresSaver(pool, undefined, { schema });
      await reference.setup();
      const at = new Date('2026-01-02T03:04:05.000Z');
      const metadata: Record<string, unknown>[] = [
        { source: 'input', step: -1, parents: {} },
        { source: 'loop', step: 0, parents: {}, extra: { a: 1, b: 2 } },
        { source: 'loop', step: 1, parents: {}, extra: { a: 1 }, tags: ['x', 'y', 'x'] },
        { source: 'loop', step: 2, parents: { '': ID(1) }, extra: { a: 2, nested: { deep: [1, [2, 3]] } }, tags: ['y'], items: [{ k: 1, j: 2 }, { k: 3 }] },
        { source: 'update', step: 3, parents: {}, flag: null, n: 1.5, at, empty: {}, list: [] },
      ];
      for (const target of [cairn, reference] as BaseCheckpointSaver[]) {
        for (let i = 0; i < metadata.length; i++) {
          await target.put(config(i ? ID(i) : undefined), checkpoint(ID(i + 1), { log: ['a'] }), metadata[i] as CheckpointMetadata, i ? {} : { log: 1 });
        }
      }
      const ids = async (target: BaseCheckpointSaver, filter: Record<string, unknown>, listConfig: object = config()) => {
        const found: number[] = [];
        for await (const tuple of target.list(listConfig, { filter })) found.push(Number(tuple.checkpoint.id.slice(-2)));
        return found;
      };
      const filters: Record<string, unknown>[] = [
        { source: 'loop', extra: { a: 1 } },
        { extra: { a: 1, b: 2 } },
        { extra: { b: 2, a: 1 } },
        { extra: {} },
        { extra: { a: undefined } },
        { extra: { nested: { deep: [[3]] } } },
        { extra: { nested: { deep: [2] } } },
        { extra: { nested: { deep: [] } } },
        { tags: ['y'] },
        { tags: ['y', 'x', 'y'] },
        { tags: [] },
        { tags: 'y' },
        { items: [{ k: 1 }] },
        { items: [{ k: 3 }, { j: 2 }] },
        { items: [{ k: 3, j: 2 }] },
        { items: [1] },
        { parents: {} },
        { parents: { '': ID(1) } },
        { flag: null },
        { missing: null },
        { n: 1.5 },
        { n: '1.5' },
        { at },
        { at: at.toISOString() },
        { empty: {} },
        { empty: [] },
        { list: [] },
        { list: {} },
        { step: 1 },
        { source: 'loop', step: 2 },
        { source: 'update', n: 1.5, flag: null },
        {},
        { source: undefined },
      ];
      for (const filter of filters) {
        const expected = await ids(reference, filter);
        expect(await ids(cairn, filter), JSON.stringify(filter)).toEqual(expected);
        // A config that names a checkpoint is filtered the same way.
        expect(await ids(cairn, filter, config(ID(4))), JSON.stringify(filter)).toEqual(await ids(reference, filter, config(ID(4))));
      }
      // What jsonb containment gives, spelled out: a nested object or array matches what it contains.
      expect(await ids(cairn, { source: 'loop', extra: { a: 1 } })).toEqual([3, 2]);
      expect(await ids(cairn, { tags: ['y'] })).toEqual([4, 3]);
      expect(await ids(cairn, { extra: { nested: { deep: [[3]] } } })).toEqual([4]);
      expect(await ids(cairn, { tags: 'y' })).toEqual([]);
      // A filter PostgresSaver could not send (not JSON data) is refused, not matched against nothing.
      await expect(ids(cairn, { n: 1n })).rejects.toThrow(InvalidOptionError);
      // Text jsonb cannot hold: PostgresSaver fails with PostgreSQL's error; refused, typed, on every engine.
      for (const filter of [{ s: 'a\u0000b' }, { s: ['\uD800'] }, { 'k\u0000': 1 }]) {
        await expect(ids(reference, filter), JSON.stringify(filter)).rejects.toThrow();
        await expect(ids(cairn, filter), JSON.stringify(filter)).rejects.toThrow(InvalidOptionError);
      }
    } finally {
      await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await pool.end();
    }
  });

  it("getStateHistory from a snapshot's config is that snapshot alone, as on MemorySaver", async () => {
    const State = Annotation.Root({ log: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }) });
    const graph = (checkpointer: BaseCheckpointSaver) =>
      new StateGraph(State)
        .addNode('one', async () => ({ log: ['one'] }))
        .addNode('two', async () => ({ log: ['two'] }))
        .addEdge(START, 'one')
        .addEdge('one', 'two')
        .addEdge('two', END)
        .compile({ checkpointer });
    const histories: { all: (number | undefined)[]; fromSnapshot: (number | undefined)[] }[] = [];
    for (const target of [await saver(), new MemorySaver()] as BaseCheckpointSaver[]) {
      const app = graph(target);
      const thread = { configurable: { thread_id: 'history' } };
      await app.invoke({ log: ['in'] }, thread);
      const all = [];
      for await (const snapshot of app.getStateHistory(thread)) all.push(snapshot);
      const fromSnapshot = [];
      for await (const snapshot of app.getStateHistory(all[1]!.config)) fromSnapshot.push(snapshot);
      histories.push({ all: all.map((s) => s.metadata?.step), fromSnapshot: fromSnapshot.map((s) => s.metadata?.step) });
    }
    expect(histories[0]!.all).toEqual([2, 1, 0, -1]);
    expect(histories[0]!.fromSnapshot).toEqual([1]);
    expect(histories[0]).toEqual(histories[1]);
  });

  it('a thread deleted by another saver, and written again, reads as what it holds now, not as this saver last saw it', async () => {
    const reader = await saver();
    const writer = new CairnSaver({ engine: engine! });
    const reference = new MemorySaver();
    const answers: unknown[][] = [];
    for (const [read, write] of [[reader, writer], [reference, reference]] as [BaseCheckpointSaver, BaseCheckpointSaver][]) {
      const seen: unknown[] = [];
      await write.put(config(), checkpoint(ID(1), { log: ['a'], mood: 'calm' }), loop(0), { log: 1, mood: 1 });
      await write.put(config(ID(1)), checkpoint(ID(2), { log: ['a', 'b'] }), loop(1), { log: 2 });
      // The reader looks both checkpoints up (and keeps where they are).
      seen.push((await read.getTuple(config(ID(1))))?.checkpoint.channel_values, (await read.getTuple(config(ID(2))))?.checkpoint.channel_values);
      if (write instanceof CairnSaver) await write.release();
      await write.deleteThread('t');
      seen.push(await read.getTuple(config(ID(2))), await read.getTuple(config()));
      // Written again: other checkpoints now sit where the old ones were.
      await write.put(config(), checkpoint(ID(7), { log: ['x'], mood: 'stormy' }), loop(0), { log: 7, mood: 7 });
      await write.put(config(ID(7)), checkpoint(ID(8), { log: ['x', 'y'] }), loop(1), { log: 8 });
      if (write instanceof CairnSaver) await write.release();
      seen.push(await read.getTuple(config(ID(1))), (await read.getTuple(config(ID(8))))?.checkpoint.channel_values);
      // A put after the deleted checkpoint starts afresh: it takes nothing from the checkpoint now in its place.
      await read.put(config(ID(2)), checkpoint(ID(9), { log: ['a', 'b', 'c'] }), loop(2), { log: 9 });
      const put = await read.getTuple(config(ID(9)));
      seen.push(put?.checkpoint.channel_values, put?.parentConfig?.configurable?.checkpoint_id);
      answers.push(seen);
    }
    expect(answers[0]![2]).toBeUndefined();
    expect(answers[0]).toEqual(answers[1]);
  });

  it("deleteThread right after another saver's run wrote the thread deletes it; a thread still being written is refused", async () => {
    const runner = await saver();
    const other = new CairnSaver({ engine: engine! });
    await runner.put(config(), checkpoint(ID(1), { log: ['a'] }), loop(0), { log: 1 });
    // The runner keeps its lease for its next write (idleReleaseMs): the delete waits for it.
    await other.deleteThread('t');
    expect(await other.getTuple(config())).toBeUndefined();
    expect(await runner.getTuple(config(ID(1)))).toBeUndefined();
    expect(await engine!.checkpointer.getThread('t')).toBeNull();
    // A saver that keeps writing (its lease held past the wait) is not deleted under.
    const busy = new CairnSaver({ engine: engine!, idleReleaseMs: 60_000 });
    await busy.put(config(), checkpoint(ID(2), { log: ['b'] }), loop(0), { log: 2 });
    const refused = await new CairnSaver({ engine: engine!, busyWaitMs: 100 }).deleteThread('t').then(() => null, (error: unknown) => error);
    expect(ThreadBusyError.is(refused)).toBe(true);
    expect((await other.getTuple(config()))?.checkpoint.id).toBe(ID(2));
    await busy.release();
  });

  it('list with limit, and before or filter passing over most checkpoints, gives what MemorySaver gives in a few reads', async () => {
    const cairn = await saver();
    const reference = new MemorySaver();
    const ids: string[] = [];
    for (const target of [cairn, reference] as BaseCheckpointSaver[]) {
      let parent: RunnableConfig = config();
      for (let n = 1; n <= 300; n++) {
        const id = `1f000000-0000-6000-8000-000000000${String(n).padStart(3, '0')}`;
        if (target === cairn) ids.push(id);
        parent = await target.put(parent, checkpoint(id, { n }), { source: n === 1 ? 'input' : 'loop', step: n - 2, parents: {} }, { n });
      }
    }
    await cairn.release();
    // A saver reading the thread afresh, counting the engine's reads of positions.
    const { counted, reads } = countingListings(engine!);
    const steps = async (target: BaseCheckpointSaver, options: object) => {
      const found: unknown[] = [];
      for await (const tuple of target.list(config(), options)) found.push(tuple.metadata?.step);
      return found;
    };
    for (const options of [{ before: config(ids[3]), limit: 1 }, { filter: { source: 'input' }, limit: 1 }, { filter: { step: 5 }, limit: 2 }, { before: config(ids[10]), limit: 3 }, { limit: 2 }]) {
      reads.count = 0;
      expect(await steps(counted, options), JSON.stringify(options)).toEqual(await steps(reference, options));
      // About log2(300) pages, where one page per checkpoint passed over read ~300.
      expect(reads.count, JSON.stringify(options)).toBeLessThanOrEqual(12);
    }
  });

  it('a saver new to a long thread resumes it (latest checkpoint, writes, next put) without scanning its positions', async () => {
    const writer = await saver();
    let parent: RunnableConfig = config();
    for (let n = 1; n <= 600; n++) {
      const id = `1f000000-0000-6000-8000-00000000${String(n).padStart(4, '0')}`;
      parent = await writer.put(parent, checkpoint(id, { n }), loop(n - 1), { n });
    }
    await writer.release();
    const { counted, reads } = countingListings(engine!);
    const latest = await counted.getTuple(config());
    expect(latest?.checkpoint.channel_values).toEqual({ n: 600 });
    await counted.putWrites(latest!.config, [['n', 'from the task']], 'task-1');
    await counted.putWrites(latest!.config, [['n', 'again']], 'task-1');
    await counted.put(latest!.config, checkpoint('1f000000-0000-6000-8000-000000009999', { n: 601 }), loop(600), { n: 601 });
    // Another saver reads what was stored; the resume itself read no page of positions.
    expect(reads.count).toBe(0);
    await counted.release();
    const reader = new CairnSaver({ engine: engine! });
    expect((await reader.getTuple(latest!.config))?.pendingWrites).toEqual([['task-1', 'n', 'from the task']]);
    expect((await reader.getTuple(config()))?.parentConfig?.configurable?.checkpoint_id).toBe(latest!.config.configurable?.checkpoint_id);
  });
});
