/**
 * eraseTenant and the overwrite records of `lastWins` namespaces: each keeps the value a
 * write replaced. Erasing the tenant whose namespaces they are deletes them with the
 * items, on memory, SQLite (the file and its WAL hold none of them after) and
 * PostgreSQL, encrypted or not; another tenant's are kept. A namespace under a named
 * prefix whose only item a lastWins delete removed is not listed any more, and its
 * records go too.
 *
 * Tombstones: an item deleted before the erasure (or by it) leaves a row that keeps its
 * namespace and key. The erasure purges those rows, so no name of the tenant's store
 * rows stays in the live database (test/inspect/erase-tombstones.test.ts).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Engine } from '../../src/contracts/engine.js';
import { memory } from '../../src/engines/memory/index.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { eraseTenant } from '../../src/inspect/erase.js';
import { useTenantEngines } from '../helpers/tenant-engines.js';

const { engines: ENGINES, seal, dir } = useTenantEngines('cairn-erase-ow-');

/** Overwrite records keeping replaced values: a conflicting put in one namespace, a conflicting delete in another. */
async function overwrite(engine: Engine, tenant: string): Promise<void> {
  const ns = ['tenants', tenant, 'notes'];
  engine.store.declare(ns, { merge: 'lastWins' });
  const first = await engine.store.put(ns, 'n', { text: `${tenant}-first-canary` });
  await engine.store.put(ns, 'n', { text: `${tenant}-second-canary` });
  await engine.store.put(ns, 'n', { text: `${tenant}-third-canary` }, { ifVersion: first.version });
  // A namespace left with no live item: a lastWins delete keeps the value it removed.
  const gone = ['tenants', tenant, 'gone'];
  engine.store.declare(gone, { merge: 'lastWins' });
  const item = await engine.store.put(gone, 'g', { text: `${tenant}-gone-canary` });
  await engine.store.put(gone, 'g', { text: `${tenant}-gone-canary-2` });
  await engine.store.delete(gone, 'g', { ifVersion: item.version });
}

describe('eraseTenant deletes the overwrite records of the erased namespaces', () => {
  for (const [name, make] of ENGINES) {
    it(`${name}: the tenant's replaced values are gone, the other tenant's kept`, async () => {
      const engine = await make();
      await overwrite(engine, 'A');
      await overwrite(engine, 'B');
      expect(await engine.store.listOverwrites(['tenants', 'A'])).toHaveLength(2);
      expect(await engine.store.listNamespaces({ prefix: ['tenants', 'A'] })).toEqual([['tenants', 'A', 'notes']]);

      // On SQLite, VACUUM drops the older versions of updated items from pages' free space: what is left of A is what was not deleted.
      const report = await eraseTenant(engine, { tenant: 'A', store: [['tenants', 'A']], ...(name.endsWith('sqlite') ? { vacuum: true } : {}) });
      // The namespace with no live item left is purged too: its tombstone and its overwrite record.
      expect(report.store).toMatchObject({ items: 1, tombstones: 1, overwrites: 2, namespaces: [['tenants', 'A', 'gone'], ['tenants', 'A', 'notes']] });
      expect(await engine.store.listOverwrites(['tenants', 'A'])).toEqual([]);
      const kept = await engine.store.listOverwrites(['tenants', 'B']);
      expect(kept.map((r) => (r.overwritten?.value as { text: string }).text).sort()).toEqual(['B-gone-canary-2', 'B-second-canary']);
      await engine.close();
      if (name.endsWith('sqlite') && !name.startsWith('encrypted')) {
        const bytes = Buffer.concat([await readFile(join(dir(), 'cairn.db')), await readFile(join(dir(), 'cairn.db-wal')).catch(() => Buffer.alloc(0))]);
        expect(bytes.includes('A-second-canary')).toBe(false);
        expect(bytes.includes('A-gone-canary-2')).toBe(false);
        expect(bytes.includes('B-second-canary')).toBe(true);
      }
    });
  }

  it('without a named prefix, the namespaces storeScope maps to the tenant lose their records too', async () => {
    const engine = seal(sqlite(join(dir(), 'cairn.db')));
    await overwrite(engine, 'A');
    const report = await eraseTenant(engine, { tenant: 'A' });
    expect(report.store).toMatchObject({ items: 1, tombstones: 1, namespaces: [['tenants', 'A', 'gone'], ['tenants', 'A', 'notes']] });
    expect(report.store.overwrites).toBeGreaterThanOrEqual(1);
    // Before, the records stayed sealed under the destroyed key: listing them threw KeyUnavailableError.
    await expect(engine.store.listOverwrites(['tenants', 'A', 'notes'])).resolves.toEqual([]);
    await engine.close();
  });

  it('purgeOverwrites checks its namespace and options', async () => {
    const engine = memory();
    await expect(engine.store.purgeOverwrites!([], { under: true })).rejects.toThrow(/empty prefix/);
    await expect(engine.store.purgeOverwrites!(['a'], { under: 'yes' as never })).rejects.toThrow(/under must be/);
    await expect(engine.store.purgeOverwrites!(['a\u0000'])).rejects.toThrow(/namespace label/);
    // A misspelt `under` would purge the one namespace and leave the ones under it.
    await expect(engine.store.purgeOverwrites!(['a'], { undr: true } as never)).rejects.toThrow(/purgeOverwrites: unknown option "undr" \(options: under\)/);
    await engine.close();
  });
});
