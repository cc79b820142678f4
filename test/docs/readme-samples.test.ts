/**
 * The docs run as written. Every ```ts block of README.md and of docs/*.md is
 * type-checked under `strict` in a fresh ESM project that imports `cairn` by name
 * (through the package's `exports` and dist/*.d.ts, as a user's project would), all
 * in one TypeScript program, and every one not marked `typecheck-only` is run with
 * tsx in a child process and must exit 0 (and print its ```text block, if it has one).
 * Markers and context are described in ./samples.ts.
 *
 * docs/architecture.md holds diagrams, no TypeScript samples; it is scanned anyway,
 * so a sample added there is tested too.
 */
import { readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createSampleProject,
  extractSamples,
  pool,
  runTs,
  typecheck,
  writeSamples,
  REPO,
  type ProgramRun,
  type Sample,
  type SampleDiagnostic,
} from './samples.js';

const FILES = ['README.md', ...readdirSync(join(REPO, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** Sections whose samples are not checked yet, each with its reason (none: every sample is). */
const PENDING: ReadonlyArray<{ file: string; section: string; reason: string }> = [];

const all = FILES.flatMap((file) => extractSamples(file).map((sample) => ({ file, sample })));
const isPending = ({ file, sample }: { file: string; sample: Sample }) => PENDING.some((p) => p.file === file && p.section === sample.section);
const checked = all.filter((s) => !isPending(s)).map((s) => s.sample);
const runnable = checked.filter((s) => s.mode === 'run');

let dir = '';
let diagnostics = new Map<string, SampleDiagnostic[]>();
const runs = new Map<string, Promise<ProgramRun>>();

beforeAll(() => {
  dir = createSampleProject();
  const written = writeSamples(dir, checked);
  diagnostics = typecheck(dir, written);
  // Two cores shared with other test files: three samples at a time.
  const jobs = written.filter((w) => w.sample.mode === 'run').map((w) => () => runTs(w.path, { cwd: join(dir, 'runs', w.sample.name.replace(/[^A-Za-z0-9]+/g, '_')) }));
  const started = pool(3, jobs);
  runnable.forEach((sample, i) => runs.set(sample.name, started[i]!));
});

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('docs samples', () => {
  it(`finds the samples: ${FILES.map((f) => `${f} ${all.filter((s) => s.file === f).length}`).join(', ')}`, () => {
    expect(all.filter((s) => s.file === 'README.md').length).toBeGreaterThan(10);
  });

  it.each(checked.map((s) => [s.name, s] as const))('%s type-checks under strict', (name) => {
    const found = diagnostics.get(name)!.map((d) => `${d.where} TS${d.code}: ${d.message}`);
    expect(found).toEqual([]);
  });

  it.each(runnable.map((s) => [s.name, s] as const))('%s runs and exits 0', async (name, sample) => {
    const run = await runs.get(name)!;
    expect({ code: run.code, signal: run.signal, stderr: run.code === 0 ? '' : run.stderr }).toEqual({ code: 0, signal: null, stderr: '' });
    if (sample.expectedOutput !== undefined) {
      const lines = (text: string) => text.trim().split('\n').map((l) => l.trimEnd());
      expect(lines(run.stdout)).toEqual(lines(sample.expectedOutput));
    }
  });

  it('leaves unchecked only the sections listed as pending, each of which still has a sample', () => {
    const pending = all.filter(isPending).map(({ file, sample }) => `${file} ${sample.section}`);
    expect([...new Set(pending)]).toEqual(PENDING.map((p) => `${p.file} ${p.section}`));
  });
});
