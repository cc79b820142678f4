/**
 * @module cli/worker-command
 * `cairn worker --postgres <url> --module <file>`: runs a {@link Worker} for the app
 * the module builds. The module exports `createApp(engine)` (or a default export of
 * that shape) returning a compiled graph. SIGTERM / SIGINT stop it gracefully:
 * running threads are released between steps for other workers to take over.
 */
import type { Command } from 'commander';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Engine } from '../contracts/engine.js';
import { InvalidOptionError } from '../errors.js';
import type { App } from '../runtime/app.js';
import { Worker } from '../runtime/worker.js';
import type { StateSchema } from '../state/schema.js';
import { openEngine } from './engine-url.js';
import { positiveInteger } from './options.js';

type AppFactory = (engine: Engine) => App<StateSchema> | Promise<App<StateSchema>>;

export function registerWorkerCommand(program: Command): void {
  program
    .command('worker')
    .description('claim and run the runnable threads of an app, until SIGTERM')
    .option('--postgres <url>', 'PostgreSQL connection string')
    .option('--schema <name>', 'PostgreSQL schema of the cairn tables', 'public')
    .option('--db <file>', 'a cairn SQLite file instead (workers on one machine)')
    .requiredOption('--module <file>', 'a JS module exporting createApp(engine) (or a default export) that returns the compiled graph')
    .option('--concurrency <n>', 'threads run at once', positiveInteger, 4)
    .option('--max-connections <n>', 'PostgreSQL pool size (default: concurrency + 2)', positiveInteger)
    .option('--lease-ms <ms>', 'lease length', positiveInteger, 30_000)
    .option('--poll-ms <ms>', 'longest sleep without a wake-up', positiveInteger, 5_000)
    .option('--json', 'print one JSON line per finished thread')
    .action(async (options: { postgres?: string; schema: string; db?: string; module: string; concurrency: number; maxConnections?: number; leaseMs: number; pollMs: number; json?: boolean }) => {
      // Each running thread uses one connection at a time; the wake-up listener holds one more.
      const max = options.maxConnections ?? options.concurrency + 2;
      const engine = options.postgres ? await openPostgres(options.postgres, options.schema, max) : await openEngine(options.db ?? './cairn.db', 'write');
      const module = (await import(pathToFileURL(resolve(options.module)).href)) as { createApp?: AppFactory; default?: AppFactory };
      const factory = module.createApp ?? module.default;
      if (typeof factory !== 'function') throw new InvalidOptionError(`${options.module} must export createApp(engine) (or a default export) returning a compiled graph.`);
      const app = await factory(engine);
      const worker = new Worker(app, {
        concurrency: options.concurrency,
        leaseMs: options.leaseMs,
        pollMs: options.pollMs,
        onRun: (report) => process.stdout.write(options.json ? JSON.stringify(report) + '\n' : `${report.threadId}: ${report.status ?? report.error}\n`),
        onError: (error) => process.stderr.write(`cairn worker ${process.pid}: claiming failed, trying again: ${(error as Error).message}\n`),
      });
      const stop = () => void worker.stop();
      process.once('SIGTERM', stop);
      process.once('SIGINT', stop);
      if (!options.json) process.stderr.write(`cairn worker ${process.pid}: graph "${app.name}" on ${engine.name}, ${options.concurrency} at once\n`);
      try {
        await worker.run();
      } finally {
        await engine.close();
      }
    });
}

async function openPostgres(url: string, schema: string, max: number): Promise<Engine> {
  const { postgres } = await import('../engines/postgres/index.js');
  return postgres(url, { schema, max, applicationName: 'cairn-worker' });
}
