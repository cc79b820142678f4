/**
 * A SQLite database and artifact folder holding the worked example's thread `cust_42`,
 * made once before a CLI test file's tests and removed after them: what the commands
 * under test read.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { fsArtifacts } from '../../src/artifacts/fs/index.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { workedExample } from '../../src/testing/worked-example.js';

export interface WorkedDb {
  dir: string;
  db: string;
  artifacts: string;
}

/** Registers the hooks; `made` receives the paths once the run is stored (before the file's first test). */
export function useWorkedExampleDb(prefix: string, made: (files: WorkedDb) => void): void {
  let dir: string | undefined;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), prefix));
    const files = { dir, db: join(dir, 'cairn.db'), artifacts: join(dir, 'artifacts') };
    const engine = sqlite(files.db);
    await workedExample({ engine, artifacts: fsArtifacts(files.artifacts) }).run({ thread: 'cust_42', input: { customerId: 'cust_42' } });
    await engine.close();
    made(files);
  });
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });
}
