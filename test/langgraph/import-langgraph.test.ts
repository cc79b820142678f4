/**
 * `cairn import-langgraph`: a LangGraph checkpoint database written by LangGraph's own
 * SqliteSaver (through the BUILT CLI) and PostgresSaver (through the library function)
 * becomes cairn threads: the same history as LangGraph read it (values, next nodes,
 * metadata, forks), pending interrupts that resume through CairnSaver, chains that
 * verify. A second import skips what is there; a missing source creates nothing, and
 * a refused import (a bad flag, a --db that is the source, a --thread the source lacks)
 * opens no database it should not and creates none.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { HumanMessage } from '@langchain/core/messages';
import { Annotation, Command, END, START, StateGraph, interrupt } from '@langchain/langgraph';
import type { BaseCheckpointSaver } from '@langchain/langgraph-checkpoint';
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { memory } from '../../src/engines/memory/index.js';
import { verifyThread } from '../../src/inspect/index.js';
import { CairnSaver } from '../../src/langgraph/index.js';
import { importLangGraph, openLangGraphSource } from '../../src/langgraph/import-langgraph.js';
import { ThreadNotFoundError } from '../../src/errors.js';
import { cairn } from '../cli/run-cli.js';
import { PG_URL } from '../helpers/postgres.js';
import { tempDir } from '../helpers/temp-dirs.js';

const CLI = new URL('../../dist/cli/main.js', import.meta.url).pathname;

const State = Annotation.Root({
  request: Annotation<string>(),
  decision: Annotation<string | undefined>(),
  log: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
  messages: Annotation<HumanMessage[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
});

function approval(checkpointer: BaseCheckpointSaver) {
  return new StateGraph(State)
    .addNode('draft', async (s) => ({ log: [`draft ${s.request}`], messages: [new HumanMessage(`about ${s.request}`)] }))
    .addNode('approve', async (s) => {
      const decision = interrupt<string, string>(`approve ${s.request}?`);
      return { decision, log: [`decided ${decision}`] };
    })
    .addEdge(START, 'draft')
    .addEdge('draft', 'approve')
    .addEdge('approve', END)
    .compile({ checkpointer });
}

/** Three threads: one finished, one paused at an interrupt, one forked with updateState. */
async function writeThreads(checkpointer: BaseCheckpointSaver): Promise<void> {
  const app = approval(checkpointer);
  await app.invoke({ request: 'refund' }, { configurable: { thread_id: 'done' } });
  await app.invoke(new Command({ resume: 'yes' }), { configurable: { thread_id: 'done' } });
  await app.invoke({ request: 'upgrade' }, { configurable: { thread_id: 'paused' } });
  const forked = { configurable: { thread_id: 'forked' } };
  await app.invoke({ request: 'a' }, forked);
  await app.invoke(new Command({ resume: 'no' }), forked);
  const history = [];
  for await (const s of app.getStateHistory(forked)) history.push(s);
  await app.updateState(history.find((s) => s.next.includes('approve'))!.config, { request: 'b' });
}

/** A thread's history as LangGraph shows it, without ids and times (which the import keeps, but are compared apart). */
async function historyOf(checkpointer: BaseCheckpointSaver, thread: string) {
  const out = [];
  for await (const s of approval(checkpointer).getStateHistory({ configurable: { thread_id: thread } })) {
    out.push({ id: s.config.configurable?.checkpoint_id, parent: s.parentConfig?.configurable?.checkpoint_id, values: s.values, next: s.next, metadata: s.metadata, tasks: s.tasks.map((t) => ({ name: t.name, interrupts: t.interrupts.map((i) => i.value) })) });
  }
  return out;
}

async function expectSameThreads(source: BaseCheckpointSaver, target: CairnSaver): Promise<void> {
  for (const thread of ['done', 'paused', 'forked']) {
    expect(await historyOf(target, thread)).toEqual(await historyOf(source, thread));
    expect((await verifyThread(target.engine, thread)).ok).toBe(true);
  }
  // The fork is a branch of the position tree.
  const positions = await target.engine.checkpointer.listPositions('forked', '', { limit: 100 });
  expect(positions.some((p) => p.parent !== null && p.parent !== p.seq - 1)).toBe(true);
  // The paused thread's interrupt is answered through CairnSaver.
  const resumed = await approval(target).invoke(new Command({ resume: 'later' }), { configurable: { thread_id: 'paused' } });
  expect(resumed.log).toEqual(['draft upgrade', 'decided later']);
  expect(resumed.messages[0]).toBeInstanceOf(HumanMessage);
}

