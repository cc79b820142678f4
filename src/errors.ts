/**
 * @module errors
 * Every error cairn throws is a {@link CairnError} subclass with a stable string
 * `code`. Match on `code` (or `XxxError.is(err)`), never on the message: codes are
 * part of the public contract, messages may improve. The original error, when
 * there is one, is kept as `cause`.
 *
 * @example
 * ```ts
 * try { await app.run({ thread: 'cust_42' }); }
 * catch (err) { if (ThreadBusyError.is(err)) console.log('another run holds', err.threadId); }
 * ```
 */

/** Where an error happened: printed as `[cairn] [engine] thread T seq N:` in the message. */
export interface ErrorPlace {
  engine?: string;
  thread?: string;
  seq?: number;
  ns?: string;
}

function prefix(place: ErrorPlace | undefined): string {
  let text = '[cairn]';
  if (place?.engine) text += ` [${place.engine}]`;
  if (place?.thread !== undefined) {
    text += ` thread ${place.thread}`;
    if (place.ns) text += ` ns ${place.ns}`;
    if (place.seq !== undefined) text += ` seq ${place.seq}`;
    text += ':';
  }
  return text;
}

/**
 * The brand every cairn error carries, set by the {@link CairnError} constructor. A
 * registered symbol (`Symbol.for`), so that a second copy of cairn loaded in the same
 * process (a bundling accident) brands its errors with the same one. Node's own errors
 * have `ERR_` codes too (`ERR_INVALID_ARG_TYPE`, `ERR_INVALID_URL`, even
 * `ERR_ACCESS_DENIED`): a code alone does not make an error cairn's.
 */
const CAIRN_ERROR = Symbol.for('cairn.error');

/** True when `err` was made by a CairnError constructor, of this copy of cairn or another one. */
function isBranded(err: unknown): err is CairnError {
  return err instanceof Error && (err as unknown as Record<symbol, unknown>)[CAIRN_ERROR] === true && typeof (err as { code?: unknown }).code === 'string';
}

/** Base class of every cairn error. */
export class CairnError extends Error {
  /** Stable machine-readable code of this class, e.g. `ERR_VERSION_CONFLICT`. */
  static readonly code: string = 'ERR_CAIRN';
  /** Stable machine-readable code, e.g. `ERR_VERSION_CONFLICT`. */
  readonly code: string;
  readonly place: ErrorPlace | undefined;

  constructor(message: string, options?: { cause?: unknown; place?: ErrorPlace }) {
    super(`${prefix(options?.place)} ${message}`, options?.cause !== undefined ? { cause: options.cause } : undefined);
    this.name = new.target.name;
    this.code = (new.target as typeof CairnError).code;
    this.place = options?.place;
    // Not enumerable: it stays out of logs, inspection and deep equality.
    Object.defineProperty(this, CAIRN_ERROR, { value: true });
  }

  /**
   * True when `err` is this class of error: a cairn error with this class's `code`
   * (`CairnError.is`: any cairn error). An error made by another copy of cairn in the
   * same process (a bundling accident) is recognised too, by the brand every cairn error
   * carries and its code. An error that only has a cairn-looking `code` (Node's own
   * `ERR_INVALID_ARG_TYPE`, an error rebuilt from JSON) is not a cairn error: compare
   * `err.code` for those.
   */
  static is<T extends CairnError>(this: (abstract new (...args: never[]) => T) & { code: string }, err: unknown): err is T {
    if (err instanceof this) return true;
    if (!isBranded(err)) return false;
    return (this as unknown) === CairnError || err.code === this.code;
  }
}

function coded<C extends string>(code: C) {
  return class extends CairnError {
    static override readonly code: C = code;
    declare readonly code: C;
  };
}

// ---------------------------------------------------------------- state

/** One problem reported by a Standard Schema validator. */
export interface ValidationIssue {
  message: string;
  path: (string | number)[];
}

/** A write (or resume input) failed its field's schema. Nothing was persisted. */
export class StateValidationError extends coded('ERR_STATE_VALIDATION') {
  constructor(
    readonly field: string,
    readonly issues: ValidationIssue[],
    place?: ErrorPlace,
  ) {
    const detail = issues.map((i) => (i.path.length ? `${i.path.join('.')}: ` : '') + i.message).join('; ');
    super(`field "${field}" failed validation: ${detail}. Nothing was persisted.`, { place });
  }
}

/** Two writes to a `replace` field in one step, under `onConflict: 'reject'` (the default). */
export class StateConflictError extends coded('ERR_STATE_CONFLICT') {
  constructor(
    readonly field: string,
    readonly writers: string[],
    place?: ErrorPlace,
  ) {
    super(
      `field "${field}" was written by ${writers.join(' and ')} in one step. ` +
        `Give it a reducer ('append' or a function), or declare onConflict: 'lastWins' to keep the later write.`,
      { place },
    );
  }
}

/** A node returned a value for a `runtime` field; only the runtime writes those. */
export class RuntimeFieldWriteError extends coded('ERR_RUNTIME_FIELD_WRITE') {
  constructor(
    readonly field: string,
    readonly node: string,
    place?: ErrorPlace,
  ) {
    super(`node "${node}" wrote runtime-owned field "${field}". Runtime fields are set by cairn; return model fields only.`, {
      place,
    });
  }
}

