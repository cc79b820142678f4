/**
 * @module runtime/builder
 * The graph builder: nodes, edges, conditional edges, `START` and `END`.
 * `compile()` checks the graph and binds it to an engine, giving an {@link App}.
 * What it builds is a {@link GraphSpec} (runtime/graph-spec): the pure description
 * the runtime reads.
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
import { GraphDefinitionError, UnknownNodeError } from '../errors.js';
import type { StateSchema, StateOf, UpdateOf } from '../state/schema.js';
import { App, type CompileOptions } from './app.js';
import { END, START, type ChildSpec, type GraphSpec, type NodeOptions, type NodeSpec, type RouteSpec, type TaskFn } from './graph-spec.js';
import { checkRetryPolicy, type RetryPolicy } from './retry.js';
import { checkSharedFields, type SubgraphOptions } from './subgraph.js';
import type { NodeContext } from './task-scope.js';
import { unknownOption } from '../internal/option-keys.js';

export { START, END };
export type { NodeOptions, GraphSpec };

/** A node: reads the state, returns the model fields it writes (or nothing). */
export type NodeFn<S extends StateSchema> = (
  state: StateOf<S>,
  ctx: NodeContext,
) => UpdateOf<S> | void | undefined | Promise<UpdateOf<S> | void | undefined>;

/** Chooses the next node(s) from the state after a step. Must be a pure function of the state. */
export type RouteFn<S extends StateSchema, N extends string> = (state: StateOf<S>) => N | typeof END | readonly (N | typeof END)[];

/**
 * What a subgraph node can run: a graph builder, or a compiled app (whose own
 * recursion limit, retry policy and snapshot cadence the child run keeps). Each hands
 * over its schema and the spec of its graph.
 */
export interface SubgraphSource<C extends StateSchema> {
  readonly schema: C;
  /** The child graph's spec and the settings its runs keep. */
  toSubgraph(): { spec: GraphSpec; recursionLimit?: number; retry?: Partial<RetryPolicy>; snapshotEvery?: number };
}

/**
 * Builds a graph over a state schema: nodes, edges, conditional routes and subgraphs.
 * Each method returns the builder; `compile` checks the graph and returns an {@link App}.
 *
 * @example
 * ```ts
 * const app = graph(State)
 *   .node('classify', classify)
 *   .node('answer', answer)
 *   .node('escalate', escalate, { interruptBefore: true })
 *   .edge(START, 'classify')
 *   .conditionalEdge('classify', (s) => (s.urgent ? 'escalate' : 'answer'))
 *   .edge('answer', END)
 *   .edge('escalate', END)
 *   .compile({ engine });
 * ```
 */
const NODE_OPTION_KEYS = ['retry', 'interruptBefore', 'interruptAfter'];
const SUBGRAPH_OPTION_KEYS = ['share', 'input', 'output', ...NODE_OPTION_KEYS];

/**
 * A node's or a subgraph's options: only the keys it takes (a misspelt `retyr` or
 * `interuptBefore` would run the node without the policy or the pause asked for), and
 * pauses that are a flag or a function of the state.
 */
function checkNodeOptions(what: string, options: unknown, known: readonly string[]): void {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) throw new GraphDefinitionError(`${what} takes an options object, not ${String(options)}.`);
  const unknown = unknownOption(what, options, known);
  if (unknown) throw new GraphDefinitionError(unknown);
  for (const pause of ['interruptBefore', 'interruptAfter'] as const) {
    const value = (options as Record<string, unknown>)[pause];
    if (value !== undefined && typeof value !== 'boolean' && typeof value !== 'function') throw new GraphDefinitionError(`${what}: ${pause} must be true, false or a function of the state, not ${String(value)}.`);
  }
}

export class GraphBuilder<S extends StateSchema, N extends string = never> {
  private readonly nodes = new Map<string, NodeSpec>();
  private readonly edges = new Map<string, string[]>();
  private readonly routes = new Map<string, RouteFn<S, string>>();
  private readonly routeTargets = new Map<string, readonly string[]>();

  constructor(readonly schema: S) {}