describe('cairn import-langgraph', () => {
  it('imports a SqliteSaver file through the CLI, then skips what it already has', async () => {
    const dir = tempDir('cairn-lg-import-');
    const from = join(dir, 'langgraph.db');
    const source = SqliteSaver.fromConnString(from);
    await writeThreads(source);
    const db = join(dir, 'cairn.db');
    const out = execFileSync(process.execPath, [CLI, 'import-langgraph', '--from', from, '--db', db, '--json'], { encoding: 'utf8' });
    const report = JSON.parse(out) as { source: string; threads: number; checkpoints: number; writes: number; skipped: string[] };
    expect(report).toMatchObject({ source: 'sqlite', threads: 3, skipped: [] });
    expect(report.checkpoints).toBeGreaterThan(10);
    expect(report.writes).toBeGreaterThan(0);
    const engine = sqlite(db);
    try {
      await expectSameThreads(source, new CairnSaver({ engine }));
    } finally {
      await engine.close();
    }
    const again = execFileSync(process.execPath, [CLI, 'import-langgraph', '--from', from, '--db', db], { encoding: 'utf8' });
    expect(again).toMatch(/^imported 0 threads, 0 checkpoints, 0 pending writes from LangGraph \(sqlite\); skipped 3 threads the target already has \(done, forked, paused\)/);
    source.db.close();
  });

  it('imports a PostgresSaver schema', async () => {
    const schema = `lg_import_${process.pid}_${Date.now()}`;
    const pool = new pg.Pool({ connectionString: PG_URL, max: 2 });
    try {
      const saver = new PostgresSaver(pool, undefined, { schema });
      await saver.setup();
      await writeThreads(saver);
      const source = await openLangGraphSource(`${PG_URL}#${schema}`);
      const target = new CairnSaver({ engine: memory() });
      let progressed = 0;
      const report = await importLangGraph(source, target, { onThread: () => progressed++ });
      await source.close();
      expect(report).toMatchObject({ threads: 3, skipped: [] });
      expect(progressed).toBe(3);
      await expectSameThreads(saver, target);
      await target.engine.close();
    } finally {
      await pool.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await pool.end();
    }
  });

  it('the source is only read: a SqliteSaver file keeps its journal mode and its tables, byte for byte', async () => {
    const dir = tempDir('cairn-lg-import-');
    const from = join(dir, 'langgraph.db');
    const source = SqliteSaver.fromConnString(from);
    await writeThreads(source);
    // A file in rollback-journal mode (copied, or vacuumed into one), and one without a writes table.
    source.db.pragma('journal_mode=DELETE');
    source.db.close();
    const bytes = readFileSync(from);
    const run = await cairn(['import-langgraph', '--from', from, '--db', join(dir, 'cairn.db'), '--json']);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ source: 'sqlite', threads: 3 });
    expect(readFileSync(from).equals(bytes), 'the source file changed').toBe(true);
    expect(readdirSync(dir).filter((name) => name.startsWith('langgraph.db'))).toEqual(['langgraph.db']);

    const partial = join(dir, 'partial.db');
    const only = SqliteSaver.fromConnString(partial);
    await writeThreads(only);
    only.db.exec('DROP TABLE writes');
    only.db.pragma('journal_mode=DELETE');
    only.db.close();
    const partialBytes = readFileSync(partial);
    const refused = await cairn(['import-langgraph', '--from', partial, '--db', join(dir, 'other.db')]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/no LangGraph checkpoint database at .*partial\.db: the file does not have SqliteSaver's tables \(no such table: writes\)/);
    expect(readFileSync(partial).equals(partialBytes), 'the partial source changed').toBe(true);
    expect(existsSync(join(dir, 'other.db'))).toBe(false);
  });

  it('a missing source is an error, and creates nothing', () => {
    const dir = tempDir('cairn-lg-import-');
    const run = spawnSync(process.execPath, [CLI, 'import-langgraph', '--from', join(dir, 'nope.db'), '--db', join(dir, 'cairn.db')], { encoding: 'utf8' });
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/\[cairn\] \[langgraph\] no LangGraph checkpoint database at .*nope\.db: there is no such file/);
    expect(existsSync(join(dir, 'nope.db'))).toBe(false);
    expect(existsSync(join(dir, 'cairn.db'))).toBe(false);
  });
});

