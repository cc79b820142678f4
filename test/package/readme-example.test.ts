/**
 * The README's first example is real: examples/quickstart.ts holds the same
 * lines (type-checked by `tsc` in `npm test`), and it runs, twice: a completed
 * thread given new input starts a new run in the same thread (input + step again).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../helpers/temp-dirs.js';

const root = new URL('../..', import.meta.url).pathname;
const example = join(root, 'examples/quickstart.ts');

describe('README example', () => {
  it('is the code in examples/quickstart.ts', () => {
    const readme = readFileSync(join(root, 'README.md'), 'utf8');
    const code = readFileSync(example, 'utf8').split('\n').slice(1).join('\n');
    expect(readme).toContain(code.trim());
  });

  it('runs and leaves one completed thread with both runs in ./cairn.db', () => {
    // `import 'cairn'` resolves to this package (self-reference); ./cairn.db is relative to cwd.
    const cwd = tempDir('cairn-readme-');
    for (let i = 0; i < 2; i++) execFileSync(process.execPath, ['--import', join(root, 'node_modules/tsx/dist/esm/index.mjs'), example], { cwd, encoding: 'utf8' });
    const threads = execFileSync(process.execPath, [join(root, 'dist/cli/main.js'), 'threads', '--db', join(cwd, 'cairn.db'), '--json'], { encoding: 'utf8' });
    expect(JSON.parse(threads)).toMatchObject([{ id: 'post-1', status: 'completed', head: 3, attempts: 2 }]);
  });
});
