/**
 * @module testing/crash-harness
 * Runs an example in a real child process, optionally killed with SIGKILL at a
 * crash point, and collects what it printed. Shared by `cairn demo` and the crash
 * tests, so the demo shows exactly what the tests prove.
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { decode, encode } from '../codec/tagged-json.js';
import { openDatabase } from '../engines/sqlite/driver.js';
import { sqlite } from '../engines/sqlite/index.js';
import { verifyThread } from '../inspect/verify.js';

/** The compiled example runner (this package's `dist/testing/example-process.js`). */
export const EXAMPLE_PROCESS = fileURLToPath(new URL('./example-process.js', import.meta.url));

/** One run of the worked example in a child process: its pid, what it printed, how it exited. */
export interface ExampleRun {
  pid: number;
  /** Every JSON line the child printed, decoded (run events, then a result or error line). */
  lines: Record<string, unknown>[];
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
  /** The `result` line, when the run finished. */
  result: { status: string; seq: number; state: Record<string, unknown> } | undefined;
}

/** Where the child process keeps the worked example's thread, and where it is killed. */
export interface ExampleRunOptions {
  /** A SQLite file, or a PostgreSQL URL (then `pgSchema` names the schema). */
  db: string;
  pgSchema?: string;
  artifacts: string;
  fixture?: 'worked' | 'parallel';
  /** `CAIRN_CRASH_AT` for this run: `<point>[:<node>][#<n>]`. */
  crashAt?: string;
  /** Extra flags for example-process (`--fixed-clock`, `--effect-log <f>`, `--snapshot-every <k>`...). */
  args?: string[];
  /** Called with each decoded line as it arrives. */
  onLine?: (line: Record<string, unknown>) => void;
}

/** Starts the example process and resolves when it exits (by itself or by SIGKILL). */
export function runExampleProcess(options: ExampleRunOptions): Promise<ExampleRun> {
  const env = { ...process.env };
  delete env.CAIRN_CRASH_AT;
  if (options.crashAt) env.CAIRN_CRASH_AT = options.crashAt;
  const child = spawn(
    process.execPath,
    [
      EXAMPLE_PROCESS,
      '--db',
      options.db,
      ...(options.pgSchema ? ['--pg-schema', options.pgSchema] : []),
      '--artifacts',
      options.artifacts,
      '--fixture',
      options.fixture ?? 'worked',
      ...(options.args ?? []),
    ],
    { env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const lines: Record<string, unknown>[] = [];
  let buffer = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
    buffer += chunk;
    let newline: number;
    while ((newline = buffer.indexOf('\n')) >= 0) {
      const text = buffer.slice(0, newline);
      buffer = buffer.slice(newline + 1);
      if (!text.trim()) continue;
      const line = decode<Record<string, unknown>>(text, 'example output');
      lines.push(line);
      options.onLine?.(line);
    }
  });
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (exitCode, signal) => {
      const result = lines.find((l) => l.type === 'result') as ExampleRun['result'];
      resolve({ pid: child.pid ?? -1, lines, exitCode, signal, stderr, result });
    });
  });
}

/** One check of a recovered run, as the demo prints it and the crash tests assert it. */
export interface RecoveryCheck {
  name: string;
  ok: boolean;
  detail: string;
}

/** What a recovery check reads back after a crash: the database, the thread and the external system's log. */
export interface RecoveryInput {
  /** A SQLite file, or a PostgreSQL URL (then `pgSchema` names the schema). */
  db: string;
  pgSchema?: string;
  thread: string;
  /** The run that was killed (its commits must survive unchanged). */
  first: ExampleRun;
  /** The run that resumed and finished. */
  last: ExampleRun;
  /** A crash-free run of the same example, to compare the final state with. */
  reference: ExampleRun;
}

/**
 * What every recovery must satisfy: the run completed with the same final state
 * as a crash-free run, every position committed before the crash is unchanged, the
 * hash chain verifies, and SQLite's integrity check is ok.
 */
export async function recoveryChecks(input: RecoveryInput): Promise<RecoveryCheck[]> {
  const { db, thread, first, last, reference } = input;
  const onPostgres = /^postgres(ql)?:\/\//.test(db);
  const checks: RecoveryCheck[] = [];
  const final = last.result;
  checks.push({ name: 'run completed', ok: final?.status === 'completed', detail: `status ${final?.status ?? 'none'}${last.stderr.trim() ? `; stderr: ${last.stderr.trim()}` : ''}` });
  const same = final !== undefined && reference.result !== undefined && encode(final.state) === encode(reference.result.state);
  checks.push({ name: 'same final state as a crash-free run', ok: same, detail: same ? 'identical' : `states differ:\n${encode(final?.state)}\n${encode(reference.result?.state)}` });

  const engine = onPostgres ? (await import('../engines/postgres/index.js')).postgres(db, { schema: input.pgSchema ?? 'public', max: 2 }) : sqlite(db);
  try {
    const committedBefore = first.lines.filter((l) => l.type === 'step.commit') as { seq: number; hash: string }[];
    const kept = await Promise.all(committedBefore.map(async (c) => (await engine.checkpointer.getPosition(thread, '', c.seq))?.hash === c.hash));
    checks.push({
      name: 'no committed step lost',
      ok: kept.every(Boolean),
      detail: `${kept.filter(Boolean).length}/${committedBefore.length} positions committed before the crash are unchanged`,
    });
    const report = await verifyThread(engine, thread);
    checks.push({ name: 'hash chain verifies', ok: report.ok, detail: `${report.positions} positions${report.problems.map((p) => `; seq ${p.seq}: ${p.message}`).join('')}` });
  } finally {
    await engine.close();
  }
  // SQLite's own page-level check; PostgreSQL keeps its own consistency.
  if (onPostgres) return checks;
  const raw = openDatabase(db, 5000);
  try {
    const integrity = raw.pragma('integrity_check', { simple: true });
    checks.push({ name: 'PRAGMA integrity_check', ok: integrity === 'ok', detail: String(integrity) });
  } finally {
    raw.close();
  }
  return checks;
}
