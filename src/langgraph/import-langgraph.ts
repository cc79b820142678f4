/**
 * @module langgraph/import-langgraph
 * Brings an existing LangGraph checkpoint database over: every thread of a
 * SqliteSaver file or a PostgresSaver schema becomes a cairn thread, with its whole
 * history (every checkpoint of every namespace, forks as branches) and the pending
 * writes of each checkpoint. The source is read through LangGraph's own saver, so
 * whatever it can read (any checkpoint format, delta channels) comes over as it reads
 * it; it is never written to. `cairn import-langgraph` runs this.
 */
import { existsSync } from 'node:fs';
import type { BaseCheckpointSaver, ChannelVersions, CheckpointTuple, PendingWrite } from '@langchain/langgraph-checkpoint';
import { DriverMissingError, InvalidOptionError, LangGraphSourceNotFoundError, ThreadNotFoundError } from '../errors.js';
import type { CairnSaver } from './cairn-saver.js';

/** Where the importer's errors say they come from: `[cairn] [langgraph] …`. */
const LANGGRAPH = { engine: 'langgraph' } as const;

/** A LangGraph checkpoint database opened for reading: its saver and the ids of its threads. */
export interface LangGraphSource {
  /** `sqlite` or `postgres`. */
  readonly kind: string;
  readonly saver: BaseCheckpointSaver;
  /** Every thread id in the database, ascending. */
  threadIds(): Promise<string[]>;
  close(): Promise<void>;
}

/** What {@link importLangGraph} did. */
export interface LangGraphImportReport {
  /** Threads imported. */
  threads: number;
  checkpoints: number;
  /** Pending writes carried over (one per LangGraph write). */
  writes: number;
  /** Threads left out because the target already has a thread with that id. */
  skipped: string[];
}

/** Options of {@link importLangGraph}. */
export interface ImportLangGraphOptions {
  /** Only these threads (default: every thread of the source). */
  threads?: string[];
  /** Called after each thread, with how many are done of how many. */
  onThread?: (done: number, total: number, threadId: string) => void;
}

/**
 * Opens a LangGraph checkpoint database: a SqliteSaver file, or a PostgresSaver
 * database `postgres://user@host/db` (`#schema` for a schema other than `public`).
 * Needs `@langchain/langgraph-checkpoint-sqlite` or `-postgres` (DriverMissingError
 * says which to install); a missing file or one without LangGraph's tables is
 * LangGraphSourceNotFoundError, and nothing is created.
 *
 * @example
 * ```ts
 * const source = await openLangGraphSource('./langgraph.db');
 * const report = await importLangGraph(source, new CairnSaver({ engine: sqlite('./cairn.db') }));
 * await source.close();
 * ```
 */
export async function openLangGraphSource(from: string): Promise<LangGraphSource> {
  const source = langGraphSourceOf(from);
  return source.kind === 'postgres' ? openPostgres(from, source.url, source.schema) : openSqlite(source.path);
}

/** Where a LangGraph source is, as {@link openLangGraphSource} reads `from`. */
export type LangGraphLocation = { kind: 'sqlite'; path: string } | { kind: 'postgres'; url: string; schema: string };

/**
 * Where `from` points, checked and opening nothing: a `from` no LangGraph database can
 * be at (empty, a scheme other than `postgres:`, `sqlite:` and `file:`, a schema that is
 * not a plain identifier) is InvalidOptionError, so that a command refuses it before it
 * opens or creates anything.
 */
export function langGraphSourceOf(from: string): LangGraphLocation {
  if (typeof from !== 'string' || from.trim() === '') throw new InvalidOptionError('name the LangGraph database: a SqliteSaver file, or postgres://user@host/db (#schema for a schema other than public).', { place: LANGGRAPH });
  if (/^postgres(ql)?:\/\//i.test(from)) {
    const hash = from.indexOf('#');
    const schema = hash >= 0 ? from.slice(hash + 1) : 'public';
    if (!/^[A-Za-z_][A-Za-z0-9_$]*$/.test(schema)) throw new InvalidOptionError(`"${schema}" is not a schema name.`, { place: LANGGRAPH });
    return { kind: 'postgres', url: hash >= 0 ? from.slice(0, hash) : from, schema };
  }
  const match = /^([a-z][a-z0-9+.-]*):(.*)$/is.exec(from);
  // One letter before the colon is a Windows drive, not a scheme.
  if (!match || match[1]!.length === 1) return { kind: 'sqlite', path: from };
  const scheme = match[1]!.toLowerCase();
  if (scheme !== 'sqlite' && scheme !== 'file') {
    throw new InvalidOptionError(`a LangGraph database is not read from "${scheme}:": name a SqliteSaver file (./langgraph.db, sqlite: or file:) or a PostgresSaver database (postgres://user@host/db#schema).`, { place: LANGGRAPH });
  }
  if (match[2]!.trim() === '') throw new InvalidOptionError(`"${from}" names no file: name the SqliteSaver file after "${match[1]}:".`, { place: LANGGRAPH });
  return { kind: 'sqlite', path: match[2]! };
}

