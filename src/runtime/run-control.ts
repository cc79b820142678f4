/**
 * @module runtime/run-control
 * One run of a graph on one thread namespace, under a lease: what a call asks of
 * the thread (start it, continue it, answer an interrupt, fork it, run a child run)
 * and the thread's record around it (attempts, status, failures), with supersteps
 * (runtime/superstep) in between until END, an interrupt, an error or the
 * recursion limit. Positions are written through the run's {@link ThreadCursor}.
 *
 * Crash windows and what covers them:
 * - a node's recorded outputs and effect outcomes are durable as they happen
 *   (ledger), so a re-executed node is served them and repeats nothing;
 * - in a superstep with several tasks, each finished task's writes are kept as a
 *   pending write, so a crash or failure of a sibling does not re-run it;
 * - the step commit is one transaction; until it lands the head stays put, and
 *   the next run re-executes the step from the same position with the same keys.
 */
import type { ArtifactStore } from '../contracts/artifact-store.js';
import type { Checkpointer } from '../contracts/checkpointer.js';
import type { Engine } from '../contracts/engine.js';
import type { ThreadLease, ThreadRecord, ThreadStatus } from '../contracts/threads.js';
import { sha256Hex } from '../codec/hash.js';
import { decode, encode } from '../codec/tagged-json.js';
import { CHILD_RECURSION_LIMIT } from '../defaults.js';
import {
  CairnError,
  CorruptRecordError,
  EngineError,
  GraphMismatchError,
  HeadMovedError,
  InterruptNotFoundError,
  InvalidOptionError,
  LeaseLostError,
  NeedsAttentionError,
  RecursionLimitError,
  RunCancelledError,
  RunInProgressError,
  ThreadInterruptedError,
  ThreadNotInterruptedError,
  type ErrorPlace,
} from '../errors.js';
import { crashPoint } from '../internal/crash-points.js';
import { own } from '../internal/own.js';
import type { StateSchema } from '../state/schema.js';
import { runSubgraphTask, type ChildRunner, type RunOutcome } from './child-run.js';
import { ThreadCursor, positionStatus, wakeTime, type Head } from './cursor.js';
import { ThreadSignals } from './signal-queue.js';
import type { EventSink } from './events.js';
import { writeEffectsToLedger } from './effects.js';
import { START, nextNodes, type ChildSpec, type GraphSpec } from './graph-spec.js';
import { checkUnanchored } from './materialize.js';
import { mergeWrites, noChanges, type MergeResult } from './merge.js';
import { openSnapshot, sealSnapshot, type PendingInterrupt, type PendingWait, type PositionBody, type StoredTaskResult } from './position.js';
import type { RetryPolicy } from './retry.js';
import type { ChildStart } from './subgraph.js';
import { scheduledNodes, superstep, type PendingWrites, type StepEnv, type StepOutcome } from './superstep.js';
import { LiveTaskRunner, describeError, stoppedBy, type TaskFailure } from './task-runner.js';
import { TaskScope, probeOutcome } from './task-scope.js';
import { withinNode } from './current-node.js';
import type { TraceSpan } from './tracing.js';

/** What answers an interrupt: writes to merge, and for an interrupt call the answer it resolves to (by its key, codec text). */
interface Answer {
  merged: MergeResult;
  answer?: { key: string; text: string };
}

export type { RunOutcome } from './child-run.js';

/** Settings a run works with (from compile() and run()). */
export interface RunSettings {
  schema: StateSchema;
  spec: GraphSpec;
  engine: Engine;
  artifacts: ArtifactStore | undefined;
  snapshotEvery: number;
  recursionLimit: number;
  retry: Partial<RetryPolicy> | undefined;
  emit: EventSink | undefined;
  /** Sees the state at each load and commit (see CursorSettings.observeState); child runs inherit it. */
  observeState?: ((state: Readonly<Record<string, unknown>>) => void) | undefined;
  /** The span this run's spans nest under (its `cairn.run`); undefined when tracing is off or nothing records. */
  trace?: TraceSpan | undefined;
  signal: AbortSignal;
  /** Stored node names → the nodes of this graph that replace them. */
  nodeMapping: Readonly<Record<string, string>>;
}

/** Where a child run (a subgraph node's) lives, and what it inherits from its parent run. */
export interface ChildScope {
  ns: string;
  thread: ThreadRecord;
  attempt: number;
  /** The thread's signal queue, shared with the parent run (its commit reports what the child's waits saw). */
  signals: ThreadSignals;
}

