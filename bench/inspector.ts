/**
 * @module bench/inspector
 *
 * The web inspector at scale, on SQLite and on PostgreSQL: its HTTP API (the real
 * server of `startInspector`, real `fetch`) over 100,000 threads and one thread of
 * 10,000 positions.
 *
 * - Thread list: every page of 50, walked from the first to the last through `next`
 *   (median and p95 ms a page), then single pages requested again and again: the first,
 *   a deep one (after thread 90,000), filtered ones (status, tenant + kind, metadata,
 *   id prefix, most recently updated, updated since). Goal: ≤ 50 ms a page. Beside each,
 *   the raw database baseline: the single SELECT of the same rows on the same
 *   connection kind (better-sqlite3 / a pg pool), without the server, JSON or the head join.
 * - Opening a thread: the requests the thread page sends first (`/api/threads/:id`,
 *   `/history`, `/timeline`, `/graph`, `/effects`, `/verify`), each timed alone
 *   (median), summed.
 *   Goal: ≤ 300 ms. Baseline: the thread row plus the newest 51 positions, raw.
 *
 * Seeding is documented and direct: the engine creates its schema (its migrations),
 * then the 100,000 thread rows go in with one multi-row INSERT per 1,000 (SQLite, in one
 * transaction) or one INSERT ... SELECT over generate_series (PostgreSQL), the way
 * `cairn import` would leave them but without 100,000 lease round trips. The 10,000
 * positions are real commits of a real app (one step per position), so their rows,
 * hashes and items are what cairn writes.
 *
 * Knobs: CAIRN_BENCH_INSPECTOR_THREADS (100000), CAIRN_BENCH_INSPECTOR_POSITIONS
 * (10000), CAIRN_BENCH_INSPECTOR_ROUNDS (30 requests per single-page figure).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { z } from 'zod';
import { END, START, defineState, field, graph } from '../dist/index.js';
import type { Engine } from '../dist/contracts/engine.js';
import { postgres } from '../dist/engines/postgres/index.js';
import { sqlite } from '../dist/engines/sqlite/index.js';
import { startInspector } from '../dist/inspector/index.js';
import { median } from './measure.js';
import { PG_URL } from './postgres.js';

export const INSPECTOR_THREADS = Number(process.env.CAIRN_BENCH_INSPECTOR_THREADS ?? 100_000);
export const INSPECTOR_POSITIONS = Number(process.env.CAIRN_BENCH_INSPECTOR_POSITIONS ?? 10_000);
const ROUNDS = Number(process.env.CAIRN_BENCH_INSPECTOR_ROUNDS ?? 30);

/** The goals, ms. */
export const PAGE_GOAL_MS = 50;
export const OPEN_GOAL_MS = 300;

/** The thread of many positions (its id sorts after every seeded one). */
const LONG_THREAD = 'zz-long';
const STATUS_MIX = ['completed', 'completed', 'completed', 'completed', 'completed', 'completed', 'completed', 'running', 'failed', 'interrupted', 'waiting', 'needs_attention'];
const KINDS = ['conversation', 'task', 'session', 'workflow'];
const T0 = Date.UTC(2026, 10, 1);

/** Seeded thread i: ids in an order unlike insertion order (tid order is not id order), a status mix, 100 tenants, 5 queues and a rare flag. */
function threadRow(i: number, n: number) {
  const k = (i * 7919) % n; // a permutation of 0..n-1 (7919 is prime, n is not a multiple of it)
  const created = T0 + k * 1000;
  return {
    id: `th-${String(k).padStart(6, '0')}`,
    kind: KINDS[k % 4]!,
    status: STATUS_MIX[k % STATUS_MIX.length]!,
    tenant: `tenant-${String(k % 100).padStart(3, '0')}`,
    metadata: JSON.stringify({ queue: `q${k % 5}`, graph: 'bench', ...(k % 1000 === 7 ? { flagged: true } : {}) }),
    created,
    updated: created + (k % 97) * 60_000,
  };
}

const Entry = z.object({ i: z.number(), text: z.string() });
const LongState = defineState({
  fields: { step: field.model(z.number(), { default: 0 }), log: field.model(z.array(Entry), { reduce: 'append', default: [] }) },
});

