/**
 * The `ns` option of every read: a namespace the thread has no positions in is
 * NamespaceNotFoundError naming it, the thread and the namespaces the thread has (not
 * "no position 0"); an `ns` that is no checkpoint namespace at all (`'../x'`, a node
 * name alone, a number) is InvalidOptionError naming the option, not a graph
 * definition error; a namespace the thread has whose subgraph this code lacks stays
 * GraphMismatchError. On memory, SQLite and PostgreSQL.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Engine } from '../../src/contracts/engine.js';
import { GraphDefinitionError, GraphMismatchError, InvalidOptionError, NamespaceNotFoundError } from '../../src/errors.js';
import { END, START, defineState, field, graph } from '../../src/index.js';
import { positionLedger, storedState, threadHistory, threadInterrupts, threadTimeline } from '../../src/inspect/index.js';
import { caught, ENGINES, useEngine } from './engines.js';

const Parent = defineState({ fields: { topic: field.model(z.string(), { default: '' }), answer: field.model(z.string(), { default: '' }) } });
const Child = defineState({ fields: { question: field.model(z.string(), { default: '' }), answer: field.model(z.string(), { default: '' }) } });

/** START -> plan -> research (a child graph) -> END. */
function app(engine: Engine) {
  const research = graph(Child)
    .node('answer', (s) => ({ answer: `about ${s.question}` }))
    .edge(START, 'answer')
    .edge('answer', END);
  return graph(Parent)
    .node('plan', () => ({ topic: 'tides' }))
    .subgraph('research', research, { input: (s) => ({ question: s.topic }), output: (c) => ({ answer: c.answer }) })
    .edge(START, 'plan')
    .edge('plan', 'research')
    .edge('research', END)
    .compile({ engine });
}

describe.each(ENGINES)('the ns option of reads on %s', (name) => {
  const ctx = useEngine(name);

  async function started() {
    const a = app(ctx.engine);
    await a.run({ thread: 't' });
    const [child] = (await a.history({ thread: 't' })).flatMap((p) => p.children);
    expect(child).toMatch(/^research:0@\d+$/);
    return { a, child: child! };
  }

  it('a namespace the thread does not have is NamespaceNotFoundError from getState, stateAt and history', async () => {
    const { a, child } = await started();
    for (const ns of ['research:0@99', `${child}|answer:0@0`, 'plan:0@1']) {
      for (const read of [() => a.getState({ thread: 't', ns }), () => a.stateAt({ thread: 't', ns, seq: 0 }), () => a.history({ thread: 't', ns })]) {
        const error = await caught(read);
        expect(error, ns).toBeInstanceOf(NamespaceNotFoundError);
        const found = error as NamespaceNotFoundError;
        expect([found.ns, found.threadId, found.namespaces.filter((n) => n !== '')]).toEqual([ns, 't', [child]]);
        expect(found.message).toContain(`thread t: has no namespace ${JSON.stringify(ns)}`);
      }
    }
    // The namespace it has reads as before, and an empty page of it is a page, not a missing namespace.
    expect(await a.getState({ thread: 't', ns: child })).toMatchObject({ question: 'tides', answer: 'about tides' });
    expect(await a.history({ thread: 't', ns: child, beforeSeq: 0 })).toEqual([]);
  });

  it('the inspect functions name the missing namespace the same way', async () => {
    const { child } = await started();
    const cp = ctx.engine.checkpointer;
    for (const ns of ['research:0@99', '../x']) {
      const reads = [
        () => storedState(cp, 't', { ns }),
        () => threadHistory(cp, 't', { ns }),
        () => threadTimeline(cp, 't', { ns }),
        () => threadInterrupts(cp, 't', { ns }),
        () => positionLedger(ctx.engine, 't', { ns, seq: 0 }),
      ];
      for (const read of reads) {
        const error = await caught(read);
        expect(error, `${ns}: ${read.toString()}`).toBeInstanceOf(NamespaceNotFoundError);
        expect((error as NamespaceNotFoundError).namespaces).toContain(child);
      }
    }
    expect((await storedState(cp, 't', { ns: child })).state).toMatchObject({ answer: 'about tides' });
  });

  it('an ns that is no checkpoint namespace is InvalidOptionError naming the option, not GraphDefinitionError', async () => {
    const { a, child } = await started();
    for (const ns of ['../x', `${child}|../x`, 'research', 'research:0', 'research:x@1', '|', 7 as unknown as string]) {
      for (const read of [() => a.getState({ thread: 't', ns }), () => a.stateAt({ thread: 't', ns, seq: 0 }), () => a.history({ thread: 't', ns })]) {
        const error = await caught(read);
        expect(error, String(ns)).toBeInstanceOf(InvalidOptionError);
        expect(error).not.toBeInstanceOf(GraphDefinitionError);
        // A string is checked as a namespace, anything else refused as not a string.
        expect(error.message).toContain(typeof ns === 'string' ? `the ns option ${JSON.stringify(ns)}` : `ns must be a string, got ${String(ns)}`);
      }
    }
    await expect(storedState(ctx.engine.checkpointer, 't', { ns: 7 as unknown as string })).rejects.toThrow(InvalidOptionError);
  });

  it('a namespace the thread has, whose subgraph node this code does not have, is still GraphMismatchError', async () => {
    const { child } = await started();
    // The same graph name and fields, with `research` a plain node now.
    const changed = graph(Parent)
      .node('plan', () => ({ topic: 'tides' }))
      .node('research', () => ({}))
      .edge(START, 'plan')
      .edge('plan', 'research')
      .edge('research', END)
      .compile({ engine: ctx.engine });
    expect(await caught(() => changed.getState({ thread: 't', ns: child }))).toBeInstanceOf(GraphMismatchError);
    expect(await caught(() => changed.stateAt({ thread: 't', ns: child, seq: 0 }))).toBeInstanceOf(GraphMismatchError);
  });
});
