/**
 * @module runtime/replay
 * Re-executes a stored thread from a position, serving every recorded output and
 * effect outcome from the ledger and calling nothing external, and reports step by
 * step whether the re-execution reached the states that were stored. Nothing is
 * written. With changed node code (a new prompt, another model wrapped in
 * `ctx.record`) this is evaluation replay: it shows where the runs diverge.
 */
import { own } from '../internal/own.js';
import type { ArtifactStore } from '../contracts/artifact-store.js';
import type { Engine } from '../contracts/engine.js';
import type { StoredPosition } from '../contracts/checkpointer.js';
import { decode, encode } from '../codec/tagged-json.js';
import { CairnError, PositionNotFoundError, ThreadNotFoundError } from '../errors.js';
import type { StateSchema } from '../state/schema.js';
import { ReplayDivergence, TaskScope } from './context.js';
import { nextNodes, type GraphSpec } from './graph.js';
import { ancestorRanges, materialize } from './materialize.js';
import { mergeWrites } from './merge.js';
import { appendedFields, type PositionBody, type PositionKind } from './position.js';
import { childNamespace, childResultWrites, sharedStart, type ChildSpec } from './subgraph.js';

export interface ReplayDivergenceInfo {
  node: string;
  call: number;
  name: string;
  reason: string;
}

export interface ReplayStep {
  /** The stored position this step recomputed. */
  seq: number;
  parent: number;
  kind: PositionKind;
  nodes: string[];
  /** True for supersteps (re-executed); false for input, resume, fork and interrupt positions (their stored writes are applied). */
  replayed: boolean;
  /** The recomputed state equals the stored one, field by field, byte for byte. */
  same: boolean;
  /** Fields whose recomputed value differs from the stored one. */
  differences: string[];
  /** Calls the recorded run cannot answer, and control flow that went elsewhere. */
  divergences: ReplayDivergenceInfo[];
}

export interface ReplayReport {
  threadId: string;
  from: number;
  to: number;
  steps: ReplayStep[];
  /** Every step reached the stored state. */
  sameStates: boolean;
}

export interface ReplaySettings {
  schema: StateSchema;
  spec: GraphSpec;
  engine: Engine;
  artifacts: ArtifactStore | undefined;
}

/** Replays `threadId` from position `from` to `to` (default: the head) along `to`'s branch. */
export async function replayThread(settings: ReplaySettings, threadId: string, range: { from: number; to?: number }): Promise<ReplayReport> {
  const { schema, spec, engine } = settings;
  const cp = engine.checkpointer;
  const thread = await cp.getThread(threadId);
  if (!thread || thread.head === null) throw new ThreadNotFoundError(threadId, { engine: cp.engine });
  // Replaying to the head: the head the thread record anchors (a truncated log is an error).
  const anchor = range.to === undefined ? await cp.getHead(threadId, '') : null;
  const to = range.to ?? anchor?.seq ?? thread.head;
  const target = await cp.getPosition(threadId, '', to);
  if (!target) throw new PositionNotFoundError(threadId, to, { engine: cp.engine });
  if (anchor) await materialize(cp, schema, threadId, '', to, { head: anchor });
  const chain: StoredPosition[] = [];
  for (const r of await ancestorRanges(cp, threadId, target)) {
    if (r.to < range.from) continue;
    chain.push(...(await cp.getPositions(threadId, '', { from: Math.max(r.from, range.from), to: r.to })));
  }
  if (!(await cp.getPosition(threadId, '', range.from))) throw new PositionNotFoundError(threadId, range.from, { engine: cp.engine });
  if (chain[0]?.seq !== range.from) {
    throw new CairnError(`position ${range.from} is not on the branch of position ${to}: replay follows one branch.`, { place: { engine: cp.engine, thread: threadId } });
  }

  let state = (await materialize(cp, schema, threadId, '', range.from)).state;
  const steps: ReplayStep[] = [];
  for (let i = 1; i < chain.length; i++) {
    const parent = chain[i - 1]!;
    const position = chain[i]!;
    const parentBody = decode<PositionBody>(parent.body, `position ${parent.seq}`);
    const body = decode<PositionBody>(position.body, `position ${position.seq}`);
    const stored = (await materialize(cp, schema, threadId, '', position.seq)).state;
    const divergences: ReplayDivergenceInfo[] = [];
    let replayed: Record<string, unknown> | undefined;

    if (body.kind === 'step') {
      replayed = await reexecute(settings, threadId, thread.tenant, parent, parentBody, position, body, state, divergences);
    } else {
      replayed = await applyStoredWrites(settings, threadId, position, body, state);
    }
    const differences = replayed ? schema.fieldNames.filter((name) => encode(replayed![name]) !== encode(stored[name])) : [];
    steps.push({
      seq: position.seq,
      parent: parent.seq,
      kind: body.kind,
      nodes: body.nodes,
      replayed: body.kind === 'step',
      same: divergences.length === 0 && differences.length === 0,
      differences,
      divergences,
    });
    // A step that could not be recomputed resynchronises on what was stored.
    state = replayed ?? stored;
  }
  return { threadId, from: range.from, to, steps, sameStates: steps.every((s) => s.same) };
}

