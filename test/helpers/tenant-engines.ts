/**
 * The six engines the erasure tests run on: memory, SQLite and PostgreSQL, plain and
 * encrypted, with a `storeScope` that maps `['tenants', <t>, …]` to the tenant `<t>`.
 * Registers its own temp directory (one per test) and PostgreSQL schema.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import type { Engine } from '../../src/contracts/engine.js';
import { encrypted, keyFile, tenantScope } from '../../src/crypto/index.js';
import { memory } from '../../src/engines/memory/index.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { usePostgresSchema } from './postgres.js';

/** Store namespaces `['tenants', t, …]` belong to tenant t; the others to the shared `store` scope. */
export const tenantStoreScope = (ns: readonly string[]) => (ns[0] === 'tenants' && ns[1] ? tenantScope(ns[1]) : 'store');

export function useTenantEngines(prefix: string) {
  const pg = usePostgresSchema();
  let dir = '';
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), prefix));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));
  const seal = (engine: Engine) => encrypted(engine, { keys: keyFile(join(dir, 'keys.json')), storeScope: tenantStoreScope });
  const engines: [string, () => Promise<Engine>][] = [
    ['memory', async () => memory()],
    ['sqlite', async () => sqlite(join(dir, 'cairn.db'))],
    ['postgres', () => pg.engine()],
    ['encrypted memory', async () => seal(memory())],
    ['encrypted sqlite', async () => seal(sqlite(join(dir, 'cairn.db')))],
    ['encrypted postgres', async () => seal(await pg.engine())],
  ];
  return {
    pg,
    engines,
    seal,
    /** This test's temp directory (the SQLite engines' `cairn.db` is in it). */
    dir: () => dir,
  };
}
