/**
 * @module runtime/replay
 * Re-executes a stored thread from a position, serving every recorded output and
 * effect outcome from the ledger and calling nothing external, and reports step by
 * step whether the re-execution reached the states that were stored. Nothing is
 * written. In evaluation mode ({@link ReplayMode}) the model calls (`ctx.record`
 * with `kind: 'model'`, as cairn/ai-sdk makes them) are made anew with the code under
 * evaluation, while tool results and effect outcomes are still served: a call the
 * record does not hold (another tool, other arguments) is a divergence, never run.
 *
 * Each stored superstep is recomputed by the same superstep a run uses
 * (runtime/superstep), given a task runner that serves everything, a child-run
 * driver that serves a child's recorded result from its namespace, and staging that
 * computes the next state without touching anything.
 */
import type { ArtifactStore } from '../contracts/artifact-store.js';
import type { Engine } from '../contracts/engine.js';
import type { StoredPosition } from '../contracts/checkpointer.js';
import { decode, encode } from '../codec/tagged-json.js';
import {
  EffectConflictError,
  GraphMismatchError,
  InvalidOptionError,
  PositionCompactedError,
  PositionNotFoundError,
  StateMutationError,
  ThreadNotFoundError,
  type ErrorPlace,
} from '../errors.js';
import { own } from '../internal/own.js';
import type { StateSchema } from '../state/schema.js';
import type { Head } from './cursor.js';
import { childNamespace, type ChildSpec, type GraphSpec } from './graph-spec.js';
import { AppendLengths, refuseListChanges } from './list-lengths.js';
import { ancestorRanges, materialize } from './materialize.js';
import { applyMerge } from './merge.js';
import { appendedFields, type CallRef, type PositionBody, type PositionKind } from './position.js';
import { childResultWrites, sharedStart } from './subgraph.js';
import { superstep, type Task, type TaskOutcome, type TaskRunner } from './superstep.js';
import { ReplayDivergence, TaskScope, type DivergenceKind, type EvaluatedModelCall } from './task-scope.js';
import { withinNode } from './current-node.js';

/** Where a replayed node did something its recording does not hold (another call, another argument). */
export interface ReplayDivergenceInfo {
  node: string;
  call: number;
  name: string;
  /** Why, for a program ({@link DivergenceKind}); `reason` says it for a person. */
  kind: DivergenceKind;
  reason: string;
}

/** One replayed step: the position it recomputed, whether it matched, and how it diverged. */
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
  /** Evaluation only: the model calls the step made anew, beside what the stored run recorded for each. */
  models?: EvaluatedModelCall[];
  /** Evaluation only, when fields differ: the recomputed state against the stored one (`before`: stored). */
  states?: { stored: Record<string, unknown>; evaluated: Record<string, unknown> };
}

/** What {@link App.replay} found: step by step, whether re-execution reached the stored states. */
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

/** How {@link replayThread} runs the stored steps. */
export interface ReplayMode {
  /** Model calls are made anew (evaluation replay); everything else is served. */
  evaluate?: boolean;
  /** Stops after the first step with a call the record cannot answer (evaluation: never run what was not recorded). */
  stopAtDivergence?: boolean;
}

type State = Record<string, unknown>;

/** Replays `threadId` from position `from` to `to` (default: the head) along `to`'s branch. */
export async function replayThread(settings: ReplaySettings, threadId: string, range: { from: number; to?: number }, mode: ReplayMode = {}): Promise<ReplayReport> {
  const { schema, engine } = settings;
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
  // A compacted thread's branch starts at its base; a replay from below it is refused by the load of `from`.
  const base = (anchor ?? (await cp.getHead(threadId, '')))?.base;
  if (base && range.from < base.seq) throw new PositionCompactedError(threadId, range.from, base.seq, { engine: cp.engine });
  for (const r of await ancestorRanges(cp, threadId, target, undefined, base)) {
    if (r.to < range.from) continue;
    chain.push(...(await cp.getPositions(threadId, '', { from: Math.max(r.from, range.from), to: r.to })));
  }
  if (!(await cp.getPosition(threadId, '', range.from))) throw new PositionNotFoundError(threadId, range.from, { engine: cp.engine });
  if (chain[0]?.seq !== range.from) {
    // The caller's from and to name no branch: an option error (the positions exist), like from > to.
    throw new InvalidOptionError(`replay: position ${range.from} is not on the branch of position ${to}: replay follows one branch; pass a from that ${to} descends from (history's parents).`, { place: { engine: cp.engine, thread: threadId } });
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
    const models: EvaluatedModelCall[] | undefined = mode.evaluate ? [] : undefined;
    const replayed =
      body.kind === 'step'
        ? await reexecute(settings, { threadId, tenant: thread.tenant }, { position: parent, body: parentBody }, { position, body }, state, divergences, models)
        : await applyStoredWrites(settings, threadId, position, body, state);
    const differences = replayed ? schema.fieldNames.filter((name) => encode(replayed[name]) !== encode(stored[name])) : [];
    steps.push({
      seq: position.seq,
      parent: parent.seq,
      kind: body.kind,
      nodes: body.nodes,
      replayed: body.kind === 'step',
      same: divergences.length === 0 && differences.length === 0,
      differences,
      divergences,
      ...(models ? { models } : {}),
      ...(mode.evaluate && replayed && differences.length ? { states: { stored, evaluated: replayed } } : {}),
    });
    if (divergences.length && mode.stopAtDivergence) break;
    // A step that could not be recomputed resynchronises on what was stored.
    state = replayed ?? stored;
  }
  return { threadId, from: range.from, to, steps, sameStates: steps.every((s) => s.same) };
}

