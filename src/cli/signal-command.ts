/**
 * @module cli/signal-command
 * `cairn signal <thread> <name> [--payload <json> | --payload-file <file|->]`: queues a
 * signal for a thread through {@link signalThread}, as a script would. Exit 1 for a
 * missing thread or database; 2 for a payload that is not JSON, or a thread id or name
 * cairn refuses.
 */
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { encode } from '../codec/tagged-json.js';
import { InvalidOptionError } from '../errors.js';
import { signalThread } from '../inspect/signal.js';
import { DB_OPTION, openEngine } from './engine-url.js';
import { threadIdArgument, validated } from './options.js';

/** `--payload`'s value, parsed as JSON (bad usage when it is not). */
function jsonPayload(text: string): { value: unknown } {
  try {
    return { value: JSON.parse(text) as unknown };
  } catch (error) {
    throw new InvalidOptionError(`--payload ${JSON.stringify(text)} is not JSON (${(error as Error).message}). Quote a string: --payload '"yes"'.`);
  }
}

/**
 * `--payload-file`'s content (`-`: stdin), parsed as JSON: a payload up to the size
 * limit does not fit one command-line argument (128 KiB on Linux).
 */
function filePayload(path: string): { value: unknown } {
  let text: string;
  try {
    text = readFileSync(path === '-' ? 0 : path, 'utf8');
  } catch (error) {
    throw new InvalidOptionError(`--payload-file ${JSON.stringify(path)} cannot be read (${(error as Error).message}).`);
  }
  try {
    return { value: JSON.parse(text) as unknown };
  } catch (error) {
    throw new InvalidOptionError(`--payload-file ${JSON.stringify(path)} is not JSON (${(error as Error).message}).`);
  }
}

/** Registers `cairn signal`. */
export function registerSignalCommand(program: Command): void {
  program
    .command('signal <thread> <name>')
    .description('queue a signal for a thread (durable at once); a thread that waits is made due, so a worker continues it')
    .option(...DB_OPTION)
    .option('--payload <json>', 'the payload, as JSON (default null)', validated(jsonPayload))
    .option('--payload-file <file>', 'read the payload, as JSON, from a file (- for stdin)', validated(filePayload))
    .option('--json', 'print the stored signal (and the thread status) as JSON')
    .action(async (threadId: string, name: string, options: { db: string; payload?: { value: unknown }; payloadFile?: { value: unknown }; json?: boolean }) => {
      threadIdArgument(threadId);
      if (options.payload && options.payloadFile) throw new InvalidOptionError('give the payload once: --payload or --payload-file, not both.');
      const payload = (options.payloadFile ?? options.payload)?.value ?? null;
      const engine = await openEngine(options.db, 'write');
      try {
        const signal = await signalThread(engine, { thread: threadId, name, payload });
        const status = (await engine.checkpointer.getThread(threadId))?.status ?? null;
        if (options.json) process.stdout.write(JSON.stringify({ ...JSON.parse(encode(signal)), threadStatus: status }, null, 2) + '\n');
        else {
          const woken = status === 'waiting' ? 'thread is waiting: woken' : `thread is ${status ?? 'gone'}`;
          process.stdout.write(`signal ${signal.id} ${JSON.stringify(signal.name)} queued for thread ${threadId} (${woken})\n`);
        }
      } finally {
        await engine.close();
      }
    });
}
