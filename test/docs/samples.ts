/**
 * The TypeScript samples of the project's Markdown, taken out as programs, and a
 * fresh ESM project to check and run them in, as a user's project would be.
 *
 * A sample is a ```ts / ```typescript block. It is a whole program unless an HTML
 * comment directly before it (blank lines between allowed) says otherwise:
 *
 *     <!-- sample: typecheck-only (why) -->   type-checked, not run (it needs a service or a test runner)
 *     <!-- sample: run                         the lines after the first are context: the program is
 *     import { memory } from 'cairn/memory';   these lines with the block put in place of the line
 *     {{sample}}                               `{{sample}}` (or after them, when there is no such line)
 *     -->
 *
 * Context several samples share is named once, anywhere before them, and named by
 * each (`<!-- sample: run, context: app -->`; the sample's own context lines, if any,
 * go in place of `{{sample}}` in the named one):
 *
 *     <!-- sample-context: app
 *     const app = …;
 *     {{sample}}
 *     -->
 *
 * A ```text block right after a sample is the output it prints (stdout, compared
 * line by line after trimming), for samples whose output is deterministic.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import ts from 'typescript';
import { tempDir } from '../helpers/temp-dirs.js';

export const REPO = new URL('../..', import.meta.url).pathname.replace(/\/$/, '');

/** How a sample is checked. */
export type SampleMode = 'run' | 'typecheck-only';

/** One TypeScript block of a Markdown file, ready to be written out as a program. */
export interface Sample {
  /** `README.md:241`: the file and the line of the opening fence. */
  readonly name: string;
  readonly mode: SampleMode;
  /** The program: context (if any) with the block in place. */
  readonly program: string;
  /** Line of the program where the block's first line is (0-based), to map diagnostics back. */
  readonly blockOffset: number;
  /** Line in the Markdown file of the block's first line (1-based). */
  readonly blockLine: number;
  /** How many lines the block has. */
  readonly blockLength: number;
  /** The nearest heading above it (`### Interrupts: …`). */
  readonly section: string;
  /** The ```text block that follows it, if any. */
  readonly expectedOutput?: string;
}

const FENCE = /^```(\S*)\s*$/;
const MARKER = /^<!--\s*sample:\s*(run|typecheck-only)(?:,\s*context:\s*([\w-]+))?(?:[ \t]*\([^)\n]*\))?[ \t]*(?:\n([\s\S]*?))?-->$/;
const CONTEXT = /^<!--\s*sample-context:\s*([\w-]+)[ \t]*\n([\s\S]*?)-->$/;

/** Puts `inner` in place of the `{{sample}}` line of `outer` (or after it, when it has none). */
function fill(outer: string, inner: string): string {
  if (!outer) return inner;
  const lines = outer.split('\n');
  const slot = lines.findIndex((l) => l.trim() === '{{sample}}');
  return slot === -1 ? `${outer}\n${inner}` : [...lines.slice(0, slot), inner, ...lines.slice(slot + 1)].join('\n');
}

/** Every TypeScript sample of one Markdown file (path relative to the repository). */
export function extractSamples(file: string): Sample[] {
  const lines = readFileSync(join(REPO, file), 'utf8').split('\n');
  const blocks: Array<{ lang: string; start: number; end: number; body: string }> = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!);
    if (!open) continue;
    let end = i + 1;
    while (end < lines.length && lines[end] !== '```') end++;
    blocks.push({ lang: open[1]!, start: i, end, body: lines.slice(i + 1, end).join('\n') });
    i = end;
  }
  const contexts = namedContexts(lines.join('\n'));
  const samples: Sample[] = [];
  blocks.forEach((block, index) => {
    if (block.lang !== 'ts' && block.lang !== 'typescript') return;
    const marker = markerBefore(lines, block.start, file, contexts);
    const next = blocks[index + 1];
    const gap = next ? lines.slice(block.end + 1, next.start) : [];
    const expectedOutput = next?.lang === 'text' && gap.every((l) => l.trim() === '') ? next.body : undefined;
    const program = fill(marker?.context ?? '', '\u0000');
    const blockOffset = program.split('\n').findIndex((l) => l.includes('\u0000'));
    samples.push({
      name: `${file}:${block.start + 1}`,
      mode: marker?.mode ?? 'run',
      section: lines.slice(0, block.start).reverse().find((l) => /^#{1,6} /.test(l)) ?? '',
      program: program.replace('\u0000', block.body),
      blockOffset,
      blockLine: block.start + 2,
      blockLength: block.end - block.start - 1,
      ...(expectedOutput === undefined ? {} : { expectedOutput }),
    });
  });
  return samples;
}

