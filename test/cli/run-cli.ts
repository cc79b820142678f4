/**
 * The built CLI (`dist/cli/main.js`) in a child process, as a user runs it: its exit
 * code, stdout and stderr. Rebuilds dist/ first when it is older than src/.
 */
import { execFile } from 'node:child_process';
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

/** Runs `cairn <args>`; `input` is written to its stdin. */
export function cairn(args: string[], options: { input?: string; env?: Record<string, string> } = {}): Promise<CliResult> {
  ensureBuilt();
  return new Promise((resolve) => {
    const child = execFile(process.execPath, ['--no-warnings', cli, ...args], { env: { ...process.env, ...options.env }, timeout: 60_000, maxBuffer: 64 * 1024 * 1024 }, (_error, stdout, stderr) =>
      resolve({ code: child.exitCode ?? -1, stdout, stderr }),
    );
    if (options.input !== undefined) child.stdin!.end(options.input);
    else child.stdin!.end();
  });
}
