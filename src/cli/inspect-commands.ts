/**
 * @module cli/inspect-commands
 * `cairn threads | history | attempts | show | effects | verify | delete-thread`:
 * thin faces over the contracts and inspect functions; every command prints a
 * table or, with `--json`, JSON.
 */
import type { Command } from 'commander';
import { decode } from '../codec/tagged-json.js';
import type { Engine } from '../contracts/engine.js';
import type { LedgerEntry, RecordMeta } from '../contracts/ledger.js';
import type { MetadataFilter, ThreadKind, ThreadQuery, ThreadRecord, ThreadStatus } from '../contracts/threads.js';
import { InvalidOptionError } from '../errors.js';
import { parseDuration } from '../artifacts/helpers.js';
import { threadAttempts } from '../inspect/attempts.js';
import { threadEffects } from '../inspect/effects.js';
import { threadHistory, threadInterrupts, type PositionInfo } from '../inspect/history.js';
import { storedState } from '../inspect/stored-state.js';
import { learnErrorHeads, learnHead, redactLedgerEntry, redactStoredState, threadRedactor, type RedactionChoice } from '../inspect/redaction.js';
import { verifyThread, type VerifyReport } from '../inspect/verify.js';
import { namespaceHead, seqLabel } from '../inspect/walk.js';
import { DB_OPTION, openEngine, type EngineAccess } from './engine-url.js';
import { deprecatedFlag } from './deprecated-flags.js';
import { kindList, nonNegativeInteger, positiveInteger, RAW_OPTION, REDACT_PATTERN_OPTION, statusList, tenantName, threadIdArgument, threadOrder, validated } from './options.js';
import { ARTIFACTS_ARG, ARTIFACTS_HELP, formatArtifactVerifyReport, verifyArtifactsCommand } from './artifact-commands.js';
import { interruptTable, isoTime, outputStyle, plural, print, progress, showValue, table, type OutputStyle } from './format.js';

interface Common {
  db: string;
  json?: boolean;
}

/** The flags of a command that shows stored data: `--raw`, `--redact-pattern`. */
interface Shown extends Common {
  raw?: boolean;
  redactPattern: string[];
}

/** What `--raw` and `--redact-pattern` ask for. */
function choiceOf(options: Shown): RedactionChoice {
  return { ...(options.raw ? { raw: true } : {}), patterns: options.redactPattern };
}

/** Runs `fn` on the engine `--db` names, opened read-only unless the command writes. */
async function withEngine<T>(options: Common, fn: (engine: Engine) => Promise<T>, access: EngineAccess = 'read'): Promise<T> {
  const engine = await openEngine(options.db, access);
  try {
    return await fn(engine);
  } finally {
    await engine.close();
  }
}

function out(options: Common, value: unknown, human: () => string): void {
  print(outputStyle(options), value, human);
}

/**
 * A page that stopped at its limit with more behind it: how to get the next one, on
 * stderr (stdout stays the table a script reads), so a listing cut at --limit is never
 * taken for the whole. Not under --json, whose reader pages by the length it asked for.
 */
function moreHint(options: Common, more: boolean, next: () => string): void {
  if (more && options.json !== true) process.stderr.write(`${next()}\n`);
}

/** A thread's status for a table: a waiting thread says until when, when it knows. */
function statusText(style: OutputStyle, t: { status: string; wakeAt?: number | null }): string {
  const text = t.status === 'waiting' && typeof t.wakeAt === 'number' ? `waiting until ${isoTime(t.wakeAt)}` : t.status;
  return t.status === 'failed' || t.status === 'needs_attention' ? style.c.red(text) : t.status === 'completed' ? style.c.green(text) : text;
}

/** A ledger entry for people and for --json: its outcome decoded (a value, not a JSON string). */
function ledgerView(e: LedgerEntry): Omit<LedgerEntry, 'outcome'> & { outcome?: unknown } {
  const { outcome, ...rest } = e;
  return outcome === null ? rest : { ...rest, outcome: decode(outcome, `outcome of ${e.key}`) };
}

/**
 * Positions in tree order, oldest first, each with its depth: a child that continues
 * its parent's line stays at its depth; a fork (a second child) opens a branch one
 * level in.
 */
