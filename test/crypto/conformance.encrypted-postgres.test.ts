/**
 * The Checkpointer, Ledger and Store conformance suites on an encrypted PostgreSQL
 * engine: one schema for the file, emptied for each test, a key file per engine.
 */
import { rmSync } from 'node:fs';
import type { Engine } from '../../src/contracts/engine.js';
import { encrypted } from '../../src/crypto/index.js';
import { checkpointerSuite } from '../../src/testing/checkpointer.suite.js';
import { ledgerSuite } from '../../src/testing/ledger.suite.js';
import { storeSuite } from '../../src/testing/store.suite.js';
import { usePostgresSchema } from '../helpers/postgres.js';
import { freshKeys } from './encrypted-engines.js';

const pg = usePostgresSchema();
const dirs = new WeakMap<Engine, string>();

async function create(shared: boolean): Promise<Engine> {
  const { dir, keys } = freshKeys();
  const engine = encrypted(await pg.engine(shared ? { pool: pg.pool } : {}), { keys });
  dirs.set(engine, dir);
  return engine;
}

async function destroy(engine: Engine): Promise<void> {
  await engine.close();
  rmSync(dirs.get(engine)!, { recursive: true, force: true });
}

checkpointerSuite({ name: 'encrypted postgres', create: () => create(false), destroy });
ledgerSuite({ name: 'encrypted postgres', create: () => create(false), destroy });
storeSuite({ name: 'encrypted postgres', create: () => create(true), destroy });
