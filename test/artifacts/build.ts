/**
 * Tests that run the built package in child processes call this first: it
 * rebuilds dist/ when it is missing or older than any source file, so running one
 * test file alone (without `npm test`, which builds) still tests current code.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));

function newest(dir: string): number {
  let time = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    time = Math.max(time, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return time;
}

export function ensureBuilt(): void {
  const marker = join(repoRoot, 'dist', 'index.js');
  if (existsSync(marker) && statSync(marker).mtimeMs >= newest(join(repoRoot, 'src'))) return;
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  try {
    execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: repoRoot, stdio: 'pipe' });
  } catch {
    // tsc exits non-zero for type errors elsewhere in src/ but still emits.
  }
  // As `npm run build` does: the bin stays executable.
  chmodSync(join(repoRoot, 'dist', 'cli', 'main.js'), 0o755);
}