/** A node returned a value for a `derived` field; derived fields are computed on read. */
export class DerivedFieldWriteError extends coded('ERR_DERIVED_FIELD_WRITE') {
  constructor(
    readonly field: string,
    readonly node: string,
    place?: ErrorPlace,
  ) {
    super(`node "${node}" wrote derived field "${field}". Derived fields are recomputed on every read; write the fields it derives from.`, {
      place,
    });
  }
}

/** A write named a field the state schema does not declare. */
export class UnknownFieldError extends coded('ERR_UNKNOWN_FIELD') {
  constructor(
    readonly field: string,
    readonly writer: string,
    place?: ErrorPlace,
  ) {
    super(`"${writer}" wrote unknown field "${field}". Declare it in defineState({ fields }).`, { place });
  }
}

/**
 * A node returned something other than an update (a plain object of the fields it
 * writes) or nothing (`undefined`, `null`): a Map, an array, a class instance, a
 * string, a number... Run input, a resume's input and a fork's patch are checked the
 * same way. Refused rather than read as "writes nothing". Nothing was persisted.
 */
export class InvalidUpdateError extends coded('ERR_INVALID_UPDATE') {
  constructor(
    readonly writer: string,
    /** What was returned, as the message names it: `a Map`, `an array`, `an instance of Point`… */
    readonly received: string,
    place?: ErrorPlace,
  ) {
    super(
      `"${writer}" returned ${received}, not an update: return a plain object of the fields it writes ({ field: value }), or nothing (undefined or null) to write none. Nothing was persisted.`,
      { place },
    );
  }
}

/** One field's encoded value is bigger than the state's per-field limit. */
export class StateTooLargeError extends coded('ERR_STATE_TOO_LARGE') {
  constructor(
    readonly field: string,
    readonly bytes: number,
    readonly limit: number,
    place?: ErrorPlace,
  ) {
    super(
      `field "${field}" would store ${bytes} bytes, over the ${limit}-byte limit. ` +
        `Keep big payloads out of state: store them with ctx.artifacts.put(...) and keep the returned ArtifactRef.`,
      { place },
    );
  }
}

/**
 * Code the state was handed to (a node, a routing function, an interrupt payload, a
 * derived field, a subgraph's input or output mapping) changed an `append` field's list
 * in place (`push`, `splice`, `pop`, `length = …`) instead of returning the items as a
 * write. Nothing of that change is stored, so a resumed run would see another state:
 * the step is refused, and the list is put back to its committed length. It is
 * deterministic, so the default retry policy does not retry it; a list that was
 * shortened cannot be put back in memory, and is never retried (the next run reads the
 * stored state).
 */
export class StateMutationError extends coded('ERR_STATE_MUTATED') {
  /** The first field changed in place (all of them: `fields`). */
  readonly field: string;

  constructor(
    /** The append fields whose list length differed from the committed (or staged) one. */
    readonly fields: string[],
    /** The nodes of the step (all of them: concurrent nodes share the lists); empty outside a node step. */
    readonly nodes: string[],
    /** False when a list had been shortened: its items are gone from memory, and the run must not go on from it. */
    readonly restored: boolean,
    options: { place?: ErrorPlace; cause?: unknown } = {},
  ) {
    const named = fields.map((f) => `"${f}"`).join(', ');
    const where = nodes.length ? `in a step that ran ${nodes.map((n) => `"${n}"`).join(', ')}` : 'outside a node (a routing function, an interrupt payload or a derived field)';
    const example = fields[0]!;
    super(
      `the list of append field${fields.length === 1 ? '' : 's'} ${named} was changed in place ${where}. ` +
        `State is read-only: return the items to append as a write ({ ${example}: [item] }) instead of changing s.${example}. ` +
        `Nothing of the change was stored${restored ? '' : '; the shortened list cannot be put back in memory, so the run stops here'}.` +
        (options.cause !== undefined ? ` The code also threw: ${options.cause instanceof Error ? options.cause.message : String(options.cause)}` : ''),
      options,
    );
    this.field = example;
  }
}

/** A stored checkpoint is older than the schema's compatibility window. */
export class SchemaTooOldError extends coded('ERR_SCHEMA_TOO_OLD') {
  constructor(
    readonly storedVersion: number,
    readonly oldestReadableVersion: number,
    readonly currentVersion: number,
    place?: ErrorPlace,
  ) {
    super(
      `checkpoint has schema version ${storedVersion}, older than the oldest readable version ${oldestReadableVersion} ` +
        `(current ${currentVersion}). Add upcasters down to ${storedVersion} or lower oldestReadableVersion.`,
      { place },
    );
  }
}

/** A stored checkpoint was written by newer code than this one. */
export class SchemaFromFutureError extends coded('ERR_SCHEMA_FROM_FUTURE') {
  constructor(
    readonly storedVersion: number,
    readonly currentVersion: number,
    place?: ErrorPlace,
  ) {
    super(
      `checkpoint has schema version ${storedVersion} but this code knows versions up to ${currentVersion}. ` +
        `It was written by newer code; run that code, or deploy it here.`,
      { place },
    );
  }
}

/**
 * An upcaster threw, or returned something that is not a state object, while bringing
 * a stored checkpoint to the current version; or the state the upcasters produced is
 * refused by the current schema (`field` names the field, `issues` what its schema
 * said). Nothing was read; the stored rows are unchanged (fix the upcaster and read
 * again). `cause` is what it threw.
 */
