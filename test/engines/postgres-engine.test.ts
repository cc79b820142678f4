/**
 * The PostgreSQL engine around its contracts: opening (migrations once under
 * concurrent openers, a schema from newer code refused, an unreachable server
 * reported with what to do, and retried by the next call), pool ownership on
 * close, lazy loading of `pg`, and the `inside-snapshot` crash point dying
 * inside the commit's transaction, before anything is durable.
 */
import { spawnSync } from 'node:child_process';
import { hostname } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { migrate, postgres, POSTGRES_MIGRATIONS, type PgQueryConfig, type PoolLike } from '../../src/engines/postgres/index.js';
import { DatabaseFromFutureError, EngineClosedError, EngineError, InvalidKeyError } from '../../src/errors.js';
import { PG_URL, usePostgresSchema } from '../helpers/postgres.js';
import { linearPosition } from '../helpers/positions.js';

const db = usePostgresSchema();
const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const create = { kind: 'task' as const, tenant: null, metadata: {} };

/** Runs an ES module script under tsx in a fresh Node process (so `src/` imports resolve), with extra env. */
function child(script: string, env: Record<string, string> = {}) {
  return spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: root,
    env: { ...process.env, ...env },
    encoding: 'utf8',
    timeout: 60_000,
  });
}

/** Drops a schema made by one test, whatever happened. */
async function dropSchema(name: string): Promise<void> {
  await db.pool.query(`DROP SCHEMA IF EXISTS "${name}" CASCADE`);
}

