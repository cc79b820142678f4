/**
 * @module bench/scale/run
 * `npm run bench:scale`: cairn on PostgreSQL with many worker processes, beside the
 * raw limit and DBOS Transact, in one run on one fresh database; then takeover times
 * after SIGKILL. Not part of `npm test`.
 *
 * For each W in --workers (default 1, 2, 4, 8), on a fresh schema each:
 * - raw: W processes × c loops of autocommitted 1 KB INSERTs (T × S rows);
 * - cairn: T threads of S steps (one keyed effect against a local HTTP server and one
 *   ~1 KB appended item per step), run by W `Worker` processes of concurrency c;
 * - DBOS: the same workflow (S `DBOS.runStep`s, the item as each step's output),
 *   enqueued and dequeued by W executors with a worker concurrency of c, queue polling
 *   lowered to --dbos-poll-ms (its 1 s default would cripple it).
 * Printed per contender: steps/s, p50/p99 step latency, statements (round trips) per
 * step, Node CPU and database CPU per step; ratios cairn/DBOS and cairn/raw.
 *
 * Flags: --threads T (1000), --steps S (10), --workers 1,2,4,8, --concurrency c (8),
 * --recovery-steps N (1000), --memory-threads M (1000), --quick (T = 200, N = 400,
 * M = 200), --no-dbos, --no-raw, --no-recovery, --no-memory, --recovery-only (the takeover
 * times alone: no throughput or memory measurement), --dbos-poll-ms (20), --json,
 * --effect-commit with-step|separately (with-step: each step's effect is written by its
 * commit, one commit per step as a DBOS step; separately: intent and outcome each their own).
 * Memory: one Worker process running M threads at once, its peak resident set size.
 */
import { cpus, loadavg } from 'node:os';
import pg from 'pg';
import { measureCairn, measureDbos, measureRaw, measureWorkerMemory, type Measurement, type RunShape } from './contenders.js';
import { startEffectServer } from './effect-server.js';
import { measureRecovery, type RecoveryFigures } from './recovery.js';

const PG_URL = process.env.CAIRN_TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
/** Connections all contender processes of one measurement may open together (the server allows 100, shared). */
const CONNECTION_BUDGET = 64;

interface Flags {
  threads: number;
  steps: number;
  workers: number[];
  concurrency: number;
  recoverySteps: number;
  dbos: boolean;
  raw: boolean;
  recovery: boolean;
  /** Threads one worker runs at once for the memory figure (0: not measured). */
  memoryThreads: number;
  dbosPollMs: number;
  json: boolean;
  quick: boolean;
  /** Only the takeover times: no throughput run (of any contender) and no memory figure. */
  recoveryOnly: boolean;
}

function parseFlags(argv: string[]): Flags {
  const quick = argv.includes('--quick');
  const flags: Flags = {
    threads: quick ? 200 : 1000,
    steps: 10,
    workers: [1, 2, 4, 8],
    concurrency: 8,
    recoverySteps: quick ? 400 : 1000,
    dbos: !argv.includes('--no-dbos'),
    raw: !argv.includes('--no-raw'),
    recovery: !argv.includes('--no-recovery'),
    memoryThreads: argv.includes('--no-memory') ? 0 : quick ? 200 : 1000,
    dbosPollMs: 20,
    json: argv.includes('--json'),
    quick,
    recoveryOnly: argv.includes('--recovery-only'),
  };
  const value = (name: string) => {
    const at = argv.indexOf(name);
    if (at < 0) return undefined;
    const text = argv[at + 1];
    if (text === undefined) throw new Error(`${name} needs a value`);
    return text;
  };
  const int = (name: string, fallback: number) => {
    const text = value(name);
    if (text === undefined) return fallback;
    const n = Number(text);
    if (!Number.isInteger(n) || n < 1) throw new Error(`${name} takes a positive whole number, got ${text}`);
    return n;
  };
  flags.threads = int('--threads', flags.threads);
  flags.steps = int('--steps', flags.steps);
  flags.concurrency = int('--concurrency', flags.concurrency);
  const effectCommit = value('--effect-commit') ?? 'with-step';
  if (effectCommit !== 'with-step' && effectCommit !== 'separately') throw new Error(`--effect-commit takes with-step or separately, got ${effectCommit}`);
  // Read by the workflow in this process and in every contender process it starts.
  process.env.CAIRN_BENCH_EFFECT_COMMIT = effectCommit;
  flags.recoverySteps = int('--recovery-steps', flags.recoverySteps);
  flags.dbosPollMs = int('--dbos-poll-ms', flags.dbosPollMs);
  if (flags.memoryThreads) flags.memoryThreads = int('--memory-threads', flags.memoryThreads);
  const workers = value('--workers');
  if (workers) flags.workers = workers.split(',').map((w) => Number(w));
  if (flags.workers.some((w) => !Number.isInteger(w) || w < 1)) throw new Error(`--workers takes a list like 1,2,4,8`);
  if (flags.recoveryOnly) {
    if (!flags.recovery) throw new Error('--recovery-only and --no-recovery leave nothing to measure');
    flags.workers = [];
    flags.memoryThreads = 0;
  }
  return flags;
}

