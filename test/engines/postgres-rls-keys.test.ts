/**
 * Encryption at rest under PostgreSQL row-level security: a tenant's data keys (its
 * wrapped key rows and the row naming its current key) are the tenant's rows, so a
 * real NOBYPASSRLS role connected as another tenant can neither read, change nor
 * delete them, even with SQL of its own, and the tenant reads on. Key rows as cairn
 * wrote them before (shared, keyed by the key id) still open, and rewrap (`cairn keys
 * rotate`) moves them into the tenant's rows. Erasure run through a tenant's engine
 * destroys that tenant's keys and rows and reaches no other tenant's.
 */
import { copyFileSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createHash, randomBytes } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Engine } from '../../src/contracts/engine.js';
import { CURRENT_KEY_NS, DATA_KEYS_NS, SHARED_STORE_SCOPE, encrypted, keyFile, tenantScope, type KeyProvider } from '../../src/crypto/index.js';
import { postgres, TENANT_TABLES } from '../../src/engines/postgres/index.js';
import { KeyUnavailableError } from '../../src/errors.js';
import { defineState, END, field, graph, START } from '../../src/index.js';
import { eraseTenant } from '../../src/inspect/index.js';
import { cairn } from '../cli/run-cli.js';
import { PG_URL, usePostgresSchema } from '../helpers/postgres.js';
import { useRestrictedRole } from '../helpers/rls-role.js';

const db = usePostgresSchema();
const role = useRestrictedRole(db);
const s = () => `"${db.schema}"`;

/** The victim: a tenant whose name needs URI-encoding in its rows' keys. */
const GLOBEX = 'Globex & Söhne/2';
const ENCODED_GLOBEX = encodeURIComponent(GLOBEX);

const keysDir = mkdtempSync(join(tmpdir(), 'cairn-rls-keys-'));
const keyPath = join(keysDir, 'keys.json');
afterAll(() => rmSync(keysDir, { recursive: true, force: true }));

/** A tenant's store rows (`['tenant', t, ...]`) are sealed for the tenant's scope, so that erasing it reaches them. */
const storeScope = (ns: readonly string[]) => (ns[0] === 'tenant' && ns[1] ? tenantScope(ns[1]) : SHARED_STORE_SCOPE);

/** The engine of one tenant's work: the restricted role with `cairn.tenant` set, encrypted. A fresh keyring (nothing cached) each time. */
function tenantEngine(tenant: string, keys: KeyProvider = keyFile(keyPath)): Engine {
  return encrypted(postgres(role.url, { schema: db.schema, tenant, max: 2 }), { keys, storeScope });
}

const State = defineState({ fields: { topic: field.model(z.string()), secret: field.model(z.string(), { default: '' }) } });

function appOn(engine: Engine) {
  return graph(State)
    .node('write', async (st, ctx) => {
      const secret = `${st.topic}: card ending 4242`;
      await ctx.store.put(['tenant', ctx.store.principal!, 'notes'], st.topic, { secret });
      return { secret };
    })
    .edge(START, 'write')
    .edge('write', END)
    .compile({ engine, name: 'rls-keys' });
}

async function runThread(engine: Engine, thread: string) {
  const result = await appOn(engine).run({ thread, input: { topic: thread } });
  expect(result.state.secret).toBe(`${thread}: card ending 4242`);
}

/** What `tenant` reads back of `threads` on a fresh engine: each thread's secret and its store note. */
async function readBack(tenant: string, threads: string[], keys?: KeyProvider): Promise<string[]> {
  const engine = tenantEngine(tenant, keys);
  try {
    const out: string[] = [];
    for (const thread of threads) {
      out.push((await appOn(engine).getState({ thread })).secret);
      out.push(((await engine.store.get(['tenant', tenant, 'notes'], thread))?.value as { secret: string }).secret);
    }
    return out;
  } finally {
    await engine.close();
  }
}
const expected = (threads: string[]) => threads.flatMap((t) => [`${t}: card ending 4242`, `${t}: card ending 4242`]);

const KEY_NAMESPACES = ['data-keys', 'data-key-current', 'tenant-keys'].map((n) => `cairn\u001f${n}\u001f`);

interface KeyRow {
  ns: string;
  key: string;
  tenant: string | null;
  value: { scope: string; keyId?: string; legacy?: string[] };
}

