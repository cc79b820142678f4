/**
 * A thread's graph as the runtime described it (nodes, edges, conditional edges'
 * declared targets, child graphs), drawn as SVG in layers from START to END, with
 * the node the run is at highlighted (running, waiting, interrupted, failed, needs
 * attention). The layout is a longest-path layering over the edges with the cycles'
 * back edges set aside: graphs of agents are small, so nothing cleverer is needed.
 */
import { api } from './api';
import { useApi } from './use-api';
import type { CurrentNode, DescribedGraph, ThreadGraph } from './views-api';
import './views.css';

const START = '__start__';
const END = '__end__';
const NODE_W = 130;
const NODE_H = 34;
const GAP_X = 60;
const GAP_Y = 22;
const PAD = 12;

interface Placed {
  name: string;
  x: number;
  y: number;
  kind: 'start' | 'end' | 'node' | 'subgraph' | 'unknown';
}

/** Layers of `graph`'s nodes: START at 0, each node one past its furthest predecessor along forward edges, END last. */
export function layout(graph: DescribedGraph): { placed: Map<string, Placed>; width: number; height: number; back: Set<string> } {
  const names = [START, ...graph.nodes.map((n) => n.name)];
  const hasUnknown = graph.edges.some((e) => e.to === null);
  const out = new Map<string, string[]>();
  for (const e of graph.edges) {
    const to = e.to ?? `?${e.from}`;
    out.set(e.from, [...(out.get(e.from) ?? []), to]);
  }
  // Back edges: those that close a cycle in a depth-first walk from START, in graph order.
  const back = new Set<string>();
  const state = new Map<string, 'open' | 'done'>();
  const visit = (n: string) => {
    state.set(n, 'open');
    for (const to of out.get(n) ?? []) {
      if (state.get(to) === 'open') back.add(`${n}>${to}`);
      else if (!state.has(to)) visit(to);
    }
    state.set(n, 'done');
  };
  visit(START);
  for (const n of names) if (!state.has(n)) visit(n);

  const rank = new Map<string, number>([[START, 0]]);
  // Longest path over forward edges: relax as many times as there are nodes.
  for (let round = 0; round < names.length + 2; round++) {
    let changed = false;
    for (const [from, targets] of out) {
      const r = rank.get(from);
      if (r === undefined) continue;
      for (const to of targets) {
        if (back.has(`${from}>${to}`) || to === END) continue;
        if ((rank.get(to) ?? -1) < r + 1) {
          rank.set(to, r + 1);
          changed = true;
        }
      }
    }
    if (!changed) break;
  }
  for (const n of names) if (!rank.has(n)) rank.set(n, 1);
  const last = Math.max(...[...rank.values()]) + 1;
  rank.set(END, last);
  const layers = new Map<number, string[]>();
  const order = [...names, ...(hasUnknown ? graph.edges.filter((e) => e.to === null).map((e) => `?${e.from}`) : []), END];
  for (const n of order) {
    const r = rank.get(n) ?? 1;
    layers.set(r, [...(layers.get(r) ?? []), n]);
  }
  const kinds = new Map(graph.nodes.map((n) => [n.name, n.kind]));
  const placed = new Map<string, Placed>();
  let tallest = 0;
  for (const [r, list] of layers) {
    tallest = Math.max(tallest, list.length);
    list.forEach((n, i) => {
      const kind = n === START ? 'start' : n === END ? 'end' : n.startsWith('?') ? 'unknown' : (kinds.get(n) ?? 'node');
      placed.set(n, { name: n, x: PAD + r * (NODE_W + GAP_X), y: PAD + i * (NODE_H + GAP_Y), kind });
    });
  }
  return { placed, width: PAD * 2 + (last + 1) * (NODE_W + GAP_X) - GAP_X, height: PAD * 2 + tallest * (NODE_H + GAP_Y) - GAP_Y + 30, back };
}

function label(p: Placed): string {
  if (p.kind === 'start') return 'START';
  if (p.kind === 'end') return 'END';
  if (p.kind === 'unknown') return '? (route)';
  return p.name;
}