/**
 * Refuses `threads` (the ones an import is asked for) when the source lacks one of them
 * (ThreadNotFoundError), before anything is imported: an import of a mistyped id would
 * report a thread imported with no checkpoints.
 */
export async function checkSourceThreads(source: LangGraphSource, threads: readonly string[]): Promise<void> {
  if (threads.length === 0) return;
  const have = new Set(await source.threadIds());
  const missing = threads.find((id) => !have.has(id));
  if (missing !== undefined) throw new ThreadNotFoundError(missing, LANGGRAPH);
}

async function load<T>(name: string): Promise<T> {
  try {
    return (await import(name)) as T;
  } catch (error) {
    throw new DriverMissingError(`reading a LangGraph database needs ${name}: npm install ${name}.`, { cause: error, place: LANGGRAPH });
  }
}

async function openSqlite(path: string): Promise<LangGraphSource> {
  if (!existsSync(path)) throw new LangGraphSourceNotFoundError(path, 'there is no such file.');
  const { SqliteSaver } = await load<typeof import('@langchain/langgraph-checkpoint-sqlite')>('@langchain/langgraph-checkpoint-sqlite');
  let saver: InstanceType<typeof SqliteSaver> | undefined;
  let table: unknown;
  try {
    saver = SqliteSaver.fromConnString(path);
    table = saver.db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'checkpoints'").get();
  } catch (error) {
    // A file that is not a SQLite database (SQLITE_NOTADB), or one that does not open (a folder).
    saver?.db.close();
    throw new LangGraphSourceNotFoundError(path, `the file is not a SQLite database (${(error as Error).message}).`);
  }
  const db = saver.db;
  if (!table) {
    db.close();
    throw new LangGraphSourceNotFoundError(path, 'the file has no checkpoints table (SqliteSaver).');
  }
  try {
    readOnlySetup(saver);
  } catch (error) {
    // A file with a checkpoints table and no writes table (the statements setup prepares read both).
    db.close();
    throw new LangGraphSourceNotFoundError(path, `the file does not have SqliteSaver's tables (${(error as Error).message}).`);
  }
  return {
    kind: 'sqlite',
    saver,
    threadIds: async () => (db.prepare('SELECT DISTINCT thread_id FROM checkpoints ORDER BY thread_id').all() as { thread_id: string }[]).map((r) => String(r.thread_id)),
    close: async () => {
      db.close();
    },
  };
}

/**
 * Runs SqliteSaver's `setup()` (which prepares the statements it reads with) without what
 * it would change in the source: it switches the file to WAL and creates the tables it
 * lacks. The import only reads, so the file is left in its own journal mode and with its
 * own tables.
 */
function readOnlySetup(sqliteSaver: object): void {
  // setup() is protected in SqliteSaver's types: it is called as LangGraph's own methods call it.
  const saver = sqliteSaver as { db: { pragma: unknown; exec: unknown }; setup(): void };
  const db = saver.db;
  db.pragma = () => [];
  db.exec = () => db;
  try {
    saver.setup();
  } finally {
    // The driver's own methods (on its prototype) again.
    delete (db as { pragma?: unknown }).pragma;
    delete (db as { exec?: unknown }).exec;
  }
}

async function openPostgres(from: string, url: string, schema: string): Promise<LangGraphSource> {
  const { PostgresSaver } = await load<typeof import('@langchain/langgraph-checkpoint-postgres')>('@langchain/langgraph-checkpoint-postgres');
  const pg = (await load<{ default: typeof import('pg') }>('pg')).default;
  const pool = new pg.Pool({ connectionString: url, max: 2 });
  const found = await pool.query<{ n: number }>("SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'checkpoints'", [schema]);
  if (!found.rows[0]?.n) {
    await pool.end();
    throw new LangGraphSourceNotFoundError(from.replace(/:[^:@/]*@/, ':***@'), `schema "${schema}" has no checkpoints table (PostgresSaver).`);
  }
  // No setup(): that would migrate the source. The tables are there; the saver only reads.
  const saver = new PostgresSaver(pool, undefined, { schema });
  return {
    kind: 'postgres',
    saver,
    threadIds: async () => (await pool.query<{ thread_id: string }>(`SELECT DISTINCT thread_id FROM "${schema}".checkpoints ORDER BY thread_id`)).rows.map((r) => String(r.thread_id)),
    close: async () => {
      await pool.end();
    },
  };
}