/** n positions: the input, then one step per position, each appending a ~80-byte entry. */
async function seedLongThread(engine: Engine, positions: number): Promise<void> {
  const app = graph(LongState)
    .node('work', (s) => ({ step: s.step + 1, log: [{ i: s.step, text: `step ${s.step} of the long thread: some tool output` }] }))
    .edge(START, 'work')
    .conditionalEdge('work', (s) => (s.step < positions - 1 ? 'work' : END))
    .compile({ engine, recursionLimit: positions + 5 });
  await app.run({ thread: LONG_THREAD, input: {} });
}

/** The seeded threads and their heads in the SQLite file (migrated already). */
export function seedSqlite(file: string, n: number): void {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  const columns = '(id, kind, status, attempts, tenant, metadata, epoch, created_at, updated_at)';
  const batch = 1000;
  const insert = db.prepare(`INSERT INTO cairn_threads ${columns} VALUES ${Array.from({ length: batch }, () => '(?, ?, ?, 1, ?, ?, 0, ?, ?)').join(', ')}`);
  db.transaction(() => {
    for (let from = 0; from < n; from += batch) {
      const values: unknown[] = [];
      for (let i = from; i < from + batch; i++) {
        const r = threadRow(i, n);
        values.push(r.id, r.kind, r.status, r.tenant, r.metadata, r.created, r.updated);
      }
      insert.run(...values);
    }
  })();
  db.exec(HEADS_SQL);
  db.exec(SECONDS_SQL);
  db.exec('ANALYZE');
  db.close();
}

/**
 * Every seeded thread's root head: a thread that ran has one, and listing joins it (its
 * time is the thread's updatedAt when newer than the row's). Their positions are not
 * seeded: listing never reads them. A third of the heads are newer than the row (a step
 * after the last status change), the others a little older.
 */
const HEADS_SQL = `INSERT INTO cairn_heads (tid, ns, seq, hash, created_at)
  SELECT t.tid, '', 3, randomblob(32), t.updated_at + CASE WHEN t.tid % 3 = 0 THEN 45000 ELSE -5000 END FROM cairn_threads t`;

/** Each seeded thread's second of updatedAt (the row's time or its head's, the later), as cairn keeps it on the row. */
const SECONDS_SQL = `UPDATE cairn_threads SET updated_second = (updated_at + CASE WHEN tid % 3 = 0 THEN 45000 ELSE 0 END) / 1000`;

/** The seeded threads and their heads in `schema` (migrated already). */
export async function seedPostgres(pool: pg.Pool, schema: string, n: number): Promise<void> {
  // The same rows as threadRow, computed by the server.
  await pool.query(`
    INSERT INTO "${schema}".cairn_threads (id, kind, status, attempts, tenant, metadata, epoch, created_at, updated_at)
    SELECT 'th-' || lpad(k::text, 6, '0'),
           ($2::text[])[k % 4 + 1], ($3::text[])[k % ${STATUS_MIX.length} + 1], 1,
           'tenant-' || lpad((k % 100)::text, 3, '0'),
           json_build_object('queue', 'q' || (k % 5), 'graph', 'bench')::jsonb || CASE WHEN k % 1000 = 7 THEN '{"flagged": true}'::jsonb ELSE '{}'::jsonb END,
           0, $4::bigint + k * 1000, $4::bigint + k * 1000 + (k % 97) * 60000
    FROM (SELECT (i::bigint * 7919) % $1 AS k FROM generate_series(0, $1 - 1) AS i) s`,
    [n, KINDS, STATUS_MIX, T0],
  );
  await pool.query(`SET search_path TO "${schema}"; ${HEADS_SQL.replace('randomblob(32)', "sha256(t.tid::text::bytea)")}; ${SECONDS_SQL}`);
  // What autovacuum does soon after a bulk insert: statistics, and the visibility map that lets index-only scans skip the heap.
  for (const table of ['cairn_threads', 'cairn_heads']) await pool.query(`VACUUM (ANALYZE) "${schema}".${table}`);
}

/** One figure: a request timed `rounds` times, beside its raw baseline. */
export interface PageFigure {
  what: string;
  query: string;
  medianMs: number;
  p95Ms: number;
  rows: number;
  rawMs: number;
}

export interface OpenFigure {
  path: string;
  medianMs: number;
  bytes: number;
}