describe('PostgreSQL engine: opening, closing, failing', () => {
  it('applies migrations once when eight engines open a new schema at the same moment', async () => {
    const schema = `${db.schema}_open`;
    const engines = Array.from({ length: 8 }, () => postgres(PG_URL, { schema, max: 2 }));
    try {
      await Promise.all(engines.map((engine) => engine.checkpointer.getThread('none')));
      const { rows } = await db.pool.query(`SELECT id FROM "${schema}".cairn_migrations ORDER BY id`);
      expect(rows.map((r: { id: number }) => r.id)).toEqual(POSTGRES_MIGRATIONS.map((m) => m.id));
      expect(await migrate(db.pool, schema)).toEqual([]);
    } finally {
      await Promise.all(engines.map((engine) => engine.close()));
      await dropSchema(schema);
    }
  });

  it('refuses a schema migrated by newer code, saying what to do', async () => {
    const schema = `${db.schema}_future`;
    try {
      await migrate(db.pool, schema);
      await db.pool.query(`INSERT INTO "${schema}".cairn_migrations (id, name, applied_at) VALUES (999, 'from the future', 0)`);
      const engine = postgres(db.pool, { schema });
      const error = await engine.checkpointer.getThread('t').catch((e: unknown) => e);
      expect(DatabaseFromFutureError.is(error)).toBe(true);
      expect((error as Error).message).toMatch(/newer cairn \(migration 999 "from the future"/);
      expect((error as Error).message).toMatch(/Upgrade cairn/);
      await engine.close();
    } finally {
      await dropSchema(schema);
    }
  });

  it('reports an unreachable server as EngineError with the fix and the driver error as cause', async () => {
    const engine = postgres('postgres://postgres@127.0.0.1:1/test', { schema: db.schema });
    const error = await engine.store.get(['a'], 'k').catch((e: unknown) => e);
    expect(EngineError.is(error)).toBe(true);
    expect((error as Error).message).toMatch(/^\[cairn\] \[postgres\] opening schema .* failed \(ECONNREFUSED\): .*PostgreSQL is running\.$/);
    expect((error as Error & { cause?: { code?: string } }).cause?.code).toBe('ECONNREFUSED');
    await engine.close();
  });

  it('retries opening on the next call after a failed open', async () => {
    // Opening itself tries 4 times on a lost connection; fail all of them.
    // (The first statement of each try fails: a current schema is checked on the pool, without a connection of its own.)
    let failures = 4;
    const refused = () => Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    const flaky: PoolLike = {
      query: async (config: PgQueryConfig) => {
        if (failures-- > 0) throw refused();
        return db.pool.query(config);
      },
      connect: async () => {
        if (failures-- > 0) throw refused();
        return db.pool.connect();
      },
      end: async () => undefined,
    };
    const engine = postgres(flaky, { schema: db.schema });
    await expect(engine.checkpointer.getThread('t')).rejects.toSatisfy((e) => EngineError.is(e));
    expect(await engine.checkpointer.getThread('t')).toBeNull();
    await engine.close();
  });

  it('wraps a failing statement in EngineError naming its purpose, with the driver error as cause', async () => {
    await db.empty();
    const engine = await db.engine({ pool: db.pool });
    try {
      // A NUL cannot be stored in PostgreSQL text: the server refuses the statement.
      const error = await engine.ledger.writeIntent({
        threadId: 't',
        key: 'k\u0000',
        kind: 'effect',
        name: 'n',
        ns: '',
        seq: 0,
        node: 'n',
        task: 'n:0',
        call: 0,
        argsDigest: null,
        createdAt: 0,
      }).catch((e: unknown) => e);
      expect(EngineError.is(error)).toBe(true);
      expect((error as Error).message).toMatch(/^\[cairn\] \[postgres\] ledger\.write failed \(22021\): /);
      expect((error as Error & { cause?: { code?: string } }).cause?.code).toBe('22021');
    } finally {
      await engine.close();
    }
  });

  it('rejects a schema name that is not a plain identifier before connecting', () => {
    for (const schema of ['', 'a-b', 'x"; DROP TABLE t; --', '1abc', 'a'.repeat(64)]) {
      expect(() => postgres(PG_URL, { schema })).toThrow(expect.objectContaining({ code: InvalidKeyError.code }));
    }
  });

  it('close() ends the pool it created from a URL, and leaves a pool it was given open', async () => {
    const shared = new pg.Pool({ connectionString: PG_URL, max: 2 });
    try {
      const onShared = postgres(shared, { schema: db.schema });
      await onShared.checkpointer.listThreads();
      await onShared.close();
      expect((await shared.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
      await expect(onShared.checkpointer.listThreads()).rejects.toSatisfy((e) => EngineClosedError.is(e));

      // Tagged so that engines of other test files running meanwhile are not counted.
      const tag = `${db.schema}_owned`;
      const owned = postgres(`${PG_URL}${PG_URL.includes('?') ? '&' : '?'}application_name=${tag}`, { schema: db.schema, max: 3 });
      await Promise.all([owned.checkpointer.listThreads(), owned.store.list([]), owned.ledger.list('t')]);
      expect(await backends(tag)).toBeGreaterThan(0);
      await owned.close();
      // The server sees the engine's connections go (a closed backend may linger a moment).
      for (let i = 0; i < 50 && (await backends(tag)) > 0; i++) await new Promise((r) => setTimeout(r, 20));
      expect(await backends(tag)).toBe(0);
    } finally {
      await shared.end();
    }
  });

  it("loads pg only on an engine's first query: not on import, not on postgres(url)", () => {
    const run = child(`
      import { createRequire } from 'node:module';
      const require = createRequire(import.meta.url);
      const loaded = () => Object.keys(require.cache).some((k) => k.includes('/node_modules/pg/'));
      const { postgres } = await import('./src/engines/postgres/index.ts');
      const afterImport = loaded();
      const engine = postgres(${JSON.stringify(PG_URL)}, { schema: ${JSON.stringify(db.schema)} });
      const afterCreate = loaded();
      await engine.checkpointer.getThread('x');
      const afterQuery = loaded();
      await engine.close();
      console.log(JSON.stringify({ afterImport, afterCreate, afterQuery }));
    `);
    expect(run.status, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout.trim())).toEqual({ afterImport: false, afterCreate: false, afterQuery: true });
  });

  it('dies at inside-snapshot inside the commit: nothing of the step is durable, and a successor extends the old head', async () => {
    await db.empty();
    const engine = await db.engine({ pool: db.pool });
    try {
      const first = await engine.checkpointer.acquireThread('t1', { owner: { runId: 'first', pid: 4242, host: 'x.remote.invalid' }, leaseMs: 60_000, create });
      await engine.checkpointer.commitStep(first, { position: position(0), items: [], status: 'running', expectedHead: null });
      await engine.checkpointer.releaseThread(first);

      const run = child(
        `
        import { hostname } from 'node:os';
        const { postgres } = await import('./src/engines/postgres/index.ts');
        const engine = postgres(${JSON.stringify(PG_URL)}, { schema: ${JSON.stringify(db.schema)} });
        const cp = engine.checkpointer;
        const lease = await cp.acquireThread('t1', { owner: { runId: 'doomed', pid: process.pid, host: hostname() }, leaseMs: 600000 });
        await cp.putPendingWrite(lease, { ns: '', baseSeq: 0, task: 'a:0', body: '{}' });
        await cp.commitStep(lease, {
          position: ${JSON.stringify(position(1))},
          items: [{ field: 'm', index: 0, text: '"lost"' }],
          snapshot: '{"lost":true}',
          status: 'completed',
          expectedHead: 0,
        });
        console.log('survived');
      `,
        { CAIRN_CRASH_AT: 'inside-snapshot' },
      );
      expect(run.signal, run.stderr).toBe('SIGKILL');
      expect(run.stderr).toContain('crash point inside-snapshot reached');
      expect(run.stdout).not.toContain('survived');

      const cp = engine.checkpointer;
      expect(await cp.getPosition('t1', '', 1)).toBeNull();
      expect(await cp.getItems('t1', '', 'm', [{ from: 0, to: 9 }])).toEqual([]);
      expect(await cp.getSnapshot('t1', '', [{ from: 0, to: 9 }])).toBeNull();
      expect(await cp.getPendingWrites('t1', '', 0)).toHaveLength(1);
      // The dead holder was on this host: its successor takes over at once.
      const next = await cp.acquireThread('t1', { owner: { runId: 'next', pid: process.pid, host: hostname() }, leaseMs: 60_000 });
      expect(next.thread).toMatchObject({ head: 0, status: 'running' });
      await cp.commitStep(next, { position: position(1), items: [], snapshot: '{"s":1}', status: 'completed', expectedHead: 0 });
      expect(await cp.getThread('t1')).toMatchObject({ head: 1, status: 'completed' });
    } finally {
      await engine.close();
    }
  });
});

function position(seq: number) {
  return linearPosition(seq, `{"seq":${seq}}`);
}

/** Server connections whose application_name is `tag`. */
async function backends(tag: string): Promise<number> {
  const { rows } = await db.pool.query({ text: 'SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1', values: [tag] });
  return (rows[0] as { n: number }).n;
}
