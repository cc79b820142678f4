/**
 * @module cli/engine-url
 * Picks an engine from what the user typed: a SQLite file (`./cairn.db`,
 * `sqlite:./cairn.db`, `file:./cairn.db`) or a PostgreSQL URL
 * (`postgres://user@host/db`, with `#schema` to name the schema of cairn's tables),
 * opened for what the command does with it:
 *
 * - `read`: inspection. Opened read-only: nothing is created, migrated or written,
 *   and a path or schema without a cairn database is DatabaseNotFoundError.
 * - `write`: changes to an existing database (delete-thread, gc). A missing one (or a
 *   file without cairn's tables) is DatabaseNotFoundError, as for `read`; an older one
 *   is migrated.
 * - `create`: the target of import and copy, `migrate --apply`, a worker's
 *   PostgreSQL database: created if missing.
 *
 * With keys (`--keys <key file>`, else `CAIRN_KEY_FILE`, else `CAIRN_MASTER_KEY` for an
 * environment master key) the engine is opened encrypted (`cairn/crypto`), requiring
 * encryption. Without them, a database that holds data keys is refused at once with
 * KeysRequiredError, rather than failing row by row.
 */
import type { Engine } from '../contracts/engine.js';
import { CLI_POSTGRES_POOL_MAX } from '../defaults.js';
import { DatabaseOutdatedError, InvalidOptionError, KeysRequiredError, PlaintextRowError } from '../errors.js';
import { encrypted } from '../crypto/encrypted.js';
import { envKey, keyFile, type KeyProvider } from '../crypto/key-provider.js';
import { DATA_KEYS_NS } from '../crypto/keyring.js';
import { sqlite } from '../engines/sqlite/index.js';
// Loads no driver: the engine loads pg on its first query.
import { postgres } from '../engines/postgres/index.js';

/** What a command does with the database it opens (see the module documentation). */
export type EngineAccess = 'read' | 'write' | 'create';

/** What `--db` (and copy's `--to`) takes, for the help of every command. */
export const ENGINE_URL_HELP = 'a SQLite file path (./cairn.db), a sqlite: or file: URL, or postgres://user@host/db#schema';

/** The `--db` flag of the commands that open one database, as `command.option(...)` arguments. */
export const DB_OPTION = ['--db <url>', `the cairn database: ${ENGINE_URL_HELP}`, './cairn.db'] as const;

/** The root program's `--keys` flag, as `program.option(...)` arguments. */
export const KEYS_OPTION = ['--keys <file>', 'the key file of an encrypted database (else CAIRN_KEY_FILE; CAIRN_MASTER_KEY for an environment master key)'] as const;

let keyFilePath: string | undefined;

/** Sets the key file `--keys` named, for every engine the command opens. */
export function useKeyFile(path: string | undefined): void {
  keyFilePath = path;
}

/** The key file the command line names (`--keys`, else `CAIRN_KEY_FILE`); undefined for none (no keys, or `CAIRN_MASTER_KEY`). */
export function cliKeyFile(): string | undefined {
  return (keyFilePath ?? process.env.CAIRN_KEY_FILE) || undefined;
}

/** The key provider the command line names: `--keys`, `CAIRN_KEY_FILE`, `CAIRN_MASTER_KEY`; undefined for none. */
export function cliKeyProvider(): KeyProvider | undefined {
  const path = cliKeyFile();
  if (path) return keyFile(path);
  if (process.env.CAIRN_MASTER_KEY) return envKey('CAIRN_MASTER_KEY');
  return undefined;
}

/** How an engine is opened: its keys, and how a PostgreSQL engine's pool is made (ignored for SQLite). */
export interface OpenEngineOptions {
  /**
   * The keys to open it with, instead of the command line's (`--keys`, the environment):
   * `copy --to-keys` seals its target with keys of its own. `null`: plaintext.
   */
  keys?: KeyProvider | null;
  /** False: plaintext rows are read too (a copy's source, which may be half encrypted). Default true. */
  requireEncryption?: boolean;
  /** Pool size. Default 4. */
  maxConnections?: number;
  /** `application_name` of the connections. Default `cairn`. */
  applicationName?: string;
}

export function isPostgresUrl(target: string): boolean {
  return /^postgres(ql)?:\/\//i.test(target);
}

/** A PostgreSQL target split into its connection string and schema (`public` without `#schema`). */
export function postgresTarget(target: string): { url: string; schema: string } {
  const hash = target.indexOf('#');
  return { url: hash >= 0 ? target.slice(0, hash) : target, schema: hash >= 0 ? target.slice(hash + 1) : 'public' };
}

/**
 * The SQLite file a target names. An empty one (an unset `--db "$DB"`) is refused: the
 * driver opens a temporary database for '', which would take an import and vanish.
 */
