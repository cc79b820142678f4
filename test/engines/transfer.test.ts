/**
 * Moving threads between engines: SQLite → PostgreSQL and back, through the API
 * and `cairn copy` / `export` / `import`. Positions arrive byte for byte (the hash
 * chain verifies on both sides), with items, snapshots, forks, pending interrupts
 * and the ledger, and the thread goes on in its new home.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { memoryArtifacts } from '../../src/engines/memory/index.js';
import { exportThreads, importThreads, type TransferRecord } from '../../src/index.js';
import { workedExample } from '../../src/testing/worked-example.js';
import { ordersV3 } from '../fixtures/schema-evolution/orders.js';
import { PG_URL, usePostgresSchema } from '../helpers/postgres.js';

const root = new URL('../..', import.meta.url).pathname;
const pg = usePostgresSchema();
const tmp = () => join(mkdtempSync(join(tmpdir(), 'cairn-transfer-')), 'cairn.db');

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
      await app.fork('o1', 1, { patch: { comments: ['forked'] } });
      await app.run({ thread: 'o1' }); // pauses before review again, on the fork
      const records = await collect(exportThreads(source, ['o1']));
      const report = await importThreads(target, records);
      expect(report).toMatchObject({ threads: ['o1'] });

      const rows = async (e: typeof source) => e.checkpointer.getPositions('o1', '', { from: 0, to: 100 });
      expect(await rows(target)).toEqual(await rows(source));
      const there = ordersV3(target);
      expect(await there.getThread('o1')).toMatchObject({ status: 'interrupted', head: (await source.checkpointer.getThread('o1'))!.head });
      for (const p of await rows(source)) expect(await there.stateAt('o1', p.seq)).toEqual(await app.stateAt('o1', p.seq));
      expect((await there.verify('o1')).ok).toBe(true);
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

    const copied = JSON.parse(cli(['copy', '--all', '--from', file, '--to', `${PG_URL}#${pg.schema}`, '--json']));
    expect(copied.verify).toEqual([{ thread: 'cust_42', source: true, target: true, positions: 5 }]);

    // And back into a new SQLite file through export | import.
    const exported = cli(['export', 'cust_42', '--from', `${PG_URL}#${pg.schema}`]);
    const back = tmp();
    expect(cli(['import', '--to', back], exported)).toMatch(/imported 1 thread\(s\), 5 position\(s\), 5 ledger/);
    expect(cli(['verify', 'cust_42', '--db', back])).toMatch(/^ok {3}cust_42: 5 positions/);
  });
});
