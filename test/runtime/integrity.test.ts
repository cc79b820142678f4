/**
 * The integrity chain: `verify()` recomputes every position's
 * hash. A clean thread verifies on both engines; on SQLite, a thread whose file
 * was changed behind cairn's back (one byte of a position body, of an item, of a
 * hash) is reported at the damaged seq, and loading a position whose body no
 * longer parses raises CorruptRecordError naming the thread and the position.
 * Loads check the chain from the nearest snapshot to the position, so a load that
 * reads a damaged row raises CorruptRecordError instead of returning wrong state.
 * Child runs' namespaces are chains of their own, each from the genesis hash: verify
 * checks every one and names the namespace of a damaged position.
 */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { CorruptRecordError } from '../../src/errors.js';
import { defineState } from '../../src/state/schema.js';
import { field } from '../../src/state/fields.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import type { Engine } from '../../src/contracts/engine.js';
import { memoryArtifacts } from '../../src/artifacts/memory/index.js';
import { workedExample } from '../../src/testing/worked-example.js';
import { caught, ENGINES, openRaw, tidOf, tmpFile, useEngine } from './engines.js';
import { chain, CHILD_NS, GRANDCHILD_NS, storeThread, threadWithChildren } from '../helpers/positions.js';
import { verifyThread } from '../../src/inspect/verify.js';

const State = defineState({
  fields: {
    // A constant, larger than any step's changes: no snapshot is taken unless snapshotEvery asks.
    pad: field.model(z.string(), { default: 'p'.repeat(500) }),
    n: field.model(z.number(), { default: 0 }),
    log: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
  },
});

/** A looping thread of `steps` steps, each setting n and appending one item `entry-<n>`. */
function loopApp(engine: Engine, steps = 4, snapshotEvery = 1000) {
  return graph(State)
    .node('step', (s) => ({ n: s.n + 1, log: [`entry-${s.n + 1}`] }))
    .edge(START, 'step')
    .conditionalEdge('step', (s) => (s.n < steps ? 'step' : END))
    .compile({ engine, retry: { maxAttempts: 1 }, snapshotEvery });
}

describe.each(ENGINES)('verify on %s', (name) => {
  const ctx = useEngine(name);

  it('a clean thread verifies: the worked example (records, effects, appends, store write)', async () => {
    const app = workedExample({ engine: ctx.engine, artifacts: memoryArtifacts(), now: () => '2025-01-01T00:00:00.000Z' });
    await app.run({ thread: 'cust_42' });
    const report = await app.verify({ thread: 'cust_42' });
    expect(report).toEqual({ threadId: 'cust_42', ok: true, positions: 5, snapshots: 0, ledgerEntries: 5, problems: [] });
  });

  it('a clean thread with parallel steps, snapshots and two runs verifies', async () => {
    const app = graph(State)
      .node('x', () => ({ log: ['x'] }))
      .node('y', () => ({ log: ['y'] }))
      .edge(START, 'x')
      .edge(START, 'y')
      .edge('x', END)
      .edge('y', END)
      .compile({ engine: ctx.engine, snapshotEvery: 1 });
    await app.run({ thread: 't' });
    await app.run({ thread: 't', input: { n: 2 } });
    const report = await app.verify({ thread: 't' });
    expect(report.ok).toBe(true);
    expect(report.positions).toBe(4);
  });
});

