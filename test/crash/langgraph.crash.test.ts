/**
 * A LangGraph.js run on CairnSaver survives SIGKILL: a real process running a
 * StateGraph on a SQLite file is killed inside a node, just before and just after a
 * checkpoint's commit, and after a task's pending writes; a new process goes on from
 * the latest checkpoint. Nodes whose checkpoint landed are not run again, the final
 * messages equal a crash-free run's, and the thread verifies. In a parallel superstep,
 * a task that finished before the process died (its writes handed over, the
 * superstep's checkpoint not put yet) is not run again. The processes run the BUILT
 * package (dist/).
 */
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { sqlite } from '../../dist/engines/sqlite/index.js';
import { verifyThread } from '../../dist/inspect/index.js';
import { runFixture, type FixtureRun } from './crash-setup.js';
import { tempDir } from '../helpers/temp-dirs.js';

const FIXTURE = fileURLToPath(new URL('../fixtures/langgraph-process.mjs', import.meta.url));
const PARALLEL = fileURLToPath(new URL('../fixtures/langgraph-parallel-process.mjs', import.meta.url));
const THREAD = 'report_1';
const NODES = ['plan', 'research', 'write', 'review'];

const computed = (runs: FixtureRun[]) => runs.flatMap((r) => r.lines.filter((l) => l.type === 'computed').map((l) => l.node as string));
const result = (run: FixtureRun) => run.lines.find((l) => l.type === 'result') as { messages: string[]; next: string[] } | undefined;

let reference: string[];
beforeAll(async () => {
  const db = join(tempDir('cairn-crash-langgraph-'), 'cairn.db');
  const run = await runFixture(FIXTURE, [db, THREAD]);
  if (!result(run)) throw new Error(`reference run failed: ${run.stderr}`);
  reference = result(run)!.messages;
  expect(computed([run])).toEqual(NODES);
});

// Commits: #1 the input checkpoint, #2 after __start__, #3 after plan, #4 after research...
const cases: { name: string; kill?: string; crashAt?: string; notAgain: string[] }[] = [
  { name: 'inside a node (write)', kill: 'write', notAgain: ['plan', 'research'] },
  { name: 'before the first commit', crashAt: 'before-commit#1', notAgain: [] },
  { name: "before research's checkpoint commits", crashAt: 'before-commit#4', notAgain: ['plan'] },
  { name: "after research's checkpoint commits", crashAt: 'after-commit#4', notAgain: ['plan', 'research'] },
  { name: 'after a pending write of research', crashAt: 'after-pending-write#4', notAgain: ['plan'] },
];

describe('LangGraph on CairnSaver, killed mid-run and resumed in a new process', () => {
  it.each(cases)('$name', async ({ kill, crashAt, notAgain }) => {
    const db = join(tempDir('cairn-crash-langgraph-'), 'cairn.db');
    const crashed = await runFixture(FIXTURE, [db, THREAD, ...(kill ? [kill] : [])], crashAt);
    expect(crashed.signal).toBe('SIGKILL');
    expect(result(crashed)).toBeUndefined();
    const resumed = await runFixture(FIXTURE, [db, THREAD]);
    expect(resumed.stderr).toBe('');
    expect(result(resumed)?.messages).toEqual(reference);
    expect(result(resumed)?.next).toEqual([]);
    // Work whose checkpoint landed is not done again; every node ran to completion once.
    for (const name of notAgain) expect(computed([resumed])).not.toContain(name);
    for (const name of NODES) expect(computed([crashed, resumed])).toContain(name);
    const engine = sqlite(db);
    try {
      const report = await verifyThread(engine, THREAD);
      expect(report.ok).toBe(true);
    } finally {
      await engine.close();
    }
  });
});

describe('LangGraph on CairnSaver, killed inside a parallel superstep', () => {
  it("keeps the writes of the task that finished: it is not run again, and the run ends as a crash-free one", async () => {
    const dir = tempDir('cairn-crash-langgraph-parallel-');
    const clean = await runFixture(PARALLEL, [join(dir, 'reference.db'), THREAD]);
    expect(computed([clean]).sort()).toEqual(['fast', 'merge', 'plan', 'slow']);
    const db = join(dir, 'cairn.db');
    const crashed = await runFixture(PARALLEL, [db, THREAD, 'slow']);
    expect(crashed.signal).toBe('SIGKILL');
    expect(computed([crashed]).sort()).toEqual(['fast', 'plan', 'slow']);
    const resumed = await runFixture(PARALLEL, [db, THREAD]);
    expect(resumed.stderr).toBe('');
    // fast's writes were durable before slow was killed: only slow and what follows run again.
    expect(computed([resumed]).sort()).toEqual(['merge', 'slow']);
    expect(result(resumed)?.messages).toEqual(result(clean)!.messages);
    const engine = sqlite(db);
    try {
      expect((await verifyThread(engine, THREAD)).ok).toBe(true);
    } finally {
      await engine.close();
    }
  });
});
