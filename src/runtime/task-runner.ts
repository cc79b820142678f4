/**
 * @module runtime/task-runner
 * How a live run executes one task of a superstep: the node's function with its
 * task scope (records, effects, store, artifacts), retried under its retry policy
 * as new attempts of the same thread, each failure kept on the thread; a stale
 * validateAtCommit read runs it again on fresh data as the same attempt. A subgraph
 * node is handed to the child-run driver instead. A replay executes tasks with
 * another runner (runtime/replay): everything served, nothing called.
 */
import type { ArtifactStore } from '../contracts/artifact-store.js';
import type { Engine } from '../contracts/engine.js';
import type { ThreadLease } from '../contracts/threads.js';
import { CairnError, NeedsAttentionError, NodeFailedError, RunCancelledError, LeaseLostError, StaleReadError, StaleReadLimitError, StateMutationError, type ErrorPlace } from '../errors.js';
import { MAX_STALE_RERUNS } from '../defaults.js';
import type { StateSchema } from '../state/schema.js';
import type { EventSink } from './events.js';
import type { ChildSpec } from './graph-spec.js';
import { findStaleRead } from './node-store.js';
import { writeEffectsToLedger } from './effects.js';
import { resolveRetry, retryDelay, type RetryPolicy } from './retry.js';
import type { Carried, Task, TaskOutcome, TaskRunner } from './superstep.js';
import { TaskScope, type SignalQueue } from './task-scope.js';
import { withinNode } from './current-node.js';
import type { TraceSpan } from './tracing.js';

type State = Record<string, unknown>;

/** A failure of one execution, as the runner reports it to the run that keeps the thread's record. */
export interface TaskFailure {
  node: string;
  error: { code: string; message: string };
  willRetry: boolean;
}

/** What a live task runner needs of its run. */
export interface LiveTaskRunnerOptions {
  schema: StateSchema;
  engine: Engine;
  artifacts: ArtifactStore | undefined;
  retry: Partial<RetryPolicy> | undefined;
  emit: EventSink | undefined;
  /** The superstep's span, when the run is traced: each execution of a task is a `cairn.task` span under it. */
  trace?: TraceSpan;
  signal: AbortSignal;
  lease: ThreadLease;
  ns: string;
  /** Seq of the position the superstep started from (for messages and events). */
  base: () => { seq: number; step: number };
  /** True when the run wrote the position at `origin` itself (see ThreadCursor.wroteLast): a task's first execution from it reads no ledger entries. */
  wroteOrigin?: (origin: number) => boolean;
  /** Whose view of the store and artifacts nodes get: the thread's tenant. */
  principal: string | null;
  place: ErrorPlace;
  /** Keeps a failed execution on the thread (its attempt history); counts a retry as a new attempt. */
  recordFailure(failure: TaskFailure): Promise<void>;
  /** Deletes recorded outputs an execution made that led nowhere (fenced by the run's lease). */
  discardRecords(keys: string[]): Promise<void>;
  /** The thread's signal queue, for `ctx.waitFor`. */
  signals?: SignalQueue;
  /**
   * Whether code of the task changed the state's append lists in place (see
   * ThreadCursor.checkLists): the lists are put back and the error returned fails the
   * attempt (`cause`: what the node threw besides). Checked at the end of every attempt,
   * so that neither a retry nor a sibling's kept result goes on from a changed list.
   */
  checkLists?(cause?: unknown): StateMutationError | undefined;
  /** Runs a subgraph node's child run (see runtime/child-run), traced under `trace` (the task's span) when given. */
  runChild(task: Task, child: ChildSpec, origin: number, state: Readonly<State>, trace: TraceSpan | undefined): Promise<TaskOutcome>;
}

export class LiveTaskRunner implements TaskRunner {
  /** Tasks run from an origin already (`origin:task`): a rerun after a stale read finds what the first run wrote. */
  private readonly ran = new Set<string>();

  constructor(private readonly options: LiveTaskRunnerOptions) {}

