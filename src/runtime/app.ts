/**
 * @module runtime/app
 * A compiled graph bound to an engine: `run` a thread (resuming it if a previous
 * run stopped part-way), read its state now or at any position, list its
 * history, verify its hash chain.
 *
 * @example
 * ```ts
 * const app = graph(State).node(...).edge(...).compile({ engine: sqlite('./cairn.db') });
 * const { state } = await app.run({ thread: 'cust_42' });  // after a crash, the same call resumes
 * ```
 */
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import type { ArtifactStore } from '../contracts/artifact-store.js';
import type { Engine } from '../contracts/engine.js';
import type { DeleteThreadOptions, DeleteThreadResult, ThreadKind, ThreadLease, ThreadQuery, ThreadRecord, ThreadStatus } from '../contracts/threads.js';
import { encode } from '../codec/tagged-json.js';
import { BUSY_WAIT_MS, LEASE_MS, RECURSION_LIMIT, SNAPSHOT_EVERY } from '../defaults.js';
import { EffectConflictError, EffectNotFoundError, EngineError, GraphMismatchError, InvalidOptionError, LeaseLostError, RunCancelledError, ThreadBusyError } from '../errors.js';
import { threadAttempts, type ThreadAttempts } from '../inspect/attempts.js';
import { threadHistory, type HistoryPage, type PositionInfo } from '../inspect/history.js';
import { cancelThread, type CancelThreadOptions, type CancelThreadResult } from '../inspect/cancel.js';
import { signalThread, type SentSignal } from '../inspect/signal.js';
import { namespaceHead } from '../inspect/walk.js';
// Maintenance and inspection that no run needs (verify, replay, evaluate, erase) is
// imported where it is called, so a process that only runs threads never loads it.
import type { EraseOptions, ErasureReport } from '../inspect/erase.js';
import type { VerifyReport } from '../inspect/verify.js';
import type { StateOf, StateSchema, UpdateOf } from '../state/schema.js';
import type { EventSink, RunEvent } from './events.js';
import { describeGraph, publishGraph } from './graph-description.js';
import { checkCompileOptions, checkEvaluateOptions, checkForkOptions, checkResumeOptions, checkRunOptions, checkThreadCall, checkThreadQueryKeys } from './call-options.js';
import { namespaceGraph, namespaceOption, withDeclaredPauses, type GraphSpec } from './graph-spec.js';
import { materialize, materializeHead } from './materialize.js';
import type { PendingInterrupt, PendingWait } from './position.js';
import type { ReplayReport } from './replay.js';
import type { EvaluationReport, EvaluationSelection } from './evaluate.js';
import { streamRun, type RunStream } from './stream.js';
import type { RetryPolicy } from './retry.js';
import { ThreadRun, type RunOutcome } from './run-control.js';
import { TraceSpan, preloadTracing } from './tracing.js';
import { keepOwner, releaseLeftover, releaseOrKeep, takeOwner } from './unreleased-leases.js';
import { parsePath, Redactor, redactionRules, type RedactionRules, type RedactOptions } from '../internal/redaction.js';
import { checkNewThread } from '../internal/thread-query.js';
import { redactError } from './redacted-errors.js';

/** How a compiled graph stores and runs its threads: `graph(State)...compile(options)`. */
export interface CompileOptions {
  /**
   * The graph's name, kept on the threads it creates (`metadata.graph`): workers of
   * this graph claim only those. Default `default`.
   */
  name?: string;
  /** Where threads, the ledger and the store live: `sqlite(path)`, `memory()`. */
  engine: Engine;
  /** Where `ctx.artifacts` puts big payloads: `fsArtifacts(dir)`, `memoryArtifacts()`. */
  artifacts?: ArtifactStore;
  /** Write a snapshot at least every this many positions: a whole number, 1 or more. Default 50 (`SNAPSHOT_EVERY`). */
  snapshotEvery?: number;
  /** Most supersteps one run may take: a whole number, 1 or more. Default 100. */
  recursionLimit?: number;
  /** Default retry policy of every node. */
  retry?: Partial<RetryPolicy>;
  /** Lease length, ms: a whole number, 1 or more; a run renews it while working. Default 30 s. */
  leaseMs?: number;
  /**
   * Nodes to pause before, as `.node(name, fn, { interruptBefore: true })` declares
   * one: the run stops `interrupted` before the node runs, and `resume({ thread, input })`
   * goes on. A node that declares its own pause keeps it. A name that is no node of
   * the graph is UnknownNodeError.
   *
   * @example
   * ```ts
   * compile({ engine, interruptBefore: ['send_email'], interruptAfter: ['draft'] })
   * ```
   */
  interruptBefore?: readonly string[];
  /** Nodes to pause after (once their step commits), as `.node(name, fn, { interruptAfter: true })` declares one. */
  interruptAfter?: readonly string[];
  /** Receives every run event (redacted by `redact` and the schema's redacted fields). */
  onEvent?: EventSink;
  /**
   * OpenTelemetry spans of every run (`cairn.run`, `cairn.superstep`, `cairn.task`, …)
   * when `@opentelemetry/api` is installed and a tracer provider is registered. Default
   * on; `false` turns them off (cairn then never loads the API).
   */
  tracing?: boolean;
  /**
   * What every face that shows this graph's stored data hides, beside the fields
   * declared `redact: true`: state paths, recorded outputs and effect outcomes by
   * name, and patterns matched inside every string. Kept with the graph's description
   * in the store, so `cairn show`, the inspector and exports apply them without the
   * code; run events, streams, spans and the messages of errors a run throws apply
   * them here. Stored values, and what the program reads (`getState`, `stateAt`,
   * `history`, nodes), stay intact. InvalidOptionError for a path that does not parse
   * or does not start at a field of the state (or of a child graph's), or a pattern
   * that does not compile.
   *
   * @example
   * ```ts
   * compile({ engine, redact: { paths: ['customer.email', 'messages[*].content'], records: { crm: true }, patterns: [/sk-[A-Za-z0-9]{8,}/] } })
   * ```
   */
  redact?: RedactOptions;
}

