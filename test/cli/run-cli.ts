/**
 * The built CLI (`dist/cli/main.js`) in a child process, as a user runs it: its exit
 * code, stdout and stderr. Rebuilds dist/ first when it is older than src/.
 */
import { execFile, spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureBuilt } from '../artifacts/build.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const cli = join(repoRoot, 'dist', 'cli', 'main.js');

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `cairn <args>`; `input` is written to its stdin; `user`: as that user (the tests run as root only). */
export function cairn(args: string[], options: { input?: string; env?: Record<string, string>; user?: { uid: number; gid: number } } = {}): Promise<CliResult> {
  ensureBuilt();
  return new Promise((resolve) => {
    const child = execFile(process.execPath, ['--no-warnings', cli, ...args], { env: { ...process.env, ...options.env }, timeout: 60_000, maxBuffer: 64 * 1024 * 1024, ...options.user }, (_error, stdout, stderr) =>
      resolve({ code: child.exitCode ?? -1, stdout, stderr }),
    );
    if (options.input !== undefined) child.stdin!.end(options.input);
    else child.stdin!.end();
  });
}

/**
 * Runs `cairn <args>` with its stdout a pipe whose reader has already gone, as under
 * `cairn … | head -1` once head has exited: its exit code and stderr.
 */
export function cairnIntoClosedPipe(args: string[]): Promise<{ code: number | null; stderr: string }> {
  ensureBuilt();
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--no-warnings', cli, ...args], { stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 });
    child.stdout.destroy();
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

/**
 * Runs `cairn <args>` with its stdout the file at `path`, opened for writing, as under
 * `cairn … > path` (`/dev/full`: a disk that refuses every write): its exit code and stderr.
 */
export function cairnIntoFile(args: string[], path: string): Promise<{ code: number | null; stderr: string }> {
  ensureBuilt();
  const fd = openSync(path, 'w');
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--no-warnings', cli, ...args], { stdio: ['ignore', fd, 'pipe'], timeout: 60_000 });
    let stderr = '';
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    child.on('close', (code) => {
      closeSync(fd);
      resolve({ code, stderr });
    });
  });
}
