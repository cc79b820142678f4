/**
 * @module cli/import-langgraph-command
 * `cairn import-langgraph --from <sqlite file | postgres url> [--db <url>]`: every
 * thread of a LangGraph checkpoint database (SqliteSaver, PostgresSaver) becomes a
 * cairn thread with its history and forks (see langgraph/import-langgraph). The
 * LangGraph packages are loaded only when the command runs; its flags are checked
 * before either database is opened.
 */
import { realpathSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { checkKeyFile } from '../crypto/key-provider.js';
import { InvalidOptionError } from '../errors.js';
// No LangGraph package at the top of this module: openLangGraphSource loads the one the source needs.
import { checkSourceThreads, importLangGraph, langGraphSourceOf, openLangGraphSource, type LangGraphLocation } from '../langgraph/import-langgraph.js';
import { ENGINE_URL_HELP, checkEngineTarget, cliKeyFile, isPostgresUrl, openEngine, postgresTarget, sqlitePath } from './engine-url.js';
import { plural, progress } from './format.js';
import { repeatable, threadIdArgument } from './options.js';

/**
 * Refuses, opening and creating nothing, flags the import could not run with (bad
 * usage, exit 2): thread ids no thread can have, a `--from` or `--db` that names no
 * database it could open, a `--db` that is the source itself (cairn's tables would be
 * written into the LangGraph database, which is only read), a key file the target
 * could not be sealed with. Checked before the source is opened and the target
 * created, so a refused import leaves no database behind.
 */
async function checkFlags(options: { from: string; db: string; thread: string[] }): Promise<void> {
  // Each becomes a cairn thread of that id: one no cairn thread can have is bad usage, as on every command.
  for (const id of options.thread) threadIdArgument(id);
  const from = langGraphSourceOf(options.from);
  await checkEngineTarget(options.db);
  if (isSource(from, options.db)) {
    throw new InvalidOptionError(`--db ${options.db} is the LangGraph database --from reads: cairn's tables would be written into it. Import into another database; the source is only read.`);
  }
  const keys = cliKeyFile();
  if (keys !== undefined) checkKeyFile(keys);
}

/** True when the cairn target `db` is the LangGraph database `from` (the same file, or the same PostgreSQL URL and schema). */
function isSource(from: LangGraphLocation, db: string): boolean {
  if (isPostgresUrl(db) !== (from.kind === 'postgres')) return false;
  if (from.kind === 'postgres') {
    const target = postgresTarget(db);
    return target.url === from.url && target.schema === from.schema;
  }
  return realPath(from.path) === realPath(sqlitePath(db));
}

/** The file a path names, through symbolic links when it is there. */
function realPath(path: string): string {
  try {
    return realpathSync(path);
  } catch {
    return resolve(path);
  }
}

export function registerImportLangGraphCommand(program: Command): void {
  program
    .command('import-langgraph')
    .description('copy the threads of a LangGraph checkpoint database (SqliteSaver file, PostgresSaver URL) into cairn threads, with their history, forks and pending writes; the source is only read')
    .requiredOption('--from <source>', 'the LangGraph database: a SqliteSaver file, or postgres://user@host/db (#schema for a schema other than public)')
    .option('--db <url>', `the cairn database to import into (created if missing): ${ENGINE_URL_HELP}`, './cairn.db')
    .option('--thread <id>', 'only this thread (repeatable)', repeatable(String), [] as string[])
    .option('--json', 'print the summary as JSON')
    .action(async (options: { from: string; db: string; thread: string[]; json?: boolean }) => {
      await checkFlags(options);
      const { CairnSaver } = await import('../langgraph/cairn-saver.js');
      const source = await openLangGraphSource(options.from);
      try {
        // A --thread the source does not have creates no target either.
        await checkSourceThreads(source, options.thread);
        const engine = await openEngine(options.db, 'create');
        try {
          const bar = progress(process.stderr.isTTY === true && !options.json);
          let report;
          try {
            report = await importLangGraph(source, new CairnSaver({ engine }), {
              ...(options.thread.length ? { threads: options.thread } : {}),
              onThread: (done, total) => bar.update('importing threads', done, total),
            });
          } finally {
            bar.done();
          }
          const skipped = report.skipped.length ? `; skipped ${plural(report.skipped.length, 'thread')} the target already has (${report.skipped.join(', ')})` : '';
          process.stdout.write(
            (options.json
              ? JSON.stringify({ source: source.kind, ...report }, null, 2)
              : `imported ${plural(report.threads, 'thread')}, ${plural(report.checkpoints, 'checkpoint')}, ${plural(report.writes, 'pending write')} from LangGraph (${source.kind})${skipped}`) + '\n',
          );
        } finally {
          await engine.close();
        }
      } finally {
        await source.close();
      }
    });
}
