/**
 * @module runtime/node-context
 * What a node's function is handed beside the state (`ctx`), as its author sees it:
 * recorded calls, effects, interrupts, waits, custom events, the store and artifacts.
 * The implementation is runtime/task-scope.
 */
import type { StandardSchemaV1 } from '@standard-schema/spec';
import type { ArtifactRef, ArtifactStore } from '../contracts/artifact-store.js';
import type { StoreValueOptions } from '../artifacts/helpers.js';
import type { RecordKind, RecordMeta } from '../contracts/ledger.js';
import type { EffectSpec } from './effects.js';
import type { NodeStore } from './node-store.js';

/**
 * What a node receives beside the state: `record` for nondeterminism, `effect` for side
 * effects, `interrupt` to ask a person, `store` and `artifacts` for durable data.
 */
export interface NodeContext {
  readonly threadId: string;
  readonly ns: string;
  /** Seq of the position this step started from. */
  readonly seq: number;
  /** Superstep number of the step being computed. */
  readonly step: number;
  readonly node: string;
  /** Task id, `node:index`. */
  readonly task: string;
  /** Attempt of this node in this step, from 1. */
  readonly attempt: number;
  /** Aborted when the run loses its lease or is cancelled. */
  readonly signal: AbortSignal;
  /** The artifact store given to compile(), as the thread's tenant when it has one. Throws if none was given. */
  readonly artifacts: ArtifactStore;
  /**
   * Keeps a large output out of state in one call: runs `fn` (a tool, a download, a
   * model call), stores what it returns as an artifact (strings as text, bytes as
   * they are, anything else as tagged JSON) and returns the ref to put in state. The
   * ref is recorded, so a re-executed step is served it without calling `fn` again.
   * Read the value back with `loadValue(ctx.artifacts, ref)`.
   *
   * @example
   * ```ts
   * .node('crawl', async (s, ctx) => ({ page: await ctx.recordArtifact('fetch', () => fetchPage(s.url), { mediaType: 'text/html' }) }))
   * ```
   */
  recordArtifact(name: string, fn: () => unknown, options?: StoreValueOptions): Promise<ArtifactRef>;
  readonly store: NodeStore;
  /**
   * Records a nondeterministic output; a re-execution of this step is served the
   * recorded value. `options` says what the call was (a model call, a tool result;
   * `other` by default) and, for a model call, which model and the tokens it used: kept
   * beside the entry as its {@link RecordMeta} with the call's latency, shown by the
   * inspector and set on the record's span as GenAI attributes.
   *
   * @example
   * ```ts
   * const reply = await ctx.record('summarise', () => llm.complete(prompt), {
   *   kind: 'model', model: 'gpt-5-mini', provider: 'openai',
   *   describe: (r) => ({ usage: { inputTokens: r.usage.prompt, outputTokens: r.usage.completion } }),
   * });
   * ```
   */
  record<T>(name: string, fn: () => T | Promise<T>, options?: RecordOptions<T>): Promise<T>;
  /** Runs a side effect under the side-effect invariant (see the module documentation). */
  effect<T>(name: string, spec: EffectSpec<T>): Promise<T>;
  /**
   * Asks a person and waits for the answer. The first time, the node stops here:
   * nothing after the call runs and the node's writes are not committed, while what it
   * recorded before the call (`ctx.record`, effects) stays recorded. The thread is
   * `interrupted` with `payload` until `app.resume({ thread, answer })` (any process,
   * any day) re-executes the node, serving the recorded values, and this same call
   * resolves to the answer, validated by `options.answer` when given (an invalid answer
   * is a StateValidationError from `resume`, and nothing changes). Several calls in one
   * node are answered in call order, one `resume` each.
   *
   * @example
   * ```ts
   * .node('approve', async (s, ctx) => {
   *   const ok = await ctx.interrupt({ question: `refund ${s.amount}?` }, { answer: z.boolean() });
   *   return { decision: ok ? 'refund' : 'deny' };
   * })
   * ```
   */
  interrupt<T = unknown>(payload?: unknown, options?: InterruptOptions<T>): Promise<T>;
  /**
   * Asks for a person without stopping the node: once this step commits (with this
   * node's writes) the run stops with status `interrupted` and `payload` stored, until
   * `app.resume({ thread, input })` merges the answer into the state and the run goes on.
   */
  interruptAfter(payload?: unknown): void;
  /**
   * Waits `ms` milliseconds, durably: the node stops here and the thread is `waiting`
   * with its wake time; no process, memory or connection is held. A run of the thread
   * (`app.run({ thread })`, a worker) after that time re-executes the node, serving what
   * it recorded, and the call returns.
   */
  sleep(ms: number): Promise<void>;
  /** {@link NodeContext.sleep} until a time (a Date or ms since the epoch). */
  sleepUntil(time: Date | number): Promise<void>;
  /**
   * Waits for a signal named `name`, sent with `app.signal({ thread, name, payload })`
   * from any process. Signals are queued durably, so one sent before the wait starts,
   * or while every process is down, is taken when the wait is reached; each signal is
   * taken by one wait. Resolves to `{ status: 'received', timedOut: false, payload }`, or to
   * `{ status: 'timedOut', timedOut: true }` once `timeoutMs` has passed without one. Signals that fail
   * `schema` or `filter` are left in the queue for other waits.
   */
  waitFor<T = unknown>(name: string, options?: WaitForOptions<T>): Promise<WaitResult<T>>;
  /**
   * Emits a custom event to the run's event sinks and streams (`app.stream`): model
   * tokens, progress. Not persisted; a re-executed node emits again.
   */
  emit(data: unknown): void;
}