  async run(task: Task, origin: number, state: Readonly<State>, carried: Carried): Promise<TaskOutcome> {
    const o = this.options;
    const { seq, step } = o.base();
    const policy = resolveRetry(o.retry, task.node.options.retry);
    const place = { ...o.place, seq };
    const runKey = `${origin}:${task.id}`;
    const firstRun = !this.ran.has(runKey);
    this.ran.add(runKey);
    for (let attempt = 1, staleReruns = 0; ; attempt++) {
      const span = o.trace?.child('cairn.task', { 'cairn.ns': o.ns, 'cairn.node': task.node.name, 'cairn.task': task.id, 'cairn.attempt': attempt });
      try {
        const scope = new TaskScope({
          threadId: o.lease.threadId,
          ns: o.ns,
          seq: origin,
          ...(firstRun && attempt === 1 && staleReruns === 0 && o.wroteOrigin?.(origin) ? { freshLedger: true } : {}),
          step: step + 1,
          node: task.node.name,
          task: task.id,
          attempt,
          signal: o.signal,
          ledger: o.engine.ledger,
          store: o.engine.store,
          principal: o.principal,
          artifacts: o.artifacts,
          emit: o.emit,
          place,
          carried,
          ...(o.signals ? { signals: o.signals } : {}),
          ...(span ? { trace: span } : {}),
        });
        o.emit?.({ type: 'task.start', threadId: o.lease.threadId, at: Date.now(), node: task.node.name, task: task.id, seq, attempt });
        let refused: StateMutationError | undefined;
        try {
          if (task.node.child) {
            const outcome = await o.runChild(task, task.node.child, origin, state, span);
            // Its input and output mappings were handed this run's state.
            if ((refused = o.checkLists?.())) throw refused;
            return outcome;
          }
          const view = o.schema.view(state as State) as never;
          const run = () => withinNode(scope, () => task.node.fn(view, scope as never));
          const writes = await (span ? span.within(run) : run());
          await scope.settle();
          // First: a node that changed the state's lists in place is refused whatever else it did.
          if ((refused = o.checkLists?.())) throw refused;
          // An effect in doubt the node caught (a tool's error to an agent library) still stops the step.
          if (scope.attention) throw scope.attention;
          // So does a stop a tool loop caught (cairn/ai-sdk hands it in): the node ends as if it had thrown it.
          if (scope.halted) throw scope.halted.error;
          if (scope.pause) return await pausedOutcome(scope, task, origin, span);
          const committed = scope.takeWithStepEffects();
          return {
            writes: (writes as Record<string, unknown> | undefined) ?? undefined,
            records: scope.records,
            effects: scope.effects,
            interrupts: scope.interrupts,
            reads: scope.validatedReads,
            ...(committed.length ? { committedEffects: committed } : {}),
          };
        } catch (caught) {
          // What a tool loop caught is why the node stopped, whatever it threw after.
          let error = refused ?? (scope.halted ? scope.halted.error : caught);
          await scope.settle();
          // The effects it ran stay done whatever comes next (a retry, a resume), as `separately` ones do.
          await scope.writeWithStepEffects();
          // A node that changed the state's lists before it threw or stopped is refused (the lists are put back
          // first), unless an effect is in doubt: a person must see that one.
          refused ??= o.checkLists?.(scope.pause ? undefined : error);
          if (refused && !NeedsAttentionError.is(error)) error = refused;
          // Stopped at an interrupt call or a wait (whatever the node did with the stop): not a failure.
          if (scope.pause && !refused) return await pausedOutcome(scope, task, origin, span);
          if (NeedsAttentionError.is(error)) {
            // Not retried, and the attempt's story must keep it (with its node) once a person resolved it and a run went on.
            await o.recordFailure({ node: task.node.name, error: describeError(error), willRetry: false });
            throw failed(span, error);
          }
          // A node stopped by the run's signal did not fail: the step is redone on resume.
          if (o.signal.aborted) throw failed(span, stoppedBy(o.signal, o.lease.threadId, place));
          // A store write found a validateAtCommit read stale (nothing was written): run the
          // node again on fresh data as the same attempt, with its recorded outputs discarded.
          if (StaleReadError.is(error)) {
            if (staleReruns < MAX_STALE_RERUNS) {
              span?.set({ 'cairn.task.stale_read': true });
              staleReruns++;
              await o.discardRecords(scope.recordKeys);
              attempt--;
              continue;
            }
            error = new StaleReadLimitError(task.node.name, staleReruns, error, place);
          }
          // A shortened list could not be put back: no attempt may run on it, whatever the policy says.
          const unrestored = StateMutationError.is(error) && !error.restored;
          const willRetry = attempt < policy.maxAttempts && policy.retryOn(error) && !o.signal.aborted && !unrestored;
          // Outputs recorded by a failed attempt led to the failure: the retry asks again.
          await o.discardRecords(scope.recordKeys);
          await o.recordFailure({ node: task.node.name, error: describeError(error), willRetry });
          o.emit?.({
            type: 'task.failed',
            threadId: o.lease.threadId,
            at: Date.now(),
            node: task.node.name,
            task: task.id,
            attempt,
            error: describeError(error).message,
            willRetry,
          });
          span?.set({ 'cairn.task.will_retry': willRetry });
          if (!willRetry) throw failed(span, CairnError.is(error) ? error : new NodeFailedError(task.node.name, attempt, error, place));
          span?.fail(error);
        }
      } finally {
        span?.end();
      }
      // Between attempts, outside the failed attempt's span.
      await sleep(retryDelay(policy, attempt), o.signal);
    }
  }