describe('tampering with a SQLite file', () => {
  const THREAD = 'tamper-thread';

  /** A CorruptRecordError whose message names the thread and the damaged seq. */
  async function expectCorrupt(load: () => Promise<unknown>, seq: number) {
    const error = await caught(load);
    expect(CorruptRecordError.is(error)).toBe(true);
    expect(error.code).toBe('ERR_CORRUPT_RECORD');
    expect(error.message).toContain(THREAD);
    expect(error.message).toMatch(new RegExp(`(seq|position) ${seq}\\b`));
    return error;
  }

  async function prepared(snapshotEvery = 1000) {
    const path = tmpFile();
    const engine = sqlite(path);
    const app = loopApp(engine, 4, snapshotEvery);
    await app.run({ thread: THREAD });
    expect((await app.verify({ thread: THREAD })).ok).toBe(true);
    const db = openRaw(path);
    const tid = tidOf(db, THREAD);
    const done = async () => {
      db.close();
      await engine.close();
    };
    return { app, engine, db, tid, done };
  }

  it('one changed byte of a position body (still valid JSON) is reported at that seq', async () => {
    const { app, db, tid, done } = await prepared();
    try {
      const body = db.prepare("SELECT body FROM cairn_positions WHERE tid = ? AND ns = '' AND seq = 2").pluck().get(tid) as string;
      expect(body).toContain('"attempt":1');
      db.prepare("UPDATE cairn_positions SET body = ? WHERE tid = ? AND ns = '' AND seq = 2").run(body.replace('"attempt":1', '"attempt":7'), tid);
      const report = await app.verify({ thread: THREAD });
      expect(report.ok).toBe(false);
      expect(report.problems.map((p) => p.seq)).toEqual([2]);
      expect(report.problems[0]!.code).toBe('ERR_CORRUPT_RECORD');
      expect(report.positions).toBe(5);
      // A load that reads the changed row refuses it; one that stops before it does not need it.
      await expectCorrupt(() => app.stateAt({ thread: THREAD, seq: 2 }), 2);
      await expectCorrupt(() => app.getState({ thread: THREAD }), 2);
      expect((await app.stateAt({ thread: THREAD, seq: 1 })).n).toBe(1);
    } finally {
      await done();
    }
  });

  it("one changed byte of an appended item is reported at the seq of the position that appended it", async () => {
    const { app, db, tid, done } = await prepared();
    try {
      const changed = db.prepare("UPDATE cairn_items SET body = ? WHERE tid = ? AND seq = 3 AND body = ?").run('"entry-X"', tid, '"entry-3"');
      expect(changed.changes).toBe(1);
      const report = await app.verify({ thread: THREAD });
      expect(report.problems.map((p) => p.seq)).toEqual([3]);
      await expectCorrupt(() => app.getState({ thread: THREAD }), 3);
    } finally {
      await done();
    }
  });

  it('one changed byte of a stored hash is reported at that seq (and at its child, whose chain no longer matches)', async () => {
    const { app, db, tid, done } = await prepared();
    try {
      const hash = db.prepare("SELECT hash FROM cairn_positions WHERE tid = ? AND ns = '' AND seq = 2").pluck().get(tid) as Buffer;
      const bad = Buffer.from(hash);
      bad[0] = bad[0]! ^ 0x01;
      db.prepare("UPDATE cairn_positions SET hash = ? WHERE tid = ? AND ns = '' AND seq = 2").run(bad, tid);
      const report = await app.verify({ thread: THREAD });
      expect(report.ok).toBe(false);
      expect(report.problems[0]!.seq).toBe(2);
      expect(report.problems.map((p) => p.seq)).toEqual([2, 3]);
      await expectCorrupt(() => app.stateAt({ thread: THREAD, seq: 2 }), 2);
    } finally {
      await done();
    }
  });

  it('a position body that no longer parses: verify reports it and loading raises CorruptRecordError naming thread and seq', async () => {
    const { app, db, tid, done } = await prepared();
    try {
      const body = db.prepare("SELECT body FROM cairn_positions WHERE tid = ? AND ns = '' AND seq = 2").pluck().get(tid) as string;
      db.prepare("UPDATE cairn_positions SET body = ? WHERE tid = ? AND ns = '' AND seq = 2").run(body.slice(0, -1), tid);

      const report = await app.verify({ thread: THREAD });
      expect(report.problems.map((p) => p.seq)).toContain(2);
      expect(report.problems[0]!.seq).toBe(2);

      for (const load of [() => app.stateAt({ thread: THREAD, seq: 2 }), () => app.getState({ thread: THREAD }), () => app.history({ thread: THREAD })]) await expectCorrupt(load, 2);
      // Positions before the damage still load.
      expect((await app.stateAt({ thread: THREAD, seq: 1 })).n).toBe(1);
    } finally {
      await done();
    }
  });

  it('a resumed run on a thread with a damaged body fails with CorruptRecordError and writes nothing', async () => {
    const { app, db, tid, done } = await prepared();
    try {
      db.prepare("UPDATE cairn_positions SET body = '{' WHERE tid = ? AND ns = '' AND seq = 4").run(tid);
      const error = await caught(() => app.run({ thread: THREAD, input: { n: 0 } }));
      expect(error.code).toBe('ERR_CORRUPT_RECORD');
      expect(db.prepare('SELECT count(*) FROM cairn_positions WHERE tid = ?').pluck().get(tid)).toBe(5);
    } finally {
      await done();
    }
  });

  it('a missing item makes loading raise CorruptRecordError and verify report the position', async () => {
    const { app, db, tid, done } = await prepared();
    try {
      db.prepare("DELETE FROM cairn_items WHERE tid = ? AND seq = 2").run(tid);
      await expectCorrupt(() => app.getState({ thread: THREAD }), 2);
      expect((await app.verify({ thread: THREAD })).problems.map((p) => p.seq)).toEqual([2]);
    } finally {
      await done();
    }
  });

  it('a damaged snapshot raises CorruptRecordError naming the thread and its seq', async () => {
    const { app, db, tid, done } = await prepared(2);
    try {
      const seqs = db.prepare('SELECT seq FROM cairn_snapshots WHERE tid = ? ORDER BY seq').pluck().all(tid) as number[];
      expect(seqs.length).toBeGreaterThan(0);
      const last = seqs.at(-1)!;
      db.prepare('UPDATE cairn_snapshots SET body = ? WHERE tid = ? AND seq = ?').run('{"schemaVersion":1,', tid, last);
      const error = await expectCorrupt(() => app.stateAt({ thread: THREAD, seq: last }), last);
      expect(error.message).toContain('snapshot');
    } finally {
      await done();
    }
  });
});