  /** Adds a node. Names must be unique and may not be START or END. */
  node<M extends string>(name: M, fn: NodeFn<S>, options: NodeOptions = {}): GraphBuilder<S, N | M> {
    this.checkName(name);
    if (typeof fn !== 'function') throw new GraphDefinitionError(`node "${name}" takes the function that runs it, not ${String(fn)}.`);
    checkNodeOptions(`node "${name}"`, options, NODE_OPTION_KEYS);
    checkRetryPolicy(`node "${name}"`, options.retry);
    this.nodes.set(name, { name, fn: fn as TaskFn, options, order: this.nodes.size });
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
    child: SubgraphSource<C>,
    options: SubgraphOptions<S, C> = {},
  ): GraphBuilder<S, N | M> {
    this.checkName(name);
    checkNodeOptions(`subgraph "${name}"`, options, SUBGRAPH_OPTION_KEYS);
    for (const mapping of ['input', 'output'] as const) {
      if (options[mapping] !== undefined && typeof options[mapping] !== 'function') throw new GraphDefinitionError(`subgraph "${name}": ${mapping} must be a function, not ${String(options[mapping])}.`);
    }
    checkRetryPolicy(`subgraph "${name}"`, options.retry);
    const share = options.share === true;
    if (share) checkSharedFields(name, this.schema, child.schema);
    const { spec: childGraph, ...settings } = child.toSubgraph();
    const spec: ChildSpec = {
      schema: child.schema,
      spec: childGraph,
      share,
      ...(!share && options.input ? { input: options.input as ChildSpec['input'] } : {}),
      ...(!share && options.output ? { output: options.output as ChildSpec['output'] } : {}),
      ...(settings.recursionLimit !== undefined ? { recursionLimit: settings.recursionLimit } : {}),
      ...(settings.retry !== undefined ? { retry: settings.retry } : {}),
      ...(settings.snapshotEvery !== undefined ? { snapshotEvery: settings.snapshotEvery } : {}),
    };
    const run: TaskFn = () => {
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
    if (typeof name !== 'string' || name === '') throw new GraphDefinitionError(`a node's name is a non-empty string, not ${JSON.stringify(name) ?? String(name)}.`);
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

  /**
   * After `from` runs, `route(state)` names the next node(s) (or END). `targets`
   * declares what it may answer, so the graph's stored description (what the web
   * inspector draws) has those edges; the runtime does not restrict the route to them.
   *
   * @example
   * ```ts
   * graph(State).conditionalEdge('classify', (s) => (s.urgent ? 'escalate' : 'answer'), { targets: ['escalate', 'answer'] });
   * ```
   */
  conditionalEdge(from: N | typeof START, route: RouteFn<S, N>, options: { targets?: readonly (N | typeof END)[] } = {}): this {
    if (this.routes.has(from)) throw new GraphDefinitionError(`node "${from}" already has a conditional edge.`);
    this.routes.set(from, route as RouteFn<S, string>);
    if (options.targets) this.routeTargets.set(from, [...options.targets]);
    return this;
  }

  /** Checks the graph and binds it to an engine. */
  compile(options: CompileOptions): App<S> {
    return new App(this.schema, this.check(), options);
  }

  /** The graph as a child of a subgraph node (see {@link SubgraphSource}). */
  toSubgraph(): { spec: GraphSpec } {
    return { spec: this.check() };
  }

  /** Checks the graph (every edge names a node, an entry, an exit from every node) and returns its immutable shape. */
  check(): GraphSpec {
    for (const [from, targets] of this.edges) {
      if (from !== START && !this.nodes.has(from)) throw new UnknownNodeError(from, 'as the source of an edge');
      for (const to of targets) if (to !== END && !this.nodes.has(to)) throw new UnknownNodeError(to, `as the target of an edge from "${from}"`);
    }
    for (const from of this.routes.keys()) {
      if (from !== START && !this.nodes.has(from)) throw new UnknownNodeError(from, 'as the source of a conditional edge');
      for (const to of this.routeTargets.get(from) ?? []) if (to !== END && !this.nodes.has(to)) throw new UnknownNodeError(to, `as a declared target of the conditional edge from "${from}"`);
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
      routes: new Map(this.routes) as unknown as ReadonlyMap<string, RouteSpec>,
      ...(this.routeTargets.size ? { routeTargets: new Map(this.routeTargets) } : {}),
    };
  }
}

/**
 * Starts a graph over `schema`: add nodes and edges, then `compile` it onto an engine.
 *
 * @example
 * ```ts
 * const app = graph(State)
 *   .node('draft', async (s, ctx) => ({ text: await ctx.record('model', () => callModel(s.topic)) }))
 *   .edge(START, 'draft')
 *   .edge('draft', END)
 *   .compile({ engine: sqlite('./cairn.db') });
 * ```
 */
export function graph<S extends StateSchema>(schema: S): GraphBuilder<S> {
  return new GraphBuilder(schema);
}
