/**
 * @module cli/inspector-command
 * `cairn inspect`: serves the web inspector (inspector/server) over the database
 * `--db` names, opened read-only, on 127.0.0.1 and a free port unless told
 * otherwise, and prints the page's URL with its access token. `--allow-actions`
 * opens the database for writing and lets the page act on threads, recorded as
 * `--actor`; `--app <module#export>` (loaded as `cairn resume --app` loads it) adds
 * the actions that run the graph's code (evaluation replay among them);
 * `--eval-report <file>` shows a saved `cairn eval --json` report. Runs until SIGINT or SIGTERM, which close
 * the server, the application and the engine.
 */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import type { ArtifactStore } from '../contracts/artifact-store.js';
import { INSPECTOR_HOST, INSPECTOR_PORT } from '../defaults.js';
import { userInfo } from 'node:os';
import { CairnError, InvalidOptionError } from '../errors.js';
import { parseEvaluationReport } from '../inspector/evaluation.js';
import { startInspector } from '../inspector/server.js';
import { APP_ARG, APP_HELP, loadApp, type LoadedApp } from './app-loader.js';
import { DB_OPTION, openEngine } from './engine-url.js';
import { ARTIFACTS_ARG, ARTIFACTS_HELP, openArtifactStore } from './artifact-commands.js';
import { port, RAW_OPTION, REDACT_PATTERN_OPTION } from './options.js';

const LOCAL_HOSTS = new Set(['127.0.0.1', 'localhost', '::1']);

