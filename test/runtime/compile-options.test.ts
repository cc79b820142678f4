/**
 * `compile({ interruptBefore: [...], interruptAfter: [...] })` pauses at the nodes it
 * lists, as `.node(name, fn, { interruptBefore: true })` declares a pause: the run
 * stops `interrupted` (before the node runs, or after its step commits) and
 * `resume({ thread, input })` goes on. A name that is no node of the graph is
 * UnknownNodeError, a value that is no list of names InvalidOptionError, and any key
 * compile() does not know is InvalidOptionError naming it, not ignored. Threads on a
 * SQLite file.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Engine } from '../../src/contracts/engine.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { InvalidOptionError, UnknownNodeError } from '../../src/errors.js';
import { describeGraph } from '../../src/runtime/graph-description.js';
import { END, START, defineState, field, graph, type CompileOptions, type NodeOptions } from '../../src/index.js';

const dir = mkdtempSync(join(tmpdir(), 'cairn-compile-options-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.map((e) => e.close()));
  engines = [];
});
const engineOnFile = (): Engine => {
  const engine = sqlite(join(dir, `${Math.random()}.db`));
  engines.push(engine);
  return engine;
};

const State = defineState({ fields: { log: field.model(z.array(z.string()), { reduce: 'append', default: [] }), answer: field.model(z.string(), { default: '' }) } });

/** draft → send → END, each node counting its calls. */
function mailer(options: Partial<CompileOptions>, sendOptions: NodeOptions = {}) {
  const calls = { draft: 0, send: 0 };
  const app = graph(State)
    .node('draft', () => (calls.draft++, { log: ['drafted'] }))
    .node('send', (s) => (calls.send++, { log: [`sent:${s.answer}`] }), sendOptions)
    .edge(START, 'draft')
    .edge('draft', 'send')
    .edge('send', END)
    .compile({ engine: engineOnFile(), ...options });
  return { app, calls };
}

function thrown(make: () => unknown): Error {
  try {
    make();
  } catch (error) {
    return error as Error;
  }
  throw new Error('compile() did not refuse');
}

describe('compile({ interruptBefore, interruptAfter })', () => {
  it('interruptBefore pauses before the listed node, which runs once after resume', async () => {
    const { app, calls } = mailer({ interruptBefore: ['send'] });
    const paused = await app.run({ thread: 't' });
    expect(paused.status).toBe('interrupted');
    expect(paused.interrupts).toEqual([expect.objectContaining({ node: 'send', when: 'before', payload: null })]);
    expect(calls).toEqual({ draft: 1, send: 0 });
    const done = await app.resume({ thread: 't', input: { answer: 'approved' } });
    expect(done.status).toBe('completed');
    expect(done.state.log).toEqual(['drafted', 'sent:approved']);
    expect(calls).toEqual({ draft: 1, send: 1 });
  });

  it('interruptAfter pauses once the listed node’s step committed', async () => {
    const { app, calls } = mailer({ interruptAfter: ['draft'] });
    const paused = await app.run({ thread: 't' });
    expect(paused.status).toBe('interrupted');
    expect(paused.interrupts).toEqual([expect.objectContaining({ node: 'draft', when: 'after' })]);
    expect(paused.state.log).toEqual(['drafted']);
    expect(calls).toEqual({ draft: 1, send: 0 });
    expect((await app.resume({ thread: 't', input: { answer: 'ok' } })).state.log).toEqual(['drafted', 'sent:ok']);
  });

  it('is the same pause the node option declares: the stored graph shows it, and a node’s own payload function is kept', async () => {
    const { app } = mailer({ interruptBefore: ['send'] }, { interruptBefore: (s: { log: string[] }) => ({ review: s.log }) });
    expect(describeGraph(app.spec, 'default').nodes.find((n) => n.name === 'send')).toMatchObject({ interruptBefore: true });
    const paused = await app.run({ thread: 't' });
    expect(paused.interrupts).toEqual([expect.objectContaining({ node: 'send', when: 'before', payload: { review: ['drafted'] } })]);
  });

  it('a compiled app run as a subgraph keeps the pauses its compile() listed', async () => {
    const child = mailer({ interruptBefore: ['send'] }).app;
    const parent = graph(State)
      .subgraph('mail', child, { share: true })
      .edge(START, 'mail')
      .edge('mail', END)
      .compile({ engine: engineOnFile() });
    const paused = await parent.run({ thread: 't' });
    expect(paused.status).toBe('interrupted');
    // Raised inside the child run: named by the parent's node, with the child's interrupt id.
    expect(paused.interrupts).toEqual([expect.objectContaining({ node: 'mail', ns: 'mail:0@0', child: expect.stringMatching(/:before:send$/), when: 'before' })]);
    const done = await parent.resume({ thread: 't', childInput: { answer: 'yes' } });
    expect(done.state.log).toEqual(['drafted', 'sent:yes']);
  });

  it('a name that is no node of the graph is UnknownNodeError naming it and the graph’s nodes', () => {
    for (const option of ['interruptBefore', 'interruptAfter'] as const) {
      const error = thrown(() => mailer({ [option]: ['send', 'sned'] }));
      expect(UnknownNodeError.is(error), String(error)).toBe(true);
      expect(error.message).toContain(`unknown node "sned" in compile({ ${option} })`);
      expect(error.message).toContain('"draft", "send"');
    }
    expect(UnknownNodeError.is(thrown(() => mailer({ interruptBefore: [START] })))).toBe(true);
  });

  it.each<[string, unknown]>([
    ['interruptBefore', 'send'],
    ['interruptBefore', true],
    ['interruptAfter', [1]],
    ['interruptAfter', { send: true }],
  ])('%s %s (no list of node names) is InvalidOptionError', (option, value) => {
    const error = thrown(() => mailer({ [option]: value }));
    expect(InvalidOptionError.is(error), String(error)).toBe(true);
    expect(error.message).toContain(`compile: ${option} must be a list of node names`);
  });

  it('empty lists pause nowhere', async () => {
    const { app } = mailer({ interruptBefore: [], interruptAfter: [] });
    expect((await app.run({ thread: 't' })).status).toBe('completed');
  });
});

describe('compile() options it does not know', () => {
  it.each(['interrupt_before', 'checkpointer', 'recursion_limit', 'snapshotevery'])('%s is InvalidOptionError naming it and the options there are', (key) => {
    const error = thrown(() => mailer({ [key]: ['send'] } as never));
    expect(InvalidOptionError.is(error), String(error)).toBe(true);
    expect(error.message).toContain(`compile: unknown option "${key}"`);
    expect(error.message).toContain('interruptBefore');
  });

  it('still asks for an engine first when there is none', () => {
    const builder = graph(State).node('a', () => ({})).edge(START, 'a').edge('a', END);
    expect(thrown(() => builder.compile({ checkpointer: {} } as never)).message).toMatch(/needs an engine/);
  });
});