/** Every keyring row, as the superuser (who bypasses the policies) sees it, with the tenant the policy gives it. */
async function keyRows(): Promise<KeyRow[]> {
  const { rows } = await db.pool.query(
    `SELECT split_part(ns, E'\\x1f', 2) AS ns, key, ${s()}.cairn_store_tenant(ns, key) AS tenant, value FROM ${s()}.cairn_store WHERE ns = ANY($1) AND NOT deleted ORDER BY ns, key`,
    [KEY_NAMESPACES],
  );
  return rows.map((r: { ns: string; key: string; tenant: string | null; value: string }) => ({ ...r, value: JSON.parse(r.value) }));
}

/** The key id a thread's first position is sealed under. */
async function sealedUnder(thread: string): Promise<string> {
  const { rows } = await db.pool.query(`SELECT p.body FROM ${s()}.cairn_positions p JOIN ${s()}.cairn_threads t ON t.tid = p.tid WHERE t.id = $1 ORDER BY p.seq LIMIT 1`, [thread]);
  const body = rows[0].body as string;
  expect(body.startsWith('~c1:')).toBe(true);
  return body.slice(4, body.indexOf(':', 4));
}

/** Statements run by the restricted role as `tenant` and committed; their row counts. */
async function committedAs(tenant: string, sql: (string | [string, unknown[]])[]): Promise<(number | null)[]> {
  const client = await role.pool.connect();
  try {
    await client.query('BEGIN');
    await client.query(`SELECT set_config('cairn.tenant', $1, true)`, [tenant]);
    const counts: (number | null)[] = [];
    for (const statement of sql) counts.push((typeof statement === 'string' ? await client.query(statement) : await client.query(statement[0], statement[1])).rowCount);
    await client.query('COMMIT');
    return counts;
  } catch (error) {
    await client.query('ROLLBACK');
    throw error;
  } finally {
    client.release();
  }
}

/** Rows of `tenant` in every table the policies cover, by table. */
async function rowsOf(tenant: string): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const table of TENANT_TABLES) {
    // A store delete leaves a tombstone (the key, value null): not a row of the tenant's data.
    const where = table === 'cairn_store' ? `${s()}.cairn_store_tenant(ns, key) = $1 AND NOT deleted` : table === 'cairn_store_overwrites' ? `${s()}.cairn_store_tenant(ns, key) = $1` : 'tenant = $1';
    out[table] = (await db.pool.query(`SELECT count(*)::int AS n FROM ${s()}.${table} WHERE ${where}`, [tenant])).rows[0].n;
  }
  return out;
}

/** Rows as cairn wrote them before keys were owned: a shared key row keyed by its id, and the scope's shared current-key row. */
async function plantOldKey(scope: string, keyId: string): Promise<void> {
  const plain = postgres(PG_URL, { schema: db.schema, max: 1 });
  try {
    const wrapped = await keyFile(keyPath).wrapKey(scope, randomBytes(32));
    await plain.store.put(DATA_KEYS_NS, keyId, { scope, createdAt: Date.now(), ...wrapped });
    await plain.store.put(CURRENT_KEY_NS, createHash('sha256').update(scope).digest('hex').slice(0, 40), { scope, keyId });
  } finally {
    await plain.close();
  }
}

