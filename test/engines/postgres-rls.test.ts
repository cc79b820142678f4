/**
 * Tenant isolation on a shared PostgreSQL (row-level security, opt-in): with the
 * policies on, a role without BYPASSRLS, connected as a tenant, sees and writes
 * that tenant's rows of every cairn table and nothing else, even with hand-written
 * SQL; with no tenant set it sees nothing. The tenant's engine (`postgres(url,
 * { tenant })`) runs, resumes and lists its threads as usual, refuses another
 * tenant's threads with a typed error, and on a pool passed in leaves no tenant
 * on the connections it gives back. The role is a real NOBYPASSRLS one
 * (test/helpers/rls-role.ts).
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineState, END, field, graph, START } from '../../src/index.js';
import type { Engine } from '../../src/contracts/engine.js';
import {
  disableRowLevelSecurity,
  enableRowLevelSecurity,
  postgres,
  rowLevelSecurityStatus,
  TENANT_TABLES,
} from '../../src/engines/postgres/index.js';
import { TenantMismatchError } from '../../src/errors.js';
import { createPool } from '../../src/engines/postgres/driver.js';
import { cairn } from '../cli/run-cli.js';
import { PG_URL, usePostgresSchema } from '../helpers/postgres.js';
import { useRestrictedRole } from '../helpers/rls-role.js';

const db = usePostgresSchema();
const restricted = useRestrictedRole(db);
const roleUrl = restricted.url;
const { asTenant, refusal } = restricted;

const State = defineState({
  fields: {
    topic: field.model(z.string()),
    draft: field.model(z.string(), { default: '' }),
    log: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
    side: field.model(z.string(), { default: '' }),
  },
});

/** A small graph that fills every table a thread owns: records and effects (ledger), a store write, a retried failure, parallel tasks (pending writes), an interrupt. */
function appOn(engine: Engine) {
  const failedOnce = new Set<string>();
  return graph(State)
    .node('write', async (s, ctx) => {
      const draft = await ctx.record('model', async () => `${s.topic}, take ${s.log.length + 1}`);
      await ctx.store.put(['tenant', ctx.store.principal ?? 'none', 'drafts'], s.topic, { draft });
      return { draft, log: [draft] };
    })
    .node('side', async (s, ctx) => {
      if (!failedOnce.has(ctx.threadId)) {
        failedOnce.add(ctx.threadId);
        throw new Error('flaky once');
      }
      return { side: `side of ${s.topic}` };
    })
    .node('review', async (s, ctx) => {
      const ok = await ctx.interrupt({ draft: s.draft }, { answer: z.boolean() });
      return { log: [ok ? 'approved' : 'rejected'] };
    })
    .edge(START, 'write')
    .edge(START, 'side')
    .edge('write', 'review')
    .edge('side', 'review')
    .edge('review', END)
    .compile({ engine, name: 'rls', snapshotEvery: 1, retry: { maxAttempts: 2, initialDelayMs: 1 } });
}

/** Runs one thread of `tenant` to its interrupt, resumes it to the end, and sends it a signal. */
async function runThread(engine: Engine, thread: string, tenant?: string) {
  const app = appOn(engine);
  const paused = await app.run({ thread, input: { topic: thread }, ...(tenant ? { tenant } : {}) });
  expect(paused.status).toBe('interrupted');
  const done = await app.resume({ thread, answer: true, actor: 'ana' });
  expect(done.status).toBe('completed');
  expect(done.state.log).toEqual([`${thread}, take 1`, 'approved']);
  await app.signal(thread, 'poke', { n: 1 });
  return app;
}

/** A pending write left on `thread` (a finished sibling of a task that failed): the step commit that would fold it never comes. */
async function leavePending(engine: Engine, thread: string) {
  const lease = await engine.checkpointer.acquireThread(thread, { owner: { runId: randomUUID(), pid: process.pid, host: 'rls-test' }, leaseMs: 10_000 });
  await engine.checkpointer.putPendingWrite(lease, { ns: '', baseSeq: lease.thread.head!, task: 'sibling', body: '{}' });
  await engine.checkpointer.releaseThread(lease);
}

