/**
 * @module runtime/task-scope
 * What a node gets besides the state: `ctx.record` for nondeterministic outputs,
 * `ctx.effect` for side effects under the invariant, the artifact store and the
 * store. One {@link TaskScope} per execution of a node; a replayed one serves every
 * recorded value and calls nothing.
 *
 * The side-effect invariant, as `ctx.effect` enforces it:
 * 1. the key is the caller's, or derived from (thread, namespace, step, task, call index):
 *    the same on every re-execution;
 * 2. an outcome already in the ledger is returned and nothing is called, when it is
 *    this effect's: an entry of another effect name (or, both declared, other
 *    arguments) under the key is EffectConflictError, and nothing is called either;
 * 3. the intent is durable before `run` is called;
 * 4. the outcome is durable before the step can commit (the runner awaits every call);
 * 5. an intent without an outcome is recovered: `probe(key)` → found: recorded; absent:
 *    re-run with the same key. No probe: re-run with the same key, unless
 *    `mode: 'atMostOnce'`, which puts the thread in `needs_attention`.
 */
import type { ArtifactRef, ArtifactStore } from '../contracts/artifact-store.js';
import { storeValue, type StoreValueOptions } from '../artifacts/helpers.js';
import type { CommittedEffect } from '../contracts/checkpointer.js';
import type { Ledger, LedgerEntry, NewLedgerEntry, RecordMeta } from '../contracts/ledger.js';
import type { Store } from '../contracts/store.js';
import { sha256Hex } from '../codec/hash.js';
import { decode, encode } from '../codec/tagged-json.js';
import {
  CairnError,
  EffectConflictError,
  InvalidOptionError,
  NeedsAttentionError,
  RecordArgsMismatchError,
  RecordMismatchError,
  StateValidationError,
  type ErrorPlace,
} from '../errors.js';
import { crashPoint } from '../internal/crash-points.js';
import { withinCall } from './current-node.js';
import { checkEffectSpec, doneEntry, writeEffectsToLedger, type EffectSpec } from './effects.js';
import type { EventSink } from './events.js';
import type { CallRef, PendingWait } from './position.js';
import { TaskStore, type NodeStore, type ValidatedRead } from './node-store.js';
import type { InterruptOptions, NodeContext, RecordOptions, WaitForOptions, WaitResult } from './node-context.js';
import { recordMetaAttributes, type RecordAttributes, type TraceSpan } from './tracing.js';
import { AnswerChecked, AnswerUnchecked, NodeSuspended, validateAnswer, validateWith, type SignalQueue, type TaskPause } from './pauses.js';
import { describeSchema } from '../state/schema.js';
import { checkInterruptOptions, checkRecordArtifactCall, checkRecordCall, checkWaitForOptions, RECORD_KINDS } from './ctx-options.js';

export type { EffectSpec, EffectMode, EffectCommit } from './effects.js';
export type { NodeStore, NodeWriteOptions, ValidatedRead } from './node-store.js';
export type { NodeContext, InterruptOptions, RecordOptions, WaitForOptions, WaitResult } from './node-context.js';
export { NodeSuspended, probeOutcome, type AnswerProbe, type QueuedSignal, type SignalQueue, type TaskPause } from './pauses.js';

export interface TaskScopeOptions {
  threadId: string;
  ns: string;
  seq: number;
  /**
   * No earlier execution of this task from `seq` can have written to the ledger (the
   * run wrote position `seq` itself, and this is the task's first execution from it):
   * its entries are not read, which saves a round trip per step. An explicit
   * `idempotencyKey` is still looked up.
   */
  freshLedger?: boolean;
  step: number;
  node: string;
  task: string;
  attempt: number;
  signal: AbortSignal;
  ledger: Ledger;
  store: Store;
  /**
   * Whose view of the store nodes get (the thread's tenant, or null): every call is
   * checked by the store's access policy. Undefined: the store itself (replay).
   */
  principal?: string | null;
  artifacts: ArtifactStore | undefined;
  emit: EventSink | undefined;
  place: ErrorPlace;
  /**
   * Replay mode: recorded outputs and effect outcomes are served from the ledger and
   * nothing is ever called; a call with nothing recorded is a {@link ReplayDivergence}.
   */
  replay?: boolean;
  /**
   * What the superstep carries from where it stopped: the answers given to interrupt
   * calls and the waits' wake times.
   */
  carried?: { answers: Readonly<Record<string, string>>; waits: readonly PendingWait[] };
  /**
   * Answer check (`resume` before it commits an answer): the node runs with every call
   * served and nothing called or written, until the interrupt call whose key is `key`,
   * where `answer` is validated by the call's schema ({@link AnswerProbe}).
   */
  probe?: { key: string; answer: unknown };
  /** A live run's signal queue (for `ctx.waitFor`): the checkpointer and the run's lease. */
  signals?: SignalQueue;
  /** The task's span when the run is traced: each record and effect is a span under it, interrupts and waits events on it. */
  trace?: TraceSpan;
  /**
   * Replay mode: the records and effects the stored position says its step used, by
   * key. A served value must be one of them, with the digest the position holds: a
   * ledger row changed since is a divergence, never a value handed to the node.
   */
  served?: ReadonlyMap<string, CallRef>;
  /**
   * Evaluation (with `replay`): model calls (`ctx.record` with `kind: 'model'`) are
   * made anew, their values written nowhere and described here; everything else is
   * served as in replay.
   */
  evaluate?: { models: EvaluatedModelCall[] };
}

