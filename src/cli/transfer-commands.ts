/**
 * @module cli/transfer-commands
 * `cairn export`, `cairn import` and `cairn copy`: move threads between engines
 * with their whole history (see inspect/transfer). Targets are SQLite files or
 * PostgreSQL URLs (`postgres://user@host/db#schema`).
 */
import type { Command } from 'commander';
import { createReadStream, createWriteStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { decode, encode } from '../codec/tagged-json.js';
import type { Engine } from '../contracts/engine.js';
import { exportThreads, importThreads, type TransferRecord } from '../inspect/transfer.js';
import { verifyThread } from '../inspect/verify.js';
import { openEngine } from './engine-url.js';
import { InvalidOptionError } from '../errors.js';

/** The threads a command names: `--all`, or the ids given (not both, not neither). */
function checkSelection(ids: string[], all: boolean | undefined): void {
  if (all && ids.length) throw new InvalidOptionError(`name threads or pass --all, not both (got --all and ${ids.join(' ')}).`);
  if (!all && !ids.length) throw new InvalidOptionError('name the threads to move, or pass --all.');
}

async function threadIds(engine: Engine, ids: string[], all: boolean | undefined): Promise<string[]> {
  if (!all) return ids;
  const found: string[] = [];
  for (let after: string | undefined; ; ) {
    const page = await engine.checkpointer.listThreads({ limit: 500, ...(after !== undefined ? { after } : {}) });
    found.push(...page.map((t) => t.id));
    if (page.length < 500) return found;
    after = page[page.length - 1]!.id;
  }
}

async function* readLines(path: string | undefined): AsyncGenerator<TransferRecord> {
  const input = path ? createReadStream(path, 'utf8') : process.stdin;
  for await (const line of createInterface({ input, crlfDelay: Infinity })) if (line.trim()) yield decode<TransferRecord>(line, 'export line');
}

export function registerTransferCommands(program: Command): void {
  program
    .command('export [threads...]')
    .description('write threads with their whole history (positions, items, snapshots, ledger) as JSON lines')
    .requiredOption('--from <db>', 'SQLite file or postgres:// URL')
    .option('--all', 'every thread')
    .option('--out <file>', 'write here instead of stdout')
    .action(async (ids: string[], options: { from: string; all?: boolean; out?: string }) => {
      checkSelection(ids, options.all);
      const engine = await openEngine(options.from, 'read');
      let out: NodeJS.WritableStream | undefined;
      try {
        // The file is created with the first record: a thread that is not there leaves none.
        for await (const record of exportThreads(engine, await threadIds(engine, ids, options.all))) {
          out ??= options.out ? createWriteStream(options.out) : process.stdout;
          out.write(encode(record) + '\n');
        }
      } finally {
        if (options.out && out) await new Promise<void>((resolve) => out!.end(() => resolve()));
        await engine.close();
      }
    });

  program
    .command('import')
    .description('read an export (JSON lines) into an engine; threads that exist there are refused')
    .requiredOption('--to <db>', 'SQLite file or postgres:// URL')
    .option('--in <file>', 'read this file instead of stdin')
    .action(async (options: { to: string; in?: string }) => {
      const engine = await openEngine(options.to, 'create');
      try {
        const report = await importThreads(engine, readLines(options.in));
        process.stdout.write(`imported ${report.threads.length} thread(s), ${report.positions} position(s), ${report.ledgerEntries} ledger entr(ies)\n`);
      } finally {
        await engine.close();
      }
    });

  program
    .command('copy [threads...]')
    .description('export from one engine and import into another, then verify every copied thread on both sides')
    .requiredOption('--from <db>', 'source: SQLite file or postgres:// URL')
    .requiredOption('--to <db>', 'target: SQLite file or postgres:// URL')
    .option('--all', 'every thread')
    .option('--json', 'print JSON')
    .action(async (ids: string[], options: { from: string; to: string; all?: boolean; json?: boolean }) => {
      checkSelection(ids, options.all);
      const source = await openEngine(options.from, 'read');
      const target = await openEngine(options.to, 'create');
      try {
        const threads = await threadIds(source, ids, options.all);
        const report = await importThreads(target, exportThreads(source, threads));
        const checks = [];
        for (const id of report.threads) {
          const [before, after] = await Promise.all([verifyThread(source.checkpointer, id), verifyThread(target.checkpointer, id)]);
          checks.push({ thread: id, source: before.ok, target: after.ok, positions: after.positions });
        }
        if (options.json) process.stdout.write(JSON.stringify({ ...report, verify: checks }, null, 2) + '\n');
        else {
          process.stdout.write(`copied ${report.threads.length} thread(s), ${report.positions} position(s), ${report.ledgerEntries} ledger entr(ies)\n`);
          for (const c of checks) process.stdout.write(`  ${c.source && c.target ? 'ok  ' : 'FAIL'} ${c.thread}: verify source ${c.source ? 'ok' : 'FAIL'}, target ${c.target ? 'ok' : 'FAIL'} (${c.positions} positions)\n`);
        }
        if (checks.some((c) => !c.source || !c.target)) process.exitCode = 1;
      } finally {
        await Promise.all([source.close(), target.close()]);
      }
    });
}
