/**
 * Encryption at rest on PostgreSQL: after a run with recorded outputs, effects, store
 * writes, items and snapshots, a signal and a failure, no cell of any cairn table of
 * the schema holds the plaintext; the thread reads back and verifies.
 */
import { rmSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { encode } from '../../src/codec/tagged-json.js';
import { encrypted } from '../../src/crypto/index.js';
import { END, START, defineState, field, graph } from '../../src/index.js';
import { verifyThread } from '../../src/inspect/index.js';
import { usePostgresSchema } from '../helpers/postgres.js';
import { freshKeys } from './encrypted-engines.js';

const pg = usePostgresSchema();
const CANARY = 'canary-pg-41Lm';

const State = defineState({
  fields: { secret: field.model(z.string().optional()), notes: field.model(z.array(z.string()), { reduce: 'append', default: [] }), n: field.model(z.number(), { default: 0 }) },
});

describe('encrypted(postgres(...))', () => {
  it('leaves no plaintext of a run in any table of the schema', async () => {
    const { dir, keys } = freshKeys();
    const engine = encrypted(await pg.engine(), { keys });
    try {
      const app = graph(State)
        .node('step', async (s, ctx) => {
          const recorded = await ctx.record('lookup', () => `${CANARY}-record-${s.n}`);
          const sent = await ctx.effect('send', { idempotencyKey: `send-${s.n}`, run: () => `${CANARY}-effect-${s.n}` });
          await ctx.store.put(['prefs'], `k${s.n}`, { note: `${CANARY}-store-${s.n}` });
          return { secret: `${CANARY}-${recorded.length}-${sent.length}`, notes: [`${CANARY}-item-${s.n}`], n: s.n + 1 };
        })
        .edge(START, 'step')
        .conditionalEdge('step', (s) => (s.n < 3 ? 'step' : END))
        .compile({ engine, snapshotEvery: 2 });
      expect((await app.run({ thread: 'p1', tenant: 'acme' })).state.notes).toHaveLength(3);
      await engine.checkpointer.sendSignal('p1', { name: 'go', payload: encode(`${CANARY}-signal`) });
      const lease = await engine.checkpointer.acquireThread('p2', { owner: { runId: 'r', pid: process.pid, host: 'h' }, leaseMs: 60_000, create: { kind: 'task', tenant: null, metadata: {} } });
      await engine.checkpointer.putPendingWrite(lease, { ns: '', baseSeq: 0, task: 'x:0', body: JSON.stringify(`${CANARY}-pending`) });
      const error = { code: 'ERR_X', message: `${CANARY}-error`, at: Date.now() };
      await engine.checkpointer.updateThread(lease, { status: 'failed', lastError: error, failure: { ...error, ns: '' } });
      expect((await app.getState({ thread: 'p1' })).secret).toContain(CANARY);
      expect((await engine.store.list(['prefs'], { filter: { note: `${CANARY}-store-1` } })).map((i) => i.key)).toEqual(['k1']);
      expect((await verifyThread(engine, 'p1')).ok).toBe(true);

      const { rows: tables } = await pg.pool.query<{ table_name: string }>(`SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_type = 'BASE TABLE'`, [pg.schema]);
      expect(tables.length).toBeGreaterThan(8);
      let cells = '';
      for (const { table_name } of tables) {
        const { rows } = await pg.pool.query(`SELECT row_to_json(t)::text AS row FROM "${pg.schema}"."${table_name}" t`);
        cells += rows.map((r: { row: string }) => r.row).join('\n');
      }
      expect(cells).toContain('~c1:');
      expect(cells).not.toContain(CANARY);
    } finally {
      await engine.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