/** Options of {@link ThreadRun.resume}. */
export interface AnswerOptions {
  /** Writes that answer the interrupt (validated, merged through the reducers). */
  input?: Record<string, unknown> | undefined;
  /** What the interrupt call resolves to (`await ctx.interrupt(...)`); `hasAnswer` says whether one was given. */
  answer?: unknown;
  hasAnswer?: boolean;
  /** Which interrupt this answers; needed when several are pending. */
  interrupt?: string | undefined;
  /** Who answered (kept in the position). */
  actor: string;
  /** `input` came as `childInput`: writes to a child graph's fields, for an interrupt raised inside a child run only. */
  childWrites?: boolean;
}

/** Options of {@link ThreadRun.beginAttempt}. */
interface AttemptOptions {
  /** The run continues an unfinished one (a crash, a failure, an answer) rather than starting one. */
  resumed: boolean;
  /** Set the thread `running` now (an answer keeps `interrupted` until it commits). Default true. */
  markRunning?: boolean;
  /** The status the attempt starts in, in place of `running` (a cancelled thread taken back while it waits for a person). */
  status?: ThreadStatus;
}

type State = Record<string, unknown>;

/** Statuses a run left the thread in by failing (or a cancellation put it in): run() takes such a thread back. */
const ENDED_BY_FAILURE: ReadonlySet<ThreadStatus> = new Set(['failed', 'needs_attention']);

/** One run of a graph on one thread namespace, under a lease. */
export class ThreadRun implements ChildRunner {
  private readonly cp: Checkpointer;
  private readonly place: ErrorPlace;
  private readonly cursor: ThreadCursor;
  private thread: ThreadRecord;
  /** Checkpoint namespace: '' for the thread's root graph, the child's for a child run. */
  private readonly ns: string;
  /** A child run changes no thread status: its parent's run owns the thread record. */
  private readonly isChild: boolean;
  private readonly signals: ThreadSignals;
  /** A task's failure that ends this run is kept in the attempt history (not retried): fail() keeps no second one. */
  private endingFailureKept = false;

  constructor(
    private readonly settings: RunSettings,
    private readonly lease: ThreadLease,
    child?: ChildScope,
  ) {
    this.cp = settings.engine.checkpointer;
    this.ns = child?.ns ?? '';
    this.isChild = child !== undefined;
    this.thread = child?.thread ?? lease.thread;
    this.place = { engine: this.cp.engine, thread: lease.threadId, ns: this.ns };
    this.signals = child?.signals ?? new ThreadSignals(this.cp, lease);
    const signals = this.signals;
    this.cursor = new ThreadCursor(this.cp, settings, {
      lease,
      ns: this.ns,
      tenant: this.thread.tenant,
      attempt: child?.attempt ?? lease.thread.attempts,
      signalsSeen: () => signals.seen,
    });
  }

  // ------------------------------------------------------------ what a call asks

  /**
   * `run()`: starts a new thread, resumes an unfinished run, or starts a new run on a
   * completed thread given input. Runs until END, an interrupt, or an error.
   */
  async execute(input: State | undefined): Promise<RunOutcome> {
    const start = await this.prepare(input);
    if (start === 'nothing') return this.outcome(this.thread.status);
    if (start === 'waiting') return this.stillWaiting();
    if (start === 'reopen') return this.reopen();
    if (start === 'resume' || start === 'wake') await this.beginAttempt({ resumed: true });
    return this.loop({ wake: start === 'wake' });
  }

  /**
   * `submit()`: makes the thread runnable without running it: a new run's input is
   * committed (or nothing, if an unfinished run is already there) and a worker takes
   * it from there.
   */
  async submit(input: State | undefined): Promise<RunOutcome> {
    const start = await this.prepare(input);
    if (start === 'reopen') return this.reopen();
    return this.outcome(start === 'nothing' || start === 'waiting' || start === 'wake' ? positionStatus(this.cursor.head!.body) : 'running');
  }