/** Options of {@link App.run} and {@link App.submit}: the thread, its input, and how to wait for it. */
export interface RunOptions<S extends StateSchema> {
  thread: string;
  /** Writes merged into the state before the first node runs (a new run). Omit to resume. */
  input?: UpdateOf<S>;
  /** What a new thread is for (default `task`): one of the kinds `listThreads` filters on, else InvalidOptionError. */
  kind?: ThreadKind;
  /** A new thread's tenant: 1 to 256 characters without control characters (InvalidKeyError otherwise), as artifact refs and tenant-scoped engines take. */
  tenant?: string;
  /** A new thread's metadata: plain JSON (no bigint, function, symbol, undefined, NaN, Date, class instance or cycle: InvalidOptionError naming the key). */
  metadata?: Record<string, unknown>;
  /** When another run holds the thread: `throw` ThreadBusyError (default) or `wait` for it. */
  onBusy?: 'throw' | 'wait';
  /** Longest wait under `onBusy: 'wait'`, ms: 0 (try once) or more. Default 30 s. */
  waitTimeoutMs?: number;
  /** Most supersteps this run may take: a whole number, 1 or more. Default: `compile({ recursionLimit })`. */
  recursionLimit?: number;
  signal?: AbortSignal;
  /** Receives this run's events, redacted as `compile({ onEvent })`'s are unless `rawEvents`. */
  onEvent?: EventSink;
  /**
   * Hand this call's `onEvent` (and {@link App.stream}'s events) the values as they are,
   * not redacted: for the program's own consumer, never for a log or a browser.
   * `compile({ onEvent })` and spans stay redacted. Default false.
   */
  rawEvents?: boolean;
  /**
   * Nodes renamed since the thread was written: stored name → node of this graph. A
   * stored next node that is neither in the graph nor mapped is GraphMismatchError.
   */
  nodeMapping?: Record<string, string>;
}

/** Where a run stopped: the thread's status, its head position and state, and any interrupts pending. */
export interface RunResult<S extends StateSchema> {
  threadId: string;
  status: ThreadStatus;
  /** Seq of the head position. */
  seq: number;
  state: StateOf<S>;
  /** What the thread waits for when `status` is `interrupted`: a person's answer. */
  interrupts: PendingInterrupt[];
  /** What the thread waits for when `status` is `waiting`: a time, or a signal. */
  waits: PendingWait[];
}

/** Options of {@link App.resume}: the interrupted thread, the answer, and who gave it. */
export interface ResumeOptions<S extends StateSchema> extends Omit<RunOptions<S>, 'input' | 'kind' | 'tenant' | 'metadata'> {
  /**
   * What `await ctx.interrupt(...)` resolves to when the node re-executes: checked by
   * the call's `answer` schema before anything is committed (StateValidationError:
   * nothing changed). Only for interrupts raised by that call (theirs have a `key`).
   */
  answer?: unknown;
  /**
   * Writes to model fields, validated and merged through the reducers, as a write by
   * `actor`: how a declared pause (`interruptBefore` / `interruptAfter`) or
   * `ctx.interruptAfter` is answered; may go with an `answer`. For an interrupt raised
   * inside a child run (its `ns` is set), writes to the child's fields, merged through
   * the child's reducers: pass them with `childInput`.
   */
  input?: UpdateOf<S>;
  /**
   * For an interrupt raised inside a child run: writes to the child graph's fields.
   * Not with `input`, and not for an interrupt of this graph's own nodes:
   * InvalidOptionError, nothing changed.
   */
  childInput?: Record<string, unknown>;
  /** Which interrupt this answers; needed when several are pending. */
  interrupt?: string;
  /** Commit the answer and return without running on: a worker continues the thread. */
  detach?: boolean;
  /** Who answered (kept in the position). Default `resume`. */
  actor?: string;
}

/** Options of {@link App.fork}: the thread, the position to branch from, and what to change there. */
export interface ForkOptions<S extends StateSchema> extends ThreadOption {
  /** The position the new branch starts from. */
  seq: number;
  /** Writes applied on top of the origin's state, validated and merged through the reducers. */
  patch?: UpdateOf<S>;
  /** Who forked (kept in the position). Default `fork`. */
  actor?: string;
  onBusy?: 'throw' | 'wait';
}

/** Which thread a call is about: every method of an {@link App} names it the same way. */
export interface ThreadOption {
  thread: string;
}

/** Which checkpoint namespace of a thread: '' (default) for the root graph, a child run's for a subgraph's. */
export interface NamespaceOption {
  ns?: string;
}

/** The root graph's namespace (no `ns`, or `''`): reads typed by the app's own state. */
export interface RootNamespace {
  ns?: '';
}

