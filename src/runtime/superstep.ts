/**
 * @module runtime/superstep
 * One superstep, the one implementation every way of running a graph uses (a run,
 * a resume, a child run, a replay): plan the tasks the head schedules, stop for the
 * declared pauses, run the tasks concurrently (reusing the ones a crash or a
 * suspension left finished), merge their writes in graph order, route, and hand
 * back what to commit: a step, a pause, or a suspension waiting for a child run's
 * answer. It commits nothing itself; what differs between a live run and a replay
 * is only what `env` gives it: how a task runs (called, or served from the ledger),
 * whether finished tasks are kept while siblings run, and what staging a merge does.
 */
import type { CommittedEffect } from '../contracts/checkpointer.js';
import type { StateSchema } from '../state/schema.js';
import { GraphMismatchError, type ErrorPlace } from '../errors.js';
import { own } from '../internal/own.js';
import type { Draft, Head } from './cursor.js';
import type { EventSink } from './events.js';
import { nextNodes, type GraphSpec, type NodeSpec } from './graph-spec.js';
import { mergeWrites, type MergeResult, type Writer } from './merge.js';
import type { PendingInterrupt, PendingWait, StoredTaskResult } from './position.js';

type State = Record<string, unknown>;

/** A task of a superstep: a node, and its id (`name:index`: the name the head stores, the index in the superstep's nodes). */
export interface Task {
  node: NodeSpec;
  id: string;
}

/**
 * Why a task stopped before it finished: the interrupts it waits on (its own
 * `await ctx.interrupt(...)` call, or a child run's) and the waits (its own
 * `ctx.sleep` / `ctx.waitFor`, or a child run's), each with its thread-wide id.
 */
export interface Suspension {
  interrupts: PendingInterrupt[];
  waits: PendingWait[];
}

/** What a task's execution gives back: its result as stored, or, when it stopped part-way, why. */
export interface TaskOutcome extends StoredTaskResult {
  suspended?: Suspension;
  /**
   * Its `commit: 'with-step'` effects, for the step's commit to write. In memory only:
   * a result that is kept instead (for a sibling, or a suspended superstep) has them
   * written to the ledger first ({@link StepEnv.writeEffects}).
   */
  committedEffects?: CommittedEffect[];
}

/**
 * What a superstep that stopped part-way carries to its re-execution: the answers
 * given to its interrupt calls (by call key, codec text) and the waits it stopped at
 * (a wait keeps its wake time across re-executions).
 */
export interface Carried {
  answers: Readonly<Record<string, string>>;
  waits: readonly PendingWait[];
}

/** Runs one task of a superstep: live (called, retried, failures kept, child runs run) or replayed (every call served). */
export interface TaskRunner {
  run(task: Task, origin: number, state: Readonly<State>, carried: Carried): Promise<TaskOutcome>;
}

/** Finished tasks kept while their siblings run, so that a crash or a failure of one does not run the others again. */
export interface PendingWrites {
  load(baseSeq: number): Promise<Map<string, StoredTaskResult>>;
  save(baseSeq: number, task: Task, result: StoredTaskResult): Promise<void>;
}

/** Where and how a superstep runs. */
export interface StepEnv {
  schema: StateSchema;
  spec: GraphSpec;
  /** Stored node names → the nodes of this graph that replace them. */
  nodeMapping: Readonly<Record<string, string>>;
  threadId: string;
  place: ErrorPlace;
  runner: TaskRunner;
  emit?: EventSink;
  /** A live run keeps finished tasks while siblings run; a replay does not. */
  pending?: PendingWrites;
  /**
   * A live run checks every validateAtCommit store read just before the commit and runs
   * the tasks whose reads went stale again on fresh data (bounded); a replay does not.
   */
  revalidate?: (tasks: Task[], results: TaskOutcome[], origin: number, carried: Carried) => Promise<void>;
  /** Writes `with-step` effect entries to the ledger (a live run; a replay runs no effect). */
  writeEffects?: (entries: CommittedEffect[]) => Promise<void>;
  /** Applies a merge to the state the step started from: what routing and interrupts see. */
  stage(merged: MergeResult): Readonly<State>;
  /** Undoes `stage` when the step stops before its commit. */
  unstage(): void;
  /**
   * Throws StateMutationError, with the lists put back, when code handed the state
   * (routing, interrupt payloads, derived fields; `nodes`: the step's) changed an
   * append list in place. Tasks are checked by their runner.
   */
  checkLists(nodes: readonly string[]): void;
}

