/**
 * @module cli/inspector-command
 * `cairn inspect`: serves the web inspector (inspector/server) over the database
 * `--db` names, opened read-only, on 127.0.0.1 and a free port unless told
 * otherwise, and prints the page's URL with its access token. Runs until SIGINT or
 * SIGTERM, which close the server and the engine.
 */
import type { Command } from 'commander';
import type { ArtifactStore } from '../contracts/artifact-store.js';
import { INSPECTOR_HOST, INSPECTOR_PORT } from '../defaults.js';
import { startInspector } from '../inspector/server.js';
import { DB_OPTION, openEngine } from './engine-url.js';
import { ARTIFACTS_ARG, ARTIFACTS_HELP, openArtifactStore } from './artifact-commands.js';
import { nonNegativeInteger } from './options.js';

const LOCAL_HOSTS = new Set(['127.0.0.1', 'localhost', '::1']);

export function registerInspectorCommand(program: Command): void {
  program
    .command('inspect')
    .description('serve the web inspector (read-only) over a database and print its URL, with its access token')
    .option(...DB_OPTION)
    .option(`--artifacts ${ARTIFACTS_ARG}`, `an artifact store, for the artifact check of a thread's verification: ${ARTIFACTS_HELP}`)
    .option('--port <n>', 'port to listen on (default: a free one)', nonNegativeInteger, INSPECTOR_PORT)
    .option('--host <host>', 'address to bind (anything but 127.0.0.1, localhost or ::1 opens it to the network, still behind its token)', INSPECTOR_HOST)
    .action(async (options: { db: string; artifacts?: string; port: number; host: string }) => {
      const engine = await openEngine(options.db, 'read');
      let artifacts: ArtifactStore | undefined;
      try {
        // Fails now, not on the first page load, when there is no cairn database there.
        await engine.checkpointer.listThreads({ limit: 1 });
        if (options.artifacts) artifacts = await openArtifactStore(options.artifacts);
      } catch (error) {
        await engine.close();
        throw error;
      }
      const inspector = await startInspector({ engine, port: options.port, host: options.host, ...(artifacts ? { artifacts } : {}) });
      if (!LOCAL_HOSTS.has(options.host)) {
        process.stderr.write(`warning: cairn inspect listens on ${options.host}, not only on this machine: anyone who can reach it and has the URL's token can read every thread.\n`);
      }
      process.stdout.write(`cairn inspector (read-only) on ${engine.name}: ${inspector.url}\n`);
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      await inspector.close();
      await artifacts?.close();
      await engine.close();
    });
}