/** Runs the superstep from `parent` again, serving everything; undefined when it diverged before reaching a state. */
async function reexecute(
  settings: ReplaySettings,
  thread: { threadId: string; tenant: string | null },
  parent: Head,
  stored: Head,
  state: State,
  divergences: ReplayDivergenceInfo[],
  models: EvaluatedModelCall[] | undefined,
): Promise<State | undefined> {
  const { schema, spec, engine } = settings;
  const place: ErrorPlace = { engine: engine.name, thread: thread.threadId };
  const served = new Map([...(stored.body.records ?? []), ...(stored.body.effects ?? [])].map((ref) => [ref.key, ref]));
  // Replayed code is refused a change of the state's lists in place as the run is (the run
  // would fail there): the replay's own state must not carry it into the next step either.
  const committed = AppendLengths.of(schema, state);
  let expected = committed;
  const checkLists = (nodes: readonly string[], cause?: unknown) => refuseListChanges(expected, committed, () => nodes, { ...place, seq: parent.position.seq }, cause);
  const runner = new ReplayTaskRunner(settings, thread.threadId, parent, served, divergences, place, models, checkLists);
  let outcome;
  try {
    outcome = await superstep(
      {
        schema,
        spec,
        nodeMapping: {},
        threadId: thread.threadId,
        place,
        runner,
        stage: (merged) => {
          const next = applyMerge(state, merged);
          expected = AppendLengths.of(schema, next);
          return next;
        },
        unstage: () => {
          expected = committed;
        },
        checkLists: (nodes) => {
          const refused = checkLists(nodes);
          if (refused) throw refused;
        },
      },
      parent,
      state,
    );
  } catch (error) {
    if (GraphMismatchError.is(error)) for (const node of error.missing) divergences.push({ node, call: -1, name: node, kind: 'graph-changed', reason: 'the graph has no such node any more' });
    else divergences.push({ node: stored.body.nodes.join(','), call: -1, name: 'merge', kind: 'threw', reason: (error as Error).message });
    return undefined;
  }
  if (divergences.length) return undefined;
  // A call the stored step made that the code under replay no longer makes: the run
  // would not do what it did (a skipped model call, an effect that would not happen).
  // A task the suspended superstep kept (it finished while a sibling waited) is reused,
  // in replay as in the run: its calls are not made again, and are not missing.
  const kept = new Set(Object.values(parent.body.suspended?.tasks ?? {}).flatMap((t) => [...t.records, ...t.effects].map((ref) => ref.key)));
  for (const [key, ref] of served) {
    if (!runner.used.has(key) && !kept.has(key)) {
      divergences.push({ node: stored.body.nodes.join(','), call: -1, name: ref.name, kind: 'not-called', reason: `the stored run made the call "${ref.name}" (key ${key}) in this step; the code no longer does` });
    }
  }
  if (divergences.length) return undefined;
  if (outcome.kind !== 'step') {
    const reason = outcome.kind === 'pause' ? `the graph now pauses before ${outcome.draft.interrupts!.map((i) => i.node).join(', ')}` : 'a node or a child run would stop at an interrupt or a wait';
    divergences.push({ node: parent.body.next.join(','), call: -1, name: 'interrupt', kind: 'pause', reason });
    return undefined;
  }
  const next = outcome.draft.next;
  if (next.join() !== stored.body.next.join()) {
    divergences.push({ node: outcome.draft.nodes.join(','), call: -1, name: 'next', kind: 'next', reason: `would go to [${next.join(', ')}] where the run went to [${stored.body.next.join(', ')}]` });
  }
  const replayed = { ...outcome.state };
  const at = stored.position;
  for (const [name, value] of schema.runtimeValues({ threadId: thread.threadId, ns: '', seq: at.seq, step: at.step, attempt: stored.body.attempt, nodes: stored.body.nodes, tenant: thread.tenant })) {
    replayed[name] = value;
  }
  return replayed;
}

/**
 * A task replayed: the node runs with a scope that serves every recorded output and
 * effect outcome (checked against the digests the stored position holds) and calls
 * nothing; a subgraph node is served its child run's recorded result. What cannot be
 * served is a divergence, recorded here, and the task gives nothing.
 */
