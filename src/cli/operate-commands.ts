/**
 * @module cli/operate-commands
 * The commands that change or re-run a thread, not only read it:
 * `cairn resume | fork | replay` (they run the application's code: `--app
 * <module#export>`, loaded by cli/app-loader), `cairn resolve-effect` (over the
 * engine alone, through inspect/effects), `cairn cancel` (inspect/cancel) and `cairn diff` (two positions' stored
 * states, through inspect/diff). Each takes `--db` and `--json`.
 */
import type { Command } from 'commander';
import type { Engine } from '../contracts/engine.js';
import type { ThreadRecord } from '../contracts/threads.js';
import { InvalidOptionError } from '../errors.js';
import { threadDiff, type FieldDiff } from '../inspect/diff.js';
import { learnDiffStates, learnErrorHeads, redactDiff, storedRedaction, threadRedactor } from '../inspect/redaction.js';
import { mergeRules, Redactor } from '../internal/redaction.js';
import { cancelThread } from '../inspect/cancel.js';
import { failEffect, resolveEffect } from '../inspect/effects.js';
import type { App, RunResult } from '../runtime/app.js';
import type { StateSchema } from '../state/schema.js';
import { APP_ARG, APP_HELP, loadApp } from './app-loader.js';
import { DB_OPTION, openEngine, type EngineAccess } from './engine-url.js';
import { interruptTable, outputStyle, plural, print, showValue, table, type OutputStyle } from './format.js';
import { jsonObject, jsonValue, nonNegativeInteger, RAW_OPTION, REDACT_PATTERN_OPTION, threadIdArgument } from './options.js';

interface Common {
  db: string;
  json?: boolean;
}

/** Runs `fn` with the engine `--db` names; closes it after. */
async function withEngine<T>(db: string, access: EngineAccess, fn: (engine: Engine) => Promise<T>): Promise<T> {
  const engine = await openEngine(db, access);
  try {
    return await fn(engine);
  } finally {
    await engine.close();
  }
}

/**
 * What a command prints of thread `thread`'s record (its error): under every stored
 * graph's rules, with what they hide in its head learned, as `cairn threads` shows it.
 */
async function shownRecord<T>(engine: Engine, thread: Pick<ThreadRecord, 'id' | 'lastError'>, value: T): Promise<T> {
  const r = await threadRedactor(engine, undefined);
  await learnErrorHeads(r, engine, [thread]);
  return r.value(value) as T;
}

/** Runs `fn` with the application `--app` names, on the engine `--db` names. */
function withApp<T>(options: Common & { app: string }, fn: (app: App<StateSchema>) => Promise<T>): Promise<T> {
  return withEngine(options.db, 'write', async (engine) => {
    const { app, dispose } = await loadApp(options.app, engine);
    try {
      return await fn(app);
    } finally {
      await dispose();
    }
  });
}

/** Where a run stopped, for a person: status, head seq, pending interrupts. */
function describeResult(style: OutputStyle, verb: string, result: RunResult<StateSchema>, from = ''): string {
  const { c } = style;
  const status = result.status === 'completed' ? c.green(result.status) : result.status === 'failed' || result.status === 'needs_attention' ? c.red(result.status) : c.yellow(result.status);
  const lines = [`${verb} thread ${result.threadId}${from}: ${status} at seq ${result.seq}`];
  if (result.interrupts.length) lines.push(`${plural(result.interrupts.length, 'pending interrupt')}:`, interruptTable(style, result.interrupts));
  return lines.join('\n');
}

/** The JSON form of a run result, redacted by `r` (the state first, so what it hides is hidden in the interrupts too). */
function resultJson(r: Redactor, result: RunResult<StateSchema>) {
  const state = r.state(result.state as Record<string, unknown>);
  return r.value({ thread: result.threadId, status: result.status, seq: result.seq, interrupts: result.interrupts, state }) as {
    thread: string;
    status: RunResult<StateSchema>['status'];
    seq: number;
    interrupts: RunResult<StateSchema>['interrupts'];
    state: Record<string, unknown>;
  };
}

