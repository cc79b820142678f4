/**
 * Exit codes scripts can trust: 0 ok, 1 a negative result, 2 bad usage. Every flag
 * value is checked when the command line is read: a bad one is a clear message on
 * stderr and exit 2, before any database is opened (a driver's "datatype mismatch",
 * a silently ignored `--limit -5` or a `seq NaN` never reach the user).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cairn } from './run-cli.js';
import { useWorkedExampleDb } from './worked-db.js';

let dir: string;
let db: string;
let artifacts: string;
useWorkedExampleDb('cairn-cli-usage-', (files) => ({ dir, db, artifacts } = files));

describe('bad usage exits 2 with a message naming the flag', () => {
  const cases: [string[], string][] = [
    [['threads', '--limit', 'abc'], `option '--limit <n>' argument 'abc' is invalid. Write a whole number (1 or more).`],
    [['threads', '--limit', '-5'], `option '--limit <n>' argument '-5' is invalid`],
    [['threads', '--limit', '0'], `option '--limit <n>' argument '0' is invalid`],
    [['threads', '--limit', '2.5'], `option '--limit <n>' argument '2.5' is invalid`],
    [['threads', '--order', 'newest'], `option '--order <order>' argument 'newest' is invalid. Allowed choices are id, updatedAt.`],
    [['threads', '--status', 'done'], `Unknown status "done": use running, interrupted, completed, failed, needs_attention, waiting.`],
    [['threads', '--kind', 'chat'], `Unknown kind "chat"`],
    [['threads', '--metadata', 'queue'], `--metadata "queue": write key=value`],
    [['threads', '--since', 'yesterday'], `option '--since <when>' argument 'yesterday' is invalid`],
    [['threads', '--order', 'updatedAt', '--after', 'x'], '--after pages in id order'],
    [['threads', '--bogus'], `unknown option '--bogus'`],
    [['threads', '--tenant', ''], `option '--tenant <tenant>' argument '' is invalid. Write a tenant of 1 to 256 characters.`],
    [['erase', '--tenant', '', '--yes'], `option '--tenant <tenant>' argument '' is invalid. Write a tenant of 1 to 256 characters.`],
    [['history', 'cust_42', '--limit', 'abc'], `option '--limit <n>' argument 'abc' is invalid`],
    [['history', 'cust_42', '--limit', '-5'], `option '--limit <n>' argument '-5' is invalid`],
    [['show', 'cust_42', '--seq', 'abc'], `option '--seq <n>' argument 'abc' is invalid. Write a whole number (0 or more).`],
    [['show', 'cust_42', '--seq', '-1'], `option '--seq <n>' argument '-1' is invalid`],
    [['delete-thread', 'cust_42', '--if-status', 'finished'], `Unknown status "finished"`],
    [['gc', '--artifacts', 'x', '--grace', 'soon'], `option '--grace <duration>' argument 'soon' is invalid`],
    [['gc', '--artifacts', 'x', '--rule', 'threads:status=finished,olderThan=1d'], `unknown status "finished"`],
    [['gc', '--artifacts', 'x', '--pin', 'not-an-id'], `option '--pin <id>' argument 'not-an-id' is invalid`],
    [['gc', '--artifacts', 's3://a b/x'], 'artifact location "s3://a b/x" is not an s3://bucket/prefix URL'],
    [['migrate', '--check', '--current-version', 'two'], `option '--current-version <n>' argument 'two' is invalid`],
    [['migrate'], 'say what to do: --apply, --check or --rewrite-snapshots'],
    [['migrate', '--rewrite-snapshots'], '--rewrite-snapshots needs --state'],
    [['migrate', '--check', '--apply'], '--check only reads the database and --apply changes it: they do not go together.'],
    [['worker', '--app', 'app.js', '--concurrency', '0'], `option '--concurrency <n>' argument '0' is invalid`],
    [['worker', '--app', 'app.js', '--lease-ms', 'long'], `option '--lease-ms <ms>' argument 'long' is invalid`],
    [['worker', '--app', 'app.js', '--poll-ms', '0'], `option '--poll-ms <ms>' argument '0' is invalid. Write a duration of at least 1ms`],
    [['export', '--db', 'x.db'], 'name the threads to move, or pass --all'],
    [['export', 'cust_42', '--all', '--db', 'x.db'], 'not both'],
    [['copy', '--db', 'x.db', '--to', 'y.db'], 'name the threads to move, or pass --all'],
    [['threads', '--db', 'mysql://db/x'], 'unsupported engine "mysql:"'],
    [['demo', '--crash-at', 'sometime'], 'unknown crash point "sometime"'],
    [['inspect', '--port', '99999'], `option '--port <n>' argument '99999' is invalid. Write a port from 0 (a free one) to 65535.`],
    [['nosuch'], `unknown command 'nosuch'`],
    [[], 'Usage: cairn'],
  ];

  for (const [args, message] of cases) {
    it(`cairn ${args.join(' ')}`, async () => {
      const needsDb = args.length > 0 && !args.includes('--db') && !['export', 'copy', 'demo', 'nosuch', 'worker'].includes(args[0]!);
      const run = await cairn(needsDb ? [...args, '--db', db] : args);
      expect(run.code, run.stderr).toBe(2);
      expect(run.stderr).toContain(message);
      expect(run.stderr).not.toMatch(/SqliteError|TypeError|\n\s+at .+:\d+:\d+/);
      expect(run.stdout).toBe('');
    });
  }
});

describe('flags that do not go together are refused before anything is done', () => {
  it('migrate --apply --check creates no database (it ran --apply, then --check)', async () => {
    const target = join(dir, 'new.db');
    const run = await cairn(['migrate', '--apply', '--check', '--db', target]);
    expect(run.code, run.stderr).toBe(2);
    expect(run.stderr).toContain('--check only reads the database and --apply changes it: they do not go together. Run --apply first, then --check.');
    expect(run.stdout).toBe('');
    expect(existsSync(target)).toBe(false);
  });
});

describe('bad usage under --json', () => {
  it('is one JSON error on stderr, ERR_INVALID_OPTION, exit 2, as every other failure under --json', async () => {
    const cases: [string[], string][] = [
      [['threads', '--bogus', '--json'], `unknown option '--bogus'`],
      [['threads', '--json', '--limit', 'abc'], `option '--limit <n>' argument 'abc' is invalid. Write a whole number (1 or more).`],
      [['attempts', '--json'], `missing required argument 'thread'`],
      [['gc', '--json'], `required option '--artifacts <dir | s3://bucket/prefix>' not specified`],
      [['nosuch', '--json'], `unknown command 'nosuch'`],
    ];
    for (const [args, message] of cases) {
      const run = await cairn(args);
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stdout, args.join(' ')).toBe('');
      expect(JSON.parse(run.stderr), args.join(' ')).toEqual({ error: { code: 'ERR_INVALID_OPTION', message: `[cairn] ${message}` } });
    }
  });

  it('a --json after -- is an argument, not the flag: the error is text', async () => {
    const run = await cairn(['threads', '--bogus', '--', '--json']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`error: unknown option '--bogus'`);
  });
});

describe('0 ok, 1 a negative result', () => {
  it('exits 0 for --help, --version and a command that succeeds', async () => {
    expect((await cairn(['--help'])).code).toBe(0);
    expect((await cairn(['threads', '--help'])).code).toBe(0);
    expect((await cairn(['--version'])).code).toBe(0);
    const run = await cairn(['threads', '--db', db, '--limit', '1']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('cust_42');
  });

  it('exits 1 when nothing was deleted or the thread is not there', async () => {
    expect((await cairn(['delete-thread', 'cust_42', '--if-status', 'failed', '--db', db])).code).toBe(1);
    expect((await cairn(['show', 'cust_42', '--seq', '99', '--db', db])).code).toBe(1);
  });
});