/** What a superstep hands back to commit. */
export type StepOutcome =
  /** Declared `interruptBefore` pauses: nothing ran. */
  | { kind: 'pause'; draft: Draft }
  /** A task stopped part-way (an interrupt call, a wait, a child run's pause): the superstep waits, keeping its finished tasks. */
  | { kind: 'suspend'; draft: Draft }
  /** The tasks ran and their writes are merged and staged. */
  | { kind: 'step'; draft: Draft; state: Readonly<State> };

/**
 * The nodes of `head`'s next superstep in this graph: stored names through
 * `nodeMapping`. Code may have renamed or removed nodes since the position was
 * written: GraphMismatchError (nothing changed), telling the user to pass
 * nodeMapping to `call`.
 */
export function scheduledNodes(spec: GraphSpec, nodeMapping: Readonly<Record<string, string>>, head: Head, place: ErrorPlace, call: 'run' | 'resume'): string[] {
  const scheduled = head.body.next.map((name) => own(nodeMapping, name) ?? name);
  const missing = head.body.next.filter((_, i) => !spec.nodes.has(scheduled[i]!));
  if (missing.length) throw new GraphMismatchError(missing, { ...place, seq: head.position.seq }, call);
  return scheduled;
}

/** Runs the superstep `head` schedules, on `state` (the state at `head`). */
export async function superstep(env: StepEnv, head: Head, state: Readonly<State>): Promise<StepOutcome> {
  const { spec, schema } = env;
  const place = { ...env.place, seq: head.position.seq };
  // A task's id is the stored name, not the mapped one: every call key (records, effects,
  // interrupt answers, waits), pending write and child namespace of the superstep derives
  // from it, so a node renamed since (through nodeMapping) goes on as the same task.
  const tasks: Task[] = scheduledNodes(spec, env.nodeMapping, head, env.place, 'run').map((name, index) => ({
    node: spec.nodes.get(name)!,
    id: `${head.body.next[index]}:${index}`,
  }));

  // Declared pauses come first: nothing runs until they are answered (stored names mapped as the next nodes are).
  const cleared = (head.body.cleared ?? []).map((name) => own(env.nodeMapping, name) ?? name);
  const before = tasks.filter((t) => t.node.options.interruptBefore && !cleared.includes(t.node.name));
  if (before.length) {
    const view = schema.view(state as State);
    const interrupts = before.map((t) => ({
      id: `${head.position.seq}:before:${t.node.name}`,
      node: t.node.name,
      when: 'before' as const,
      payload: declaredPayload(t.node.options.interruptBefore!, view),
    }));
    env.checkLists([]);
    return { kind: 'pause', draft: { kind: 'interrupt', nodes: [], next: head.body.next, interrupts } };
  }

  // A superstep that stopped part-way goes on as the one that started at `origin`:
  // same record and effect keys, same child namespaces, finished tasks kept.
  const origin = head.body.suspended?.origin ?? head.position.seq;
  const carried: Carried = { answers: head.body.suspended?.answers ?? {}, waits: head.body.waits ?? [] };
  const results = await runTasks(env, tasks, head, origin, state, carried);
  if (results.some((r) => r.suspended)) {
    // The finished tasks are kept in the suspended position, their effects in the ledger.
    for (const result of results) await writeHeldEffects(env, result);
    return { kind: 'suspend', draft: suspendedDraft(head, tasks, results, origin) };
  }
  let merged: MergeResult;
  try {
    await env.revalidate?.(tasks, results, origin, carried);
    const writers: Writer[] = tasks.map((task, i) => ({ name: task.node.name, writes: results[i]!.writes }));
    merged = await mergeWrites(schema, state, writers, place);
  } catch (error) {
    await keepHeldEffects(env, results);
    throw error;
  }
  const staged = env.stage(merged);
  try {
    const ran = tasks.map((t) => t.node.name);
    const view = schema.view(staged as State);
    const next = nextNodes(spec, ran, view, place);
    const interrupts: PendingInterrupt[] = [];
    tasks.forEach((task, i) => {
      results[i]!.interrupts.forEach((payload, n) => interrupts.push({ id: `${head.position.seq}:${task.id}:${n}`, node: task.node.name, when: 'inside', payload }));
      const after = task.node.options.interruptAfter;
      if (after) interrupts.push({ id: `${head.position.seq}:after:${task.id}`, node: task.node.name, when: 'after', payload: declaredPayload(after, view) });
    });
    env.checkLists(ran);
    const children = results.flatMap((r) => (r.child ? [r.child] : []));
    return {
      kind: 'step',
      state: staged,
      draft: {
        kind: 'step',
        nodes: ran,
        next,
        records: results.flatMap((r) => r.records),
        effects: results.flatMap((r) => r.effects),
        committedEffects: results.flatMap((r) => r.committedEffects ?? []),
        interrupts,
        ...(children.length ? { children } : {}),
      },
    };
  } catch (error) {
    env.unstage();
    await keepHeldEffects(env, results);
    throw error;
  }
}

