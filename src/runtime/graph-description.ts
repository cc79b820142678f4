/**
 * @module runtime/graph-description
 * A graph's shape as JSON, for tools that do not have the application's code: its
 * nodes (with what is declared on them), its edges (a conditional edge's declared
 * targets, or an unknown target when it declared none) and, for a subgraph node,
 * its child graph, nested. {@link describeGraph} builds it from a {@link GraphSpec};
 * {@link publishGraph} keeps it in the cross-thread store under
 * `['cairn', 'graphs', <name>]`, keyed by its digest, with a put-if-absent: once per
 * app instance and graph version, never per step.
 *
 * @example
 * ```ts
 * const description = describeGraph(app.spec);
 * console.log(description.nodes.map((n) => n.name), graphDigest(description));
 * ```
 */
import type { Store } from '../contracts/store.js';
import { sha256Hex } from '../codec/hash.js';
import { VersionConflictError } from '../errors.js';
import { GRAPH_NAMESPACE } from '../internal/graphs.js';
import { hasRules, type RedactionRules } from '../internal/redaction.js';
import { START, type GraphSpec } from './graph-spec.js';

/** One node of a described graph, in graph order. */
export interface DescribedNode {
  name: string;
  /** `subgraph` for a node that runs a child graph (described in `child`). */
  kind: 'node' | 'subgraph';
  /** Declared pauses and a node-level retry policy, when the node has them. */
  interruptBefore?: true;
  interruptAfter?: true;
  retry?: true;
  child?: DescribedGraph;
}

/**
 * An edge: `from` and `to` are node names, `__start__` or `__end__`. A conditional
 * edge (`conditional: true`) has one entry per declared target; one that declared
 * none has a single entry with `to: null` (its targets are known only when it runs).
 */
export interface DescribedEdge {
  from: string;
  to: string | null;
  conditional?: true;
}

/** A graph's nodes and edges (the shape of a child graph too). */
export interface DescribedGraph {
  nodes: DescribedNode[];
  edges: DescribedEdge[];
}

/** A named graph's description, as the runtime stores it (`format` 1). */
export interface GraphDescription extends DescribedGraph {
  format: 1;
  /** The graph's name (`compile({ name })`, default `default`), as threads carry it in `metadata.graph`. */
  name: string;
  /**
   * What the faces that show stored data hide (`compile({ redact })` and the fields
   * declared `redact: true`, of the graph and its child graphs), for tools without the
   * application's code. Absent when nothing is redacted.
   */
  redact?: RedactionRules;
}

/** The shape of `spec`, nodes in graph order, edges by source in graph order (START first). */
function describe(spec: GraphSpec): DescribedGraph {
  const nodes: DescribedNode[] = [...spec.nodes.values()]
    .sort((a, b) => a.order - b.order)
    .map((n) => ({
      name: n.name,
      kind: n.child ? 'subgraph' : 'node',
      ...(n.options.interruptBefore ? { interruptBefore: true as const } : {}),
      ...(n.options.interruptAfter ? { interruptAfter: true as const } : {}),
      ...(n.options.retry ? { retry: true as const } : {}),
      ...(n.child ? { child: describe(n.child.spec) } : {}),
    }));
  const edges: DescribedEdge[] = [];
  for (const from of [START, ...nodes.map((n) => n.name)]) {
    for (const to of spec.edges.get(from) ?? []) edges.push({ from, to });
    if (spec.routes.has(from)) {
      const targets = spec.routeTargets?.get(from);
      if (targets?.length) for (const to of targets) edges.push({ from, to, conditional: true });
      else edges.push({ from, to: null, conditional: true });
    }
  }
  return { nodes, edges };
}

/**
 * The JSON description of graph `spec` named `name`, with the redaction rules its
 * threads' data is shown under, when it has any.
 *
 * @example
 * ```ts
 * const { nodes, edges } = describeGraph(app.spec, app.name);
 * ```
 */
export function describeGraph(spec: GraphSpec, name = 'default', redact?: RedactionRules): GraphDescription {
  return { format: 1, name, ...describe(spec), ...(redact && hasRules(redact) ? { redact } : {}) };
}

/** 32 hex digits of the SHA-256 of the description's JSON (its fields are built in a fixed order): the graph's version. */
export function graphDigest(description: GraphDescription): string {
  return sha256Hex(JSON.stringify(description)).slice(0, 32);
}

/** The store namespace of graph `name`'s descriptions. */
export function graphNamespace(name: string): string[] {
  return [...GRAPH_NAMESPACE, name];
}

/**
 * Keeps `description` in `store` under `['cairn', 'graphs', name]`, keyed by its
 * digest, unless it is there already (a put with `ifVersion: 0`: another process
 * that published the same version first wins, and nothing changes). Resolves with
 * the digest.
 *
 * @example
 * ```ts
 * await publishGraph(engine.store, describeGraph(app.spec, app.name));
 * ```
 */
export async function publishGraph(store: Store, description: GraphDescription): Promise<string> {
  const digest = graphDigest(description);
  try {
    await store.put(graphNamespace(description.name), digest, description, { ifVersion: 0 });
  } catch (error) {
    if (!VersionConflictError.is(error)) throw error;
  }
  return digest;
}

