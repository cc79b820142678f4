/**
 * @module runtime/graph-spec
 * The pure description of a graph: its nodes, edges and routes, `START` and `END`,
 * and how the next superstep's nodes follow from the ones that ran. Built by
 * `graph(State)…` (runtime/builder), read by the runtime; it imports nothing of the
 * runtime, so everything can depend on it and it on nothing above.
 *
 * A superstep runs every node scheduled for it concurrently; their writes merge
 * through the reducers in graph order (the order nodes were added), then task
 * index, never in arrival order. The next superstep runs the union of the
 * successors of the nodes that ran, in graph order.
 */
import { GraphDefinitionError, InvalidOptionError, UnknownNodeError, type ErrorPlace } from '../errors.js';
import type { StateSchema } from '../state/schema.js';
import type { RetryPolicy } from './retry.js';

/** The graph's entry. */
export const START = '__start__';
/** The graph's exit. */
export const END = '__end__';

/** A node's function as the runtime calls it: the state's view and the task's context in, its writes out. */
export type TaskFn = (state: never, ctx: never) => unknown;

/** Options of a node (`graph(S).node(name, fn, options)`). */
export interface NodeOptions {
  /** Retry policy of this node (overrides the graph's). */
  retry?: Partial<RetryPolicy>;
  /** Pause before this node runs; the run stops `interrupted` until `resume`. A function gives the payload. */
  interruptBefore?: boolean | ((state: never) => unknown);
  /** Pause after this node's step commits. A function gives the payload. */
  interruptAfter?: boolean | ((state: never) => unknown);
}

/** What the runtime keeps of a subgraph node: the child graph, and how its state maps in and out. */
export interface ChildSpec {
  schema: StateSchema;
  spec: GraphSpec;
  share: boolean;
  input?: (state: never) => Record<string, unknown>;
  output?: (result: never, state: never) => Record<string, unknown> | void | undefined;
  /** The child graph's own settings (from its compile() options, when given a compiled app). */
  recursionLimit?: number;
  retry?: Partial<RetryPolicy>;
  snapshotEvery?: number;
}

/** One node of a graph. */
export interface NodeSpec {
  name: string;
  fn: TaskFn;
  options: NodeOptions;
  /** Position in graph order: the merge order of a superstep. */
  order: number;
  /** Set for a subgraph node: the child graph it runs in a namespace of its own. */
  child?: ChildSpec;
}

/**
 * `spec` with the pauses `compile({ interruptBefore, interruptAfter })` lists declared
 * on its nodes, as `.node(name, fn, { interruptBefore: true })` declares them. A node
 * that declares its own pause keeps it (a function of it gives the payload). A name
 * that is no node of the graph is UnknownNodeError: a typo would leave the node
 * unguarded.
 */
export function withDeclaredPauses(spec: GraphSpec, lists: { interruptBefore?: readonly string[]; interruptAfter?: readonly string[] }): GraphSpec {
  const before = lists.interruptBefore ?? [];
  const after = lists.interruptAfter ?? [];
  if (!before.length && !after.length) return spec;
  for (const [option, names] of [['interruptBefore', before], ['interruptAfter', after]] as const) {
    for (const name of names) if (!spec.nodes.has(name)) throw new UnknownNodeError(name, `in compile({ ${option} }): the graph's nodes are ${[...spec.nodes.keys()].map((n) => `"${n}"`).join(', ')}`);
  }
  const nodes = new Map<string, NodeSpec>();
  for (const [name, node] of spec.nodes) {
    const options: NodeOptions = {
      ...node.options,
      ...(before.includes(name) && !node.options.interruptBefore ? { interruptBefore: true } : {}),
      ...(after.includes(name) && !node.options.interruptAfter ? { interruptAfter: true } : {}),
    };
    nodes.set(name, { ...node, options });
  }
  return { ...spec, nodes };
}

/** Chooses the next node(s) from the state after a step (a pure function of the state). */
export type RouteSpec = (state: never) => string | readonly string[];

/** The checked, immutable shape of a graph. */
export interface GraphSpec {
  nodes: ReadonlyMap<string, NodeSpec>;
  /** Static successors of START and of every node. */
  edges: ReadonlyMap<string, readonly string[]>;
  routes: ReadonlyMap<string, RouteSpec>;
  /** The targets a conditional edge declared it may answer (`conditionalEdge(from, route, { targets })`), for descriptions of the graph. */
  routeTargets?: ReadonlyMap<string, readonly string[]>;
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
  return [...next].sort((a, b) => spec.nodes.get(a)!.order - spec.nodes.get(b)!.order);
}

/** The namespace of the child run that task `task` of the superstep starting at `origin` runs in namespace `parent`. */
export function childNamespace(parent: string, task: string, origin: number): string {
  const own = `${task}@${origin}`;
  return parent === '' ? own : `${parent}|${own}`;
}

/** One segment of a child namespace: a node name (no `|` or `@`, as the builder allows), the task index and the origin seq. */
const NAMESPACE_SEGMENT = /^([^|@]+):\d+@\d+$/;

/**
 * The `ns` option of a read (getState, stateAt, history, the inspect functions): ''
 * when omitted, the namespace as given when it is one the runtime could have written.
 * Anything else (`'../x'`, a node name alone, a number) is InvalidOptionError naming
 * the option: it is a malformed argument, not something wrong with the graph.
 */
export function namespaceOption(ns: unknown): string {
  if (ns === undefined || ns === '') return '';
  if (typeof ns === 'string' && ns.split('|').every((segment) => NAMESPACE_SEGMENT.test(segment))) return ns;
  throw new InvalidOptionError(
    `the ns option ${JSON.stringify(ns) ?? String(ns)} is not a checkpoint namespace: pass '' (the root graph, the default) or a child run's namespace as history's children name it (<node>:<index>@<seq>, joined by "|").`,
  );
}

/** The node names along a child namespace, outermost first: `a:0@3|b:1@0` → `['a', 'b']`. */
export function namespaceNodes(ns: string): string[] {
  if (ns === '') return [];
  return ns.split('|').map((segment) => {
    const match = NAMESPACE_SEGMENT.exec(segment);
    if (!match) throw new GraphDefinitionError(`"${ns}" is not a child-run namespace (expected <node>:<index>@<seq>, joined by "|").`);
    return match[1]!;
  });
}

/** The state schema and graph of namespace `ns` of a graph: the root's, or the child graph's of the subgraph nodes it names; undefined when the graph has no such child. */
export function namespaceGraph(schema: StateSchema, spec: GraphSpec, ns: string): { schema: StateSchema; spec: GraphSpec; missing?: string } {
  let current = { schema, spec };
  for (const node of namespaceNodes(ns)) {
    const child = current.spec.nodes.get(node)?.child;
    if (!child) return { ...current, missing: node };
    current = { schema: child.schema, spec: child.spec };
  }
  return current;
}