  /**
   * `resume()`: answers one pending interrupt with `input` (validated and merged
   * through the reducers, as a write by `actor`), then goes on when none is left,
   * unless `detach`. Nothing is written when the thread is not interrupted, the input
   * is invalid, or the graph no longer has the nodes the run would go on with.
   */
  async resume(options: AnswerOptions & { detach?: boolean }): Promise<RunOutcome> {
    const threadId = this.lease.threadId;
    if (this.thread.head === null) throw new ThreadNotInterruptedError(threadId, 'empty', this.place);
    const head = await this.loadHead();
    const pending = head.body.interrupts ?? [];
    if (pending.length === 0) throw new ThreadNotInterruptedError(threadId, this.thread.status, this.place);
    // A thread cancelled while it waited for a person keeps its interrupts at the head, but
    // is failed: an answer given late (a form still open) must not set it going again.
    // run() takes it back; then it is interrupted and answered as before.
    if (ENDED_BY_FAILURE.has(this.thread.status)) throw new ThreadNotInterruptedError(threadId, this.thread.status, this.place);
    const target = this.interruptOf(head, options.interrupt);
    if (options.childWrites && target.ns === undefined) {
      throw new InvalidOptionError(`interrupt ${target.id} was raised by node "${target.node}" of this graph, not inside a child run: give its writes as input, not childInput.`, { place: this.place });
    }
    if (options.hasAnswer && target.ns === undefined && target.key === undefined) {
      const raised = target.when === 'inside' ? 'was raised by ctx.interruptAfter' : `was declared (interrupt${target.when === 'before' ? 'Before' : 'After'})`;
      throw new InvalidOptionError(`interrupt ${target.id} ${raised}: answer it with input (merged into the state), not with an answer.`, { place: this.place });
    }
    // The answer commits only if the run can go on from it: a renamed next node is
    // GraphMismatchError with nothing changed, and the same call with nodeMapping works.
    scheduledNodes(this.settings.spec, this.settings.nodeMapping, head, this.place, 'resume');
    // Validated (and, for a child's interrupt, committed in the child) before anything here changes.
    const answer = await this.answerWrites(head, target, options);
    // The status stays `interrupted` until the answer commits: a crash before that
    // must leave the thread listed as waiting for a person.
    await this.beginAttempt({ resumed: true, markRunning: false });
    await this.commitAnswer(head, target, answer, options.actor);
    if (options.detach) return this.outcome(positionStatus(this.cursor.head!.body));
    // The answered node goes on now, even while a sibling's wait is not yet due (that one stops at it again).
    return this.loop({ wake: true });
  }

  /**
   * `fork()`: a new branch from position `seq`. The patch goes through validation and
   * the reducers as a write by `actor`; the new position becomes the head (the old
   * branch stays as it was) and inherits the origin's next nodes and interrupts.
   */
  async fork(options: { seq: number; patch?: State | undefined; actor: string }): Promise<RunOutcome> {
    const loaded = await this.cursor.loadAt(options.seq);
    const merged = await mergeWrites(this.settings.schema, this.cursor.state, options.patch ? [{ name: options.actor, writes: options.patch }] : [], {
      ...this.place,
      seq: options.seq,
    });
    this.cursor.stage(merged);
    // The fork continues as its origin would: same next nodes, same pending interrupts,
    // same before-interrupts already answered. A superstep that stopped part-way (an
    // interrupt call, a wait, a child run's pause) is the exception: what it stopped at
    // belongs to the old branch, so the fork runs that superstep afresh (its child runs
    // start again in namespaces of their own, its nodes ask and wait again).
    await this.cursor.commit({
      kind: 'fork',
      nodes: [],
      next: loaded.body.next,
      // An interrupt call or a wait belongs to the superstep it stopped, which the fork runs afresh.
      interrupts: (loaded.body.interrupts ?? []).filter((i) => i.ns === undefined && i.key === undefined),
      ...(loaded.body.cleared ? { cleared: loaded.body.cleared } : {}),
      actor: options.actor,
    });
    // The failure the thread was left with is the old branch's (the attempt history keeps
    // it): on the fork's status, lastError would name a failure that is not there.
    if (this.thread.lastError) this.thread = await this.cp.updateThread(this.lease, { lastError: null });
    return this.outcome(positionStatus(this.cursor.head!.body));
  }

  /**
   * A child run (a subgraph node's): the first time, commits the child's first position
   * from `start` (its input, or the shared fields); then goes on from the child's head
   * until the child's END or an interrupt.
   */
  async runChild(start: (initial: State) => Promise<ChildStart>): Promise<RunOutcome> {
    const trace = this.settings.trace;
    if (!trace) return this.continueChild(start);
    return trace.run(() => this.continueChild(start));
  }

  private async continueChild(start: (initial: State) => Promise<ChildStart>): Promise<RunOutcome> {
    if (!(await this.cursor.loadHead())) {
      const first = await start(this.settings.schema.initial());
      this.cursor.start(first.state);
      const staged = this.cursor.stage(first.merged);
      const next = nextNodes(this.settings.spec, [START], this.settings.schema.view(staged as State), this.place);
      await this.cursor.commit({ kind: 'input', nodes: [], next });
    }
    if (this.cursor.head!.body.interrupts?.length) return this.outcome('interrupted');
    // The parent re-runs its superstep when a wait may resolve: the child tries its own.
    return this.loop({ wake: true });
  }