export function registerInspectorCommand(program: Command): void {
  program
    .command('inspect')
    .description('serve the web inspector over a database and print its URL, with its access token; read-only unless --allow-actions')
    .option(...DB_OPTION)
    .option(`--artifacts ${ARTIFACTS_ARG}`, `an artifact store, for the artifact check of a thread's verification: ${ARTIFACTS_HELP}`)
    .option('--port <n>', 'port to listen on (default: a free one)', port, INSPECTOR_PORT)
    .option('--host <host>', 'address to bind (anything but 127.0.0.1, localhost or ::1 opens it to the network, still behind its token)', INSPECTOR_HOST)
    .option('--allow-actions', "let the page act on threads: answer interrupts, send signals, settle effects, replay, fork, cancel, delete (opens the database for writing)")
    .option(`--app ${APP_ARG}`, `for the actions that run its code (answer an interrupt, replay, fork), ${APP_HELP}`)
    .option('--actor <name>', 'who the actions are recorded as (default: inspector:<os user>)')
    .option('--eval-report <file>', 'show a report cairn eval --json saved on the evaluation page (read-only: nothing runs)')
    .option(...RAW_OPTION)
    .option(...REDACT_PATTERN_OPTION)
    .option('--json', 'print the URL line as JSON: {"url", "readOnly", "actor", "engine"} (for a script that starts the inspector)')
    .addHelpText(
      'after',
      `
Read-only by default: the database is opened read-only and every action answers 403.
Stored values are shown redacted by the rules stored with each thread's graph (and --redact-pattern); --raw shows them as stored.

With --allow-actions the page can, through the same functions as the CLI, recorded as --actor:
  answer a pending interrupt (a form built from its answer schema)   as cairn resume --answer   (needs --app)
  send a signal to a waiting thread                                  as cairn signal
  settle an effect in doubt: its outcome, or that it failed          as cairn resolve-effect
  replay from a position (writes nothing)                            as cairn replay            (needs --app)
  evaluate threads with the app's code and models (writes nothing)  as cairn eval              (needs --app)
  fork from a position with an edited state                          as cairn fork --patch      (needs --app)
  cancel a thread (its run stops at the next step boundary)          as cairn cancel
  delete a thread (after typing its id)                              as cairn delete-thread
Actions are POSTs that must carry the token in the x-cairn-token header (the page sends it);
cross-site requests are refused.

Examples:
  cairn inspect --db ./cairn.db
  cairn inspect --db ./cairn.db --allow-actions --app ./dist/app.js#app --actor ana
  cairn inspect --db ./cairn.db --eval-report ./eval.json`,
    )
    .action(async (options: { db: string; artifacts?: string; port: number; host: string; allowActions?: boolean; app?: string; actor?: string; evalReport?: string; raw?: boolean; redactPattern: string[]; json?: boolean }) => {
      const allowActions = options.allowActions === true;
      if (!allowActions && (options.app !== undefined || options.actor !== undefined)) throw new InvalidOptionError(`${options.app !== undefined ? '--app' : '--actor'} goes with --allow-actions (the inspector is read-only without it).`);
      const actor = options.actor ?? `inspector:${userInfo().username}`;
      const evaluationReport = options.evalReport !== undefined ? parseEvaluationReport(readReport(options.evalReport), options.evalReport) : undefined;
      const engine = await openEngine(options.db, allowActions ? 'write' : 'read');
      let artifacts: ArtifactStore | undefined;
      let loaded: LoadedApp | undefined;
      try {
        // Fails now, not on the first page load, when there is no cairn database there.
        await engine.checkpointer.listThreads({ limit: 1 });
        if (options.artifacts) artifacts = await openArtifactStore(options.artifacts, { engine });
        if (options.app !== undefined) loaded = await loadApp(options.app, engine);
      } catch (error) {
        await artifacts?.close();
        await engine.close();
        throw error;
      }
      let inspector: Awaited<ReturnType<typeof startInspector>>;
      try {
        inspector = await startInspector({
          engine,
          port: options.port,
          host: options.host,
          ...(artifacts ? { artifacts } : {}),
          ...(evaluationReport ? { evaluationReport } : {}),
          redaction: { ...(options.raw ? { raw: true } : {}), patterns: options.redactPattern },
          ...(allowActions ? { allowActions, actor, ...(loaded ? { app: loaded.app } : {}) } : {}),
        });
      } catch (error) {
        await loaded?.dispose();
        await artifacts?.close();
        await engine.close();
        throw listenError(error, options.host, options.port);
      }
      if (!LOCAL_HOSTS.has(options.host)) {
        const can = allowActions ? 'read and change every thread' : 'read every thread';
        process.stderr.write(`warning: cairn inspect listens on ${options.host}, not only on this machine: anyone who can reach it and has the URL's token can ${can}.\n`);
      }
      const mode = allowActions ? `actions allowed, as ${actor}${loaded ? '' : '; no --app: answering, replaying and forking are off'}` : 'read-only';
      if (options.json) process.stdout.write(JSON.stringify({ url: inspector.url, readOnly: !allowActions, actor: allowActions ? actor : null, engine: engine.name }) + '\n');
      else process.stdout.write(`cairn inspector (${mode}) on ${engine.name}: ${inspector.url}\n`);
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve);
        process.once('SIGTERM', resolve);
      });
      await inspector.close();
      await loaded?.dispose();
      await artifacts?.close();
      await engine.close();
    });
}

/**
 * Why the server could not listen on `host:port`, in one line (a port in use, one this
 * user may not bind, a host that is not this machine's or does not resolve), instead of
 * the stack of Node's listen error; any other error as it is.
 */
function listenError(error: unknown, host: string, port: number): unknown {
  const { code, syscall } = error as NodeJS.ErrnoException;
  if (syscall !== 'listen' && syscall !== 'getaddrinfo') return error;
  const at = `${host}:${port}`;
  const why =
    code === 'EADDRINUSE'
      ? `${at} is in use: pick another --port, or --port 0 for a free one`
      : code === 'EACCES'
        ? `this user may not listen on ${at}: pick a --port above 1023, or --port 0 for a free one`
        : code === 'EADDRNOTAVAIL'
          ? `${host} is not an address of this machine: give --host one of its addresses (127.0.0.1 by default)`
          : code === 'ENOTFOUND' || code === 'EAI_AGAIN'
            ? `--host ${host} does not resolve to an address`
            : `cannot listen on ${at}`;
  return new CairnError(`cairn inspect: ${why} (${code ?? (error as Error).message}).`, { cause: error });
}

/** The text of `--eval-report`'s file; InvalidOptionError (a usage error) when it cannot be read. */
function readReport(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (error) {
    throw new InvalidOptionError(`--eval-report ${file}: cannot read it (${(error as Error).message}).`);
  }
}
