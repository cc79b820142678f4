/**
 * @module bench/langgraph-savers
 *
 * The shared workload (one ~1 KB message appended per step) through LangGraph.js
 * itself, with one checkpointer swapped: cairn's `CairnSaver` (on SQLite and on
 * PostgreSQL) beside LangGraph's `SqliteSaver` (its default reducer and the beta
 * `DeltaChannel`) and `PostgresSaver`. The graph, the run and the step timing are
 * those of bench/langgraph.ts (one run of a self-looping node, `durability: "sync"`,
 * a step from one node update to the next), so only the saver differs.
 * `cairn-sqlite-8k` is CairnSaver on a SQLite file created with 8 KiB pages
 * (`sqlite(path, { pageSize: 8192 })`), which packs ~1 KB messages seven to a page.
 *
 * Figures per saver and N: ms per step over the first and the last 100 steps, the
 * database's bytes (SQLite: main + WAL after `wal_checkpoint(TRUNCATE)`; PostgreSQL:
 * `pg_total_relation_size` of the schema's tables), and the history of the newest
 * 1,000 positions (`saver.list(..., { limit: 1000 })` drained, with a fresh saver on
 * the same database, every state deserialized). Savers whose storage grows with
 * steps × state (SqliteSaver default, PostgresSaver) run up to N = 1000 only.
 *
 * Usage: tsx bench/langgraph-savers.ts [--n=1000,5000] [--only=cairn-sqlite,...] [--json]
 * (run.ts runs it as its last section; the dist/ build must be current).
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import pg from 'pg';
import { MemorySaver, type BaseCheckpointSaver } from '@langchain/langgraph-checkpoint';
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';
import { sqlite } from '../dist/engines/sqlite/index.js';
import { postgres } from '../dist/engines/postgres/index.js';
import { CairnSaver } from '../dist/langgraph/index.js';
import { LANGGRAPH_THREAD_ID, buildAppendGraph, runTimed, type LangGraphMode } from './langgraph-graph.js';
import { firstLastMeans } from './measure.js';
import { payloadBytes } from './workload.js';

export const SAVERS = ['cairn-sqlite', 'cairn-sqlite-8k', 'sqlite-default', 'sqlite-delta', 'cairn-postgres', 'postgres-default'] as const;
export type SaverKey = (typeof SAVERS)[number];

/** Savers that store the whole list at every step: N beyond this takes hours and gigabytes. */
const MAX_N: Partial<Record<SaverKey, number>> = { 'sqlite-default': 1000, 'postgres-default': 1000 };

const PG_URL = process.env.CAIRN_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

export interface SaverResult {
  saver: SaverKey;
  n: number;
  firstMsPerStep: number;
  lastMsPerStep: number;
  dbBytes: number;
  payloadBytes: number;
  history1000Ms: number;
  history1000Count: number;
}

/** A saver on a fresh database, and how to measure and drop it. */
interface Contender {
  mode: LangGraphMode;
  saver: BaseCheckpointSaver;
  /** A second saver on the same database, for the history (nothing cached from the run). */
  reopen(): Promise<BaseCheckpointSaver>;
  bytes(): Promise<number>;
  close(): Promise<void>;
}

