/**
 * Output piped into a reader that stops early (`cairn history cust_42 | head -1`):
 * once the reader has gone, the command stops quietly with its exit code, never a
 * stack trace of the EPIPE its next write met, and never a hang waiting for the pipe
 * to drain (an export). Output into a file that refuses the writes (a full disk) is a
 * failure: exit 1 and one line on stderr, never a stack trace.
 */
import { describe, expect, it } from 'vitest';
import { cairnIntoClosedPipe, cairnIntoFile } from './run-cli.js';
import { useWorkedExampleDb } from './worked-db.js';

let db: string;
useWorkedExampleDb('cairn-cli-pipe-', (files) => ({ db } = files));

describe('stdout closed by its reader', () => {
  it('ends every command quietly, with exit 0 for one that succeeded', async () => {
    const commands = [
      ['threads', '--db', db, '--json'],
      ['history', 'cust_42', '--db', db],
      ['show', 'cust_42', '--db', db, '--json'],
      ['export', '--all', '--db', db],
      ['threads', '--help'],
    ];
    for (const args of commands) {
      const run = await cairnIntoClosedPipe(args);
      expect(run.stderr, args.join(' ')).not.toMatch(/EPIPE|Unhandled|at .*\(/);
      expect(run.code, args.join(' ')).toBe(0);
    }
  });

  it('keeps the exit code of a negative result', async () => {
    const run = await cairnIntoClosedPipe(['delete-thread', 'nope', '--db', db, '--json']);
    expect(run.stderr).not.toMatch(/EPIPE/);
    expect(run.code).toBe(1);
  });
});

// /dev/full (Linux, where CI runs) takes the open and refuses every write (ENOSPC), as a full disk does.
describe('stdout onto a disk that refuses the writes', () => {
  it('fails the command: exit 1, one line on stderr (a JSON error under --json), no stack trace', async () => {
    for (const args of [['threads', '--db', db], ['show', 'cust_42', '--db', db], ['export', '--all', '--raw', '--db', db]]) {
      const run = await cairnIntoFile(args, '/dev/full');
      expect(run.code, args.join(' ')).toBe(1);
      expect(run.stderr.trim(), args.join(' ')).toBe('[cairn] writing the output failed (ENOSPC): what was written is incomplete.');
    }
    const json = await cairnIntoFile(['threads', '--db', db, '--json'], '/dev/full');
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stderr)).toEqual({ error: { code: 'ERR_UNEXPECTED', message: '[cairn] writing the output failed (ENOSPC): what was written is incomplete.' } });
  });
});