class ReplayTaskRunner implements TaskRunner {
  /** Keys of the recorded calls the replayed tasks made (served, or made anew by an evaluation). */
  readonly used = new Set<string>();

  constructor(
    private readonly settings: ReplaySettings,
    private readonly threadId: string,
    private readonly parent: Head,
    private readonly served: ReadonlyMap<string, CallRef>,
    private readonly divergences: ReplayDivergenceInfo[],
    private readonly place: ErrorPlace,
    private readonly models: EvaluatedModelCall[] | undefined,
    /** Whether code changed the state's append lists in place (they are put back): the error the run would fail the step with. */
    private readonly checkLists: (nodes: readonly string[], cause?: unknown) => StateMutationError | undefined,
  ) {}

  /** Throws what the run would: StateMutationError when the task changed the state's lists in place. */
  private refuseListChanges(): void {
    const refused = this.checkLists(this.parent.body.next);
    if (refused) throw refused;
  }

  async run(task: Task, origin: number, state: Readonly<State>): Promise<TaskOutcome> {
    // Everything a replayed task needs is in the ledger: answers and wait results included.
    const empty: TaskOutcome = { writes: undefined, records: [], effects: [], interrupts: [] };
    try {
      if (task.node.child) {
        const ns = childNamespace('', task.id, origin);
        const writes = await servedChildWrites(this.settings, this.threadId, task.node.child, ns, state);
        this.refuseListChanges();
        return { ...empty, writes, child: ns };
      }
      const scope = new TaskScope({
        threadId: this.threadId,
        ns: '',
        seq: origin,
        step: this.parent.position.step + 1,
        node: task.node.name,
        task: task.id,
        attempt: 1,
        signal: new AbortController().signal,
        ledger: this.settings.engine.ledger,
        store: this.settings.engine.store,
        artifacts: this.settings.artifacts,
        emit: undefined,
        place: { ...this.place, seq: this.parent.position.seq },
        replay: true,
        served: this.served,
        ...(this.models ? { evaluate: { models: this.models } } : {}),
      });
      let writes: unknown;
      try {
        writes = await withinNode(scope, () => task.node.fn(this.settings.schema.view(state as State) as never, scope as never));
        await scope.settle();
      } finally {
        // A divergence the node caught (an agent library hands a tool's error back to the model) is reported all the same,
        // and so is a stop the tool loop caught (cairn/ai-sdk hands it in), as if the node had thrown it.
        if (scope.divergence) throw scope.divergence;
        if (scope.halted) throw scope.halted.error;
      }
      this.refuseListChanges();
      // Served calls are among the refs; a model call an evaluation made anew only among the record keys.
      for (const ref of [...scope.records, ...scope.effects]) this.used.add(ref.key);
      for (const key of scope.recordKeys) this.used.add(key);
      return { writes: (writes as Record<string, unknown> | undefined) ?? undefined, records: scope.records, effects: scope.effects, interrupts: scope.interrupts };
    } catch (caught) {
      // A node that threw after changing the state's lists: reported as the run would report it, the lists put back.
      const error = (StateMutationError.is(caught) ? undefined : this.checkLists(this.parent.body.next, caught)) ?? caught;
      if (error instanceof ReplayDivergence) this.divergences.push({ node: error.node, call: error.call, name: error.callName, kind: error.kind, reason: error.reason });
      else {
        // An effect asked with other arguments than its intent throws rather than being served.
        const kind = EffectConflictError.is(error) && /different arguments/.test((error as Error).message) ? 'effect-other-arguments' : 'threw';
        this.divergences.push({ node: task.node.name, call: -1, name: 'node', kind, reason: `threw: ${(error as Error).message}` });
      }
      return empty;
    }
  }
}

/**
 * A subgraph node, replayed: the child run it ran is served from its namespace (its
 * final state, as recorded), not run again, and mapped to the node's writes as the
 * run mapped it.
 */
async function servedChildWrites(settings: ReplaySettings, threadId: string, child: ChildSpec, ns: string, state: Readonly<State>): Promise<Record<string, unknown> | undefined> {
  const cp = settings.engine.checkpointer;
  const head = await cp.getHead(threadId, ns);
  const node = ns.slice(0, ns.indexOf(':'));
  if (!head) throw new ReplayDivergence(node, -1, 'child run', 'child-run', `no child run was recorded in namespace ${ns}`);
  const loaded = await materialize(cp, child.schema, threadId, ns, head.seq, { head });
  if (loaded.body.next.length || loaded.body.interrupts?.length) throw new ReplayDivergence(node, -1, 'child run', 'child-run', `the child run in ${ns} never finished`);
  const shared = await sharedStart(child, state, { engine: cp.engine, thread: threadId, ns });
  return childResultWrites(child, shared, loaded.state, settings.schema.view(state as State));
}

/** Applies what a non-step position stored (an input, an answer, a fork's patch) to the replayed state. */
async function applyStoredWrites(settings: ReplaySettings, threadId: string, position: StoredPosition, body: PositionBody, state: State): Promise<State | undefined> {
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