async function contender(key: SaverKey, dir: string): Promise<Contender> {
  const file = join(mkdtempSync(join(dir, `${key}-`)), 'db.sqlite');
  const schema = `bench_${key.replace('-', '_')}_${process.pid}_${Date.now()}`;
  switch (key) {
    case 'cairn-sqlite':
    case 'cairn-sqlite-8k': {
      // cairn-sqlite-8k: the same on a file created with 8 KiB pages (`sqlite(path, { pageSize: 8192 })`).
      const options = key === 'cairn-sqlite-8k' ? { pageSize: 8192 } : {};
      const engines = [sqlite(file, options)];
      return {
        mode: 'default',
        saver: new CairnSaver({ engine: engines[0]! }),
        reopen: async () => new CairnSaver({ engine: engines[engines.push(sqlite(file, options)) - 1]! }),
        bytes: async () => {
          for (const e of engines) await e.close();
          engines.length = 0;
          return sqliteBytes(file);
        },
        close: async () => {
          for (const e of engines) await e.close();
        },
      };
    }
    case 'sqlite-default':
    case 'sqlite-delta': {
      const dbs = [new Database(file)];
      dbs[0]!.pragma('journal_mode = WAL');
      dbs[0]!.pragma('synchronous = FULL');
      return {
        mode: key === 'sqlite-delta' ? 'delta' : 'default',
        saver: new SqliteSaver(dbs[0]!),
        reopen: async () => new SqliteSaver(dbs[dbs.push(new Database(file)) - 1]!),
        bytes: async () => {
          for (const db of dbs) db.close();
          dbs.length = 0;
          return sqliteBytes(file);
        },
        close: async () => {
          for (const db of dbs) if (db.open) db.close();
        },
      };
    }
    case 'cairn-postgres': {
      const engines = [postgres(PG_URL, { schema })];
      return {
        mode: 'default',
        saver: new CairnSaver({ engine: engines[0]! }),
        reopen: async () => new CairnSaver({ engine: engines[engines.push(postgres(PG_URL, { schema })) - 1]! }),
        bytes: () => schemaBytes(schema),
        close: async () => {
          for (const e of engines) await e.close();
          await dropSchema(schema);
        },
      };
    }
    case 'postgres-default': {
      const pool = new pg.Pool({ connectionString: PG_URL, max: 4 });
      await pool.query(`CREATE SCHEMA "${schema}"`);
      const saver = new PostgresSaver(pool, undefined, { schema });
      await saver.setup();
      return {
        mode: 'default',
        saver,
        reopen: async () => new PostgresSaver(pool, undefined, { schema }),
        bytes: () => schemaBytes(schema),
        close: async () => {
          await pool.end();
          await dropSchema(schema);
        },
      };
    }
  }
}

function sqliteBytes(file: string): number {
  const db = new Database(file);
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
  let total = 0;
  for (const f of [file, `${file}-wal`]) {
    try {
      total += statSync(f).size;
    } catch {
      // no WAL file
    }
  }
  return total;
}

async function withPool<T>(fn: (pool: pg.Pool) => Promise<T>): Promise<T> {
  const pool = new pg.Pool({ connectionString: PG_URL, max: 1 });
  try {
    return await fn(pool);
  } finally {
    await pool.end();
  }
}

function schemaBytes(schema: string): Promise<number> {
  return withPool(async (pool) => {
    await pool.query('CHECKPOINT');
    const { rows } = await pool.query<{ bytes: string }>(
      `SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0)::bigint AS bytes FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'`,
      [schema],
    );
    return Number(rows[0]!.bytes);
  });
}

function dropSchema(schema: string): Promise<void> {
  return withPool(async (pool) => {
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  });
}