/**
 * Copies every thread of `source` (or `options.threads`) into `target`, checkpoint by
 * checkpoint, parents before children (each namespace in checkpoint-id order), each
 * with its pending writes: the threads are cairn threads from then on, their forks
 * branches. A thread the target already has is skipped and reported; one of
 * `options.threads` the source does not have is ThreadNotFoundError, nothing imported.
 */
export async function importLangGraph(source: LangGraphSource, target: CairnSaver, options: ImportLangGraphOptions = {}): Promise<LangGraphImportReport> {
  if (options.threads) await checkSourceThreads(source, options.threads);
  // A thread named twice is imported once (the second would be reported as one the target already had).
  const ids = options.threads ? [...new Set(options.threads)] : await source.threadIds();
  const report: LangGraphImportReport = { threads: 0, checkpoints: 0, writes: 0, skipped: [] };
  let done = 0;
  for (const threadId of ids) {
    if (await target.engine.checkpointer.getThread(threadId)) report.skipped.push(threadId);
    else {
      const counts = await importThread(source.saver, target, threadId);
      report.threads++;
      report.checkpoints += counts.checkpoints;
      report.writes += counts.writes;
    }
    options.onThread?.(++done, ids.length, threadId);
  }
  return report;
}

async function importThread(source: BaseCheckpointSaver, target: CairnSaver, threadId: string): Promise<{ checkpoints: number; writes: number }> {
  // First the ids, newest first as LangGraph lists them, keeping nothing else of each
  // tuple: a long thread's states are read again one at a time below.
  const refs: { ns: string; id: string }[] = [];
  for await (const tuple of source.list({ configurable: { thread_id: threadId } })) {
    refs.push({ ns: (tuple.config.configurable?.checkpoint_ns as string | undefined) ?? '', id: tuple.checkpoint.id });
  }
  refs.sort((a, b) => (a.ns !== b.ns ? (a.ns < b.ns ? -1 : 1) : a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const versions = new Map<string, ChannelVersions>();
  let writes = 0;
  for (const ref of refs) {
    const tuple = await source.getTuple({ configurable: { thread_id: threadId, checkpoint_ns: ref.ns, checkpoint_id: ref.id } });
    if (!tuple) continue;
    const parentId = tuple.parentConfig?.configurable?.checkpoint_id as string | undefined;
    const parentVersions = parentId ? versions.get(`${ref.ns}\u0000${parentId}`) : undefined;
    const config = { configurable: { thread_id: threadId, checkpoint_ns: ref.ns, ...(parentId ? { checkpoint_id: parentId } : {}) } };
    const stored = await target.put(config, tuple.checkpoint, tuple.metadata ?? { source: 'loop', step: -1, parents: {} }, changedVersions(tuple, parentVersions));
    versions.set(`${ref.ns}\u0000${ref.id}`, { ...tuple.checkpoint.channel_versions });
    for (const [taskId, group] of groupByTask(tuple.pendingWrites ?? [])) {
      await target.putWrites(stored, group, taskId);
      writes += group.length;
    }
  }
  return { checkpoints: refs.length, writes };
}

/** The channels whose version differs from the parent's: what this checkpoint wrote (every channel of a root). */
function changedVersions(tuple: CheckpointTuple, parent: ChannelVersions | undefined): ChannelVersions {
  const changed: ChannelVersions = {};
  for (const [channel, version] of Object.entries(tuple.checkpoint.channel_versions)) {
    if (!parent || parent[channel] !== version) changed[channel] = version;
  }
  return changed;
}

/** A checkpoint's writes by task, in the order LangGraph returned them. */
function groupByTask(writes: NonNullable<CheckpointTuple['pendingWrites']>): Map<string, PendingWrite[]> {
  const groups = new Map<string, PendingWrite[]>();
  for (const [taskId, channel, value] of writes) {
    let group = groups.get(taskId);
    if (!group) groups.set(taskId, (group = []));
    group.push([channel, value]);
  }
  return groups;
}