export class UpcastError extends coded('ERR_UPCAST') {
  /** The version the upcasters were to reach: `fromVersion + 1` for one upcaster's failure, the current version for a refused state. */
  readonly toVersion: number;
  /** The field the current schema refused after the upcasters ran (undefined when an upcaster itself failed). */
  readonly field: string | undefined;
  readonly issues: ValidationIssue[];

  constructor(
    readonly fromVersion: number,
    message: string,
    options: { place?: ErrorPlace; cause?: unknown; refused?: { field: string; toVersion: number; issues: ValidationIssue[] } } = {},
  ) {
    const refused = options.refused;
    super(
      refused
        ? `the state upcast from schema version ${fromVersion} to ${refused.toVersion} is refused by version ${refused.toVersion}'s schema: ${message} ` +
            `Make the upcasters convert field "${refused.field}". Nothing was read; the stored rows are unchanged.`
        : `upcast[${fromVersion}] (schema version ${fromVersion} to ${fromVersion + 1}) ${message} Nothing was read; the stored rows are unchanged.`,
      { place: options.place, cause: options.cause },
    );
    this.toVersion = refused ? refused.toVersion : fromVersion + 1;
    this.field = refused?.field;
    this.issues = refused?.issues ?? [];
  }
}

/** The state definition itself is inconsistent (missing upcaster, bad version numbers...). */
export class SchemaDefinitionError extends coded('ERR_SCHEMA_DEFINITION') {}

/**
 * A stored position was written by code whose field `field` was a different thing
 * (another role, reducer or schema) at the same schema version. Reading it with this
 * code would hand nodes data of the wrong shape, so nothing is read.
 */
export class SchemaDriftError extends coded('ERR_SCHEMA_DRIFT') {
  constructor(
    readonly field: string,
    readonly version: number,
    readonly detail: string,
    place?: ErrorPlace,
  ) {
    super(
      `field "${field}" changed at schema version ${version} without a version bump: ${detail}. ` +
        `Bump defineState({ version }) to ${version + 1} and add upcast[${version}] to convert what is stored; nothing was read.`,
      { place },
    );
  }
}

// ---------------------------------------------------------------- codec & integrity

/** A value cannot be encoded (function, symbol, class instance, cycle): rejected before anything is stored. */
export class UnencodableValueError extends coded('ERR_UNENCODABLE') {
  constructor(
    readonly path: string,
    readonly reason: string,
    place?: ErrorPlace,
  ) {
    super(`cannot encode the value at ${path}: ${reason}. Store plain data (objects, arrays, strings, numbers, Date, BigInt, bytes, Map, Set).`, {
      place,
    });
  }
}

/** A path of hundreds of levels, cut in the middle for a message (the error's `path` keeps all of it). */
function shortPath(path: string): string {
  return path.length <= 160 ? path : `${path.slice(0, 100)}…(${path.length - 140} characters)…${path.slice(-40)}`;
}

/**
 * A value nests deeper than the codec's limit (`MAX_VALUE_DEPTH` levels of objects and
 * arrays), or the call stack ran out while encoding it: rejected before anything is stored.
 */
export class ValueTooDeepError extends coded('ERR_VALUE_TOO_DEEP') {
  constructor(
    readonly path: string,
    readonly limit: number,
    options?: { stackExhausted?: boolean; cause?: unknown; place?: ErrorPlace },
  ) {
    super(
      options?.stackExhausted
        ? `the call stack ran out while encoding the value at ${shortPath(path)}, before the ${limit}-level limit (MAX_VALUE_DEPTH): ` +
            `encode was called from a very deep stack. Call it from a shallower one, or flatten the value.`
        : `the value at ${shortPath(path)} nests deeper than ${limit} levels of objects and arrays (MAX_VALUE_DEPTH). ` +
            `Flatten it: keep a tree as a list of nodes with parent ids, or a deep document as a string.`,
      { cause: options?.cause, place: options?.place },
    );
  }
}

/** Stored bytes do not decode or do not match their hash. Nothing is returned from the corrupted row. */
export class CorruptRecordError extends coded('ERR_CORRUPT_RECORD') {
  constructor(message: string, options?: { cause?: unknown; place?: ErrorPlace }) {
    super(`${message} Run \`cairn verify\` to locate every damaged position.`, options);
  }
}

// ---------------------------------------------------------------- threads & runs

/** Another run holds this thread. Exactly one run proceeds per thread. */
export class ThreadBusyError extends coded('ERR_THREAD_BUSY') {
  constructor(
    readonly threadId: string,
    readonly holder: string | null,
    place?: ErrorPlace,
    /** What the caller can do; by default cairn's runs' remedy. */
    remedy = "Wait for it, or pass onBusy: 'wait'.",
  ) {
    super(`another run${holder ? ` (${holder})` : ''} holds this thread. ${remedy}`, {
      place: { ...place, thread: threadId },
    });
  }
}

/** This run's lease on the thread was taken over; it must stop without committing. */
export class LeaseLostError extends coded('ERR_LEASE_LOST') {
  constructor(readonly threadId: string, place?: ErrorPlace) {
    super(`this run no longer holds the thread's lease (another run took it over); nothing more was committed.`, {
      place: { ...place, thread: threadId },
    });
  }
}

