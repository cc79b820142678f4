/**
 * State is read-only: code handed it (a node, a routing function, a subgraph's
 * mappings, a child's node) that changes an append field's list in place is refused
 * with StateMutationError, and the list is put back, so that nothing of the change
 * reaches a later node, a retry or a resumed run, and the stored state stays the one
 * the run goes on from. Replay reports it as the run would. Every test runs on memory
 * and on SQLite.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Engine } from '../../src/contracts/engine.js';
import { CairnError, StateMutationError } from '../../src/errors.js';
import { defineState } from '../../src/state/schema.js';
import { field } from '../../src/state/fields.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import { bodies, caught, gate, useEngine, type EngineName } from './engines.js';

const State = defineState({
  fields: {
    messages: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
    log: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
  },
});

const Child = defineState({
  fields: {
    notes: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
  },
});

/** START -> first -> second -> END, `second` doing what `body` does; what each node saw of `messages`. */
function twoSteps(engine: Engine, body: (s: { messages: readonly string[] }, c: unknown) => unknown, retry?: { maxAttempts: number; retryOn?: (e: unknown) => boolean }) {
  const seen: { node: string; messages: string[] }[] = [];
  const app = graph(State)
    .node('first', (s) => {
      seen.push({ node: 'first', messages: [...s.messages] });
      return { messages: ['hello'] };
    })
    .node('second', (s, c) => {
      seen.push({ node: 'second', messages: [...s.messages] });
      return body(s, c) as never;
    })
    .node('third', (s) => {
      seen.push({ node: 'third', messages: [...s.messages] });
      return { log: ['third'] };
    })
    .edge(START, 'first')
    .edge('first', 'second')
    .edge('second', 'third')
    .edge('third', END)
    .compile({ engine, retry: { initialDelayMs: 0, ...(retry ?? { maxAttempts: 1 }) } });
  return { app, seen };
}

