/**
 * @module cli/worker-command
 * `cairn worker --db postgres://…#schema --app <file>[#export]`: runs a {@link Worker}
 * for the app the module builds (`--db` a SQLite file: workers on one machine). The
 * module (loaded by cli/app-loader: `.js`, or `.ts` through tsx) exports a compiled
 * graph or `createApp(engine)` returning one. SIGTERM / SIGINT stop it gracefully:
 * running threads are released between steps for other workers to take over.
 */
import type { Command } from 'commander';
import { LEASE_MS, WORKER_CONCURRENCY, WORKER_POLL_MS } from '../defaults.js';
import { InvalidOptionError } from '../errors.js';
import { Worker } from '../runtime/worker.js';
import { APP_ARG, APP_HELP, loadApp } from './app-loader.js';
import { deprecatedFlag } from './deprecated-flags.js';
import { isPostgresUrl, openEngine } from './engine-url.js';
import { durationMs, positiveInteger } from './options.js';

export function registerWorkerCommand(program: Command): void {
  program
    .command('worker')
    .description('claim and run the runnable threads of an app, until SIGTERM')
    .option('--db <url>', 'the cairn database: postgres://user@host/db#schema (workers on many machines; created if missing), or a SQLite file path, sqlite: or file: URL (workers on one machine)', './cairn.db')
    .addOption(deprecatedFlag('--postgres <url>', '--db', { use: '--db <url>#<schema>' }))
    .addOption(deprecatedFlag('--schema <name>', '--db', { use: '--db <url>#<schema>', apply: withSchema }))
    .requiredOption(`--app ${APP_ARG}`, APP_HELP)
    .addOption(deprecatedFlag('--module <file>', '--app'))
    .option('--concurrency <n>', 'threads run at once', positiveInteger, WORKER_CONCURRENCY)
    .option('--max-connections <n>', 'PostgreSQL pool size (default: concurrency + 2)', positiveInteger)
    .option('--lease-ms <ms>', 'lease length: a duration (30s, 2m) or a whole number of ms', durationMs, LEASE_MS)
    .option('--poll-ms <ms>', 'longest sleep without a wake-up: a duration (5s) or a whole number of ms', durationMs, WORKER_POLL_MS)
    .option('--json', 'print one JSON line per finished thread')
    .action(async (options: { db: string; app: string; concurrency: number; maxConnections?: number; leaseMs: number; pollMs: number; json?: boolean }) => {
      // Each running thread uses one connection at a time; the wake-up listener holds one more.
      const max = options.maxConnections ?? options.concurrency + 2;
      // A PostgreSQL schema is created if missing, as every process of the app would; a SQLite file must exist.
      const engine = isPostgresUrl(options.db)
        ? await openEngine(options.db, 'create', { maxConnections: max, applicationName: 'cairn-worker' })
        : await openEngine(options.db, 'write');
      let loaded;
      try {
        loaded = await loadApp(options.app, engine);
      } catch (error) {
        await engine.close();
        throw error;
      }
      const { app, dispose } = loaded;
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
        await dispose();
        await engine.close();
      }
    });
}

/** The old `--schema <name>`: the schema of the PostgreSQL URL `--db` (or the old `--postgres`) gives. */
function withSchema(schema: unknown, db: unknown): string {
  const url = String(db);
  if (!isPostgresUrl(url)) throw new InvalidOptionError(`--schema names a PostgreSQL schema: write --db postgres://…#${String(schema)}.`);
  if (url.includes('#')) throw new InvalidOptionError(`--db ${url} already names a schema: drop --schema.`);
  return `${url}#${String(schema)}`;
}
