/**
 * A listing cut at its --limit says so: `threads` and `history` print, on stderr (stdout
 * stays the table), how to get the next page (`--after <id>`, `--before-seq <seq>`), so
 * 100 threads of 150 are never taken for all of them. A page that holds the rest says
 * nothing; --json prints only the page.
 */
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { fsArtifacts } from '../../src/artifacts/fs/index.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { workedExample } from '../../src/testing/worked-example.js';
import { tempDir } from '../helpers/temp-dirs.js';
import { cairn } from './run-cli.js';

const dir = tempDir('cairn-cli-paging-');
const db = join(dir, 'cairn.db');

beforeAll(async () => {
  const engine = sqlite(db);
  const app = workedExample({ engine, artifacts: fsArtifacts(join(dir, 'artifacts')) });
  for (const thread of ['cust_1', 'cust_2', 'cust_3']) await app.run({ thread, input: { customerId: thread } });
  await engine.close();
});

describe('a page cut at --limit', () => {
  it('threads: names the next page on stderr; the last page and --json say nothing more', async () => {
    const first = await cairn(['threads', '--db', db, '--limit', '2']);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain('cust_2');
    expect(first.stdout).not.toContain('cust_3');
    expect(first.stderr.trim()).toBe('2 threads shown, the --limit; there are more: the next page is --after cust_2.');
    const last = await cairn(['threads', '--db', db, '--limit', '2', '--after', 'cust_2']);
    expect(last.stdout).toContain('cust_3');
    expect(last.stderr).toBe('');
    expect((await cairn(['threads', '--db', db, '--limit', '3'])).stderr).toBe('');
    const recent = await cairn(['threads', '--db', db, '--limit', '1', '--order', 'updatedAt']);
    expect(recent.stderr.trim()).toBe('1 thread shown, the --limit; there are more: raise --limit to see them.');
    const json = await cairn(['threads', '--db', db, '--limit', '2', '--json']);
    expect(json.stderr).toBe('');
    expect((JSON.parse(json.stdout) as unknown[]).length).toBe(2);
  });

  it('history: names the --before-seq of the next page', async () => {
    const first = await cairn(['history', 'cust_1', '--db', db, '--limit', '2']);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stderr.trim()).toBe('2 positions shown, the --limit; there are older ones: the next page is --before-seq 3.');
    const rest = await cairn(['history', 'cust_1', '--db', db, '--limit', '3', '--before-seq', '3']);
    expect(rest.stdout).toMatch(/^0 /m);
    expect(rest.stderr).toBe('');
    const past = await cairn(['history', 'cust_1', '--db', db, '--before-seq', '0']);
    expect(past.code, past.stderr).toBe(0);
    expect(past.stdout.trim()).toBe('thread cust_1 has no positions below seq 0');
    const json = await cairn(['history', 'cust_1', '--db', db, '--limit', '2', '--json']);
    expect(json.stderr).toBe('');
    expect((JSON.parse(json.stdout) as unknown[]).length).toBe(2);
  });
});
