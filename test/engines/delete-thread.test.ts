/**
 * deleteThread leaves nothing behind, counted in the database itself: on SQLite and
 * PostgreSQL, every row of every cairn table is read before a thread is created and
 * after it is deleted, and the two must be identical (so another thread's rows are
 * untouched and the deleted one's are all gone), while the thread in between had
 * rows in every table a thread owns: positions of two namespaces, items, snapshots,
 * a pending write, failures, ledger effects and records, pins (one unpinned).
 * Also the CLI: `cairn threads` filters, `cairn attempts`, `cairn delete-thread`.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Engine } from '../../src/contracts/engine.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { pinArtifact, unpinArtifact } from '../../src/inspect/gc.js';
import { defineState } from '../../src/state/schema.js';
import { field } from '../../src/state/fields.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import { usePostgresSchema } from '../helpers/postgres.js';
import { tmpFile } from '../runtime/engines.js';

const State = defineState({
  fields: {
    answer: field.model(z.string(), { default: '' }),
    trail: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
  },
});

const ref = (n: number) => ({ id: `sha256:${n.toString(16).padStart(64, '0')}`, sha256: n.toString(16).padStart(64, '0'), media_type: 'text/plain', size_bytes: n });

/**
 * Runs a thread into every table a thread owns: a recorded output and an effect, appended
 * items, a snapshot per position, then a superstep whose `bad` task fails (two attempts,
 * two failures) after its sibling `good` finished (a pending write), plus a position in a
 * child namespace and two thread pins, one of them unpinned again.
 */
async function populate(engine: Engine, threadId: string, salt: number): Promise<void> {
  const app = graph(State)
    .node('prepare', async (_s, c) => {
      const answer = await c.record('model', () => `answer ${threadId}`);
      await c.effect('send', { run: (key) => `sent ${key}` });
      return { answer, trail: ['prepare', 'more'] };
    })
    .node('good', () => ({ trail: ['good'] }))
    .node('bad', () => {
      throw new Error(`bad ${threadId}`);
    })
    .edge(START, 'prepare')
    .edge('prepare', 'good')
    .edge('prepare', 'bad')
    .edge('good', END)
    .edge('bad', END)
    .compile({ engine, snapshotEvery: 1, retry: { maxAttempts: 2, initialDelayMs: 0 } });
  await expect(app.run({ thread: threadId, tenant: 'acme', metadata: { salt } })).rejects.toMatchObject({ code: 'ERR_NODE_FAILED' });
  const lease = await engine.checkpointer.acquireThread(threadId, { owner: { runId: `child-${threadId}`, pid: process.pid, host: 'test' }, leaseMs: 60_000 });
  await engine.checkpointer.commitStep(lease, {
    position: { ns: 'parent|child:0', seq: 0, parent: null, segment: 0, step: 0, schemaVersion: 1, createdAt: Date.now(), body: '{"kind":"input"}', hash: 'cd'.repeat(32) },
    items: [{ field: 'trail', index: 0, text: '"child"' }],
    snapshot: '{"child":true}',
    status: 'failed',
    expectedHead: null,
  });
  await engine.checkpointer.releaseThread(lease);
  await pinArtifact(engine.store, ref(salt), 'kept while the thread lives', { thread: threadId });
  await pinArtifact(engine.store, ref(salt + 1), 'unpinned again', { thread: threadId });
  await unpinArtifact(engine.store, ref(salt + 1), { thread: threadId });
}

/** Tables a thread has rows in, by their name without the `cairn_` prefix. */
const THREAD_TABLES = ['threads', 'positions', 'items', 'snapshots', 'pending', 'failures', 'ledger', 'store'];

interface Dump {
  [table: string]: string[];
}

function grew(before: Dump, after: Dump): string[] {
  return THREAD_TABLES.filter((t) => after[`cairn_${t}`]!.length <= before[`cairn_${t}`]!.length);
}

