/**
 * @module inspect/graph
 * A thread's graph, without the application's code: the description the runtime
 * kept in the store for the thread's graph (`metadata.graph`; see
 * runtime/graph-description), and where the thread's run is in it now: the nodes
 * running, waiting, interrupted or failed, in the root graph and inside child runs.
 *
 * @example
 * ```ts
 * const { description, current } = await threadGraph(engine, 'post');
 * for (const c of current) console.log(c.path.join(' › '), c.node, c.state);
 * ```
 */
import type { Engine } from '../contracts/engine.js';
import type { ThreadStatus } from '../contracts/threads.js';
import { ThreadNotFoundError } from '../errors.js';
import { graphNamespace, type DescribedGraph, type GraphDescription } from '../runtime/graph-description.js';
import { namespaceNodes } from '../runtime/graph-spec.js';
import { positionInfo } from './history.js';

/** What a node is doing now. */
export type NodeActivity = 'running' | 'waiting' | 'interrupted' | 'failed' | 'needs_attention';

/** A node the run is at, in the root graph (`ns` '') or in a child run. */
export interface CurrentNode {
  /** The child run's namespace, '' for the root graph. */
  ns: string;
  /** The subgraph nodes that lead to `ns`, outermost first (empty for the root graph). */
  path: string[];
  node: string;
  state: NodeActivity;
}

/** What {@link threadGraph} returns. */
export interface ThreadGraph {
  thread: string;
  status: ThreadStatus;
  /** The graph's name, from the thread's `metadata.graph` (`default` when absent). */
  name: string;
  /** The stored description, or null when no run of this graph stored one (threads written before it was kept, or by another tool). */
  description: GraphDescription | null;
  /** Its digest (its version), or null. */
  digest: string | null;
  /** How many versions of this graph are stored. */
  versions: number;
  /** When the chosen version was first stored, ms since the epoch, or null. */
  storedAt: number | null;
  /** Where the run is now (empty for a completed thread). */
  current: CurrentNode[];
}

/** Every node name of a described graph and its children, as `ns`-free names. */
function nodeNames(graph: DescribedGraph, into = new Set<string>()): Set<string> {
  for (const n of graph.nodes) {
    into.add(n.name);
    if (n.child) nodeNames(n.child, into);
  }
  return into;
}

/**
 * The graph of thread `threadId` and where its run is. Among several stored versions
 * of the graph's name it picks the one that has the most of the nodes the thread is
 * known to use (where the run is, the head's step and next nodes), the newest among
 * equals: give distinct graphs distinct names (`compile({ name })`) to leave no doubt.
 * ThreadNotFoundError for a missing thread.
 *
 * @example
 * ```ts
 * const graph = await threadGraph(engine, 'cust_42');
 * if (!graph.description) console.log(`no description of graph ${graph.name} is stored: run it once with this version of cairn`);
 * ```
 */
export async function threadGraph(engine: Pick<Engine, 'checkpointer' | 'store'>, threadId: string): Promise<ThreadGraph> {
  const cp = engine.checkpointer;
  const thread = await cp.getThread(threadId);
  if (!thread) throw new ThreadNotFoundError(threadId, { engine: cp.engine });
  const name = typeof thread.metadata.graph === 'string' ? thread.metadata.graph : 'default';

  const current: CurrentNode[] = [];
  const at = (ns: string, node: string, state: NodeActivity) => {
    if (!current.some((c) => c.ns === ns && c.node === node)) current.push({ ns, path: namespaceNodes(ns), node, state });
  };
  /** The pauses (interrupts, waits) of namespace `ns`'s head, followed into the child runs they were raised in. */
  const pausesAt = async (ns: string, seq: number | null, depth: number): Promise<void> => {
    if (seq === null || depth > 32) return;
    const stored = await cp.getPosition(threadId, ns, seq);
    if (!stored) return;
    const head = positionInfo(stored, threadId);
    if (thread.status === 'running') for (const n of head.next) at(ns, n, 'running');
    if (thread.status === 'interrupted') {
      for (const i of head.interrupts) {
        at(ns, i.node, 'interrupted');
        if (i.ns) await pausesAt(i.ns, (await cp.getHead(threadId, i.ns))?.seq ?? null, depth + 1);
      }
    }
    if (thread.status === 'waiting') {
      for (const w of head.waits ?? []) {
        at(ns, w.node, 'waiting');
        const inner = (w as { ns?: string }).ns;
        if (inner) await pausesAt(inner, (await cp.getHead(threadId, inner))?.seq ?? null, depth + 1);
      }
    }
  };
  if (thread.status === 'failed' || thread.status === 'needs_attention') {
    const failures = await cp.listFailures(threadId);
    const last = thread.lastError;
    const failure = failures.filter((f) => f.at === last?.at && f.node === last?.node).at(-1) ?? failures.at(-1);
    const node = last?.node ?? failure?.node;
    if (node) {
      const ns = failure && failure.node === node ? failure.ns : '';
      const path = namespaceNodes(ns);
      // The subgraph nodes around a child run's failure failed with it.
      path.forEach((outer, i) => at(nsPrefix(ns, i), outer, thread.status as NodeActivity));
      at(ns, node, thread.status);
    }
  } else {
    await pausesAt('', thread.head, 0);
  }

  // Names the thread is known to use: where the run is, and the head's step and next nodes.
  const known = new Set(current.map((c) => c.node));
  const headRow = thread.head === null ? null : await cp.getPosition(threadId, '', thread.head);
  if (headRow) for (const n of [...positionInfo(headRow, threadId).nodes, ...positionInfo(headRow, threadId).next]) known.add(n);
  const versions = await engine.store.list<GraphDescription>(graphNamespace(name), { limit: 1000 });
  const own = versions.filter((v) => v.namespace.length === graphNamespace(name).length && v.value && Array.isArray(v.value.nodes));
  // Several graphs may share a name (every graph compiled without one is `default`): the
  // version that has the most of the thread's nodes wins, the newest among equals.
  const score = (g: DescribedGraph) => {
    const names = nodeNames(g);
    return [...known].filter((n) => names.has(n)).length;
  };
  own.sort((a, b) => score(b.value) - score(a.value) || b.createdAt - a.createdAt);
  const chosen = own[0];
  return {
    thread: threadId,
    status: thread.status,
    name,
    description: chosen?.value ?? null,
    digest: chosen?.key ?? null,
    versions: own.length,
    storedAt: chosen?.createdAt ?? null,
    current,
  };
}

/** The namespace of the first `depth` child runs along `ns`: `a:0@3|b:1@0`, 1 → `a:0@3`. */
function nsPrefix(ns: string, depth: number): string {
  return ns.split('|').slice(0, depth).join('|');
}