/** Runs the workload to `n` messages through `key`'s saver and measures it. */
export async function benchSaver(key: SaverKey, n: number): Promise<SaverResult> {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-lg-savers-'));
  const c = await contender(key, dir);
  try {
    // Open the database (tables, migrations) before the clock, as bench/langgraph.ts does for SqliteSaver.
    await c.saver.getTuple({ configurable: { thread_id: LANGGRAPH_THREAD_ID } });
    const graph = buildAppendGraph({ mode: c.mode, n, saver: c.saver as SqliteSaver });
    const stepMs = await runTimed(graph, n);
    if (c.saver instanceof CairnSaver) await c.saver.release();

    const fresh = await c.reopen();
    const t0 = performance.now();
    let count = 0;
    for await (const _tuple of fresh.list({ configurable: { thread_id: LANGGRAPH_THREAD_ID, checkpoint_ns: '' } }, { limit: 1000 })) count++;
    const history1000Ms = performance.now() - t0;
    return { saver: key, n, ...firstLastMeans(stepMs), dbBytes: await c.bytes(), payloadBytes: payloadBytes(n), history1000Ms, history1000Count: count };
  } finally {
    await c.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/**
 * The savers run one after the other in one process: the first would pay for
 * compiling LangGraph's own loop (its JIT warm-up) in its first-100 figure. A run of the
 * same graph on LangGraph's in-memory saver warms that shared code first, so each
 * saver's figures carry only its own cold start.
 */
async function warmLangGraph(): Promise<void> {
  const n = 300;
  await runTimed(buildAppendGraph({ mode: 'default', n, saver: new MemorySaver() as unknown as SqliteSaver }), n);
  await runTimed(buildAppendGraph({ mode: 'delta', n, saver: new MemorySaver() as unknown as SqliteSaver }), n);
}

/** Every saver at every N (skipping those beyond their {@link MAX_N}), one after the other. */
export async function benchSavers(sizes: number[], only: readonly SaverKey[] = SAVERS, progress: (line: string) => void = () => undefined): Promise<SaverResult[]> {
  const results: SaverResult[] = [];
  progress('[langgraph savers] warming LangGraph itself (in-memory saver, 2 × 300 steps)...');
  await warmLangGraph();
  for (const n of sizes) {
    for (const key of only) {
      if ((MAX_N[key] ?? Infinity) < n) {
        progress(`[langgraph savers] N=${n} ${key}: skipped (stores the whole list at every step; runs up to N=${MAX_N[key]})`);
        continue;
      }
      progress(`[langgraph savers] N=${n} ${key}...`);
      results.push(await benchSaver(key, n));
    }
  }
  return results;
}

/** The table, and each cairn saver's ratio to each LangGraph saver on the same engine family (>1: cairn is better). */
export function printSavers(results: SaverResult[]): void {
  console.log('\n=== LangGraph.js with each checkpointer: one ~1 KB message per step ===');
  console.log('saver             N      first-100 ms  last-100 ms   DB MB    DB/payload  history-1000 ms');
  for (const r of results) {
    console.log(
      `${r.saver.padEnd(16)} ${String(r.n).padStart(5)}  ${r.firstMsPerStep.toFixed(2).padStart(12)}  ${r.lastMsPerStep.toFixed(2).padStart(11)}  ${(r.dbBytes / 1e6).toFixed(2).padStart(7)}  ${(r.dbBytes / r.payloadBytes).toFixed(2).padStart(10)}x  ${r.history1000Ms.toFixed(0).padStart(15)}`,
    );
  }
  for (const cairn of results.filter((r) => r.saver.startsWith('cairn-'))) {
    // Each cairn saver against LangGraph's savers on the same engine (SQLite with SQLite, PostgreSQL with PostgreSQL).
    const engine = cairn.saver.slice('cairn-'.length).replace(/-8k$/, '');
    for (const other of results.filter((r) => r.saver.startsWith(`${engine}-`) && r.n === cairn.n)) {
      const ratios = [
        ['first-100', other.firstMsPerStep / cairn.firstMsPerStep],
        ['last-100', other.lastMsPerStep / cairn.lastMsPerStep],
        ['DB bytes', other.dbBytes / cairn.dbBytes],
        ['history-1000', other.history1000Ms / cairn.history1000Ms],
      ] as const;
      console.log(`  ${cairn.saver} vs ${other.saver} (N=${cairn.n}): ${ratios.map(([name, x]) => `${name} ${x.toFixed(2)}x ${x > 1 ? 'PASS' : 'MISS'}`).join(', ')}`);
    }
    const drift = cairn.lastMsPerStep / cairn.firstMsPerStep;
    console.log(`  ${cairn.saver} (N=${cairn.n}): per-step drift last/first ${drift.toFixed(2)}x; DB bytes ${(cairn.dbBytes / cairn.payloadBytes).toFixed(2)}x payload (goal <= 1.5x: ${cairn.dbBytes <= 1.5 * cairn.payloadBytes ? 'PASS' : 'MISS'})`);
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const argv = process.argv.slice(2);
  const sizes = (argv.find((a) => a.startsWith('--n='))?.slice(4) ?? '1000,5000').split(',').map(Number);
  const only = (argv.find((a) => a.startsWith('--only='))?.slice(7).split(',') as SaverKey[] | undefined) ?? [...SAVERS];
  for (const key of only) if (!(SAVERS as readonly string[]).includes(key)) throw new Error(`unknown saver ${key}; one of ${SAVERS.join(', ')}`);
  const results = await benchSavers(sizes, only, (line) => process.stderr.write(`${line}\n`));
  if (argv.includes('--json')) console.log(JSON.stringify(results, null, 2));
  else printSavers(results);
}
