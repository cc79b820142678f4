/**
 * @module runtime/run
 * One run of a graph on one thread, under a lease: load the head (or start the
 * thread), then superstep after superstep — run the scheduled nodes
 * concurrently, merge their writes, commit one position — until END, an error,
 * or the recursion limit.
 *
 * Crash windows and what covers them:
 * - a node's recorded outputs and effect outcomes are durable as they happen
 *   (ledger), so a re-executed node is served them and repeats nothing;
 * - in a superstep with several tasks, each finished task's writes are kept as a
 *   pending write, so a crash or failure of a sibling does not re-run it;
 * - the step commit is one transaction; until it lands the head stays put, and
 *   the next run re-executes the step from the same position with the same keys.
 *
 * A subgraph node runs a child `Run` in a namespace of its own on the same lease
 * (see `subgraph.ts`); positions are written through the run's {@link ThreadCursor}.
 */
import { own } from '../internal/own.js';
import type { Checkpointer } from '../contracts/checkpointer.js';
import type { Engine } from '../contracts/engine.js';
import type { ThreadLease, ThreadRecord, ThreadStatus } from '../contracts/threads.js';
import type { ArtifactStore } from '../contracts/artifact-store.js';
import { sha256Hex } from '../codec/hash.js';
import { decode, encode } from '../codec/tagged-json.js';
import {
  CairnError,
  CorruptRecordError,
  EngineError,
  GraphMismatchError,
  HeadMovedError,
  InterruptNotFoundError,
  LeaseLostError,
  NeedsAttentionError,
  NodeFailedError,
  RecursionLimitError,
  RunCancelledError,
  RunInProgressError,
  StaleReadError,
  StaleReadLimitError,
  ThreadInterruptedError,
  ThreadNotInterruptedError,
  type ErrorPlace,
} from '../errors.js';
import { crashPoint } from '../internal/crash-points.js';
import type { StateSchema } from '../state/schema.js';
import { MAX_STALE_RERUNS, TaskScope, findStaleRead, type ValidatedRead } from './context.js';
import type { EventSink } from './events.js';
import { START, nextNodes, type GraphSpec, type NodeSpec } from './graph.js';
import { checkUnanchored, materialize } from './materialize.js';
import { mergeWrites, type MergeResult, type Writer } from './merge.js';
import { openSnapshot, sealSnapshot, type CallRef, type PendingInterrupt, type PositionBody } from './position.js';
import { resolveRetry, retryDelay, type RetryPolicy } from './retry.js';
import { childNamespace, childResultWrites, sharedStart, type ChildSpec } from './subgraph.js';
import { ThreadCursor, type Head } from './cursor.js';

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
  signal: AbortSignal;
  /** Stored node names → the nodes of this graph that replace them. */
  nodeMapping: Readonly<Record<string, string>>;
}


interface TaskResult {
  writes: Record<string, unknown> | undefined;
  records: CallRef[];
  effects: CallRef[];
  interrupts: unknown[];
  /** Store reads made with validateAtCommit: checked again just before the step commits. */
  reads?: ValidatedRead[];
  /** A subgraph node's child namespace. */
  child?: string;
  /** A subgraph node whose child run stopped at these interrupts: the superstep waits for their answers. */
  suspended?: PendingInterrupt[];
}

interface Task {
  node: NodeSpec;
  id: string;
}

/** Where a run stopped. */
export interface RunOutcome {
  status: ThreadStatus;
  seq: number;
  state: Record<string, unknown>;
  /** Interrupts waiting for `resume`, when status is `interrupted`. */
  interrupts: PendingInterrupt[];
}


/** Where a child run (a subgraph node's) lives, and what it inherits from its parent run. */
export interface ChildScope {
  ns: string;
  thread: ThreadRecord;
  attempt: number;
}

/** Most supersteps of a child run whose graph was given as a builder (a compiled app keeps its own). */
const DEFAULT_CHILD_RECURSION_LIMIT = 100;

const NO_CHANGES = (state: Record<string, unknown>): MergeResult => ({ state, changes: new Map(), conflicts: [] });