/** The `<!-- sample: … -->` comment that ends right before line `fence` (blank lines between allowed). */
function markerBefore(lines: string[], fence: number, file: string, contexts: ReadonlyMap<string, string>): { mode: SampleMode; context: string } | undefined {
  let end = fence - 1;
  while (end >= 0 && lines[end]!.trim() === '') end--;
  if (end < 0 || !lines[end]!.trimEnd().endsWith('-->')) return undefined;
  let start = end;
  while (start >= 0 && !lines[start]!.trimStart().startsWith('<!--')) start--;
  const comment = lines.slice(start, end + 1).join('\n').trim();
  if (!/^<!--\s*sample:/.test(comment)) return undefined;
  const match = MARKER.exec(comment);
  if (!match) throw new Error(`${file}:${start + 1}: a sample marker reads "<!-- sample: run | typecheck-only [, context: name] [context lines] -->", found: ${comment}`);
  const own = (match[3] ?? '').replace(/\n$/, '');
  if (!match[2]) return { mode: match[1] as SampleMode, context: own };
  const inner = !own ? '{{sample}}' : own.split('\n').some((l) => l.trim() === '{{sample}}') ? own : `${own}\n{{sample}}`;
  const named = contexts.get(match[2]);
  if (named === undefined) throw new Error(`${file}:${start + 1}: no <!-- sample-context: ${match[2]} --> in the file`);
  return { mode: match[1] as SampleMode, context: fill(named, inner) };
}

/** The `<!-- sample-context: name … -->` comments of a file. */
function namedContexts(text: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const comment of text.match(/<!--\s*sample-context:[\s\S]*?-->/g) ?? []) {
    const match = CONTEXT.exec(comment);
    if (match) out.set(match[1]!, match[2]!.replace(/\n$/, ''));
  }
  return out;
}

/** Packages a sample may import besides cairn, linked from the repository's node_modules. */
const LINKED = ['zod', 'pg', 'better-sqlite3', 'vitest', '@types/node', '@types/pg', '@types/better-sqlite3', '@opentelemetry/api', '@opentelemetry/sdk-trace-base', 'ai', '@langchain/core', '@langchain/langgraph', '@langchain/langgraph-checkpoint'];

/**
 * A fresh ESM project in a temp dir, as `npm init -y && npm pkg set type=module`
 * plus `npm install cairn zod …` would leave it: `cairn` is the repository (through
 * its package.json `exports` and dist/*.d.ts), the peer dependencies its own.
 */
export function createSampleProject(): string {
  const dir = tempDir('cairn-samples-');
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'samples', version: '1.0.0', type: 'module' }, null, 2));
  writeFileSync(
    join(dir, 'tsconfig.json'),
    JSON.stringify(
      {
        compilerOptions: { target: 'ES2022', module: 'NodeNext', moduleResolution: 'NodeNext', strict: true, skipLibCheck: true, noEmit: true, types: ['node'] },
        include: ['*.ts'],
      },
      null,
      2,
    ),
  );
  mkdirSync(join(dir, 'node_modules/@types'), { recursive: true });
  mkdirSync(join(dir, 'node_modules/@opentelemetry'), { recursive: true });
  mkdirSync(join(dir, 'node_modules/@langchain'), { recursive: true });
  symlinkSync(REPO, join(dir, 'node_modules/cairn'), 'dir');
  for (const name of LINKED) symlinkSync(join(REPO, 'node_modules', name), join(dir, 'node_modules', name), 'dir');
  return dir;
}

