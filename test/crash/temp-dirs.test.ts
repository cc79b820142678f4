/**
 * A crash test leaves nothing in the temp folder: the databases and logs of the
 * processes it spawned and killed are removed when its file is done. Runs one crash
 * test file (the quickest: two fixtures killed and run again) in a child vitest whose
 * TMPDIR is a fresh folder, and finds that folder empty afterwards.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, expect, it } from 'vitest';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const vitest = join(repoRoot, 'node_modules', 'vitest', 'vitest.mjs');
const scratch = mkdtempSync(join(tmpdir(), 'cairn-crash-tmpdir-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

it('the AI SDK crash tests leave no folder behind in TMPDIR', async () => {
  const env: NodeJS.ProcessEnv = { ...process.env, TMPDIR: scratch };
  // The child is a vitest of its own, not a worker of this one.
  for (const name of Object.keys(env)) if (name.startsWith('VITEST') || name === 'TEST') delete env[name];
  const run = await new Promise<{ code: number | null; output: string }>((resolve) => {
    const child = execFile(process.execPath, [vitest, 'run', 'test/crash/ai-sdk.crash.test.ts'], { cwd: repoRoot, env, timeout: 120_000, maxBuffer: 16 * 1024 * 1024 }, (_error, stdout, stderr) =>
      resolve({ code: child.exitCode, output: stdout + stderr }),
    );
  });
  expect(run.code, run.output).toBe(0);
  expect(run.output).toMatch(/\b[1-9]\d* passed, 0 failed/);
  expect(readdirSync(scratch)).toEqual([]);
}, 150_000);