export interface InspectorBenchResult {
  engine: 'sqlite' | 'postgres';
  threads: number;
  positions: number;
  seedSeconds: { threads: number; positions: number };
  walk: { pages: number; threads: number; totalMs: number; medianMs: number; p95Ms: number };
  pages: PageFigure[];
  open: { requests: OpenFigure[]; sumMs: number; withoutVerifyMs: number; rawMs: number };
  /** 1-minute load average when the measuring started and ended (a busy machine inflates every figure). */
  loadAverage: { start: number; end: number; cores: number };
}

const p95 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil(xs.length * 0.95) - 1)]!;

async function timed<T>(fn: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const t0 = performance.now();
  const value = await fn();
  return { ms: performance.now() - t0, value };
}

/** `fn` twice to warm up, then `rounds` times: the timings. */
async function sample(fn: () => Promise<unknown>, rounds = ROUNDS): Promise<number[]> {
  await fn();
  await fn();
  const times: number[] = [];
  for (let i = 0; i < rounds; i++) times.push((await timed(fn)).ms);
  return times;
}

interface RawDb {
  /** Runs `sql` (positional `?` parameters; rewritten to $n on PostgreSQL) and returns its rows. */
  all(sql: string, params: unknown[]): Promise<unknown[]>;
  close(): Promise<void>;
}