  // ------------------------------------------------------------ the run's steps

  /**
   * Brings the thread to where a run can go on: a new run's input committed
   * (`started`), an unfinished run found that this input (or none) may continue
   * (`resume`), or a completed thread given no input (`nothing`). Nothing changes
   * before every check passed.
   */
  private async prepare(input: State | undefined): Promise<'started' | 'resume' | 'wake' | 'waiting' | 'reopen' | 'nothing'> {
    const threadId = this.lease.threadId;
    if (this.thread.head === null) {
      // A thread that never committed, unless its anchor is what was lost.
      if (this.thread.attempts > 0) await checkUnanchored(this.cp, threadId, this.ns);
      this.cursor.start(this.settings.schema.initial());
      await this.startRun(input);
      return 'started';
    }
    const head = await this.loadHead();
    const pending = head.body.interrupts ?? [];
    if (pending.length && !ENDED_BY_FAILURE.has(this.thread.status)) throw new ThreadInterruptedError(threadId, pending.map((i) => i.id), this.place);
    if (pending.length) {
      // Cancelled (failed) while it waited for a person: run() takes it back, as it does
      // any failed thread, at its last position, which waits for the answer again.
      if (input !== undefined && sha256Hex(encode(input, 'run input')) !== (await this.lastInputDigest())) throw new RunInProgressError(threadId, this.place);
      return 'reopen';
    }
    if (head.body.next.length === 0) {
      if (input === undefined) return 'nothing';
      await this.startRun(input);
      return 'started';
    }
    if (input !== undefined && sha256Hex(encode(input, 'run input')) !== (await this.lastInputDigest())) throw new RunInProgressError(threadId, this.place);
    // Before anything changes: a graph that lost the next nodes fails the call, not the thread.
    scheduledNodes(this.settings.spec, this.settings.nodeMapping, head, this.place, 'run');
    if (head.body.waits?.length) return (await this.wakeable(head.body.waits)) ? 'wake' : 'waiting';
    return 'resume';
  }

  /**
   * Starts a new run: the input is encoded, merged and checked before anything
   * changes, so rejected input leaves a completed thread completed, and leaves no
   * thread behind when this call created it: a thread that never committed a
   * position is deleted again (under this run's lease, so no other run's work is).
   */
  private async startRun(input: State | undefined): Promise<void> {
    let digest: string | undefined;
    let next: string[];
    try {
      digest = input === undefined ? undefined : sha256Hex(encode(input, 'run input'));
      const merged = await mergeWrites(this.settings.schema, this.cursor.state, input === undefined ? [] : [{ name: 'input', writes: input }], this.place);
      const staged = this.cursor.stage(merged);
      next = nextNodes(this.settings.spec, [START], this.settings.schema.view(staged as State), this.place);
      // Routing from START was handed the state: refused here, before the thread counts an attempt, if it changed a list.
      const refused = this.cursor.checkLists(() => []);
      if (refused) throw refused;
    } catch (error) {
      this.cursor.unstage();
      if (this.thread.head === null && this.thread.attempts === 0) await this.cp.deleteThread(this.lease.threadId, { lease: this.lease }).catch(() => undefined);
      else if (this.thread.head === null) await this.fail(error);
      throw error;
    }
    await this.beginAttempt({ resumed: false });
    await this.cursor.commit({ kind: 'input', nodes: [], next, ...(digest !== undefined ? { input: digest } : {}) });
  }

  /**
   * Supersteps until END, an interrupt, a wait or an error (which marks the thread
   * failed). With `wake`, a head waiting on a sleep or a signal that may have resolved
   * runs its superstep again first.
   */
  private async loop(options: { wake?: boolean } = {}): Promise<RunOutcome> {
    let wake = options.wake === true;
    let waitsAgain = false;
    try {
      let steps = 0;
      while (this.cursor.head!.body.next.length > 0 && !this.cursor.head!.body.interrupts?.length && (wake || !this.cursor.head!.body.waits?.length)) {
        wake = false;
        if (this.settings.signal.aborted) throw stoppedBy(this.settings.signal, this.lease.threadId, this.place);
        if (steps >= this.settings.recursionLimit) throw new RecursionLimitError(this.settings.recursionLimit, this.place);
        waitsAgain = (await this.step()) === 'waits-again';
        steps++;
      }
      // Nothing was committed: the thread record goes back to waiting, as a run before the wait is due leaves it.
      if (waitsAgain && !this.isChild) await this.stillWaiting();
    } catch (error) {
      // A child's failure is its parent node's to handle (retry, or fail the thread).
      if (!this.isChild) await this.fail(error);
      throw error;
    }
    const status = positionStatus(this.cursor.head!.body);
    this.settings.trace?.set({ 'cairn.thread.status': status });
    this.settings.emit?.({ type: 'run.end', threadId: this.lease.threadId, at: Date.now(), status, seq: this.cursor.head!.position.seq });
    return this.outcome(status);
  }

