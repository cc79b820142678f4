/**
 * @module cli/demo
 * `cairn demo`: the worked example on a SQLite file and a filesystem
 * artifact folder, in a real child process killed with SIGKILL at a crash point
 * (by default between step 3's upload and checkpoint C), then resumed by the same
 * command, with every recovery decision printed. Then it checks the result against
 * a crash-free run: same final state, the object written once, the store write
 * applied once, the hash chain intact, `PRAGMA integrity_check` ok.
 *
 * With `--dir`, a folder a previous demo used starts clean: the demo marks the
 * folders it works in, and removes only the files it made there itself; a folder
 * holding such names without the mark is refused rather than overwritten.
 */
import { mkdirSync, mkdtempSync, readFileSync, existsSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encode } from '../codec/tagged-json.js';
import { InvalidOptionError } from '../errors.js';
import { sqlite } from '../engines/sqlite/index.js';
import { CRASH_POINTS } from '../internal/crash-points.js';
import { recoveryChecks, runExampleProcess, type ExampleRun, type RecoveryCheck } from '../testing/crash-harness.js';

export interface DemoOptions {
  crashAt?: string;
  crash: boolean;
  json: boolean;
  dir?: string;
}

const CHECKPOINT_NAMES: Record<number, string> = { 1: 'A', 2: 'B', 3: 'C', 4: 'D' };
const DEFAULT_CRASH = 'after-effect:put_object';
const THREAD = 'cust_42';
/** The file that marks a folder as the demo's, so a later run knows what it may remove there. */
const MARKER = '.cairn-demo';
/** Everything the demo makes in its folder (the database with its WAL, shared-memory and journal files). */
const MADE = ['cairn.db', 'cairn.db-wal', 'cairn.db-shm', 'cairn.db-journal', 'artifacts', 'effects.log', 'reference'];

/**
 * Makes `dir` ready for a run: created if missing; what a previous demo made there
 * removed (only that); refused when it holds the demo's file names without its mark.
 * Returns the names removed.
 */
function prepareDir(dir: string): string[] {
  mkdirSync(dir, { recursive: true });
  const present = MADE.filter((name) => existsSync(join(dir, name)));
  if (present.length && !existsSync(join(dir, MARKER))) {
    throw new InvalidOptionError(`${dir} already holds ${present.join(', ')}, which cairn demo did not make: pass --dir a new or empty folder, or omit it.`);
  }
  for (const name of present) rmSync(join(dir, name), { recursive: true, force: true });
  writeFileSync(join(dir, MARKER), 'cairn demo works in this folder; a new run removes what the last one made here.\n');
  return present;
}

export type DemoCheck = RecoveryCheck;

