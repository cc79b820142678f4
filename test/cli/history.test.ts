/**
 * One history, however it is read: `threadHistory` (inspect/) gives exactly what
 * `app.history()` gives (the same entries, in the same order, for every page and
 * namespace, and the same error for a missing thread), and `cairn history --json`
 * prints those entries. `cairn show --json` prints what `storedState` returns.
 * Runs the BUILT CLI on a SQLite file.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fsArtifacts } from '../../src/artifacts/fs/index.js';
import { encode } from '../../src/codec/tagged-json.js';
import type { Engine } from '../../src/contracts/engine.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { threadHistory, threadInterrupts, type HistoryPage } from '../../src/inspect/history.js';
import { storedState } from '../../src/inspect/stored-state.js';
import type { App } from '../../src/runtime/app.js';
import type { StateSchema } from '../../src/state/schema.js';
import { workedExample } from '../../src/testing/worked-example.js';
import { postApp } from '../helpers/post-app.js';
import { cairn } from './run-cli.js';

let dir: string;
let db: string;
let engine: Engine;
let worked: ReturnType<typeof workedExample>;
let post: ReturnType<typeof postApp>;
/** The child run's namespace of thread `post`. */
let childNs: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-cli-history-'));
  db = join(dir, 'cairn.db');
  engine = sqlite(db);
  worked = workedExample({ engine, artifacts: fsArtifacts(join(dir, 'artifacts')) });
  await worked.run({ thread: 'cust_42', input: { customerId: 'cust_42' } });
  post = postApp(engine);
  await post.run({ thread: 'post', input: { topic: 'cairns' } });
  await post.resume({ thread: 'post', input: { approved: true }, actor: 'alice' });
  // A branch from the input position: the log holds both.
  await post.fork({ thread: 'post', seq: 0, patch: { topic: 'stones' }, actor: 'bob' });
  childNs = (await post.history({ thread: 'post' })).flatMap((p) => p.children)[0]!;
});

afterAll(async () => {
  await engine.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('threadHistory', () => {
  it('the fixture covers every field of an entry', async () => {
    const all = await post.history({ thread: 'post' });
    expect(all.some((p) => p.actor === 'alice') && all.some((p) => p.actor === 'bob')).toBe(true);
    expect(all.some((p) => p.interrupts.length > 0 && p.records.length > 0 && p.effects.length > 0)).toBe(true);
    expect(childNs).toMatch(/^research:0@/);
    expect((await worked.history({ thread: 'cust_42' })).some((p) => p.artifacts.length > 0)).toBe(true);
  });

  const pages: [string, string, () => HistoryPage][] = [
    ['cust_42', 'every position', () => ({})],
    ['cust_42', 'a first page', () => ({ limit: 2 })],
    ['cust_42', 'a page before a seq', () => ({ beforeSeq: 3, limit: 2 })],
    ['post', 'a forked thread', () => ({})],
    ['post', "a child run's namespace", () => ({ ns: childNs })],
  ];
  for (const [thread, what, options] of pages) {
    it(`returns what app.history returns: ${what}`, async () => {
      const app: { history: App<StateSchema>['history'] } = thread === 'post' ? post : worked;
      const expected = await app.history({ thread, ...options() });
      const got = await threadHistory(engine.checkpointer, thread, options());
      expect(got).toEqual(expected);
      // The same keys in the same order: JSON output is the same text.
      expect(JSON.stringify(got)).toBe(JSON.stringify(expected));
    });
  }

  it('throws what app.history throws for a missing thread, and for a namespace the thread does not have', async () => {
    const rejection = (read: Promise<unknown>) => read.then(() => null, (e: unknown) => e as Error & { code: string });
    for (const [thread, page] of [['nope', {}], ['post', { ns: 'nope:0@0' }]] as const) {
      const expected = await rejection(post.history({ thread, ...page }));
      const got = await rejection(threadHistory(engine.checkpointer, thread, page));
      expect(got).toBeInstanceOf(Error);
      expect([got!.code, got!.message]).toEqual([expected!.code, expected!.message]);
    }
  });
});

describe('cairn history --json and cairn show --json', () => {
  /** A value as `--json` prints it: tagged JSON, indented. */
  const printed = (value: unknown) => JSON.stringify(JSON.parse(encode(value)), null, 2) + '\n';

  it('history prints the entries app.history returns, page by page (--limit, --before-seq) and for a child run (--ns)', async () => {
    const cases: [string, string[], HistoryPage][] = [
      ['cust_42', [], { limit: 50 }],
      ['cust_42', ['--limit', '2'], { limit: 2 }],
      ['cust_42', ['--before-seq', '3', '--limit', '2'], { beforeSeq: 3, limit: 2 }],
      ['post', [], { limit: 50 }],
      ['post', ['--ns', childNs], { ns: childNs, limit: 50 }],
    ];
    for (const [thread, args, options] of cases) {
      const run = await cairn(['history', thread, ...args, '--db', db, '--json']);
      expect(run.code, run.stderr).toBe(0);
      const app: { history: App<StateSchema>['history'] } = thread === 'post' ? post : worked;
      expect(run.stdout, args.join(' ')).toBe(printed(await app.history({ thread, ...options })));
    }
  });

  it('history --before-seq pages the table too', async () => {
    const run = await cairn(['history', 'cust_42', '--before-seq', '2', '--db', db]);
    expect(run.code, run.stderr).toBe(0);
    const [header, ...lines] = run.stdout.trim().split('\n');
    expect(header!.split(/\s+/).slice(0, 3)).toEqual(['seq', 'parent', 'kind']);
    expect(lines.map((line) => Number(line.trim().split(/\s+/)[0]))).toEqual([1, 0]);
  });

  it('show prints what storedState returns, at the head, at a seq, in a child run', async () => {
    for (const [thread, args, options] of [
      ['cust_42', [], {}],
      ['cust_42', ['--seq', '1'], { seq: 1 }],
      ['post', ['--ns', childNs], { ns: childNs }],
    ] as const) {
      const run = await cairn(['show', thread, ...args, '--db', db, '--json']);
      expect(run.code, run.stderr).toBe(0);
      // The stored state, and the interrupts pending there and answered before it.
      const view = await storedState(engine.checkpointer, thread, options);
      expect(run.stdout).toBe(printed({ ...view, interrupts: await threadInterrupts(engine.checkpointer, thread, { ...options, seq: view.seq }) }));
    }
    expect(await storedState(engine.checkpointer, 'cust_42', { seq: 1 })).toMatchObject({ thread: 'cust_42', seq: 1, next: ['generate_summary'] });
  });
});
