/**
 * Encrypted engines for the conformance runs: `encrypted(sqlite(fresh file))` and
 * `encrypted(postgres(...))`, each with a key file of its own in a temp directory.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Engine } from '../../src/contracts/engine.js';
import { encrypted, keyFile } from '../../src/crypto/index.js';
import { sqlite } from '../../src/engines/sqlite/index.js';

const dirs = new WeakMap<Engine, string>();

/** A fresh temp directory with a key file path in it. */
export function freshKeys(): { dir: string; keys: ReturnType<typeof keyFile>; path: string } {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-enc-'));
  const path = join(dir, 'keys.json');
  return { dir, keys: keyFile(path), path };
}

export const encryptedSqliteOnFreshFiles = {
  name: 'encrypted sqlite',
  create: (): Engine => {
    const { dir, keys } = freshKeys();
    const engine = encrypted(sqlite(join(dir, 'cairn.db')), { keys });
    dirs.set(engine, dir);
    return engine;
  },
  destroy: async (engine: Engine): Promise<void> => {
    await engine.close();
    rmSync(dirs.get(engine)!, { recursive: true, force: true });
  },
};