/**
 * Runs a superstep's tasks concurrently. Tasks a suspension or a pending write kept
 * are reused; a live run keeps each finished task while a sibling still runs.
 */
async function runTasks(env: StepEnv, tasks: Task[], head: Head, origin: number, state: Readonly<State>, carried: Carried): Promise<TaskOutcome[]> {
  const base = head.position.seq;
  const reused = new Map<string, StoredTaskResult>(Object.entries(head.body.suspended?.tasks ?? {}));
  if (env.pending && tasks.length > 1) for (const [task, result] of await env.pending.load(base)) reused.set(task, result);
  let unfinished = tasks.filter((t) => !reused.has(t.id)).length;
  // The common superstep has one task: no siblings to wait for, nothing to keep.
  if (tasks.length === 1 && !reused.has(tasks[0]!.id)) return [await env.runner.run(tasks[0]!, origin, state, carried)];
  const settled = await Promise.allSettled(
    tasks.map(async (task): Promise<TaskOutcome> => {
      const kept = reused.get(task.id);
      if (kept) {
        env.emit?.({ type: 'task.reused', threadId: env.threadId, at: Date.now(), node: task.node.name, task: task.id, seq: base });
        return kept;
      }
      const result = await env.runner.run(task, origin, state, carried);
      unfinished--;
      // Only worth a write when a sibling is still running: otherwise the step commits next.
      // A suspended task has not finished: it goes on when it is answered or woken.
      if (env.pending && tasks.length > 1 && unfinished > 0 && !result.suspended) {
        await writeHeldEffects(env, result);
        await env.pending.save(base, task, stored(result));
      }
      return result;
    }),
  );
  const failure = settled.find((s) => s.status === 'rejected');
  if (failure) throw (failure as PromiseRejectedResult).reason;
  return settled.map((s) => (s as PromiseFulfilledResult<TaskOutcome>).value);
}

/** The result as it is stored (without the in-memory suspension and effect entries). */
function stored(result: TaskOutcome): StoredTaskResult {
  const { suspended: _suspended, committedEffects: _committed, ...kept } = result;
  return kept;
}

/**
 * The superstep failed after its tasks ran (a stale-read limit, a merge or a route that
 * threw): their `with-step` effects go to the ledger, so the step's next execution is
 * served them. A write that fails here leaves the effect to run again under its key,
 * which is what `with-step` allows; the superstep's own error is the one reported.
 */
async function keepHeldEffects(env: StepEnv, results: TaskOutcome[]): Promise<void> {
  for (const result of results) await writeHeldEffects(env, result).catch(() => undefined);
}

/** A result that will not reach the step's commit as it is: its `with-step` effects go to the ledger now. */
async function writeHeldEffects(env: StepEnv, result: TaskOutcome): Promise<void> {
  if (!result.committedEffects?.length) return;
  if (!env.writeEffects) throw new Error('a superstep without a ledger ran with-step effects'); // a replay calls no effect
  await env.writeEffects(result.committedEffects);
  delete result.committedEffects;
}

/**
 * A task stopped part-way (its own interrupt call or wait, or a child run's): the
 * thread is interrupted or waiting with what the stopped tasks wait on, and the
 * superstep waits, keeping the results of the tasks that finished so that they do
 * not run again, and the answers given so far.
 */
function suspendedDraft(head: Head, tasks: Task[], results: TaskOutcome[], origin: number): Draft {
  const interrupts: PendingInterrupt[] = [];
  const waits: PendingWait[] = [];
  const finished: Record<string, StoredTaskResult> = {};
  tasks.forEach((task, i) => {
    const result = results[i]!;
    if (!result.suspended) finished[task.id] = stored(result);
    else {
      interrupts.push(...result.suspended.interrupts);
      waits.push(...result.suspended.waits);
    }
  });
  const children = results.flatMap((r) => (r.child ? [r.child] : []));
  const answers = head.body.suspended?.answers;
  return {
    kind: 'interrupt',
    nodes: [],
    next: head.body.next,
    interrupts,
    waits,
    ...(head.body.cleared ? { cleared: head.body.cleared } : {}),
    children,
    suspended: { origin, tasks: finished, ...(answers && Object.keys(answers).length ? { answers } : {}) },
  };
}

/** The payload of a declared interrupt: the node's function of the state, or null. */
function declaredPayload(declared: boolean | ((state: never) => unknown), state: unknown): unknown {
  return typeof declared === 'function' ? declared(state as never) : null;
}