/** A thread of one position whose commit carries an item pack (as an encrypted engine's every 64 positions). */
async function leavePack(engine: Engine, thread: string) {
  const lease = await engine.checkpointer.acquireThread(thread, { owner: { runId: randomUUID(), pid: process.pid, host: 'rls-test' }, leaseMs: 10_000, create: { kind: 'task', tenant: null, metadata: {} } });
  const position = { ns: '', seq: 0, parent: null, segment: 0, step: 0, schemaVersion: 1, createdAt: Date.now(), body: '{}', hash: 'b'.repeat(64) };
  await engine.checkpointer.commitStep(lease, { position, items: [{ field: 'm', index: 0, text: '1' }], status: 'completed', expectedHead: null, packs: [{ field: 'm', fromSeq: 0, toSeq: 0, count: 1, text: '1' }] });
  await engine.checkpointer.releaseThread(lease);
}

let admin: pg.Pool;
let asRole: pg.Pool;
const s = () => `"${db.schema}"`;

beforeAll(async () => {
  admin = db.pool;
  asRole = restricted.pool;
  // The helper enabled the policies; enabling again is safe, and reports the tables.
  const report = await enableRowLevelSecurity(admin, { schema: db.schema });
  expect(report.tables).toEqual([...TENANT_TABLES]);
});

