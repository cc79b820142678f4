/**
 * Two PROCESSES race `store.update()` on one key, 1,000 increments each, on SQLite
 * (one file) and PostgreSQL (one schema): not one increment may be lost, and the
 * version counts every write. The contenders run test/store/fixtures/updater.mjs
 * against the built package in dist/ (`npm test` builds first). The figures
 * (increments, rounds retried after losing to the other process, time) are printed.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { postgres } from '../../src/engines/postgres/index.js';
import type { Engine } from '../../src/contracts/engine.js';
import { usePostgresSchema } from '../helpers/postgres.js';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const updater = join(root, 'test/store/fixtures/updater.mjs');
const PER_PROCESS = 1000;

interface Report {
  increments: number;
  retries: number;
  ms: number;
}

function contender(args: string[]): Promise<Report> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(process.execPath, [updater, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      if (code !== 0) reject(new Error(`contender exited with ${code}: ${stderr}`));
      else resolveRun(JSON.parse(stdout.trim()) as Report);
    });
  });
}

async function race(engine: Engine, args: (startAt: string) => string[][], label: string): Promise<void> {
  expect(engine.store.capabilities.crossProcess, `${label} declares crossProcess`).toBe(true);
  const startAt = String(Date.now() + 800);
  const started = Date.now();
  const reports = await Promise.all(args(startAt).map(contender));
  const wall = Date.now() - started - 800;
  const counter = await engine.store.get<number>(['race'], 'counter');
  const retries = reports.reduce((sum, r) => sum + r.retries, 0);
  console.log(
    `[store race ${label}] ${reports.length} processes x ${PER_PROCESS} updates: counter ${counter?.value}, version ${counter?.version}, ` +
      `rounds retried ${retries} (${reports.map((r) => r.retries).join(' + ')}), ${reports.map((r) => `${r.ms} ms`).join(' / ')} (wall ~${wall} ms)`,
  );
  expect(reports.map((r) => r.increments)).toEqual([PER_PROCESS, PER_PROCESS]);
  expect(counter).toMatchObject({ value: 2 * PER_PROCESS, version: 2 * PER_PROCESS });
}

beforeAll(() => {
  expect(existsSync(join(root, 'dist/engines/sqlite/index.js')), 'build the package first: npm run build (npm test does)').toBe(true);
});

describe('two processes racing store.update() on one key', () => {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-race-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('SQLite: 2 x 1,000 increments, none lost', async () => {
    const file = join(dir, 'race.db');
    const engine = sqlite(file);
    try {
      await engine.store.get(['race'], 'counter');
      await race(engine, (startAt) => [['sqlite', file, String(PER_PROCESS), startAt], ['sqlite', file, String(PER_PROCESS), startAt]], 'sqlite');
    } finally {
      await engine.close();
    }
  });

  describe('PostgreSQL', () => {
    const pg = usePostgresSchema();
    it('PostgreSQL: 2 x 1,000 increments, none lost', async () => {
      const engine = await pg.engine();
      try {
        await engine.store.get(['race'], 'counter');
        await race(engine, (startAt) => [['postgres', pg.url, pg.schema, String(PER_PROCESS), startAt], ['postgres', pg.url, pg.schema, String(PER_PROCESS), startAt]], 'postgres');
      } finally {
        await engine.close();
      }
    });
  });
});
