/**
 * @module runtime/call-options
 * The checks the options of `compile`, `run` (`submit`, `stream`), `resume`, `fork`
 * and the reads pass before anything is taken or stored: a value out of range is
 * InvalidOptionError naming the call and the option, never a thread that runs
 * without a limit (`recursionLimit: NaN`), a lease the database refuses half-way
 * (`leaseMs: 1.5` on PostgreSQL), a fork that takes the lease to find no position
 * `-1`, or a busy policy that is silently `throw`. An option left out (undefined)
 * takes its default and is never refused here.
 */
import { InvalidKeyError, InvalidOptionError } from '../errors.js';
import { isPlainObject } from '../internal/plain-object.js';
import { THREAD_QUERY_KEYS } from '../internal/thread-query.js';
import { checkRetryPolicy } from './retry.js';
import { checkOptionKeys } from '../internal/option-keys.js';

/** An option's value in a message: numbers as written (NaN, Infinity), the rest as JSON. */
const shown = (value: unknown): string => (typeof value === 'number' || typeof value === 'bigint' ? String(value) : (JSON.stringify(value) ?? String(value)));

type Options = Record<string, unknown>;
type Check = (call: string, name: string, value: unknown) => void;

function refuse(call: string, name: string, expected: string, value: unknown): never {
  throw new InvalidOptionError(`${call}: ${name} must be ${expected}, got ${shown(value)}.`);
}

/** A count of things (supersteps, positions, ms of a lease): a whole number, 1 or more. */
const positiveInteger: Check = (call, name, value) => {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1) refuse(call, name, 'a whole number, 1 or more', value);
};
/** A limit (supersteps, positions between snapshots): a whole number, 1 or more, or Infinity for none. */
const limit: Check = (call, name, value) => {
  if (value !== Number.POSITIVE_INFINITY && (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 1)) refuse(call, name, 'a whole number, 1 or more (or Infinity: no limit)', value);
};
/** A position's seq: a whole number, 0 or more. */
const seq: Check = (call, name, value) => {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) refuse(call, name, "a position's seq (an integer, 0 or more)", value);
};
/** A time to wait, ms: 0 (try once) or more. */
const milliseconds: Check = (call, name, value) => {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) refuse(call, name, 'a finite number of milliseconds, 0 or more', value);
};
const text: Check = (call, name, value) => {
  if (typeof value !== 'string') refuse(call, name, 'a string', value);
};
const flag: Check = (call, name, value) => {
  if (typeof value !== 'boolean') refuse(call, name, 'true or false', value);
};
const fn: Check = (call, name, value) => {
  if (typeof value !== 'function') refuse(call, name, 'a function', value);
};
/** Writes to state fields (input, patch): a plain object of field names, as a node returns. */
const writes: Check = (call, name, value) => {
  if (!isPlainObject(value)) refuse(call, name, 'a plain object of state fields and their values', value);
};
const onBusy: Check = (call, name, value) => {
  if (value !== 'throw' && value !== 'wait') refuse(call, name, "'throw' or 'wait'", value);
};
const abortSignal: Check = (call, name, value) => {
  if (!(value instanceof AbortSignal)) refuse(call, name, 'an AbortSignal', value);
};
const nodeMapping: Check = (call, name, value) => {
  if (!isPlainObject(value)) refuse(call, name, 'a plain object of stored node name → node of this graph', value);
  for (const [from, to] of Object.entries(value)) if (typeof to !== 'string') refuse(call, `${name}.${from}`, 'the name of a node of this graph', to);
};
const object: Check = (call, name, value) => {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) refuse(call, name, 'an object', value);
};
const nodeNames: Check = (call, name, value) => {
  if (!Array.isArray(value) || value.some((n) => typeof n !== 'string')) refuse(call, name, 'a list of node names', value);
};

/** Runs each check whose option is given (not undefined). */
function checkEach(call: string, options: Options, checks: Record<string, Check>): void {
  for (const [name, check] of Object.entries(checks)) {
    const value = options[name];
    if (value !== undefined) check(call, name, value);
  }
}

function checkObject(call: string, options: unknown): asserts options is Options {
  if (options === null || typeof options !== 'object' || Array.isArray(options)) throw new InvalidOptionError(`${call} takes one options object ({ thread, … }), got ${shown(options)}.`);
}

/** What every run takes (run, submit, stream, resume). */
const RUN_CHECKS: Record<string, Check> = {
  onBusy,
  waitTimeoutMs: milliseconds,
  recursionLimit: limit,
  signal: abortSignal,
  onEvent: fn,
  rawEvents: flag,
  nodeMapping,
};


const RUN_KEYS = ['thread', 'input', 'kind', 'tenant', 'metadata', ...Object.keys(RUN_CHECKS)];
const RESUME_KEYS = ['thread', ...Object.keys(RUN_CHECKS), 'answer', 'input', 'childInput', 'interrupt', 'detach', 'actor'];
const FORK_KEYS = ['thread', 'seq', 'patch', 'actor', 'onBusy'];

/** `run` / `submit` / `stream` options (kind, tenant and metadata are checked with the new thread). */
export function checkRunOptions(call: string, options: unknown): void {
  checkObject(call, options);
  checkOptionKeys(call, options, RUN_KEYS);
  checkEach(call, options, { ...RUN_CHECKS, input: writes });
}

/** `resume` options. */
export function checkResumeOptions(options: unknown): void {
  checkObject('resume', options);
  checkOptionKeys('resume', options, RESUME_KEYS);
  checkEach('resume', options, { ...RUN_CHECKS, input: writes, childInput: writes, interrupt: text, detach: flag, actor: text });
  // Both name the child's writes when the interrupt is a child run's: one of them would be dropped.
  if (options.input !== undefined && options.childInput !== undefined) {
    throw new InvalidOptionError('resume: give input or childInput, not both: for an interrupt raised inside a child run both are writes to the child graph\'s fields.');
  }
}

