/**
 * Two processes run the same thread at the same moment: exactly one proceeds, the
 * other gets ThreadBusyError, and the position chain is one line (never forked).
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { sqlite } from '../../dist/engines/sqlite/index.js';
import { verifyThread } from '../../dist/inspect/index.js';
import { tempDir } from '../helpers/temp-dirs.js';

const run = promisify(execFile);
const fixture = new URL('../fixtures/slow-run.mjs', import.meta.url).pathname;

describe('one run per thread across processes', () => {
  it('lets exactly one of two simultaneous runs proceed; the other gets ThreadBusyError', async () => {
    const db = join(tempDir('cairn-excl-'), 'cairn.db');
    // Create the schema first so both processes race for the thread, not for the migration.
    const setup = sqlite(db);
    await setup.checkpointer.getThread('t');
    await setup.close();

    const outcomes = await Promise.all([0, 1].map(() => run(process.execPath, [fixture, db, 't', '400']).then((r) => JSON.parse(r.stdout))));
    const completed = outcomes.filter((o) => o.status === 'completed');
    const busy = outcomes.filter((o) => o.code === 'ERR_THREAD_BUSY');
    expect(completed).toHaveLength(1);
    expect(busy).toHaveLength(1);
    expect(new Set(completed[0].who).size, 'both steps ran in the winning process').toBe(1);

    const engine = sqlite(db);
    try {
      const positions = await engine.checkpointer.getPositions('t', '', { from: 0, to: 100 });
      expect(positions.map((p) => p.seq)).toEqual([0, 1, 2]);
      expect(positions.map((p) => p.parent)).toEqual([null, 0, 1]);
      expect((await verifyThread(engine.checkpointer, 't')).ok).toBe(true);
    } finally {
      await engine.close();
    }
  });
});
