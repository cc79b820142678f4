/**
 * Renamed flags keep their old spelling for a while, so scripts do not break at
 * once: the old flag does what the new one does, prints one deprecation line on
 * stderr, and is hidden from the help. Both spellings at once is bad usage (exit 2),
 * and so is a required flag given under neither.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cairn } from './run-cli.js';
import { useWorkedExampleDb } from './worked-db.js';

let dir: string;
let db: string;
let artifacts: string;
useWorkedExampleDb('cairn-cli-deprecated-', (files) => ({ dir, db, artifacts } = files));

/** The deprecation lines of a run's stderr. */
const notices = (stderr: string) => stderr.split('\n').filter((line) => line.includes(' is deprecated: '));

describe('old spellings still work, with a notice', () => {
  it('export --from is export --db', async () => {
    const file = join(dir, 'old-export.jsonl');
    const old = await cairn(['export', 'cust_42', '--from', db, '--out', file]);
    expect(old.code, old.stderr).toBe(0);
    expect(notices(old.stderr)).toEqual(['[cairn] --from is deprecated: use --db <url>.']);
    const current = await cairn(['export', 'cust_42', '--db', db]);
    expect(notices(current.stderr)).toEqual([]);
    // The same records, but for the export's own time.
    const lines = (text: string) => text.trim().split('\n').filter((line) => !line.includes('"type":"header"'));
    expect(lines(readFileSync(file, 'utf8'))).toEqual(lines(current.stdout));
  });

  it('import --to is import --db', async () => {
    const exported = await cairn(['export', 'cust_42', '--db', db]);
    const target = join(dir, 'old-import.db');
    const run = await cairn(['import', '--to', target], { input: exported.stdout });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^imported 1 thread, /);
    expect(notices(run.stderr)).toEqual(['[cairn] --to is deprecated: use --db <url>.']);
    expect((await cairn(['verify', 'cust_42', '--db', target])).code).toBe(0);
  });

  it('copy --from / --from-artifacts are copy --db / --artifacts', async () => {
    const target = join(dir, 'old-copy.db');
    const run = await cairn(['copy', 'cust_42', '--from', db, '--to', target, '--from-artifacts', artifacts, '--to-artifacts', join(dir, 'old-copy-artifacts'), '--json']);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ threads: ['cust_42'], artifacts: 1, verify: [{ thread: 'cust_42', source: true, target: true }] });
    expect(notices(run.stderr)).toEqual(['[cairn] --from is deprecated: use --db <url>.', '[cairn] --from-artifacts is deprecated: use --artifacts <dir | s3://bucket/prefix>.']);
  });

  it('threads --order updated is --order updatedAt, --meta is --metadata', async () => {
    const ids = (stdout: string) => (JSON.parse(stdout) as { id: string }[]).map((t) => t.id);
    const order = await cairn(['threads', '--order', 'updated', '--db', db, '--json']);
    expect(order.code, order.stderr).toBe(0);
    expect(ids(order.stdout)).toEqual(['cust_42']);
    expect(notices(order.stderr)).toEqual(['[cairn] --order updated is deprecated: use --order updatedAt.']);
    expect(notices((await cairn(['threads', '--order', 'updatedAt', '--db', db])).stderr)).toEqual([]);

    // The worked example's thread carries its graph's name.
    const meta = await cairn(['threads', '--meta', 'graph=default', '--db', db, '--json']);
    expect(ids(meta.stdout)).toEqual(['cust_42']);
    expect(notices(meta.stderr)).toEqual(['[cairn] --meta is deprecated: use --metadata <key=value>.']);
    expect(ids((await cairn(['threads', '--meta', 'graph=other', '--db', db, '--json'])).stdout)).toEqual([]);
  });

  it('migrate --current / --oldest are --current-version / --oldest-readable-version', async () => {
    const old = await cairn(['migrate', '--check', '--current', '2', '--oldest', '1', '--db', db, '--json']);
    expect(old.code, old.stderr).toBe(0);
    expect(notices(old.stderr)).toEqual(['[cairn] --oldest is deprecated: use --oldest-readable-version <n>.', '[cairn] --current is deprecated: use --current-version <n>.']);
    const current = await cairn(['migrate', '--check', '--current-version', '2', '--oldest-readable-version', '1', '--db', db, '--json']);
    expect(JSON.parse(old.stdout)).toEqual(JSON.parse(current.stdout));
    expect(JSON.parse(current.stdout).window).toEqual({ currentVersion: 2, oldestReadableVersion: 1 });
  });

  it('the old spellings are hidden from the help', async () => {
    const copy = (await cairn(['copy', '--help'])).stdout;
    expect(copy).toContain('--db <url>');
    expect(copy).toContain('--artifacts <dir | s3://bucket/prefix>');
    expect(copy).not.toMatch(/--from\b/);
    const worker = (await cairn(['worker', '--help'])).stdout;
    expect(worker).toContain('postgres://user@host/db#schema');
    expect(worker).not.toMatch(/--postgres|--schema/);
    expect((await cairn(['threads', '--help'])).stdout).not.toContain('--meta <key=value>');
    expect((await cairn(['migrate', '--help'])).stdout).not.toMatch(/--current <n>|--oldest <n>/);
  });
});

describe('bad usage, exit 2', () => {
  const cases: [string[], string][] = [
    [['copy', '--all', '--from', 'a.db', '--db', 'b.db', '--to', 'c.db'], '--from is the old spelling of --db: give --db only.'],
    [['copy', '--all', '--db', 'b.db', '--from', 'a.db', '--to', 'c.db'], '--from is the old spelling of --db: give --db only.'],
    [['copy', '--all', '--to', 'c.db'], `required option '--db <url>' not specified`],
    [['copy', '--all', '--db', 'a.db', '--to', 'c.db', '--artifacts', 'x'], '--artifacts and --to-artifacts go together'],
    [['export', '--all'], `required option '--db <url>' not specified`],
    [['import', '--to', 'a.db', '--db', 'b.db'], '--to is the old spelling of --db: give --db only.'],
    [['threads', '--meta', 'a=1', '--metadata', 'b=2', '--db', 'cairn.db'], '--meta is the old spelling of --metadata: give --metadata only.'],
    [['migrate', '--check', '--current', '2', '--current-version', '2', '--db', 'cairn.db'], '--current is the old spelling of --current-version: give --current-version only.'],
    [['worker', '--app', 'app.js', '--schema', 'cairn'], '--schema names a PostgreSQL schema: write --db postgres://…#cairn.'],
    [['worker', '--app', 'app.js', '--db', 'postgres://db/app#a', '--schema', 'b'], '--db postgres://db/app#a already names a schema: drop --schema.'],
  ];
  for (const [args, message] of cases) {
    it(`cairn ${args.join(' ')}`, async () => {
      const run = await cairn(args.map((a) => (a.endsWith('.db') ? join(dir, a) : a)));
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toContain(message);
      expect(run.stdout).toBe('');
    });
  }
});