/** `fork` options. */
export function checkForkOptions(options: unknown): void {
  checkObject('fork', options);
  checkOptionKeys('fork', options, FORK_KEYS);
  if (options.seq === undefined) refuse('fork', 'seq', "a position's seq (an integer, 0 or more)", undefined);
  checkEach('fork', options, { seq, patch: writes, actor: text, onBusy });
}

/** A count of things to list (a history page): a whole number, 0 or more. */
const count: Check = (call, name, value) => {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) refuse(call, name, 'a whole number, 0 or more', value);
};
const statuses: Check = (call, name, value) => {
  if (typeof value !== 'string' && !(Array.isArray(value) && value.every((s) => typeof s === 'string'))) refuse(call, name, 'a thread status or a list of them', value);
};

/**
 * What the calls about one stored thread take (reads, attempts, verify, delete, cancel,
 * signal, resolveEffect): each key and the check of its value. A misspelt key is refused, not
 * ignored: `history({ thread, ns })` with `ns` misspelt would list the root graph's
 * positions as if they were the child's, and `deleteThread({ thread, ifStatuss })` would
 * delete a thread whatever its status.
 */
const THREAD_CALLS: Record<string, Record<string, Check | null>> = {
  getState: { ns: text },
  stateAt: { ns: text, seq },
  history: { ns: text, beforeSeq: seq, limit: count },
  replay: { from: seq, to: seq },
  attempts: {},
  verify: {},
  getThread: {},
  deleteThread: { ifStatus: statuses },
  cancel: { actor: text, reason: text },
  resolveEffect: { idempotencyKey: text, outcome: null },
  // The name is checked where the signal is queued; a misspelt `paylaod` would queue null.
  signal: { name: null, payload: null },
};

/**
 * The options of a call about one stored thread ({@link THREAD_CALLS}): one options
 * object, only the keys the call takes, each value of its kind, and a thread id that is
 * a non-empty string (InvalidKeyError, as `run` says of it, rather than "no such
 * thread" for an id no thread can have). Checked before anything is read or taken.
 */
export function checkThreadCall(call: keyof typeof THREAD_CALLS, options: unknown): asserts options is Options & { thread: string } {
  checkObject(call, options);
  const checks = THREAD_CALLS[call]!;
  checkOptionKeys(call, options, ['thread', ...Object.keys(checks)]);
  const thread = options.thread;
  if (typeof thread !== 'string' || thread === '') throw new InvalidKeyError(`${call}: thread id must be a non-empty string, got ${shown(thread)}.`);
  checkEach(call, options, Object.fromEntries(Object.entries(checks).filter((entry): entry is [string, Check] => entry[1] !== null)));
}

/** `listThreads` query keys (their values are checked by the engine's query normalisation). */
export function checkThreadQueryKeys(query: unknown): void {
  // Not an object at all is the query normalisation's to refuse, with its own message.
  if (query === null || typeof query !== 'object' || Array.isArray(query)) return;
  checkOptionKeys('listThreads', query as Options, THREAD_QUERY_KEYS);
}

/** Every option `compile()` knows: any other key is a typo or another library's option, refused rather than ignored. */
export const COMPILE_OPTIONS = [
  'name',
  'engine',
  'artifacts',
  'snapshotEvery',
  'recursionLimit',
  'retry',
  'leaseMs',
  'onEvent',
  'tracing',
  'redact',
  'interruptBefore',
  'interruptAfter',
] as const;

/** `compile()` options, beside the engine (checked first, with its own message). */
export function checkCompileOptions(options: Options): void {
  checkOptionKeys('compile', options, COMPILE_OPTIONS);
  checkEach('compile', options, {
    name: text,
    artifacts: object,
    snapshotEvery: limit,
    recursionLimit: limit,
    retry: (call, _name, value) => checkRetryPolicy(call, value),
    leaseMs: positiveInteger,
    onEvent: fn,
    tracing: flag,
    redact: object,
    interruptBefore: nodeNames,
    interruptAfter: nodeNames,
  });
}

/**
 * `evaluate` options: which threads (`threads`, `query`) and the code (`with`). A
 * misspelt selection (`thread: 'cust_42'`) would evaluate no thread and report all
 * the same; a misspelt filter in `query` would evaluate every thread, with new model
 * calls for each.
 */
export function checkEvaluateOptions(options: unknown): void {
  checkObject('evaluate', options);
  checkOptionKeys('evaluate', options, ['threads', 'query', 'with']);
  if (options.threads !== undefined && !(Array.isArray(options.threads) && options.threads.every((t) => typeof t === 'string'))) refuse('evaluate', 'threads', 'a list of thread ids', options.threads);
  if (options.query !== undefined) checkThreadQueryKeys(options.query);
  // Read per thread otherwise: every thread would fail with a TypeError about `version` or `nodes`.
  if (options.with !== undefined && options.with !== null && !isCompiledGraph(options.with)) {
    const got = Array.isArray(options.with) ? 'an array' : typeof options.with === 'object' ? 'an object that is no compiled graph' : typeof options.with;
    throw new InvalidOptionError(`evaluate: with must be a compiled graph (what graph(State)….compile() returns), got ${got}.`);
  }
}

/** Whether `value` looks like what `compile()` returns: a state schema and a graph spec of nodes (told apart without importing App). */
export function isCompiledGraph(value: unknown): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const { schema, spec } = value as { schema?: { view?: unknown }; spec?: { nodes?: unknown } };
  return typeof schema?.view === 'function' && spec?.nodes instanceof Map;
}
