/**
 * @module cli/inspect-commands
 * `cairn threads | history | attempts | show | effects | verify | delete-thread`:
 * thin faces over the contracts and inspect functions; every command prints a
 * table or, with `--json`, JSON.
 */
import type { Command } from 'commander';
import { encode } from '../codec/tagged-json.js';
import type { Engine } from '../contracts/engine.js';
import type { MetadataFilter, ThreadKind, ThreadQuery, ThreadStatus } from '../contracts/threads.js';
import { InvalidOptionError } from '../errors.js';
import { parseDuration } from '../artifacts/helpers.js';
import { threadAttempts } from '../inspect/attempts.js';
import { threadEffects } from '../inspect/effects.js';
import { threadHistory, type PositionInfo } from '../inspect/history.js';
import { storedState } from '../inspect/stored-state.js';
import { verifyThread, type VerifyReport } from '../inspect/verify.js';
import { namespaceHead, seqLabel } from '../inspect/walk.js';
import { DB_OPTION, openEngine, type EngineAccess } from './engine-url.js';
import { deprecatedFlag } from './deprecated-flags.js';
import { kindList, nonNegativeInteger, positiveInteger, statusList, threadOrder, validated } from './options.js';
import { ARTIFACTS_ARG, ARTIFACTS_HELP, formatArtifactVerifyReport, verifyArtifactsCommand } from './artifact-commands.js';