/** The thread's head moved under this commit: committing would fork the position chain silently. */
export class HeadMovedError extends coded('ERR_HEAD_MOVED') {
  constructor(
    readonly threadId: string,
    readonly expected: number | null,
    readonly actual: number | null,
    place?: ErrorPlace,
  ) {
    super(`head is at ${actual} but this commit extends ${expected}; refusing to fork the chain silently.`, {
      place: { ...place, thread: threadId },
    });
  }
}

/**
 * `CairnSaver.putWrites` named a LangGraph checkpoint that is not stored: it was never
 * put, or its put did not land within `writesWaitMs`. Nothing was written.
 */
export class CheckpointNotFoundError extends coded('ERR_CHECKPOINT_NOT_FOUND') {
  constructor(readonly threadId: string, readonly checkpointId: string, place?: ErrorPlace) {
    super(`no checkpoint ${checkpointId} in this thread: writes belong to a checkpoint that was put first. Pass the config put() returned.`, { place: { ...place, thread: threadId } });
  }
}

/** No thread with this id: it was never started, or it was deleted. */
export class ThreadNotFoundError extends coded('ERR_THREAD_NOT_FOUND') {
  constructor(readonly threadId: string, place?: ErrorPlace) {
    super(`no such thread.`, { place: { ...place, thread: threadId } });
  }
}

/**
 * An engine scoped to one tenant (`postgres(url, { tenant })`) was asked to create or
 * take a thread of another tenant, or one whose id is taken by a thread it cannot
 * see (another tenant's, under row-level security: `threadTenant` undefined). Nothing changed.
 */
export class TenantMismatchError extends coded('ERR_TENANT_MISMATCH') {
  constructor(
    readonly threadId: string,
    readonly engineTenant: string,
    readonly threadTenant: string | null | undefined,
    place?: ErrorPlace,
  ) {
    super(
      threadTenant === undefined
        ? `this engine is scoped to tenant ${JSON.stringify(engineTenant)}, and the thread id is taken by a thread it cannot see (another tenant's). Nothing changed: use another id, or an engine of that tenant.`
        : `this engine is scoped to tenant ${JSON.stringify(engineTenant)}, and the thread ${threadTenant === null ? 'has no tenant' : `belongs to tenant ${JSON.stringify(threadTenant)}`}. Nothing changed: use an engine of that tenant, or a cross-tenant one.`,
      { place: { ...place, thread: threadId } },
    );
  }
}

/** The thread has no position `seq` (in that namespace). */
export class PositionNotFoundError extends coded('ERR_POSITION_NOT_FOUND') {
  constructor(readonly threadId: string, readonly seq: number, place?: ErrorPlace) {
    super(`no position ${seq} in this thread.`, { place: { ...place, thread: threadId, seq } });
  }
}

/**
 * The position asked for was removed by compaction (retention): the namespace keeps its
 * positions from `base` on. Reading, forking or replaying it is refused rather than
 * answered from what is left; the positions from `base` read as before.
 */
export class PositionCompactedError extends coded('ERR_POSITION_COMPACTED') {
  constructor(readonly threadId: string, readonly seq: number, readonly base: number, place?: ErrorPlace) {
    super(`position ${seq} was compacted away by retention: this namespace keeps its positions from ${base} on (and only those descending from it).`, {
      place: { ...place, thread: threadId, seq },
    });
  }
}

/** A thread has no positions in the namespace asked for (a child run's, such as `research:0@4`). */
export class NamespaceNotFoundError extends coded('ERR_NAMESPACE_NOT_FOUND') {
  constructor(readonly threadId: string, readonly ns: string, readonly namespaces: string[], place?: ErrorPlace) {
    const others = namespaces.filter((n) => n !== '');
    super(
      `has no namespace ${JSON.stringify(ns)}. ${others.length ? `Its child runs' namespaces: ${others.join(', ')}.` : 'It has no child runs.'}`,
      { place: { ...place, thread: threadId } },
    );
  }
}

/** The signal was consumed by another wait: a signal is taken at most once. Nothing was changed. */
export class SignalConsumedError extends coded('ERR_SIGNAL_CONSUMED') {
  constructor(
    readonly threadId: string,
    readonly signalId: number,
    readonly consumedBy: string,
    place?: ErrorPlace,
  ) {
    super(`signal ${signalId} was already consumed by wait ${JSON.stringify(consumedBy)}; a signal is taken once. Send another signal for another wait.`, {
      place: { ...place, thread: threadId },
    });
  }
}

/** The thread has no signal with this id. */
export class SignalNotFoundError extends coded('ERR_SIGNAL_NOT_FOUND') {
  constructor(readonly threadId: string, readonly signalId: number, place?: ErrorPlace) {
    super(`no signal ${signalId} in this thread. listSignals names the ids it has.`, { place: { ...place, thread: threadId } });
  }
}

/** `run()` on a thread waiting for `resume()`. */
export class ThreadInterruptedError extends coded('ERR_THREAD_INTERRUPTED') {
  constructor(readonly threadId: string, readonly interruptIds: string[], place?: ErrorPlace) {
    super(`is interrupted, waiting for an answer to ${interruptIds.join(', ')}. Call app.resume({ thread, input }) to go on.`, {
      place: { ...place, thread: threadId },
    });
  }
}