describe('deleteThread on SQLite: every row of every table, before and after', () => {
  /** Every row of every cairn table but the migrations and the tid high-water mark, sorted. */
  function dump(path: string): Dump {
    const db = new Database(path, { readonly: true });
    try {
      const tables = (db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'cairn\\_%' ESCAPE '\\' ORDER BY name`).pluck().all() as string[]).filter(
        (t) => t !== 'cairn_migrations' && t !== 'cairn_thread_tids',
      );
      expect(tables).toEqual(expect.arrayContaining(THREAD_TABLES.map((t) => `cairn_${t}`)));
      return Object.fromEntries(tables.map((t) => [t, (db.prepare(`SELECT * FROM ${t}`).all() as object[]).map((r) => JSON.stringify(r)).sort()]));
    } finally {
      db.close();
    }
  }

  it('leaves every table exactly as it was before the thread, and never reuses its tid', async () => {
    const path = tmpFile();
    const engine = sqlite(path);
    try {
      await populate(engine, 'keep', 10);
      const before = dump(path);
      await populate(engine, 'doomed', 20);
      const during = dump(path);
      expect(grew(before, during)).toEqual([]);

      const result = await engine.checkpointer.deleteThread('doomed');
      expect(result).toMatchObject({ deleted: true, removed: { positions: 3, snapshots: 3, pendingWrites: 1, failures: 2, ledgerEntries: 2, pins: 1 } });
      expect(dump(path)).toEqual(before);

      const db = new Database(path, { readonly: true });
      const high = db.prepare('SELECT last FROM cairn_thread_tids').pluck().all() as number[];
      db.close();
      expect(high).toHaveLength(1);
      await populate(engine, 'next', 30);
      const db2 = new Database(path, { readonly: true });
      const tid = db2.prepare(`SELECT tid FROM cairn_threads WHERE id = 'next'`).pluck().get() as number;
      db2.close();
      expect(tid).toBeGreaterThan(high[0]!);
    } finally {
      await engine.close();
    }
  });

  it('cairn threads filters, cairn attempts and cairn delete-thread', async () => {
    const path = tmpFile();
    const engine = sqlite(path);
    await populate(engine, 'a-keep', 10);
    await populate(engine, 'b-doomed', 20);
    const lease = await engine.checkpointer.acquireThread('c-chat', {
      owner: { runId: 'r', pid: process.pid, host: 'test' },
      leaseMs: 60_000,
      create: { kind: 'conversation', tenant: 'globex', metadata: { queue: 'support', vip: true } },
    });
    await engine.checkpointer.releaseThread(lease);
    await engine.close();

    const root = join(import.meta.dirname, '../..');
    const cli = (args: string[]) => execFileSync(process.execPath, [join(root, 'dist/cli/main.js'), ...args, '--db', path], { encoding: 'utf8' });
    const ids = (args: string[]) => (JSON.parse(cli(['threads', ...args, '--json'])) as { id: string }[]).map((t) => t.id);
    expect(ids([])).toEqual(['a-keep', 'b-doomed', 'c-chat']);
    expect(ids(['--status', 'failed'])).toEqual(['a-keep', 'b-doomed']);
    expect(ids(['--status', 'completed,running'])).toEqual(['c-chat']);
    expect(ids(['--kind', 'conversation'])).toEqual(['c-chat']);
    expect(ids(['--tenant', 'acme'])).toEqual(['a-keep', 'b-doomed']);
    expect(ids(['--metadata', 'queue=support', '--metadata', 'vip=true'])).toEqual(['c-chat']);
    expect(ids(['--metadata', 'salt=20'])).toEqual(['b-doomed']);
    expect(ids(['--metadata', 'salt="20"'])).toEqual([]);
    expect(ids(['--since', '1h'])).toEqual(['a-keep', 'b-doomed', 'c-chat']);
    expect(ids(['--since', '2999-01-01'])).toEqual([]);
    expect(ids(['--after', 'a-keep', '--limit', '1'])).toEqual(['b-doomed']);
    expect(ids(['--order', 'updatedAt', '--limit', '1'])).toEqual(['c-chat']);
    expect(cli(['threads', '--status', 'failed'])).toMatch(/a-keep\s+failed\s+task\s+acme/);

    const story = JSON.parse(cli(['attempts', 'b-doomed', '--json'])) as { attempts: { attempt: number; outcome: string; node: string; error: { message: string } | null }[] };
    expect(story.attempts.map((a) => [a.attempt, a.outcome, a.node])).toEqual([
      [1, 'failed', 'bad'],
      [2, 'failed', 'bad'],
    ]);
    expect(story.attempts[1]!.error!.message).toBe('bad b-doomed');
    const table = cli(['attempts', 'b-doomed']);
    expect(table).toContain('thread b-doomed: failed, 2 attempts');
    expect(table).toMatch(/^#1\s+failed\s+bad\s+1\s/m);

    /** Output and exit status of a command expected to fail. */
    const refused = (args: string[]) => {
      const run = spawnSync(process.execPath, [join(root, 'dist/cli/main.js'), ...args, '--db', path], { encoding: 'utf8' });
      return { status: run.status, out: run.stdout + run.stderr };
    };
    expect(refused(['delete-thread', 'b-doomed', '--if-status', 'completed'])).toEqual({ status: 1, out: 'thread b-doomed is failed, not completed: nothing deleted\n' });
    expect(cli(['delete-thread', 'b-doomed'])).toMatch(/^deleted thread b-doomed: 3 positions, .* 1 pin \(artifacts/);
    expect(refused(['delete-thread', 'b-doomed'])).toEqual({ status: 1, out: 'no thread b-doomed: nothing deleted\n' });
    expect(ids([])).toEqual(['a-keep', 'c-chat']);
  });
});

describe('deleteThread on PostgreSQL: every row of every table, before and after', () => {
  const pg = usePostgresSchema();

  async function dump(): Promise<Dump> {
    const { rows } = await pg.pool.query<{ table_name: string }>(
      `SELECT table_name FROM information_schema.tables WHERE table_schema = $1 AND table_name LIKE 'cairn\\_%' AND table_name <> 'cairn_migrations' ORDER BY table_name`,
      [pg.schema],
    );
    const tables = rows.map((r) => r.table_name);
    expect(tables).toEqual(expect.arrayContaining(THREAD_TABLES.map((t) => `cairn_${t}`)));
    const out: Dump = {};
    for (const t of tables) out[t] = (await pg.pool.query(`SELECT * FROM "${pg.schema}".${t}`)).rows.map((r) => JSON.stringify(r)).sort();
    return out;
  }

  it('leaves every table exactly as it was before the thread', async () => {
    const engine = await pg.engine();
    try {
      await populate(engine, 'keep', 10);
      const before = await dump();
      await populate(engine, 'doomed', 20);
      expect(grew(before, await dump())).toEqual([]);
      const result = await engine.checkpointer.deleteThread('doomed');
      expect(result).toMatchObject({ deleted: true, removed: { positions: 3, snapshots: 3, pendingWrites: 1, failures: 2, ledgerEntries: 2, pins: 1 } });
      expect(await dump()).toEqual(before);
    } finally {
      await engine.close();
    }
  });

  it('a delete racing the dead holder\'s late commit and ledger write: whichever order, nothing is left behind', async () => {
    const engine = await pg.engine();
    try {
      await populate(engine, 'keep', 10);
      const before = await dump();
      for (let round = 0; round < 10; round++) {
        const id = `race-${round}`;
        const cp = engine.checkpointer;
        const stale = await cp.acquireThread(id, { owner: { runId: `r${round}`, pid: 1, host: 'elsewhere' }, leaseMs: 30, create: { kind: 'task', tenant: null, metadata: {} } });
        await new Promise((resolve) => setTimeout(resolve, 60));
        const late = { threadId: id, key: 'late', kind: 'record' as const, name: 'x', ns: '', seq: 0, node: 'n', task: 'n:0', call: 0, argsDigest: null, createdAt: 1, outcome: '1' };
        const position = { ns: '', seq: 0, parent: null, segment: 0, step: 0, schemaVersion: 1, createdAt: Date.now(), body: '{}', hash: 'ab'.repeat(32) };
        const outcomes = await Promise.allSettled([
          cp.commitStep(stale, { position, items: [{ field: 'f', index: 0, text: '1' }], snapshot: '{}', status: 'running', expectedHead: null }),
          engine.ledger.writeRecord(late),
          cp.deleteThread(id),
        ]);
        expect(outcomes[2]).toMatchObject({ status: 'fulfilled', value: { deleted: true } });
        expect(await dump()).toEqual(before);
      }
    } finally {
      await engine.close();
    }
  });
});