describe('encryption at rest under row-level security: a tenant\'s keys are its rows', () => {
  it('a tenant role cannot read, change or delete another tenant\'s key rows, even with its own SQL; the other tenant reads on', async () => {
    await db.empty();
    const acme = tenantEngine('acme');
    const globex = tenantEngine(GLOBEX);
    try {
      await runThread(acme, 'a-1');
      await runThread(globex, 'g-1');
      await runThread(globex, 'g-2');
      await globex.encryption!.keyring.rotateDataKey(tenantScope(GLOBEX));
      await runThread(globex, 'g-3');
    } finally {
      await acme.close();
      await globex.close();
    }

    // Every key row of a tenant scope is that tenant's row; its sealed rows name a key carrying the tenant's tag.
    const before = await keyRows();
    for (const row of before.filter((r) => r.value.scope.startsWith('tenant:'))) expect(row.tenant, `${row.ns} ${row.key}`).toBe(row.value.scope.slice('tenant:'.length));
    const globexRows = before.filter((r) => r.tenant === GLOBEX);
    expect(globexRows.filter((r) => r.ns === 'data-keys')).toHaveLength(2);
    expect(globexRows.filter((r) => r.ns === 'tenant-keys').map((r) => r.key)).toEqual([`tenant:${ENCODED_GLOBEX}/current`]);
    const globexKeyId = await sealedUnder('g-1');
    expect(globexKeyId).toMatch(/^tk-[0-9a-f]{16}-[A-Za-z0-9_-]{12}$/);
    expect(globexRows.map((r) => r.key)).toContain(`tenant:${ENCODED_GLOBEX}/${globexKeyId}`);
    expect(await sealedUnder('g-3')).not.toBe(globexKeyId);

    // Hand-written SQL as acme: globex's key rows are invisible, untouchable, and cannot be written or moved into.
    const globexKeys = globexRows.map((r) => r.key);
    const store = `${s()}.cairn_store`;
    const seen = await role.asTenant('acme', async (c) => (await c.query(`SELECT key, ${s()}.cairn_store_tenant(ns, key) AS tenant FROM ${store} WHERE ns = ANY($1)`, [KEY_NAMESPACES])).rows);
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.filter((r: { tenant: string | null }) => r.tenant !== 'acme' && r.tenant !== null)).toEqual([]);
    const touched = await role.asTenant('acme', async (c) => ({
      read: (await c.query(`SELECT 1 FROM ${store} WHERE key = ANY($1)`, [globexKeys])).rowCount,
      updated: (await c.query(`UPDATE ${store} SET value = '"gone"' WHERE key = ANY($1)`, [globexKeys])).rowCount,
      deleted: (await c.query(`DELETE FROM ${store} WHERE key = ANY($1)`, [globexKeys])).rowCount,
      all: (await c.query(`DELETE FROM ${store} WHERE ns = ANY($1)`, [KEY_NAMESPACES])).rowCount,
    }));
    expect(touched).toEqual({ read: 0, updated: 0, deleted: 0, all: before.filter((r) => r.tenant === 'acme' || r.tenant === null).length });
    const rls = '42501';
    const insert = (ns: string, key: string, conflict = '') =>
      `INSERT INTO ${store} (ns, key, value, version, created_at, updated_at) VALUES (E'cairn\\x1f${ns}\\x1f', '${key}', '{"scope":"tenant:acme","keyId":"tk-evil"}', 1, 0, 0) ${conflict}`;
    expect(await role.refusal('acme', insert('data-keys', `tenant:${ENCODED_GLOBEX}/tk-evil`))).toBe(rls);
    expect(await role.refusal('acme', insert('tenant-keys', `tenant:${ENCODED_GLOBEX}/current`, 'ON CONFLICT (ns, key) DO UPDATE SET value = excluded.value'))).toBe(rls);
    expect(await role.refusal('acme', `UPDATE ${store} SET key = 'tenant:${ENCODED_GLOBEX}/current' WHERE key = 'tenant:acme/current'`)).toBe(rls);
    // Nor through acme's engine: its keyring does not find globex's keys.
    const acmeAgain = tenantEngine('acme');
    try {
      await expect(acmeAgain.encryption!.keyring.keyById(globexKeyId)).rejects.toSatisfy((e: unknown) => KeyUnavailableError.is(e));
      expect(await acmeAgain.encryption!.keyring.listKeys(tenantScope(GLOBEX))).toEqual([]);
      expect((await acmeAgain.encryption!.keyring.listKeys()).map((k) => k.scope).filter((scope) => scope.startsWith('tenant:'))).toEqual(['tenant:acme']);
    } finally {
      await acmeAgain.close();
    }

    // acme commits its attempts; globex's rows are as they were and it reads everything back.
    expect(await committedAs('acme', [[`DELETE FROM ${store} WHERE key = ANY($1)`, [globexKeys]], [`UPDATE ${store} SET value = '"gone"' WHERE key = ANY($1)`, [globexKeys]]])).toEqual([0, 0]);
    expect((await keyRows()).filter((r) => r.tenant === GLOBEX)).toEqual(globexRows);
    expect(await readBack(GLOBEX, ['g-1', 'g-2', 'g-3'])).toEqual(expected(['g-1', 'g-2', 'g-3']));

    // Shared current-key rows (as cairn kept them before) planted by acme for tenants that have no key yet: one naming
    // a key that does not exist, one naming the shared `store` scope's key. Neither becomes the tenant's current key.
    const storeKeyId = before.find((r) => r.ns === 'data-keys' && r.value.scope === SHARED_STORE_SCOPE)!.key;
    const plant = (tenant: string, keyId: string): [string, unknown[]] => [
      `INSERT INTO ${store} (ns, key, value, version, created_at, updated_at) VALUES (E'cairn\\x1fdata-key-current\\x1f', $1, $2, 1, 0, 0)`,
      [createHash('sha256').update(tenantScope(tenant)).digest('hex').slice(0, 40), JSON.stringify({ scope: tenantScope(tenant), keyId })],
    ];
    expect(await committedAs('acme', [plant('hooli', 'dk-planted0001'), plant('initrode', storeKeyId)])).toEqual([1, 1]);
    for (const tenant of ['hooli', 'initrode']) {
      const engine = tenantEngine(tenant);
      try {
        await runThread(engine, `${tenant}-1`);
      } finally {
        await engine.close();
      }
      expect(await sealedUnder(`${tenant}-1`)).toMatch(/^tk-/);
      expect(await readBack(tenant, [`${tenant}-1`])).toEqual(expected([`${tenant}-1`]));
    }
  });

  it('key rows written before keys were owned still open; rewrap, by the tenant\'s own engine or `cairn keys rotate`, moves them into the tenant\'s rows', async () => {
    await db.empty();
    await plantOldKey(tenantScope('acme'), 'dk-oldAcme0001');
    await plantOldKey(tenantScope(GLOBEX), 'dk-oldGlobex001');
    expect((await keyRows()).map((r) => [r.ns, r.key, r.tenant])).toEqual([
      ['data-key-current', expect.any(String), null],
      ['data-key-current', expect.any(String), null],
      ['data-keys', 'dk-oldAcme0001', null],
      ['data-keys', 'dk-oldGlobex001', null],
    ]);
    // A database written before: new writes keep using the scope's current (shared) key, and read back.
    for (const [tenant, thread] of [['acme', 'a-old'], [GLOBEX, 'g-old']] as const) {
      const engine = tenantEngine(tenant);
      try {
        await runThread(engine, thread);
      } finally {
        await engine.close();
      }
    }
    expect(await sealedUnder('a-old')).toBe('dk-oldAcme0001');
    expect(await sealedUnder('g-old')).toBe('dk-oldGlobex001');
    expect(await readBack('acme', ['a-old'])).toEqual(expected(['a-old']));
    expect(await readBack(GLOBEX, ['g-old'])).toEqual(expected(['g-old']));

    // acme's own engine, under the policies, moves acme's old rows; the key keeps its id and stays current.
    const acme = tenantEngine('acme');
    try {
      expect(await acme.encryption!.keyring.rewrap(tenantScope('acme'))).toBe(1);
      expect(await acme.encryption!.keyring.rewrap(tenantScope('acme'))).toBe(0);
      await runThread(acme, 'a-moved');
      await acme.encryption!.keyring.rotateDataKey(tenantScope('acme'));
      await runThread(acme, 'a-new');
    } finally {
      await acme.close();
    }
    expect(await sealedUnder('a-moved')).toBe('dk-oldAcme0001');
    expect(await sealedUnder('a-new')).toMatch(/^tk-/);
    const acmeRows = (await keyRows()).filter((r) => r.value.scope === 'tenant:acme');
    expect(acmeRows.map((r) => [r.ns, r.key, r.tenant])).toEqual([
      ['data-keys', 'tenant:acme/dk-oldAcme0001', 'acme'],
      ['data-keys', `tenant:acme/${await sealedUnder('a-new')}`, 'acme'],
      ['tenant-keys', 'tenant:acme/current', 'acme'],
    ]);
    expect(acmeRows[2]!.value).toEqual({ scope: 'tenant:acme', keyId: await sealedUnder('a-new'), legacy: ['dk-oldAcme0001'] });
    expect(await readBack('acme', ['a-old', 'a-moved', 'a-new'])).toEqual(expected(['a-old', 'a-moved', 'a-new']));

    // The CLI (a cross-tenant role) rotates every scope's KEK and moves globex's old rows too.
    const rotate = await cairn(['keys', 'rotate', '--db', `${PG_URL}#${db.schema}`, '--keys', keyPath, '--json']);
    expect(rotate.stderr).toBe('');
    const rotated = JSON.parse(rotate.stdout).rotated as { scope: string; rewrapped: number }[];
    expect(rotated.filter((r) => r.scope.startsWith('tenant:')).map((r) => [r.scope, r.rewrapped])).toEqual([
      [tenantScope(GLOBEX), 1],
      ['tenant:acme', 2],
    ]);
    const rows = await keyRows();
    expect(rows.filter((r) => r.tenant === null && r.value.scope.startsWith('tenant:'))).toEqual([]);
    expect(rows.filter((r) => r.tenant === GLOBEX).map((r) => [r.ns, r.key, r.value.keyId ?? null])).toEqual([
      ['data-keys', `tenant:${ENCODED_GLOBEX}/dk-oldGlobex001`, null],
      ['tenant-keys', `tenant:${ENCODED_GLOBEX}/current`, 'dk-oldGlobex001'],
    ]);

    // A shared row brought back under a moved id (any tenant may write one: the move left a tombstone) is not taken for the key.
    expect(
      await committedAs('acme', [
        `UPDATE ${s()}.cairn_store SET deleted = false, value = '{"scope":"store","createdAt":0,"kekId":"kek-x","wrapped":"AAAA"}' WHERE ns = E'cairn\\x1fdata-keys\\x1f' AND key = 'dk-oldGlobex001'`,
      ]),
    ).toEqual([1]);
    const keys = keyFile(keyPath); // the KEKs the CLI rotated
    expect(await readBack(GLOBEX, ['g-old'], keys)).toEqual(expected(['g-old']));
    const globex = tenantEngine(GLOBEX, keys);
    try {
      await runThread(globex, 'g-after');
    } finally {
      await globex.close();
    }
    expect(await sealedUnder('g-after')).toBe('dk-oldGlobex001');
    expect(await readBack(GLOBEX, ['g-old', 'g-after'], keys)).toEqual(expected(['g-old', 'g-after']));
    expect(await readBack('acme', ['a-old', 'a-moved', 'a-new'], keys)).toEqual(expected(['a-old', 'a-moved', 'a-new']));
  });

  it('eraseTenant and app.erase through a tenant\'s engine destroy that tenant\'s keys and rows, and reach no other tenant\'s', async () => {
    await db.empty();
    const keys = keyFile(keyPath);
    for (const [tenant, threads] of [['acme', ['a-1', 'a-2']], ['initech', ['i-1']], [GLOBEX, ['g-1', 'g-2']]] as const) {
      const engine = tenantEngine(tenant, keys);
      try {
        for (const thread of threads) await runThread(engine, thread);
      } finally {
        await engine.close();
      }
    }
    const globexBefore = await rowsOf(GLOBEX);
    const globexKeys = (await keyRows()).filter((r) => r.tenant === GLOBEX);
    expect(globexBefore.cairn_threads).toBe(2);
    expect(globexKeys.length).toBe(2);

    const acme = tenantEngine('acme', keys);
    const initech = tenantEngine('initech', keys);
    try {
      const report = await eraseTenant(acme, { tenant: 'acme' });
      // The tenant's role owns no table: VACUUM would skip them all with a warning, and the report says so.
      expect(report.files!.done).toEqual([`VACUUM of 0 cairn tables in schema ${db.schema}`]);
      expect(report.files!.remains[0]).toMatch(/^not vacuumed: cairn_.*\(this role may not vacuum them: run VACUUM as their owner\)/);
      expect(report).toMatchObject({ threads: ['a-1', 'a-2'], store: { items: 2 }, keys: { encrypted: true, providerDestroys: true, scopes: ['tenant:acme'], destroyed: 1 } });
      const viaApp = await appOn(initech).erase({ tenant: 'initech', vacuum: false });
      expect(viaApp).toMatchObject({ threads: ['i-1'], store: { items: 1 }, keys: { scopes: ['tenant:initech'], destroyed: 1 } });
    } finally {
      await acme.close();
      await initech.close();
    }
    for (const tenant of ['acme', 'initech']) {
      expect(Object.values(await rowsOf(tenant)).reduce((a, b) => a + b), tenant).toBe(0);
      expect((await keyRows()).filter((r) => r.value.scope === tenantScope(tenant)), tenant).toEqual([]);
      expect(Object.keys(JSON.parse(readFileSync(keyPath, 'utf8')).scopes)).not.toContain(tenantScope(tenant));
    }
    expect(await rowsOf(GLOBEX)).toEqual(globexBefore);
    expect(await readBack(GLOBEX, ['g-1', 'g-2'], keys)).toEqual(expected(['g-1', 'g-2']));

    // acme's engine erasing globex (with every KEK, in a copy of the key file it may destroy) finds nothing of globex's to delete.
    const stolen = join(keysDir, 'stolen.json');
    copyFileSync(keyPath, stolen);
    const attacker = tenantEngine('acme', keyFile(stolen));
    try {
      const report = await eraseTenant(attacker, { tenant: GLOBEX, vacuum: false });
      expect(report).toMatchObject({ threads: [], store: { items: 0 }, keys: { destroyed: 0 } });
    } finally {
      await attacker.close();
    }
    expect(await rowsOf(GLOBEX)).toEqual(globexBefore);
    expect((await keyRows()).filter((r) => r.tenant === GLOBEX)).toEqual(globexKeys);
    expect(await readBack(GLOBEX, ['g-1', 'g-2'], keys)).toEqual(expected(['g-1', 'g-2']));
  });
});