/** Options of {@link App.stateAt}. */
export interface StateAtOptions extends ThreadOption, NamespaceOption {
  /** The position whose state to read. */
  seq: number;
}

/** Options of {@link App.history}: the thread, and which page of its history (namespace, `beforeSeq`, `limit`). */
export interface HistoryOptions extends ThreadOption, HistoryPage {}

/** Options of {@link App.replay}. */
export interface ReplayOptions extends ThreadOption {
  /** The position to replay from. */
  from: number;
  /** The position to replay to, on its branch. Default: the head. */
  to?: number;
}

/** Options of {@link App.evaluate}: which stored threads, and the code to evaluate them with. */
export interface EvaluateOptions extends EvaluationSelection {
  /**
   * The application under evaluation (another prompt, model or code, compiled on any
   * engine: only its graph is used). Default: this app, as when its code changed.
   */
  with?: App<StateSchema>;
}

/** Options of {@link App.signal}: the thread, the signal's name, and its payload. */
export interface SignalOptions extends ThreadOption {
  /** The name a `ctx.waitFor(name)` takes. */
  name: string;
  /** Any value the codec stores (default null). */
  payload?: unknown;
}

/** Options of {@link App.resolveEffect}. */
export interface ResolveEffectOptions extends ThreadOption {
  /** The effect's idempotency key (as `cairn effects` lists it). */
  idempotencyKey: string;
  /** The outcome a person checked by hand; the next run is served it. */
  outcome: unknown;
}

/**
 * A compiled graph bound to an engine. Every method names its thread the same way,
 * `{ thread }`, and takes one options object, checked before anything is read, taken
 * or stored: a key the method does not take (`{ thread, sq: 2 }`, `ifStatuss`) or a
 * value of the wrong kind is InvalidOptionError naming it, and a thread id that is not
 * a non-empty string is InvalidKeyError.
 *
 * @example
 * ```ts
 * const app = graph(State).node(...).edge(...).compile({ engine: sqlite('./cairn.db') });
 * const { state } = await app.run({ thread: 'cust_42' });  // after a crash, the same call resumes
 * await app.stateAt({ thread: 'cust_42', seq: 2 });
 * ```
 */
export class App<S extends StateSchema> {
  /** Lease length of this app's runs (`compile({ leaseMs })`); renewed while a run works. */
  readonly leaseMs: number;
  /** The graph's description kept in the store, once per app instance (see runtime/graph-description). */
  private published?: Promise<void>;
  /** What the faces hide: `compile({ redact })` and every field declared `redact: true`, of this graph and its child graphs. */
  readonly redaction: RedactionRules;

  /** The graph as its runs see it: the builder's, with the pauses `compile({ interruptBefore, interruptAfter })` lists. */
  readonly spec: GraphSpec;

  constructor(
    readonly schema: S,
    spec: GraphSpec,
    readonly options: CompileOptions,
  ) {
    const engine = (options as Partial<CompileOptions> | undefined)?.engine;
    if (engine === null || typeof engine !== 'object' || !engine.checkpointer || !engine.ledger || !engine.store) {
      throw new InvalidOptionError(`compile() needs an engine to keep the graph's threads in: compile({ engine: sqlite('./cairn.db') }) (or memory(), postgres(url)); got ${engine === undefined ? 'none' : String(engine)}.`);
    }
    checkCompileOptions(options as unknown as Record<string, unknown>);
    this.spec = withDeclaredPauses(spec, options);
    this.leaseMs = options.leaseMs ?? LEASE_MS;
    this.redaction = redactionRules(options.redact, redactedFieldNames(schema, this.spec));
    checkRedactPaths(options.redact?.paths ?? [], stateKeyNames(schema, this.spec));
    this.defaultsChecked = checkDefaults(schema, this.spec);
  }

  /** Set while some field default is being validated asynchronously: the first run awaits it. */
  private defaultsChecked: Promise<void> | undefined;

  get engine(): Engine {
    return this.options.engine;
  }

  /** The graph's name (`compile({ name })`), kept on its threads as `metadata.graph`. */
  get name(): string {
    return this.options.name ?? 'default';
  }

  /** This app as the child of a subgraph node: its graph, and the settings its child runs keep. */
  toSubgraph(): { spec: GraphSpec; recursionLimit?: number; retry?: Partial<RetryPolicy>; snapshotEvery?: number } {
    const { recursionLimit, retry, snapshotEvery } = this.options;
    return {
      spec: this.spec,
      ...(recursionLimit !== undefined ? { recursionLimit } : {}),
      ...(retry !== undefined ? { retry } : {}),
      ...(snapshotEvery !== undefined ? { snapshotEvery } : {}),
    };
  }

  /**
   * Runs the thread to END. A new thread starts from START; a thread whose last run
   * stopped part-way (crash, failure) resumes from its last position, repeating no
   * recorded output and no landed effect; a completed thread starts a new run when
   * given `input` and is returned as it is otherwise.
   */
  async run(options: RunOptions<S>): Promise<RunResult<S>> {
    checkRunOptions('run', options);
    return this.withRun(options, { renew: true }, (run) => run.execute(options.input as Record<string, unknown> | undefined));
  }

