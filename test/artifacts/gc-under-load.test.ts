/**
 * GC while runs are writing: two writer processes run threads that write artifacts
 * (kept in state, reused from a shared pool, uploaded through an effect, thrown
 * away) on one SQLite file and fs folder, while this process collects again and
 * again with a grace period shorter than a second. Afterwards no ref held by any
 * committed position or store value is dangling, and the thrown-away ones are gone.
 * The figures are printed for the record.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { fsArtifacts } from '../../src/artifacts/fs/index.js';
import { listArtifacts } from '../../src/artifacts/helpers.js';
import { collectArtifacts } from '../../src/inspect/gc.js';
import { verifyArtifacts } from '../../src/inspect/artifact-verify.js';
import { ensureBuilt } from './build.js';

const dist = fileURLToPath(new URL('../../dist', import.meta.url));
const writer = fileURLToPath(new URL('./fixtures/gc-writer.mjs', import.meta.url));
const RUNS = 60;
const GRACE_MS = 2000;

beforeAll(() => ensureBuilt(), 120_000);

describe('GC under concurrent runs', () => {
  it(`collects repeatedly (grace ${GRACE_MS} ms) while 2 processes run ${RUNS} threads each; no committed ref is lost`, { timeout: 120_000 }, async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cairn-gc-load-'));
    const db = join(dir, 'cairn.db');
    const root = join(dir, 'artifacts');
    // The database exists before the writers race to create it.
    await sqlite(db).close();
    const engine = sqlite(db);
    const artifacts = fsArtifacts(root);
    try {
      const started = Date.now();
      let running = 2;
      const writers = [1, 2].map(
        (id) =>
          new Promise<{ runs: number; artifacts: number }>((resolve, reject) =>
            execFile(process.execPath, ['--no-warnings', writer, dist, db, root, String(id), String(RUNS)], { timeout: 100_000 }, (error, stdout, stderr) => {
              running--;
              if (error) reject(new Error(`writer ${id}: ${error.message}\n${stderr}`));
              else resolve(JSON.parse(stdout.trim()) as { runs: number; artifacts: number });
            }),
          ),
      );
      let passes = 0;
      let collected = 0;
      let refreshed = 0;
      const collector = (async () => {
        while (running > 0) {
          const report = await collectArtifacts({ checkpointer: engine.checkpointer, store: engine.store, ledger: engine.ledger, artifacts, graceMs: GRACE_MS });
          passes++;
          collected += report.victims.length;
          refreshed += report.refreshed;
          // The collector checks its own work as it goes: nothing a committed position holds may be missing.
          const check = await verifyArtifacts({ artifacts, checkpointer: engine.checkpointer });
          expect(check.dangling, JSON.stringify(check.dangling.slice(0, 3))).toEqual([]);
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      })();
      const done = await Promise.all(writers);
      await collector;

      // Once the grace has passed, a last pass takes every thrown-away artifact, and still nothing referenced.
      await new Promise((resolve) => setTimeout(resolve, GRACE_MS + 50));
      const last = await collectArtifacts({ checkpointer: engine.checkpointer, store: engine.store, ledger: engine.ledger, artifacts, graceMs: GRACE_MS });
      collected += last.victims.length;
      const final = await verifyArtifacts({ artifacts, checkpointer: engine.checkpointer, store: engine.store });
      expect(final.corrupt).toEqual([]);
      expect(final.dangling).toEqual([]);
      const threads = await engine.checkpointer.listThreads({ limit: 1000 });
      expect(threads.filter((t) => t.status === 'completed')).toHaveLength(2 * RUNS);
      // What is left is exactly what positions refer to.
      const left: string[] = [];
      for await (const info of listArtifacts(artifacts)) left.push(info.ref.id);
      // Each run keeps its own artifact and its upload; the shared pool adds at most its 12 payloads.
      expect(left.length).toBeGreaterThanOrEqual(2 * 2 * RUNS);
      expect(left.length).toBeLessThanOrEqual(2 * 2 * RUNS + 12);
      expect(last.kept.inGrace).toBe(0);
      expect(last.victims.filter((v) => v.reason !== 'unreferenced')).toEqual([]);

      const written = done.reduce((n, d) => n + d.artifacts, 0);
      console.log(
        `[gc under load] ${2 * RUNS} runs in ${((Date.now() - started) / 1000).toFixed(1)} s, ${written} artifact writes, ${passes} collector passes while writing, ` +
          `${collected} artifacts collected, ${refreshed} candidates refreshed by a writer between listing and delete (kept), ${left.length} left, 0 dangling`,
      );
      expect(passes).toBeGreaterThanOrEqual(3);
      expect(collected).toBeGreaterThan(0);
    } finally {
      await engine.close();
      await artifacts.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});
