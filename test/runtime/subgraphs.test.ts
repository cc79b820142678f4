/**
 * Child runs: a subgraph node runs a child graph whose
 * positions live in a namespace of their own inside the thread. Isolated children
 * are invisible to the parent except for their mapped output (nested-run
 * blindness); shared children write their net change back through the parent's
 * reducers. An interrupt inside a child interrupts the thread and is answered into
 * the child; a failure inside a child resumes inside the child. History, stateAt
 * and getState address child namespaces. Every test runs on memory, SQLite and
 * PostgreSQL.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Engine } from '../../src/contracts/engine.js';
import { GraphDefinitionError, InvalidOptionError, NamespaceNotFoundError, StateConflictError, StateValidationError } from '../../src/errors.js';
import { defineState } from '../../src/state/schema.js';
import { field } from '../../src/state/fields.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import type { PositionBody } from '../../src/runtime/position.js';
import { decode } from '../../src/codec/tagged-json.js';
import { bodies, caught, ENGINES, useEngine } from './engines.js';

const Parent = defineState({
  fields: {
    topic: field.model(z.string(), { default: '' }),
    notes: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
    log: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
    verdict: field.model(z.string(), { default: '' }),
  },
});

/** An isolated child's own state: `log` has the parent's name but is the child's own. */
const Research = defineState({
  fields: {
    question: field.model(z.string(), { default: '' }),
    log: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
    answer: field.model(z.string(), { default: '' }),
    approved: field.model(z.boolean(), { default: false }),
  },
});

/** A shared child: a subset of the parent's fields, with the same reducers. */
const Drafting = defineState({
  fields: {
    log: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
    verdict: field.model(z.string(), { default: '' }),
  },
});

async function childBodies(engine: Engine, thread: string, ns: string): Promise<PositionBody[]> {
  const positions = await engine.checkpointer.getPositions(thread, ns, { from: 0, to: Number.MAX_SAFE_INTEGER });
  return positions.map((p) => decode<PositionBody>(p.body));
}