/** Runs the demo; resolves with the checks (all must pass for exit code 0). */
export async function runDemo(options: DemoOptions): Promise<DemoCheck[]> {
  const crashAt = options.crash ? (options.crashAt ?? DEFAULT_CRASH) : undefined;
  if (crashAt && !(CRASH_POINTS as readonly string[]).includes(crashAt.split(/[:#]/)[0]!)) {
    throw new InvalidOptionError(`unknown crash point "${crashAt}". Crash points: ${CRASH_POINTS.join(', ')} (optionally :<node> and #<n>).`);
  }
  const dir = options.dir ?? mkdtempSync(join(tmpdir(), 'cairn-demo-'));
  const removed = prepareDir(dir);
  const db = join(dir, 'cairn.db');
  const artifacts = join(dir, 'artifacts');
  const effectLog = join(dir, 'effects.log');
  const args = ['--fixed-clock', '--snapshot-every', '2', '--effect-log', effectLog];
  const say = (text: string) => !options.json && process.stdout.write(text + '\n');
  const emit = (run: string, line: Record<string, unknown>) => {
    if (options.json) process.stdout.write(encode({ run, ...line }) + '\n');
    else {
      const text = narrate(line);
      if (text) say(`  ${text}`);
    }
  };

  if (removed.length) say(`starting clean: removed what the previous demo made in ${dir} (${removed.join(', ')})`);
  say(`cairn demo: the worked example on SQLite (${db}) with filesystem artifacts (${artifacts})`);
  say(`load_customer → generate_summary → put_object("summary-42.txt") → save_prefs (store) ; checkpoints A B C D\n`);

  say(`run 1${crashAt ? `: will be killed with SIGKILL at ${crashAt}` : ': no crash'}`);
  const first = await runExampleProcess({ db, artifacts, args, ...(crashAt ? { crashAt } : {}), onLine: (l) => emit('1', l) });
  const killed = first.signal === 'SIGKILL';
  if (killed) say(`  ✗ process ${first.pid} killed by SIGKILL at ${crashAt}`);
  else if (crashAt) say(`  (the crash point ${crashAt} was never reached: the run finished)`);

  let second: ExampleRun | undefined;
  if (killed) {
    say(`\nrun 2: the same command again, in a new process`);
    second = await runExampleProcess({ db, artifacts, args, onLine: (l) => emit('2', l) });
  }

  say(`\nreference: a crash-free run in a separate folder, to compare with`);
  const refDir = join(dir, 'reference');
  mkdirSync(refDir, { recursive: true });
  const reference = await runExampleProcess({ db: join(refDir, 'cairn.db'), artifacts: join(refDir, 'artifacts'), args: ['--fixed-clock', '--snapshot-every', '2'] });
  say(`  finished with status ${reference.result?.status ?? 'unknown'} at seq ${reference.result?.seq ?? '?'}`);

  const checks = await check(db, effectLog, first, second ?? first, reference);
  say(`\nchecks`);
  for (const c of checks) {
    if (options.json) process.stdout.write(encode({ type: 'check', ...c }) + '\n');
    else say(`  ${c.ok ? '✓' : '✗'} ${c.name}: ${c.detail}`);
  }
  say(`\nfiles kept in ${dir} (inspect them: npx cairn history ${THREAD} --db ${db}, or in a browser: npx cairn inspect --db ${db})`);
  return checks;
}

async function check(db: string, effectLog: string, first: ExampleRun, last: ExampleRun, reference: ExampleRun): Promise<DemoCheck[]> {
  const checks = await recoveryChecks({ db, thread: THREAD, first, last, reference });
  const uploads = existsSync(effectLog) ? readFileSync(effectLog, 'utf8').split('\n').filter((l) => l.startsWith('put_object ')).length : 0;
  checks.splice(2, 0, { name: 'object written once', ok: uploads === 1, detail: `the upload ran ${uploads === 1 ? 'once' : `${uploads} times`}` });
  const engine = sqlite(db);
  try {
    const prefs = await engine.store.get(['user', '42'], 'prefs');
    checks.splice(3, 0, { name: 'store write applied once', ok: prefs?.version === 1, detail: `user/42/prefs is at version ${prefs?.version ?? 'none'}` });
  } finally {
    await engine.close();
  }
  return checks;
}

/** One event as a line of the story, or undefined for events not worth a line. */
function narrate(line: Record<string, unknown>): string | undefined {
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- event lines are checked by their `type`
  const l = line as Record<string, any>;
  const at = (node: string) => node.padEnd(17);
  switch (l.type) {
    case 'run.start':
      return l.resumed ? `resuming: attempt ${l.attempt}, head at seq ${l.head}` : `new thread ${l.threadId}: attempt ${l.attempt}`;
    case 'run.loaded': {
      const name = CHECKPOINT_NAMES[l.seq];
      return `loaded the last checkpoint: seq ${l.seq}${name ? ` (checkpoint ${name})` : ''}, next → ${l.next.join(', ') || 'END'}`;
    }
    case 'step.commit': {
      const name = CHECKPOINT_NAMES[l.seq];
      return `seq ${l.seq} committed${name ? ` = checkpoint ${name}` : ' (input)'}${l.snapshot ? ' + snapshot' : ''}, next → ${l.next.join(', ') || 'END'}  [${l.hash.slice(0, 12)}]`;
    }
    case 'record.stored':
      return `${at(l.node)} called ${l.name} and recorded its output`;
    case 'record.served':
      return `${at(l.node)} ${l.name}: served the recorded output, nothing called`;
    case 'effect.hit':
      return `${at(l.node)} effect ${l.name}: outcome already in the ledger, nothing run`;
    case 'effect.intent':
      return `${at(l.node)} effect ${l.name}: intent durable (key ${l.key})`;
    case 'effect.recover':
      return `${at(l.node)} effect ${l.name}: found an intent without an outcome → ${l.hasProbe ? 'probing by key' : l.mode === 'atMostOnce' ? 'at most once: needs attention' : 'no probe: re-running with the same key'}`;
    case 'effect.probe':
      return `${at(l.node)} probe ${l.key}: ${l.found ? 'present → outcome rebuilt from what is stored' : 'absent → re-running with the same key'}`;
    case 'effect.run':
      return `${at(l.node)} effect ${l.name}: running${l.rerun ? ' again with the same key' : ''}`;
    case 'effect.outcome':
      return `${at(l.node)} effect ${l.name}: outcome durable (${l.source === 'probe' ? 'from the probe' : 'from the run'})`;
    case 'task.failed':
      return `${at(l.node)} failed (attempt ${l.attempt}): ${l.error}${l.willRetry ? ', retrying' : ''}`;
    case 'run.end':
      return `run ended: ${l.status} at seq ${l.seq}`;
    case 'result':
      return undefined;
    case 'error':
      return `error ${l.code}: ${l.message}`;
    default:
      return undefined;
  }
}
