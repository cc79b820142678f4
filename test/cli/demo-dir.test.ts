/**
 * `cairn demo --dir X` run twice starts clean the second time: it removes what the
 * first run made there (and only that: other files in X stay), so the crash point is
 * reached again and the run is killed and resumed as the first time. A folder that
 * holds the demo's file names without the demo's mark is refused, untouched.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { cairn } from './run-cli.js';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-demo-dir-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

describe('cairn demo --dir', () => {
  it('a second run in the same folder removes what the first made, crashes and recovers again, and leaves other files alone', async () => {
    const first = await cairn(['demo', '--dir', dir]);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout).toContain('killed by SIGKILL at after-effect:put_object');
    expect(first.stdout).not.toContain('starting clean');
    writeFileSync(join(dir, 'notes.txt'), 'mine');

    const second = await cairn(['demo', '--dir', dir]);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout).toContain(`starting clean: removed what the previous demo made in ${dir} (cairn.db`);
    expect(second.stdout).toContain('killed by SIGKILL at after-effect:put_object');
    expect(second.stdout).not.toContain('was never reached');
    expect(second.stdout).toContain('✓ object written once: the upload ran once');
    // The only ✗ is the kill itself; every check passed.
    expect(second.stdout.split('\n').filter((l) => l.includes('✗') && !l.includes('killed by SIGKILL'))).toEqual([]);
    expect(readFileSync(join(dir, 'notes.txt'), 'utf8')).toBe('mine');
  });

  it('refuses a folder holding a cairn.db it did not make, and leaves it as it was', async () => {
    writeFileSync(join(dir, 'cairn.db'), 'not the demo');
    const result = await cairn(['demo', '--dir', dir]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`${dir} already holds cairn.db, which cairn demo did not make`);
    expect(readFileSync(join(dir, 'cairn.db'), 'utf8')).toBe('not the demo');
    expect(existsSync(join(dir, '.cairn-demo'))).toBe(false);
  });
});
