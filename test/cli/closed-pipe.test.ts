/**
 * Output piped into a reader that stops early (`cairn history cust_42 | head -1`):
 * once the reader has gone, the command stops quietly with its exit code, never a
 * stack trace of the EPIPE its next write met, and never a hang waiting for the pipe
 * to drain (an export).
 */
import { describe, expect, it } from 'vitest';
import { cairnIntoClosedPipe } from './run-cli.js';
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
