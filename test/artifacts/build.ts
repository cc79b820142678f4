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

/**
 * When the last build ran: its build info, which tsc rewrites on every build that
 * changes anything (the build is incremental, so an output whose text did not change
 * keeps its old time and is no marker).
 */
export const BUILD_MARKER = join(repoRoot, 'dist', '.tsbuildinfo');

export function ensureBuilt(): void {
  const built = existsSync(join(repoRoot, 'dist', 'index.js')) && existsSync(BUILD_MARKER);
  if (built && statSync(BUILD_MARKER).mtimeMs >= newest(join(repoRoot, 'src'))) return;
  const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
  try {
    execFileSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: repoRoot, stdio: 'pipe' });
  } catch {
    // tsc exits non-zero for type errors elsewhere in src/ but still emits.
  }
  // As `npm run build` does: the bin stays executable.
  chmodSync(join(repoRoot, 'dist', 'cli', 'main.js'), 0o755);
}