  /**
   * One superstep from the head, and its commit; in a `cairn.superstep` span when the
   * run is traced. `waits-again`: a woken superstep stopped exactly where the head
   * already waits (see {@link waitsAsHead}), and nothing was committed.
   */
  private async step(): Promise<'committed' | 'waits-again'> {
    const head = this.cursor.head!;
    const trace = this.settings.trace;
    if (!trace) {
      const outcome = await superstep(this.stepEnv(undefined), head, this.cursor.state);
      if (waitsAsHead(head, outcome)) return 'waits-again';
      await this.cursor.commit(outcome.draft);
      return 'committed';
    }
    return trace.around('cairn.superstep', { 'cairn.ns': this.ns, 'cairn.seq': head.position.seq, 'cairn.nodes': head.body.next }, async (span) => {
      const outcome = await superstep(this.stepEnv(span), head, this.cursor.state);
      if (waitsAsHead(head, outcome)) {
        span.set({ 'cairn.superstep.waits_again': true });
        return 'waits-again' as const;
      }
      await span.around('cairn.commit', { 'cairn.ns': this.ns }, async (commit) => {
        const landed = await this.cursor.commit(outcome.draft);
        commit.set({ 'cairn.seq': landed.seq, 'cairn.snapshot': landed.snapshot, 'cairn.thread.status': landed.status });
      });
      return 'committed' as const;
    });
  }

  /** How a superstep of this run runs: live tasks, pending writes, stale-read checks, staged on the cursor. */
  private stepEnv(trace: TraceSpan | undefined): StepEnv {
    const { settings, cursor } = this;
    // The step's nodes, as a refusal names them (in this graph's names).
    const stepNodes = () => cursor.head!.body.next.map((name) => own(settings.nodeMapping, name) ?? name);
    const runner = new LiveTaskRunner({
      schema: settings.schema,
      engine: settings.engine,
      artifacts: settings.artifacts,
      retry: settings.retry,
      emit: settings.emit,
      ...(trace ? { trace } : {}),
      signal: settings.signal,
      lease: this.lease,
      ns: this.ns,
      base: () => ({ seq: cursor.head!.position.seq, step: cursor.head!.position.step }),
      wroteOrigin: (origin) => cursor.wroteLast(origin),
      principal: this.thread.tenant,
      place: this.place,
      recordFailure: (failure) => this.recordFailure(failure),
      signals: this.signals,
      discardRecords: (keys) => settings.engine.ledger.discardRecords(this.lease, keys),
      checkLists: (cause) => cursor.checkLists(stepNodes, cause),
      runChild: (task, child, origin, state, trace) =>
        runSubgraphTask(task, child, origin, { ns: this.ns, schema: settings.schema, state, place: this.place }, (spec, ns) => this.childRun(spec, ns, trace)),
    });
    return {
      schema: settings.schema,
      spec: settings.spec,
      nodeMapping: settings.nodeMapping,
      threadId: this.lease.threadId,
      place: this.place,
      runner,
      ...(settings.emit ? { emit: settings.emit } : {}),
      pending: this.pendingWrites(),
      revalidate: (tasks, results, origin, carried) => runner.revalidate(tasks, results, origin, cursor.state, carried),
      writeEffects: (entries) => writeEffectsToLedger(settings.engine.ledger, entries),
      stage: (merged) => cursor.stage(merged),
      unstage: () => cursor.unstage(),
      checkLists: (nodes) => {
        const refused = cursor.checkLists(() => nodes);
        if (refused) throw refused;
      },
    };
  }

  /** Finished tasks of a superstep with several, kept (sealed like a snapshot) until it commits. */
  private pendingWrites(): PendingWrites {
    const { lease, ns, cp } = this;
    const emit = this.settings.emit;
    return {
      async load(baseSeq) {
        const kept = new Map<string, StoredTaskResult>();
        for (const pending of await cp.getPendingWrites(lease.threadId, ns, baseSeq)) {
          // One that does not match its digest is not used: the task runs again, served
          // its recorded outputs and effect outcomes from the ledger.
          const text = pending.body.startsWith('{') ? pending.body : openSnapshot(pending.body);
          if (text !== null) kept.set(pending.task, decode<StoredTaskResult>(text, `pending write ${pending.task} at ${baseSeq}`));
        }
        return kept;
      },
      async save(baseSeq, { id: task, node: { name: node } }, result) {
        await cp.putPendingWrite(lease, { ns, baseSeq, task, body: sealSnapshot(encode(result, `writes of ${task}`)) });
        crashPoint('after-pending-write', node);
        emit?.({ type: 'pending.saved', threadId: lease.threadId, at: Date.now(), node, task, seq: baseSeq });
      },
    };
  }

