/**
 * @module cli/retention-command
 * `cairn retention apply --policy <file.json> [--dry-run]`: a thin face over
 * `applyRetention` (inspect/retention). The policy file is the `RetentionPolicy` as
 * JSON (`threads`, `positions`, `ledger`, `store`, `artifacts` rules; ages as `olderThanMs` or
 * `olderThan` durations such as `"30d"`), with an optional `graceMs` for artifacts.
 * It prints what goes per kind, with row counts and bytes, and draws a progress bar
 * on a terminal.
 */
import type { Command } from 'commander';
import { readFileSync } from 'node:fs';
import { InvalidOptionError } from '../errors.js';
import { checkRetentionPolicy, type RetentionPolicy } from '../inspect/gc.js';
import { applyRetention, type RetentionReport, type RetentionRows } from '../inspect/retention.js';
import { parseDuration } from '../artifacts/helpers.js';
import { ARTIFACTS_ARG, ARTIFACTS_HELP, openArtifactStore, size } from './artifact-commands.js';
import { DB_OPTION, openEngine } from './engine-url.js';
import { plural, progress } from './format.js';

/** The keys a policy file may hold. */
const POLICY_KEYS = ['threads', 'positions', 'ledger', 'store', 'artifacts', 'graceMs', 'grace'];

/**
 * Reads and checks a policy file: a JSON object of rule lists and an optional grace,
 * every rule checked as `applyRetention` checks it (InvalidOptionError otherwise,
 * naming the file, the rule and the value).
 */
