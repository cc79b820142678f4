/**
 * @module bench/scale/compiled-child
 * The contender processes run child.ts as plain JavaScript, as a deployed worker runs:
 * started through tsx, each paid a quarter of a second of loader start-up and on-the-fly
 * compiling, which the recovery figures (kill → a new Worker process completed) would
 * charge to cairn. Once per bench run, child.ts and the bench modules it imports are
 * transpiled (TypeScript's `transpileModule`, no type check) into a temporary tree
 * beside links to this repository's dist/ and node_modules/, so their relative imports
 * resolve as they do here.
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** child.ts and what it imports from bench/, relative to the repository. */
const SOURCES = ['bench/scale/child.ts', 'bench/scale/counting-pool.ts', 'bench/scale/effect-server.ts', 'bench/scale/workflow.ts', 'bench/workload.ts'];

let compiled: string | undefined;

/** The path of the transpiled child.js (made on first call; removed when the process exits). */
export function compiledChild(): string {
  if (compiled) return compiled;
  const out = mkdtempSync(join(tmpdir(), 'cairn-bench-child-'));
  process.on('exit', () => rmSync(out, { recursive: true, force: true }));
  writeFileSync(join(out, 'package.json'), '{"type":"module"}\n');
  symlinkSync(join(ROOT, 'dist'), join(out, 'dist'));
  symlinkSync(join(ROOT, 'node_modules'), join(out, 'node_modules'));
  for (const source of SOURCES) {
    const { outputText } = ts.transpileModule(readFileSync(join(ROOT, source), 'utf8'), {
      compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: false },
      fileName: source,
    });
    const target = join(out, source.replace(/\.ts$/, '.js'));
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, outputText);
  }
  return (compiled = join(out, 'bench/scale/child.js'));
}