interface Common {
  db: string;
  json?: boolean;
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

function out(options: Common, value: unknown, table: () => string): void {
  process.stdout.write(options.json ? JSON.stringify(JSON.parse(encode(value)), null, 2) + '\n' : table() + '\n');
}

function time(ms: number): string {
  return new Date(ms).toISOString().replace('T', ' ').slice(0, 19);
}

/**
 * Positions as a tree, oldest first: a child that continues its parent's line stays
 * in the same column; a fork (a second child) opens a branch one column in.
 */
function drawTree<R extends { seq: number; parent: number | null }>(rows: R[], line: (row: R) => string): string {
  const bySeq = new Map(rows.map((r) => [r.seq, r]));
  const children = new Map<number | null, R[]>();
  for (const row of [...rows].sort((a, b) => a.seq - b.seq)) {
    // A parent outside the listed page counts as a root.
    const parent = row.parent !== null && bySeq.has(row.parent) ? row.parent : null;
    children.set(parent, [...(children.get(parent) ?? []), row]);
  }
  const out: string[] = [];
  const walk = (row: R, depth: number) => {
    out.push(`${'  │ '.repeat(depth)}${String(row.seq).padStart(5)}  ${line(row)}`);
    const kids = children.get(row.seq) ?? [];
    kids.slice(1).forEach((kid) => walk(kid, depth + 1));
    if (kids[0]) walk(kids[0], depth);
  };
  for (const root of children.get(null) ?? []) walk(root, 0);
  return out.join('\n');
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

export function registerInspectCommands(program: Command): void {
  const db = DB_OPTION;

  program
    .command('threads')
    .description('list threads, filtered and paged')
    .option(...db)
    .option('--status <status>', 'only these statuses (comma-separated or repeated): running, interrupted, completed, failed, needs_attention, waiting', statusList)
    .option('--kind <kind>', 'only these kinds (comma-separated or repeated): conversation, task, session, workflow', kindList)
    .option('--tenant <tenant>', 'only this tenant')
    .option('--metadata <key=value>', 'only threads whose metadata has key = value (repeatable; all must match)', (v: string, previous?: MetadataFilter) => validated((text) => metaPair(text, previous))(v))
    .addOption(deprecatedFlag('--meta <key=value>', '--metadata'))
    .option('--since <when>', 'only threads updated since: a duration back from now (30m, 2h, 7d) or a date (2024-05-01, ISO 8601)', validated((v) => parseSince(v)))
    .option('--created-since <when>', 'only threads created since: a duration back from now (30m, 2h, 7d) or a date', validated((v) => parseSince(v)))
    .option('--order <order>', "'id' (paged with --after) or 'updatedAt' (most recently updated first)", threadOrder, 'id')
    .option('--after <id>', 'start after this thread id (paging, in id order)')
    .option('--limit <n>', 'at most this many (1 or more)', positiveInteger, 100)
    .option('--json', 'print JSON')
    .action(
      (
        options: Common & { status?: ThreadStatus[]; kind?: ThreadKind[]; tenant?: string; metadata?: MetadataFilter; since?: number; createdSince?: number; order: 'id' | 'updatedAt'; after?: string; limit: number },
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
            limit: options.limit,
          };
          const threads = await engine.checkpointer.listThreads(query);
          out(options, threads, () =>
            threads.length === 0
              ? 'no threads'
              : threads
                  .map(
                    (t) =>
                      `${t.id.padEnd(24)} ${t.status.padEnd(16)} ${t.kind.padEnd(12)} ${(t.tenant ?? '-').padEnd(12)} head ${String(t.head ?? '-').padStart(5)}  attempts ${String(t.attempts).padStart(3)}  ${time(t.updatedAt)}`,
                  )
                  .join('\n'),
          );
        });
      },
    );

  program
    .command('attempts <thread>')
    .description("a thread's attempts, oldest first: every run start and every retry, with its error, node, seq and time, up to the final success")
    .option(...db)
    .option('--json', 'print JSON')
    .action((threadId: string, options: Common) =>
      withEngine(options, async (engine) => {
        const story = await threadAttempts(engine.checkpointer, threadId);
        out(options, story, () => {
          const { thread, attempts } = story;
          const lines = attempts.map((a) => {
            const where = a.node !== null ? `${a.node}${a.seq !== null ? ` @ seq ${a.seq}` : ''}` : a.seq !== null ? `seq ${a.seq}` : '-';
            const committed = a.committed.length ? `  committed ${a.committed.map((p) => p.seq).join(',')}` : '';
            const error = a.error ? `  ${a.error.code}: ${a.error.message}` : '';
            return `  #${String(a.attempt).padEnd(4)} ${a.outcome.padEnd(16)} ${where.padEnd(28)} ${a.at !== null ? time(a.at) : '-'.padEnd(19)}${committed}${error}`;
          });
          return [`thread ${thread.id}: ${thread.status}, ${thread.attempts} attempt${thread.attempts === 1 ? '' : 's'}`, ...lines].join('\n');
        });
      }),
    );

  program
    .command('delete-thread <thread>')
    .description('delete a thread and everything it owns (positions, items, snapshots, pending writes, failures, signals, ledger, its artifact pins) in one transaction; refused while a run holds it')
    .option(...db)
    .option('--if-status <status>', 'only if its status is one of these (comma-separated or repeated)', statusList)
    .option('--json', 'print JSON')
    .action((threadId: string, options: Common & { ifStatus?: ThreadStatus[] }) =>
      withEngine(options, async (engine) => {
        const result = await engine.checkpointer.deleteThread(threadId, options.ifStatus ? { ifStatus: options.ifStatus } : {});
        out(options, result, () => {
          if (result.deleted) {
            const r = result.removed;
            return `deleted thread ${threadId}: ${r.positions} positions, ${r.items} items, ${r.snapshots} snapshots, ${r.pendingWrites} pending writes, ${r.failures} failures, ${r.ledgerEntries} ledger entries, ${r.signals} signals, ${r.pins} pins (artifacts are left to cairn gc)`;
          }
          return result.reason === 'missing' ? `no thread ${threadId}: nothing deleted` : `thread ${threadId} is ${result.status}, not ${options.ifStatus!.join(' or ')}: nothing deleted`;
        });
        if (!result.deleted) process.exitCode = 1;
      }, 'write'),
    );

  program
    .command('history <thread>')
    .description("list a thread's positions, newest first (--json: the entries app.history() returns)")
    .option(...db)
    .option('--limit <n>', 'at most this many (1 or more)', positiveInteger, 50)
    .option('--before-seq <n>', 'only positions below this seq (the last seq of the previous page)', nonNegativeInteger)
    .option('--ns <namespace>', "a child run's namespace (listed as 'child' on the steps that ran it)", '')
    .option('--tree', 'draw the branches (forks) as a tree, oldest first')
    .option('--json', 'print JSON')
    .action((threadId: string, options: Common & { limit: number; beforeSeq?: number; ns: string; tree?: boolean }) =>
      withEngine(options, async (engine) => {
        // A namespace the thread does not have is an error here, not an empty page.
        await namespaceHead(engine.checkpointer, threadId, options.ns);
        const rows = await threadHistory(engine.checkpointer, threadId, { ns: options.ns, limit: options.limit, ...(options.beforeSeq !== undefined ? { beforeSeq: options.beforeSeq } : {}) });
        const line = (r: PositionInfo) => {
          const changed = Object.keys(r.changes);
          const effects = r.effects.map((e) => e.name);
          return `${r.kind.padEnd(9)} ${(r.nodes.join(',') || '-').padEnd(24)} → ${(r.next.join(',') || 'END').padEnd(20)} changed ${changed.join(',') || '-'}${effects.length ? `  effects ${effects.join(',')}` : ''}${r.children.length ? `  child ${r.children.join(',')}` : ''}  ${r.hash.slice(0, 12)}`;
        };
        out(options, rows, () =>
          rows.length === 0 ? `thread ${threadId} has no positions yet` : options.tree ? drawTree(rows, line) : rows.map((r) => `${String(r.seq).padStart(5)} ← ${String(r.parent ?? '-').padStart(5)}  ${line(r)}`).join('\n'),
        );
      }),
    );

  program
    .command('show <thread>')
    .description('the stored state of a thread at its head or at --seq (as stored: no upcast, no derived fields)')
    .option(...db)
    .option('--seq <n>', 'position to show (0 or more)', nonNegativeInteger)
    .option('--ns <namespace>', "a child run's namespace (default: the thread's root graph)", '')
    .option('--json', 'print JSON')
    .action((threadId: string, options: Common & { seq?: number; ns: string }) =>
      withEngine(options, async (engine) => {
        const view = await storedState(engine.checkpointer, threadId, { ns: options.ns, ...(options.seq !== undefined ? { seq: options.seq } : {}) });
        const where = options.ns ? ` child ${options.ns}` : '';
        out(options, view, () => `thread ${threadId}${where} seq ${view.seq} (schema v${view.schemaVersion}), next → ${view.next.join(', ') || 'END'}\n${JSON.stringify(JSON.parse(encode(view.state)), null, 2)}`);
      }),
    );

  program
    .command('effects <thread>')
    .description("list a thread's effect ledger: intents, outcomes and recorded outputs")
    .option(...db)
    .option('--json', 'print JSON')
    .action((threadId: string, options: Common) =>
      withEngine(options, async (engine) => {
        const entries = await threadEffects(engine, threadId);
        out(options, entries, () =>
          entries.length === 0
            ? 'no ledger entries'
            : entries.map((e) => `${e.kind.padEnd(6)} ${e.status.padEnd(6)} seq ${String(e.seq).padStart(4)} ${e.node.padEnd(20)} ${e.name.padEnd(28)} ${e.key}`).join('\n'),
        );
      }),
    );

  program
    .command('verify [thread]')
    .description('recompute the hash chain of one thread, or of every thread')
    .option(...db)
    .option('--json', 'print JSON')
    .option(`--artifacts ${ARTIFACTS_ARG}`, `also re-hash every artifact of this store and report dangling refs: ${ARTIFACTS_HELP}`)
    .action((threadId: string | undefined, options: Common & { artifacts?: string }) =>
      withEngine(options, async (engine) => {
        // verifyThread says when the thread named is not there.
        const ids = threadId ? [threadId] : (await engine.checkpointer.listThreads()).map((t) => t.id);
        const reports: VerifyReport[] = [];
        for (const id of ids) reports.push(await verifyThread(engine, id));
        const artifacts = options.artifacts ? await verifyArtifactsCommand(engine, options.artifacts, { json: options.json === true, ...(threadId ? { thread: threadId } : {}) }) : undefined;
        out(options, artifacts ? { threads: reports, artifacts } : reports, () =>
          [
            ...(reports.length === 0 ? ['no threads'] : []),
            ...reports.map(
              (r) =>
                `${r.ok ? 'ok  ' : 'FAIL'} ${r.threadId}: ${r.positions} positions, ${r.snapshots} snapshots, ${r.ledgerEntries} ledger entries` +
                r.problems.map((p) => `\n     ${seqLabel(p.ns, p.seq)} (${p.kind}): ${p.message}`).join(''),
            ),
            ...(artifacts ? [formatArtifactVerifyReport(artifacts)] : []),
          ].join('\n'),
        );
        if (reports.some((r) => !r.ok) || (artifacts && !artifacts.ok)) process.exitCode = 1;
      }),
    );
}