describe('PostgreSQL row-level security: tenants of one schema', () => {
  it('a tenant role sees and writes only its tenant\'s rows of every table, and nothing without a tenant; the engine API works as usual', async () => {
    await db.empty();
    await admin.query(`DELETE FROM ${s()}.cairn_signals`);
    const acme = postgres(roleUrl, { schema: db.schema, tenant: 'acme', max: 2 });
    const globex = postgres(roleUrl, { schema: db.schema, tenant: 'globex', max: 2 });
    try {
      // A thread created without a tenant on a tenant's engine is the tenant's.
      const acmeApp = await runThread(acme, 'acme-1');
      await runThread(acme, 'acme-2', 'acme');
      await runThread(globex, 'globex-1');
      await leavePending(acme, 'acme-2');
      await leavePending(globex, 'globex-1');
      await leavePack(acme, 'acme-packed');
      await leavePack(globex, 'globex-packed');
      // A write over a version it did not see, in a lastWins namespace: an overwrite record.
      for (const [engine, tenant, thread] of [[acme, 'acme', 'acme-1'], [globex, 'globex', 'globex-1']] as const) {
        engine.store.declare(['tenant', tenant, 'drafts'], { merge: 'lastWins' });
        await engine.store.put(['tenant', tenant, 'drafts'], thread, { draft: 'overwritten' }, { ifVersion: 0 });
      }
      await acme.store.put(['shared', 'notes'], 'hello', { from: 'acme' });

      // Every table holds rows of both tenants (read by the superuser, who bypasses the policies).
      const tenantOf = (table: string) => (table.startsWith('cairn_store') ? `${s()}.cairn_store_tenant(ns, key)` : 'tenant');
      const counts = new Map<string, Record<string, number>>();
      for (const table of TENANT_TABLES) {
        const { rows } = await admin.query(`SELECT coalesce(${tenantOf(table)}, '(shared)') AS tenant, count(*)::int AS n FROM ${s()}.${table} GROUP BY 1`);
        const byTenant = Object.fromEntries(rows.map((r: { tenant: string; n: number }) => [r.tenant, r.n]));
        counts.set(table, byTenant);
        expect(byTenant.acme ?? 0, `${table} has acme rows: ${JSON.stringify(byTenant)}`).toBeGreaterThan(0);
        expect(byTenant.globex ?? 0, `${table} has globex rows: ${JSON.stringify(byTenant)}`).toBeGreaterThan(0);
      }

      for (const table of TENANT_TABLES) {
        const expected = counts.get(table)!;
        // As acme: acme's rows (and the store's shared ones), never globex's.
        const seen = await asTenant('acme', async (c) => (await c.query(`SELECT ${tenantOf(table)} AS tenant FROM ${s()}.${table}`)).rows as { tenant: string | null }[]);
        expect(seen.filter((r) => r.tenant === 'acme').length, table).toBe(expected.acme);
        expect(seen.filter((r) => r.tenant !== 'acme' && r.tenant !== null), table).toEqual([]);
        expect(seen.filter((r) => r.tenant === null).length, table).toBe(expected['(shared)'] ?? 0);
        // No tenant set, or one that ended with its transaction (the session then says ''): nothing at all.
        expect(await asTenant(null, async (c) => (await c.query(`SELECT count(*)::int AS n FROM ${s()}.${table}`)).rows[0].n), table).toBe(0);
      }
      const leftover = await asRole.connect();
      try {
        await leftover.query(`BEGIN; SELECT set_config('cairn.tenant', 'acme', true); COMMIT`);
        expect((await leftover.query(`SELECT current_setting('cairn.tenant', true) AS t`)).rows[0].t).toBe('');
        for (const table of TENANT_TABLES) expect((await leftover.query(`SELECT count(*)::int AS n FROM ${s()}.${table}`)).rows[0].n, table).toBe(0);
      } finally {
        leftover.release();
      }

      // Writes: another tenant's rows are out of reach (invisible to UPDATE and DELETE, refused on INSERT or when moved there).
      const [{ tid: globexTid }] = (await admin.query(`SELECT tid FROM ${s()}.cairn_threads WHERE id = 'globex-1'`)).rows;
      const rls = '42501';
      expect(await refusal('acme', `INSERT INTO ${s()}.cairn_threads (id, kind, status, tenant, metadata, created_at, updated_at) VALUES ('g2', 'task', 'running', 'globex', '{}', 0, 0)`)).toBe(rls);
      expect(await refusal('acme', `INSERT INTO ${s()}.cairn_threads (id, kind, status, tenant, metadata, created_at, updated_at) VALUES ('n2', 'task', 'running', NULL, '{}', 0, 0)`)).toBe(rls);
      expect(await refusal(null, `INSERT INTO ${s()}.cairn_threads (id, kind, status, tenant, metadata, created_at, updated_at) VALUES ('n3', 'task', 'running', 'acme', '{}', 0, 0)`)).toBe(rls);
      expect(await refusal('acme', `UPDATE ${s()}.cairn_threads SET tenant = 'globex' WHERE id = 'acme-1'`)).toBe(rls);
      // A row under globex's thread, whatever tenant it claims.
      const position = `INSERT INTO ${s()}.cairn_positions (tid, tenant, ns, seq, parent, segment, step, schema_version, created_at, body, hash) VALUES ($1, $2, '', 99, 98, 0, 0, 1, 0, '{}', '\\x00')`;
      expect(await refusal('acme', position, [globexTid, 'acme'])).toBe(rls);
      expect(await refusal('acme', position, [globexTid, 'globex'])).toBe(rls);
      expect(await refusal('acme', `INSERT INTO ${s()}.cairn_store (ns, key, value, version, created_at, updated_at) VALUES (E'tenant\\x1fglobex\\x1f', 'k', '1', 1, 0, 0)`)).toBe(rls);
      expect(await refusal(null, `INSERT INTO ${s()}.cairn_store (ns, key, value, version, created_at, updated_at) VALUES (E'shared\\x1f', 'k', '1', 1, 0, 0)`)).toBe(rls);
      const touched = await asTenant('acme', async (c) => {
        const updated = await c.query(`UPDATE ${s()}.cairn_threads SET status = 'failed' WHERE tenant = 'globex' OR id = 'globex-1'`);
        const deleted = await c.query(`DELETE FROM ${s()}.cairn_ledger WHERE tid = $1`, [globexTid]);
        const all = await c.query(`DELETE FROM ${s()}.cairn_positions`);
        return { updated: updated.rowCount, deleted: deleted.rowCount, all: all.rowCount };
      });
      expect(touched).toEqual({ updated: 0, deleted: 0, all: counts.get('cairn_positions')!.acme });

      // The engine API, as the tenant: its threads only, another tenant's refused with a typed error.
      expect((await acme.checkpointer.listThreads()).map((t) => [t.id, t.tenant])).toEqual([
        ['acme-1', 'acme'],
        ['acme-2', 'acme'],
        ['acme-packed', 'acme'],
      ]);
      expect(await acme.checkpointer.getThread('globex-1')).toBeNull();
      const foreign = await acmeApp.run({ thread: 'globex-1', input: { topic: 'x' } }).catch((e: unknown) => e);
      expect(TenantMismatchError.is(foreign)).toBe(true);
      expect(foreign).toMatchObject({ code: 'ERR_TENANT_MISMATCH', threadId: 'globex-1', engineTenant: 'acme', threadTenant: undefined });
      const other = await acmeApp.run({ thread: 'acme-9', input: { topic: 'x' }, tenant: 'globex' }).catch((e: unknown) => e);
      expect(other).toMatchObject({ code: 'ERR_TENANT_MISMATCH', threadTenant: 'globex' });
      expect(await acme.checkpointer.getThread('acme-9')).toBeNull();
      expect((await acmeApp.getState({ thread: 'acme-1' })).log).toEqual(['acme-1, take 1', 'approved']);
      expect(await acme.store.get(['tenant', 'globex', 'drafts'], 'globex-1')).toBeNull();
      expect((await acme.store.get(['tenant', 'acme', 'drafts'], 'acme-1'))?.value).toEqual({ draft: 'overwritten' });
      expect((await acme.store.listOverwrites(['tenant'])).map((o) => o.namespace)).toEqual([['tenant', 'acme', 'drafts']]);
      expect((await globex.store.get(['shared', 'notes'], 'hello'))?.value).toEqual({ from: 'acme' });
      const deleted = await acme.checkpointer.deleteThread('globex-1');
      expect(deleted).toMatchObject({ deleted: false, reason: 'missing' });

      // The cross-tenant engine (a superuser here; a BYPASSRLS role in production) sees both.
      const all = postgres(admin, { schema: db.schema });
      expect((await all.checkpointer.listThreads()).map((t) => t.id)).toEqual(['acme-1', 'acme-2', 'acme-packed', 'globex-1', 'globex-packed']);
      await all.close();

      // A tenant's worker claims its tenant's runnable threads only.
      await appOn(globex).submit({ thread: 'globex-3', input: { topic: 'globex-3' } });
      await acmeApp.submit({ thread: 'acme-3', input: { topic: 'acme-3' } });
      const claimed = await acme.checkpointer.claimThreads!({ owner: { runId: randomUUID(), pid: process.pid, host: 'rls-test' }, leaseMs: 10_000, limit: 10 });
      expect(claimed.map((lease) => lease.threadId)).toEqual(['acme-3']);
    } finally {
      await acme.close();
      await globex.close();
    }
  });

  it('on a pool passed in, every statement sets its tenant in its own transaction: the connections go back without it', async () => {
    await db.empty();
    const shared = new pg.Pool({ connectionString: roleUrl, max: 2 });
    shared.on('error', () => undefined);
    // Quotes, a backslash and spaces survive both ways of setting the tenant.
    const odd = `O'Brien \\ Sons`;
    const a = postgres(shared, { schema: db.schema, tenant: 'acme' });
    const b = postgres(shared, { schema: db.schema, tenant: odd });
    const owned = postgres(roleUrl, { schema: db.schema, tenant: odd, max: 1 });
    try {
      // Interleaved on two connections: each statement carries its own engine's tenant.
      await Promise.all([runThread(a, 'a-1'), runThread(b, 'b-1'), runThread(a, 'a-2')]);
      expect((await a.checkpointer.listThreads()).map((t) => t.id)).toEqual(['a-1', 'a-2']);
      expect((await b.checkpointer.listThreads()).map((t) => [t.id, t.tenant])).toEqual([['b-1', odd]]);
      expect((await owned.checkpointer.listThreads()).map((t) => t.id)).toEqual(['b-1']);
      // Startup options the URL gives are kept beside the tenant's.
      const raw = createPool(`${roleUrl}?options=${encodeURIComponent('-c statement_timeout=12345')}`, 1, 'rls-test', { 'cairn.tenant': odd });
      try {
        const { rows } = await raw.query({ text: `SELECT current_setting('statement_timeout') AS timeout, current_setting('cairn.tenant') AS tenant` });
        expect(rows[0]).toEqual({ timeout: '12345ms', tenant: odd });
      } finally {
        await raw.end();
      }
      for (let i = 0; i < 2; i++) {
        const client = await shared.connect();
        try {
          expect([null, '']).toContain((await client.query(`SELECT current_setting('cairn.tenant', true) AS t`)).rows[0].t);
          expect((await client.query(`SELECT count(*)::int AS n FROM ${s()}.cairn_positions`)).rows[0].n).toBe(0);
        } finally {
          client.release();
        }
      }
    } finally {
      await a.close();
      await b.close();
      await owned.close();
      await shared.end();
    }
  });

  it("a step commit's effects are written under the policies: ledger rows of the thread's tenant, seen by it alone", async () => {
    await db.empty();
    const acme = postgres(roleUrl, { schema: db.schema, tenant: 'acme', max: 1 });
    const globex = postgres(roleUrl, { schema: db.schema, tenant: 'globex', max: 1 });
    try {
      const lease = await acme.checkpointer.acquireThread('acme-fx', {
        owner: { runId: randomUUID(), pid: process.pid, host: 'rls-test' },
        leaseMs: 10_000,
        create: { kind: 'task', tenant: 'acme', metadata: {} },
      });
      const effect = { threadId: 'acme-fx', key: 'n:0#0', kind: 'effect' as const, name: 'send', ns: '', seq: 0, node: 'n', task: 'n:0', call: 0, argsDigest: null, createdAt: 1, outcome: '"sent"', completedAt: 2 };
      const position = { ns: '', seq: 0, parent: null, segment: 0, step: 0, schemaVersion: 1, createdAt: 1, body: '{}', hash: 'ab'.repeat(32) };
      await acme.checkpointer.commitStep(lease, { position, items: [], status: 'running', expectedHead: null, effects: [effect] });
      expect(await acme.ledger.get('acme-fx', 'n:0#0')).toMatchObject({ status: 'done', outcome: '"sent"', completedAt: 2 });
      expect(await globex.ledger.get('acme-fx', 'n:0#0')).toBeNull();
      const { rows } = await admin.query(`SELECT tenant, status FROM ${s()}.cairn_ledger`);
      expect(rows).toEqual([{ tenant: 'acme', status: 'done' }]);
    } finally {
      await acme.close();
      await globex.close();
    }
  });

  it('a tenant\'s engine refuses another tenant\'s thread even where the policies do not hide it', async () => {
    await db.empty();
    // The superuser bypasses row-level security: the engine's own check is what refuses.
    const globex = postgres(PG_URL, { schema: db.schema, tenant: 'globex', max: 1 });
    const acme = postgres(PG_URL, { schema: db.schema, tenant: 'acme', max: 1 });
    try {
      await runThread(globex, 'g-1');
      const app = appOn(acme);
      await expect(app.run({ thread: 'g-1', input: { topic: 'x' } })).rejects.toMatchObject({ code: 'ERR_TENANT_MISMATCH', threadTenant: 'globex', engineTenant: 'acme' });
      await expect(acme.checkpointer.deleteThread('g-1')).rejects.toMatchObject({ code: 'ERR_TENANT_MISMATCH' });
      expect((await globex.checkpointer.getThread('g-1'))?.status).toBe('completed');
    } finally {
      await acme.close();
      await globex.close();
    }
  });

  it('enabling again fills in the tenant of rows that lack it; disabling and enabling report the state', async () => {
    await db.empty();
    const acme = postgres(roleUrl, { schema: db.schema, tenant: 'acme', max: 1 });
    try {
      await runThread(acme, 'old-1');
      // Rows as an older cairn wrote them: no tenant. The tenant's role no longer sees them.
      const cleared = await admin.query(`UPDATE ${s()}.cairn_positions SET tenant = NULL RETURNING 1`);
      expect(await acme.checkpointer.getHead('old-1', '')).not.toBeNull();
      expect(await acme.checkpointer.getPosition('old-1', '', 0)).toBeNull();
      const report = await enableRowLevelSecurity(admin, { schema: db.schema });
      expect(report.backfilled).toBe(cleared.rowCount);
      expect(await acme.checkpointer.getPosition('old-1', '', 0)).not.toBeNull();
      expect(await rowLevelSecurityStatus(admin, { schema: db.schema })).toBe('on');
      await disableRowLevelSecurity(admin, { schema: db.schema });
      expect(await rowLevelSecurityStatus(admin, { schema: db.schema })).toBe('off');
      // Off: the role sees every row, whatever its tenant.
      expect(await asTenant(null, async (c) => (await c.query(`SELECT count(*)::int AS n FROM ${s()}.cairn_threads`)).rows[0].n)).toBe(1);
    } finally {
      await enableRowLevelSecurity(admin, { schema: db.schema });
      await acme.close();
    }
  });

  it("names a store row's tenant from its namespace, or from a tenant: key in cairn's own namespaces; a malformed one is shared, never an error", async () => {
    const cases: [string[], string, string | null][] = [
      [['tenant', 'acme', 'prefs'], 'k', 'acme'],
      [['tenant', 'O\'Brien & Sons'], 'k', "O'Brien & Sons"],
      [['cairn', 'artifact-pins'], `tenant:${encodeURIComponent('ünï côde/x')}/key:report#thread:00`, 'ünï côde/x'],
      [['cairn', 'data-keys'], 'tenant:acme/k1', 'acme'],
      [['cairn', 'artifact-pins'], 'sha256:ab', null],
      [['cairn', 'artifact-pins'], 'tenant:%FF%FE/key:x', null],
      [['cairn', 'graphs', 'rls'], 'digest', null],
      [['shared'], 'tenant:acme/x', null],
      [['tenantish', 'acme'], 'k', null],
    ];
    for (const [namespace, key, tenant] of cases) {
      const ns = namespace.join('\u001f') + '\u001f';
      const { rows } = await admin.query(`SELECT ${s()}.cairn_store_tenant($1, $2) AS tenant`, [ns, key]);
      expect(rows[0].tenant, `${namespace.join('/')} ${key}`).toBe(tenant);
    }
    await db.empty();
    // acme may not write a pin on globex's artifact.
    expect(await refusal('acme', `INSERT INTO ${s()}.cairn_store (ns, key, value, version, created_at, updated_at) VALUES (E'cairn\\x1fartifact-pins\\x1f', 'tenant:globex/key:x', '1', 1, 0, 0)`)).toBe('42501');
  });

  it('cairn migrate --row-level-security creates or upgrades the schema and turns isolation on; on SQLite it says what it is for', async () => {
    const schema = `${db.schema}_cli`;
    try {
      const run = await cairn(['migrate', '--row-level-security', '--db', `${PG_URL}#${schema}`, '--json']);
      expect(run.stderr).toBe('');
      expect(JSON.parse(run.stdout)).toMatchObject({ outcome: 'created', rowLevelSecurity: { tables: [...TENANT_TABLES], backfilled: 0 } });
      expect(await rowLevelSecurityStatus(admin, { schema })).toBe('on');
      const sqlite = await cairn(['migrate', '--row-level-security', '--db', './nowhere.db']);
      expect(sqlite.code).toBe(2);
      expect(sqlite.stderr).toContain('--row-level-security is for PostgreSQL');
    } finally {
      await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    }
  });
});