/** Runs the superstep from `parent` again in replay mode; undefined when a call could not be served. */
async function reexecute(
  settings: ReplaySettings,
  threadId: string,
  tenant: string | null,
  parent: StoredPosition,
  parentBody: PositionBody,
  position: StoredPosition,
  body: PositionBody,
  state: Record<string, unknown>,
  divergences: ReplayDivergenceInfo[],
): Promise<Record<string, unknown> | undefined> {
  const { schema, spec, engine } = settings;
  const place = { engine: engine.name, thread: threadId, seq: parent.seq };
  const missing = parentBody.next.filter((name) => !spec.nodes.has(name));
  if (missing.length) {
    for (const node of missing) divergences.push({ node, call: -1, name: node, reason: 'the graph has no such node any more' });
    return undefined;
  }
  const view = schema.view(state);
  const served = new Map([...(body.records ?? []), ...(body.effects ?? [])].map((ref) => [ref.key, ref]));
  // A superstep that waited for a child's answer kept the keys of the seq it started from.
  const origin = parentBody.suspended?.origin ?? parent.seq;
  const results = await Promise.allSettled(
    parentBody.next.map(async (name, index) => {
      const child = spec.nodes.get(name)!.child;
      if (child) return { name, writes: await servedChildWrites(settings, threadId, child, childNamespace('', `${name}:${index}`, origin), state) };
      const scope = new TaskScope({
        threadId,
        ns: '',
        seq: origin,
        step: parent.step + 1,
        node: name,
        task: `${name}:${index}`,
        attempt: 1,
        signal: new AbortController().signal,
        ledger: engine.ledger,
        store: engine.store,
        artifacts: settings.artifacts,
        emit: undefined,
        place,
        replay: true,
        served,
      });
      const writes = await spec.nodes.get(name)!.fn(view as never, scope);
      await scope.settle();
      return { name, writes: writes ?? undefined };
    }),
  );
  for (const result of results) {
    if (result.status === 'rejected') {
      const error = result.reason;
      if (error instanceof ReplayDivergence) divergences.push({ node: error.node, call: error.call, name: error.callName, reason: error.reason });
      else divergences.push({ node: '?', call: -1, name: 'node', reason: `threw: ${(error as Error).message}` });
    }
  }
  if (divergences.length) return undefined;
  const writers = results.map((r) => (r as PromiseFulfilledResult<{ name: string; writes: Record<string, unknown> | undefined }>).value);
  let merged;
  try {
    merged = await mergeWrites(schema, state, writers, place);
  } catch (error) {
    divergences.push({ node: writers.map((w) => w.name).join(','), call: -1, name: 'merge', reason: (error as Error).message });
    return undefined;
  }
  const next = nextNodes(spec, writers.map((w) => w.name), schema.view(merged.state));
  if (next.join() !== body.next.join()) {
    divergences.push({ node: writers.map((w) => w.name).join(','), call: -1, name: 'next', reason: `would go to [${next.join(', ')}] where the run went to [${body.next.join(', ')}]` });
  }
  for (const [name, value] of schema.runtimeValues({ threadId, ns: '', seq: position.seq, step: position.step, attempt: body.attempt, nodes: body.nodes, tenant })) {
    merged.state[name] = value;
  }
  return merged.state;
}

/**
 * A subgraph node, replayed: the child run it ran is served from its namespace (its
 * final state, as recorded), not run again, and mapped to the node's writes as the
 * run mapped it.
 */
async function servedChildWrites(
  settings: ReplaySettings,
  threadId: string,
  child: ChildSpec,
  ns: string,
  state: Record<string, unknown>,
): Promise<Record<string, unknown> | undefined> {
  const cp = settings.engine.checkpointer;
  const head = await cp.getHead(threadId, ns);
  const node = ns.slice(0, ns.indexOf(':'));
  if (!head) throw new ReplayDivergence(node, -1, 'child run', `no child run was recorded in namespace ${ns}`);
  const loaded = await materialize(cp, child.schema, threadId, ns, head.seq, { head });
  if (loaded.body.next.length || loaded.body.interrupts?.length) throw new ReplayDivergence(node, -1, 'child run', `the child run in ${ns} never finished`);
  const shared = await sharedStart(child, state, { engine: cp.engine, thread: threadId, ns });
  return childResultWrites(child, shared, loaded.state, settings.schema.view(state));
}

/** Applies what a non-step position stored (an input, an answer, a fork's patch) to the replayed state. */
async function applyStoredWrites(
  settings: ReplaySettings,
  threadId: string,
  position: StoredPosition,
  body: PositionBody,
  state: Record<string, unknown>,
): Promise<Record<string, unknown> | undefined> {
  // Writes stored under another schema version (a rebase) are read through the upcasters instead.
  if (position.schemaVersion !== settings.schema.version || body.rebase) return undefined;
  const next = { ...state };
  const fields = appendedFields(body);
  const items = fields.length ? await settings.engine.checkpointer.getPositionItems(threadId, '', position.seq, fields) : [];
  for (const [name, change] of Object.entries(body.changes)) {
    if ('set' in change) next[name] = change.set;
    else {
      const added = items.filter((item) => item.field === name).map((item) => decode(item.text, `item of ${name} at ${position.seq}`));
      next[name] = 'reset' in change ? added : [...((own(next, name) as unknown[] | undefined) ?? []), ...added];
    }
  }
  return next;
}