  /**
   * Runs the thread as {@link App.run} does, as an async iterable of its events: what
   * `onEvent` receives plus what nodes emit with `ctx.emit(data)`, each with its
   * thread, namespace and seq. Breaking out of the loop cancels the run between steps
   * and releases the thread (it stays resumable); `result` is how the run ended.
   *
   * @example
   * ```ts
   * const stream = app.stream({ thread: 't1', input: { question: 'why?' } });
   * for await (const event of stream) {
   *   if (event.type === 'custom') process.stdout.write(String(event.data));   // tokens a node emitted
   *   if (event.type === 'step.commit') console.log(`\ncommitted seq ${event.seq}`);
   * }
   * const { status, state } = await stream.result;
   * ```
   */
  stream(options: RunOptions<S>): RunStream<RunResult<S>> {
    return streamRun(async (sink, signal) => {
      // Checked as given: the stream wraps the caller's onEvent and signal in its own.
      checkRunOptions('stream', options);
      return this.run({
        ...options,
        // The stream is this call's own consumer: redacted as its onEvent is, unless rawEvents.
        // The stream's own sink first: an onEvent that throws does not keep the event from the loop.
        onEvent: options.onEvent ? (event) => (sink(event), options.onEvent!(event)) : sink,
        signal: options.signal ? AbortSignal.any([options.signal, signal]) : signal,
      });
    });
  }

  /**
   * Answers an interrupt, in this process or any other, however long after it, then
   * the run goes on. For `await ctx.interrupt(payload, { answer: schema })`, give
   * `answer`: the node re-executes, served what it recorded, and the call resolves to
   * it. For a declared pause or `ctx.interruptAfter`, give `input`: writes validated
   * and merged into the state through the reducers (as a write by `actor`). With
   * several pending interrupts (parallel nodes, or several calls), name the one
   * answered with `interrupt`; the thread stays interrupted until the last is answered.
   * Throws ThreadNotInterruptedError, InterruptNotFoundError, StateValidationError,
   * InvalidOptionError or GraphMismatchError without changing anything.
   *
   * @example
   * ```ts
   * const { interrupts } = await app.run({ thread: 't1', input: { amount: 120 } });  // status 'interrupted'
   * await app.resume({ thread: 't1', answer: true, actor: 'ana@example.com' });
   * ```
   */
  async resume(options: ResumeOptions<S>): Promise<RunResult<S>> {
    checkResumeOptions(options);
    return this.withRun({ ...options, create: false }, { renew: true }, (run) =>
      run.resume({
        input: (options.childInput ?? options.input) as Record<string, unknown> | undefined,
        childWrites: options.childInput !== undefined,
        ...('answer' in options ? { answer: options.answer, hasAnswer: true } : {}),
        interrupt: options.interrupt,
        actor: options.actor ?? 'resume',
        detach: options.detach === true,
      }),
    );
  }

  /**
   * Makes a thread runnable without running it here: the input is committed and the
   * thread left `running` for a worker (`cairn worker`, {@link Worker}) to claim.
   * Repeating the call with the same input while the run is unfinished changes nothing.
   */
  async submit(options: RunOptions<S>): Promise<RunResult<S>> {
    checkRunOptions('submit', options);
    return this.withRun(options, { renew: false }, (run) => run.submit(options.input as Record<string, unknown> | undefined));
  }

  /**
   * @internal Loads ahead what this app's first run would load on its way (the
   * OpenTelemetry API, unless `tracing: false`): a {@link Worker} calls it as it
   * starts, so that the first thread it claims does not wait for the import.
   */
  prepareRuns(): void {
    if (this.options.tracing !== false) preloadTracing();
  }

  /**
   * Runs a thread a worker has claimed (the lease is the worker's; it is released at the end).
   * `leaseMs` is the length the worker claimed it for, which the run renews it to.
   */
  async runClaimed(lease: ThreadLease, options: { signal?: AbortSignal; onEvent?: EventSink; leaseMs?: number } = {}): Promise<RunResult<S>> {
    const { leaseMs, ...rest } = options;
    return this.withRun({ thread: lease.threadId, ...rest }, { renew: true, lease, ...(leaseMs !== undefined ? { leaseMs } : {}) }, (run) => run.execute(undefined));
  }

  /**
   * Starts a new branch from position `seq`: `patch` goes through validation and the
   * reducers as a write by `actor`, the new position becomes the head, and the old
   * branch stays inspectable. `run()` then continues from the fork.
   */
  async fork(options: ForkOptions<S>): Promise<RunResult<S>> {
    checkForkOptions(options);
    return this.withRun({ thread: options.thread, create: false, ...(options.onBusy ? { onBusy: options.onBusy } : {}) }, { renew: false }, (run) =>
      run.fork({ seq: options.seq, patch: options.patch as Record<string, unknown> | undefined, actor: options.actor ?? 'fork' }),
    );
  }