/** What a command that ran the app shows: the app's own rules and those stored with its graph; nothing hidden with `--raw`. */
async function appRedactor(app: App<StateSchema>, raw: boolean | undefined): Promise<Redactor> {
  return raw ? Redactor.none() : new Redactor(mergeRules(app.redaction, await storedRedaction(app.engine.store, app.name)));
}

/** One field's difference as diff lines: `+ messages[3] {...}`, `~ topic: "a" → "b"`. */
function diffLines(style: OutputStyle, d: FieldDiff): string[] {
  const { c } = style;
  switch (d.kind) {
    case 'added':
      return [c.green(`+ ${d.field}: ${showValue(d.after)}`)];
    case 'appended':
      return d.items.map((item, i) => c.green(`+ ${d.field}[${d.from + i}] ${showValue(item)}`));
    case 'removed':
      return 'items' in d ? d.items.map((item, i) => c.red(`- ${d.field}[${d.from + i}] ${showValue(item)}`)) : [c.red(`- ${d.field}: ${showValue(d.before)}`)];
    case 'changed':
      return [c.yellow(`~ ${d.field}: ${showValue(d.before)} → ${showValue(d.after)}`)];
  }
}

export function registerOperateCommands(program: Command): void {
  program
    .command('resume <thread>')
    .description('answer an interrupt of a thread and run it on (with the application: --app)')
    .requiredOption(`--app ${APP_ARG}`, APP_HELP)
    .option(...DB_OPTION)
    .option('--answer <json>', 'the value the pending `await ctx.interrupt(...)` resolves to (JSON)', jsonValue)
    .option('--input <json>', 'writes to state fields merged through the reducers (a JSON object)', jsonObject)
    .option('--interrupt <id>', 'which interrupt this answers (needed when several are pending)')
    .option('--actor <name>', 'who answered (kept in the position)', 'cli')
    .option(...RAW_OPTION)
    .option('--json', 'print JSON')
    .action((threadId: string, options: Common & { app: string; answer?: unknown; input?: Record<string, unknown>; interrupt?: string; actor: string; raw?: boolean }) => {
      threadIdArgument(threadId);
      const hasAnswer = options.answer !== undefined;
      if (hasAnswer === (options.input !== undefined)) throw new InvalidOptionError('give the answer: --answer <json> (what ctx.interrupt resolves to) or --input <json> (state writes), one of them.');
      const style = outputStyle(options);
      return withApp(options, async (app) => {
        // The input is checked by the graph's own schema: it is typed as the graph's writes only there.
        const resume = {
          thread: threadId,
          ...(hasAnswer ? { answer: options.answer } : { input: options.input }),
          ...(options.interrupt !== undefined ? { interrupt: options.interrupt } : {}),
          actor: options.actor,
        } as Parameters<App<StateSchema>['resume']>[0];
        const result = await app.resume(resume);
        const shown = resultJson(await appRedactor(app, options.raw), result);
        print(style, shown, () => describeResult(style, 'resumed', { ...result, interrupts: shown.interrupts }));
      });
    });

  program
    .command('fork <thread> <seq>')
    .description('start a new branch of a thread from position <seq>, optionally patching its state there (with the application: --app)')
    .requiredOption(`--app ${APP_ARG}`, APP_HELP)
    .option(...DB_OPTION)
    .option('--patch <json>', 'writes applied on top of the state at <seq> (a JSON object)', jsonObject)
    .option('--actor <name>', 'who forked (kept in the position)', 'cli')
    .option(...RAW_OPTION)
    .option('--json', 'print JSON')
    .action((threadId: string, seqText: string, options: Common & { app: string; patch?: Record<string, unknown>; actor: string; raw?: boolean }) => {
      threadIdArgument(threadId);
      const seq = seqArgument(seqText, '<seq>');
      const style = outputStyle(options);
      return withApp(options, async (app) => {
        // The patch is checked by the graph's own schema: it is typed as the graph's writes only there.
        const fork = { thread: threadId, seq, actor: options.actor, ...(options.patch ? { patch: options.patch } : {}) } as Parameters<App<StateSchema>['fork']>[0];
        const result = await app.fork(fork);
        const shown = resultJson(await appRedactor(app, options.raw), result);
        print(style, { ...shown, forkedFrom: seq }, () => `${describeResult(style, 'forked', { ...result, interrupts: shown.interrupts }, ` from seq ${seq}`)}\nnew head: seq ${result.seq}`);
      });
    });

  program
    .command('replay <thread>')
    .description("re-execute a thread's steps with the application's code (--app), serving every recorded output and effect outcome, writing nothing; exit 1 when a step does not reach its stored state")
    .requiredOption(`--app ${APP_ARG}`, APP_HELP)
    .option(...DB_OPTION)
    .option('--from <seq>', 'the position to replay from (0 or more)', nonNegativeInteger, 0)
    .option('--to <seq>', 'the position to replay to, on its branch (default: the head)', nonNegativeInteger)
    .option(...RAW_OPTION)
    .option('--json', 'print JSON')
    .action((threadId: string, options: Common & { app: string; from: number; to?: number; raw?: boolean }) => {
      threadIdArgument(threadId);
      const style = outputStyle(options);
      return withApp(options, async (app) => {
        const replayed = await app.replay({ thread: threadId, from: options.from, ...(options.to !== undefined ? { to: options.to } : {}) });
        // Divergence reasons may quote recorded values.
        const report = (await appRedactor(app, options.raw)).value(replayed) as typeof replayed;
        const firstBad = report.steps.find((s) => !s.same || s.divergences.length > 0);
        print(style, { ...report, firstDivergence: firstBad ?? null }, () => {
          const { c } = style;
          const matched = report.steps.filter((s) => s.same).length;
          const lines = [
            `replayed thread ${report.threadId} from seq ${report.from} to seq ${report.to}: ${plural(report.steps.length, 'step')}, ${matched} matched${report.sameStates ? '' : `, ${report.steps.length - matched} diverged`}`,
          ];
          if (report.steps.length) {
            lines.push(
              table(
                style,
                ['seq', 'parent', 'kind', 'nodes', 're-executed', 'match', 'fields that differ'],
                report.steps.map((s) => [s.seq, s.parent, s.kind, s.nodes.join(',') || '-', s.replayed ? 'yes' : 'no', s.same ? c.green('same') : c.red('DIFFERS'), s.differences.join(',') || '-']),
              ),
            );
          }
          if (firstBad) {
            const d = firstBad.divergences[0];
            lines.push(
              c.red(
                `first divergence: seq ${firstBad.seq} (${firstBad.nodes.join(',') || firstBad.kind})` +
                  (d ? `: node ${d.node} call ${d.call} "${d.name}": ${d.reason}` : `: ${plural(firstBad.differences.length, 'field')} ${firstBad.differences.length === 1 ? 'differs' : 'differ'} (${firstBad.differences.join(', ')})`),
              ),
            );
          }
          return lines.join('\n');
        });
        if (!report.sameStates) process.exitCode = 1;
      });
    });

  program
    .command('resolve-effect <thread> <key>')
    .description('settle an effect in doubt (a needs_attention thread) by hand: record its outcome, or that it failed; no application code needed')
    .option(...DB_OPTION)
    .option('--outcome <json>', 'the outcome you checked (JSON): the next run is served it as the effect result', jsonValue)
    .option('--failed', 'record that the effect failed: the thread becomes failed with --message as its error')
    .option('--message <text>', 'why it failed (with --failed)')
    .option('--actor <name>', 'who resolved it (kept in the error with --failed)', 'cli')
    .option('--json', 'print JSON')
    .action((threadId: string, key: string, options: Common & { outcome?: unknown; failed?: boolean; message?: string; actor: string }) => {
      threadIdArgument(threadId);
      if ((options.outcome !== undefined) === (options.failed === true)) throw new InvalidOptionError('say how the effect ended: --outcome <json> or --failed, one of them.');
      if (options.message !== undefined && !options.failed) throw new InvalidOptionError('--message goes with --failed (an outcome needs no message).');
      const style = outputStyle(options);
      return withEngine(options.db, 'write', async (engine) => {
        if (options.failed) {
          const thread = await failEffect(engine, { thread: threadId, idempotencyKey: key, actor: options.actor, ...(options.message !== undefined ? { message: options.message } : {}) });
          const shown = await shownRecord(engine, thread, { thread: threadId, key, resolution: 'failed', status: thread.status, error: thread.lastError });
          print(style, shown, () => `recorded effect ${key} of thread ${threadId} as failed; the thread is now ${style.c.red(thread.status)}: ${shown.error?.message ?? ''}`);
          return;
        }
        const entry = await resolveEffect(engine, { thread: threadId, idempotencyKey: key, outcome: options.outcome });
        print(style, { thread: threadId, key, resolution: 'outcome', name: entry.name, outcome: options.outcome }, () => `resolved effect ${key} ("${entry.name}") of thread ${threadId} with outcome ${showValue(options.outcome)}; the next run is served it`);
      });
    });

  program
    .command('cancel <thread>')
    .description('cancel a thread: the run holding it (in any process) stops at its next step boundary without committing, and the thread becomes failed (ERR_THREAD_CANCELLED); exit 1 when it had already ended; no application code needed')
    .option(...DB_OPTION)
    .option('--reason <text>', 'why (kept in the thread\'s error)')
    .option('--actor <name>', 'who cancelled it (kept in the thread\'s error)', 'cli')
    .option('--json', 'print JSON')
    .action((threadId: string, options: Common & { reason?: string; actor: string }) => {
      threadIdArgument(threadId);
      const style = outputStyle(options);
      return withEngine(options.db, 'write', async (engine) => {
        const result = await cancelThread(engine, { thread: threadId, actor: options.actor, ...(options.reason !== undefined ? { reason: options.reason } : {}) });
        // A thread that had already failed is answered with its own error: shown as `cairn threads` shows it.
        const shown = await shownRecord(engine, result.thread, { thread: threadId, cancelled: result.cancelled, status: result.thread.status, error: result.thread.lastError });
        print(style, shown, () =>
          result.cancelled
            ? `cancelled thread ${threadId}; it is now ${style.c.red(result.thread.status)}: ${shown.error?.message ?? ''}`
            : `thread ${threadId} is ${result.status}: nothing to cancel`,
        );
        // As delete-thread: nothing done is a negative result for scripts.
        if (!result.cancelled) process.exitCode = 1;
      });
    });

  program
    .command('diff <thread> <seqA> <seqB>')
    .description("what differs, field by field, between a thread's stored states at two positions")
    .option(...DB_OPTION)
    .option('--ns <namespace>', "a child run's namespace (default: the thread's root graph)", '')
    .option(...RAW_OPTION)
    .option(...REDACT_PATTERN_OPTION)
    .option('--json', 'print JSON: { fields: [{ field, kind: added | removed | changed | appended, … }] }')
    .action((threadId: string, a: string, b: string, options: Common & { ns: string; raw?: boolean; redactPattern: string[] }) => {
      threadIdArgument(threadId);
      const from = seqArgument(a, '<seqA>');
      const to = seqArgument(b, '<seqB>');
      const style = outputStyle(options);
      return withEngine(options.db, 'read', async (engine) => {
        const stored = await threadDiff(engine.checkpointer, threadId, { from, to, ns: options.ns });
        const r = await threadRedactor(engine, threadId, { ...(options.raw ? { raw: true } : {}), patterns: options.redactPattern });
        await learnDiffStates(r, engine, stored);
        const diff = r.value(redactDiff(r, stored)) as typeof stored;
        print(style, diff, () => {
          const versions = diff.from.schemaVersion === diff.to.schemaVersion ? `schema v${diff.to.schemaVersion}` : `schema v${diff.from.schemaVersion} → v${diff.to.schemaVersion}`;
          const head = `thread ${threadId}${options.ns ? ` child ${options.ns}` : ''}: seq ${from} → seq ${to} (${versions}), ${diff.fields.length ? `${plural(diff.fields.length, 'field')} ${diff.fields.length === 1 ? 'differs' : 'differ'}` : 'no differences'}`;
          return [head, ...diff.fields.flatMap((d) => diffLines(style, d))].join('\n');
        });
      });
    });
}

/** A seq given as a positional argument: a whole number, 0 or more, else bad usage. */
function seqArgument(text: string, name: string): number {
  const n = /^\s*\d+\s*$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(n)) throw new InvalidOptionError(`${name} ${JSON.stringify(text)}: write a position's seq, a whole number (0 or more).`);
  return n;
}