/** `resume()` on a thread that is not waiting for one. Nothing was changed. */
export class ThreadNotInterruptedError extends coded('ERR_NOT_INTERRUPTED') {
  constructor(readonly threadId: string, readonly status: string, place?: ErrorPlace) {
    super(`is ${status}, not interrupted: there is nothing to resume. Use run() to continue it.`, { place: { ...place, thread: threadId } });
  }
}

/** `resume()` named no interrupt, or one the thread is not waiting for. Nothing was changed. */
export class InterruptNotFoundError extends coded('ERR_INTERRUPT_NOT_FOUND') {
  constructor(readonly threadId: string, readonly requested: string | undefined, readonly pending: string[], place?: ErrorPlace) {
    super(
      requested === undefined
        ? `waits for ${pending.length} interrupts (${pending.join(', ')}): say which one this answers with { interrupt: id }.`
        : `is not waiting for interrupt ${requested}; it waits for ${pending.join(', ')}.`,
      { place: { ...place, thread: threadId } },
    );
  }
}

/** The run's signal was aborted (a caller's cancel, a worker shutting down). The thread stays resumable. */
export class RunCancelledError extends coded('ERR_RUN_CANCELLED') {
  /** `beforeHeld`: cancelled while it waited to hold the thread, so nothing of it ran. */
  constructor(readonly threadId: string, reason: unknown, place?: ErrorPlace, readonly beforeHeld = false) {
    super(
      beforeHeld
        ? `the run was cancelled before it held the thread: nothing ran and nothing changed.`
        : `the run was cancelled between steps; the thread keeps its status and resumes on the next run().`,
      { cause: reason, place: { ...place, thread: threadId } },
    );
  }
}

/** A thread has an unfinished run started with different input. */
export class RunInProgressError extends coded('ERR_RUN_IN_PROGRESS') {
  constructor(readonly threadId: string, place?: ErrorPlace) {
    super(
      `has an unfinished run started with other input. Call run({ thread }) without input to resume (or retry) it; ` +
        `to run it again from an earlier position with corrected values, fork it there: fork({ thread, seq, patch }) starts a new branch and keeps the old one.`,
      { place: { ...place, thread: threadId } },
    );
  }
}

/** The graph definition is inconsistent (unknown node in an edge, no entry point...). */
export class GraphDefinitionError extends coded('ERR_GRAPH_DEFINITION') {}

/** A name refers to no node of the graph (an edge target, a conditional edge's answer). */
export class UnknownNodeError extends coded('ERR_UNKNOWN_NODE') {
  constructor(readonly node: string, detail: string, place?: ErrorPlace) {
    super(`unknown node "${node}" ${detail}.`, { place });
  }
}

/** Stored control flow names nodes this code no longer has. Nothing was changed. */
export class GraphMismatchError extends coded('ERR_GRAPH_MISMATCH') {
  /**
   * @param call the call that found it (`run`, `resume`, `fork`...): the message tells
   *   the caller to pass `nodeMapping` to that call.
   */
  constructor(readonly missing: string[], place?: ErrorPlace, call = 'run') {
    const at = place?.seq !== undefined ? `the thread is at seq ${place.seq}, whose` : 'the stored';
    super(
      `${at} position will next run ${missing.map((n) => `"${n}"`).join(', ')}, which this graph does not have. ` +
        `Restore the node(s), or pass nodeMapping to ${call}() (e.g. { nodeMapping: { ${JSON.stringify(missing[0] ?? 'old')}: "<new name>" } }) to say which nodes replace them. Nothing was changed.`,
      { place },
    );
  }
}

/** The run took more supersteps than `recursionLimit`. The thread stays resumable. */
export class RecursionLimitError extends coded('ERR_RECURSION_LIMIT') {
  constructor(readonly limit: number, place?: ErrorPlace) {
    super(`the run reached the recursion limit of ${limit} supersteps. Raise recursionLimit, or check for a cycle without an exit.`, {
      place,
    });
  }
}

/** A node failed and its retry policy is exhausted. The thread is `failed` and resumable. */
export class NodeFailedError extends coded('ERR_NODE_FAILED') {
  constructor(readonly node: string, readonly attempts: number, cause: unknown, place?: ErrorPlace) {
    const reason = cause instanceof Error ? cause.message : String(cause);
    super(`node "${node}" failed after ${attempts} attempt(s): ${reason}`, { cause, place });
  }
}

/** An at-most-once effect may or may not have happened; a person must decide. */
export class NeedsAttentionError extends coded('ERR_NEEDS_ATTENTION') {
  constructor(readonly effectKey: string, readonly effectName: string, place?: ErrorPlace) {
    super(
      `effect "${effectName}" (key ${effectKey}) has an intent but no outcome and is atMostOnce without a probe: ` +
        `it may have happened. The thread is needs_attention; record its outcome with resolveEffect() and run again.`,
      { place },
    );
  }
}

/**
 * One effect key was asked for by an effect it does not belong to: with different arguments
 * (the code or input diverged), or by an effect of another name (two effects given one
 * idempotency key). Nothing was run.
 */
export class EffectConflictError extends coded('ERR_EFFECT_CONFLICT') {
  constructor(readonly effectKey: string, detail: string, place?: ErrorPlace) {
    super(`effect key ${effectKey}: ${detail}`, { place });
  }
}