/** One graph (the root or a child) with the nodes of `current` highlighted. */
function GraphSvg({ graph, current, title, testid }: { graph: DescribedGraph; current: CurrentNode[]; title: string; testid: string }) {
  const { placed, width, height, back } = layout(graph);
  const stateOf = (n: string) => current.find((c) => c.node === n)?.state;
  return (
    <svg class="graph" data-testid={testid} width={width} height={height} viewBox={`0 0 ${width} ${height}`} role="img" aria-label={title}>
      <defs>
        <marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
          <path d="M 0 0 L 10 5 L 0 10 z" fill="#667" />
        </marker>
      </defs>
      {graph.edges.map((e, i) => {
        const to = e.to ?? `?${e.from}`;
        const a = placed.get(e.from);
        const b = placed.get(to);
        if (!a || !b) return null;
        const isBack = back.has(`${e.from}>${to}`);
        const x1 = a.x + NODE_W;
        const y1 = a.y + NODE_H / 2;
        const x2 = b.x;
        const y2 = b.y + NODE_H / 2;
        // A back edge (a loop) goes under the nodes, from the source's bottom to the target's.
        const d = isBack
          ? `M ${a.x + NODE_W / 2} ${a.y + NODE_H} C ${a.x + NODE_W / 2} ${height - 6}, ${b.x + NODE_W / 2} ${height - 6}, ${b.x + NODE_W / 2} ${b.y + NODE_H}`
          : `M ${x1} ${y1} C ${x1 + GAP_X / 2} ${y1}, ${x2 - GAP_X / 2} ${y2}, ${x2} ${y2}`;
        return <path key={i} d={d} class={`edge${e.conditional ? ' conditional' : ''}`} data-testid="graph-edge" data-from={e.from} data-to={to} marker-end="url(#arrow)" />;
      })}
      {[...placed.values()].map((p) => {
        const state = stateOf(p.name);
        return (
          <g key={p.name} data-testid="graph-node" data-node={p.name} data-state={state ?? ''} class={`gnode ${p.kind}${state ? ` at-${state}` : ''}`}>
            <rect x={p.x} y={p.y} width={NODE_W} height={NODE_H} rx={p.kind === 'start' || p.kind === 'end' ? 17 : 5} />
            <text x={p.x + NODE_W / 2} y={p.y + NODE_H / 2 + 4} text-anchor="middle">
              {label(p)}
              {p.kind === 'subgraph' ? ' ⊞' : ''}
            </text>
            {state && (
              <text x={p.x + NODE_W / 2} y={p.y + NODE_H + 13} text-anchor="middle" class="gstate">
                {state.replace('_', ' ')}
              </text>
            )}
          </g>
        );
      })}
    </svg>
  );
}

/** The child graphs of `graph`, each drawn under its subgraph node's name, with what of `current` is inside it. */
function Children({ graph, current, path }: { graph: DescribedGraph; current: CurrentNode[]; path: string[] }) {
  return (
    <>
      {graph.nodes
        .filter((n) => n.child)
        .map((n) => {
          const inner = [...path, n.name];
          // What is current inside this child: nodes whose path starts with it, at its depth.
          const here = current.filter((c) => c.path.length === inner.length && inner.every((p, i) => c.path[i] === p));
          const deeper = current.filter((c) => c.path.length > inner.length && inner.every((p, i) => c.path[i] === p));
          return (
            <div key={n.name} class="child-graph" data-testid="child-graph" data-node={n.name}>
              <h3>child graph of {inner.join(' › ')}</h3>
              <GraphSvg graph={n.child!} current={here} title={`child graph of ${n.name}`} testid="graph-svg-child" />
              <Children graph={n.child!} current={deeper} path={inner} />
            </div>
          );
        })}
    </>
  );
}

/** The thread's graph with where the run is, or why it cannot be drawn. */
export function GraphView({ id, version }: { id: string; version: string }) {
  const answer = useApi(() => api<ThreadGraph>(`threads/${encodeURIComponent(id)}/graph`), [id, version]);
  if (answer.error) return <p class="error">{answer.error.message}</p>;
  if (!answer.data) return null;
  const { description, current, name, versions, digest } = answer.data;
  // The root graph shows the subgraph node around a child run's current node, too.
  const root = current.filter((c) => c.path.length === 0);
  if (answer.data.status === 'completed') root.push({ ns: '', path: [], node: END, state: 'completed' });
  for (const c of current) if (c.path.length > 0 && !root.some((r) => r.node === c.path[0])) root.push({ ns: '', path: [], node: c.path[0]!, state: c.state });
  return (
    <section class="graph-view">
      <h2>
        Graph <code>{name}</code>
      </h2>
      {!description ? (
        <p class="hint" data-testid="graph-missing">
          No description of graph “{name}” is stored: the runtime stores it when an app of this version of cairn runs the graph.
        </p>
      ) : (
        <>
          <p class="hint">
            {current.length ? (
              <span data-testid="graph-current">
                now: {current.map((c) => `${[...c.path, c.node].join(' › ')} (${c.state.replace('_', ' ')})`).join(', ')}
              </span>
            ) : answer.data.status === 'completed' ? (
              'completed: the run reached END'
            ) : (
              'not at a node'
            )}
            {' · '}version {digest?.slice(0, 8)}
            {versions > 1 ? ` (one of ${versions} stored under this name)` : ''} · dashed: a conditional edge
          </p>
          <div class="graph-scroll">
            <GraphSvg graph={description} current={root} title={`graph ${name}`} testid="graph-svg" />
          </div>
          <Children graph={description} current={current} path={[]} />
        </>
      )}
    </section>
  );
}