  /** One run, in its `cairn.run` span when tracing records. */
  private async withRun(
    options: Omit<RunOptions<S>, 'input'> & { create?: boolean },
    hold: { renew: boolean; lease?: ThreadLease; leaseMs?: number },
    body: (run: ThreadRun) => Promise<RunOutcome>,
  ): Promise<RunResult<S>> {
    const redactor = new Redactor(this.redaction);
    // The input's redacted values, hidden from the first event on (and from a validation error that quotes one).
    const input = (options as { input?: unknown }).input;
    if (redactor.active && typeof input === 'object' && input !== null) redactor.learnState(input as Record<string, unknown>);
    const shown = (sink: EventSink | undefined): EventSink | undefined => (sink && redactor.active ? (event) => sink(redactor.value(event) as RunEvent) : sink);
    const sinks = [shown(this.options.onEvent), options.rawEvents === true ? options.onEvent : shown(options.onEvent)].filter((s): s is EventSink => s !== undefined);
    // No sink: no event objects are even built (the runtime calls emit?.(...)).
    // Observing a run never changes it: a sink that throws is passed over, neither a node's
    // failure (retried, run again) nor the run's (a throw at run.end would report a
    // committed run as failed).
    const emit: EventSink | undefined = sinks.length === 0 ? undefined : (event: RunEvent) => sinks.forEach((sink) => notify(sink, event));
    // Asked once per run: with no provider registered (or tracing off) no span exists and nothing below builds one.
    const trace = this.options.tracing === false ? undefined : await TraceSpan.startRun({ 'cairn.thread.id': options.thread }, redactor.active ? (text) => redactor.text(text) : undefined);
    try {
      // Only path rules learn from the state; patterns need nothing of it.
      const observe = redactor.rules.paths.length ? (state: Readonly<Record<string, unknown>>) => redactor.learnState(state) : undefined;
      if (!trace) return await this.runHeld(options, hold, body, emit, undefined, observe);
      return await trace.run(() => this.runHeld(options, hold, body, emit, trace, observe));
    } catch (error) {
      throw redactError(error, redactor);
    }
  }

  /** Holds the thread's lease around one run: taken (or the worker's), renewed while it works (`renew`), released after. */
  private async runHeld(
    options: Omit<RunOptions<S>, 'input'> & { create?: boolean },
    hold: { renew: boolean; lease?: ThreadLease; leaseMs?: number },
    body: (run: ThreadRun) => Promise<RunOutcome>,
    emit: EventSink | undefined,
    trace: TraceSpan | undefined,
    observeState: ((state: Readonly<Record<string, unknown>>) => void) | undefined,
  ): Promise<RunResult<S>> {
    // Checked as given, before the graph's name joins the metadata and before anything is
    // written: a thread stores only a kind, tenant and metadata it can be listed and read back by.
    if (options.create !== false && !hold.lease) checkNewThread(options);
    if (this.defaultsChecked) await this.defaultsChecked;
    // One put-if-absent per app instance: inspection tools draw the graph from it. It is
    // an aid, not part of the run: a store that refuses it does not stop the run, and
    // the run does not wait for it before taking its thread (it is awaited at the end).
    const published = (this.published ??= publishGraph(this.options.engine.store, describeGraph(this.spec, this.name, this.redaction)).then(
      () => undefined,
      () => undefined,
    ));
    const lease = hold.lease ?? (await this.acquire(options));
    const controller = new AbortController();
    const stopRenewal = hold.renew ? this.keepLease(lease, controller, hold.leaseMs ?? this.leaseMs) : () => undefined;
    const signal = options.signal ? AbortSignal.any([options.signal, controller.signal]) : controller.signal;
    try {
      const run = new ThreadRun(
        {
          schema: this.schema,
          spec: this.spec,
          engine: this.options.engine,
          artifacts: this.options.artifacts,
          snapshotEvery: this.options.snapshotEvery ?? SNAPSHOT_EVERY,
          recursionLimit: options.recursionLimit ?? this.options.recursionLimit ?? RECURSION_LIMIT,
          retry: this.options.retry,
          emit,
          observeState,
          trace,
          signal,
          nodeMapping: options.nodeMapping ?? {},
        },
        lease,
      );
      const result = await body(run);
      return {
        threadId: options.thread,
        status: result.status,
        seq: result.seq,
        state: this.schema.view(result.state) as StateOf<S>,
        interrupts: result.interrupts,
        waits: result.waits,
      };
    } finally {
      stopRenewal();
      await releaseOrKeep(this.options.engine.checkpointer, lease);
      await published;
    }
  }

  /** The thread's record, or null. */
  async getThread(options: ThreadOption): Promise<ThreadRecord | null> {
    checkThreadCall('getThread', options);
    return this.options.engine.checkpointer.getThread(options.thread);
  }

  /**
   * Threads of the engine matching the query (every thread, not only this graph's:
   * add `metadata: { graph: app.name }` for those). Filters: status (one or several),
   * kind, tenant, metadata (equality on top-level keys), created / updated time
   * ranges; paging by id (stable) or newest update first.
   *
   * @example
   * ```ts
   * const stuck = await app.listThreads({ status: ['failed', 'needs_attention'], tenant: 'acme', limit: 50 });
   * const next = await app.listThreads({ status: ['failed', 'needs_attention'], tenant: 'acme', limit: 50, after: stuck.at(-1) });
   * ```
   */
  async listThreads(query: ThreadQuery = {}): Promise<ThreadRecord[]> {
    checkThreadQueryKeys(query);
    return this.options.engine.checkpointer.listThreads(query);
  }

  /**
   * Deletes a thread and all it owns (positions of every namespace, items, snapshots,
   * pending writes, failures, ledger entries, its artifact pins) in one transaction;
   * the artifacts are left to GC. ThreadBusyError while a run holds it; a missing
   * thread, or one whose status is not in `ifStatus`, is reported in the result.
   *
   * @example
   * ```ts
   * const result = await app.deleteThread({ thread: 'cust_42', ifStatus: ['completed', 'failed'] });
   * ```
   */
  async deleteThread(options: ThreadOption & Omit<DeleteThreadOptions, 'lease'>): Promise<DeleteThreadResult> {
    checkThreadCall('deleteThread', options);
    const { thread, ...rest } = options;
    return this.options.engine.checkpointer.deleteThread(thread, rest);
  }

