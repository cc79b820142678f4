/**
 * An export that is not whole does not import: a stream cut anywhere (inside a thread,
 * between two threads, before its end record), an empty one, one without a header, or
 * one whose end record counts other records than it holds is refused with
 * InvalidExportError, and nothing of it is left in the target (threads and store items
 * written before the failure are deleted again). Whole exports, concatenated ones
 * included, import as before.
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { memoryArtifacts } from '../../src/engines/memory/index.js';
import { InvalidExportError, ThreadExistsError } from '../../src/errors.js';
import { exportThreads, importThreads, type TransferRecord } from '../../src/inspect/index.js';
import { verifyThread } from '../../src/inspect/verify.js';
import { workedExample } from '../../src/testing/worked-example.js';
import type { Engine } from '../../src/contracts/engine.js';
import { tempDir } from '../helpers/temp-dirs.js';

const tmp = () => join(tempDir('cairn-transfer-cut-'), 'cairn.db');

let records: TransferRecord[];

beforeAll(async () => {
  const source = sqlite(tmp());
  try {
    const app = workedExample({ engine: source, artifacts: memoryArtifacts(), now: () => '2026-01-01T00:00:00.000Z' });
    await app.run({ thread: 'a' });
    await app.run({ thread: 'b' });
    await source.store.put(['cfg'], 'plan', { seats: 3 });
    records = [];
    for await (const r of exportThreads(source, ['a', 'b'], { store: [['cfg']] })) records.push(r);
  } finally {
    await source.close();
  }
});

let target: Engine;
beforeAll(() => {
  target = sqlite(tmp());
});
afterAll(() => target.close());

/** The export of thread `id` alone, cut out of the export of both (without the store items). */
function only(id: string): TransferRecord[] {
  return records
    .filter((r) => r.type === 'header' || r.type === 'end' || (r.type === 'thread' ? r.thread.id === id : 'threadId' in r && r.threadId === id))
    .map((r) => (r.type === 'end' ? { type: 'end' as const, threads: 1, positions: 5 } : r.type === 'header' ? { ...r, store: undefined } : r));
}

/** What the target holds: nothing, after a refused import. */
async function held(engine: Engine) {
  return { threads: (await engine.checkpointer.listThreads()).map((t) => t.id), store: (await engine.store.search(['cfg'])).items.length, ledger: (await engine.ledger.list('a')).length };
}

describe('importThreads of a stream that is not a whole export', () => {
  it('refuses every cut of an export, at whatever record, and leaves nothing of it behind', async () => {
    expect(records.filter((r) => r.type === 'thread')).toHaveLength(2);
    for (let cut = 0; cut < records.length; cut++) {
      const error = await importThreads(target, records.slice(0, cut)).then(
        () => null,
        (e: unknown) => e,
      );
      expect(InvalidExportError.is(error), `cut after ${cut} records: ${String(error)}`).toBe(true);
      expect(await held(target), `cut after ${cut} records`).toEqual({ threads: [], store: 0, ledger: 0 });
    }
  });

  it('says what is wrong: empty, truncated inside a thread, cut between threads', async () => {
    await expect(importThreads(target, [])).rejects.toThrow(/not a cairn export: the stream is empty/);
    await expect(importThreads(target, records.slice(0, 1))).rejects.toThrow(/ends before its end record, after 0 threads and 0 positions: it is truncated/);
    await expect(importThreads(target, records.slice(0, 3))).rejects.toThrow(/thread a declares head 4, but its positions stop at 0: the export is truncated/);
    const second = records.findIndex((r) => r.type === 'thread' && r.thread.id === 'b');
    await expect(importThreads(target, records.slice(0, second))).rejects.toThrow(/ends before its end record, after 1 thread and 5 positions/);
    await expect(importThreads(target, records.slice(1))).rejects.toThrow(/not a cairn export: it starts with a "thread" record, not a header/);
    expect(await held(target)).toEqual({ threads: [], store: 0, ledger: 0 });
  });

  it('refuses an export whose end record counts records it does not hold (a thread taken out)', async () => {
    const withoutA = records.filter((r) => !(r.type === 'thread' && r.thread.id === 'a') && !('threadId' in r && r.threadId === 'a'));
    const error = await importThreads(target, withoutA).catch((e: unknown) => e);
    expect(InvalidExportError.is(error)).toBe(true);
    expect((error as Error).message).toMatch(/end record counts 2 threads \(it holds 1\), 10 positions \(it holds 5\): records are missing/);
    expect(await held(target)).toEqual({ threads: [], store: 0, ledger: 0 });
  });

  it('a refused clash takes back the threads imported before it, and names the clash with ThreadExistsError', async () => {
    const other = sqlite(tmp());
    try {
      await importThreads(other, only('b'));
      expect((await other.checkpointer.listThreads()).map((t) => t.id)).toEqual(['b']);
      const error = await importThreads(other, records).catch((e: unknown) => e);
      expect(ThreadExistsError.is(error)).toBe(true);
      expect((error as ThreadExistsError).threadIds).toEqual(['b']);
      // a came first and was imported, then taken back.
      expect((await other.checkpointer.listThreads()).map((t) => t.id)).toEqual(['b']);
      expect(await other.ledger.list('a')).toEqual([]);
    } finally {
      await other.close();
    }
  });

  it('imports a whole export, and two whole exports one after the other', async () => {
    const first = sqlite(tmp());
    try {
      expect(await importThreads(first, records)).toMatchObject({ threads: ['a', 'b'], positions: 10, storeItems: 1 });
      for (const id of ['a', 'b']) expect((await verifyThread(first, id)).ok).toBe(true);
    } finally {
      await first.close();
    }
    const both = sqlite(tmp());
    try {
      expect(await importThreads(both, [...only('a'), ...only('b')])).toMatchObject({ threads: ['a', 'b'], positions: 10 });
    } finally {
      await both.close();
    }
  });
});