describe('a refused cairn import-langgraph touches nothing', () => {
  /** A PostgreSQL URL nothing listens at: a command that connects to it fails with a connection error, not with usage. */
  const NOWHERE = 'postgres://nobody@127.0.0.1:1/nowhere';

  /** A SqliteSaver file with one thread `t`, in a folder of its own. */
  async function langGraphFile(): Promise<{ dir: string; from: string }> {
    const dir = tempDir('cairn-lg-refused-');
    const from = join(dir, 'langgraph.db');
    const saver = SqliteSaver.fromConnString(from);
    await approval(saver).invoke({ request: 'refund' }, { configurable: { thread_id: 't' } });
    saver.db.close();
    return { dir, from };
  }

  /** Runs `cairn import-langgraph <args>`; expects `code`, one line of stderr matching `message`, and the folder as it was (the source's bytes too). */
  async function refused(dir: string, args: string[], code: number, message: string | RegExp, options: { keys?: string } = {}) {
    const before = new Map(readdirSync(dir).map((name) => [name, readFileSync(join(dir, name))]));
    const run = await cairn([...(options.keys ? ['--keys', options.keys] : []), 'import-langgraph', ...args]);
    expect(run.code, run.stderr).toBe(code);
    expect(run.stdout).toBe('');
    expect(run.stderr.trim().split('\n'), run.stderr).toHaveLength(1);
    if (typeof message === 'string') expect(run.stderr.trim()).toBe(message);
    else expect(run.stderr).toMatch(message);
    expect(readdirSync(dir).sort(), args.join(' ')).toEqual([...before.keys()].sort());
    for (const [name, bytes] of before) expect(readFileSync(join(dir, name)).equals(bytes), `${name} changed`).toBe(true);
  }

  it('a --db that is the source itself is bad usage: no cairn tables written into the LangGraph file', async () => {
    const { dir, from } = await langGraphFile();
    const message = /^\[cairn\] --db .* is the LangGraph database --from reads: cairn's tables would be written into it/;
    await refused(dir, ['--from', from, '--db', from], 2, message);
    await refused(dir, ['--from', from, '--db', `sqlite:${from}`], 2, message);
    await refused(dir, ['--from', `file:${from}`, '--db', join(dir, '.', 'langgraph.db')], 2, message);
  });

  it('a bad --db is bad usage before the source is opened (an unreachable PostgreSQL source is not even connected to)', async () => {
    const { dir } = await langGraphFile();
    await refused(dir, ['--from', NOWHERE, '--db', ''], 2, /^\[cairn\] no database is named \(the name is empty\)/);
    await refused(dir, ['--from', NOWHERE, '--db', 'mysql://host/db'], 2, /^\[cairn\] unsupported engine "mysql:"/);
    await refused(dir, ['--from', NOWHERE, '--db', `${PG_URL}#bad-schema`], 2, /^\[cairn\] \[postgres\] schema name "bad-schema" is not a plain identifier/);
    await refused(dir, ['--from', NOWHERE, '--db', join(dir, 'cairn.db'), '--thread', ''], 2, '[cairn] thread id must be a non-empty string, got "".');
  });

  it('a bad --from is bad usage, and creates no target', async () => {
    const { dir } = await langGraphFile();
    const db = join(dir, 'cairn.db');
    await refused(dir, ['--from', '', '--db', db], 2, /^\[cairn\] \[langgraph\] name the LangGraph database/);
    await refused(dir, ['--from', 'mysql://host/db', '--db', db], 2, /^\[cairn\] \[langgraph\] a LangGraph database is not read from "mysql:"/);
    await refused(dir, ['--from', 'sqlite:', '--db', db], 2, /^\[cairn\] \[langgraph\] "sqlite:" names no file/);
    await refused(dir, ['--from', `${NOWHERE}#bad-schema`, '--db', db], 2, '[cairn] [langgraph] "bad-schema" is not a schema name.');
  });

  it('a key file the target could not be sealed with is bad usage before either database is opened', async () => {
    const { dir, from } = await langGraphFile();
    const keys = join(dir, 'nodir', 'k.json');
    await refused(dir, ['--from', from, '--db', join(dir, 'cairn.db')], 2, `[cairn] the key file ${keys} cannot be written (ENOENT).`, { keys });
    await refused(dir, ['--from', NOWHERE, '--db', join(dir, 'cairn.db')], 2, `[cairn] the key file ${keys} cannot be written (ENOENT).`, { keys });
  });

  it('a --thread given twice is imported once, not reported as one the target already had', async () => {
    const { dir, from } = await langGraphFile();
    const run = await cairn(['import-langgraph', '--from', from, '--db', join(dir, 'cairn.db'), '--thread', 't', '--thread', 't']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toMatch(/^imported 1 thread, \d+ checkpoints, \d+ pending writes? from LangGraph \(sqlite\)\n$/);
  });

  it('a --thread the source does not have is ERR_THREAD_NOT_FOUND, and creates no target', async () => {
    const { dir, from } = await langGraphFile();
    await refused(dir, ['--from', from, '--db', join(dir, 'cairn.db'), '--thread', 't', '--thread', 'nope'], 1, '[cairn] [langgraph] thread nope: no such thread.');
    await refused(dir, ['--from', from, '--db', join(dir, 'cairn.db'), '--thread', 'nope', '--json'], 1, JSON.stringify({ error: { code: 'ERR_THREAD_NOT_FOUND', message: '[cairn] [langgraph] thread nope: no such thread.' } }));
    // The library refuses it too, importing nothing (it reported the thread imported, with no checkpoints).
    const source = await openLangGraphSource(from);
    const target = new CairnSaver({ engine: memory() });
    try {
      await expect(importLangGraph(source, target, { threads: ['t', 'nope'] })).rejects.toThrow(ThreadNotFoundError);
      expect(await target.engine.checkpointer.listThreads()).toEqual([]);
    } finally {
      await source.close();
      await target.engine.close();
    }
  });
});