/** A model call made anew by an evaluation, beside what the stored run recorded at the same call. */
export interface EvaluatedModelCall {
  node: string;
  call: number;
  name: string;
  /** What the stored run recorded for this call (null: nothing, or another kind of call). */
  recorded: RecordMeta | null;
  evaluated: RecordMeta;
}

/**
 * The key of a record (`rec_…`) or an effect without a caller's key (`eff_…`): a digest
 * of where the call is made (thread, namespace, the seq its step started from, task,
 * call index), so every re-execution finds the same entry, and `verify` can tell that
 * a ledger row still names the call it was made by.
 */
export function derivedCallKey(kind: 'rec' | 'eff' | 'int' | 'wait', threadId: string, ns: string, seq: number, task: string, call: number): string {
  return `${kind}_${sha256Hex(JSON.stringify([threadId, ns, seq, task, call])).slice(0, 40)}`;
}

/**
 * The {@link RecordMeta} of a call `ctx.record` just made: the kind and model the node
 * named, what `options.describe` read off the value, and the call's wall time. A
 * describe that throws is the node's bug, reported as such, not a lost record.
 */
/** The meta's names a node may give with the call (and `describe` may override). */
const NAMED_META = ['model', 'provider', 'tool'] as const;

/** What the call says it is before it runs: its kind and the names it was given. */
function askedMeta<T>(options: RecordOptions<T>, described?: Partial<RecordMeta>): RecordMeta {
  const meta: RecordMeta = { kind: described?.kind ?? options.kind ?? 'other' };
  for (const name of NAMED_META) {
    const given = described?.[name] ?? options[name];
    if (given !== undefined) meta[name] = given;
  }
  return meta;
}

function recordMeta<T>(options: RecordOptions<T>, value: T, latencyMs: number, place: ErrorPlace): RecordMeta {
  let described: Partial<RecordMeta> | undefined;
  try {
    described = options.describe?.(value);
  } catch (error) {
    throw new InvalidOptionError(`ctx.record's describe threw: ${(error as Error).message ?? String(error)}.`, { place, cause: error });
  }
  const meta = askedMeta(options, described);
  if (!RECORD_KINDS.includes(meta.kind)) {
    throw new InvalidOptionError(`ctx.record's describe gave kind ${JSON.stringify(meta.kind)}; a record is ${RECORD_KINDS.map((k) => `'${k}'`).join(', ')}.`, { place });
  }
  if (described?.usage) meta.usage = described.usage;
  meta.latencyMs = described?.latencyMs ?? latencyMs;
  return meta;
}

/** The span attribute `ctx.recordArtifact` adds: the stored artifact's id. */
const artifactAttributes: RecordAttributes<ArtifactRef> = (ref) => ({ 'cairn.artifact.id': ref.id });

/**
 * Why a replayed or evaluated call could not be served, for a program to tell apart:
 * - `other-call`: the record holds another call at this place (another tool, another record name);
 * - `other-arguments`: the same call, asked with other arguments;
 * - `not-recorded`: nothing was recorded for this call;
 * - `effect-not-recorded`: the record holds no observed outcome for this effect;
 * - `effect-other-arguments`: the effect was asked with other arguments than its recorded intent;
 * - `not-called`: the recorded run made a call (a record or an effect) in this step that the code no longer makes;
 * - `pause`: an interrupt, sleep or wait the recorded run has no result for;
 * - `next`: the step would go to other nodes than the run went to;
 * - `graph-changed`: a node the run went through is gone;
 * - `child-run`: a child run the record lacks or that never finished;
 * - `ledger-mismatch`: a ledger row does not match the digest its position holds (changed or damaged);
 * - `threw`: the node (or the merge of its writes) threw.
 */
export type DivergenceKind =
  | 'other-call'
  | 'other-arguments'
  | 'not-recorded'
  | 'effect-not-recorded'
  | 'effect-other-arguments'
  | 'not-called'
  | 'pause'
  | 'next'
  | 'graph-changed'
  | 'child-run'
  | 'ledger-mismatch'
  | 'threw';

/** Thrown inside a replayed node when it asks for something the original run never recorded. */
export class ReplayDivergence extends Error {
  constructor(
    readonly node: string,
    readonly call: number,
    readonly callName: string,
    readonly kind: DivergenceKind,
    readonly reason: string,
  ) {
    super(`node "${node}" call ${call} (${callName}): ${reason}`);
  }
}

/** One execution of one node: its calls, their ledger entries, and the refs its position will keep. */
export class TaskScope implements NodeContext {
  readonly threadId: string;
  readonly ns: string;
  readonly seq: number;
  readonly step: number;
  readonly node: string;
  readonly task: string;
  readonly attempt: number;
  readonly signal: AbortSignal;
  /** Records and effects this execution used, in call order. */
  readonly records: CallRef[] = [];
  readonly effects: CallRef[] = [];
  /** Effects found in doubt that this task ran again, by key, and whether a probe was asked first. */
  private readonly reran = new Map<string, 'probe_absent_reran' | 'reran'>();
  /** Keys of the records this execution read or wrote (discarded if it fails). */
  readonly recordKeys: string[] = [];
  /** Effects run with `commit: 'with-step'` whose entries no ledger write has taken yet, by key. */
  private readonly withStep = new Map<string, CommittedEffect>();
  /** The last effect call of each key in this execution, settled: the next call of the key waits for it. */
  private readonly effectKeys = new Map<string, Promise<void>>();
  /** Payloads passed to `ctx.interruptAfter`, in call order. */
  readonly interrupts: unknown[] = [];
  /** The call the node stopped at, if it did. */
  pause: TaskPause | undefined;

