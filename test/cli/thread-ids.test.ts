/**
 * A thread id no thread can have (empty, as an unset "$THREAD" gives; over 512
 * characters; a control character) is bad usage on every command that takes one:
 * ERR_INVALID_KEY, exit 2, before any database is opened. It was "no such thread"
 * (exit 1) on some commands and ERR_INVALID_KEY on `signal`; `cairn attempts ''`
 * printed "thread : no such thread."; `cairn verify ''` verified every thread.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cairn } from './run-cli.js';

const dir = mkdtempSync(join(tmpdir(), 'cairn-cli-thread-ids-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A database that is not there: an id refused before it is opened never meets "no cairn database at …". */
const db = join(dir, 'none.db');

/** Each command with `ID` where its thread id goes. */
const commands: string[][] = [
  ['attempts', 'ID'],
  ['delete-thread', 'ID'],
  ['history', 'ID'],
  ['show', 'ID'],
  ['effects', 'ID'],
  ['verify', 'ID'],
  ['cancel', 'ID'],
  ['signal', 'ID', 'approved'],
  ['resolve-effect', 'ID', 'key', '--outcome', '1'],
  ['diff', 'ID', '0', '1'],
  ['resume', 'ID', '--app', join(dir, 'app.js'), '--answer', '1'],
  ['fork', 'ID', '0', '--app', join(dir, 'app.js')],
  ['replay', 'ID', '--app', join(dir, 'app.js')],
  ['eval', '--threads', 'a,ID', '--app', join(dir, 'app.js')],
  ['erase', '--thread', 'ID', '--yes'],
  ['export', 'a', 'ID'],
  ['copy', 'ID', '--to', join(dir, 'target.db')],
  ['import-langgraph', '--from', join(dir, 'langgraph.db'), '--thread', 'ID'],
];

const ids: [string, string, RegExp][] = [
  ['empty', '', /thread id must be a non-empty string, got ""\./],
  ['5000 characters', 'x'.repeat(5000), /thread id is 5000 characters long; the limit is 512\./],
  ['a control character', 'a\nb', /thread id "a\\nb" contains a control character\./],
];

describe('a thread id no thread can have', () => {
  for (const args of commands) {
    it(`cairn ${args.join(' ')}: ERR_INVALID_KEY, exit 2, nothing opened`, async () => {
      for (const [index, [what, id, message]] of ids.entries()) {
        // An empty piece of --threads a,,b is left out, as the spaces around the ids are.
        if (args[0] === 'eval' && id === '') continue;
        const line = [...args.map((a) => (a === 'ID' ? id : a.replace('a,ID', `a,${id}`))), '--db', db];
        const run = await cairn(line);
        expect(run.code, `${what}: ${run.stderr}`).toBe(2);
        expect(run.stdout, what).toBe('');
        expect(run.stderr, what).toMatch(message);
        // --json prints whichever refusal it is the same way: one id is enough.
        if (index !== 1) continue;
        const json = await cairn([...line, '--json']);
        expect(json.code, what).toBe(2);
        expect((JSON.parse(json.stderr) as { error: { code: string } }).error.code, what).toBe('ERR_INVALID_KEY');
      }
      expect(existsSync(db)).toBe(false);
      expect(existsSync(join(dir, 'target.db'))).toBe(false);
    });
  }
});