/** One engine's run: seed, serve, measure. */
async function measure(kind: 'sqlite' | 'postgres', engine: () => Engine, raw: RawDb, seeded: number, seedPositions: () => Promise<number>): Promise<InspectorBenchResult> {
  const positionsSeconds = await seedPositions();
  const loadAtStart = loadavg()[0]!;
  const e = engine();
  const inspector = await startInspector({ engine: e });
  const base = inspector.url.slice(0, inspector.url.indexOf('/?token='));
  const get = async (path: string): Promise<{ body: unknown; bytes: number }> => {
    const response = await fetch(`${base}${path}${path.includes('?') ? '&' : '?'}token=${inspector.token}`);
    const text = await response.text();
    if (response.status !== 200) throw new Error(`[bench inspector] ${path}: ${response.status} ${text.slice(0, 300)}`);
    return { body: JSON.parse(text), bytes: text.length };
  };
  type Page = { threads: { id: string; updatedAt: number }[]; next: string | null };
  try {
    // The whole list, page after page.
    const walkTimes: number[] = [];
    let after: string | null = null;
    let count = 0;
    let deepCursor: string | null = null;
    let deepId = '';
    let updatedCursor: string | null = null;
    let updatedLast: { id: string; updatedAt: number } | undefined;
    do {
      const { ms, value } = await timed(() => get(`/api/threads?limit=50${after ? `&after=${after}` : ''}`));
      const page = value.body as Page;
      walkTimes.push(ms);
      count += page.threads.length;
      after = page.next;
      if (count === Math.floor(seeded * 0.9)) {
        deepCursor = after;
        deepId = page.threads.at(-1)!.id;
      }
    } while (after);
    if (count !== seeded + 1) throw new Error(`[bench inspector] walked ${count} threads, expected ${seeded + 1}`);
    // A page of the updatedAt order 100 pages in.
    let cursor: string | null = null;
    for (let i = 0; i < 100; i++) {
      const page = (await get(`/api/threads?order=updatedAt&limit=50${cursor ? `&after=${cursor}` : ''}`)).body as Page;
      cursor = page.next;
      updatedLast = page.threads.at(-1);
    }
    updatedCursor = cursor;
    const since = T0 + seeded * 1000 - 3_600_000;
    // On SQLite a metadata value's baseline reads the index the engine reads (cairn_thread_metadata), as PostgreSQL's uses its GIN index.
    const rawSelect = 'SELECT * FROM cairn_threads';
    const cases: { what: string; query: string; raw: [string, unknown[]] }[] = [
      { what: 'first page', query: '', raw: [`${rawSelect} ORDER BY id LIMIT 51`, []] },
      { what: 'deep page (after 90%)', query: `after=${deepCursor}`, raw: [`${rawSelect} WHERE id > ? ORDER BY id LIMIT 51`, [deepId]] },
      { what: 'status=failed', query: 'status=failed', raw: [`${rawSelect} WHERE status IN (?) ORDER BY id LIMIT 51`, ['failed']] },
      { what: 'status=failed,needs_attention deep', query: `status=failed,needs_attention&after=${deepCursor}`, raw: [`${rawSelect} WHERE status IN (?, ?) AND id > ? ORDER BY id LIMIT 51`, ['failed', 'needs_attention', deepId]] },
      { what: 'tenant + kind', query: 'tenant=tenant-042&kind=session', raw: [`${rawSelect} WHERE tenant = ? AND kind IN (?) ORDER BY id LIMIT 51`, ['tenant-042', 'session']] },
      { what: 'meta queue=q3 (20%)', query: 'meta=queue%3Dq3', raw: [kind === 'postgres' ? `${rawSelect} WHERE cairn_json(metadata) @> ?::jsonb ORDER BY id LIMIT 51` : `${rawSelect} t WHERE EXISTS (SELECT 1 FROM cairn_thread_metadata m WHERE m.key = 'queue' AND m.atom = ? AND m.tid = t.tid) ORDER BY id LIMIT 51`, [kind === 'postgres' ? '{"queue":"q3"}' : 'q3']] },
      { what: 'meta flagged=true (0.1%)', query: 'meta=flagged%3Dtrue', raw: [kind === 'postgres' ? `${rawSelect} WHERE cairn_json(metadata) @> ?::jsonb ORDER BY id LIMIT 51` : `${rawSelect} WHERE tid IN (SELECT tid FROM cairn_thread_metadata WHERE key = 'flagged' AND atom = ?) ORDER BY id LIMIT 51`, [kind === 'postgres' ? '{"flagged":true}' : 1]] },
      { what: 'id prefix q=th-0421', query: 'q=th-0421', raw: [`${rawSelect} WHERE id >= ? AND id < ? ORDER BY id LIMIT 51`, ['th-0421', 'th-0422']] },
      { what: 'order=updatedAt first', query: 'order=updatedAt', raw: [`${rawSelect} ORDER BY updated_at DESC, id LIMIT 51`, []] },
      {
        what: 'order=updatedAt 100 pages in',
        query: `order=updatedAt&after=${updatedCursor}`,
        raw: [`${rawSelect} WHERE updated_at < ? OR (updated_at = ? AND id > ?) ORDER BY updated_at DESC, id LIMIT 51`, [updatedLast!.updatedAt, updatedLast!.updatedAt, updatedLast!.id]],
      },
      { what: 'updatedSince 1 h, by update', query: `updatedSince=${since}&order=updatedAt`, raw: [`${rawSelect} WHERE updated_at >= ? ORDER BY updated_at DESC, id LIMIT 51`, [since]] },
    ];
    const pages: PageFigure[] = [];
    for (const c of cases) {
      let rows = 0;
      const times = await sample(async () => {
        rows = ((await get(`/api/threads?limit=50${c.query ? `&${c.query}` : ''}`)).body as Page).threads.length;
      });
      const rawTimes = await sample(() => raw.all(c.raw[0], c.raw[1]));
      pages.push({ what: c.what, query: c.query, medianMs: median(times), p95Ms: p95(times), rows, rawMs: median(rawTimes) });
    }

    // Opening the long thread: what the page asks first, each request alone.
    const id = encodeURIComponent(LONG_THREAD);
    // What inspector-ui/src/thread.tsx and its views ask for; the head's state is the position page's, not this one's.
    const paths = [`/api/threads/${id}`, `/api/threads/${id}/history`, `/api/threads/${id}/timeline?limit=50`, `/api/threads/${id}/graph`, `/api/threads/${id}/effects`, `/api/threads/${id}/verify`];
    const requests: OpenFigure[] = [];
    for (const path of paths) {
      let bytes = 0;
      const times = await sample(async () => {
        bytes = (await get(path)).bytes;
      }, Math.max(5, Math.floor(ROUNDS / 3)));
      requests.push({ path: path.replace(id, ':id'), medianMs: median(times), bytes });
    }
    const sumMs = requests.reduce((s, r) => s + r.medianMs, 0);
    const withoutVerifyMs = requests.filter((r) => !r.path.endsWith('/verify')).reduce((s, r) => s + r.medianMs, 0);
    const rawOpen = await sample(async () => {
      const [thread] = (await raw.all('SELECT * FROM cairn_threads WHERE id = ?', [LONG_THREAD])) as { tid: number }[];
      await raw.all("SELECT * FROM cairn_positions WHERE tid = ? AND ns = '' ORDER BY seq DESC LIMIT 51", [thread!.tid]);
    });
    return {
      engine: kind,
      threads: seeded + 1,
      positions: INSPECTOR_POSITIONS,
      seedSeconds: { threads: 0, positions: positionsSeconds },
      walk: { pages: walkTimes.length, threads: count, totalMs: walkTimes.reduce((a, b) => a + b, 0), medianMs: median(walkTimes), p95Ms: p95(walkTimes) },
      pages,
      open: { requests, sumMs, withoutVerifyMs, rawMs: median(rawOpen) },
      loadAverage: { start: loadAtStart, end: loadavg()[0]!, cores: cpus().length },
    };
  } finally {
    await inspector.close();
    await e.close();
    await raw.close();
  }
}

