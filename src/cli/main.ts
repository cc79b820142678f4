#!/usr/bin/env node
/**
 * @module cli/main
 * The `cairn` command line: `demo`, `threads`, `attempts`, `delete-thread`,
 * `history`, `show`, `effects`, `verify`, `gc`, `migrate`, `worker`, `export`,
 * `import`, `copy`. Inspection commands take `--db <file | postgres://…#schema>`
 * and `--json`.
 */
import { Command } from 'commander';
import { createRequire } from 'node:module';
import { CairnError } from '../errors.js';
import { runDemo } from './demo.js';
import { registerInspectCommands } from './inspect-commands.js';
import { registerMigrateCommand } from './migrate-command.js';
import { registerWorkerCommand } from './worker-command.js';
import { registerTransferCommands } from './transfer-commands.js';
import { registerArtifactCommands } from './artifact-commands.js';

const { version } = createRequire(import.meta.url)('../../package.json') as { version: string };
const program = new Command();
program
  .name('cairn')
  .description('Durable runs for AI agents: inspect and move threads, verify their hash chains, collect artifacts, run workers and the demo.')
  .version(version);

program
  .command('demo')
  .description('run the worked example, kill it with SIGKILL at a crash point, resume it, and print every recovery decision')
  .option('--crash-at <point>', 'crash point: <point>[:<node>][#<n>], e.g. after-effect:put_object (default)')
  .option('--no-crash', 'run without a crash')
  .option('--json', 'print the trace as JSON lines')
  .option('--dir <dir>', 'work in this folder (default: a new temporary folder)')
  .action(async (options: { crashAt?: string; crash: boolean; json?: boolean; dir?: string }) => {
    const checks = await runDemo({ crash: options.crash, json: options.json === true, ...(options.crashAt ? { crashAt: options.crashAt } : {}), ...(options.dir ? { dir: options.dir } : {}) });
    if (checks.some((c) => !c.ok)) process.exitCode = 1;
  });

registerInspectCommands(program);
registerMigrateCommand(program);
registerWorkerCommand(program);
registerTransferCommands(program);
registerArtifactCommands(program);

program.parseAsync().catch((error: unknown) => {
  process.stderr.write(`${CairnError.is(error) ? error.message : (error as Error).stack ?? String(error)}\n`);
  process.exitCode = 1;
});
