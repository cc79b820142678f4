/**
 * @module runtime/child-run
 * Running a subgraph node: its child run, in the namespace of this task of the
 * superstep that started at `origin` (`<parent ns>|<node>:<index>@<origin>`),
 * started from its input (or the parent's shared fields) the first time and
 * continued where it stopped after a crash, a retry or an answered interrupt. The
 * node's writes are the child's mapped output (isolated) or its net change
 * (shared); a child stopped at an interrupt suspends the parent's superstep.
 *
 * The child's own run is whatever `spawn` gives (run-control makes a run of the
 * child graph on the same lease): this module drives it and maps its result.
 */
import type { ThreadStatus } from '../contracts/threads.js';
import type { ErrorPlace } from '../errors.js';
import type { StateSchema } from '../state/schema.js';
import { childNamespace, type ChildSpec } from './graph-spec.js';
import { mergeWrites } from './merge.js';
import type { PendingInterrupt, PendingWait } from './position.js';
import { childResultWrites, sharedStart, type ChildStart } from './subgraph.js';
import type { Task, TaskOutcome } from './superstep.js';

/** Where a run stopped. */
export interface RunOutcome {
  status: ThreadStatus;
  seq: number;
  state: Record<string, unknown>;
  /** Interrupts waiting for `resume`, when status is `interrupted`. */
  interrupts: PendingInterrupt[];
  /** What the thread waits for, when status is `waiting`. */
  waits: PendingWait[];
}

/** A child run, as the parent drives it. */
export interface ChildRunner {
  /** Starts the child from `start` the first time (its first position), then runs it until END or an interrupt. */
  runChild(start: (initial: Record<string, unknown>) => Promise<ChildStart>): Promise<RunOutcome>;
}

/** Runs subgraph node `task` as a child run of the parent in `parent` (its namespace, schema and state). */
export async function runSubgraphTask(
  task: Task,
  child: ChildSpec,
  origin: number,
  parent: { ns: string; schema: StateSchema; state: Readonly<Record<string, unknown>>; place: ErrorPlace },
  spawn: (child: ChildSpec, ns: string) => ChildRunner,
): Promise<TaskOutcome> {
  const ns = childNamespace(parent.ns, task.id, origin);
  const view = parent.schema.view(parent.state as Record<string, unknown>);
  const place = { ...parent.place, ns };
  const shared = await sharedStart(child, parent.state, place);
  const outcome = await spawn(child, ns).runChild(async (initial) => {
    if (shared) return shared.seed;
    const input = child.input?.(view as never);
    return { state: initial, merged: await mergeWrites(child.schema, initial, input ? [{ name: 'input', writes: input }] : [], place) };
  });
  const result: TaskOutcome = { writes: undefined, records: [], effects: [], interrupts: [], child: ns };
  if (outcome.status === 'interrupted' || outcome.status === 'waiting') {
    // The thread waits on the child's interrupts and waits, addressed `<child ns>#<child id>`.
    return {
      ...result,
      suspended: {
        interrupts: outcome.interrupts.map((inner) => ({ id: `${ns}#${inner.id}`, node: task.node.name, when: inner.when, payload: inner.payload, ns, child: inner.id, ...(inner.answerSchema ? { answerSchema: inner.answerSchema } : {}) })),
        waits: outcome.waits.map((inner) => ({ ...inner, id: `${ns}#${inner.id}`, node: task.node.name, ns: inner.ns ?? ns })),
      },
    };
  }
  return { ...result, writes: childResultWrites(child, shared, outcome.state, view) };
}