  /**
   * The Run of a child namespace of this run, with the child graph's settings; traced
   * in a `cairn.run` span under `trace` (its subgraph task's span) when given.
   */
  private childRun(child: ChildSpec, ns: string, trace?: TraceSpan): ThreadRun {
    const { emit } = this.settings;
    return new ThreadRun(
      {
        ...this.settings,
        schema: child.schema,
        spec: child.spec,
        snapshotEvery: child.snapshotEvery ?? this.settings.snapshotEvery,
        recursionLimit: child.recursionLimit ?? CHILD_RECURSION_LIMIT,
        retry: child.retry ?? this.settings.retry,
        // A grandchild's events pass through here already named: keep the innermost ns.
        emit: emit ? (event) => emit({ ...event, ns: event.ns ?? ns }) : undefined,
        trace: trace?.child('cairn.run', { 'cairn.thread.id': this.lease.threadId, 'cairn.ns': ns, 'cairn.run.attempt': this.cursor.attempt }),
        nodeMapping: {},
      },
      this.lease,
      { ns, thread: this.thread, attempt: this.cursor.attempt, signals: this.signals },
    );
  }

  // ------------------------------------------------------------ answers

  private interruptOf(head: Head, id: string | undefined): PendingInterrupt {
    const pending = head.body.interrupts ?? [];
    const target = id === undefined ? (pending.length === 1 ? pending[0] : undefined) : pending.find((i) => i.id === id);
    if (!target) throw new InterruptNotFoundError(this.lease.threadId, id, pending.map((i) => i.id), this.place);
    return target;
  }

  /**
   * The answer to `target`: `input` as writes to this run's state, and for an interrupt
   * call the answer it resolves to (checked against the call's schema first). An
   * interrupt raised inside a child run is answered in the child (validated through
   * the child's reducers and committed there as its resume position): here nothing changes.
   */
  private async answerWrites(head: Head, target: PendingInterrupt, options: AnswerOptions): Promise<Answer> {
    const seq = head.position.seq;
    if (target.ns === undefined) {
      const merged = await mergeWrites(this.settings.schema, this.cursor.state, options.input ? [{ name: options.actor, writes: options.input }] : [], { ...this.place, seq });
      if (target.key === undefined) return { merged };
      const text = encode(options.answer, `answer to interrupt ${target.id}`);
      await this.checkAnswer(head, target, options.answer);
      return { merged, answer: { key: target.key, text } };
    }
    const name = own(this.settings.nodeMapping, target.node) ?? target.node;
    const child = this.settings.spec.nodes.get(name)?.child;
    if (!child) throw new GraphMismatchError([target.node], { ...this.place, seq }, 'resume');
    await this.childRun(child, target.ns).answerChild({ ...options, interrupt: target.child! });
    return { merged: noChanges() };
  }

  /**
   * Checks an interrupt call's answer before it is committed: the node runs again with
   * every recorded value served and nothing called or written, up to the call, where
   * the answer goes through the call's schema (StateValidationError: nothing changed).
   * A node that cannot be brought back there without calling something checks the
   * answer when it re-executes instead.
   */
  private async checkAnswer(head: Head, target: PendingInterrupt, answer: unknown): Promise<void> {
    const name = own(this.settings.nodeMapping, target.node) ?? target.node;
    const node = this.settings.spec.nodes.get(name);
    if (!node || node.child) throw new GraphMismatchError([target.node], { ...this.place, seq: head.position.seq }, 'resume');
    const { settings } = this;
    const scope = new TaskScope({
      threadId: this.lease.threadId,
      ns: this.ns,
      seq: head.body.suspended?.origin ?? head.position.seq,
      step: head.position.step + 1,
      node: name,
      task: target.task!,
      attempt: 1,
      signal: settings.signal,
      ledger: settings.engine.ledger,
      store: settings.engine.store,
      principal: this.thread.tenant,
      artifacts: settings.artifacts,
      emit: undefined,
      place: { ...this.place, seq: head.position.seq },
      carried: { answers: head.body.suspended?.answers ?? {}, waits: head.body.waits ?? [] },
      probe: { key: target.key!, answer },
    });
    let thrown: unknown;
    try {
      await withinNode(scope, () => node.fn(settings.schema.view(this.cursor.state as State) as never, scope as never));
    } catch (error) {
      thrown = error;
    }
    await scope.settle();
    // The node will be refused when it runs if it changed the state's lists: the answer is refused now, nothing changed.
    const refused = this.cursor.checkLists(() => [name]);
    if (refused) throw refused;
    // Read from the scope first: a node may have caught what the interrupt call threw (a tool loop hands it to the model).
    probeOutcome(scope.probed ?? thrown);
  }