  /**
   * The thread's attempts, oldest first: every run start and every node retry is one
   * attempt of the same thread, each with how it ended (error, node, seq, time) or what
   * it committed. ThreadNotFoundError for a missing thread.
   *
   * @example
   * ```ts
   * for (const a of (await app.attempts({ thread: 'cust_42' })).attempts) console.log(a.attempt, a.outcome, a.node, a.error?.message);
   * ```
   */
  async attempts(options: ThreadOption): Promise<ThreadAttempts> {
    checkThreadCall('attempts', options);
    return threadAttempts(this.options.engine.checkpointer, options.thread);
  }

  /**
   * The state at the thread's head (with `ns`, at the head of that child run; its
   * state is the child graph's). ThreadNotFoundError for a thread with no position,
   * NamespaceNotFoundError for a namespace the thread does not have, InvalidOptionError
   * for an `ns` that is no checkpoint namespace.
   */
  getState(options: ThreadOption & RootNamespace): Promise<StateOf<S>>;
  /** A child run's state is the child graph's: name its type (`getState<StateOf<typeof Child>>`), or read it as a record. */
  getState<C extends object = Record<string, unknown>>(options: ThreadOption & NamespaceOption): Promise<C>;
  async getState(options: ThreadOption & NamespaceOption): Promise<StateOf<S>> {
    checkThreadCall('getState', options);
    const ns = namespaceOption(options.ns);
    // Asked first: a namespace the thread does not have is not a graph that lacks its node.
    if (ns !== '') await namespaceHead(this.options.engine.checkpointer, options.thread, ns);
    const schema = this.schemaOf(ns, options.thread);
    // The head the thread record anchors, checked against the newest stored position.
    const loaded = await materializeHead(this.options.engine.checkpointer, schema, options.thread, ns);
    return schema.view(loaded.state) as StateOf<S>;
  }

  /**
   * The state as it was at position `seq` (of child run `ns`, if given: then the
   * state is the child graph's, read through its schema).
   *
   * @example
   * ```ts
   * const [step] = (await app.history({ thread: 't1' })).filter((p) => p.children.length);
   * const child = await app.stateAt({ thread: 't1', seq: 0, ns: step.children[0] });
   * ```
   */
  stateAt(options: StateAtOptions & RootNamespace): Promise<StateOf<S>>;
  /** A child run's state is the child graph's: name its type (`stateAt<StateOf<typeof Child>>`), or read it as a record. */
  stateAt<C extends object = Record<string, unknown>>(options: StateAtOptions): Promise<C>;
  async stateAt(options: StateAtOptions): Promise<StateOf<S>> {
    checkThreadCall('stateAt', options);
    if (options.seq === undefined) throw new InvalidOptionError("stateAt: seq must be a position's seq (an integer, 0 or more), got undefined.");
    const ns = namespaceOption(options.ns);
    await namespaceHead(this.options.engine.checkpointer, options.thread, ns);
    const schema = this.schemaOf(ns, options.thread);
    const loaded = await materialize(this.options.engine.checkpointer, schema, options.thread, ns, options.seq);
    return schema.view(loaded.state) as StateOf<S>;
  }

  /** The state schema of namespace `ns`: the root's, or the child graph's of the subgraph nodes it names. */
  private schemaOf(ns: string, threadId: string): StateSchema {
    const found = namespaceGraph(this.schema, this.spec, ns);
    if (found.missing !== undefined) throw new GraphMismatchError([found.missing], { engine: this.options.engine.name, thread: threadId, ns });
    return found.schema;
  }
  /**
   * Positions of the thread (of child run `ns`, if given), newest first; `beforeSeq` and
   * `limit` page backwards. NamespaceNotFoundError for a namespace the thread does not have.
   */
  async history(options: HistoryOptions): Promise<PositionInfo[]> {
    checkThreadCall('history', options);
    const { thread, ...page } = options;
    return threadHistory(this.options.engine.checkpointer, thread, { ...page, ns: namespaceOption(page.ns) });
  }

  /**
   * Re-executes the thread from position `from` (to `to`, default the head) serving
   * every recorded output and effect outcome, calling nothing external and writing
   * nothing, and reports step by step whether it reached the stored states.
   */
  async replay(options: ReplayOptions): Promise<ReplayReport> {
    checkThreadCall('replay', options);
    if (options.from === undefined) throw new InvalidOptionError("replay: from must be a position's seq (an integer, 0 or more), got undefined.");
    if (options.to !== undefined && options.from > options.to) throw new InvalidOptionError(`replay: from (${options.from}) is after to (${options.to}): a replay runs forward from one position to a later one on its branch.`);
    const { replayThread } = await import('./replay.js');
    return replayThread({ schema: this.schema, spec: this.spec, engine: this.options.engine, artifacts: this.options.artifacts }, options.thread, {
      from: options.from,
      ...(options.to !== undefined ? { to: options.to } : {}),
    });
  }