describe.each(ENGINES)('child runs on %s', (name) => {
  const ctx = useEngine(name);

  /** START -> plan -> research (child: search -> summarise) -> publish -> END, counting calls. */
  function isolatedApp(engine: Engine = ctx.engine, options: { failSummariseOnce?: boolean; ask?: boolean } = {}) {
    const calls = { plan: 0, search: 0, summarise: 0, publish: 0 };
    let failures = options.failSummariseOnce ? 1 : 0;
    const research = graph(Research)
      .node('search', async (s, c) => {
        calls.search++;
        const hits = await c.record('search', () => `hits for ${s.question}`);
        if (options.ask) c.interruptAfter({ approve: hits });
        return { log: [`searched:${hits}`] };
      })
      .node('summarise', (s) => {
        calls.summarise++;
        if (failures > 0) {
          failures--;
          throw new Error('model overloaded');
        }
        return { log: ['summarised'], answer: `${s.question}: ${s.log.length} steps${s.approved ? ', approved' : ''}` };
      })
      .edge(START, 'search')
      .edge('search', 'summarise')
      .edge('summarise', END);
    const app = graph(Parent)
      .node('plan', () => {
        calls.plan++;
        return { topic: 'tides', log: ['planned'] };
      })
      .subgraph('research', research, {
        input: (s) => ({ question: s.topic }),
        output: (r) => ({ notes: [r.answer] }),
      })
      .node('publish', (s) => {
        calls.publish++;
        return { log: [`published:${s.notes.join('|')}`] };
      })
      .edge(START, 'plan')
      .edge('plan', 'research')
      .edge('research', 'publish')
      .edge('publish', END)
      .compile({ engine, retry: { maxAttempts: 1 } });
    return { app, calls };
  }

  it('an isolated child checkpoints in its own namespace; the parent sees only its output (nested-run blindness)', async () => {
    const { app, calls } = isolatedApp();
    const result = await app.run({ thread: 't1' });
    expect(result.status).toBe('completed');
    // The child wrote "searched…" and "summarised" to its own `log`: none of it reaches the parent's `log`.
    expect(result.state.log).toEqual(['planned', 'published:tides: 1 steps']);
    expect(result.state.notes).toEqual(['tides: 1 steps']);
    expect(calls).toEqual({ plan: 1, search: 1, summarise: 1, publish: 1 });

    const history = await app.history({ thread: 't1' });
    const step = history.find((p) => p.nodes.includes('research'))!;
    expect(step.children).toEqual([`research:0@${step.parent}`]);
    const ns = step.children[0]!;
    // The child's own history and state, through the child's schema.
    const childHistory = await app.history({ thread: 't1', ns });
    expect(childHistory.map((p) => p.kind)).toEqual(['step', 'step', 'input']);
    expect(childHistory.map((p) => p.nodes)).toEqual([['summarise'], ['search'], []]);
    const childState = await app.getState({ thread: 't1', ns });
    expect(childState).toMatchObject({ question: 'tides', log: ['searched:hits for tides', 'summarised'], answer: 'tides: 1 steps' });
    expect(await app.stateAt({ thread: 't1', seq: 0, ns })).toMatchObject({ question: 'tides', log: [], answer: '' });
    // Each namespace is its own chain, and the root's head did not move with the child's commits.
    const thread = await ctx.engine.checkpointer.getThread('t1');
    expect(thread!.head).toBe(history[0]!.seq);
    expect((await childBodies(ctx.engine, 't1', ns)).map((b) => b.kind)).toEqual(['input', 'step', 'step']);
  });

  it('a namespace the thread does not have is NamespaceNotFoundError, even one naming no subgraph node', async () => {
    const { app } = isolatedApp();
    await app.run({ thread: 't1' });
    expect(await caught(() => app.stateAt({ thread: 't1', seq: 0, ns: 'publish:0@3' }))).toBeInstanceOf(NamespaceNotFoundError);
  });

  it('a failure inside the child resumes inside the child: its finished steps are not run again', async () => {
    const { app, calls } = isolatedApp(ctx.engine, { failSummariseOnce: true });
    const failed = await caught(() => app.run({ thread: 't1' }));
    expect(failed.message).toMatch(/model overloaded/);
    expect((await app.getThread({ thread: 't1' }))!.status).toBe('failed');
    expect(calls).toMatchObject({ plan: 1, search: 1, summarise: 1, publish: 0 });

    const result = await app.run({ thread: 't1' });
    expect(result.status).toBe('completed');
    // plan and search ran once; only the failed child node ran again.
    expect(calls).toEqual({ plan: 1, search: 1, summarise: 2, publish: 1 });
    expect(result.state.notes).toEqual(['tides: 1 steps']);
    // The failure is kept with the child's namespace.
    const failures = await ctx.engine.checkpointer.listFailures('t1');
    expect(failures.map((f) => [f.node, f.ns])).toContainEqual(['summarise', expect.stringMatching(/^research:0@\d+$/)]);
  });

  it('the same subgraph node run twice gets two namespaces', async () => {
    const Counter = defineState({ fields: { n: field.model(z.number(), { default: 0 }), seen: field.model(z.array(z.number()), { reduce: 'append', default: [] }) } });
    const Inner = defineState({ fields: { x: field.model(z.number(), { default: 0 }) } });
    const inner = graph(Inner)
      .node('double', (s) => ({ x: s.x * 2 }))
      .edge(START, 'double')
      .edge('double', END);
    const app = graph(Counter)
      .subgraph('twice', inner, { input: (s) => ({ x: s.n + 1 }), output: (r, s) => ({ n: s.n + 1, seen: [r.x] }) })
      .edge(START, 'twice')
      .conditionalEdge('twice', (s) => (s.n < 3 ? 'twice' : END))
      .compile({ engine: ctx.engine });
    const result = await app.run({ thread: 'loop' });
    expect(result.state).toMatchObject({ n: 3, seen: [2, 4, 6] });
    const children = (await app.history({ thread: 'loop' })).flatMap((p) => p.children).reverse();
    expect(children).toEqual(['twice:0@0', 'twice:0@1', 'twice:0@2']);
  });

  it('replay serves a child run from its namespace instead of running it again, across an interrupt', async () => {
    const { app, calls } = isolatedApp(ctx.engine, { ask: true });
    await app.run({ thread: 'r1' });
    await app.resume({ thread: 'r1', childInput: { approved: true } });
    const before = { ...calls };
    const report = await app.replay({ thread: 'r1', from: 0 });
    expect(report.sameStates).toBe(true);
    expect(report.steps.map((s) => s.kind)).toEqual(['step', 'interrupt', 'resume', 'step', 'step']);
    // plan and publish were re-executed; the child's nodes were not.
    expect(calls).toEqual({ ...before, plan: before.plan + 1, publish: before.publish + 1 });

    // Code whose mapping changed: the replay says where the states part.
    const changed = graph(Parent)
      .node('plan', () => ({ topic: 'tides', log: ['planned'] }))
      .subgraph('research', graph(Research).node('search', () => undefined).node('summarise', () => undefined).edge(START, 'search').edge('search', 'summarise').edge('summarise', END), {
        output: (r) => ({ notes: [r.answer.toUpperCase()] }),
      })
      .node('publish', (s) => ({ log: [`published:${s.notes.join('|')}`] }))
      .edge(START, 'plan')
      .edge('plan', 'research')
      .edge('research', 'publish')
      .edge('publish', END)
      .compile({ engine: ctx.engine });
    const diverged = await changed.replay({ thread: 'r1', from: 0 });
    expect(diverged.sameStates).toBe(false);
    expect(diverged.steps.find((s) => s.nodes.includes('research'))!.differences).toEqual(['notes']);
  });

  describe('shared children', () => {
    function sharedApp(engine: Engine = ctx.engine) {
      const drafting = graph(Drafting)
        .node('write', (s) => ({ log: [`draft after ${s.log.length}`] }))
        .node('judge', (s) => ({ log: ['judged'], verdict: s.log.length >= 3 ? 'good' : 'thin' }))
        .edge(START, 'write')
        .edge('write', 'judge')
        .edge('judge', END);
      return graph(Parent)
        .node('plan', () => ({ log: ['planned'] }))
        .subgraph('drafting', drafting, { share: true })
        .edge(START, 'plan')
        .edge('plan', 'drafting')
        .edge('drafting', END)
        .compile({ engine });
    }

    it('the child starts from the parent values and its changes go back through the parent reducers, once', async () => {
      const app = sharedApp();
      const result = await app.run({ thread: 's1', input: { log: ['input'] } });
      // The child saw ['input', 'planned'] and appended two items: the parent gets those two, not the whole list again.
      expect(result.state.log).toEqual(['input', 'planned', 'draft after 2', 'judged']);
      expect(result.state.verdict).toBe('good');
      const ns = (await app.history({ thread: 's1' })).find((p) => p.children.length)!.children[0]!;
      expect(await app.stateAt({ thread: 's1', seq: 0, ns })).toMatchObject({ log: ['input', 'planned'], verdict: '' });
      // The parent's step wrote exactly the child's net change.
      const step = (await bodies(ctx.engine, 's1')).find((b) => b.nodes.includes('drafting'))!;
      expect(step.changes).toMatchObject({ log: { append: 2 }, verdict: { set: 'good' } });
    });

    it("a shared child's replace write conflicts with a sibling's like any other write in the step", async () => {
      const drafting = graph(Drafting)
        .node('judge', () => ({ verdict: 'from child' }))
        .edge(START, 'judge')
        .edge('judge', END);
      const app = graph(Parent)
        .subgraph('drafting', drafting, { share: true })
        .node('rival', () => ({ verdict: 'from rival' }))
        .edge(START, 'drafting')
        .edge(START, 'rival')
        .edge('drafting', END)
        .edge('rival', END)
        .compile({ engine: ctx.engine, retry: { maxAttempts: 1 } });
      expect(await caught(() => app.run({ thread: 's2' }))).toBeInstanceOf(StateConflictError);
    });

    it('sharing is checked when the graph is built: missing fields, custom reducers and mismatched reducers are refused', () => {
      const child = (schema: ReturnType<typeof defineState>) => graph(schema).node('n', () => undefined).edge(START, 'n').edge('n', END);
      const Missing = defineState({ fields: { other: field.model(z.string(), { default: '' }) } });
      const Custom = defineState({ fields: { verdict: field.model(z.string(), { default: '', reduce: (a: string, b: string) => a + b }) } });
      const Mismatch = defineState({ fields: { verdict: field.model(z.array(z.string()), { reduce: 'append', default: [] }) } });
      for (const [schema, message] of [
        [Missing, /"other", which is not a model field of the parent/],
        [Custom, /custom reducer/],
        [Mismatch, /"append" field in the child but "replace" in the parent/],
      ] as const) {
        const error = (() => {
          try {
            graph(Parent).subgraph('c', child(schema), { share: true });
          } catch (e) {
            return e as Error;
          }
          return undefined;
        })();
        expect(error).toBeInstanceOf(GraphDefinitionError);
        expect(error!.message).toMatch(message);
      }
    });
  });

  describe('interrupts inside a child', () => {
    it('interrupt the thread; resume answers into the child, which goes on where it stopped', async () => {
      const { app, calls } = isolatedApp(ctx.engine, { ask: true });
      const paused = await app.run({ thread: 'i1' });
      expect(paused.status).toBe('interrupted');
      expect(paused.interrupts).toHaveLength(1);
      const [pending] = paused.interrupts;
      expect(pending).toMatchObject({ node: 'research', when: 'inside', payload: { approve: 'hits for tides' } });
      expect(pending!.ns).toMatch(/^research:0@\d+$/);
      expect(pending!.id).toBe(`${pending!.ns}#${pending!.child}`);
      expect((await app.getThread({ thread: 'i1' }))!.status).toBe('interrupted');

      // The answer is validated through the child's schema: a bad one changes nothing.
      const before = await childBodies(ctx.engine, 'i1', pending!.ns!);
      expect(await caught(() => app.resume({ thread: 'i1', childInput: { approved: 'yes' } }))).toBeInstanceOf(StateValidationError);
      expect(await childBodies(ctx.engine, 'i1', pending!.ns!)).toEqual(before);
      expect((await app.getThread({ thread: 'i1' }))!.status).toBe('interrupted');

      // A fresh engine on the same storage, as another process would.
      const again = isolatedApp(ctx.reopen(), { ask: true });
      const done = await again.app.resume({ thread: 'i1', childInput: { approved: true }, actor: 'reviewer' });
      expect(done.status).toBe('completed');
      expect(done.state.notes).toEqual(['tides: 1 steps, approved']);
      // Nothing before the interrupt ran again: the child's search stays done, the parent's plan too.
      expect(calls).toMatchObject({ plan: 1, search: 1 });
      expect(again.calls).toMatchObject({ plan: 0, search: 0, summarise: 1, publish: 1 });
      // The child's history holds the answer, by the named actor.
      const childHistory = await app.history({ thread: 'i1', ns: pending!.ns! });
      expect(childHistory.find((p) => p.kind === 'resume')).toMatchObject({ actor: 'reviewer', changes: { approved: 'set' } });
    });

    it('input and childInput together, or childInput for an interrupt of the parent\'s own node, is InvalidOptionError: no write is dropped or sent to the wrong graph', async () => {
      const { app } = isolatedApp(ctx.engine, { ask: true });
      const paused = await app.run({ thread: 'both' });
      const ns = paused.interrupts[0]!.ns!;
      const before = { root: await bodies(ctx.engine, 'both'), child: await childBodies(ctx.engine, 'both', ns), thread: await app.getThread({ thread: 'both' }) };
      // Both name the child's writes: one of them was dropped without a word.
      const both = await caught(() => app.resume({ thread: 'both', input: { log: ['via input'] }, childInput: { approved: true } }));
      expect(InvalidOptionError.is(both)).toBe(true);
      expect(both.message).toContain('not both');
      expect({ root: await bodies(ctx.engine, 'both'), child: await childBodies(ctx.engine, 'both', ns), thread: await app.getThread({ thread: 'both' }) }).toEqual(before);
      const done = await app.resume({ thread: 'both', childInput: { approved: true } });
      expect(done.state.notes).toEqual(['tides: 1 steps, approved']);

      // An interrupt of the parent's own node: childInput was merged into the parent's state as if it were input.
      const gated = graph(Parent)
        .node('plan', () => ({ topic: 'tides' }), { interruptBefore: true })
        .edge(START, 'plan')
        .edge('plan', END)
        .compile({ engine: ctx.engine });
      await gated.run({ thread: 'root' });
      const rootBefore = await bodies(ctx.engine, 'root');
      const misplaced = await caught(() => gated.resume({ thread: 'root', childInput: { log: ['meant for a child'] } }));
      expect(InvalidOptionError.is(misplaced)).toBe(true);
      expect(misplaced.message).toContain('not inside a child run');
      expect(await bodies(ctx.engine, 'root')).toEqual(rootBefore);
      expect((await gated.getThread({ thread: 'root' }))!.status).toBe('interrupted');
      expect((await gated.resume({ thread: 'root', input: { log: ['answered'] } })).state.log).toEqual(['answered']);
    });

    it('a sibling that finished before the child paused is not run again, and its effect lands once', async () => {
      let effects = 0;
      let siblingRuns = 0;
      const research = graph(Research)
        .node('ask', (_s, c) => {
          c.interruptAfter('go on?');
          return { log: ['asked'] };
        })
        .node('finish', (s) => ({ answer: `done:${s.approved}` }))
        .edge(START, 'ask')
        .edge('ask', 'finish')
        .edge('finish', END);
      const app = graph(Parent)
        .subgraph('research', research, { output: (r) => ({ verdict: r.answer }) })
        .node('sibling', async (_s, c) => {
          siblingRuns++;
          await c.effect('mail', { run: () => ++effects });
          return { log: ['sibling'] };
        })
        .edge(START, 'research')
        .edge(START, 'sibling')
        .edge('research', END)
        .edge('sibling', END)
        .compile({ engine: ctx.engine });
      const paused = await app.run({ thread: 'i2' });
      expect(paused.status).toBe('interrupted');
      const done = await app.resume({ thread: 'i2', childInput: { approved: true } });
      expect(done.status).toBe('completed');
      expect(done.state).toMatchObject({ verdict: 'done:true', log: ['sibling'] });
      expect({ siblingRuns, effects }).toEqual({ siblingRuns: 1, effects: 1 });
      // The step that finally committed lists both tasks and the child.
      const step = (await bodies(ctx.engine, 'i2')).find((b) => b.kind === 'step')!;
      expect(step.nodes).toEqual(['research', 'sibling']);
      expect(step.children).toEqual([paused.interrupts[0]!.ns]);
    });

    it('an interrupt two levels down is addressed through both namespaces and answered into the grandchild', async () => {
      const Leaf = defineState({ fields: { ok: field.model(z.boolean(), { default: false }) } });
      const leaf = graph(Leaf)
        .node('confirm', (_s, c) => c.interruptAfter('confirm?'))
        .node('after', () => undefined)
        .edge(START, 'confirm')
        .edge('confirm', 'after')
        .edge('after', END);
      const middle = graph(Research)
        .subgraph('leaf', leaf, { output: (r) => ({ approved: r.ok }) })
        .edge(START, 'leaf')
        .edge('leaf', END);
      const app = graph(Parent)
        .subgraph('middle', middle, { output: (r) => ({ verdict: r.approved ? 'yes' : 'no' }) })
        .edge(START, 'middle')
        .edge('middle', END)
        .compile({ engine: ctx.engine });
      const committedIn = new Set<string>();
      const paused = await app.run({ thread: 'i3', onEvent: (e) => e.type === 'step.commit' && committedIn.add(e.ns ?? '') });
      // Events name the namespace they happened in, however deep.
      expect([...committedIn].sort()).toEqual(['', 'middle:0@0', 'middle:0@0|leaf:0@0']);
      const [pending] = paused.interrupts;
      expect(pending!.ns).toBe('middle:0@0');
      expect(pending!.child).toMatch(/^middle:0@0\|leaf:0@0#/);
      const done = await app.resume({ thread: 'i3', childInput: { ok: true } });
      expect(done.state.verdict).toBe('yes');
      expect(await app.getState({ thread: 'i3', ns: 'middle:0@0|leaf:0@0' })).toMatchObject({ ok: true });
    });

    it('a subgraph node can pause before its child starts, like any node', async () => {
      let ran = 0;
      const research = graph(Research)
        .node('go', () => {
          ran++;
          return { answer: 'done' };
        })
        .edge(START, 'go')
        .edge('go', END);
      const app = graph(Parent)
        .subgraph('research', research, { interruptBefore: (s) => ({ topic: s.topic }), output: (r) => ({ verdict: r.answer }) })
        .edge(START, 'research')
        .edge('research', END)
        .compile({ engine: ctx.engine });
      const paused = await app.run({ thread: 'i5', input: { topic: 'tides' } });
      expect(paused.interrupts).toEqual([expect.objectContaining({ node: 'research', when: 'before', payload: { topic: 'tides' } })]);
      expect(paused.interrupts[0]!.ns).toBeUndefined();
      expect(ran).toBe(0);
      const done = await app.resume({ thread: 'i5' });
      expect({ verdict: done.state.verdict, ran }).toEqual({ verdict: 'done', ran: 1 });
    });

    it('a fork from the paused position runs the superstep afresh, in a new child namespace', async () => {
      const { app } = isolatedApp(ctx.engine, { ask: true });
      const paused = await app.run({ thread: 'i4' });
      const forked = await app.fork({ thread: 'i4', seq: paused.seq });
      // The child's interrupt belonged to the old branch's child run.
      expect(forked.status).toBe('running');
      const again = await app.run({ thread: 'i4' });
      expect(again.status).toBe('interrupted');
      expect(again.interrupts[0]!.ns).toBe(`research:0@${forked.seq}`);
      expect(again.interrupts[0]!.ns).not.toBe(paused.interrupts[0]!.ns);
    });
  });
});