  /** Commits the resume position that answers `target`, carrying what the superstep keeps until it runs. */
  private async commitAnswer(head: Head, target: PendingInterrupt, answer: Answer, actor: string): Promise<void> {
    const carried = head.body.cleared ?? [];
    const suspended = head.body.suspended;
    this.cursor.stage(answer.merged);
    await this.cursor.commit({
      kind: 'resume',
      nodes: [],
      next: head.body.next,
      interrupts: (head.body.interrupts ?? []).filter((i) => i !== target),
      ...(head.body.waits?.length ? { waits: head.body.waits } : {}),
      answered: target.id,
      // The node's name in this graph: an answer given with nodeMapping clears the renamed node's pause.
      cleared: target.when === 'before' && target.ns === undefined ? [...carried, own(this.settings.nodeMapping, target.node) ?? target.node] : carried,
      actor,
      ...(suspended
        ? { suspended: answer.answer ? { ...suspended, answers: { ...suspended.answers, [answer.answer.key]: answer.answer.text } } : suspended }
        : {}),
    });
  }

  /**
   * In a child run: answers the child's interrupt. Already answered (a crash came after
   * the child's answer committed but before the parent's): nothing to do.
   */
  private async answerChild(options: AnswerOptions & { interrupt: string }): Promise<void> {
    const head = await this.cursor.loadHead();
    if (!head) throw new CairnError(`child run ${this.ns} has no positions: its interrupt ${options.interrupt} cannot be answered.`, { place: this.place });
    const target = (head.body.interrupts ?? []).find((i) => i.id === options.interrupt);
    if (!target) return;
    const answer = await this.answerWrites(head, target, options);
    await this.commitAnswer(head, target, answer, options.actor);
  }

  // ------------------------------------------------------------ the thread record

  private async beginAttempt(options: AttemptOptions): Promise<void> {
    const status = options.status ?? (options.markRunning !== false ? ('running' as const) : undefined);
    this.thread = await this.cp.updateThread(this.lease, { ...(status ? { status } : {}), attempts: 1, lastError: null });
    this.cursor.beginAttempt(this.thread.attempts);
    this.settings.trace?.set({ 'cairn.run.attempt': this.cursor.attempt });
    this.settings.emit?.({
      type: 'run.start',
      threadId: this.lease.threadId,
      at: Date.now(),
      runId: this.lease.runId,
      attempt: this.cursor.attempt,
      head: this.cursor.head?.position.seq ?? null,
      resumed: options.resumed,
    });
  }

  /** Keeps a failed task execution in the thread's attempt history; a retry counts as a new attempt. */
  private async recordFailure(failure: TaskFailure): Promise<void> {
    if (!failure.willRetry) this.endingFailureKept = true;
    this.thread = await this.cp.updateThread(this.lease, {
      attempts: failure.willRetry ? 1 : 0,
      failure: { ns: this.ns, ...failure.error, node: failure.node, seq: this.cursor.head!.position.seq, attempt: this.thread.attempts, at: Date.now() },
    });
  }

  /**
   * Records why the run stopped. Only the graph's own failures (a node out of
   * retries, a rejected write, an at-most-once effect in doubt) change the status;
   * a lost lease, a cancellation or trouble reaching the database leave the thread
   * as it was, to be resumed.
   */
  private async fail(error: unknown): Promise<void> {
    if (LeaseLostError.is(error) || HeadMovedError.is(error)) return;
    const lastError = { ...describeError(error), at: Date.now(), ...(this.cursor.head ? { seq: this.cursor.head.position.seq } : {}) };
    const resumable = RunCancelledError.is(error) || EngineError.is(error);
    const status: ThreadStatus = resumable ? this.thread.status : NeedsAttentionError.is(error) ? 'needs_attention' : 'failed';
    // A failure no task kept (an effect in doubt, a rejected write, the recursion limit)
    // goes into the attempt history too: lastError is overwritten by the next attempt,
    // and the story of this one must still say how it ended.
    const failure = resumable || this.endingFailureKept ? {} : { failure: { ns: this.ns, ...lastError, attempt: this.thread.attempts } };
    await this.cp.updateThread(this.lease, resumable ? { lastError } : { status, lastError, ...failure }).catch(() => undefined);
    this.settings.trace?.set({ 'cairn.thread.status': status });
    this.settings.emit?.({ type: 'run.end', threadId: this.lease.threadId, at: Date.now(), status, seq: this.cursor.head?.position.seq ?? null, error: lastError.message });
  }

