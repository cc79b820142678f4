/**
 * @module bench/postgres-cpu
 *
 * What a step commit costs the PostgreSQL server, beside a raw 1 KB INSERT: each
 * contender on a connection of its own, so that the CPU time of the one backend
 * serving it (`/proc/<pid>/schedstat`, ns on the CPU: as bench/scale/db-cpu.ts reads
 * it) is its statement's, read around every statement. The contenders take turns one
 * statement at a time (in alternating order), so drift in the machine's load falls on
 * all of them alike: on a shared machine wall times swing with other work's fsyncs,
 * the backend's CPU much less.
 *
 * A cairn contender commits the bench workload's step through `checkpointer.commitStep`
 * (a ~150 B position body and one ~1 KB item, status running, on one thread) on an
 * engine from `dist/`, or from another build's `dist/engines/postgres/index.js`, to
 * compare two versions in one run. Reported per contender: median and quartiles of
 * CPU ms and wall ms per statement (the first tenth left out), and for cairn the HOT
 * share of the head row's updates and that table's size.
 *
 * Usage: tsx bench/postgres-cpu.ts [N=3000] ['{"name": {"dist"?: path, "ddl"?: sql with $S for the schema}, ...}']
 * (default: raw and cairn). A contender named `raw` is the raw insert.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { PG_URL } from './postgres.js';
import { makeMessage } from './workload.js';

interface Contender {
  /** The engine's module; default this tree's build. */
  dist?: string;
  /** Run after the migrations, `$S` the quoted schema: to try a schema change. */
  ddl?: string;
}

interface Running {
  name: string;
  schema: string;
  pool: pg.Pool;
  pid: number;
  close: () => Promise<void>;
  step: (i: number) => Promise<unknown>;
  cpu: number[];
  wall: number[];
}

/** CPU ms the process `pid` has spent on the CPU so far. */
const cpuMs = (pid: number) => Number(readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]) / 1e6;
const quantile = (values: number[], q: number) => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) * q)]!;
const owner = { runId: 'postgres-cpu', pid: process.pid, host: 'bench.invalid' };

async function start(name: string, contender: Contender): Promise<Running> {
  const schema = `cairn_cpu_${Date.now()}_${Math.random().toString(36).slice(2, 8)}`;
  // One connection, never closed while idle: its backend is the one read.
  const pool = new pg.Pool({ connectionString: PG_URL, max: 1, idleTimeoutMillis: 0 });
  const pid = (await pool.query('SELECT pg_backend_pid() AS pid')).rows[0].pid as number;
  const running = { name, schema, pool, pid, cpu: [] as number[], wall: [] as number[] };
  if (name === 'raw') {
    await pool.query(`CREATE SCHEMA "${schema}"; CREATE TABLE "${schema}".raw (id bigserial PRIMARY KEY, body text NOT NULL)`);
    const text = `INSERT INTO "${schema}".raw (body) VALUES ($1)`;
    return { ...running, close: async () => undefined, step: (i) => pool.query({ name: 'raw', text, values: [JSON.stringify(makeMessage(i))] }) };
  }
  const { postgres, migrate } = await import(contender.dist ?? '../dist/engines/postgres/index.js');
  await migrate(pool, schema);
  if (contender.ddl) await pool.query(contender.ddl.replaceAll('$S', `"${schema}"`));
  const engine = postgres(pool, { schema });
  const cp = engine.checkpointer;
  const lease = await cp.acquireThread('bench', { owner, leaseMs: 3_600_000, create: { kind: 'task', tenant: null, metadata: {} } });
  await cp.updateThread(lease, { status: 'running' });
  const body = JSON.stringify({ attempt: 1, changes: { messages: { append: 1 } }, kind: 'step', lease: 1, next: ['append'], nodes: ['append'] });
  const step = (seq: number) => {
    const position = { ns: '', seq, parent: seq === 0 ? null : seq - 1, segment: 0, step: seq, schemaVersion: 1, createdAt: Date.now(), body, hash: createHash('sha256').update(`${schema}:${seq}`).digest('hex') };
    const items = [{ field: 'messages', index: 0, text: JSON.stringify(makeMessage(seq)) }];
    return cp.commitStep(lease, { position, items, status: 'running', expectedHead: seq === 0 ? null : seq - 1 });
  };
  return { ...running, close: () => engine.close(), step };
}

export async function benchPostgresCpu(n: number, contenders: Record<string, Contender>): Promise<void> {
  const running: Running[] = [];
  for (const [name, contender] of Object.entries(contenders)) running.push(await start(name, contender));
  for (let i = 0; i < n; i++) {
    for (const r of i % 2 ? [...running].reverse() : running) {
      const cpu = cpuMs(r.pid);
      const started = performance.now();
      await r.step(i);
      r.wall.push(performance.now() - started);
      r.cpu.push(cpuMs(r.pid) - cpu);
    }
  }
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  try {
    for (const r of running) {
      // The backend's statistics reach the shared counters when it flushes them.
      await r.pool.query('SELECT pg_stat_force_next_flush()');
      await r.close();
      await r.pool.end();
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
    for (const r of running) {
      let heads = '';
      if (r.name !== 'raw') {
        const row = (await admin.query(`SELECT n_tup_upd, n_tup_hot_upd, pg_total_relation_size(relid) AS bytes FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = 'cairn_heads'`, [r.schema])).rows[0];
        heads = `  head updates HOT ${row.n_tup_hot_upd}/${row.n_tup_upd}, cairn_heads ${Math.round(row.bytes / 1024)} KB`;
      }
      const cpu = r.cpu.slice(n / 10);
      const wall = r.wall.slice(n / 10);
      const figure = (values: number[]) => `${quantile(values, 0.5).toFixed(3)} [${quantile(values, 0.25).toFixed(3)}-${quantile(values, 0.75).toFixed(3)}]`;
      console.log(`${r.name.padEnd(12)} server CPU ms ${figure(cpu)}  wall ms ${figure(wall)}${heads}`);
    }
  } finally {
    for (const r of running) await admin.query(`DROP SCHEMA IF EXISTS "${r.schema}" CASCADE`);
    await admin.end();
  }
}

if (process.argv[1]?.endsWith('bench/postgres-cpu.ts')) {
  await benchPostgresCpu(Number(process.argv[2] ?? 3000), JSON.parse(process.argv[3] ?? '{"raw": {}, "cairn": {}}') as Record<string, Contender>);
}