  private call = 0;
  /**
   * The first call replay could not serve. Kept because the node may catch what the
   * call threw (an agent library turns a tool's error into a message to the model):
   * the runner still reports it, and every later call fails the same way, so nothing
   * runs past it.
   */
  divergence: ReplayDivergence | undefined;
  /**
   * The first atMostOnce effect found in doubt, kept for the same reason: an agent
   * library that turns it into a message to the model must not let the step commit
   * past it, so the runner puts the thread in needs_attention all the same.
   */
  attention: NeedsAttentionError | undefined;
  /**
   * How the answer check (`resume`'s re-execution up to the interrupt call) ended: the
   * call reached and its answer checked or refused, or a call on the way that could
   * not be served. Kept for the same reason: a tool loop hands what the call threw to
   * the model and goes on, and the check must still read it.
   */
  probed: AnswerChecked | AnswerUnchecked | StateValidationError | undefined;
  /**
   * A stop the node's code caught and went on from, handed in by {@link halt}: the
   * node ends with it all the same (see {@link halt}).
   */
  halted: { error: unknown } | undefined;
  private entries: Promise<Map<string, LedgerEntry>> | undefined;
  /** Made on first use of ctx.store: most nodes never touch the store. */
  private storeAccess: TaskStore | undefined;
  private readonly inflight = new Set<Promise<unknown>>();

  constructor(private readonly options: TaskScopeOptions) {
    this.threadId = options.threadId;
    this.ns = options.ns;
    this.seq = options.seq;
    this.step = options.step;
    this.node = options.node;
    this.task = options.task;
    this.attempt = options.attempt;
    this.signal = options.signal;
  }

  get store(): NodeStore {
    // Store writes are effects of this task: the view runs them through ctx.effect.
    return (this.storeAccess ??= new TaskStore(this.options.store, this.options.principal, (name, spec) => this.effect(name, spec), this.options.place));
  }

  private tenantArtifacts: ArtifactStore | undefined;

  get artifacts(): ArtifactStore {
    if (!this.options.artifacts) {
      throw new CairnError(`node "${this.node}" used ctx.artifacts but compile() was given no artifacts store: pass { artifacts: fsArtifacts(dir) }.`, {
        place: this.options.place,
      });
    }
    // A thread with a tenant reads and writes artifacts as that tenant: its refs carry
    // the tenant, and another tenant's refs are refused (AccessDeniedError).
    const tenant = this.options.principal;
    if (typeof tenant === 'string') return (this.tenantArtifacts ??= this.options.artifacts.forTenant(tenant));
    return this.options.artifacts;
  }

  recordArtifact(name: string, fn: () => unknown, options: StoreValueOptions = {}): Promise<ArtifactRef> {
    const refused = checkRecordArtifactCall(name, fn, options, this.options.place);
    if (refused) return Promise.reject(refused);
    // Recorded: a re-executed step is served the ref and neither calls fn nor stores again.
    return this.recordCall(name, async () => storeValue(this.artifacts, await fn(), options), {}, artifactAttributes);
  }

  record<T>(name: string, fn: () => T | Promise<T>, options: RecordOptions<T> = {}): Promise<T> {
    const refused = checkRecordCall(name, fn, options, this.options.place);
    if (refused) return Promise.reject(refused);
    return this.recordCall(name, fn, options, undefined);
  }

  /** `ctx.record`, with the extra span attributes the kind of call adds (an artifact's id). */
  private recordCall<T>(name: string, fn: () => T | Promise<T>, options: RecordOptions<T>, attributes: RecordAttributes<T> | undefined): Promise<T> {
    return this.track(this.calling((call) => this.doRecord(call, name, fn, options, attributes)));
  }

  effect<T>(name: string, spec: EffectSpec<T>): Promise<T> {
    try {
      checkEffectSpec(name, spec, this.options.place);
    } catch (error) {
      return Promise.reject(error);
    }
    return this.track(this.calling((call) => this.doEffect(call, name, spec)));
  }

  interrupt<T = unknown>(payload: unknown = null, options: InterruptOptions<T> = {}): Promise<T> {
    const refused = checkInterruptOptions(options, this.options.place);
    if (refused) return Promise.reject(refused);
    return this.track(this.calling((call) => this.doInterrupt(call, payload, options)));
  }

  interruptAfter(payload: unknown = null): void {
    this.interrupts.push(payload);
  }