describe.each(ENGINES)('verify walks every namespace on %s', (name) => {
  const ctx = useEngine(name);

  it('a thread with child and grandchild namespaces verifies, each chain from the genesis hash', async () => {
    await storeThread(ctx.engine.checkpointer, 't', threadWithChildren());
    expect(await verifyThread(ctx.engine.checkpointer, 't')).toEqual({ threadId: 't', ok: true, positions: 8, snapshots: 1, ledgerEntries: 0, problems: [] });
  });

  it('a child chain that continues the root chain instead of starting from genesis is reported in its namespace', async () => {
    const [root] = threadWithChildren();
    const child = chain('bad:0@2', [{}, {}], { parentHash: root!.at(-1)!.position.hash });
    await storeThread(ctx.engine.checkpointer, 't', [root!, child]);
    const report = await verifyThread(ctx.engine.checkpointer, 't');
    expect(report.ok).toBe(false);
    expect(report.positions).toBe(5);
    // Only the first is wrong: the second is rightly chained to its stored parent.
    expect(report.problems.map((p) => [p.ns, p.seq, p.code])).toEqual([['bad:0@2', 0, 'ERR_CORRUPT_RECORD']]);
    expect(report.problems[0]!.message).toMatch(/hash mismatch/);
  });

  it("a child position whose parent is missing from its namespace is reported, though the root has that seq", async () => {
    const [root] = threadWithChildren();
    const [orphan] = chain('orphan:0@1', [{}]);
    // It claims to continue seq 2: the root's seq 2 must not stand in for its own namespace's.
    await storeThread(ctx.engine.checkpointer, 't', [root!, [{ ...orphan!, position: { ...orphan!.position, parent: 2 } }]]);
    const report = await verifyThread(ctx.engine.checkpointer, 't');
    expect(report.problems.map((p) => [p.ns, p.seq])).toEqual([['orphan:0@1', 0]]);
    expect(report.problems[0]!.message).toMatch(/parent 2 is missing/);
  });
});