/** The inspector figures on a SQLite file in a fresh temp dir. */
export async function benchInspectorSqlite(progress: (m: string) => void): Promise<InspectorBenchResult> {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-bench-inspector-'));
  const file = join(dir, 'cairn.db');
  try {
    const migrate = sqlite(file);
    await migrate.checkpointer.listThreads({ limit: 1 });
    await migrate.close();
    progress(`[inspector sqlite] seeding ${INSPECTOR_THREADS} threads (direct INSERT)...`);
    const t0 = performance.now();
    seedSqlite(file, INSPECTOR_THREADS);
    const threadsSeconds = (performance.now() - t0) / 1000;
    const db = new Database(file, { readonly: true });
    const raw: RawDb = { all: async (sql, params) => db.prepare(sql).all(...params), close: async () => void db.close() };
    const result = await measure('sqlite', () => sqlite(file, { readOnly: true }), raw, INSPECTOR_THREADS, async () => {
      progress(`[inspector sqlite] committing ${INSPECTOR_POSITIONS} positions...`);
      const engine = sqlite(file);
      const t1 = performance.now();
      await seedLongThread(engine, INSPECTOR_POSITIONS);
      await engine.close();
      progress('[inspector sqlite] measuring...');
      return (performance.now() - t1) / 1000;
    });
    result.seedSeconds.threads = threadsSeconds;
    return result;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The inspector figures on a fresh schema of the local PostgreSQL. */
export async function benchInspectorPostgres(progress: (m: string) => void): Promise<InspectorBenchResult> {
  const pool = new pg.Pool({ connectionString: PG_URL, max: 4 });
  const schema = `cairn_bench_inspector_${Date.now()}`;
  try {
    await pool.query(`CREATE SCHEMA "${schema}"`);
    const migrate = postgres(PG_URL, { schema });
    await migrate.checkpointer.listThreads({ limit: 1 });
    await migrate.close();
    progress(`[inspector postgres] seeding ${INSPECTOR_THREADS} threads (INSERT ... SELECT)...`);
    const t0 = performance.now();
    await seedPostgres(pool, schema, INSPECTOR_THREADS);
    const threadsSeconds = (performance.now() - t0) / 1000;
    const client = await pool.connect();
    await client.query(`SET search_path TO "${schema}"`);
    const raw: RawDb = {
      all: async (sql, params) => {
        let n = 0;
        return (await client.query(sql.replace(/\?/g, () => `$${++n}`), params)).rows;
      },
      close: async () => client.release(),
    };
    const result = await measure('postgres', () => postgres(PG_URL, { schema }), raw, INSPECTOR_THREADS, async () => {
      progress(`[inspector postgres] committing ${INSPECTOR_POSITIONS} positions...`);
      const engine = postgres(PG_URL, { schema });
      const t1 = performance.now();
      await seedLongThread(engine, INSPECTOR_POSITIONS);
      await engine.close();
      await pool.query(`ANALYZE "${schema}".cairn_positions`);
      progress('[inspector postgres] measuring...');
      return (performance.now() - t1) / 1000;
    });
    result.seedSeconds.threads = threadsSeconds;
    return result;
  } finally {
    await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await pool.end();
  }
}

if (process.argv[1]?.endsWith('bench/inspector.ts')) {
  const which = process.argv[2] ?? 'sqlite,postgres';
  const log = (m: string) => process.stderr.write(`${m}\n`);
  for (const kind of which.split(',')) {
    const result = kind === 'postgres' ? await benchInspectorPostgres(log) : await benchInspectorSqlite(log);
    console.log(JSON.stringify(result, null, 2));
  }
}