describe.each<[EngineName]>([['memory'], ['sqlite']])('state changed in place on %s', (name) => {
  const ctx = useEngine(name);

  it('a node that pushes onto an append list without returning it is refused; the stored state and a resume do not see the item', async () => {
    const { app, seen } = twoSteps(ctx.engine, (s) => {
      (s.messages as string[]).push('pushed');
    });
    const error = await caught(() => app.run({ thread: 't' }));
    expect(StateMutationError.is(error)).toBe(true);
    expect(CairnError.is(error)).toBe(true);
    expect(error.code).toBe('ERR_STATE_MUTATED');
    const refused = error as StateMutationError;
    expect(refused.field).toBe('messages');
    expect(refused.fields).toEqual(['messages']);
    expect(refused.nodes).toEqual(['second']);
    expect(refused.restored).toBe(true);
    expect(refused.message).toContain('"second"');
    expect(refused.message).toContain('{ messages: [item] }');
    // `third` never ran on a state the store does not hold.
    expect(seen.map((s) => s.node)).toEqual(['first', 'second']);
    expect(await app.getState({ thread: 't' })).toMatchObject({ messages: ['hello'], log: [] });
    expect((await bodies(ctx.engine, 't')).map((b) => b.nodes)).toEqual([[], ['first']]);
    const thread = await ctx.engine.checkpointer.getThread('t');
    expect(thread?.status).toBe('failed');
    expect(thread?.lastError?.code).toBe('ERR_STATE_MUTATED');
  });

  it('a node that pushes the item and returns it too is refused: the item is neither doubled in memory nor stored once', async () => {
    const { app, seen } = twoSteps(ctx.engine, (s) => {
      (s.messages as string[]).push('both');
      return { messages: ['both'] };
    });
    const error = await caught(() => app.run({ thread: 't' }));
    expect(StateMutationError.is(error)).toBe(true);
    expect((error as StateMutationError).nodes).toEqual(['second']);
    expect(seen.map((s) => s.node)).toEqual(['first', 'second']);
    expect(await app.getState({ thread: 't' })).toMatchObject({ messages: ['hello'] });
  });

  it('a node that pushes and then throws: its retry sees the list as committed, and what is stored is what memory held', async () => {
    let attempt = 0;
    const { app, seen } = twoSteps(
      ctx.engine,
      (s) => {
        attempt++;
        if (attempt === 1) {
          (s.messages as string[]).push('leaked');
          throw new Error('model overloaded');
        }
        return { messages: ['answer'] };
      },
      { maxAttempts: 3, retryOn: () => true },
    );
    const result = await app.run({ thread: 't' });
    expect(result.status).toBe('completed');
    expect(seen.filter((s) => s.node === 'second').map((s) => s.messages)).toEqual([['hello'], ['hello']]);
    expect(seen.find((s) => s.node === 'third')!.messages).toEqual(['hello', 'answer']);
    expect(result.state.messages).toEqual(['hello', 'answer']);
    expect(await app.getState({ thread: 't' })).toMatchObject({ messages: ['hello', 'answer'] });
    // The failed attempt is kept as the refusal, with what the node threw in its message.
    const failures = await ctx.engine.checkpointer.listFailures('t');
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatchObject({ node: 'second', code: 'ERR_STATE_MUTATED' });
    expect(failures[0]!.message).toContain('model overloaded');
  });

  it('under the default retry policy a refusal is not retried, even when the node threw a retryable error after the push', async () => {
    let attempts = 0;
    const { app } = twoSteps(
      ctx.engine,
      (s) => {
        attempts++;
        (s.messages as string[]).push('leaked');
        throw new Error('model overloaded');
      },
      { maxAttempts: 3 },
    );
    const error = await caught(() => app.run({ thread: 't' }));
    expect(StateMutationError.is(error)).toBe(true);
    expect((error.cause as Error).message).toBe('model overloaded');
    expect(attempts).toBe(1);
    expect(await app.getState({ thread: 't' })).toMatchObject({ messages: ['hello'] });
  });

  it('a shortened list cannot be put back: it is refused and never retried, whatever the policy; the next run reads the stored state', async () => {
    let attempts = 0;
    let fixed = false;
    const { app, seen } = twoSteps(
      ctx.engine,
      (s) => {
        attempts++;
        if (!fixed) (s.messages as string[]).pop();
        return { log: ['second'] };
      },
      { maxAttempts: 3, retryOn: () => true },
    );
    const error = await caught(() => app.run({ thread: 't' }));
    expect(StateMutationError.is(error)).toBe(true);
    expect((error as StateMutationError).restored).toBe(false);
    expect(attempts).toBe(1);
    fixed = true;
    const result = await app.run({ thread: 't' });
    expect(result.status).toBe('completed');
    expect(seen.filter((s) => s.node === 'second').map((s) => s.messages)).toEqual([['hello'], ['hello']]);
    expect(result.state.messages).toEqual(['hello']);
  });

  it('parallel nodes share the lists: a push by one is refused for the step, naming its nodes, and nothing of the step is stored', async () => {
    const pushed = gate();
    const read = gate();
    const seenByB: number[] = [];
    const app = graph(State)
      .node('a', async (s) => {
        (s.log as string[]).push('a-in-place');
        pushed.open();
        await read.promise;
        return { log: ['a'] };
      })
      .node('b', async (s) => {
        await pushed.promise;
        seenByB.push(s.log.length);
        read.open();
        return { log: [`b saw ${s.log.length}`] };
      })
      .node('after', () => ({ messages: ['after'] }))
      .edge(START, 'a')
      .edge(START, 'b')
      .edge('a', 'after')
      .edge('b', 'after')
      .edge('after', END)
      .compile({ engine: ctx.engine, retry: { maxAttempts: 1 } });
    const error = await caught(() => app.run({ thread: 't' }));
    expect(StateMutationError.is(error)).toBe(true);
    expect((error as StateMutationError).fields).toEqual(['log']);
    expect((error as StateMutationError).nodes).toEqual(['a', 'b']);
    // Concurrent code sees the other's push (the lists are not copied), but it stops there.
    expect(seenByB).toEqual([1]);
    expect(await app.getState({ thread: 't' })).toMatchObject({ log: [], messages: [] });
    expect((await bodies(ctx.engine, 't')).map((b) => b.nodes)).toEqual([[]]);
  });

  it('a node that pushes and then stops at an interrupt is refused: the thread is not left interrupted over a state the store does not hold', async () => {
    const { app } = twoSteps(ctx.engine, async (s, c) => {
      (s.messages as string[]).push('asked');
      const ok = await (c as { interrupt: (payload: unknown, options: unknown) => Promise<boolean> }).interrupt('ok?', { answer: z.boolean() });
      return { log: [String(ok)] };
    });
    const error = await caught(() => app.run({ thread: 't' }));
    expect(StateMutationError.is(error)).toBe(true);
    expect((await ctx.engine.checkpointer.getThread('t'))?.status).toBe('failed');
    expect(await app.getState({ thread: 't' })).toMatchObject({ messages: ['hello'] });
  });

  it('a routing function that pushes onto a list is refused, naming the step it routed from', async () => {
    const app = graph(State)
      .node('a', () => ({ log: ['a'] }))
      .node('b', () => ({ log: ['b'] }))
      .edge(START, 'a')
      .conditionalEdge('a', (s) => {
        (s.log as string[]).push('routed');
        return 'b';
      })
      .edge('b', END)
      .compile({ engine: ctx.engine, retry: { maxAttempts: 1 } });
    const error = await caught(() => app.run({ thread: 't' }));
    expect(StateMutationError.is(error)).toBe(true);
    expect((error as StateMutationError).nodes).toEqual(['a']);
    expect(await app.getState({ thread: 't' })).toMatchObject({ log: [] });
    expect((await bodies(ctx.engine, 't')).map((b) => b.nodes)).toEqual([[]]);
  });

  describe('subgraphs', () => {
    /** START -> research (child: search -> END) -> END. */
    function withChild(options: { childPushes?: boolean; inputPushes?: boolean }) {
      const research = graph(Child)
        .node('search', (s) => {
          if (options.childPushes) (s.notes as string[]).push('in place');
          return { notes: ['found'] };
        })
        .edge(START, 'search')
        .edge('search', END);
      return graph(State)
        .node('plan', () => ({ log: ['planned'] }))
        .subgraph('research', research, {
          input: (s) => {
            if (options.inputPushes) (s.log as string[]).push('mapped in place');
            return { notes: [...s.log] };
          },
          output: (r) => ({ messages: [...r.notes] }),
        })
        .edge(START, 'plan')
        .edge('plan', 'research')
        .edge('research', END)
        .compile({ engine: ctx.engine, retry: { maxAttempts: 1 } });
    }

    it("a child's node that pushes onto the child's list is refused in the child; the parent's step fails with it", async () => {
      const app = withChild({ childPushes: true });
      const error = await caught(() => app.run({ thread: 't' }));
      expect(StateMutationError.is(error)).toBe(true);
      expect((error as StateMutationError).nodes).toEqual(['search']);
      expect((error as StateMutationError).fields).toEqual(['notes']);
      expect(await app.getState({ thread: 't' })).toMatchObject({ log: ['planned'], messages: [] });
    });

    it("a subgraph's input mapping that pushes onto the parent's list is refused, naming the subgraph node", async () => {
      const app = withChild({ inputPushes: true });
      const error = await caught(() => app.run({ thread: 't' }));
      expect(StateMutationError.is(error)).toBe(true);
      expect((error as StateMutationError).nodes).toEqual(['research']);
      expect(await app.getState({ thread: 't' })).toMatchObject({ log: ['planned'], messages: [] });
    });
  });

  it('replay reports a node that now changes a list in place as the run would refuse it, and goes on from the stored state', async () => {
    const build = (inPlace: boolean) =>
      graph(State)
        .node('a', (s) => {
          if (inPlace) (s.messages as string[]).push('a');
          return { messages: ['a'] };
        })
        .node('b', (s) => ({ log: [`b saw ${s.messages.length}`] }))
        .edge(START, 'a')
        .edge('a', 'b')
        .edge('b', END)
        .compile({ engine: ctx.engine });
    await build(false).run({ thread: 't' });
    const report = await build(true).replay({ thread: 't', from: 0 });
    const [a, b] = report.steps;
    expect(a).toMatchObject({ nodes: ['a'], same: false });
    expect(a!.divergences).toEqual([expect.objectContaining({ node: 'a', kind: 'threw', reason: expect.stringContaining('changed in place') })]);
    // The next step replays from the stored state, not from one carrying the push.
    expect(b).toMatchObject({ nodes: ['b'], same: true });
  });
});
