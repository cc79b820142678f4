/**
 * What `npm pack` puts in the tarball works as shipped: the license is in it, every
 * source map's sources are in it too (the maps point at `src/`, which ships, so
 * stack traces and "go to source" land on the TypeScript), and the `cairn` bin
 * keeps its executable bit after the build, so `npx cairn` runs in a clone.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { ensureBuilt } from '../artifacts/build.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { files: string[]; bin: Record<string, string>; license: string };

interface PackedFile {
  path: string;
  mode: number;
}

let packed: Map<string, PackedFile>;

beforeAll(() => {
  ensureBuilt();
  const out = execFileSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const [report] = JSON.parse(out) as [{ files: PackedFile[] }];
  packed = new Map(report.files.map((f) => [f.path, f]));
}, 120_000);

describe('the npm tarball', () => {
  it('ships the MIT LICENSE, listed in files', () => {
    expect(pkg.license).toBe('MIT');
    expect(pkg.files).toContain('LICENSE');
    expect(packed.has('LICENSE')).toBe(true);
    const text = readFileSync(join(root, 'LICENSE'), 'utf8');
    expect(text).toMatch(/^MIT License/);
    expect(text).toContain('Copyright (c) 2026 the cairn authors');
  });

  it("ships every source map's sources: each .map's sources resolve to a file in the tarball", () => {
    const maps = [...packed.keys()].filter((p) => p.endsWith('.map'));
    expect(maps.length).toBeGreaterThan(100);
    expect(maps).toContain('dist/index.js.map');
    expect(maps).toContain('dist/index.d.ts.map');
    const missing: string[] = [];
    for (const map of maps) {
      const { sources, sourceRoot = '' } = JSON.parse(readFileSync(join(root, map), 'utf8')) as { sources: string[]; sourceRoot?: string };
      expect(sources.length, map).toBeGreaterThan(0);
      for (const source of sources) {
        const path = normalize(join(dirname(map), sourceRoot, source));
        if (!packed.has(path)) missing.push(`${map} → ${path}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('keeps the cairn bin executable, on disk after the build and in the tarball, and it runs as a program', () => {
    const bin = normalize(pkg.bin.cairn!);
    expect(bin).toBe('dist/cli/main.js');
    expect(statSync(join(root, bin)).mode & 0o111).toBe(0o111);
    expect(packed.get(bin)!.mode & 0o111).toBe(0o111);
    // Run directly (its shebang), not through `node`: what npx and a shell do.
    const help = execFileSync(join(root, bin), ['--help'], { cwd: root, encoding: 'utf8' });
    expect(help).toContain('demo');
  });
});