function treeOrder<R extends { seq: number; parent: number | null }>(rows: R[]): { row: R; depth: number }[] {
  const bySeq = new Map(rows.map((r) => [r.seq, r]));
  const children = new Map<number | null, R[]>();
  for (const row of [...rows].sort((a, b) => a.seq - b.seq)) {
    // A parent outside the listed page counts as a root.
    const parent = row.parent !== null && bySeq.has(row.parent) ? row.parent : null;
    children.set(parent, [...(children.get(parent) ?? []), row]);
  }
  const out: { row: R; depth: number }[] = [];
  const walk = (row: R, depth: number) => {
    out.push({ row, depth });
    const kids = children.get(row.seq) ?? [];
    kids.slice(1).forEach((kid) => walk(kid, depth + 1));
    if (kids[0]) walk(kids[0], depth);
  };
  for (const root of children.get(null) ?? []) walk(root, 0);
  return out;
}

/** `key=value`, repeatable. A value that reads as JSON true/false/null or a number is that; anything else (or "quoted") is a string. */
function metaPair(value: string, previous: MetadataFilter = {}): MetadataFilter {
  const at = value.indexOf('=');
  if (at <= 0) throw new InvalidOptionError(`--metadata ${JSON.stringify(value)}: write key=value (e.g. --metadata queue=support).`);
  const raw = value.slice(at + 1);
  let parsed: unknown = raw;
  try {
    parsed = JSON.parse(raw);
  } catch {
    // a plain string
  }
  const scalar = parsed === null || ['string', 'number', 'boolean'].includes(typeof parsed);
  return { ...previous, [value.slice(0, at)]: scalar ? (parsed as string | number | boolean | null) : raw };
}

/** `--since`: a duration back from now (`30m`, `2h`, `7d`) or a date/time (`2024-05-01`, ISO 8601). */
export function parseSince(text: string, now = Date.now()): number {
  if (/^\s*\d+(\.\d+)?\s*(ms|s|m|h|d|w)\s*$/.test(text)) return now - parseDuration(text);
  const at = Date.parse(text);
  if (Number.isNaN(at)) throw new InvalidOptionError(`--since ${JSON.stringify(text)}: use a duration back from now (30m, 2h, 7d) or a date (2024-05-01, 2024-05-01T12:00:00Z).`);
  return at;
}

/** Every thread id of the engine, a page at a time. */
async function allThreadIds(engine: Engine): Promise<string[]> {
  const ids: string[] = [];
  for (let after: string | undefined; ; ) {
    const page = await engine.checkpointer.listThreads({ limit: 500, ...(after !== undefined ? { after } : {}) });
    ids.push(...page.map((t) => t.id));
    if (page.length < 500) return ids;
    after = page.at(-1)!.id;
  }
}

