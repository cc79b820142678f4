/**
 * @module cli/import-langgraph-command
 * `cairn import-langgraph --from <sqlite file | postgres url> [--db <url>]`: every
 * thread of a LangGraph checkpoint database (SqliteSaver, PostgresSaver) becomes a
 * cairn thread with its history and forks (see langgraph/import-langgraph). The
 * LangGraph packages are loaded only when the command runs.
 */
import type { Command } from 'commander';
import { ENGINE_URL_HELP, openEngine } from './engine-url.js';
import { plural, progress } from './format.js';
import { repeatable, threadIdArgument } from './options.js';

export function registerImportLangGraphCommand(program: Command): void {
  program
    .command('import-langgraph')
    .description('copy the threads of a LangGraph checkpoint database (SqliteSaver file, PostgresSaver URL) into cairn threads, with their history, forks and pending writes; the source is only read')
    .requiredOption('--from <source>', 'the LangGraph database: a SqliteSaver file, or postgres://user@host/db (#schema for a schema other than public)')
    .option('--db <url>', `the cairn database to import into (created if missing): ${ENGINE_URL_HELP}`, './cairn.db')
    .option('--thread <id>', 'only this thread (repeatable)', repeatable(String), [] as string[])
    .option('--json', 'print the summary as JSON')
    .action(async (options: { from: string; db: string; thread: string[]; json?: boolean }) => {
      // It becomes a cairn thread of that id: one no cairn thread can have is bad usage, as on every command.
      for (const id of options.thread) threadIdArgument(id);
      const { CairnSaver } = await import('../langgraph/cairn-saver.js');
      const { importLangGraph, openLangGraphSource } = await import('../langgraph/import-langgraph.js');
      const source = await openLangGraphSource(options.from);
      try {
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