export function readPolicy(path: string): { policy: RetentionPolicy; graceMs?: number } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, 'utf8'));
  } catch (error) {
    throw new InvalidOptionError(`--policy ${path}: ${(error as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new InvalidOptionError(`--policy ${path}: a policy is a JSON object with threads, positions, ledger, store and artifacts rules.`);
  const file = parsed as Record<string, unknown>;
  for (const key of Object.keys(file)) if (!POLICY_KEYS.includes(key)) throw new InvalidOptionError(`--policy ${path}: unknown key "${key}" (allowed: ${POLICY_KEYS.join(', ')}).`);
  const { graceMs: ms, grace: deprecated, ...rules } = file;
  let policy: RetentionPolicy;
  try {
    policy = checkRetentionPolicy(rules);
  } catch (error) {
    if (!InvalidOptionError.is(error)) throw error;
    throw new InvalidOptionError(`--policy ${path}: ${error.message.replace(/^\[cairn\] /, '')}`);
  }
  const grace = ms ?? deprecated;
  return { policy, ...(grace !== undefined ? { graceMs: parseDuration(grace as string | number) } : {}) };
}

function rows(r: RetentionRows): string {
  const parts = [plural(r.positions, 'position'), plural(r.items, 'item'), plural(r.snapshots, 'snapshot'), plural(r.ledgerEntries, 'ledger entry', 'ledger entries')];
  if (r.signals) parts.push(plural(r.signals, 'signal'));
  if (r.namespaces) parts.push(plural(r.namespaces, 'namespace'));
  return parts.join(', ');
}

/** `2 threads` when each compaction was a root namespace, `2 threads (3 namespaces)` when child runs were compacted too. */
function namespaces(compacted: RetentionReport['positions']['compacted']): string {
  const threads = plural(new Set(compacted.map((c) => c.thread)).size, 'thread');
  return compacted.some((c) => c.ns !== '') ? `${threads} (${plural(compacted.length, 'namespace')})` : threads;
}

/** A thread, and its child namespace when it is one: `chat-7 [research:0@4]`. */
function where(at: { thread: string; ns?: string }): string {
  return at.ns ? `${at.thread} [${at.ns}]` : at.thread;
}

/** The human form of a retention report: one line per kind (count, rows, bytes), then what was skipped. */
export function formatRetentionReport(report: RetentionReport): string {
  const verb = report.dryRun ? 'would remove' : 'removed';
  const lines = [`cairn retention apply${report.dryRun ? ' --dry-run' : ''}: ${verb}`];
  const row = (kind: string, what: string, detail: string, bytes: number) => lines.push(`  ${kind.padEnd(10)} ${what.padEnd(22)} ${size(bytes).padStart(10)}  ${detail}`);
  row('threads', plural(report.threads.deleted.length, 'thread'), rows(report.threads.rows), report.threads.rows.bytes);
  row('positions', `${namespaces(report.positions.compacted)} compacted`, rows(report.positions.rows), report.positions.rows.bytes);
  const kept = report.ledger.kept ? `; ${plural(report.ledger.kept, 'old ledger entry', 'old ledger entries')} kept (bound to kept or unfinished steps)` : '';
  row('ledger', `${namespaces(report.ledger.compacted)} compacted`, `${rows(report.ledger.rows)}${kept}`, report.ledger.rows.bytes);
  row('store', plural(report.store.items, 'item'), '', report.store.bytes);
  if (report.artifacts) row('artifacts', plural(report.artifacts.count, 'artifact'), `${plural(report.artifacts.gc.scanned, 'artifact')} scanned`, report.artifacts.bytes);
  else lines.push('  artifacts  not collected (no --artifacts)');
  for (const id of report.threads.deleted) lines.push(`  - thread ${id}`);
  for (const c of report.positions.compacted) lines.push(`  - thread ${where(c)}: positions below ${c.base} (${plural(c.rows.positions, 'position')})`);
  for (const c of report.ledger.compacted) lines.push(`  - thread ${where(c)}: old ledger entries, with the steps below ${c.base} (${plural(c.rows.ledgerEntries, 'ledger entry', 'ledger entries')}, ${plural(c.rows.positions, 'position')})`);
  const skipped = [...report.threads.skipped, ...report.positions.skipped, ...report.ledger.skipped];
  if (skipped.length) lines.push(`skipped: ${skipped.map((s) => `${where(s)} (${s.reason})`).join(', ')}`);
  return lines.join('\n');
}

interface RetentionCommandOptions {
  db: string;
  policy: string;
  artifacts?: string;
  dryRun?: boolean;
  json?: boolean;
}

export function registerRetentionCommand(program: Command): void {
  const retention = program.command('retention').description('apply a retention policy: old threads, old positions of long threads, store rows, artifacts');
  retention
    .command('apply')
    .description('delete the threads, compact the positions, expire the ledger and store rows a policy file names, then collect the artifacts nothing kept refers to')
    .requiredOption('--policy <file.json>', 'the policy: {"threads":[…],"positions":[…],"ledger":[…],"store":[…],"artifacts":[…],"graceMs":…} (see the README)')
    .option(...DB_OPTION)
    .option(`--artifacts ${ARTIFACTS_ARG}`, `collect artifacts in this store after the rest: ${ARTIFACTS_HELP}`)
    .option('--dry-run', 'report what would go, with counts and bytes; remove nothing')
    .option('--json', 'print the report as JSON')
    .action(async (options: RetentionCommandOptions) => {
      const { policy, graceMs } = readPolicy(options.policy);
      const engine = await openEngine(options.db, options.dryRun ? 'read' : 'write');
      const artifacts = options.artifacts ? await openArtifactStore(options.artifacts, { engine }) : undefined;
      const bar = progress(process.stderr.isTTY === true && !options.json);
      try {
        const report = await applyRetention({
          checkpointer: engine.checkpointer,
          ledger: engine.ledger,
          store: engine.store,
          ...(artifacts ? { artifacts } : {}),
          policy,
          ...(graceMs !== undefined ? { graceMs } : {}),
          dryRun: options.dryRun === true,
          onProgress: (p) => bar.update(p.phase, p.done, p.total),
        });
        bar.done();
        const { artifacts: collected, ...rest } = report;
        const json = { ...rest, artifacts: collected && { count: collected.count, bytes: collected.bytes, victims: collected.gc.victims.map((v) => v.ref.id) } };
        process.stdout.write(`${options.json ? JSON.stringify(json, null, 2) : formatRetentionReport(report)}\n`);
      } finally {
        bar.done();
        await artifacts?.close();
        await engine.close();
      }
    });
}
