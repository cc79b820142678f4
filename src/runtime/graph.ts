/**
 * @module runtime/graph
 * The graph builder: nodes, edges, conditional edges, `START` and `END`.
 * `compile()` checks the graph and binds it to an engine, giving an {@link App}.
 *
 * A superstep runs every node scheduled for it concurrently; their writes merge
 * through the reducers in graph order (the order nodes were added), then task
 * index, never in arrival order. The next superstep runs the union of the
 * successors of the nodes that ran, in graph order.
 *
 * @example
 * ```ts
 * const app = graph(State)
 *   .node('plan', async (s) => ({ plan: 'search' }))
 *   .node('search', async (s, ctx) => ({ hits: await ctx.record('search', () => search(s.plan)) }))
 *   .edge(START, 'plan')
 *   .conditionalEdge('plan', (s) => (s.plan === 'search' ? 'search' : END))
 *   .edge('search', END)
 *   .compile({ engine: sqlite('./cairn.db') });
 * ```
 */
import { GraphDefinitionError, UnknownNodeError, type ErrorPlace } from '../errors.js';
import type { StateSchema, StateOf, UpdateOf } from '../state/schema.js';
import type { NodeContext } from './context.js';
import type { RetryPolicy } from './retry.js';
import { App, type CompileOptions } from './app.js';
import { checkSharedFields, type ChildSpec, type SubgraphOptions } from './subgraph.js';

/** The graph's entry. */
export const START = '__start__';
/** The graph's exit. */
export const END = '__end__';

/** A node: reads the state, returns the model fields it writes (or nothing). */
export type NodeFn<S extends StateSchema> = (
  state: StateOf<S>,
  ctx: NodeContext,
) => UpdateOf<S> | void | undefined | Promise<UpdateOf<S> | void | undefined>;

export interface NodeOptions {
  /** Retry policy of this node (overrides the graph's). */
  retry?: Partial<RetryPolicy>;
  /** Pause before this node runs; the run stops `interrupted` until `resume`. A function gives the payload. */
  interruptBefore?: boolean | ((state: never) => unknown);
  /** Pause after this node's step commits. A function gives the payload. */
  interruptAfter?: boolean | ((state: never) => unknown);
}

/** Chooses the next node(s) from the state after a step. Must be a pure function of the state. */
export type RouteFn<S extends StateSchema, N extends string> = (state: StateOf<S>) => N | typeof END | readonly (N | typeof END)[];

export interface NodeSpec {
  name: string;
  fn: NodeFn<StateSchema>;
  options: NodeOptions;
  /** Position in graph order: the merge order of a superstep. */
  order: number;
  /** Set for a subgraph node: the child graph it runs in a namespace of its own. */
  child?: ChildSpec;
}

/** The checked, immutable shape of a graph. */
export interface GraphSpec {
  nodes: ReadonlyMap<string, NodeSpec>;
  /** Static successors of START and of every node. */
  edges: ReadonlyMap<string, readonly string[]>;
  routes: ReadonlyMap<string, RouteFn<StateSchema, string>>;
}

/** Builds a graph over a state schema. */
export class GraphBuilder<S extends StateSchema, N extends string = never> {
  private readonly nodes = new Map<string, NodeSpec>();
  private readonly edges = new Map<string, string[]>();
  private readonly routes = new Map<string, RouteFn<S, string>>();

  constructor(readonly schema: S) {}

  /** Adds a node. Names must be unique and may not be START or END. */
  node<M extends string>(name: M, fn: NodeFn<S>, options: NodeOptions = {}): GraphBuilder<S, N | M> {
    this.checkName(name);
    this.nodes.set(name, { name, fn: fn as unknown as NodeFn<StateSchema>, options, order: this.nodes.size });
    return this as unknown as GraphBuilder<S, N | M>;
  }