  /**
   * validateAtCommit: a task's store reads may have gone stale while it or a sibling was
   * still running. Checks them all just before the commit and runs the tasks whose reads
   * changed again, on fresh data (bounded). Only the commit's own round trip is left uncovered.
   */
  async revalidate(tasks: Task[], results: TaskOutcome[], origin: number, state: Readonly<State>, carried: Carried): Promise<void> {
    const o = this.options;
    const place = { ...o.place, seq: o.base().seq };
    for (let round = 0; results.some((r) => r.reads?.length); round++) {
      const stale = await Promise.all(results.map((r) => findStaleRead(o.engine.store, r.reads ?? [], place)));
      const first = stale.findIndex((s) => s !== null);
      if (first < 0) return;
      if (round >= MAX_STALE_RERUNS) throw new StaleReadLimitError(tasks[first]!.node.name, round, stale[first]!, place);
      for (const [i, s] of stale.entries()) {
        if (!s) continue;
        await writeEffectsToLedger(o.engine.ledger, results[i]!.committedEffects ?? []);
        await o.discardRecords(results[i]!.records.map((r) => r.key));
        results[i] = await this.run(tasks[i]!, origin, state, carried);
      }
    }
  }
}

/**
 * A task whose node stopped at an interrupt call or a wait: nothing of it is kept
 * but what its calls recorded in the ledger; the superstep waits on it, addressed
 * `<seq the superstep started from>:<task>:call:<n>`.
 */
async function pausedOutcome(scope: TaskScope, task: Task, origin: number, span: TraceSpan | undefined): Promise<TaskOutcome> {
  // What it ran before it stopped is served when it runs again: in the ledger now, not with a commit.
  await scope.writeWithStepEffects();
  const pause = scope.pause!;
  span?.set({ 'cairn.task.suspended': pause.kind });
  const id = `${origin}:${task.id}:call:${pause.call}`;
  const base = { writes: undefined, records: [], effects: [], interrupts: [] };
  if (pause.kind === 'interrupt') {
    const interrupt = { id, node: task.node.name, when: 'inside' as const, payload: pause.payload, task: task.id, call: pause.call, key: pause.key };
    return { ...base, suspended: { interrupts: [pause.answerSchema ? { ...interrupt, answerSchema: pause.answerSchema } : interrupt], waits: [] } };
  }
  const wait = { id, node: task.node.name, task: task.id, kind: pause.kind, key: pause.key, call: pause.call, until: pause.until };
  return { ...base, suspended: { interrupts: [], waits: [pause.kind === 'signal' ? { ...wait, name: pause.name } : wait] } };
}

/** `error`, marked on the task's span first. */
function failed(span: TraceSpan | undefined, error: unknown): unknown {
  span?.fail(error);
  return error;
}

/** Between steps, or when a node is stopped: a lost lease stops the run as LeaseLostError, any other abort as a cancellation. */
export function stoppedBy(signal: AbortSignal, threadId: string, place: ErrorPlace): Error {
  if (LeaseLostError.is(signal.reason)) return signal.reason;
  return new RunCancelledError(threadId, signal.reason, place);
}

/** An error's code and message, as the thread's record keeps it. */
export function describeError(error: unknown): { code: string; message: string } {
  if (error instanceof Error) return { code: (error as { code?: string }).code ?? error.name, message: error.message };
  return { code: 'ERR_THROWN', message: String(error) };
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (ms <= 0) return resolve();
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason);
      },
      { once: true },
    );
  });
}