  sleep(ms: number): Promise<void> {
    if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) {
      return Promise.reject(new InvalidOptionError(`ctx.sleep takes a finite number of ms >= 0, not ${String(ms)}.`, { place: this.options.place }));
    }
    const until = wakeTime('ctx.sleep', Date.now() + ms, this.options.place);
    return until instanceof Error ? Promise.reject(until) : this.track(this.calling((call) => this.doSleep(call, until)));
  }

  sleepUntil(time: Date | number): Promise<void> {
    const at = time instanceof Date ? time.getTime() : time;
    if (typeof at !== 'number' || !Number.isFinite(at)) {
      return Promise.reject(new InvalidOptionError(`ctx.sleepUntil takes a Date or ms since the epoch, not ${String(time)}.`, { place: this.options.place }));
    }
    const until = wakeTime('ctx.sleepUntil', at, this.options.place);
    return until instanceof Error ? Promise.reject(until) : this.track(this.calling((call) => this.doSleep(call, until)));
  }

  waitFor<T = unknown>(name: string, options: WaitForOptions<T> = {}): Promise<WaitResult<T>> {
    const place = this.options.place;
    if (typeof name !== 'string' || name.length === 0) {
      return Promise.reject(new InvalidOptionError(`ctx.waitFor takes a signal name (a non-empty string), not ${String(name)}.`, { place }));
    }
    const refused = checkWaitForOptions(options, place);
    if (refused) return Promise.reject(refused);
    const { timeoutMs } = options;
    const until = timeoutMs === undefined ? null : wakeTime("ctx.waitFor's timeoutMs", Date.now() + timeoutMs, place);
    return until instanceof Error ? Promise.reject(until) : this.track(this.calling((call) => this.doWaitFor(call, name, options, until)));
  }

  emit(data: unknown): void {
    this.options.emit?.({ type: 'custom', threadId: this.threadId, at: Date.now(), node: this.node, task: this.task, seq: this.seq, data });
  }

  /**
   * Stops the node with `error`, which its code caught: an agent library's tool loop
   * (cairn/ai-sdk) hands every error a tool throws to the model as a message and goes
   * on, and the adapter hands in the ones that must stop the node instead (cairn's own
   * errors, a run that is stopping, an effect tool that failed). Every later call of the
   * node rejects with it, and the runner ends the execution with it as if the node had
   * thrown it: retried under the node's policy, or failing the thread, with nothing of
   * the step committed. The first one is kept. A stop this scope keeps already (a
   * pause, a divergence, an effect that needs attention, an answer check's end) is not
   * taken again.
   */
  halt(error: unknown): void {
    const keptAlready = error instanceof NodeSuspended || [this.divergence, this.attention, this.probed].some((stop) => stop !== undefined && stop === error);
    if (!this.halted && !keptAlready) this.halted = { error };
  }

  /**
   * Numbers a call (its index keys its ledger entry) and runs it, unless the node
   * already stopped at an earlier call: then this one stops too. The promise of a call
   * that stops is marked handled, so a node that does not await it (or catches the
   * stop) raises no unhandled rejection; it stops all the same.
   */
  private calling<T>(body: (call: number) => Promise<T>): Promise<T> {
    const stopped = this.divergence ?? this.attention ?? this.probed;
    const promise = stopped
      ? Promise.reject(stopped)
      : this.pause
        ? Promise.reject(new NodeSuspended(this.node))
        : this.halted
          ? Promise.reject(this.halted.error)
          : body(this.call++);
    promise.catch(() => undefined);
    return promise;
  }

  /** Stops the node at `pause`: the call (and every later one) rejects with NodeSuspended. */
  private stop(pause: TaskPause): never {
    this.pause ??= pause;
    throw new NodeSuspended(this.node);
  }

  /** In replay or an answer check, a call that cannot be served stops the execution. */
  private unservable(call: number, name: string, kind: DivergenceKind, reason: string): never {
    if (this.options.probe) throw (this.probed ??= new AnswerUnchecked());
    throw (this.divergence ??= new ReplayDivergence(this.node, call, name, kind, reason));
  }

  /**
   * The ledger's value for call `call` of this task, served: its ref kept for the
   * position, checked against the stored step in replay. Undefined when nothing is
   * recorded yet. A value recorded under another name is RecordMismatchError (a
   * divergence in replay or an answer check).
   */
  private async recorded<T>(call: number, key: string, name: string, argsDigest: string | null = null): Promise<{ value: T; meta: RecordMeta | undefined } | undefined> {
    const hit = (await this.ledgerEntries()).get(key);
    if (!hit || hit.outcome === null) return undefined;
    if (hit.name !== name) {
      if (this.options.replay || this.options.probe) this.unservable(call, name, 'other-call', `recorded as "${hit.name}"`);
      throw new RecordMismatchError(key, name, hit.name, this.options.place);
    }
    if (argsDigest !== null && hit.argsDigest !== null && hit.argsDigest !== argsDigest) {
      if (this.options.replay || this.options.probe) this.unservable(call, name, 'other-arguments', 'recorded with other arguments');
      throw new RecordArgsMismatchError(key, name, this.options.place);
    }
    const digest = sha256Hex(hit.outcome);
    this.checkServed(call, name, key, digest);
    this.records.push({ key, name, digest });
    this.options.emit?.({ type: 'record.served', threadId: this.threadId, at: Date.now(), node: this.node, key, name });
    return { value: decode<T>(hit.outcome, `recorded output ${key}`), meta: hit.meta };
  }

  /**
   * Writes what call `call` produced to the ledger and keeps its ref for the position;
   * returns the value the ledger holds (the first writer's, should two executions race).
   */
  private async storeRecord<T>(call: number, key: string, name: string, value: T, point: 'after-record' | 'after-wait-result', meta?: RecordMeta, argsDigest: string | null = null): Promise<T> {
    const text = encode(value, `record "${name}"`);
    const stored = await this.options.ledger.writeRecord({ ...this.entryBase(key, 'record', name, call, argsDigest), outcome: text, ...(meta ? { meta } : {}) });
    crashPoint(point, this.node);
    this.records.push({ key, name, digest: sha256Hex(stored.outcome ?? text) });
    this.options.emit?.({ type: 'record.stored', threadId: this.threadId, at: Date.now(), node: this.node, key, name });
    return stored.outcome === text ? value : decode<T>(stored.outcome!, `recorded output ${key}`);
  }

  /**
   * Records the result an interrupt or wait call resolved to. Not among `recordKeys`:
   * a failed attempt discards its recorded outputs, never a person's answer or a
   * signal taken from the queue.
   */
  private recordResult<T>(call: number, key: string, name: string, value: T): Promise<T> {
    return this.storeRecord(call, key, name, value, 'after-wait-result');
  }

  private async doInterrupt<T>(call: number, payload: unknown, options: InterruptOptions<T>): Promise<T> {
    const key = this.derivedKey('int', call);
    const hit = await this.recorded<T>(call, key, 'interrupt');
    if (hit) return hit.value;
    const { probe, place } = this.options;
    if (probe?.key === key) throw (this.probed ??= await checkedAnswer(options.answer, probe.answer, place));
    if (this.options.replay) this.unservable(call, 'interrupt', 'pause', 'the recorded run has no answer for this interrupt');
    const answer = this.options.carried?.answers[key];
    if (answer !== undefined) {
      const value = await validateAnswer(options.answer, decode(answer, `answer to ${key}`), place);
      this.options.trace?.event('cairn.interrupt.answered', { 'cairn.interrupt.key': key });
      return probe ? value : this.recordResult(call, key, 'interrupt', value);
    }
    if (probe) throw (this.probed ??= new AnswerUnchecked());
    this.options.emit?.({ type: 'interrupt', threadId: this.threadId, at: Date.now(), node: this.node, task: this.task, key, payload });
    this.options.trace?.event('cairn.interrupt', { 'cairn.interrupt.key': key });
    // Kept with the interrupt so a page (the inspector) can build the answer's form without the code.
    const answerSchema = options.answer ? describeSchema(options.answer, 'input') : undefined;
    return this.stop({ kind: 'interrupt', call, key, payload, ...(answerSchema ? { answerSchema } : {}) });
  }

  private async doSleep(call: number, requested: number): Promise<void> {
    const key = this.derivedKey('wait', call);
    if (await this.recorded(call, key, 'sleep')) return;
    if (this.options.replay || this.options.probe) this.unservable(call, 'sleep', 'pause', 'the recorded run has no wake-up for this sleep');
    // The wake time is the one set when the node first stopped here, not a new one per re-execution.
    const until = this.carriedWait(key)?.until ?? requested;
    if (Date.now() >= until) {
      await this.recordResult(call, key, 'sleep', { wokeAt: Date.now() });
      this.options.emit?.({ type: 'wait.resolved', threadId: this.threadId, at: Date.now(), node: this.node, task: this.task, key, kind: 'sleep', result: 'woke' });
      this.options.trace?.event('cairn.wait.resolved', { 'cairn.wait.key': key, 'cairn.wait.kind': 'sleep', 'cairn.wait.result': 'woke' });
      return;
    }
    this.options.emit?.({ type: 'wait', threadId: this.threadId, at: Date.now(), node: this.node, task: this.task, key, kind: 'sleep', until });
    this.options.trace?.event('cairn.wait', { 'cairn.wait.key': key, 'cairn.wait.kind': 'sleep', 'cairn.wait.until': until });
    this.stop({ kind: 'sleep', call, key, until });
  }

  private async doWaitFor<T>(call: number, name: string, options: WaitForOptions<T>, requested: number | null): Promise<WaitResult<T>> {
    const key = this.derivedKey('wait', call);
    const recordName = `waitFor:${name}`;
    const hit = await this.recorded<WaitResult<T>>(call, key, recordName);
    if (hit) return hit.value;
    if (this.options.replay || this.options.probe) this.unservable(call, recordName, 'pause', 'the recorded run has no result for this wait');
    const queue = this.options.signals;
    if (!queue) throw new CairnError(`ctx.waitFor needs a live run of the thread (node "${this.node}").`, { place: this.options.place });
    const carried = this.carriedWait(key);
    const until = carried ? carried.until : requested;
    const received = await this.takeSignal(queue, key, name, options, until);
    if (received) {
      const result = await this.recordResult<WaitResult<T>>(call, key, recordName, received);
      this.options.emit?.({ type: 'wait.resolved', threadId: this.threadId, at: Date.now(), node: this.node, task: this.task, key, kind: 'signal', result: 'received' });
      this.options.trace?.event('cairn.wait.resolved', { 'cairn.wait.key': key, 'cairn.wait.kind': 'signal', 'cairn.wait.name': name, 'cairn.wait.result': 'received' });
      return result;
    }
    if (until !== null && Date.now() >= until) {
      const result = await this.recordResult<WaitResult<T>>(call, key, recordName, { status: 'timedOut', timedOut: true });
      this.options.emit?.({ type: 'wait.resolved', threadId: this.threadId, at: Date.now(), node: this.node, task: this.task, key, kind: 'signal', result: 'timedOut' });
      this.options.trace?.event('cairn.wait.resolved', { 'cairn.wait.key': key, 'cairn.wait.kind': 'signal', 'cairn.wait.name': name, 'cairn.wait.result': 'timedOut' });
      return result;
    }
    this.options.emit?.({ type: 'wait', threadId: this.threadId, at: Date.now(), node: this.node, task: this.task, key, kind: 'signal', until, name });
    this.options.trace?.event('cairn.wait', { 'cairn.wait.key': key, 'cairn.wait.kind': 'signal', 'cairn.wait.name': name, 'cairn.wait.until': until ?? undefined });
    return this.stop({ kind: 'signal', call, key, until, name });
  }

  /**
   * The signal this wait takes: the one it took before (a crash came before its result
   * was recorded), else the oldest queued one named `name` whose payload passes the
   * schema and the filter. Taking is fenced and once only: a signal another wait took
   * first is passed over. A signal sent after the wait's timeout (`until`) came too late
   * for it and stays queued: whether the wait timed out must not depend on how soon
   * after its deadline a run or a worker got to the thread.
   */
  private async takeSignal<T>(queue: SignalQueue, key: string, name: string, options: WaitForOptions<T>, until: number | null): Promise<WaitResult<T> | null> {
    const place = this.options.place;
    const earlier = await queue.takenBy(key);
    const candidates = earlier ? [earlier] : await queue.pending(name);
    for (const signal of candidates) {
      if (!earlier && until !== null && signal.sentAt > until) {
        this.options.emit?.({ type: 'signal.skipped', threadId: this.threadId, at: Date.now(), node: this.node, name, id: signal.id, reason: 'sent after the wait timed out' });
        continue;
      }
      let payload: T;
      try {
        payload = await validateWith(options.schema, decode(signal.payload, `signal ${signal.id}`), `signal "${name}"`, place);
      } catch (error) {
        if (earlier) throw error;
        this.options.emit?.({ type: 'signal.skipped', threadId: this.threadId, at: Date.now(), node: this.node, name, id: signal.id, reason: (error as Error).message });
        continue;
      }
      // Awaited: an async filter's promise is not a yes.
      if (!earlier && options.filter && !(await options.filter(payload))) continue;
      if (!earlier && !(await queue.take(signal.id, key))) continue;
      crashPoint('after-signal-taken', this.node);
      return { status: 'received', timedOut: false, payload, signal: { id: signal.id, sentAt: signal.sentAt } };
    }
    return null;
  }

  private carriedWait(key: string): PendingWait | undefined {
    return this.options.carried?.waits.find((w) => w.key === key && w.ns === undefined);
  }

  /** Reads this execution made with validateAtCommit, at the versions it saw (or last wrote itself). */
  get validatedReads(): ValidatedRead[] {
    return this.storeAccess?.validatedReads() ?? [];
  }

  /** Waits for every call the node started (a node that forgot an `await` still cannot commit early). */
  async settle(): Promise<void> {
    while (this.inflight.size) await Promise.allSettled([...this.inflight]);
  }

  private track<T>(promise: Promise<T>): Promise<T> {
    this.inflight.add(promise);
    const done = () => this.inflight.delete(promise);
    promise.then(done, done);
    return promise;
  }

  /** Ledger entries of this task, fetched once, on the first call that needs them. */
  private ledgerEntries(): Promise<Map<string, LedgerEntry>> {
    if (this.options.freshLedger) return (this.entries ??= Promise.resolve(new Map()));
    this.entries ??= this.options.ledger
      .listForTask(this.threadId, this.ns, this.seq, this.task)
      .then((list) => new Map(list.map((e) => [e.key, e])));
    return this.entries;
  }

  private derivedKey(kind: 'rec' | 'eff' | 'int' | 'wait', call: number): string {
    return derivedCallKey(kind, this.threadId, this.ns, this.seq, this.task, call);
  }

  private doRecord<T>(call: number, name: string, fn: () => T | Promise<T>, options: RecordOptions<T>, attributes: RecordAttributes<T> | undefined): Promise<T> {
    const key = this.derivedKey('rec', call);
    const trace = this.options.trace;
    if (!trace) return this.recordAt(call, key, name, fn, options, undefined, undefined);
    // What the call is (its kind, the model asked for) is on the span from the start: a call that fails has no meta to read it from.
    const asked = recordMetaAttributes(askedMeta(options), name);
    return trace.around('cairn.record', { 'cairn.record.name': name, 'cairn.record.key': key, ...asked }, (span) => this.recordAt(call, key, name, fn, options, span, attributes));
  }

  private async recordAt<T>(
    call: number,
    key: string,
    name: string,
    fn: () => T | Promise<T>,
    options: RecordOptions<T>,
    span: TraceSpan | undefined,
    attributes: RecordAttributes<T> | undefined,
  ): Promise<T> {
    this.recordKeys.push(key);
    const evaluation = this.options.evaluate;
    if (evaluation && options.kind === 'model') return this.evaluateModel(call, key, name, fn, options, evaluation.models);
    const argsDigest = options.args === undefined ? null : sha256Hex(encode(options.args, `record "${name}" args`));
    const hit = await this.recorded<T>(call, key, name, argsDigest);
    if (hit) {
      span?.set({ 'cairn.record.served': true, ...recordMetaAttributes(hit.meta, name), ...attributes?.(hit.value) });
      return hit.value;
    }
    if (this.options.replay || this.options.probe) this.unservable(call, name, 'not-recorded', 'nothing was recorded for this call');
    const started = performance.now();
    const value = await withinCall(() => (span ? span.within(fn) : fn()));
    const meta = recordMeta(options, value, Math.round(performance.now() - started), this.options.place);
    const result = await this.storeRecord(call, key, name, value, 'after-record', meta, argsDigest);
    span?.set({ 'cairn.record.served': false, ...recordMetaAttributes(meta, name), ...attributes?.(result) });
    return result;
  }

  /**
   * Evaluation: the model is called anew (the code under evaluation may use another
   * model or prompt) and its value is handed to the node and written nowhere; what it
   * cost is kept beside what the stored run recorded for the same call.
   */
  private async evaluateModel<T>(call: number, key: string, name: string, fn: () => T | Promise<T>, options: RecordOptions<T>, models: EvaluatedModelCall[]): Promise<T> {
    const stored = (await this.ledgerEntries()).get(key);
    const started = performance.now();
    const value = await withinCall(fn);
    const evaluated = recordMeta(options, value, Math.round(performance.now() - started), this.options.place);
    models.push({ node: this.node, call, name, recorded: stored?.kind === 'record' && stored.meta?.kind === 'model' ? stored.meta : null, evaluated });
    return value;
  }

  /**
   * The entries of this execution's `commit: 'with-step'` effects, handed to the step's
   * commit (which then owns them: they are not written again by {@link writeWithStepEffects}).
   */
  takeWithStepEffects(): CommittedEffect[] {
    const entries = [...this.withStep.values()];
    this.withStep.clear();
    return entries;
  }

  /** Writes this execution's `commit: 'with-step'` effects to the ledger now: the node stopped, failed or waits on a sibling. */
  async writeWithStepEffects(): Promise<void> {
    await writeEffectsToLedger(this.options.ledger, this.takeWithStepEffects());
  }

  private doEffect<T>(call: number, name: string, spec: EffectSpec<T>): Promise<T> {
    const key = spec.idempotencyKey ?? this.derivedKey('eff', call);
    const trace = this.options.trace;
    const run = () =>
      trace
        ? trace.around('cairn.effect', { 'cairn.effect.name': name, 'cairn.effect.key': key }, (span) => this.effectAt(call, key, name, spec, span))
        : this.effectAt(call, key, name, spec, undefined);
    // Two calls of one key in one execution (an agent's parallel tool calls asking the
    // same thing) run one after the other: started together, both would find no entry
    // and both run the effect; in turn, the second is served the first's outcome.
    const before = this.effectKeys.get(key);
    const promise = before ? before.then(run) : run();
    this.effectKeys.set(key, promise.then(() => undefined, () => undefined));
    return promise;
  }

  private async effectAt<T>(call: number, key: string, name: string, spec: EffectSpec<T>, span: TraceSpan | undefined): Promise<T> {
    const { ledger, emit, place } = this.options;
    const argsDigest = spec.args === undefined ? null : sha256Hex(encode(spec.args, `effect "${name}" args`));
    const base = { threadId: this.threadId, at: 0, node: this.node, key, name };
    const now = () => ({ ...base, at: Date.now() });

    const withStep = spec.commit === 'with-step';
    // A caller's key used twice in one execution finds the first call's entry, in the ledger or still held for the commit.
    const held = this.withStep.get(key);
    let entry = held ? doneEntry(held) : ((await this.ledgerEntries()).get(key) ?? (spec.idempotencyKey !== undefined ? await ledger.get(this.threadId, key) : null));
    const replaying = Boolean(this.options.replay || this.options.probe);
    // In replay (or an answer check) an entry of another name is a divergence, reported below.
    if (entry) this.checkSameEffect(entry, key, name, argsDigest, !replaying);
    if (replaying && (entry?.status !== 'done' || entry.name !== name)) {
      if (entry?.status === 'done') this.unservable(call, name, 'other-call', `recorded as "${entry.name}"`);
      this.unservable(call, name, 'effect-not-recorded', entry ? 'the effect has no recorded outcome' : 'no such effect was recorded');
    }
    const serve = (done: LedgerEntry): T => {
      const digest = sha256Hex(done.outcome ?? '');
      this.checkServed(call, name, key, digest);
      this.effects.push({ key, name, digest });
      emit?.({ ...now(), type: 'effect.hit' });
      span?.set({ 'cairn.effect.outcome': 'hit' });
      return decode<T>(done.outcome!, `outcome of effect ${key}`);
    };
    if (entry?.status === 'done') return serve(entry);

    let rerun = false;
    if (entry) {
      // An intent without an outcome: a previous execution stopped between the two.
      const mode = spec.mode ?? 'atLeastOnce';
      emit?.({ ...now(), type: 'effect.recover', hasProbe: spec.probe !== undefined, mode });
      if (spec.probe) {
        const found = await withinCall(() => spec.probe!(key));
        emit?.({ ...now(), type: 'effect.probe', found: found !== null && found !== undefined });
        if (found !== null && found !== undefined) {
          span?.set({ 'cairn.effect.outcome': 'probe_found' });
          return this.finishEffect(key, name, found, 'probe');
        }
      } else if (mode === 'atMostOnce') {
        throw (this.attention ??= new NeedsAttentionError(key, name, place));
      }
      rerun = true;
      this.reran.set(key, spec.probe ? 'probe_absent_reran' : 'reran');
    } else if (withStep) {
      // Nothing is written before the call: intent and outcome go with the step's commit.
      const intent = this.entryBase(key, 'effect', name, call, argsDigest);
      crashPoint('before-effect', this.node);
      emit?.({ ...now(), type: 'effect.run', rerun: false });
      span?.set({ 'cairn.effect.outcome': 'ran' });
      const result = await withinCall(() => (span ? span.within(() => spec.run(key)) : spec.run(key)));
      crashPoint('after-effect', this.node);
      return this.holdForCommit(intent, result);
    } else {
      crashPoint('before-intent', this.node);
      entry = await ledger.writeIntent(this.entryBase(key, 'effect', name, call, argsDigest));
      // The first write of a key wins: an entry another effect wrote since the entries were read comes back here.
      this.checkSameEffect(entry, key, name, argsDigest, true);
      // Already done: another execution (one that took the thread over) ran it since the entries were read.
      if (entry.status === 'done' && entry.kind === 'effect') return serve(entry);
      crashPoint('after-intent', this.node);
      emit?.({ ...now(), type: 'effect.intent' });
    }

    crashPoint('before-effect', this.node);
    emit?.({ ...now(), type: 'effect.run', rerun });
    span?.set({ 'cairn.effect.outcome': !rerun ? 'ran' : spec.probe ? 'probe_absent_reran' : 'reran' });
    const result = await withinCall(() => (span ? span.within(() => spec.run(key)) : spec.run(key)));
    crashPoint('after-effect', this.node);
    return this.finishEffect(key, name, result, 'run');
  }

  /**
   * A found entry is this effect's only when it is an effect of the same name and, when
   * both have one, the same arguments: served otherwise, another effect's outcome would
   * pass for this one's (a refund answered with the charge it shares a key with) and
   * this one would never run.
   */
  private checkSameEffect(entry: LedgerEntry, key: string, name: string, argsDigest: string | null, byName: boolean): void {
    const { place } = this.options;
    if (entry.kind !== 'effect') throw new EffectConflictError(key, `the key is already used by a recorded output "${entry.name}".`, place);
    if (byName && entry.name !== name) {
      throw new EffectConflictError(
        key,
        `the key is already used by effect "${entry.name}" (node "${entry.node}"), and effect "${name}" asks for it: two different effects share one idempotency key. Give each effect its own key; nothing was run.`,
        place,
      );
    }
    if (argsDigest !== null && entry.argsDigest !== null && entry.argsDigest !== argsDigest) {
      throw new EffectConflictError(key, `re-executed with different arguments than its recorded intent (effect "${name}").`, place);
    }
  }

  /** Replay mode: a served value must be the one the stored position was committed with. */
  private checkServed(call: number, name: string, key: string, digest: string): void {
    const served = this.options.served;
    if (!served) return;
    const ref = served.get(key);
    if (!ref) throw new ReplayDivergence(this.node, call, name, 'not-recorded', `the stored step did not use ${key}`);
    if (ref.digest !== digest) throw new ReplayDivergence(this.node, call, name, 'ledger-mismatch', `the ledger row of ${key} does not match the digest its position holds: it was changed or damaged`);
  }

  private async finishEffect<T>(key: string, name: string, result: T, source: 'run' | 'probe'): Promise<T> {
    const text = encode(result, `outcome of effect "${name}"`);
    crashPoint('before-outcome', this.node);
    await this.options.ledger.writeOutcome(this.threadId, key, text, Date.now());
    crashPoint('after-outcome', this.node);
    // The position keeps how recovery settled an effect in doubt: the ledger keeps only intent and outcome.
    const recovery = source === 'probe' ? 'probe_found' : this.reran.get(key);
    this.effects.push({ key, name, digest: sha256Hex(text), ...(recovery ? { recovery } : {}) });
    this.options.emit?.({ type: 'effect.outcome', threadId: this.threadId, at: Date.now(), node: this.node, key, name, source });
    return result;
  }

  /** A `commit: 'with-step'` effect ran: its entry waits for the step's commit, its ref goes in the position now. */
  private holdForCommit<T>(intent: NewLedgerEntry, result: T): T {
    const text = encode(result, `outcome of effect "${intent.name}"`);
    this.withStep.set(intent.key, { ...intent, outcome: text, completedAt: Date.now() });
    this.effects.push({ key: intent.key, name: intent.name, digest: sha256Hex(text) });
    this.options.emit?.({ type: 'effect.outcome', threadId: this.threadId, at: Date.now(), node: this.node, key: intent.key, name: intent.name, source: 'run' });
    return result;
  }

  private entryBase(key: string, kind: 'effect' | 'record', name: string, call: number, argsDigest: string | null) {
    return {
      threadId: this.threadId,
      key,
      kind,
      name,
      ns: this.ns,
      seq: this.seq,
      node: this.node,
      task: this.task,
      call,
      argsDigest,
      createdAt: Date.now(),
    } as const;
  }
}

/**
 * The last wake time a sleep or a wait timeout may set: the latest ms a Date holds, well
 * inside the 64-bit integer every engine stores it as.
 */
const LATEST_WAKE = 8_640_000_000_000_000;

/**
 * A wake time as stored: whole ms, rounded up (never woken before the time asked for),
 * and no later than a Date can name. InvalidOptionError (returned, for the caller to
 * reject with) past that.
 */
function wakeTime(call: string, at: number, place: ErrorPlace): number | InvalidOptionError {
  const until = Math.ceil(at);
  if (until > LATEST_WAKE) return new InvalidOptionError(`${call} would wake after the latest time a Date holds (${new Date(LATEST_WAKE).toISOString()}).`, { place });
  return until;
}

/** The answer check's end at its interrupt call: the answer as the call's schema gives it, or the schema's refusal. */
async function checkedAnswer<T>(schema: InterruptOptions<T>['answer'], answer: unknown, place: ErrorPlace): Promise<AnswerChecked | StateValidationError> {
  try {
    return new AnswerChecked(await validateAnswer(schema, answer, place));
  } catch (error) {
    if (StateValidationError.is(error)) return error;
    throw error;
  }
}