  /**
   * Evaluation replay: re-runs stored threads of this app's engine with the graph of
   * `options.with` (default: this app's own, changed code). Model calls are made anew;
   * tool results and effect outcomes are served from the record and nothing external
   * is called; a tool call or effect the record does not hold stops that thread at that
   * step as a divergence, never executed. Nothing is written. The report has, per
   * thread, the first step whose state or calls diverged (with the diff) and the new
   * model calls' tokens and latency beside the recorded ones, then a summary.
   *
   * @example
   * ```ts
   * const report = await app.evaluate({ query: { status: 'completed' }, with: appOnNewModel });
   * console.log(report.summary); // { threads: 20, same: 14, diverged: 6, failed: 0, recorded: {…}, evaluated: {…} }
   * ```
   */
  async evaluate(options: EvaluateOptions): Promise<EvaluationReport> {
    checkEvaluateOptions(options);
    const code = options.with ?? this;
    const { evaluateThreads } = await import('./evaluate.js');
    return evaluateThreads(
      { schema: code.schema, spec: code.spec, engine: this.options.engine, artifacts: this.options.artifacts },
      { ...(options.threads ? { threads: options.threads } : {}), ...(options.query ? { query: options.query } : {}) },
    );
  }

  /**
   * Checks everything a read of the thread relies on: the hash chain of every
   * namespace, the heads the thread record anchors, the snapshots and the ledger rows
   * the positions use. ThreadNotFoundError for a missing thread.
   */
  async verify(options: ThreadOption): Promise<VerifyReport> {
    checkThreadCall('verify', options);
    const { verifyThread } = await import('../inspect/verify.js');
    return verifyThread(this.options.engine, options.thread);
  }

  /**
   * Sends a signal to a thread, from any process (no lease, no graph code runs here):
   * queued durably, so a `ctx.waitFor(name)` takes it whether it is waiting now, starts
   * waiting later, or every process is down until then. A waiting thread is made due,
   * so a worker (or the next `run()`) goes on. ThreadNotFoundError for a missing thread.
   * Resolves to the queued signal (its id, name, time) with its payload decoded.
   *
   * @example
   * ```ts
   * await app.signal({ thread: 'order_7', name: 'payment', payload: { ok: true } });
   * await app.signal('order_7', 'payment', { ok: true });   // the same
   * await app.run({ thread: 'order_7' });                    // or let a worker take it
   * ```
   */
  signal(options: SignalOptions): Promise<SentSignal>;
  signal(thread: string, name: string, payload?: unknown): Promise<SentSignal>;
  async signal(options: SignalOptions | string, name?: string, payload?: unknown): Promise<SentSignal> {
    // Not an object at all is signalThread's to refuse, with the shape it takes.
    if (typeof options === 'object' && options !== null) checkThreadCall('signal', options);
    const signal = typeof options === 'string' ? { thread: options, name: name!, payload } : options;
    return signalThread(this.options.engine, signal);
  }

  /**
   * Erases a tenant (`{ tenant }`), or a thread without one (`{ thread }`): its threads
   * with everything under them (a run holding one is fenced), its store rows, the
   * artifacts only it referred to (in the artifact store given to compile()), and on
   * an encrypted engine its keys (crypto-shredding: with a provider that destroys keys,
   * backups and exports taken before cannot be opened either). Returns what went and
   * what copies stay readable. See `eraseTenant` in `cairn/inspect`.
   *
   * @example
   * ```ts
   * const report = await app.erase({ tenant: 'acme' });
   * console.log(report.threads.length, report.covers.backups ? 'backups covered' : report.notes);
   * ```
   */
  async erase(options: Omit<EraseOptions, 'artifacts'> & { artifacts?: ArtifactStore }): Promise<ErasureReport> {
    const { eraseTenant } = await import('../inspect/erase.js');
    // Not an object is eraseTenant's to refuse, with the shape it takes.
    if (options === null || typeof options !== 'object') return eraseTenant(this.options.engine, options);
    const artifacts = options.artifacts ?? this.options.artifacts;
    return eraseTenant(this.options.engine, { ...options, ...(artifacts ? { artifacts } : {}) });
  }

  /**
   * Cancels the thread, from any process: the run holding it (here or in another
   * process, on any machine) is fenced and stops at its next step boundary without
   * committing; the thread becomes `failed` with `ERR_THREAD_CANCELLED` naming `actor`
   * and `reason`, so no worker takes it up again. A thread that already ended is
   * reported (`cancelled: false`), not changed. ThreadNotFoundError for a missing thread.
   *
   * @example
   * ```ts
   * const result = await app.cancel({ thread: 'cust_42', actor: 'ana', reason: 'wrong customer' });
   * // the run holding cust_42 elsewhere rejects with LeaseLostError at its next commit
   * ```
   */
  async cancel(options: CancelThreadOptions): Promise<CancelThreadResult> {
    checkThreadCall('cancel', options);
    return cancelThread(this.options.engine, options);
  }

  /**
   * Records the outcome of an effect a person checked by hand (a `needs_attention`
   * thread); the next run is served it.
   */
  async resolveEffect(options: ResolveEffectOptions): Promise<void> {
    checkThreadCall('resolveEffect', options);
    const { thread, idempotencyKey: key } = options;
    const place = { engine: this.options.engine.name, thread };
    const entry = await this.options.engine.ledger.get(thread, key);
    if (!entry || entry.kind !== 'effect') throw new EffectNotFoundError(key, place);
    if (entry.status === 'done') throw new EffectConflictError(key, 'already has an outcome; resolveEffect only settles an intent that has none.', place);
    await this.options.engine.ledger.writeOutcome(thread, key, encode(options.outcome, 'effect outcome'), Date.now());
  }