/** `resolveEffect` named an effect the thread does not have. */
export class EffectNotFoundError extends coded('ERR_EFFECT_NOT_FOUND') {
  constructor(readonly effectKey: string, place?: ErrorPlace) {
    super(`has no effect with key ${effectKey}. List them with \`cairn effects <thread>\`.`, { place });
  }
}

/**
 * An effect a person recorded as failed (`cairn resolve-effect --failed`, `failEffect`
 * in cairn/inspect): kept as the thread's last error, with the thread `failed`.
 */
export class EffectFailedError extends coded('ERR_EFFECT_FAILED') {
  constructor(readonly effectKey: string, readonly effectName: string, readonly reason: string, readonly actor: string, place?: ErrorPlace) {
    super(`effect "${effectName}" (key ${effectKey}) failed, as ${actor} recorded: ${reason}. Fix the cause, then run the thread again or fork it.`, { place });
  }
}

/**
 * A person cancelled the thread (`cairn cancel`, `app.cancel`, the inspector): kept
 * as its last error, with status `failed`. The run that held it stopped at its next
 * step boundary without committing. `run({ thread })` starts a new attempt from the
 * last position; `fork` starts a branch elsewhere.
 */
export class ThreadCancelledError extends coded('ERR_THREAD_CANCELLED') {
  constructor(readonly threadId: string, readonly actor: string, readonly reason: string | undefined, place?: ErrorPlace) {
    super(`cancelled by ${actor}${reason ? `: ${reason}` : ''}. run({ thread }) starts a new attempt from its last position, if you want it back.`, {
      place: { ...place, thread: threadId },
    });
  }
}

/** A recorded output does not match the call asking for it (different name at the same call index). */
export class RecordMismatchError extends coded('ERR_RECORD_MISMATCH') {
  constructor(readonly key: string, readonly expected: string, readonly found: string, place?: ErrorPlace) {
    super(`call ${key} was recorded as "${found}" but the code now asks for "${expected}": the node's calls changed order.`, {
      place,
    });
  }
}

/** A recorded output was asked for again with other arguments than it was recorded with (`ctx.record(..., { args })`). */
export class RecordArgsMismatchError extends coded('ERR_RECORD_ARGS_MISMATCH') {
  constructor(readonly key: string, readonly callName: string, place?: ErrorPlace) {
    super(`call ${key} ("${callName}") was recorded with other arguments than the code now passes: the node's inputs changed since it was recorded. Fork the thread before the step, or run it as a new thread.`, {
      place,
    });
  }
}

// ---------------------------------------------------------------- stores & artifacts

/** `put` / `delete` with `ifVersion` found another version. */
export class VersionConflictError extends coded('ERR_VERSION_CONFLICT') {
  constructor(
    readonly namespace: string[],
    readonly key: string,
    readonly expected: number,
    readonly actual: number,
    place?: ErrorPlace,
  ) {
    super(`${namespace.join('/')}/${key}: expected version ${expected}, found ${actual}. Re-read and retry, or use update().`, {
      place,
    });
  }
}

/** `update()` lost more compare-and-set rounds to other writers than `maxRetries` allowed. Nothing of it was written. */
export class UpdateConflictError extends coded('ERR_UPDATE_CONFLICT') {
  constructor(
    readonly namespace: string[],
    readonly key: string,
    readonly attempts: number,
    place?: ErrorPlace,
  ) {
    super(
      `${namespace.join('/')}/${key}: update lost ${attempts} compare-and-set rounds to other writers and gave up. ` +
        `Raise maxRetries, or spread the writes over more keys.`,
      { place },
    );
  }
}

/**
 * A read made with `validateAtCommit` is no longer current: another writer changed the
 * item after this step read it. Inside a run the step runs again on fresh data.
 */
export class StaleReadError extends coded('ERR_STALE_READ') {
  constructor(
    readonly namespace: string[],
    readonly key: string,
    readonly expected: number,
    readonly actual: number,
    place?: ErrorPlace,
  ) {
    super(`${namespace.join('/')}/${key} was read at version ${expected} but is now at ${actual}: the step decided on stale data.`, { place });
  }
}

/** A step was re-run for stale `validateAtCommit` reads more times than the bound allows. The thread is resumable. */
export class StaleReadLimitError extends coded('ERR_STALE_READ_LIMIT') {
  constructor(
    readonly node: string,
    readonly reruns: number,
    readonly stale: StaleReadError,
    place?: ErrorPlace,
  ) {
    super(
      `node "${node}" was re-run ${reruns} times because items it read with validateAtCommit kept changing ` +
        `(last: ${stale.namespace.join('/')}/${stale.key}, read at version ${stale.expected}, now ${stale.actual}). ` +
        `Another writer updates them faster than the step runs: make the step shorter or write through update().`,
      { cause: stale, place },
    );
  }
}

/** An access policy (a store's, an artifact store's tenant views) denied a principal an operation on a namespace. Nothing was touched. */
export class AccessDeniedError extends coded('ERR_ACCESS_DENIED') {
  constructor(
    readonly principal: string | null,
    readonly namespace: string[],
    readonly operation: string,
    place?: ErrorPlace,
  ) {
    super(
      `${principal === null ? 'an anonymous principal' : `principal ${JSON.stringify(principal)}`} may not ${operation} ` +
        `${namespace.length ? JSON.stringify(namespace) : 'the root namespace'}: the access policy denies it. Nothing was touched.`,
      { place },
    );
  }
}