  // ------------------------------------------------------------ reading

  private outcome(status: ThreadStatus): RunOutcome {
    const body = this.cursor.head!.body;
    return { status, seq: this.cursor.head!.position.seq, state: this.cursor.state as State, interrupts: body.interrupts ?? [], waits: body.waits ?? [] };
  }

  // ------------------------------------------------------------ waits

  /**
   * Whether one of the head's waits may resolve now: a wake time or timeout passed, or
   * a signal of a name a wait takes is queued (its schema or filter may still pass it over).
   */
  private async wakeable(waits: readonly PendingWait[]): Promise<boolean> {
    const now = Date.now();
    if (waits.some((w) => w.until !== null && w.until <= now)) return true;
    const names = new Set(waits.flatMap((w) => (w.kind === 'signal' ? [w.name!] : [])));
    if (names.size === 0) return false;
    return (await this.signals.all()).some((s) => names.has(s.name));
  }

  /**
   * A thread cancelled while interrupted, taken back by run(): a new attempt that
   * starts where the thread stopped, waiting for the same answers (nothing runs).
   */
  private async reopen(): Promise<RunOutcome> {
    await this.beginAttempt({ resumed: true, status: 'interrupted' });
    return this.outcome('interrupted');
  }

  /**
   * A waiting thread run before it is due: nothing of the run changes, and the call
   * says what the thread waits for. The thread record is set back to `waiting` at its
   * wake time when something else moved it: a signal no wait takes (which made it
   * due), or a run that stopped between taking the thread and re-running its waits.
   */
  private async stillWaiting(): Promise<RunOutcome> {
    const waits = this.cursor.head!.body.waits ?? [];
    const wakeAt = wakeTime(waits);
    if (this.thread.status !== 'waiting' || this.thread.wakeAt !== wakeAt) {
      const seen = waits.some((w) => w.kind === 'signal') ? { signalsSeen: this.signals.seen } : {};
      this.thread = await this.cp.updateThread(this.lease, { status: 'waiting', wakeAt, ...seen });
    }
    return this.outcome('waiting');
  }

  /** The root namespace's head, as the thread record anchors it. */
  private async loadHead(): Promise<Head> {
    const head = await this.cursor.loadHead();
    if (!head) throw new CorruptRecordError(`the thread record names head ${this.thread.head} but anchors no head.`, { place: { ...this.place, seq: this.thread.head! } });
    return head;
  }

  /** Digest of the input that started the unfinished run (the newest input position). */
  private async lastInputDigest(): Promise<string | undefined> {
    let before: number | undefined;
    for (;;) {
      const page = await this.cp.listPositions(this.lease.threadId, '', { ...(before !== undefined ? { beforeSeq: before } : {}), limit: 50 });
      for (const p of page) {
        const body = decode<PositionBody>(p.body, `position ${p.seq}`);
        if (body.kind === 'input') return body.input;
      }
      if (page.length < 50) return undefined;
      before = page[page.length - 1]!.seq;
    }
  }
}

/**
 * Whether a superstep run from a waiting head stopped exactly where that head stops:
 * the same waits (keys, wake times), no interrupt, no task finished since, the same
 * child runs. That is a wait that found only signals its schema or filter refuses (or
 * a child run's such wait). Its position would say nothing the head does not, and
 * would be written again on every run of the thread; a run before the wait is due
 * writes none either. The refused signals stay queued as the wait left them, and the
 * thread record, set back to waiting with the signals its waits saw, keeps a signal
 * sent since due.
 */
function waitsAsHead(head: Head, outcome: StepOutcome): boolean {
  if (outcome.kind !== 'suspend' || !head.body.waits?.length) return false;
  const { draft } = outcome;
  const said = (body: Pick<PositionBody, 'next' | 'interrupts' | 'waits' | 'cleared' | 'children' | 'suspended'>) =>
    encode({
      next: body.next,
      interrupts: body.interrupts ?? [],
      waits: body.waits ?? [],
      cleared: body.cleared ?? [],
      children: body.children ?? [],
      suspended: body.suspended ?? null,
    });
  return said(draft) === said(head.body);
}
