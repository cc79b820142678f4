/**
 * @module cli/eval-command
 * `cairn eval --app <module#export>`: evaluation replay from the command line. The
 * threads of `--db` (named by `--threads`, or listed by `--status` / `--tenant` /
 * `--limit`) are re-run with the application's code: model calls are made anew, tool
 * results and effect outcomes are served, nothing is written (the database is opened
 * read-only). Prints each thread's outcome and first divergence, the tokens recorded
 * and evaluated, and a summary; `--json` prints the whole report. Exits 1 when a
 * thread diverged or could not be evaluated.
 */
import type { Command } from 'commander';
import { InvalidOptionError } from '../errors.js';
import type { ThreadQuery, ThreadStatus } from '../contracts/threads.js';
import type { EvaluationReport, ThreadEvaluation } from '../runtime/evaluate.js';
import { APP_ARG, APP_HELP, loadApp } from './app-loader.js';
import { DB_OPTION, openEngine } from './engine-url.js';
import { outputStyle, plural, print, showValue, table, type OutputStyle } from './format.js';
import { positiveInteger, RAW_OPTION, statusList, tenantName, threadIdArgument } from './options.js';
import { redactEvaluationReport } from '../inspect/redaction.js';

interface EvalOptions {
  db: string;
  app: string;
  threads?: string;
  status?: ThreadStatus[];
  tenant?: string;
  limit?: number;
  json?: boolean;
  raw?: boolean;
}

/** Registers `cairn eval`. */
export function registerEvalCommand(program: Command): void {
  program
    .command('eval')
    .description("evaluation replay: re-run stored threads with the application's code (--app): model calls made anew, tool results and effect outcomes served, nothing written; exit 1 when a thread diverged or failed")
    .requiredOption(`--app ${APP_ARG}`, APP_HELP)
    .option(...DB_OPTION)
    .option('--threads <ids>', 'the threads to evaluate, comma-separated')
    .option('--status <list>', 'evaluate the threads with these statuses (comma-separated)', statusList)
    .option('--tenant <tenant>', "evaluate this tenant's threads", tenantName)
    .option('--limit <n>', 'at most this many listed threads', positiveInteger)
    .option(...RAW_OPTION)
    .option('--json', 'print JSON: { threads: [{ threadId, outcome, firstDivergence, recorded, evaluated }], summary }')
    .action(async (options: EvalOptions) => {
      const threads = options.threads?.split(',').map((t) => t.trim()).filter(Boolean);
      const listed = options.status !== undefined || options.tenant !== undefined || options.limit !== undefined;
      if (!threads?.length && !listed) throw new InvalidOptionError('say which threads to evaluate: --threads <ids>, or --status / --tenant / --limit to list them.');
      for (const id of threads ?? []) threadIdArgument(id);
      const query: ThreadQuery = {
        order: 'id',
        ...(options.status ? { status: options.status } : {}),
        ...(options.tenant !== undefined ? { tenant: options.tenant } : {}),
        ...(options.limit !== undefined ? { limit: options.limit } : {}),
      };
      const style = outputStyle(options);
      const engine = await openEngine(options.db, 'read');
      try {
        const { app, dispose } = await loadApp(options.app, engine);
        try {
          const evaluated = await app.evaluate({ ...(threads?.length ? { threads } : {}), ...(listed ? { query } : {}) });
          // Diffs and divergence reasons show stored values: under each thread's stored rules and the app's own.
          const report = await redactEvaluationReport(engine, evaluated, options.raw ? { raw: true } : {}, app.redaction);
          print(style, report, () => human(style, report));
          if (report.summary.diverged || report.summary.failed) process.exitCode = 1;
        } finally {
          await dispose();
        }
      } finally {
        await engine.close();
      }
    });
}

function human(style: OutputStyle, report: EvaluationReport): string {
  const { c } = style;
  const { summary } = report;
  const lines = [
    `evaluated ${plural(summary.threads, 'thread')}: ${c.green(`${summary.same} same`)}, ${summary.diverged ? c.red(`${summary.diverged} diverged`) : '0 diverged'}, ${summary.failed ? c.red(`${summary.failed} failed`) : '0 failed'}`,
    `model calls: recorded ${summary.recorded.calls} (${tokens(summary.recorded.usage)}, ${summary.recorded.latencyMs} ms), evaluated ${summary.evaluated.calls} (${tokens(summary.evaluated.usage)}, ${summary.evaluated.latencyMs} ms)`,
  ];
  if (report.threads.length) {
    lines.push(
      table(
        style,
        ['thread', 'outcome', 'first divergence', 'tokens recorded', 'tokens evaluated'],
        report.threads.map((t) => [
          t.threadId,
          t.outcome === 'same' ? c.green('same') : c.red(t.outcome),
          divergence(t),
          tokens(t.recorded.usage),
          tokens(t.evaluated.usage),
        ]),
      ),
    );
  }
  return lines.join('\n');
}

function tokens(usage: { inputTokens?: number; outputTokens?: number }): string {
  return `${usage.inputTokens ?? 0} in / ${usage.outputTokens ?? 0} out`;
}

/** A thread's first divergence in one cell: where, and the call or the fields. */
function divergence(t: ThreadEvaluation): string {
  if (t.error) return `${t.error.code}: ${t.error.message}`;
  const d = t.firstDivergence;
  if (!d) return '-';
  const call = d.calls[0];
  if (call) return `seq ${d.seq} ${call.node} call ${call.call} "${call.name}": ${call.reason}`;
  const changed = d.diff?.fields.map((f) => ('after' in f ? `${f.field} → ${showValue(f.after)}` : f.field)) ?? d.differences;
  return `seq ${d.seq}: ${changed.join(', ')}`;
}