  private async acquire(options: Omit<RunOptions<S>, 'input'> & { create?: boolean }): Promise<ThreadLease> {
    const cp = this.options.engine.checkpointer;
    const request = {
      owner: takeOwner(cp, options.thread) ?? { runId: randomUUID(), pid: process.pid, host: hostname() },
      leaseMs: this.leaseMs,
      ...(options.create === false
        ? {}
        : { create: { kind: options.kind ?? 'task', tenant: options.tenant ?? null, metadata: { graph: this.name, ...options.metadata } } }),
    };
    const deadline = Date.now() + (options.waitTimeoutMs ?? BUSY_WAIT_MS);
    const { signal } = options;
    // A run cancelled before it holds the thread takes nothing and changes nothing: an
    // `onBusy: 'wait'` caller that gave up (its request timed out, a stream's consumer
    // left) must not go on to take the thread once the holder lets it go.
    const cancelled = () => new RunCancelledError(options.thread, signal!.reason, { engine: cp.engine, thread: options.thread }, true);
    if (signal?.aborted) throw cancelled();
    await releaseLeftover(cp, options.thread);
    for (let delay = 10; ; delay = Math.min(delay * 2, 500)) {
      try {
        return await cp.acquireThread(options.thread, request);
      } catch (error) {
        // It may have taken the lease all the same: the next run here asks as the same owner.
        if (EngineError.is(error)) keepOwner(cp, options.thread, request.owner);
        if (!ThreadBusyError.is(error) || options.onBusy !== 'wait' || Date.now() + delay > deadline) throw error;
        if (!(await pauseUnlessAborted(delay, signal))) throw cancelled();
      }
    }
  }

  /**
   * Renews the lease (`leaseMs` long, as it was taken: a worker's own `leaseMs` may differ
   * from the app's) in the background; aborts the run if it is lost. Returns the stopper.
   */
  private keepLease(lease: ThreadLease, controller: AbortController, leaseMs: number): () => void {
    const cp = this.options.engine.checkpointer;
    const timer = setInterval(() => {
      cp.renewLease(lease, leaseMs).then(
        (renewed) => {
          lease.expiresAt = renewed.expiresAt;
        },
        (error: unknown) => {
          if (LeaseLostError.is(error)) controller.abort(error);
        },
      );
    }, Math.max(50, Math.floor(leaseMs / 3)));
    timer.unref();
    return () => clearInterval(timer);
  }
}

/** Sleeps `ms`; false (at once) when `signal` is aborted before or during the pause. */
function pauseUnlessAborted(ms: number, signal: AbortSignal | undefined): Promise<boolean> {
  if (!signal) return new Promise((resolve) => setTimeout(() => resolve(true), ms));
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const stop = () => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', stop);
      resolve(true);
    }, ms);
    signal.addEventListener('abort', stop, { once: true });
  });
}

/** Each field default of `schema` and of every child graph under `spec` checked against its schema: sync errors thrown, async ones in the promise. */
function checkDefaults(schema: StateSchema, spec: GraphSpec): Promise<void> | undefined {
  const pending: Promise<void>[] = [];
  const walk = (s: StateSchema, g: GraphSpec) => {
    const checked = s.checkDefaults();
    if (checked) pending.push(checked);
    for (const node of g.nodes.values()) if (node.child) walk(node.child.schema, node.child.spec);
  };
  walk(schema, spec);
  if (!pending.length) return undefined;
  const all = Promise.all(pending).then(() => undefined);
  all.catch(() => undefined);
  return all;
}

/** The state keys (fields and derived values) of `schema` and of every child graph under `spec`: where a redact path may start. */
function stateKeyNames(schema: StateSchema, spec: GraphSpec, into = new Set<string>()): Set<string> {
  for (const name of [...schema.fieldNames, ...Object.keys(schema.derived)]) into.add(name);
  for (const node of spec.nodes.values()) if (node.child) stateKeyNames(node.child.schema, node.child.spec, into);
  return into;
}

/**
 * A redact path whose first segment names no state key would hide nothing, and a typo
 * (`custmer.email`) would leave the value it meant shown everywhere: refused at compile.
 * A first segment `*` matches every field.
 */
function checkRedactPaths(paths: readonly string[], keys: ReadonlySet<string>): void {
  for (const path of paths) {
    const [first] = parsePath(path);
    if (first && 'any' in first) continue;
    if (first && 'key' in first && keys.has(first.key)) continue;
    throw new InvalidOptionError(
      `redact path ${JSON.stringify(path)} starts at ${first && 'key' in first ? `"${first.key}"` : 'a list index'}, which is no field of the state (nor of a child graph's). Its fields: ${[...keys].join(', ')}.`,
    );
  }
}

/** The fields declared `redact: true` of `schema` and of every child graph under `spec`: their paths apply in every namespace. */
function redactedFieldNames(schema: StateSchema, spec: GraphSpec, into = new Set<string>()): string[] {
  for (const name of schema.redactedFields) into.add(name);
  for (const node of spec.nodes.values()) if (node.child) redactedFieldNames(node.child.schema, node.child.spec, into);
  return [...into];
}

/** Hands `event` to one observer; what the observer throws is its own fault, not the run's. */
function notify(sink: EventSink, event: RunEvent): void {
  try {
    sink(event);
  } catch {
    // Passed over: the run goes on as if unobserved.
  }
}
