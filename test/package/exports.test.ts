/**
 * Test what ships: every subpath of the exports map imports in a fresh Node
 * process from the built package, and `import 'cairn'` loads no native module.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  name: string;
  exports: Record<string, unknown>;
  bin: Record<string, string>;
};
const root = new URL('../..', import.meta.url).pathname;

function node(script: string): string {
  return execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: root, encoding: 'utf8' });
}

describe('package exports', () => {
  const subpaths = Object.keys(pkg.exports).filter((p) => p !== './package.json');

  it.each(subpaths)('%s imports in a fresh process', (subpath) => {
    const specifier = subpath === '.' ? pkg.name : `${pkg.name}/${subpath.slice(2)}`;
    const keys = JSON.parse(node(`const m = await import(${JSON.stringify(specifier)}); console.log(JSON.stringify(Object.keys(m)));`)) as string[];
    expect(keys.length).toBeGreaterThan(0);
  });

  it("import 'cairn' loads no native module and no storage driver", () => {
    const loaded = node(`
      import { createRequire } from 'node:module';
      await import('cairn');
      const require = createRequire(import.meta.url);
      console.log(JSON.stringify(Object.keys(require.cache)));
    `);
    expect(loaded).not.toMatch(/better-sqlite3|\.node"/);
  });

  it("import 'cairn' never resolves the AI SDK (ai, @ai-sdk/*): only cairn/ai-sdk needs it", () => {
    const hook = `export async function resolve(specifier, context, next) {
      if (specifier === 'ai' || specifier.startsWith('ai/') || specifier.startsWith('@ai-sdk/')) throw new Error('resolved ' + specifier);
      return next(specifier, context);
    }`;
    const out = node(`
      import { register } from 'node:module';
      register('data:text/javascript,' + encodeURIComponent(${JSON.stringify(hook)}));
      const main = await import('cairn');
      let sdk = 'loaded';
      try { await import('cairn/ai-sdk'); } catch (error) { sdk = error.message; }
      console.log(JSON.stringify({ main: typeof main.currentNode, sdk }));
    `);
    expect(JSON.parse(out)).toEqual({ main: 'function', sdk: expect.stringMatching(/resolved (ai|@ai-sdk\/)/) });
  });

  it('the sqlite engine loads its driver only when first used', () => {
    const out = node(`
      import { createRequire } from 'node:module';
      const { sqlite } = await import('cairn/sqlite');
      const require = createRequire(import.meta.url);
      const before = Object.keys(require.cache).some((k) => k.includes('better-sqlite3'));
      const engine = sqlite(':memory:');
      await engine.checkpointer.getThread('x');
      const after = Object.keys(require.cache).some((k) => k.includes('better-sqlite3'));
      await engine.close();
      console.log(JSON.stringify({ before, after }));
    `);
    expect(JSON.parse(out)).toEqual({ before: false, after: true });
  });

  it('the cairn bin prints its help', () => {
    const help = execFileSync(process.execPath, [pkg.bin.cairn!, '--help'], { cwd: root, encoding: 'utf8' });
    for (const command of ['demo', 'threads', 'history', 'show', 'effects', 'verify']) expect(help).toContain(command);
  });
});