/** Options of {@link NodeContext.record}: what the recorded call was. */
export interface RecordOptions<T> {
  /** `model`, `tool` or `other` (the default: a clock, a random draw, a lookup). */
  kind?: RecordKind;
  /** The model's id, when the call is a model call. */
  model?: string;
  /** Who serves the model (`openai`, `anthropic`…). */
  provider?: string;
  /** The tool's own name, for a tool call whose record is named otherwise: its span's `gen_ai.tool.name` (default: the record's name). */
  tool?: string;
  /**
   * Reads what is only known from the value (the tokens used, the model that answered):
   * its fields win over `kind`, `model` and `provider`. Runs once, when the call is made,
   * never when the value is served again.
   */
  describe?: (value: T) => Partial<RecordMeta> | undefined;
  /**
   * What the call was asked (a tool's input): its digest is kept with the record, and
   * a re-execution that asks the same call with other arguments is refused
   * (RecordArgsMismatchError; in replay and evaluation, a divergence) instead of being
   * served a value computed for something else.
   */
  args?: unknown;
}

/** Options of {@link NodeContext.interrupt}. */
export interface InterruptOptions<T> {
  /** Validates the answer (a Standard Schema, e.g. a zod schema); the call resolves to its output. */
  answer?: StandardSchemaV1<unknown, T>;
}

/** Options of {@link NodeContext.waitFor}. */
export interface WaitForOptions<T> {
  /** Give up after this long (ms from when the wait started): the call resolves to `{ status: 'timedOut', timedOut: true }`. */
  timeoutMs?: number;
  /** Validates the payload; a signal that fails it stays queued. */
  schema?: StandardSchemaV1<unknown, T>;
  /** Takes only a signal whose (validated) payload passes (an async filter is awaited); others stay queued. */
  filter?: (payload: T) => boolean | Promise<boolean>;
}

/** What {@link NodeContext.waitFor} resolves to. */
export type WaitResult<T> =
  | { status: 'received'; timedOut: false; payload: T; signal: { id: number; sentAt: number } }
  | { status: 'timedOut'; timedOut: true };
