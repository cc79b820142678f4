/** The Store conformance suite on the SQLite engine: a fresh database file per test, removed after it. */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Engine } from '../../src/contracts/engine.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { storeSuite } from '../../src/testing/store.suite.js';

const dirs = new WeakMap<Engine, string>();

storeSuite({
  name: 'sqlite',
  create: () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-'));
    const engine = sqlite(join(dir, 'cairn.db'));
    dirs.set(engine, dir);
    return engine;
  },
  destroy: async (engine) => {
    await engine.close();
    rmSync(dirs.get(engine)!, { recursive: true, force: true });
  },
});