describe('tampering with child namespaces in a SQLite file', () => {
  const root = new URL('../..', import.meta.url).pathname;

  async function prepared() {
    const path = tmpFile();
    const engine = sqlite(path);
    await storeThread(engine.checkpointer, 't', threadWithChildren());
    expect((await verifyThread(engine.checkpointer, 't')).ok).toBe(true);
    const db = openRaw(path);
    const tid = tidOf(db, 't');
    const done = async () => {
      db.close();
      await engine.close();
    };
    return { engine, db, tid, path, done };
  }

  it('one changed byte of a child position body is reported with its namespace and seq, and nowhere else', async () => {
    const { engine, db, tid, path, done } = await prepared();
    try {
      const body = db.prepare('SELECT body FROM cairn_positions WHERE tid = ? AND ns = ? AND seq = 1').pluck().get(tid, CHILD_NS) as string;
      expect(body).toContain('"attempt":1');
      db.prepare('UPDATE cairn_positions SET body = ? WHERE tid = ? AND ns = ? AND seq = 1').run(body.replace('"attempt":1', '"attempt":7'), tid, CHILD_NS);
      const report = await verifyThread(engine.checkpointer, 't');
      expect(report.ok).toBe(false);
      expect(report.positions).toBe(8);
      expect(report.problems.map((p) => [p.ns, p.seq, p.code])).toEqual([[CHILD_NS, 1, 'ERR_CORRUPT_RECORD']]);

      // The CLI names the namespace; root problems keep their old form.
      let failed: { status: number; stdout: string } | undefined;
      try {
        execFileSync(process.execPath, [join(root, 'dist/cli/main.js'), 'verify', 't', '--db', path], { encoding: 'utf8' });
      } catch (error) {
        failed = error as { status: number; stdout: string };
      }
      expect(failed?.status).toBe(1);
      expect(failed?.stdout).toMatch(new RegExp(`^FAIL t: 8 positions, 1 snapshot, 0 ledger entries\\n {5}ns ${CHILD_NS.replace(/[|]/g, '\\|')} seq 1 \\(position\\): hash mismatch`));
    } finally {
      await done();
    }
  });

  it('one changed byte of a grandchild item is reported at the grandchild position that appended it', async () => {
    const { engine, db, tid, done } = await prepared();
    try {
      const changed = db.prepare('UPDATE cairn_items SET body = ? WHERE tid = ? AND ns = ? AND body = ?').run('"deep nope"', tid, GRANDCHILD_NS, '"deep note"');
      expect(changed.changes).toBe(1);
      const report = await verifyThread(engine.checkpointer, 't');
      expect(report.problems.map((p) => [p.ns, p.seq])).toEqual([[GRANDCHILD_NS, 1]]);
    } finally {
      await done();
    }
  });

  it('a changed child hash is reported at that position and at its child, in that namespace only', async () => {
    const { engine, db, tid, done } = await prepared();
    try {
      const hash = db.prepare('SELECT hash FROM cairn_positions WHERE tid = ? AND ns = ? AND seq = 1').pluck().get(tid, CHILD_NS) as Buffer;
      const bad = Buffer.from(hash);
      bad[0] = bad[0]! ^ 0x01;
      db.prepare('UPDATE cairn_positions SET hash = ? WHERE tid = ? AND ns = ? AND seq = 1').run(bad, tid, CHILD_NS);
      const report = await verifyThread(engine.checkpointer, 't');
      expect(report.problems.map((p) => [p.ns, p.seq])).toEqual([
        [CHILD_NS, 1],
        [CHILD_NS, 2],
      ]);
    } finally {
      await done();
    }
  });

  it('a child position body that no longer parses is reported with its namespace, and so is its child', async () => {
    const { engine, db, tid, done } = await prepared();
    try {
      db.prepare("UPDATE cairn_positions SET body = '{' WHERE tid = ? AND ns = ? AND seq = 0").run(tid, GRANDCHILD_NS);
      const report = await verifyThread(engine.checkpointer, 't');
      expect(report.problems.map((p) => [p.ns, p.seq])).toEqual([
        [GRANDCHILD_NS, 0],
        [GRANDCHILD_NS, 1],
      ]);
      expect(report.problems[0]!.message).toContain(`position 0 of namespace ${GRANDCHILD_NS}`);
    } finally {
      await done();
    }
  });
});