export function registerInspectCommands(program: Command): void {
  const db = DB_OPTION;

  program
    .command('threads')
    .description('list threads, filtered and paged')
    .option(...db)
    .option('--status <status>', 'only these statuses (comma-separated or repeated): running, interrupted, completed, failed, needs_attention, waiting', statusList)
    .option('--kind <kind>', 'only these kinds (comma-separated or repeated): conversation, task, session, workflow', kindList)
    .option('--tenant <tenant>', 'only this tenant', tenantName)
    .option('--metadata <key=value>', 'only threads whose metadata has key = value (repeatable; all must match)', (v: string, previous?: MetadataFilter) => validated((text) => metaPair(text, previous))(v))
    .addOption(deprecatedFlag('--meta <key=value>', '--metadata'))
    .option('--since <when>', 'only threads updated since: a duration back from now (30m, 2h, 7d) or a date (2024-05-01, ISO 8601)', validated((v) => parseSince(v)))
    .option('--created-since <when>', 'only threads created since: a duration back from now (30m, 2h, 7d) or a date', validated((v) => parseSince(v)))
    .option('--order <order>', "'id' (paged with --after) or 'updatedAt' (most recently updated first)", threadOrder, 'id')
    .option('--after <id>', 'start after this thread id (paging, in id order)')
    .option('--limit <n>', 'at most this many (1 or more)', positiveInteger, 100)
    .option(...RAW_OPTION)
    .option(...REDACT_PATTERN_OPTION)
    .option('--json', 'print JSON')
    .action(
      (
        options: Shown & { status?: ThreadStatus[]; kind?: ThreadKind[]; tenant?: string; metadata?: MetadataFilter; since?: number; createdSince?: number; order: 'id' | 'updatedAt'; after?: string; limit: number },
      ) => {
        if (options.after !== undefined && options.order === 'updatedAt') throw new InvalidOptionError('--after pages in id order; drop --order updatedAt to page.');
        return withEngine(options, async (engine) => {
          const query: ThreadQuery = {
            ...(options.status ? { status: options.status } : {}),
            ...(options.kind ? { kind: options.kind } : {}),
            ...(options.tenant !== undefined ? { tenant: options.tenant } : {}),
            ...(options.metadata ? { metadata: options.metadata } : {}),
            ...(options.since !== undefined ? { updatedAt: { from: options.since } } : {}),
            ...(options.createdSince !== undefined ? { createdAt: { from: options.createdSince } } : {}),
            ...(options.order === 'updatedAt' ? { order: 'updatedAt' as const } : {}),
            ...(options.after !== undefined ? { after: options.after } : {}),
            // One more than shown: whether there is a next page.
            limit: options.limit + 1,
          };
          // Metadata and error messages are shown under every stored graph's rules, with what
          // they hide in each failed thread's head learned (its error may quote it).
          const page = await engine.checkpointer.listThreads(query);
          const listed = page.slice(0, options.limit);
          const r = await threadRedactor(engine, undefined, choiceOf(options));
          await learnErrorHeads(r, engine, listed);
          const threads = r.value(listed) as ThreadRecord[];
          const style = outputStyle(options);
          out(options, threads, () =>
            threads.length === 0
              ? 'no threads'
              : table(
                  style,
                  ['thread', 'status', 'kind', 'tenant', 'head', 'attempts', 'updated'],
                  threads.map((t) => [t.id, statusText(style, t as typeof t & { wakeAt?: number | null }), t.kind, t.tenant, t.head, t.attempts, isoTime(t.updatedAt)]),
                ),
          );
          moreHint(options, page.length > options.limit, () =>
            options.order === 'updatedAt'
              ? `${plural(listed.length, 'thread')} shown, the --limit; there are more: raise --limit to see them.`
              : `${plural(listed.length, 'thread')} shown, the --limit; there are more: the next page is --after ${listed.at(-1)!.id}.`,
          );
        });
      },
    );

  program
    .command('attempts <thread>')
    .description("a thread's attempts, oldest first: every run start and every retry, with its error, node, seq and time, up to the final success")
    .option(...db)
    .option(...RAW_OPTION)
    .option(...REDACT_PATTERN_OPTION)
    .option('--json', 'print JSON')
    .action((threadId: string, options: Shown) => {
      threadIdArgument(threadId);
      return withEngine(options, async (engine) => {
        const raw = await threadAttempts(engine.checkpointer, threadId);
        const r = await threadRedactor(engine, raw.thread, choiceOf(options));
        await learnHead(r, engine, threadId);
        const story = r.value(raw) as typeof raw;
        const style = outputStyle(options);
        out(options, story, () => {
          const { thread, attempts } = story;
          const rows = attempts.map((a) => [
            `#${a.attempt}`,
            a.outcome,
            a.node ?? '-',
            a.seq,
            isoTime(a.at),
            a.committed.length ? a.committed.map((p) => p.seq).join(',') : '-',
            a.error ? `${a.error.code}: ${a.error.message}` : '-',
          ]);
          return [`thread ${thread.id}: ${statusText(style, thread)}, ${plural(thread.attempts, 'attempt')}`, table(style, ['attempt', 'outcome', 'node', 'seq', 'at', 'committed', 'error'], rows)].join('\n');
        });
      });
    });

  program
    .command('delete-thread <thread>')
    .description('delete a thread and everything it owns (positions, items, snapshots, pending writes, failures, signals, ledger, its artifact pins) in one transaction; refused while a run holds it')
    .option(...db)
    .option('--if-status <status>', 'only if its status is one of these (comma-separated or repeated)', statusList)
    .option('--json', 'print JSON')
    .action((threadId: string, options: Common & { ifStatus?: ThreadStatus[] }) => {
      threadIdArgument(threadId);
      return withEngine(options, async (engine) => {
        const result = await engine.checkpointer.deleteThread(threadId, options.ifStatus ? { ifStatus: options.ifStatus } : {});
        out(options, result, () => {
          if (result.deleted) {
            const r = result.removed;
            return `deleted thread ${threadId}: ${[plural(r.positions, 'position'), plural(r.items, 'item'), plural(r.snapshots, 'snapshot'), plural(r.pendingWrites, 'pending write'), plural(r.failures, 'failure'), plural(r.ledgerEntries, 'ledger entry', 'ledger entries'), plural(r.signals, 'signal'), plural(r.pins, 'pin')].join(', ')} (artifacts are left to cairn gc)`;
          }
          return result.reason === 'missing' ? `no thread ${threadId}: nothing deleted` : `thread ${threadId} is ${result.status}, not ${options.ifStatus!.join(' or ')}: nothing deleted`;
        });
        if (!result.deleted) process.exitCode = 1;
      }, 'write');
    });

  program
    .command('history <thread>')
    .description("list a thread's positions, newest first (--json: the entries app.history() returns)")
    .option(...db)
    .option('--limit <n>', 'at most this many (1 or more)', positiveInteger, 50)
    .option('--before-seq <n>', 'only positions below this seq (the last seq of the previous page)', nonNegativeInteger)
    .option('--ns <namespace>', "a child run's namespace (listed as 'child' on the steps that ran it)", '')
    .option('--tree', 'draw the branches (forks) as a tree, oldest first')
    .option(...RAW_OPTION)
    .option(...REDACT_PATTERN_OPTION)
    .option('--json', 'print JSON')
    .action((threadId: string, options: Shown & { limit: number; beforeSeq?: number; ns: string; tree?: boolean }) => {
      threadIdArgument(threadId);
      return withEngine(options, async (engine) => {
        // A namespace the thread does not have is an error here, not an empty page.
        await namespaceHead(engine.checkpointer, threadId, options.ns);
        const r = await threadRedactor(engine, threadId, choiceOf(options));
        await learnHead(r, engine, threadId);
        // One more than shown: whether there is a next page.
        const page = await threadHistory(engine.checkpointer, threadId, { ns: options.ns, limit: options.limit + 1, ...(options.beforeSeq !== undefined ? { beforeSeq: options.beforeSeq } : {}) });
        const rows = r.value(page.slice(0, options.limit)) as PositionInfo[];
        const style = outputStyle(options);
        const cells = (r: PositionInfo) => [
          r.kind,
          r.nodes.join(',') || '-',
          r.next.join(',') || 'END',
          Object.keys(r.changes).join(',') || '-',
          r.effects.map((e) => e.name).join(',') || '-',
          [...r.interrupts.map((i) => `pending ${i.id}`), ...(r.answered !== undefined ? [`answered ${r.answered}`] : []), ...(r.waits ?? []).map((w) => `${w.kind} ${w.key}${w.until !== null ? ` until ${isoTime(w.until)}` : ''}`)].join('; ') || '-',
          r.actor ?? '-',
          r.children.join(',') || '-',
          isoTime(r.createdAt),
          r.hash.slice(0, 12),
        ];
        const headers = ['kind', 'nodes', 'next', 'changed', 'effects', 'interrupts / waits', 'actor', 'child', 'at', 'hash'];
        out(options, rows, () => {
          // An empty page past the oldest position is the end of the paging, not a thread without positions.
          if (rows.length === 0) return options.beforeSeq !== undefined ? `thread ${threadId} has no positions below seq ${options.beforeSeq}` : `thread ${threadId} has no positions yet`;
          if (!options.tree) return table(style, ['seq', 'parent', ...headers], rows.map((r) => [r.seq, r.parent, ...cells(r)]));
          // The seq column draws the branches: '│' marks each level a fork opened.
          return table(style, ['seq', ...headers], treeOrder(rows).map(({ row, depth }) => [`${'│ '.repeat(depth)}${row.seq}`, ...cells(row)]));
        });
        moreHint(options, page.length > options.limit, () => `${plural(rows.length, 'position')} shown, the --limit; there are older ones: the next page is --before-seq ${rows.at(-1)!.seq}.`);
      });
    });

  program
    .command('show <thread>')
    .description('the stored state of a thread at its head or at --seq (as stored: no upcast, no derived fields)')
    .option(...db)
    .option('--seq <n>', 'position to show (0 or more)', nonNegativeInteger)
    .option('--ns <namespace>', "a child run's namespace (default: the thread's root graph)", '')
    .option(...RAW_OPTION)
    .option(...REDACT_PATTERN_OPTION)
    .option('--json', 'print JSON')
    .action((threadId: string, options: Shown & { seq?: number; ns: string }) => {
      threadIdArgument(threadId);
      return withEngine(options, async (engine) => {
        const stored = await storedState(engine.checkpointer, threadId, { ns: options.ns, ...(options.seq !== undefined ? { seq: options.seq } : {}) });
        const r = await threadRedactor(engine, threadId, choiceOf(options));
        // The state first: what its path rules hide is then hidden in the interrupts too.
        const view = r.value(redactStoredState(r, stored)) as typeof stored;
        const interrupts = r.value(await threadInterrupts(engine.checkpointer, threadId, { ns: options.ns, seq: view.seq })) as Awaited<ReturnType<typeof threadInterrupts>>;
        const style = outputStyle(options);
        const where = options.ns ? ` child ${options.ns}` : '';
        out(options, { ...view, interrupts }, () =>
          [
            `thread ${threadId}${where} seq ${view.seq} (schema v${view.schemaVersion}), next → ${view.next.join(', ') || 'END'}`,
            showValue(view.state, 2),
            ...(interrupts.pending.length ? [`${plural(interrupts.pending.length, 'pending interrupt')}:`, interruptTable(style, interrupts.pending)] : []),
            ...(interrupts.answered.length
              ? [`${plural(interrupts.answered.length, 'answered interrupt')}:`, interruptTable(style, interrupts.answered.map((i) => ({ ...i, actor: `${i.actor ?? '-'} (seq ${i.answeredAt})` })))]
              : []),
          ].join('\n'),
        );
      });
    });

  program
    .command('effects <thread>')
    .description("list a thread's effect ledger: intents, outcomes and recorded outputs")
    .option(...db)
    .option(...RAW_OPTION)
    .option(...REDACT_PATTERN_OPTION)
    .option('--json', 'print JSON')
    .action((threadId: string, options: Shown) => {
      threadIdArgument(threadId);
      return withEngine(options, async (engine) => {
        const stored = (await threadEffects(engine, threadId)).map(ledgerView);
        const r = await threadRedactor(engine, threadId, choiceOf(options));
        await learnHead(r, engine, threadId);
        const entries = r.value(stored.map((e) => redactLedgerEntry(r, e))) as typeof stored;
        const style = outputStyle(options);
        out(options, entries, () =>
          entries.length === 0
            ? 'no ledger entries'
            : table(
                style,
                ['kind', 'status', 'seq', 'node', 'name', 'call', 'key', 'outcome', 'at'],
                entries.map((e) => [e.kind, e.status === 'intent' ? style.c.yellow(e.status) : e.status, e.seq, e.node, e.name, describeCall(e.meta), e.key, 'outcome' in e ? showValue(e.outcome) : '-', isoTime(e.completedAt ?? e.createdAt)]),
              ),
        );
      });
    });

  program
    .command('verify [thread]')
    .description('recompute the hash chain of one thread, or of every thread')
    .option(...db)
    .option('--json', 'print JSON')
    .option(`--artifacts ${ARTIFACTS_ARG}`, `also re-hash every artifact of this store and report dangling refs: ${ARTIFACTS_HELP}`)
    .action((threadId: string | undefined, options: Common & { artifacts?: string }) => {
      // An empty one (an unset "$THREAD") is refused, not taken for "every thread".
      if (threadId !== undefined) threadIdArgument(threadId);
      return withEngine(options, async (engine) => {
        // verifyThread says when the thread named is not there.
        const ids = threadId !== undefined ? [threadId] : await allThreadIds(engine);
        const style = outputStyle(options);
        const bar = progress(process.stderr.isTTY === true && !style.json && ids.length > 1);
        const reports: VerifyReport[] = [];
        try {
          for (const id of ids) {
            reports.push(await verifyThread(engine, id));
            bar.update('verifying threads', reports.length, ids.length);
          }
        } finally {
          bar.done();
        }
        const artifacts = options.artifacts ? await verifyArtifactsCommand(engine, options.artifacts, { json: options.json === true, ...(threadId !== undefined ? { thread: threadId } : {}) }) : undefined;
        const bad = reports.filter((r) => !r.ok).length;
        out(options, artifacts ? { threads: reports, artifacts } : reports, () =>
          [
            ...reports.map(
              (r) =>
                `${r.ok ? style.c.green('ok  ') : style.c.red('FAIL')} ${r.threadId}: ${plural(r.positions, 'position')}, ${plural(r.snapshots, 'snapshot')}, ${plural(r.ledgerEntries, 'ledger entry', 'ledger entries')}` +
                r.problems.map((p) => `\n     ${seqLabel(p.ns, p.seq)} (${p.kind}): ${p.message}`).join(''),
            ),
            ...(artifacts ? [formatArtifactVerifyReport(artifacts)] : []),
            `${plural(reports.length, 'thread')} verified: ${reports.length - bad} ok, ${bad} with problems`,
          ].join('\n'),
        );
        if (reports.some((r) => !r.ok) || (artifacts && !artifacts.ok)) process.exitCode = 1;
      });
    });
}

/** What a record says it was, in one cell: `model gpt-5-mini 812+64 tokens 930 ms`, `tool 3 ms`; `-` for an effect or a record written before kinds. */
function describeCall(meta: RecordMeta | undefined): string {
  if (!meta) return '-';
  const parts: string[] = [meta.kind];
  if (meta.model !== undefined) parts.push(meta.model);
  if (meta.usage && (meta.usage.inputTokens !== undefined || meta.usage.outputTokens !== undefined)) parts.push(`${meta.usage.inputTokens ?? '?'}+${meta.usage.outputTokens ?? '?'} tokens`);
  if (meta.latencyMs !== undefined) parts.push(`${meta.latencyMs} ms`);
  return parts.join(' ');
}