/** The state of a run between steps. */
export class Run {
  private readonly cp: Checkpointer;
  private readonly place: ErrorPlace;
  /** Where the run stands in its namespace: head, state, and the way to the next position. */
  private readonly cursor: ThreadCursor;
  private thread: ThreadRecord;
  /** Checkpoint namespace: '' for the thread's root graph, the child's for a child run. */
  private readonly ns: string;
  /** A child run changes no thread status: its parent's run owns the thread record. */
  private readonly isChild: boolean;

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
    // A child namespace's head is found when the child starts (runChild).
    this.cursor = new ThreadCursor(this.cp, settings, lease, this.ns, this.thread.tenant, {
      lastSeq: child ? null : lease.thread.head,
      attempt: child?.attempt ?? lease.thread.attempts,
    });
  }

  /**
   * `run()`: starts a new thread, resumes an unfinished run, or starts a new run on a
   * completed thread given input. Runs until END, an interrupt, or an error.
   */
  async execute(input: Record<string, unknown> | undefined): Promise<RunOutcome> {
    const start = await this.prepare(input);
    if (start === 'nothing') return this.outcome(this.thread.status);
    if (start === 'resume') await this.beginAttempt(true);
    return this.loop();
  }

  /**
   * `submit()`: makes the thread runnable without running it: a new run's input is
   * committed (or nothing, if an unfinished run is already there) and a worker takes
   * it from there.
   */
  async submit(input: Record<string, unknown> | undefined): Promise<RunOutcome> {
    const start = await this.prepare(input);
    return this.outcome(start === 'nothing' ? this.thread.status : 'running');
  }

  /**
   * Brings the thread to where a run can go on: a new run's input committed
   * (`started`), an unfinished run found that this input (or none) may continue
   * (`resume`), or a completed thread given no input (`nothing`).
   */
  private async prepare(input: Record<string, unknown> | undefined): Promise<'started' | 'resume' | 'nothing'> {
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
    if (pending.length) throw new ThreadInterruptedError(threadId, pending.map((i) => i.id), this.place);
    if (head.body.next.length === 0) {
      if (input === undefined) return 'nothing';
      await this.startRun(input);
      return 'started';
    }
    if (input !== undefined && sha256Hex(encode(input, 'run input')) !== (await this.lastInputDigest())) throw new RunInProgressError(threadId, this.place);
    // Before anything changes: a graph that lost the next nodes fails the call, not the thread.
    this.scheduled(head, 'run');
    return 'resume';
  }

  /**
   * `resume()`: answers one pending interrupt with `input` (validated and merged
   * through the reducers, as a write by `actor`), then goes on when none is left.
   * Nothing is written when the thread is not interrupted or the input is invalid.
   */
  async resume(input: Record<string, unknown> | undefined, interruptId: string | undefined, actor: string, detach = false): Promise<RunOutcome> {
    const threadId = this.lease.threadId;
    if (this.thread.head === null) throw new ThreadNotInterruptedError(threadId, 'empty', this.place);
    const head = await this.loadHead();
    const pending = head.body.interrupts ?? [];
    if (pending.length === 0) throw new ThreadNotInterruptedError(threadId, this.thread.status, this.place);
    const target = interruptId === undefined ? (pending.length === 1 ? pending[0] : undefined) : pending.find((i) => i.id === interruptId);
    if (!target) throw new InterruptNotFoundError(threadId, interruptId, pending.map((i) => i.id), this.place);

    // The answer commits only if the run can go on from it: a renamed next node is
    // GraphMismatchError with nothing changed, and the same call with nodeMapping works.
    this.scheduled(head, 'resume');
    // Validated (and, for a child's interrupt, committed in the child) before anything here changes.
    const merged = await this.answerWrites(target, input, actor);
    // The status stays `interrupted` until the answer commits: a crash before that
    // must leave the thread listed as waiting for a person.
    await this.beginAttempt(true, false);
    await this.commitAnswer(head, target, merged, actor);
    if (detach) return this.outcome(this.cursor.head!.body.interrupts?.length ? 'interrupted' : this.cursor.head!.body.next.length ? 'running' : 'completed');
    return this.loop();
  }

  /**
   * The answer to `target` as writes to this run's state. An interrupt raised inside a
   * child run is answered in the child (validated through the child's reducers and
   * committed there as its resume position): here nothing changes.
   */
  private async answerWrites(target: PendingInterrupt, input: Record<string, unknown> | undefined, actor: string): Promise<MergeResult> {
    if (target.ns === undefined) {
      return mergeWrites(this.settings.schema, this.cursor.state, input ? [{ name: actor, writes: input }] : [], { ...this.place, seq: this.cursor.head!.position.seq });
    }
    const name = own(this.settings.nodeMapping, target.node) ?? target.node;
    const child = this.settings.spec.nodes.get(name)?.child;
    if (!child) throw new GraphMismatchError([target.node], { ...this.place, seq: this.cursor.head!.position.seq }, 'resume');
    await this.childRun(child, target.ns).answerChild(target.child!, input, actor);
    return NO_CHANGES(this.cursor.state);
  }

  /** Commits the resume position that answers `target`, carrying what the superstep keeps until it runs. */
  private async commitAnswer(head: Head, target: PendingInterrupt, merged: MergeResult, actor: string): Promise<void> {
    const carried = head.body.cleared ?? [];
    await this.cursor.commit({
      kind: 'resume',
      nodes: [],
      merged,
      next: head.body.next,
      interrupts: (head.body.interrupts ?? []).filter((i) => i !== target),
      answered: target.id,
      // The node's name in this graph: an answer given with nodeMapping clears the renamed node's pause.
      cleared: target.when === 'before' && target.ns === undefined ? [...carried, own(this.settings.nodeMapping, target.node) ?? target.node] : carried,
      actor,
      ...(head.body.suspended ? { suspended: head.body.suspended } : {}),
    });
  }

  /**
   * In a child run: answers the child's interrupt `id`. Already answered (a crash came
   * after the child's answer committed but before the parent's): nothing to do.
   */
  private async answerChild(id: string, input: Record<string, unknown> | undefined, actor: string): Promise<void> {
    const head = await this.loadNamespaceHead();
    if (!head) throw new CairnError(`child run ${this.ns} has no positions: its interrupt ${id} cannot be answered.`, { place: this.place });
    const target = (head.body.interrupts ?? []).find((i) => i.id === id);
    if (!target) return;
    const merged = await this.answerWrites(target, input, actor);
    await this.commitAnswer(head, target, merged, actor);
  }

  /**
   * A child run (a subgraph node's): the first time, commits the child's first position
   * from `start` (its input, or the shared fields); then goes on from the child's head
   * until the child's END or an interrupt.
   */
  async runChild(start: (initial: Record<string, unknown>) => Promise<MergeResult>): Promise<RunOutcome> {
    if (!(await this.loadNamespaceHead())) {
      this.cursor.start(this.settings.schema.initial());
      const merged = await start(this.cursor.state);
      const next = nextNodes(this.settings.spec, [START], this.settings.schema.view(merged.state), this.place);
      await this.cursor.commit({ kind: 'input', nodes: [], merged, next });
    }
    if (this.cursor.head!.body.interrupts?.length) return this.outcome('interrupted');
    return this.loop();
  }

  /** The Run of a child namespace of this run, with the child graph's settings. */
  private childRun(child: ChildSpec, ns: string): Run {
    const { emit } = this.settings;
    return new Run(
      {
        ...this.settings,
        schema: child.schema,
        spec: child.spec,
        snapshotEvery: child.snapshotEvery ?? this.settings.snapshotEvery,
        recursionLimit: child.recursionLimit ?? DEFAULT_CHILD_RECURSION_LIMIT,
        retry: child.retry ?? this.settings.retry,
        // A grandchild's events pass through here already named: keep the innermost ns.
        emit: emit ? (event) => emit({ ...event, ns: event.ns ?? ns }) : undefined,
        nodeMapping: {},
      },
      this.lease,
      { ns, thread: this.thread, attempt: this.cursor.attempt },
    );
  }

  /**
   * `fork()`: a new branch from position `fromSeq`. The patch goes through validation
   * and the reducers as a write by `actor`; the new position becomes the head (the old
   * branch stays as it was) and inherits the origin's next nodes and interrupts.
   */
  async fork(fromSeq: number, patch: Record<string, unknown> | undefined, actor: string): Promise<RunOutcome> {
    const loaded = await materialize(this.cp, this.settings.schema, this.lease.threadId, '', fromSeq);
    this.cursor.adopt(loaded);
    const merged = await mergeWrites(this.settings.schema, this.cursor.state, patch ? [{ name: actor, writes: patch }] : [], { ...this.place, seq: fromSeq });
    // The fork continues as its origin would: same next nodes, same pending interrupts,
    // same before-interrupts already answered. A superstep waiting for a child run is
    // the exception: the child's namespace belongs to the old branch, so the fork runs
    // that superstep afresh (its child runs start again in namespaces of their own).
    await this.cursor.commit({
      kind: 'fork',
      nodes: [],
      merged,
      next: loaded.body.next,
      interrupts: (loaded.body.interrupts ?? []).filter((i) => i.ns === undefined),
      ...(loaded.body.cleared ? { cleared: loaded.body.cleared } : {}),
      actor,
    });
    const status: ThreadStatus = this.cursor.head!.body.interrupts?.length ? 'interrupted' : this.cursor.head!.body.next.length ? 'running' : 'completed';
    return this.outcome(status);
  }

  /** Supersteps until END, an interrupt or an error (which marks the thread failed). */
  private async loop(): Promise<RunOutcome> {
    const { emit } = this.settings;
    try {
      let steps = 0;
      while (this.cursor.head!.body.next.length > 0 && !this.cursor.head!.body.interrupts?.length) {
        this.checkSignal();
        if (steps >= this.settings.recursionLimit) throw new RecursionLimitError(this.settings.recursionLimit, this.place);
        await this.superstep();
        steps++;
      }
    } catch (error) {
      // A child's failure is its parent node's to handle (retry, or fail the thread).
      if (!this.isChild) await this.fail(error);
      throw error;
    }
    const status: ThreadStatus = this.cursor.head!.body.interrupts?.length ? 'interrupted' : 'completed';
    emit?.({ type: 'run.end', threadId: this.lease.threadId, at: Date.now(), status, seq: this.cursor.head!.position.seq });
    return this.outcome(status);
  }

  /** Between steps: a lost lease stops the run as LeaseLostError, any other abort as a cancellation. */
  private checkSignal(): void {
    const { signal } = this.settings;
    if (!signal.aborted) return;
    if (LeaseLostError.is(signal.reason)) throw signal.reason;
    throw new RunCancelledError(this.lease.threadId, signal.reason, this.place);
  }

  private outcome(status: ThreadStatus): RunOutcome {
    return { status, seq: this.cursor.head!.position.seq, state: this.cursor.state, interrupts: this.cursor.head!.body.interrupts ?? [] };
  }

  // ------------------------------------------------------------ loading

  /** The root namespace's head, as the thread record anchors it. */
  private async loadHead(): Promise<Head> {
    const head = await this.loadNamespaceHead();
    if (!head) throw new CorruptRecordError(`the thread record names head ${this.thread.head} but anchors no head.`, { place: { ...this.place, seq: this.thread.head! } });
    return head;
  }

  /** This run's namespace's anchored head (null before its first position). */
  private async loadNamespaceHead(): Promise<Head | null> {
    const anchor = await this.cp.getHead(this.lease.threadId, this.ns);
    if (!anchor) {
      await checkUnanchored(this.cp, this.lease.threadId, this.ns);
      return null;
    }
    this.cursor.lastSeq = anchor.seq;
    const loaded = await materialize(this.cp, this.settings.schema, this.lease.threadId, this.ns, anchor.seq, { head: anchor });
    this.cursor.adopt(loaded);
    this.settings.emit?.({
      type: 'run.loaded',
      threadId: this.lease.threadId,
      at: Date.now(),
      seq: loaded.position.seq,
      next: loaded.body.next,
      storedVersion: loaded.storedVersion,
    });
    return this.cursor.head!;
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

  private async beginAttempt(resumed: boolean, markRunning = true): Promise<void> {
    this.thread = await this.cp.updateThread(this.lease, { ...(markRunning ? { status: 'running' as const } : {}), attempts: 1, lastError: null });
    this.cursor.attempt = this.thread.attempts;
    this.settings.emit?.({
      type: 'run.start',
      threadId: this.lease.threadId,
      at: Date.now(),
      runId: this.lease.runId,
      attempt: this.cursor.attempt,
      head: this.cursor.head?.position.seq ?? null,
      resumed,
    });
  }

  // ------------------------------------------------------------ steps

  /**
   * Starts a new run: the input is encoded, merged and checked before anything
   * changes, so rejected input leaves a completed thread completed, and leaves no
   * thread behind when this call created it: a thread that never committed a
   * position is deleted again (under this run's lease, so no other run's work is).
   */
  private async startRun(input: Record<string, unknown> | undefined): Promise<void> {
    let merged: MergeResult;
    let next: string[];
    let digest: string | undefined;
    try {
      digest = input === undefined ? undefined : sha256Hex(encode(input, 'run input'));
      merged = await mergeWrites(this.settings.schema, this.cursor.state, input === undefined ? [] : [{ name: 'input', writes: input }], this.place);
      next = nextNodes(this.settings.spec, [START], this.settings.schema.view(merged.state), this.place);
    } catch (error) {
      if (this.thread.head === null && this.thread.attempts === 0) await this.cp.deleteThread(this.lease.threadId, { lease: this.lease }).catch(() => undefined);
      else if (this.thread.head === null) await this.fail(error);
      throw error;
    }
    await this.beginAttempt(false);
    await this.cursor.commit({ kind: 'input', nodes: [], merged, next, ...(digest !== undefined ? { input: digest } : {}) });
  }

  /**
   * The nodes of `head`'s next superstep in this graph: stored names through
   * `nodeMapping`. Code may have renamed or removed nodes since the position was
   * written: GraphMismatchError, telling the user to pass nodeMapping to `call`.
   */
  private scheduled(head: Head, call: 'run' | 'resume'): string[] {
    const scheduled = head.body.next.map((name) => own(this.settings.nodeMapping, name) ?? name);
    const missing = head.body.next.filter((_, i) => !this.settings.spec.nodes.has(scheduled[i]!));
    if (missing.length) throw new GraphMismatchError(missing, { ...this.place, seq: head.position.seq }, call);
    return scheduled;
  }

  private async superstep(): Promise<void> {
    const head = this.cursor.head!;
    const { spec, schema } = this.settings;
    const place = { ...this.place, seq: head.position.seq };
    const tasks: Task[] = this.scheduled(head, 'run').map((name, index) => ({ node: spec.nodes.get(name)!, id: `${name}:${index}` }));

    // Declared pauses come first: nothing runs until they are answered (stored names mapped as the next nodes are).
    const cleared = (head.body.cleared ?? []).map((name) => own(this.settings.nodeMapping, name) ?? name);
    const before = tasks.filter((t) => t.node.options.interruptBefore && !cleared.includes(t.node.name));
    if (before.length) {
      const interrupts = before.map((t) => ({
        id: `${head.position.seq}:before:${t.node.name}`,
        node: t.node.name,
        when: 'before' as const,
        payload: declaredPayload(t.node.options.interruptBefore!, schema.view(this.cursor.state)),
      }));
      await this.cursor.commit({ kind: 'interrupt', nodes: [], merged: NO_CHANGES(this.cursor.state), next: head.body.next, interrupts });
      return;
    }

    // A superstep that waited for a child run's answer goes on as the one that started at
    // `origin`: same record and effect keys, same child namespaces, finished tasks kept.
    const origin = head.body.suspended?.origin ?? head.position.seq;
    const results = await this.runTasks(tasks, origin);
    if (results.some((r) => r.suspended)) return this.suspend(tasks, results, origin);
    // validateAtCommit: a task's store reads may have gone stale while it or a sibling was
    // still running. Check them all just before the commit and run the tasks whose reads
    // changed again, on fresh data (bounded). Only the commit's own round trip is left uncovered.
    for (let round = 0; results.some((r) => r.reads?.length); round++) {
      const stale = await Promise.all(results.map((r) => findStaleRead(this.settings.engine.store, r.reads ?? [], place)));
      const first = stale.findIndex((s) => s !== null);
      if (first < 0) break;
      if (round >= MAX_STALE_RERUNS) throw new StaleReadLimitError(tasks[first]!.node.name, round, stale[first]!, place);
      for (const [i, s] of stale.entries()) {
        if (!s) continue;
        await this.settings.engine.ledger.discardRecords(this.lease, results[i]!.records.map((r) => r.key));
        results[i] = await this.runTask(tasks[i]!, origin);
      }
    }
    const writers: Writer[] = tasks.map((task, i) => ({ name: task.node.name, writes: results[i]!.writes }));
    const merged = await mergeWrites(schema, this.cursor.state, writers, place);
    const ran = tasks.map((t) => t.node.name);
    const view = schema.view(merged.state);
    const next = nextNodes(spec, ran, view, place);
    const interrupts: PendingInterrupt[] = [];
    tasks.forEach((task, i) => {
      results[i]!.interrupts.forEach((payload, n) => interrupts.push({ id: `${head.position.seq}:${task.id}:${n}`, node: task.node.name, when: 'inside', payload }));
      const after = task.node.options.interruptAfter;
      if (after) interrupts.push({ id: `${head.position.seq}:after:${task.id}`, node: task.node.name, when: 'after', payload: declaredPayload(after, view) });
    });
    const children = results.flatMap((r) => (r.child ? [r.child] : []));
    await this.cursor.commit({
      kind: 'step',
      nodes: ran,
      merged,
      next,
      records: results.flatMap((r) => r.records),
      effects: results.flatMap((r) => r.effects),
      interrupts,
      ...(children.length ? { children } : {}),
    });
  }

  /**
   * A child run stopped at an interrupt: the thread is interrupted with the child's
   * interrupts (addressed `<child ns>#<child id>`), and the superstep waits, keeping
   * the results of the tasks that finished so that they do not run again.
   */
  private async suspend(tasks: Task[], results: TaskResult[], origin: number): Promise<void> {
    const head = this.cursor.head!;
    const interrupts: PendingInterrupt[] = [];
    const finished: Record<string, unknown> = {};
    tasks.forEach((task, i) => {
      const result = results[i]!;
      if (!result.suspended) {
        finished[task.id] = result;
        return;
      }
      for (const inner of result.suspended) {
        interrupts.push({ id: `${result.child}#${inner.id}`, node: task.node.name, when: inner.when, payload: inner.payload, ns: result.child!, child: inner.id });
      }
    });
    const children = results.flatMap((r) => (r.child ? [r.child] : []));
    await this.cursor.commit({
      kind: 'interrupt',
      nodes: [],
      merged: NO_CHANGES(this.cursor.state),
      next: head.body.next,
      interrupts,
      ...(head.body.cleared ? { cleared: head.body.cleared } : {}),
      children,
      suspended: { origin, tasks: finished },
    });
  }

  /** Runs a superstep's tasks concurrently; finished siblings are kept as pending writes. */
  private async runTasks(tasks: Task[], origin: number): Promise<TaskResult[]> {
    const base = this.cursor.head!.position;
    const reused = new Map<string, TaskResult>(Object.entries((this.cursor.head!.body.suspended?.tasks ?? {}) as Record<string, TaskResult>));
    if (tasks.length > 1) {
      for (const pending of await this.cp.getPendingWrites(this.lease.threadId, this.ns, base.seq)) {
        // Sealed like a snapshot. One that does not match its digest is not used: the task
        // runs again, served its recorded outputs and effect outcomes from the ledger.
        const text = pending.body.startsWith('{') ? pending.body : openSnapshot(pending.body);
        if (text !== null) reused.set(pending.task, decode<TaskResult>(text, `pending write ${pending.task} at ${base.seq}`));
      }
    }
    let unfinished = tasks.filter((t) => !reused.has(t.id)).length;
    const settled = await Promise.allSettled(
      tasks.map(async (task) => {
        const kept = reused.get(task.id);
        if (kept) {
          this.settings.emit?.({ type: 'task.reused', threadId: this.lease.threadId, at: Date.now(), node: task.node.name, task: task.id, seq: base.seq });
          return kept;
        }
        const result = await this.runTask(task, origin);
        unfinished--;
        // Only worth a write when a sibling is still running: otherwise the step commits next.
        // A suspended subgraph task has not finished: it goes on when its child is answered.
        if (tasks.length > 1 && unfinished > 0 && !result.suspended) {
          await this.cp.putPendingWrite(this.lease, { ns: this.ns, baseSeq: base.seq, task: task.id, body: sealSnapshot(encode(result, `writes of ${task.id}`)) });
          crashPoint('after-pending-write', task.node.name);
          this.settings.emit?.({ type: 'pending.saved', threadId: this.lease.threadId, at: Date.now(), node: task.node.name, task: task.id, seq: base.seq });
        }
        return result;
      }),
    );
    const failure = settled.find((s) => s.status === 'rejected');
    if (failure) throw (failure as PromiseRejectedResult).reason;
    return settled.map((s) => (s as PromiseFulfilledResult<TaskResult>).value);
  }

  private async runTask(task: Task, origin: number): Promise<TaskResult> {
    const { settings } = this;
    const base = this.cursor.head!.position;
    const policy = resolveRetry(settings.retry, task.node.options.retry);
    const place = { ...this.place, seq: base.seq };
    for (let attempt = 1, staleReruns = 0; ; attempt++) {
      const scope = new TaskScope({
        threadId: this.lease.threadId,
        ns: this.ns,
        seq: origin,
        step: base.step + 1,
        node: task.node.name,
        task: task.id,
        attempt,
        signal: settings.signal,
        ledger: settings.engine.ledger,
        store: settings.engine.store,
        principal: this.thread.tenant,
        artifacts: settings.artifacts,
        emit: settings.emit,
        place,
      });
      settings.emit?.({ type: 'task.start', threadId: this.lease.threadId, at: Date.now(), node: task.node.name, task: task.id, seq: base.seq, attempt });
      try {
        if (task.node.child) return await this.runSubgraph(task, task.node.child, origin);
        const writes = await task.node.fn(settings.schema.view(this.cursor.state) as never, scope);
        await scope.settle();
        return { writes: writes ?? undefined, records: scope.records, effects: scope.effects, interrupts: scope.interrupts, reads: scope.validatedReads };
      } catch (error) {
        await scope.settle();
        if (NeedsAttentionError.is(error)) throw error;
        // A node stopped by the run's signal did not fail: the step is redone on resume.
        if (settings.signal.aborted) this.checkSignal();
        // A store write found a validateAtCommit read stale (nothing was written): run the
        // node again on fresh data as the same attempt, with its recorded outputs discarded.
        if (StaleReadError.is(error)) {
          if (staleReruns < MAX_STALE_RERUNS) {
            staleReruns++;
            await settings.engine.ledger.discardRecords(this.lease, scope.recordKeys);
            attempt--;
            continue;
          }
          error = new StaleReadLimitError(task.node.name, staleReruns, error, place);
        }
        const willRetry = attempt < policy.maxAttempts && policy.retryOn(error) && !settings.signal.aborted;
        // Outputs recorded by a failed attempt led to the failure: the retry asks again.
        await settings.engine.ledger.discardRecords(this.lease, scope.recordKeys);
        this.thread = await this.cp.updateThread(this.lease, {
          attempts: willRetry ? 1 : 0,
          failure: { ns: this.ns, ...describeError(error), node: task.node.name, seq: base.seq, attempt: this.thread.attempts, at: Date.now() },
        });
        settings.emit?.({
          type: 'task.failed',
          threadId: this.lease.threadId,
          at: Date.now(),
          node: task.node.name,
          task: task.id,
          attempt,
          error: describeError(error).message,
          willRetry,
        });
        if (!willRetry) throw CairnError.is(error) ? error : new NodeFailedError(task.node.name, attempt, error, place);
        await sleep(retryDelay(policy, attempt), settings.signal);
      }
    }
  }

  /**
   * Runs a subgraph node: its child run, in the namespace of this task of the superstep
   * that started at `origin`, started or continued where it stopped. The node's writes
   * are the child's mapped output (isolated) or its net change (shared).
   */
  private async runSubgraph(task: Task, child: ChildSpec, origin: number): Promise<TaskResult> {
    const ns = childNamespace(this.ns, task.id, origin);
    const view = this.settings.schema.view(this.cursor.state);
    const place = { ...this.place, ns };
    const shared = await sharedStart(child, this.cursor.state, place);
    const run = this.childRun(child, ns);
    const outcome = await run.runChild(async (initial) => {
      if (shared) return shared.seed;
      const input = child.input?.(view as never);
      return mergeWrites(child.schema, initial, input ? [{ name: 'input', writes: input }] : [], place);
    });
    const result: TaskResult = { writes: undefined, records: [], effects: [], interrupts: [], child: ns };
    if (outcome.status === 'interrupted') return { ...result, suspended: outcome.interrupts };
    return { ...result, writes: childResultWrites(child, shared, outcome.state, view) };
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
    await this.cp.updateThread(this.lease, resumable ? { lastError } : { status, lastError }).catch(() => undefined);
    this.settings.emit?.({ type: 'run.end', threadId: this.lease.threadId, at: Date.now(), status, seq: this.cursor.head?.position.seq ?? null, error: lastError.message });
  }
}

/** The payload of a declared interrupt: the node's function of the state, or the node's name. */
function declaredPayload(declared: boolean | ((state: never) => unknown), state: unknown): unknown {
  return typeof declared === 'function' ? declared(state as never) : null;
}

function describeError(error: unknown): { code: string; message: string } {
  if (error instanceof Error) return { code: (error as { code?: string }).code ?? error.name, message: error.message };
  return { code: 'ERR_THROWN', message: String(error) };
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (ms <= 0) return resolve();
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(signal.reason);
    }, { once: true });
  });
}
