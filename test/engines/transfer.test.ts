/**
 * Moving threads between engines: SQLite → PostgreSQL and back, through the API
 * and `cairn copy` / `export` / `import`. Positions arrive byte for byte (the hash
 * chain verifies on both sides), with items, snapshots, forks, pending interrupts
 * and the ledger, and the thread goes on in its new home. Every namespace travels:
 * a thread with child runs arrives with each child's chain, items, snapshots and
 * pending writes, and verifies on both sides.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { memoryArtifacts } from '../../src/engines/memory/index.js';
import { exportThreads, importThreads, type TransferRecord } from '../../src/inspect/index.js';
import { workedExample } from '../../src/testing/worked-example.js';
import { ordersV3 } from '../fixtures/schema-evolution/orders.js';
import { PG_URL, usePostgresSchema } from '../helpers/postgres.js';
import { chain, CHILD_NS, GRANDCHILD_NS, storeThread, threadWithChildren } from '../helpers/positions.js';
import { verifyThread } from '../../src/inspect/verify.js';
import type { Engine } from '../../src/contracts/engine.js';
import { tempDir } from '../helpers/temp-dirs.js';

const root = new URL('../..', import.meta.url).pathname;
const pg = usePostgresSchema();
const tmp = () => join(tempDir('cairn-transfer-'), 'cairn.db');

async function collect(records: AsyncIterable<TransferRecord>): Promise<TransferRecord[]> {
  const out: TransferRecord[] = [];
  for await (const r of records) out.push(r);
  return out;
}

describe('export and import', () => {
  it('copies a forked, interrupted thread from SQLite to PostgreSQL: same rows, same states, verify ok, and it goes on there', async () => {
    const source = sqlite(tmp());
    const target = await pg.engine();
    try {
      const app = ordersV3(source);
      await app.run({ thread: 'o1', input: { order: 'order-1' } });
      await app.fork({ thread: 'o1', seq: 1, patch: { comments: ['forked'] } });
      await app.run({ thread: 'o1' }); // pauses before review again, on the fork
      const records = await collect(exportThreads(source, ['o1']));
      const report = await importThreads(target, records);
      expect(report).toMatchObject({ threads: ['o1'] });

      const rows = async (e: typeof source) => e.checkpointer.getPositions('o1', '', { from: 0, to: 100 });
      expect(await rows(target)).toEqual(await rows(source));
      const there = ordersV3(target);
      expect(await there.getThread({ thread: 'o1' })).toMatchObject({ status: 'interrupted', head: (await source.checkpointer.getThread('o1'))!.head });
      for (const p of await rows(source)) expect(await there.stateAt({ thread: 'o1', seq: p.seq })).toEqual(await app.stateAt({ thread: 'o1', seq: p.seq }));
      expect((await there.verify({ thread: 'o1' })).ok).toBe(true);
      expect(await target.ledger.list('o1')).toEqual(await source.ledger.list('o1'));

      // The copy goes on in PostgreSQL, served the recorded outputs.
      const done = await there.resume({ thread: 'o1', input: { comments: ['ok'] } });
      expect(done.status).toBe('completed');
      expect(done.state.comments).toEqual(['forked', 'picked red/M', 'ok', 'reviewed']);
    } finally {
      await source.close();
      await target.close();
    }
  });

  it('refuses to import a thread that exists in the target, writing nothing of it', async () => {
    const source = sqlite(tmp());
    const target = await pg.engine();
    try {
      const app = ordersV3(source);
      await app.run({ thread: 'o2', input: { order: 'order-2' } });
      await importThreads(target, await collect(exportThreads(source, ['o2'])));
      const before = await target.checkpointer.getPositions('o2', '', { from: 0, to: 100 });
      await expect(importThreads(target, await collect(exportThreads(source, ['o2'])))).rejects.toThrow(/already exists/);
      expect(await target.checkpointer.getPositions('o2', '', { from: 0, to: 100 })).toEqual(before);
    } finally {
      await source.close();
      await target.close();
    }
  });

  it('cairn copy and cairn export | import move the worked example and verify both sides', async () => {
    const file = tmp();
    const source = sqlite(file);
    await workedExample({ engine: source, artifacts: memoryArtifacts(), now: () => '2026-01-01T00:00:00.000Z' }).run({ thread: 'cust_42' });
    await source.close();
    await pg.empty();
    const cli = (args: string[], input?: string) => execFileSync(process.execPath, [join(root, 'dist/cli/main.js'), ...args], { encoding: 'utf8', ...(input !== undefined ? { input } : {}) });

    const copied = JSON.parse(cli(['copy', '--all', '--db', file, '--to', `${PG_URL}#${pg.schema}`, '--json']));
    expect(copied.verify).toEqual([{ thread: 'cust_42', source: true, target: true, positions: 5 }]);

    // And back into a new SQLite file through export | import.
    const exported = cli(['export', 'cust_42', '--db', `${PG_URL}#${pg.schema}`]);
    const back = tmp();
    expect(cli(['import', '--db', back], exported)).toMatch(/imported 1 thread, 5 positions, 5 ledger entries/);
    expect(cli(['verify', 'cust_42', '--db', back])).toMatch(/^ok {3}cust_42: 5 positions/);
  });
});

describe('export and import of child namespaces', () => {
  /** Everything stored per namespace, read through the contract: what must be the same on both sides. */
  async function contents(engine: Engine, threadId: string) {
    const cp = engine.checkpointer;
    const namespaces = await cp.listNamespaces(threadId);
    const perNs = [];
    for (const ns of namespaces) {
      const positions = await cp.getPositions(threadId, ns, { from: 0, to: 100 });
      perNs.push({
        ns,
        positions,
        items: await Promise.all(positions.map((p) => cp.getPositionItems(threadId, ns, p.seq, ['log', 'found', 'notes']))),
        snapshots: await Promise.all(positions.map((p) => cp.getSnapshot(threadId, ns, [{ from: p.seq, to: p.seq }]))),
        pending: await Promise.all(positions.map((p) => cp.getPendingWrites(threadId, ns, p.seq))),
      });
    }
    const thread = await cp.getThread(threadId);
    return { status: thread?.status, head: thread?.head, namespaces, perNs };
  }

  /** A completed thread with a child and a grandchild namespace, and a pending write in the child. */
  async function seeded(engine: Engine, threadId: string) {
    await storeThread(engine.checkpointer, threadId, threadWithChildren(), { status: 'completed' });
    const lease = await engine.checkpointer.acquireThread(threadId, { owner: { runId: 'seed', pid: process.pid, host: 'seed.invalid' }, leaseMs: 60_000 });
    await engine.checkpointer.putPendingWrite(lease, { ns: CHILD_NS, baseSeq: 2, task: 'deep:0', body: '{"left":"over"}' });
    await engine.checkpointer.releaseThread(lease);
  }

  it('SQLite → PostgreSQL → SQLite: every namespace\'s positions, items, snapshots and pending writes, verify ok on every side', async () => {
    const source = sqlite(tmp());
    const middle = await pg.engine();
    const back = sqlite(tmp());
    try {
      await seeded(source, 't');
      const expected = await contents(source, 't');
      expect(expected.namespaces).toEqual(['', CHILD_NS, GRANDCHILD_NS]);
      expect(expected.perNs[1]!.pending.flat()).toHaveLength(1);
      expect(expected.perNs[1]!.snapshots.filter(Boolean)).toHaveLength(1);

      const records = await collect(exportThreads(source, ['t']));
      expect(records[0]).toMatchObject({ type: 'header', version: 6 });
      expect(records.filter((r) => r.type === 'position').map((r) => r.type === 'position' && [r.position.ns, r.position.seq])).toEqual([
        ['', 0], ['', 1], ['', 2], [CHILD_NS, 0], [CHILD_NS, 1], [CHILD_NS, 2], [GRANDCHILD_NS, 0], [GRANDCHILD_NS, 1],
      ]);
      expect(records.at(-1)).toEqual({ type: 'end', threads: 1, positions: 8 });

      expect(await importThreads(middle, records)).toMatchObject({ threads: ['t'], positions: 8 });
      expect(await contents(middle, 't')).toEqual(expected);
      await importThreads(back, await collect(exportThreads(middle, ['t'])));
      expect(await contents(back, 't')).toEqual(expected);
      for (const engine of [source, middle, back]) {
        expect(await verifyThread(engine.checkpointer, 't')).toEqual({ threadId: 't', ok: true, positions: 8, snapshots: 1, ledgerEntries: 0, problems: [] });
      }
    } finally {
      await source.close();
      await middle.close();
      await back.close();
    }
  });

  it('SQLite → PostgreSQL → SQLite: a waiting thread keeps its status and wake time, and its signals travel with their ids, pending and consumed', async () => {
    const source = sqlite(tmp());
    const middle = await pg.engine();
    const back = sqlite(tmp());
    try {
      const wakeAt = Date.now() + 3_600_000;
      await storeThread(source.checkpointer, 'w', [chain('', [{}, {}])]);
      const cp = source.checkpointer;
      const lease = await cp.acquireThread('w', { owner: { runId: 'seed', pid: process.pid, host: 'seed.invalid' }, leaseMs: 60_000 });
      await cp.sendSignal('w', { name: 'approved', payload: '{"by":"ana"}', sentAt: 1_700_000_000_001 });
      await cp.sendSignal('w', { name: 'note', payload: '"later"', sentAt: 1_700_000_000_002 });
      await cp.consumeSignal(lease, { id: 1, by: 'wait:approve', consumedAt: 1_700_000_000_003 });
      await cp.updateThread(lease, { status: 'waiting', wakeAt });
      await cp.releaseThread(lease);
      // A thread that waits for a signal only, with none yet.
      await storeThread(cp, 'idle', [chain('', [{}])], { status: 'waiting' });

      const state = async (engine: Engine, id: string) => {
        const thread = (await engine.checkpointer.getThread(id))!;
        return { status: thread.status, wakeAt: thread.wakeAt, signals: await engine.checkpointer.listSignals(id) };
      };
      const expected = { w: await state(source, 'w'), idle: await state(source, 'idle') };
      expect(expected.w).toMatchObject({ status: 'waiting', wakeAt });
      expect(expected.w.signals.map((s) => [s.id, s.consumedBy])).toEqual([[1, 'wait:approve'], [2, null]]);
      expect(expected.idle).toEqual({ status: 'waiting', wakeAt: null, signals: [] });

      const records = await collect(exportThreads(source, ['w', 'idle']));
      expect(records[0]).toMatchObject({ version: 6 });
      expect(records.filter((r) => r.type === 'signal')).toHaveLength(2);
      expect(records.at(-1)).toEqual({ type: 'end', threads: 2, positions: 3, signals: 2 });
      expect(await importThreads(middle, records)).toMatchObject({ threads: ['w', 'idle'], positions: 3, signals: 2 });
      expect({ w: await state(middle, 'w'), idle: await state(middle, 'idle') }).toEqual(expected);
      await importThreads(back, await collect(exportThreads(middle, ['w', 'idle'])));
      expect({ w: await state(back, 'w'), idle: await state(back, 'idle') }).toEqual(expected);
      expect((await verifyThread(back.checkpointer, 'w')).ok).toBe(true);
    } finally {
      await source.close();
      await middle.close();
      await back.close();
    }
  });

  it("a record's meta (kind, model, tokens, latency) travels SQLite → PostgreSQL in a version 5 (and later) export; a version 4 export's entries arrive without one", async () => {
    const source = sqlite(tmp());
    const target = await pg.engine();
    const older = sqlite(tmp());
    try {
      await storeThread(source.checkpointer, 'm', [chain('', [{}])], { status: 'completed' });
      const base = { threadId: 'm', ns: '', seq: 0, node: 'n', task: 'n:0', argsDigest: null, createdAt: 1_700_000_000_000 };
      const meta = { kind: 'model' as const, model: 'mock-model', provider: 'mock', usage: { inputTokens: 10, outputTokens: 4, totalTokens: 14 }, latencyMs: 12 };
      await source.ledger.writeRecord({ ...base, key: 'r0', kind: 'record', name: 'ai.generate', call: 0, outcome: '"hi"', meta });
      await source.ledger.writeRecord({ ...base, key: 'r1', kind: 'record', name: 'clock', call: 1, outcome: '1' });
      const records = await collect(exportThreads(source, ['m']));
      expect(records[0]).toMatchObject({ type: 'header', version: 6 });
      expect(await importThreads(target, records)).toMatchObject({ ledgerEntries: 2 });
      expect(await target.ledger.list('m')).toEqual(await source.ledger.list('m'));
      expect((await target.ledger.get('m', 'r0'))?.meta).toEqual(meta);
      expect(await target.ledger.get('m', 'r1')).not.toHaveProperty('meta');

      // As an importer of version 4 streams saw them: entries with no meta field at all.
      const v4 = records.map((r) => {
        if (r.type === 'header') return { ...r, version: 4 as const };
        if (r.type === 'ledger') {
          const { meta: _meta, ...entry } = r.entry;
          return { ...r, entry };
        }
        return r;
      });
      expect(await importThreads(older, v4)).toMatchObject({ ledgerEntries: 2 });
      expect((await older.ledger.list('m')).map((e) => [e.key, 'meta' in e])).toEqual([['r0', false], ['r1', false]]);
    } finally {
      await source.close();
      await target.close();
      await older.close();
    }
  });

  it('reads a version 3 export (no signals, threads without wakeAt): the threads have no wake time', async () => {
    const source = sqlite(tmp());
    const target = sqlite(tmp());
    try {
      await storeThread(source.checkpointer, 'v3', [chain('', [{}])], { status: 'completed' });
      const v3 = (await collect(exportThreads(source, ['v3']))).map((r) => {
        if (r.type === 'header') return { ...r, version: 3 as const };
        if (r.type === 'thread') {
          const { wakeAt: _wakeAt, ...thread } = r.thread;
          return { ...r, thread: thread as typeof r.thread };
        }
        return r;
      });
      expect(await importThreads(target, v3)).toMatchObject({ threads: ['v3'], positions: 1, signals: 0 });
      expect(await target.checkpointer.getThread('v3')).toMatchObject({ status: 'completed', wakeAt: null });
    } finally {
      await source.close();
      await target.close();
    }
  });

  it('reads a version 1 export, whose records may carry no ns, as the root namespace', async () => {
    const source = sqlite(tmp());
    const target = sqlite(tmp());
    try {
      await storeThread(source.checkpointer, 'old', [chain('', [{}, { append: { log: ['x'] } }])]);
      const lease = await source.checkpointer.acquireThread('old', { owner: { runId: 'seed', pid: process.pid, host: 'seed.invalid' }, leaseMs: 60_000 });
      await source.checkpointer.putPendingWrite(lease, { ns: '', baseSeq: 1, task: 'n:0', body: '{}' });
      await source.checkpointer.releaseThread(lease);
      // As an exporter without namespaces wrote it: version 1, no ns on positions or pending writes.
      const v1 = (await collect(exportThreads(source, ['old']))).map((r) => {
        if (r.type === 'header') return { ...r, version: 1 as const };
        if (r.type === 'position') return { ...r, position: withoutNs(r.position) };
        if (r.type === 'pending') return { ...r, write: withoutNs(r.write) };
        return r;
      });
      expect(await importThreads(target, v1)).toMatchObject({ threads: ['old'], positions: 2 });
      expect(await target.checkpointer.listNamespaces('old')).toEqual(['']);
      expect(await target.checkpointer.getPositions('old', '', { from: 0, to: 9 })).toEqual(await source.checkpointer.getPositions('old', '', { from: 0, to: 9 }));
      expect(await target.checkpointer.getPendingWrites('old', '', 1)).toEqual([{ ns: '', baseSeq: 1, task: 'n:0', body: '{}' }]);
      expect((await verifyThread(target.checkpointer, 'old')).ok).toBe(true);
    } finally {
      await source.close();
      await target.close();
    }
  });

  it('refuses a stream of a format version it does not read, before writing anything', async () => {
    const target = sqlite(tmp());
    try {
      const records = [{ type: 'header', format: 'cairn-threads', version: 7, exportedAt: 0, engine: 'x' }] as unknown as TransferRecord[];
      await expect(importThreads(target, records)).rejects.toThrow(/v7; reads v1, v2, v3, v4, v5, v6/);
      expect(await target.checkpointer.listThreads()).toEqual([]);
    } finally {
      await target.close();
    }
  });
});

/** A copy of a record without its `ns`, as a version 1 export may have written it. */
function withoutNs<T extends { ns: string }>(record: T): T {
  const { ns: _ns, ...rest } = record;
  return rest as T;
}
