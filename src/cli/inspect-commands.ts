/**
 * @module cli/inspect-commands
 * `cairn threads | history | show | effects | verify`: thin faces over the
 * contracts and inspect functions; every command prints a table or, with
 * `--json`, JSON.
 */
import type { Command } from 'commander';
import { decode, encode } from '../codec/tagged-json.js';
import type { Engine } from '../contracts/engine.js';
import { ThreadNotFoundError } from '../errors.js';
import { verifyThread, type VerifyReport } from '../inspect/verify.js';
import { materialize } from '../runtime/materialize.js';
import type { PositionBody } from '../runtime/position.js';
import { openEngine } from './engine-url.js';
import { formatArtifactVerifyReport, verifyArtifactsCommand } from './artifact-commands.js';

interface Common {
  db: string;
  json?: boolean;
}

async function withEngine<T>(options: Common, fn: (engine: Engine) => Promise<T>): Promise<T> {
  const engine = openEngine(options.db);
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

export function registerInspectCommands(program: Command): void {
  const db = ['--db <file>', 'the cairn SQLite file', './cairn.db'] as const;

  program
    .command('threads')
    .description('list threads')
    .option(...db)
    .option('--status <status>', 'only threads with this status')
    .option('--limit <n>', 'at most this many', (v) => Number(v), 100)
    .option('--json', 'print JSON')
    .action((options: Common & { status?: string; limit: number }) =>
      withEngine(options, async (engine) => {
        const threads = await engine.checkpointer.listThreads({ ...(options.status ? { status: options.status as never } : {}), limit: options.limit });
        out(options, threads, () =>
          threads.length === 0
            ? 'no threads'
            : threads.map((t) => `${t.id.padEnd(24)} ${t.status.padEnd(16)} head ${String(t.head ?? '-').padStart(5)}  attempts ${t.attempts}  ${time(t.updatedAt)}`).join('\n'),
        );
      }),
    );

  program
    .command('history <thread>')
    .description("list a thread's positions, newest first")
    .option(...db)
    .option('--limit <n>', 'at most this many', (v) => Number(v), 50)
    .option('--tree', 'draw the branches (forks) as a tree, oldest first')
    .option('--json', 'print JSON')
    .action((threadId: string, options: Common & { limit: number; tree?: boolean }) =>
      withEngine(options, async (engine) => {
        const positions = await engine.checkpointer.listPositions(threadId, '', { limit: options.limit });
        if (positions.length === 0) throw new ThreadNotFoundError(threadId, { engine: engine.name });
        const rows = positions.map((p) => {
          const body = decode<PositionBody>(p.body, `position ${p.seq}`);
          return { seq: p.seq, parent: p.parent, step: p.step, kind: body.kind, nodes: body.nodes, next: body.next, changes: Object.keys(body.changes), effects: (body.effects ?? []).map((e) => e.name), schemaVersion: p.schemaVersion, createdAt: p.createdAt, hash: p.hash };
        });
        const line = (r: (typeof rows)[number]) =>
          `${r.kind.padEnd(9)} ${(r.nodes.join(',') || '-').padEnd(24)} → ${(r.next.join(',') || 'END').padEnd(20)} changed ${r.changes.join(',') || '-'}${r.effects.length ? `  effects ${r.effects.join(',')}` : ''}  ${r.hash.slice(0, 12)}`;
        out(options, rows, () =>
          options.tree ? drawTree(rows, line) : rows.map((r) => `${String(r.seq).padStart(5)} ← ${String(r.parent ?? '-').padStart(5)}  ${line(r)}`).join('\n'),
        );
      }),
    );

  program
    .command('show <thread>')
    .description('the stored state of a thread at its head or at --seq (as stored: no upcast, no derived fields)')
    .option(...db)
    .option('--seq <n>', 'position to show', (v) => Number(v))
    .option('--json', 'print JSON')
    .action((threadId: string, options: Common & { seq?: number }) =>
      withEngine(options, async (engine) => {
        const thread = await engine.checkpointer.getThread(threadId);
        if (!thread || thread.head === null) throw new ThreadNotFoundError(threadId, { engine: engine.name });
        const loaded = await materialize(engine.checkpointer, undefined, threadId, '', options.seq ?? thread.head);
        const view = { thread: threadId, seq: loaded.position.seq, schemaVersion: loaded.storedVersion, next: loaded.body.next, state: loaded.state };
        out(options, view, () => `thread ${threadId} seq ${view.seq} (schema v${view.schemaVersion}), next → ${view.next.join(', ') || 'END'}\n${JSON.stringify(JSON.parse(encode(view.state)), null, 2)}`);
      }),
    );

  program
    .command('effects <thread>')
    .description("list a thread's effect ledger: intents, outcomes and recorded outputs")
    .option(...db)
    .option('--json', 'print JSON')
    .action((threadId: string, options: Common) =>
      withEngine(options, async (engine) => {
        const entries = await engine.ledger.list(threadId);
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
    .option('--artifacts <location>', 'also re-hash every artifact and report dangling refs (a directory or s3://bucket/prefix)')
    .action((threadId: string | undefined, options: Common & { artifacts?: string }) =>
      withEngine(options, async (engine) => {
        const ids = threadId ? [threadId] : (await engine.checkpointer.listThreads()).map((t) => t.id);
        const reports: VerifyReport[] = [];
        for (const id of ids) reports.push(await verifyThread(engine.checkpointer, id));
        const artifacts = options.artifacts ? await verifyArtifactsCommand(engine, options.artifacts, { json: options.json === true, ...(threadId ? { thread: threadId } : {}) }) : undefined;
        out(options, artifacts ? { threads: reports, artifacts } : reports, () =>
          [
            ...reports.map((r) => `${r.ok ? 'ok  ' : 'FAIL'} ${r.threadId}: ${r.positions} positions${r.problems.map((p) => `\n     seq ${p.seq}: ${p.message}`).join('')}`),
            ...(artifacts ? [formatArtifactVerifyReport(artifacts)] : []),
          ].join('\n'),
        );
        if (reports.some((r) => !r.ok) || (artifacts && !artifacts.ok)) process.exitCode = 1;
      }),
    );
}
