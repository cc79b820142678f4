/**
 * @module bench/listing
 *
 * `listThreads` over a million threads, on SQLite and on PostgreSQL: the pages an
 * operator or a dashboard asks for (the first, a deep one, by status, by tenant and
 * kind, by a rare metadata value, by a common one, by id prefix, most recently
 * updated, updated since), each timed ROUNDS times through the engine's own
 * `checkpointer.listThreads` (median and p95 ms a page of 50). Goal: ≤ 20 ms a page.
 *
 * The threads are seeded the way the inspector bench seeds them (`seedSqlite` /
 * `seedPostgres`: direct multi-row INSERTs after the engine's migrations, the
 * metadata index kept by its triggers), so their rows are what cairn reads.
 *
 * Usage: tsx bench/listing.ts [--json] [--no-postgres]; knobs CAIRN_BENCH_LISTING_THREADS
 * (1000000), CAIRN_BENCH_LISTING_ROUNDS (30). run.ts runs it with `--listing-only`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import type { Engine } from '../dist/contracts/engine.js';
import type { ThreadQuery } from '../dist/contracts/threads.js';
import { postgres } from '../dist/engines/postgres/index.js';
import { sqlite } from '../dist/engines/sqlite/index.js';
import { seedPostgres, seedSqlite } from './inspector.js';
import { median } from './measure.js';
import { PG_URL } from './postgres.js';

export const LISTING_THREADS = Number(process.env.CAIRN_BENCH_LISTING_THREADS ?? 1_000_000);
const ROUNDS = Number(process.env.CAIRN_BENCH_LISTING_ROUNDS ?? 30);
export const LISTING_GOAL_MS = 20;
const PAGE = 50;

export interface ListingFigure {
  what: string;
  medianMs: number;
  p95Ms: number;
  rows: number;
}

export interface ListingBenchResult {
  engine: 'sqlite' | 'postgres';
  threads: number;
  seedSeconds: number;
  figures: ListingFigure[];
  loadAverage: { start: number; end: number; cores: number };
}

/** The pages measured; `after` ids are seeded ones (`th-` + six digits). */
function queries(n: number): { what: string; query: ThreadQuery }[] {
  const deep = `th-${String(Math.floor(n * 0.9)).padStart(6, '0')}`;
  return [
    { what: 'first page', query: { limit: PAGE } },
    { what: `deep page (after ${deep})`, query: { after: deep, limit: PAGE } },
    { what: 'status failed', query: { status: 'failed', limit: PAGE } },
    { what: 'tenant + kind', query: { tenant: 'tenant-042', kind: 'session', limit: PAGE } },
    { what: 'metadata, a rare value (0.1 %)', query: { metadata: { flagged: true }, limit: PAGE } },
    { what: 'metadata, a common value (20 %)', query: { metadata: { queue: 'q3' }, limit: PAGE } },
    { what: 'id prefix th-0421', query: { idPrefix: 'th-0421', limit: PAGE } },
    { what: 'most recently updated', query: { order: 'updatedAt', limit: PAGE } },
    { what: 'updated since (newest 1 %)', query: { updatedAt: { from: Date.UTC(2026, 10, 1) + n * 990 }, limit: PAGE } },
  ];
}

async function measure(kind: ListingBenchResult['engine'], engine: Engine, n: number, seedSeconds: number, loadStart: number): Promise<ListingBenchResult> {
  const figures: ListingFigure[] = [];
  for (const { what, query } of queries(n)) {
    const times: number[] = [];
    let rows = 0;
    for (let round = 0; round < ROUNDS + 2; round++) {
      const start = performance.now();
      const page = await engine.checkpointer.listThreads(query);
      const ms = performance.now() - start;
      if (round >= 2) times.push(ms); // two warm-up rounds: prepared statements, the page cache
      rows = page.length;
    }
    times.sort((a, b) => a - b);
    figures.push({ what, medianMs: median(times), p95Ms: times[Math.min(times.length - 1, Math.floor(times.length * 0.95))]!, rows });
  }
  return { engine: kind, threads: n, seedSeconds, figures, loadAverage: { start: loadStart, end: loadavg()[0]!, cores: cpus().length } };
}

export async function benchListingSqlite(n = LISTING_THREADS): Promise<ListingBenchResult> {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-bench-listing-'));
  const file = join(dir, 'cairn.db');
  const loadStart = loadavg()[0]!;
  try {
    const migrate = sqlite(file);
    await migrate.checkpointer.listThreads({ limit: 1 }); // creates and migrates the file
    await migrate.close();
    const seedStart = performance.now();
    seedSqlite(file, n);
    const seedSeconds = (performance.now() - seedStart) / 1000;
    const engine = sqlite(file, { readOnly: true });
    try {
      return await measure('sqlite', engine, n, seedSeconds, loadStart);
    } finally {
      await engine.close();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export async function benchListingPostgres(n = LISTING_THREADS): Promise<ListingBenchResult> {
  const schema = `bench_listing_${process.pid}_${Date.now()}`;
  const pool = new pg.Pool({ connectionString: PG_URL, max: 2 });
  const loadStart = loadavg()[0]!;
  const engine = postgres(PG_URL, { schema });
  try {
    await engine.checkpointer.listThreads({ limit: 1 }); // creates and migrates the schema
    const seedStart = performance.now();
    await seedPostgres(pool, schema, n);
    const seedSeconds = (performance.now() - seedStart) / 1000;
    return await measure('postgres', engine, n, seedSeconds, loadStart);
  } finally {
    await engine.close();
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`).catch(() => undefined);
    await pool.end();
  }
}

export function printListing(results: ListingBenchResult[]): void {
  for (const r of results) {
    console.log(`listThreads over ${r.threads.toLocaleString('en')} threads, ${r.engine} (seeded in ${r.seedSeconds.toFixed(1)} s; load average ${r.loadAverage.start.toFixed(1)} → ${r.loadAverage.end.toFixed(1)} on ${r.loadAverage.cores} cores), pages of ${PAGE}, goal ≤ ${LISTING_GOAL_MS} ms:`);
    for (const f of r.figures) {
      const verdict = f.p95Ms <= LISTING_GOAL_MS ? 'ok' : 'MISS';
      console.log(`  ${f.what.padEnd(38)} median ${f.medianMs.toFixed(2).padStart(6)} ms  p95 ${f.p95Ms.toFixed(2).padStart(6)} ms  ${String(f.rows).padStart(3)} rows  ${verdict}`);
    }
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const argv = process.argv.slice(2);
  const results = [await benchListingSqlite()];
  if (!argv.includes('--no-postgres')) results.push(await benchListingPostgres());
  if (argv.includes('--json')) console.log(JSON.stringify(results, null, 2));
  else printListing(results);
}