  /**
   * Adds a node that runs `child` (a graph builder, or a compiled app whose settings
   * it keeps) as a child run, checkpointed in a namespace of its own inside the
   * thread. Isolated by default: the child starts from `input(state)` and the parent
   * sees only what `output(result, state)` returns. With `share: true` the child starts
   * from the parent's values of its fields and its changes go back through the
   * parent's reducers. An interrupt inside the child interrupts the thread; `resume`
   * answers it by id and the child goes on where it stopped.
   *
   * @example
   * ```ts
   * graph(Parent)
   *   .subgraph('research', researchGraph, {
   *     input: (s) => ({ question: s.topic }),
   *     output: (r) => ({ notes: [r.answer] }),
   *   })
   * ```
   */
  subgraph<M extends string, C extends StateSchema>(
    name: M,
    child: GraphBuilder<C, string> | App<C>,
    options: SubgraphOptions<S, C> = {},
  ): GraphBuilder<S, N | M> {
    this.checkName(name);
    const share = options.share === true;
    if (share) checkSharedFields(name, this.schema, child.schema);
    const compiled = child instanceof App ? child.options : undefined;
    const spec: ChildSpec = {
      schema: child.schema,
      spec: child instanceof App ? child.spec : child.check(),
      share,
      ...(!share && options.input ? { input: options.input as ChildSpec['input'] } : {}),
      ...(!share && options.output ? { output: options.output as ChildSpec['output'] } : {}),
      ...(compiled?.recursionLimit !== undefined ? { recursionLimit: compiled.recursionLimit } : {}),
      ...(compiled?.retry !== undefined ? { retry: compiled.retry } : {}),
      ...(compiled?.snapshotEvery !== undefined ? { snapshotEvery: compiled.snapshotEvery } : {}),
    };
    const run: NodeFn<StateSchema> = () => {
      throw new GraphDefinitionError(`subgraph node "${name}" is run by the runtime, not called.`);
    };
    const nodeOptions: NodeOptions = {
      ...(options.retry ? { retry: options.retry } : {}),
      ...(options.interruptBefore ? { interruptBefore: options.interruptBefore as NodeOptions['interruptBefore'] } : {}),
      ...(options.interruptAfter ? { interruptAfter: options.interruptAfter as NodeOptions['interruptAfter'] } : {}),
    };
    this.nodes.set(name, { name, fn: run, options: nodeOptions, order: this.nodes.size, child: spec });
    return this as unknown as GraphBuilder<S, N | M>;
  }

  private checkName(name: string): void {
    if (name === START || name === END) throw new GraphDefinitionError(`"${name}" is reserved.`);
    if (this.nodes.has(name)) throw new GraphDefinitionError(`node "${name}" is added twice.`);
    if (name.includes('|') || name.includes('@')) throw new GraphDefinitionError(`node "${name}": names may not contain "|" or "@".`);
  }

  /** After `from` runs, `to` runs in the next superstep. */
  edge(from: N | typeof START, to: N | typeof END): this {
    const list = this.edges.get(from) ?? [];
    if (!list.includes(to)) list.push(to);
    this.edges.set(from, list);
    return this;
  }

  /** After `from` runs, `route(state)` names the next node(s) (or END). */
  conditionalEdge(from: N | typeof START, route: RouteFn<S, N>): this {
    if (this.routes.has(from)) throw new GraphDefinitionError(`node "${from}" already has a conditional edge.`);
    this.routes.set(from, route as RouteFn<S, string>);
    return this;
  }

  /** Checks the graph and binds it to an engine. */
  compile(options: CompileOptions): App<S> {
    return new App(this.schema, this.check(), options);
  }

  /** Checks the graph (every edge names a node, an entry, an exit from every node) and returns its immutable shape. */
  check(): GraphSpec {
    for (const [from, targets] of this.edges) {
      if (from !== START && !this.nodes.has(from)) throw new UnknownNodeError(from, 'as the source of an edge');
      for (const to of targets) if (to !== END && !this.nodes.has(to)) throw new UnknownNodeError(to, `as the target of an edge from "${from}"`);
    }
    for (const from of this.routes.keys()) {
      if (from !== START && !this.nodes.has(from)) throw new UnknownNodeError(from, 'as the source of a conditional edge');
    }
    if (!this.edges.has(START) && !this.routes.has(START)) {
      throw new GraphDefinitionError('the graph has no entry: add .edge(START, "<first node>").');
    }
    for (const name of this.nodes.keys()) {
      if (!this.edges.has(name) && !this.routes.has(name)) {
        throw new GraphDefinitionError(`node "${name}" has no outgoing edge: add .edge("${name}", END) if it is a last step.`);
      }
    }
    return {
      nodes: new Map(this.nodes),
      edges: new Map([...this.edges].map(([k, v]) => [k, [...v]])),
      routes: new Map(this.routes) as unknown as ReadonlyMap<string, RouteFn<StateSchema, string>>,
    };
  }
}

/** Starts a graph over `schema`. */
export function graph<S extends StateSchema>(schema: S): GraphBuilder<S> {
  return new GraphBuilder(schema);
}

/**
 * The nodes of the next superstep after `ran` ran, in graph order: static
 * successors plus what conditional edges answer for `state`.
 */
export function nextNodes(spec: GraphSpec, ran: readonly string[], state: unknown, place?: ErrorPlace): string[] {
  const next = new Set<string>();
  for (const from of ran) {
    for (const to of spec.edges.get(from) ?? []) if (to !== END) next.add(to);
    const route = spec.routes.get(from);
    if (route) {
      const answer = route(state as never);
      for (const to of Array.isArray(answer) ? answer : [answer]) {
        if (to === END) continue;
        if (!spec.nodes.has(to)) throw new UnknownNodeError(to, `returned by the conditional edge of "${from}"`, place);
        next.add(to);
      }
    }
  }
  return [...next].sort((a, b) => (spec.nodes.get(a)!.order - spec.nodes.get(b)!.order));
}
