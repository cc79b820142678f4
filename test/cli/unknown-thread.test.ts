/**
 * A thread that is not there is a negative result on every command that names one:
 * `[cairn] [sqlite] thread nope: no such thread.` on stderr, nothing on stdout (no
 * `ok nope: 0 positions`), exit 1; an export of it writes no file, a copy imports
 * nothing. A child-run namespace that is not there is named the same way.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { cairn } from './run-cli.js';
import { useWorkedExampleDb } from './worked-db.js';

let dir: string;
let db: string;
let artifacts: string;
useWorkedExampleDb('cairn-cli-nope-', (files) => ({ dir, db, artifacts } = files));

describe('an unknown thread', () => {
  // DB and ARTIFACTS stand for the files useWorkedExampleDb made.
  const commands: string[][] = [
    ['verify', 'nope', '--db', 'DB'],
    ['verify', 'nope', '--db', 'DB', '--json'],
    ['verify', 'nope', '--db', 'DB', '--artifacts', 'ARTIFACTS'],
    ['effects', 'nope', '--db', 'DB'],
    ['effects', 'nope', '--db', 'DB', '--json'],
    ['history', 'nope', '--db', 'DB'],
    ['history', 'nope', '--ns', 'research:0@1', '--db', 'DB'],
    ['show', 'nope', '--db', 'DB'],
    ['attempts', 'nope', '--db', 'DB'],
    ['delete-thread', 'nope', '--db', 'DB'],
    ['export', 'cust_42', 'nope', '--db', 'DB'],
  ];

  for (const args of commands) {
    it(`cairn ${args.join(' ')}: exit 1, says so`, async () => {
      const run = await cairn(args.map((a) => (a === 'DB' ? db : a === 'ARTIFACTS' ? artifacts : a)));
      expect(run.code, run.stderr).toBe(1);
      if (args[0] === 'delete-thread') expect(run.stdout.trim()).toBe('no thread nope: nothing deleted');
      else {
        expect(run.stderr).toContain('[cairn] [sqlite] thread nope: no such thread.');
        expect(run.stdout).toBe('');
      }
    });
  }

  it('export --out writes no file and copy imports nothing', async () => {
    const file = join(dir, 'out.jsonl');
    const exported = await cairn(['export', 'cust_42', 'nope', '--db', db, '--out', file]);
    expect(exported.code).toBe(1);
    expect(existsSync(file)).toBe(false);

    const target = join(dir, 'target.db');
    const copied = await cairn(['copy', 'cust_42', 'nope', '--db', db, '--to', target]);
    expect(copied.code).toBe(1);
    expect(copied.stderr).toContain('thread nope: no such thread.');
    expect((await cairn(['threads', '--db', target])).stdout).not.toContain('cust_42');
  });

  it('an unknown namespace of a known thread names the namespaces it has', async () => {
    for (const command of ['history', 'show']) {
      const run = await cairn([command, 'cust_42', '--ns', 'research:0@1', '--db', db]);
      expect(run.code, run.stderr).toBe(1);
      expect(run.stderr).toContain('thread cust_42: has no namespace "research:0@1". It has no child runs.');
    }
  });

  it('the known thread still reads, exit 0', async () => {
    for (const args of [['verify', 'cust_42'], ['effects', 'cust_42'], ['history', 'cust_42'], ['show', 'cust_42'], ['attempts', 'cust_42']]) {
      const run = await cairn([...args, '--db', db]);
      expect(run.code, `${args.join(' ')}: ${run.stderr}`).toBe(0);
      expect(run.stdout).not.toBe('');
    }
  });
});
