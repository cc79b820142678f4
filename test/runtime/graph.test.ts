/**
 * The graph runtime: static and conditional edges (single and
 * list answers, END), supersteps that run their nodes concurrently and merge their
 * writes in graph order, definition errors at compile time, unknown nodes answered
 * at run time, the recursion limit (the thread stays resumable) and a stored next
 * node the graph no longer has. Every test runs on memory and on SQLite.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { GraphDefinitionError, GraphMismatchError, InvalidOptionError, RecursionLimitError, UnknownNodeError } from '../../src/errors.js';
import { defineState } from '../../src/state/schema.js';
import { field } from '../../src/state/fields.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import { bodies, caught, ENGINES, gate, sleep, useEngine, within } from './engines.js';

const fast = { maxAttempts: 1, initialDelayMs: 0 };

const State = defineState({
  fields: {
    route: field.model(z.string(), { default: '' }),
    n: field.model(z.number(), { default: 0 }),
    trail: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
  },
});

describe.each(ENGINES)('graph runtime on %s', (name) => {
  const ctx = useEngine(name);

  describe('edges', () => {
    it('static edges run the nodes in sequence, one position per step', async () => {
      const app = graph(State)
        .node('a', () => ({ trail: ['a'] }))
        .node('b', () => ({ trail: ['b'] }))
        .node('c', () => ({ trail: ['c'] }))
        .edge(START, 'a')
        .edge('a', 'b')
        .edge('b', 'c')
        .edge('c', END)
        .compile({ engine: ctx.engine, retry: fast });
      const result = await app.run({ thread: 't' });
      expect(result).toMatchObject({ status: 'completed', seq: 3 });
      expect(result.state.trail).toEqual(['a', 'b', 'c']);
      const all = await bodies(ctx.engine, 't');
      expect(all.map((b) => [b.kind, b.nodes, b.next])).toEqual([
        ['input', [], ['a']],
        ['step', ['a'], ['b']],
        ['step', ['b'], ['c']],
        ['step', ['c'], []],
      ]);
    });

    it('a conditional edge with a single answer picks the node named by the state', async () => {
      const build = () =>
        graph(State)
          .node('decide', () => ({}))
          .node('left', () => ({ trail: ['left'] }))
          .node('right', () => ({ trail: ['right'] }))
          .edge(START, 'decide')
          .conditionalEdge('decide', (s) => (s.route === 'L' ? 'left' : 'right'))
          .edge('left', END)
          .edge('right', END)
          .compile({ engine: ctx.engine, retry: fast });
      expect((await build().run({ thread: 'l', input: { route: 'L' } })).state.trail).toEqual(['left']);
      expect((await build().run({ thread: 'r', input: { route: 'R' } })).state.trail).toEqual(['right']);
    });

    it('a conditional edge answering END stops the run', async () => {
      const app = graph(State)
        .node('a', () => ({ trail: ['a'] }))
        .node('never', () => ({ trail: ['never'] }))
        .edge(START, 'a')
        .conditionalEdge('a', () => END)
        .edge('never', END)
        .compile({ engine: ctx.engine, retry: fast });
      const result = await app.run({ thread: 't' });
      expect(result.status).toBe('completed');
      expect(result.state.trail).toEqual(['a']);
      expect((await bodies(ctx.engine, 't')).at(-1)!.next).toEqual([]);
    });

    it('a conditional edge with a list answer fans out to every named node (END in the list is ignored)', async () => {
      const app = graph(State)
        .node('split', () => ({}))
        .node('x', () => ({ trail: ['x'] }))
        .node('y', () => ({ trail: ['y'] }))
        .node('z', () => ({ trail: ['z'] }))
        .edge(START, 'split')
        .conditionalEdge('split', () => ['z', END, 'x'])
        .edge('x', END)
        .edge('y', END)
        .edge('z', END)
        .compile({ engine: ctx.engine, retry: fast });
      const result = await app.run({ thread: 't' });
      // Graph order (x before z), not answer order.
      expect(result.state.trail).toEqual(['x', 'z']);
      expect((await bodies(ctx.engine, 't'))[2]!.nodes).toEqual(['x', 'z']);
    });

    it('a conditional edge can loop back until the state says stop', async () => {
      const app = graph(State)
        .node('inc', (s) => ({ n: s.n + 1 }))
        .edge(START, 'inc')
        .conditionalEdge('inc', (s) => (s.n < 4 ? 'inc' : END))
        .compile({ engine: ctx.engine, retry: fast });
      const result = await app.run({ thread: 't' });
      expect(result.state.n).toBe(4);
      expect(result.seq).toBe(4);
    });

    it('a conditional edge answering an unknown node raises UnknownNodeError and commits nothing', async () => {
      const app = graph(State)
        .node('a', () => ({ n: 1 }))
        .edge(START, 'a')
        .conditionalEdge('a', () => 'ghost' as never)
        .compile({ engine: ctx.engine, retry: fast });
      const error = await caught(() => app.run({ thread: 't' }));
      expect(UnknownNodeError.is(error)).toBe(true);
      expect(error.code).toBe('ERR_UNKNOWN_NODE');
      expect((error as UnknownNodeError).node).toBe('ghost');
      const thread = await app.getThread({ thread: 't' });
      expect(thread!.head).toBe(0);
      expect(thread!.status).toBe('failed');
    });
  });

  describe('supersteps', () => {
    it('fan-out runs the nodes of a superstep concurrently: each starts before the other finishes', async () => {
      const started = { b: gate(), c: gate() };
      const order: string[] = [];
      const app = graph(State)
        .node('a', () => ({}))
        .node('b', async () => {
          order.push('b:start');
          started.b.open();
          // Only returns once c has started too: a sequential runner would time out here.
          await within(started.c.promise, 5_000, 'c never started while b was running');
          order.push('b:end');
          return { trail: ['b'] };
        })
        .node('c', async () => {
          order.push('c:start');
          started.c.open();
          await within(started.b.promise, 5_000, 'b never started while c was running');
          order.push('c:end');
          return { trail: ['c'] };
        })
        .edge(START, 'a')
        .edge('a', 'b')
        .edge('a', 'c')
        .edge('b', END)
        .edge('c', END)
        .compile({ engine: ctx.engine, retry: fast });
      const result = await app.run({ thread: 't' });
      expect(order.indexOf('b:start')).toBeLessThan(order.indexOf('c:end'));
      expect(order.indexOf('c:start')).toBeLessThan(order.indexOf('b:end'));
      expect(result.state.trail).toEqual(['b', 'c']);
      expect((await bodies(ctx.engine, 't'))[2]!.nodes).toEqual(['b', 'c']);
    });

    it('fan-in: a node reached from two branches of one superstep runs once, in the next superstep', async () => {
      let joins = 0;
      const app = graph(State)
        .node('b', () => ({ trail: ['b'] }))
        .node('c', () => ({ trail: ['c'] }))
        .node('join', (s) => {
          joins++;
          return { trail: [`join saw ${s.trail.join('+')}`] };
        })
        .edge(START, 'b')
        .edge(START, 'c')
        .edge('b', 'join')
        .edge('c', 'join')
        .edge('join', END)
        .compile({ engine: ctx.engine, retry: fast });
      const result = await app.run({ thread: 't' });
      expect(joins).toBe(1);
      expect(result.state.trail).toEqual(['b', 'c', 'join saw b+c']);
      expect((await bodies(ctx.engine, 't')).map((b) => b.nodes)).toEqual([[], ['b', 'c'], ['join']]);
    });

    it('writes of one superstep merge in graph order, not in arrival order nor by name', async () => {
      // Graph order: zeta, alpha, mid. Arrival order: mid, alpha, zeta.
      const app = graph(State)
        .node('zeta', async () => {
          await sleep(60);
          return { trail: ['zeta'] };
        })
        .node('alpha', async () => {
          await sleep(30);
          return { trail: ['alpha'] };
        })
        .node('mid', () => ({ trail: ['mid'] }))
        .edge(START, 'mid')
        .edge(START, 'alpha')
        .edge(START, 'zeta')
        .edge('zeta', END)
        .edge('alpha', END)
        .edge('mid', END)
        .compile({ engine: ctx.engine, retry: fast });
      const result = await app.run({ thread: 't' });
      expect(result.state.trail).toEqual(['zeta', 'alpha', 'mid']);
      expect((await bodies(ctx.engine, 't'))[1]!.nodes).toEqual(['zeta', 'alpha', 'mid']);
      expect((await app.getState({ thread: 't' })).trail).toEqual(['zeta', 'alpha', 'mid']);
    });

    it('every node of a superstep sees the state of the position the superstep starts from', async () => {
      const seen: Record<string, number> = {};
      const app = graph(State)
        .node('p', async (s) => {
          await sleep(10);
          seen.p = s.n;
          return { trail: ['p'] };
        })
        .node('q', (s) => {
          seen.q = s.n;
          return { n: s.n + 100 };
        })
        .edge(START, 'p')
        .edge(START, 'q')
        .edge('p', END)
        .edge('q', END)
        .compile({ engine: ctx.engine, retry: fast });
      await app.run({ thread: 't', input: { n: 1 } });
      expect(seen).toEqual({ p: 1, q: 1 });
    });
  });

  describe('definition errors', () => {
    it('an edge to a missing node is an UnknownNodeError at compile time', () => {
      const builder = graph(State)
        .node('a', () => ({}))
        .edge(START, 'a')
        .edge('a', 'missing' as never);
      expect(() => builder.compile({ engine: ctx.engine })).toThrow(UnknownNodeError);
      try {
        builder.compile({ engine: ctx.engine });
      } catch (error) {
        expect((error as UnknownNodeError).node).toBe('missing');
        expect((error as UnknownNodeError).code).toBe('ERR_UNKNOWN_NODE');
      }
    });

    it('an edge from a missing node is an UnknownNodeError at compile time', () => {
      const builder = graph(State)
        .node('a', () => ({}))
        .edge(START, 'a')
        .edge('a', END)
        .edge('ghost' as never, 'a');
      expect(() => builder.compile({ engine: ctx.engine })).toThrow(UnknownNodeError);
    });

    it('compile without an engine is InvalidOptionError saying one is needed, not a TypeError', () => {
      const builder = graph(State)
        .node('a', () => ({}))
        .edge(START, 'a')
        .edge('a', END);
      for (const options of [{}, { engine: null }, { engine: 'sqlite' }, undefined]) {
        let error: unknown;
        try {
          builder.compile(options as never);
        } catch (e) {
          error = e;
        }
        expect(InvalidOptionError.is(error)).toBe(true);
        expect((error as Error).message).toMatch(/needs an engine/);
      }
    });

    it('a node or subgraph given an option it does not take, a pause that is not a flag or function, a name that is empty or a body that is not a function is a GraphDefinitionError naming it', () => {
      const child = graph(State).node('c', () => ({})).edge(START, 'c').edge('c', END);
      const loose = graph(State) as unknown as { node: (...args: unknown[]) => unknown; subgraph: (...args: unknown[]) => unknown };
      const cases: [RegExp, () => unknown][] = [
        [/node "a": unknown option "retyr"/, () => loose.node('a', () => ({}), { retyr: { maxAttempts: 2 } })],
        [/node "a": interruptBefore must be true, false or a function/, () => loose.node('a', () => ({}), { interruptBefore: 'always' })],
        [/node "a" takes the function that runs it/, () => loose.node('a', { run: () => ({}) })],
        [/a node's name is a non-empty string/, () => loose.node('', () => ({}))],
        [/subgraph "s": unknown option "inputs"/, () => loose.subgraph('s', child, { inputs: () => ({}) })],
        [/subgraph "s": output must be a function/, () => loose.subgraph('s', child, { output: { n: 1 } })],
      ];
      for (const [message, make] of cases) {
        expect(make, String(message)).toThrow(GraphDefinitionError);
        expect(make).toThrow(message);
      }
    });

    it('a graph without an entry is a GraphDefinitionError', () => {
      const builder = graph(State).node('a', () => ({})).edge('a', END);
      expect(() => builder.compile({ engine: ctx.engine })).toThrow(GraphDefinitionError);
    });

    it('a node without an outgoing edge is a GraphDefinitionError naming it', () => {
      const builder = graph(State)
        .node('a', () => ({}))
        .node('dead_end', () => ({}))
        .edge(START, 'a')
        .edge('a', 'dead_end');
      expect(() => builder.compile({ engine: ctx.engine })).toThrow(GraphDefinitionError);
      expect(() => builder.compile({ engine: ctx.engine })).toThrow(/dead_end/);
    });

    it.each([
      ['START as a node name', () => graph(State).node(START, () => ({}))],
      ['END as a node name', () => graph(State).node(END, () => ({}))],
      ['a node added twice', () => graph(State).node('a', () => ({})).node('a', () => ({}))],
      ['a second conditional edge from one node', () => graph(State).node('a', () => ({})).conditionalEdge('a', () => END).conditionalEdge('a', () => END)],
    ])('%s is a GraphDefinitionError', (_what, build) => {
      expect(build).toThrow(GraphDefinitionError);
    });
  });

  describe('recursion limit', () => {
    const looping = () =>
      graph(State)
        .node('inc', (s) => ({ n: s.n + 1 }))
        .edge(START, 'inc')
        .conditionalEdge('inc', (s) => (s.n < 10 ? 'inc' : END))
        .compile({ engine: ctx.engine, retry: fast, recursionLimit: 3 });

    it('raises RecursionLimitError after recursionLimit supersteps; the thread is failed with its steps kept', async () => {
      const app = looping();
      const error = await caught(() => app.run({ thread: 't' }));
      expect(RecursionLimitError.is(error)).toBe(true);
      expect(error.code).toBe('ERR_RECURSION_LIMIT');
      expect((error as RecursionLimitError).limit).toBe(3);
      const thread = await app.getThread({ thread: 't' });
      expect(thread!.status).toBe('failed');
      expect(thread!.lastError?.code).toBe('ERR_RECURSION_LIMIT');
      expect(thread!.head).toBe(3);
      expect((await app.getState({ thread: 't' })).n).toBe(3);
    });

    it('the failed thread is resumable: a run with a higher recursionLimit finishes it', async () => {
      const app = looping();
      await expect(app.run({ thread: 't' })).rejects.toMatchObject({ code: 'ERR_RECURSION_LIMIT' });
      const result = await app.run({ thread: 't', recursionLimit: 50 });
      expect(result.status).toBe('completed');
      expect(result.state.n).toBe(10);
      expect(result.seq).toBe(10);
      expect((await app.verify({ thread: 't' })).ok).toBe(true);
    });
  });

  describe('graph changes between runs', () => {
    it('GraphMismatchError when the stored next node no longer exists in the graph', async () => {
      const graphA = graph(State)
        .node('a', () => ({ trail: ['a'] }))
        .node('b', () => {
          throw new Error('b fails for good');
        })
        .edge(START, 'a')
        .edge('a', 'b')
        .edge('b', END)
        .compile({ engine: ctx.engine, retry: { maxAttempts: 2, initialDelayMs: 0 } });
      await expect(graphA.run({ thread: 't' })).rejects.toMatchObject({ code: 'ERR_NODE_FAILED' });
      expect((await graphA.getThread({ thread: 't' }))!.status).toBe('failed');

      const graphB = graph(State)
        .node('a', () => ({ trail: ['a'] }))
        .node('c', () => ({ trail: ['c'] }))
        .edge(START, 'a')
        .edge('a', 'c')
        .edge('c', END)
        .compile({ engine: ctx.reopen(), retry: fast });
      const error = await caught(() => graphB.run({ thread: 't' }));
      expect(GraphMismatchError.is(error)).toBe(true);
      expect(error.code).toBe('ERR_GRAPH_MISMATCH');
      expect((error as GraphMismatchError).missing).toEqual(['b']);
      const thread = await graphB.getThread({ thread: 't' });
      expect(thread!.head).toBe(1);
      expect(thread!.status).toBe('failed');
      // A graph that has the node again resumes the thread.
      const graphC = graph(State)
        .node('a', () => ({ trail: ['a'] }))
        .node('b', () => ({ trail: ['b fixed'] }))
        .edge(START, 'a')
        .edge('a', 'b')
        .edge('b', END)
        .compile({ engine: ctx.reopen(), retry: fast });
      expect((await graphC.run({ thread: 't' })).state.trail).toEqual(['a', 'b fixed']);
    });
  });
});