export function sqlitePath(target: string): string {
  if (target.trim() === '') throw new InvalidOptionError(`no database is named (the name is empty): pass ${ENGINE_URL_HELP}.`);
  const match = /^([a-z][a-z0-9+.-]*):(.*)$/i.exec(target);
  // One letter before the colon is a Windows drive, not a scheme.
  if (!match || match[1]!.length === 1) return target;
  const scheme = match[1]!.toLowerCase();
  if (scheme !== 'sqlite' && scheme !== 'file') {
    throw new InvalidOptionError(`unsupported engine "${scheme}:". Use a SQLite file path (./cairn.db) or a PostgreSQL URL (postgres://user@host/db#schema).`);
  }
  return match[2]!;
}

/**
 * Refuses, opening and creating nothing, a target {@link openEngine} would refuse for how
 * it is written: an empty one, an unsupported scheme, a PostgreSQL URL that does not
 * parse or a schema that is not a plain identifier (bad usage, exit 2). For a command
 * that reads another database first (import-langgraph's source), so that a bad target
 * is refused before that one is opened.
 */
export async function checkEngineTarget(target: string): Promise<void> {
  if (!isPostgresUrl(target)) {
    sqlitePath(target);
    return;
  }
  const { url, schema } = postgresTarget(target);
  // The engine checks its URL and schema when it is made, and connects only on its first query.
  await postgres(url, { schema, max: 1 }).close();
}

/**
 * Opens the engine `target` names, for `access`. For `write`, a database that does
 * not exist is refused before anything is created (a PostgreSQL target is probed
 * read-only first).
 */
export async function openEngine(target: string, access: EngineAccess, options: OpenEngineOptions = {}): Promise<Engine> {
  const engine = await openPlainEngine(target, access, options);
  const keys = options.keys === undefined ? cliKeyProvider() : options.keys;
  if (keys) {
    const requireEncryption = options.requireEncryption ?? true;
    if (requireEncryption) await refusePlaintext(engine, target);
    return encrypted(engine, { keys, require: requireEncryption });
  }
  // One small read: a database with data keys holds sealed rows this command could not
  // open. Whatever else the read meets (no database yet, an older one) is left to the
  // command, which meets it where it did before.
  const keyRows = await engine.store.list(DATA_KEYS_NS, { limit: 1 }).catch(() => []);
  if (keyRows.length > 0) {
    await engine.close().catch(() => undefined);
    throw new KeysRequiredError(`${target} is encrypted (it holds data keys): pass --keys <key file>, or set CAIRN_KEY_FILE or CAIRN_MASTER_KEY.`);
  }
  return engine;
}

/**
 * Keys given for a database written in the clear (threads, and no data keys): every
 * read would fail on its first row with PlaintextRowError naming some store item. Said
 * once, at the open, with what to do. Whatever else the reads meet (no database yet) is
 * left to the command, as in openEngine.
 */
async function refusePlaintext(engine: Engine, target: string): Promise<void> {
  const [keyRows, threads] = await Promise.all([engine.store.list(DATA_KEYS_NS, { limit: 1 }).catch(() => null), engine.checkpointer.listThreads({ limit: 1 }).catch(() => null)]);
  if (keyRows === null || keyRows.length > 0 || threads === null || threads.length === 0) return;
  await engine.close().catch(() => undefined);
  throw new PlaintextRowError(
    `${target} is not encrypted (it holds threads and no data keys), and with keys (--keys, CAIRN_KEY_FILE or CAIRN_MASTER_KEY) every row must be sealed: drop the keys to read it, or seal a copy of it with \`cairn copy --all --db ${target} --to <new database> --to-keys <key file>\`.`,
  );
}

async function openPlainEngine(target: string, access: EngineAccess, options: OpenEngineOptions): Promise<Engine> {
  const readOnly = access === 'read';
  if (isPostgresUrl(target)) {
    const { url, schema } = postgresTarget(target);
    if (access === 'write') await mustExist(postgres(url, { schema, max: 1, readOnly: true }));
    return postgres(url, { schema, max: options.maxConnections ?? CLI_POSTGRES_POOL_MAX, readOnly, ...(options.applicationName ? { applicationName: options.applicationName } : {}) });
  }
  const path = sqlitePath(target);
  // A file that is there but holds no cairn tables (an empty file, another program's
  // SQLite database) is no cairn database either: the writable open would create
  // cairn's tables in it.
  if (access === 'write') await mustExist(sqlite(path, { readOnly: true }));
  return sqlite(path, { readOnly });
}

/**
 * Refuses a database that is not there, through `probe`, an engine opened read-only on
 * it (DatabaseNotFoundError), before a writable open would create one. An older
 * database is let through: the writable open upgrades it.
 */
async function mustExist(probe: Engine): Promise<void> {
  try {
    await probe.checkpointer.listThreads({ limit: 1 });
  } catch (error) {
    if (!DatabaseOutdatedError.is(error)) throw error;
  } finally {
    await probe.close();
  }
}