/** A store search filter was rejected before any query ran (unknown operator, bad path, wrong operand type). */
export class InvalidFilterError extends coded('ERR_INVALID_FILTER') {}

/** A web inspector action was asked of an inspector started without `--allow-actions` (`allowActions: true`). Nothing changed. */
export class ActionsDisabledError extends coded('ERR_ACTIONS_DISABLED') {
  constructor() {
    super('this inspector is read-only: start it with cairn inspect --allow-actions (startInspector({ allowActions: true })) to answer, signal, fork, cancel or delete threads from the page.');
  }
}

/** A web inspector action runs the graph's code (resume, fork, replay) and the inspector has no application. Nothing changed. */
export class AppRequiredError extends coded('ERR_APP_REQUIRED') {
  constructor(readonly action: string) {
    super(`${action} runs the graph's code: start the inspector with --app <module#export> (startInspector({ app })), as cairn resume --app does.`);
  }
}

/**
 * A web inspector action came without the proof that the inspector's own page sent
 * it (the `x-cairn-token` header, a same-origin `Origin` / `Sec-Fetch-Site`, a JSON
 * body): refused as a possible cross-site request. Nothing changed.
 */
export class CrossSiteRequestError extends coded('ERR_CROSS_SITE') {}

/**
 * An export written redacted (`cairn export` without `--raw` on threads with
 * redaction rules) given to import: its values are not the stored ones and its chain
 * cannot verify, so nothing of it is imported.
 */
export class RedactedExportError extends coded('ERR_REDACTED_EXPORT') {
  constructor() {
    super('this export was written redacted: its values are not the stored ones and its hash chain cannot verify, so it cannot be imported. Nothing was imported. Export again with --raw (exportThreads(engine, ids, { raw: true })) to copy threads.');
  }
}

/**
 * A stream given to import is not a whole cairn export: it is empty or does not start
 * with a header, it ends before its end record (a truncated file, a cut between two
 * threads), a thread's positions stop before the head its thread record declares, or
 * its counts or order do not add up (damaged). Nothing of it was left imported.
 */
export class InvalidExportError extends coded('ERR_INVALID_EXPORT') {}

/**
 * Import (`cairn import`, `cairn copy`) was given threads the target already holds: it
 * refuses to merge histories. `threadIds` lists every clash found. Nothing was imported.
 */
export class ThreadExistsError extends coded('ERR_THREAD_EXISTS') {
  constructor(
    readonly threadIds: string[],
    engine: string,
  ) {
    super(
      `${threadIds.length === 1 ? `thread ${threadIds[0]} already exists` : `threads ${threadIds.join(', ')} already exist`} in the ${engine} engine: import refuses to merge histories. Nothing was imported. Delete ${threadIds.length === 1 ? 'it' : 'them'} there, or import the others.`,
    );
  }
}

/** An option was out of range or of the wrong type (a limit, a ttl, a cursor...). Nothing was touched. */
export class InvalidOptionError extends coded('ERR_INVALID_OPTION') {}

/** Artifact bytes do not match their reference's sha256 or size. The bytes are not returned. */
export class ArtifactIntegrityError extends coded('ERR_ARTIFACT_INTEGRITY') {}

/**
 * A text artifact too long to read whole to redact it (the inspector, a redacted export):
 * refused rather than shown or written in the clear. Show it raw, or leave artifacts out.
 */
export class ArtifactTooLargeToRedactError extends coded('ERR_ARTIFACT_TOO_LARGE_TO_REDACT') {}

/** No artifact with this ref or key in the store (or it was collected). */
export class ArtifactNotFoundError extends coded('ERR_ARTIFACT_NOT_FOUND') {}

/** A key, id, namespace label or path component was rejected before touching storage. */
export class InvalidKeyError extends coded('ERR_INVALID_KEY') {}

// ---------------------------------------------------------------- engines

/** An optional driver (better-sqlite3, pg...) could not be loaded. */
export class DriverMissingError extends coded('ERR_DRIVER_MISSING') {}

/** The engine was closed; create a new one. */
export class EngineClosedError extends coded('ERR_ENGINE_CLOSED') {}

/**
 * The storage engine failed; the driver's error is the `cause`. A run that meets one
 * stops and leaves its thread as it was (resumable): what it committed is kept, and the
 * next run of the thread (yours, or a worker's) goes on from there.
 *
 * @example
 * ```ts
 * catch (err) { if (EngineError.is(err) && err.retryable) setTimeout(() => app.run({ thread }), 1_000); }
 * ```
 */
export class EngineError extends coded('ERR_ENGINE') {
  /**
   * True when the same call may work if made again: the connection was lost (a server
   * restart, a killed backend, a network failure), a statement or lock timed out, the
   * database was busy, a transaction lost a serialization or deadlock conflict. False
   * when it will fail again until something is fixed (a corrupt file, a missing privilege).
   */
  readonly retryable: boolean;

  constructor(message: string, options?: { cause?: unknown; place?: ErrorPlace; retryable?: boolean }) {
    super(message, options);
    this.retryable = options?.retryable ?? false;
  }
}