/** A type error, placed in the Markdown file where a reader would see it. */
export interface SampleDiagnostic {
  readonly where: string;
  readonly code: number;
  readonly message: string;
}

/**
 * Type-checks every written sample in ONE TypeScript program under the project's
 * tsconfig, and hands back each sample's diagnostics (by sample name), placed at
 * the Markdown line they are on. A diagnostic outside the samples throws.
 */
export function typecheck(dir: string, samples: ReadonlyArray<{ sample: Sample; path: string }>): Map<string, SampleDiagnostic[]> {
  const host: ts.ParseConfigFileHost = {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (d) => {
      throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
    },
  };
  const config = ts.getParsedCommandLineOfConfigFile(join(dir, 'tsconfig.json'), {}, host);
  if (!config) throw new Error('the sample project has no tsconfig');
  const program = ts.createProgram({ rootNames: samples.map((s) => s.path), options: config.options });
  const byPath = new Map(samples.map((s) => [s.path, s.sample]));
  const out = new Map<string, SampleDiagnostic[]>(samples.map((s) => [s.sample.name, []]));
  const global: SampleDiagnostic[] = [];
  for (const diagnostic of ts.getPreEmitDiagnostics(program)) {
    const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
    const sample = diagnostic.file && byPath.get(diagnostic.file.fileName);
    if (!sample || diagnostic.start === undefined) {
      global.push({ where: diagnostic.file?.fileName ?? 'tsconfig', code: diagnostic.code, message });
      continue;
    }
    const { line } = diagnostic.file!.getLineAndCharacterOfPosition(diagnostic.start);
    const inBlock = line - sample.blockOffset;
    const where = inBlock >= 0 && inBlock < sample.blockLength ? `${sample.name.split(':')[0]}:${sample.blockLine + inBlock}` : `${sample.name} (context line ${line + 1})`;
    out.get(sample.name)!.push({ where, code: diagnostic.code, message });
  }
  if (global.length) throw new Error(`the sample project does not compile: ${global.map((d) => `${d.where} TS${d.code} ${d.message}`).join('; ')}`);
  return out;
}

/** Writes each sample as its own module (`export {}` keeps top-level names apart) and returns the paths. */
export function writeSamples(dir: string, samples: readonly Sample[]): Array<{ sample: Sample; path: string }> {
  return samples.map((sample) => {
    const path = join(dir, `${sample.name.replace(/[^A-Za-z0-9]+/g, '_')}.ts`);
    writeFileSync(path, `${sample.program}\nexport {};\n`);
    return { sample, path };
  });
}

/** What one run of a program printed and how it ended. */
export interface ProgramRun {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly stdout: string;
  readonly stderr: string;
  readonly ms: number;
}

const TSX = join(REPO, 'node_modules/tsx/dist/esm/index.mjs');

/** Runs a TypeScript file with tsx in a child process, in `cwd` (created if missing). */
export function runTs(file: string, options: { cwd: string; env?: Record<string, string>; timeoutMs?: number }): Promise<ProgramRun> {
  mkdirSync(options.cwd, { recursive: true });
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', TSX, file], { cwd: options.cwd, env: { ...process.env, ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 30_000);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, stdout, stderr, ms: Date.now() - started });
    });
  });
}

/** Runs `jobs` at most `size` at a time; each promise settles when its job does. */
export function pool<T>(size: number, jobs: ReadonlyArray<() => Promise<T>>): Array<Promise<T>> {
  let next = 0;
  const results = jobs.map(() => {
    let settle!: { resolve: (v: T) => void; reject: (e: unknown) => void };
    const promise = new Promise<T>((resolve, reject) => (settle = { resolve, reject }));
    return { promise, settle };
  });
  const worker = async (): Promise<void> => {
    while (next < jobs.length) {
      const i = next++;
      try {
        results[i]!.settle.resolve(await jobs[i]!());
      } catch (error) {
        results[i]!.settle.reject(error);
      }
    }
  };
  for (let i = 0; i < Math.min(size, jobs.length); i++) void worker();
  return results.map((r) => r.promise);
}

