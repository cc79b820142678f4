#!/usr/bin/env node
/**
 * @module cli/main
 * The `cairn` command line: `demo`, `threads`, `attempts`, `delete-thread`,
 * `history`, `show`, `effects`, `verify`, `diff`, `resume`, `fork`, `replay`,
 * `resolve-effect`, `signal`, `cancel`, `erase`, `gc`, `retention apply`, `migrate`, `worker`, `export`, `import`, `copy`,
 * `inspect` (the web inspector), `keys rotate`. Every command names its database with `--db <url>` (a SQLite
 * file path, a `sqlite:` / `file:` URL, or `postgres://…#schema`; copy's target is
 * `--to`) and takes `--json`. Renamed flags keep their old spelling for a while,
 * hidden, with a deprecation notice (cli/deprecated-flags).
 *
 * Exit codes, for scripts: 0 ok; 1 a negative result or a failure (damage found,
 * nothing deleted or cancelled, no such thread or database, an engine error); 2 bad usage (an
 * unknown command or flag, a flag value that does not parse, flags that do not go
 * together), reported before anything is opened. Under `--json` a command's failure is
 * printed on stderr as `{"error": {"code", "message"}}` (the code of the cairn error,
 * ERR_INVALID_OPTION for bad usage commander found, ERR_UNEXPECTED for anything else).
 */
import { Command, CommanderError } from 'commander';
import { createRequire } from 'node:module';
import { CairnError, InvalidKeyError, InvalidOptionError } from '../errors.js';
import { runDemo } from './demo.js';
import { registerInspectCommands } from './inspect-commands.js';
import { registerOperateCommands } from './operate-commands.js';
import { registerEvalCommand } from './eval-command.js';
import { registerMigrateCommand } from './migrate-command.js';
import { registerWorkerCommand } from './worker-command.js';
import { registerTransferCommands } from './transfer-commands.js';
import { registerArtifactCommands } from './artifact-commands.js';
import { registerSignalCommand } from './signal-command.js';
import { registerRetentionCommand } from './retention-command.js';
import { registerEraseCommand } from './erase-command.js';
import { registerInspectorCommand } from './inspector-command.js';
import { registerImportLangGraphCommand } from './import-langgraph-command.js';
import { installDeprecatedFlags } from './deprecated-flags.js';
import { registerKeysCommand } from './keys-command.js';
import { ENGINE_URL_HELP, KEYS_OPTION, useKeyFile } from './engine-url.js';

const { version } = createRequire(import.meta.url)('../../package.json') as { version: string };
/** Exit code of bad usage. */
const USAGE = 2;
/** The command being run was given --json: its failure is printed as JSON too. */
let json = false;

/**
 * A reader that stops early (`cairn threads --json | head -1`) closes the pipe, and the
 * next write fails with EPIPE. Nothing more can be shown to anyone, so the command stops
 * there, quietly, with the exit code it had so far, instead of dying on an unhandled
 * 'error' event with a stack trace (or, for a command that waits for the pipe to drain,
 * hanging). Any other write error (a full disk under `cairn threads --json > out.json`:
 * ENOSPC) leaves the output incomplete: the command failed, so it ends with exit 1 and,
 * when stdout failed, one line on stderr saying so (a JSON error under --json), not a
 * stack trace of the write.
 */
function stopWhenReaderLeaves(stream: NodeJS.WriteStream): void {
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit();
    if (stream === process.stdout) {
      const message = `[cairn] writing the output failed (${error.code ?? error.message}): what was written is incomplete.`;
      try {
        process.stderr.write((jsonAsked ? JSON.stringify({ error: { code: 'ERR_UNEXPECTED', message } }) : message) + '\n');
      } catch {
        // stderr failed too: the exit code is all that is left.
      }
    }
    process.exit(1);
  });
}
stopWhenReaderLeaves(process.stdout);
stopWhenReaderLeaves(process.stderr);

/**
 * Whether the command line asks for --json, read before commander parses it: its own
 * usage errors (an unknown flag, a value that does not parse) happen before any command
 * runs, and a script that parses what --json prints must be able to parse them too.
 */
const jsonAsked = (() => {
  const args = process.argv.slice(2);
  const end = args.indexOf('--');
  return (end >= 0 ? args.slice(0, end) : args).includes('--json');
})();

/** A commander usage error under --json: `{"error": {"code", "message"}}` on stderr, as every other failure; bad usage is ERR_INVALID_OPTION, as the flag values cairn refuses. */
function writeUsageErrorAsJson(error: CommanderError): void {
  const message = `[cairn] ${error.message.replace(/^error: /, '')}`;
  process.stderr.write(JSON.stringify({ error: { code: InvalidOptionError.code, message } }) + '\n');
}

const program = new Command();
// Before any subcommand is added: they copy it. Commander then throws its parse errors
// (already printed, or under --json printed below) instead of exiting with 1, and they
// exit with USAGE below.
program.exitOverride();
program.configureOutput({ outputError: (text, write) => (jsonAsked ? undefined : write(text)) });
program
  .name('cairn')
  .description('Durable runs for AI agents: inspect and move threads, verify their hash chains, collect artifacts, run workers and the demo.')
  .version(version)
  .option(...KEYS_OPTION)
  .hook('preAction', (_program, command) => {
    json = command.opts<{ json?: unknown }>().json === true;
    useKeyFile(program.opts<{ keys?: string }>().keys);
  })
  .addHelpText(
    'after',
    `\nDatabases: --db <url> is ${ENGINE_URL_HELP}. An encrypted one (cairn/crypto) opens with --keys <key file> (any command), CAIRN_KEY_FILE or CAIRN_MASTER_KEY.\nDurations (--since, --grace, olderThan=, --lease-ms, --poll-ms) are written 500ms, 30s, 15m, 12h, 7d or 2w.`,
  );

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
registerOperateCommands(program);
registerEvalCommand(program);
registerMigrateCommand(program);
registerWorkerCommand(program);
registerTransferCommands(program);
registerImportLangGraphCommand(program);
registerArtifactCommands(program);
registerRetentionCommand(program);
registerSignalCommand(program);
registerEraseCommand(program);
registerInspectorCommand(program);
registerKeysCommand(program);
installDeprecatedFlags(program);

program.parseAsync().catch((error: unknown) => {
  if (error instanceof CommanderError) {
    // --help and --version end here too, with exit code 0.
    process.exitCode = error.exitCode === 0 ? 0 : USAGE;
    if (error.exitCode !== 0 && jsonAsked) writeUsageErrorAsJson(error);
    return;
  }
  if (json) {
    // {"error": {"code", "message"}} on stderr, for a script that parses what --json prints.
    const code = CairnError.is(error) ? error.code : 'ERR_UNEXPECTED';
    const message = CairnError.is(error) ? error.message : error instanceof Error ? error.message : String(error);
    process.stderr.write(JSON.stringify({ error: { code, message } }) + '\n');
  } else process.stderr.write(`${CairnError.is(error) ? error.message : (error as Error).stack ?? String(error)}\n`);
  // A value cairn refused (an option, an id) is bad usage too; everything else is a failure.
  process.exitCode = InvalidOptionError.is(error) || InvalidKeyError.is(error) ? USAGE : 1;
});