/**
 * An optional method the engine does not support (its capabilities say so), e.g.
 * `subscribeRunnable` on an engine without wake-ups. Read `capabilities` before calling.
 */
export class NotSupportedError extends coded('ERR_NOT_SUPPORTED') {}

/**
 * An engine opened read-only found no cairn database where it looked: a SQLite file
 * that does not exist or holds no cairn tables, a PostgreSQL schema that does not
 * exist or was never migrated. Nothing was created.
 */
export class DatabaseNotFoundError extends coded('ERR_DATABASE_NOT_FOUND') {
  constructor(
    /** The file or URL (password masked) that was looked at. */
    readonly location: string,
    detail: string,
    place?: ErrorPlace,
  ) {
    super(
      `no cairn database at ${location}: ${detail} Nothing was created. Check the path or URL; ` +
        `a new database is created by the first run of your app, or by \`cairn migrate --apply --db ${location}\`.`,
      { place },
    );
  }
}

/**
 * `cairn import-langgraph` (or `openLangGraphSource`) found no LangGraph checkpoint
 * database where it was pointed: no such file, or no SqliteSaver / PostgresSaver
 * `checkpoints` table. Nothing was created or changed.
 */
export class LangGraphSourceNotFoundError extends coded('ERR_LANGGRAPH_SOURCE_NOT_FOUND') {
  constructor(
    /** The file or URL (password masked) that was looked at. */
    readonly location: string,
    detail: string,
  ) {
    super(`no LangGraph checkpoint database at ${location}: ${detail} Nothing was created. Point --from at the file a SqliteSaver wrote, or at the PostgreSQL database (and #schema) a PostgresSaver wrote.`, {
      place: { engine: 'langgraph' },
    });
  }
}

/** The database lacks migrations this cairn has; an engine opened read-only does not apply them. Nothing was changed. */
export class DatabaseOutdatedError extends coded('ERR_DATABASE_OUTDATED') {
  constructor(
    readonly location: string,
    /** Ids of the migrations the database lacks. */
    readonly missing: number[],
    /** The newest migration this cairn knows. */
    readonly latest: number,
    place?: ErrorPlace,
  ) {
    super(
      `the cairn database at ${location} is older than this cairn: it lacks migration${missing.length === 1 ? '' : 's'} ${missing.join(', ')} ` +
        `(this cairn has up to ${latest}). Upgrade it with \`cairn migrate --apply --db ${location}\` (or by opening it for writing), then retry.`,
      { place },
    );
  }
}

/**
 * The database was migrated by a newer cairn: it records migrations this cairn does
 * not know, so this cairn can neither read it reliably nor write it without damaging
 * what the newer one keeps there. Refused when an engine opens it, for reading or for
 * writing. Nothing was changed.
 */
export class DatabaseFromFutureError extends coded('ERR_DATABASE_FROM_FUTURE') {
  constructor(
    readonly location: string,
    /** Ids of the recorded migrations this cairn does not know (a newer cairn's). */
    readonly newer: number[],
    /** The newest migration this cairn knows. */
    readonly latest: number,
    place?: ErrorPlace,
    /** The name the newest unknown migration was recorded with, when known. */
    newestName?: string,
  ) {
    const newest = Math.max(...newer);
    super(
      `the cairn database at ${location} was migrated by a newer cairn (migration ${newest}${newestName ? ` ${JSON.stringify(newestName)}` : ''}; this cairn knows up to ${latest}): ` +
        `this cairn neither reads nor writes it. Upgrade cairn here${place?.engine === 'postgres' ? ', or point this process at another schema' : ''}. Nothing was changed.`,
      { place },
    );
  }
}

// ---------------------------------------------------------------- encryption at rest

/**
 * An encrypted row did not open: its authentication tag does not match, or it was
 * sealed for another row (thread, namespace, seq, kind are bound as associated data,
 * so a ciphertext copied into another row fails here). Nothing of the row is returned.
 */
export class DecryptionError extends coded('ERR_DECRYPTION') {}

/**
 * An engine that requires encryption found a row stored in the clear: a writer without
 * encryption (or a misconfigured one) wrote it. Nothing of the row is returned; find the
 * writer. An engine opened with `encrypted(engine, { keys, require: false })` reads such
 * rows (and seals everything it writes): the way to read a database that held plaintext
 * before encryption was turned on.
 */
export class PlaintextRowError extends coded('ERR_PLAINTEXT_ROW') {}

/**
 * A row's data key cannot be had: it was destroyed by an erasure (crypto-shredding),
 * its key-encryption key is gone from the key provider, or the key id names no key.
 * The row's contents are unreadable for good when the scope was erased.
 */
export class KeyUnavailableError extends coded('ERR_KEY_UNAVAILABLE') {
  constructor(
    /** The data key id the row names. */
    readonly keyId: string,
    detail: string,
    options?: { cause?: unknown; place?: ErrorPlace },
  ) {
    super(`data key ${keyId} is unavailable: ${detail}`, options);
  }
}

/**
 * The database holds encrypted rows (it has data keys) and was opened without keys:
 * pass the key provider (`encrypted(engine, { keys })`; on the command line `--keys
 * <key file>`, `CAIRN_KEY_FILE` or `CAIRN_MASTER_KEY`). Nothing was read.
 */
export class KeysRequiredError extends coded('ERR_KEYS_REQUIRED') {}
