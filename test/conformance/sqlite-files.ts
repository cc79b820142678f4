/**
 * What every SQLite conformance run needs: an engine on a fresh database file per
 * test, and its removal afterwards.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Engine } from '../../src/contracts/engine.js';
import { sqlite } from '../../src/engines/sqlite/index.js';

const dirs = new WeakMap<Engine, string>();

export const sqliteOnFreshFiles = {
  name: 'sqlite',
  create: (): Engine => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-'));
    const engine = sqlite(join(dir, 'cairn.db'));
    dirs.set(engine, dir);
    return engine;
  },
  destroy: async (engine: Engine): Promise<void> => {
    await engine.close();
    rmSync(dirs.get(engine)!, { recursive: true, force: true });
  },
};
