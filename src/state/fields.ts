/**
 * @module state/fields
 * Field declarations: every state field has a role.
 * - `field.model(schema, { reduce })`: written by nodes, merged by a reducer.
 * - `field.runtime(schema, { compute })`: owned by the runtime; a node that writes it is rejected.
 * Derived fields are declared beside `fields` in `defineState({ derived })`, so that
 * their functions are typed by the other fields.
 *
 * @example
 * ```ts
 * const fields = {
 *   summary:  field.model(z.string().optional()),
 *   messages: field.model(z.array(Message), { reduce: 'append', default: [] }),
 *   step:     field.runtime(z.number(), { compute: (rt) => rt.step, default: 0 }),
 * };
 * ```
 */
import type { StandardSchemaV1 } from '@standard-schema/spec';
import { checkModelFieldOptions, checkRuntimeFieldOptions } from './definition-checks.js';

/** What a runtime field's `compute` can see when a step commits. */
export interface RuntimeInfo {
  threadId: string;
  ns: string;
  /** Seq of the position being committed. */
  seq: number;
  /** Superstep number of the position being committed. */
  step: number;
  /** The thread's attempt counter. */
  attempt: number;
  /** Nodes that ran in this step. */
  nodes: readonly string[];
  tenant: string | null;
}

/** How a write to a model field combines with its current value. */
export type ReducerFn<T, U> = (current: T, update: U) => T;

/** What two parallel tasks writing one replace field in the same step get: `reject` (StateConflictError) or `lastWins` (the later task in plan order wins). */
export type ConflictPolicy = 'reject' | 'lastWins';

type Default<T> = T | (() => T);

/** A field nodes may write, merged by its reducer; declared with `field.model(schema, options)`. */
export interface ModelField<T, W> {
  readonly role: 'model';
  readonly schema: StandardSchemaV1<unknown, T>;
  readonly reduce: 'replace' | 'append' | ReducerFn<T, W>;
  readonly default?: Default<T>;
  readonly onConflict?: ConflictPolicy;
  /** Shown as `[redacted]` by every face that shows stored data (see `compile({ redact })`); stored intact. */
  readonly redact?: true;
  /** Phantom (never set): carries the stored and written types, read by ValueOf / WriteOf. */
  readonly __types?: () => [T, W];
}

/** A field only the runtime writes (a node that writes it is rejected); declared with `field.runtime(...)`. */
export interface RuntimeField<T> {
  readonly role: 'runtime';
  readonly schema: StandardSchemaV1<unknown, T>;
  readonly compute?: (info: RuntimeInfo) => T;
  readonly default?: Default<T>;
  /** Shown as `[redacted]` by every face that shows stored data; stored intact. */
  readonly redact?: true;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyField = ModelField<any, any> | RuntimeField<any>;

type Out<S extends StandardSchemaV1> = StandardSchemaV1.InferOutput<S>;
// A write goes through the schema (merge validates it and stores the output), so it is
// typed by what the schema takes: `z.string().transform(...)` is written as a string,
// a `.default()` inside an object may be left out.
type In<S extends StandardSchemaV1> = StandardSchemaV1.InferInput<S>;

interface ModelOptions<T> {
  default?: Default<T>;
  onConflict?: ConflictPolicy;
  /**
   * Hide the field's value wherever stored data is shown (CLI, inspector, exports,
   * events, spans, error messages): it prints as `[redacted]`. The value is stored and
   * read by the program (`getState`, nodes) intact.
   */
  redact?: boolean;
}

function model<S extends StandardSchemaV1>(schema: S, options?: ModelOptions<Out<S>> & { reduce?: 'replace' }): ModelField<Out<S>, In<S>>;
function model<S extends StandardSchemaV1<unknown, readonly unknown[]>>(
  schema: S,
  options: ModelOptions<Out<S>> & { reduce: 'append' },
): ModelField<Out<S>, In<S>>;
function model<S extends StandardSchemaV1, U>(
  schema: S,
  options: ModelOptions<Out<S>> & { reduce: ReducerFn<Out<S>, U> },
): ModelField<Out<S>, U>;
function model(schema: StandardSchemaV1, options: ModelOptions<unknown> & { reduce?: unknown } = {}): ModelField<unknown, unknown> {
  checkModelFieldOptions(schema, options);
  return {
    role: 'model',
    schema,
    reduce: (options.reduce ?? 'replace') as ModelField<unknown, unknown>['reduce'],
    ...(options.default !== undefined ? { default: options.default } : {}),
    ...(options.onConflict ? { onConflict: options.onConflict } : {}),
    ...(options.redact === true ? { redact: true as const } : {}),
  };
}

function runtime<S extends StandardSchemaV1>(
  schema: S,
  options: { compute?: (info: RuntimeInfo) => Out<S>; default?: Default<Out<S>>; redact?: boolean } = {},
): RuntimeField<Out<S>> {
  checkRuntimeFieldOptions(schema, options);
  const { redact, ...rest } = options;
  return { role: 'runtime', schema, ...rest, ...(redact === true ? { redact: true as const } : {}) };
}

/** Field builders. */
export const field = { model, runtime };

/** The stored value type of a field. */
export type ValueOf<F> = F extends { readonly schema: StandardSchemaV1<unknown, infer T> } ? T : never;
/** The type a node writes to a field. */
export type WriteOf<F> = F extends { readonly __types?: () => [unknown, infer W] } ? W : never;

export function defaultOf(f: AnyField): unknown {
  const d = f.default;
  return typeof d === 'function' ? (d as () => unknown)() : structuredCloneIfObject(d);
}

// A default given as a literal object/array must not be shared between threads.
function structuredCloneIfObject(value: unknown): unknown {
  return typeof value === 'object' && value !== null ? structuredClone(value) : value;
}
