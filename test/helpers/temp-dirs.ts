/**
 * Temporary directories a test file makes (databases, artifact folders, the files of
 * the processes it spawns), removed when the file's tests are done, passed or failed.
 * Importing this module registers that `afterAll` in the importing test file (vitest
 * gives each test file its own copy of its modules), so a helper that makes folders
 * for its callers (crash-setup's `caseDir`) cleans up after every file that uses it.
 * A directory is removed once at the end rather than after its test: some files share
 * one between tests, and removal at the end costs the tests nothing while they run.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';

const made: string[] = [];

afterAll(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true, maxRetries: 3 });
});

/** A new empty directory under the OS's temp folder (`<tmp>/<prefix>XXXXXX`), removed after the file's tests. */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}

/** `<a new temp dir>/<name>`: a file path (a database) in a directory of its own, removed after the file's tests. */
export function tempFile(prefix: string, name: string): string {
  return join(tempDir(prefix), name);
}
