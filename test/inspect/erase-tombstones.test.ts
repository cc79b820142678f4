/**
 * eraseTenant and the rows deleted store items leave: a deleted or expired item keeps a
 * row with its namespace, key and version (a tombstone), so that versions never go back.
 * The README says an erasure deletes the tenant's names from the live database; these
 * rows held them until now. On memory, SQLite and PostgreSQL, encrypted or not: the
 * tenant's namespaces (those with no live item left included) are gone, a key written
 * again starts at version 1, and the other tenant's tombstones stay. On SQLite the file and
 * its WAL hold none of the tenant's names after; on PostgreSQL no row of the table does.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Engine } from '../../src/contracts/engine.js';
import { memory } from '../../src/engines/memory/index.js';
import { NotSupportedError } from '../../src/errors.js';
import { eraseTenant } from '../../src/inspect/erase.js';
import { useTenantEngines } from '../helpers/tenant-engines.js';

const { pg, engines: ENGINES, dir } = useTenantEngines('cairn-erase-tomb-');

/** The names of a tenant's store rows: each one a canary a scan looks for. */
const names = (tenant: string) => ({
  live: ['tenants', tenant, `${tenant}-nsLiveCanary`],
  emptied: ['tenants', tenant, `${tenant}-nsEmptiedCanary`],
  liveKey: `${tenant}-keyLiveCanary`,
  deletedKey: `${tenant}-keyDeletedCanary`,
  expiredKey: `${tenant}-keyExpiredCanary`,
  onlyKey: `${tenant}-keyOnlyCanary`,
});

async function seed(engine: Engine, tenant: string): Promise<void> {
  const n = names(tenant);
  await engine.store.put(n.live, n.liveKey, { v: 1 });
  await engine.store.put(n.live, n.deletedKey, { v: 2 });
  await engine.store.delete(n.live, n.deletedKey);
  await engine.store.put(n.live, n.expiredKey, { v: 3 }, { ttlMs: 20 });
  await engine.store.put(n.emptied, n.onlyKey, { v: 4 });
  await engine.store.delete(n.emptied, n.onlyKey);
}

describe('eraseTenant leaves no name of the tenant\'s store rows in the live database', () => {
  for (const [name, make] of ENGINES) {
    it(`${name}: tombstones and emptied namespaces purged, the other tenant's kept`, async () => {
      const engine = await make();
      await seed(engine, 'A');
      await seed(engine, 'B');
      await new Promise((resolve) => setTimeout(resolve, 50));
      // Only the namespace with a live item is listed: the emptied one is there as a tombstone alone.
      expect(await engine.store.listNamespaces({ prefix: ['tenants', 'A'] })).toEqual([names('A').live]);

      const report = await eraseTenant(engine, { tenant: 'A', ...(name.startsWith('encrypted') ? {} : { store: [['tenants', 'A']] }) });
      expect(report.store).toMatchObject({ items: 1, tombstones: 3, namespaces: [names('A').emptied, names('A').live] });
      expect(report.notes.join('\n')).not.toMatch(/tombstones/);

      // Nothing of A is left: each key starts again at version 1. B's deleted keys go on from their versions.
      const a = names('A');
      for (const [ns, key] of [[a.live, a.liveKey], [a.live, a.deletedKey], [a.live, a.expiredKey], [a.emptied, a.onlyKey]] as const) {
        expect((await engine.store.put([...ns], key, 0)).version).toBe(1);
      }
      const b = names('B');
      expect(await engine.store.get(b.live, b.liveKey)).toMatchObject({ value: { v: 1 }, version: 1 });
      expect((await engine.store.put(b.emptied, b.onlyKey, 0)).version).toBe(2);
      for (const [ns, key] of [[a.live, a.liveKey], [a.live, a.deletedKey], [a.live, a.expiredKey], [a.emptied, a.onlyKey]] as const) await engine.store.delete([...ns], key);
      await eraseTenant(engine, { tenant: 'A', ...(name.startsWith('encrypted') ? {} : { store: [['tenants', 'A']] }) });

      if (name.endsWith('postgres')) {
        const { rows } = await pg.pool.query<{ ns: string; key: string }>(`SELECT ns, key FROM "${pg.schema}".cairn_store`);
        const stored = rows.map((r) => `${r.ns} ${r.key}`).join('\n');
        expect(stored).not.toMatch(/A-(ns|key)\w*Canary/);
        expect(stored).toMatch(/B-nsEmptiedCanary/);
      }
      await engine.close();
      if (name.endsWith('sqlite')) {
        const bytes = Buffer.concat([await readFile(join(dir(), 'cairn.db')), await readFile(join(dir(), 'cairn.db-wal')).catch(() => Buffer.alloc(0))]).toString('latin1');
        for (const canary of ['A-nsLiveCanary', 'A-nsEmptiedCanary', 'A-keyLiveCanary', 'A-keyDeletedCanary', 'A-keyExpiredCanary', 'A-keyOnlyCanary']) expect(bytes.includes(canary), canary).toBe(false);
        expect(bytes.includes('B-keyDeletedCanary')).toBe(true);
      }
    });
  }
});

describe('a store that cannot purge namespaces', () => {
  for (const [name, hide] of [
    ['without purgeNamespaces', () => undefined],
    ['with BaseStore\'s default (NotSupportedError)', () => async () => Promise.reject(new NotSupportedError('the custom store cannot purge namespaces.'))],
  ] as const) {
    it(`${name}: the items are deleted, and the report says their names stay as tombstones`, async () => {
      const engine = memory();
      const store = new Proxy(engine.store, {
        get: (target, prop) => (prop === 'purgeNamespaces' ? hide() : Reflect.get(target, prop, target)),
      });
      const custom: Engine = { ...engine, store, close: () => engine.close() } as Engine;
      await seed(custom, 'A');
      await new Promise((resolve) => setTimeout(resolve, 50));
      const report = await eraseTenant(custom, { tenant: 'A', store: [['tenants', 'A']] });
      expect(report.store).toMatchObject({ items: 1, tombstones: null, namespaces: [names('A').live] });
      expect(report.notes.join('\n')).toMatch(/cannot purge namespaces: the erased items' namespaces and keys stay in it as tombstones/);
      expect(await engine.store.list(['tenants', 'A'])).toEqual([]);
      await engine.close();
    });
  }
});
