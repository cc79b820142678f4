/**
 * `cairn import-langgraph`: a LangGraph checkpoint database written by LangGraph's own
 * SqliteSaver (through the BUILT CLI) and PostgresSaver (through the library function)
 * becomes cairn threads: the same history as LangGraph read it (values, next nodes,
 * metadata, forks), pending interrupts that resume through CairnSaver, chains that
 * verify. A second import skips what is there; a missing source creates nothing.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
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

  it('a missing source is an error, and creates nothing', () => {
    const dir = tempDir('cairn-lg-import-');
    const run = spawnSync(process.execPath, [CLI, 'import-langgraph', '--from', join(dir, 'nope.db'), '--db', join(dir, 'cairn.db')], { encoding: 'utf8' });
    expect(run.status).toBe(1);
    expect(run.stderr).toMatch(/\[cairn\] \[langgraph\] no LangGraph checkpoint database at .*nope\.db: there is no such file/);
    expect(existsSync(join(dir, 'nope.db'))).toBe(false);
    expect(existsSync(join(dir, 'cairn.db'))).toBe(false);
  });
});