const fmt = (n: number | null, digits = 2) => (n === null || Number.isNaN(n) ? 'n/a' : n.toFixed(digits));

async function main(): Promise<void> {
  const flags = parseFlags(process.argv.slice(2));
  const log = (line: string) => (flags.json ? process.stderr.write(line + '\n') : console.log(line));
  const database = `cairn_scale_${Date.now()}`;
  const serverUrl = new URL(PG_URL);
  const adminUrl = new URL(PG_URL);
  adminUrl.pathname = '/postgres';
  const root = new pg.Pool({ connectionString: adminUrl.toString(), max: 1 });
  await root.query(`CREATE DATABASE "${database}"`);
  serverUrl.pathname = `/${database}`;
  const url = serverUrl.toString();
  const admin = new pg.Pool({ connectionString: url, max: 1 });
  const server = await startEffectServer();
  const settings = (await admin.query(`SELECT current_setting('synchronous_commit') AS sc, version() AS v`)).rows[0] as { sc: string; v: string };
  log(
    flags.recoveryOnly
      ? `bench:scale on ${database} (${settings.v.split(' ').slice(0, 2).join(' ')}, synchronous_commit=${settings.sc}): takeover times only, effects commit ${process.env.CAIRN_BENCH_EFFECT_COMMIT}`
      : `bench:scale on ${database} (${settings.v.split(' ').slice(0, 2).join(' ')}, synchronous_commit=${settings.sc}): T=${flags.threads} threads × S=${flags.steps} steps, concurrency ${flags.concurrency} per process, effects commit ${process.env.CAIRN_BENCH_EFFECT_COMMIT}`,
  );
  log(`machine: ${cpus().length} cores, load average ${loadavg().map((l) => l.toFixed(1)).join(' ')} at the start (figures on a loaded machine are lower and noisier)`);
  if (flags.dbos && flags.workers.length) log(`DBOS Transact queue polling lowered to ${flags.dbosPollMs} ms (default 1000 ms).`);
  const results: Measurement[] = [];
  let recovery: RecoveryFigures | undefined;
  let memory: Measurement | undefined;
  try {
    for (const workers of flags.workers) {
      const poolSize = Math.max(2, Math.min(flags.concurrency + 2, Math.floor(CONNECTION_BUDGET / workers)));
      const shape: RunShape = { url, database, effectUrl: server.url, workers, concurrency: flags.concurrency, poolSize, threads: flags.threads, steps: flags.steps, dbosPollMs: flags.dbosPollMs };
      const run = async (name: string, fn: () => Promise<Measurement>) => {
        server.reset();
        const m = await fn();
        const landed = server.applied();
        if (name !== 'raw' && landed !== m.steps) throw new Error(`${name} W=${workers}: ${landed} effects landed for ${m.steps} steps`);
        results.push(m);
        log(
          `  W=${workers} ${name.padEnd(5)} ${fmt(m.stepsPerSecond, 0).padStart(6)} steps/s  p50 ${fmt(m.p50Ms)} ms  p99 ${fmt(m.p99Ms)} ms  ${fmt(m.statementsPerStep)} stmts/step  node ${fmt(m.nodeCpuMsPerStep, 3)} ms/step  db ${fmt(m.dbCpuMsPerStep, 3)} ms/step${m.errors ? `  ${m.errors} errors` : ''}${name !== 'raw' && server.duplicates() ? `  ${server.duplicates()} duplicate requests` : ''}`,
        );
      };
      if (flags.raw) await run('raw', () => measureRaw(shape, admin));
      await run('cairn', () => measureCairn(shape));
      if (flags.dbos) await run('dbos', () => measureDbos(shape));
    }
    if (flags.memoryThreads) {
      log(`memory: one Worker process running ${flags.memoryThreads} threads at once (${flags.steps} steps each, a pool of 20 connections)…`);
      server.reset();
      memory = await measureWorkerMemory({ url, database, effectUrl: server.url, workers: 1, concurrency: flags.memoryThreads, poolSize: 20, threads: flags.memoryThreads, steps: flags.steps, dbosPollMs: flags.dbosPollMs });
      if (server.applied() !== memory.steps) throw new Error(`memory run: ${server.applied()} effects landed for ${memory.steps} steps`);
    }
    if (flags.recovery) {
      log(`recovery: SIGKILL at step ${flags.recoverySteps / 2} of ${flags.recoverySteps}, a worker holding 100 threads killed halfway (30 s leases), one holding 20 SIGSTOPped past a 2 s lease…`);
      recovery = await measureRecovery({ url, effectUrl: server.url, poolSize: 10, steps: flags.steps }, server, flags.recoverySteps);
    }
  } finally {
    await server.close();
    await admin.end();
    await root.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`).catch(() => undefined);
    await root.end();
  }

  const loadAtEnd = loadavg()[0]!;
  const ratios = flags.workers.map((workers) => {
    const of = (c: Measurement['contender']) => results.find((m) => m.workers === workers && m.contender === c);
    const cairn = of('cairn')!;
    const dbos = of('dbos');
    const raw = of('raw');
    return {
      workers,
      cairnOverDbos: dbos ? cairn.stepsPerSecond / dbos.stepsPerSecond : null,
      cairnOverRaw: raw ? cairn.stepsPerSecond / raw.stepsPerSecond : null,
    };
  });
  const dbCpuNote = results.some((m) => m.dbCpuMsPerStep === null)
    ? 'database CPU: not readable here (/proc of the server processes); Node CPU is process.cpuUsage of the contender processes'
    : 'database CPU: time on CPU of the bench database backends (/proc/<pid>/schedstat; pg_stat_statements is not loaded on this server); Node CPU: process.cpuUsage of the contender processes';
  if (flags.json) {
    process.stdout.write(
      JSON.stringify(
        {
          database: { synchronousCommit: settings.sc, version: settings.v },
          machine: { cores: cpus().length, loadAverageAtEnd: loadAtEnd },
          shape: { threads: flags.threads, steps: flags.steps, concurrency: flags.concurrency, workers: flags.workers, dbosPollMs: flags.dbos ? flags.dbosPollMs : null },
          results,
          ratios,
          goals: { cairnOverDbos: 3, cairnOverRaw: 0.6, recoveryKillToCompletedMs: 1000 },
          recovery,
          memory: memory ? { threads: flags.memoryThreads, peakRssBytes: memory.peakRssBytes, rssAtGoBytes: memory.rssAtGoBytes, stepsPerSecond: memory.stepsPerSecond } : undefined,
          notes: [dbCpuNote],
        },
        null,
        2,
      ) + '\n',
    );
    return;
  }
  if (ratios.length) {
    console.log('');
    console.log('ratios (steps/s; goals: cairn ≥ 3× DBOS, ≥ 0.6× raw):');
    for (const r of ratios) console.log(`  W=${r.workers}: cairn/DBOS ${fmt(r.cairnOverDbos)}×  cairn/raw ${fmt(r.cairnOverRaw)}×`);
  }
  if (memory) {
    const mb = (bytes: number) => (bytes / 1024 / 1024).toFixed(0);
    console.log('');
    console.log(`memory: one Worker running ${flags.memoryThreads} threads at once: peak RSS ${mb(memory.peakRssBytes)} MB (${mb(memory.rssAtGoBytes)} MB when it started), ${fmt(memory.stepsPerSecond, 0)} steps/s`);
  }
  if (recovery) {
    console.log('');
    console.log(`recovery (goal: kill → completed ≤ 1.0 s):`);
    console.log(`  ${recovery.steps} steps, SIGKILL at step ${recovery.killedAtStep}, a new Worker process: kill → completed ${fmt(recovery.restartKillToCompletedMs, 0)} ms (of which process start-up and connecting ${fmt(recovery.restartKillToReadyMs, 0)} ms)`);
    console.log(`  the same with a Worker already running idle: kill → completed ${fmt(recovery.standbyKillToCompletedMs, 0)} ms`);
    console.log(`  a worker holding ${recovery.held} threads (${recovery.heldStepsLeft} steps left): kill → first effect by another worker ${fmt(recovery.heldKillToFirstEffectMs, 0)} ms, kill → all completed ${fmt(recovery.heldKillToCompletedMs, 0)} ms`);
    console.log(`  a worker holding ${recovery.stopped} threads SIGSTOPped past its ${recovery.stoppedLeaseMs} ms lease: stop → all completed by another worker ${fmt(recovery.stoppedStopToCompletedMs, 0)} ms; continued, ${recovery.stoppedLateWritesRejected} late runs refused, ${recovery.stoppedStaleCommits} stale commits (goal 0)`);
    console.log(`  duplicate effect requests (absorbed by their keys): ${recovery.duplicateRequests}`);
  }
  console.log('');
  console.log(dbCpuNote);
  console.log(`load average at the end: ${loadAtEnd.toFixed(1)}`);
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
