/**
 * @module state/schema
 * `defineState` declares a thread's state once: its fields with their roles and
 * reducers, derived fields, the schema version and the upcasters that read older
 * checkpoints. It gives both the TypeScript types ({@link StateOf},
 * {@link UpdateOf}) and runtime validation through any Standard Schema validator.
 *
 * @example
 * ```ts
 * const State = defineState({
 *   version: 2,
 *   fields: {
 *     summary:  field.model(z.string().optional()),
 *     messages: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
 *   },
 *   derived: { count: (s) => s.messages.length },
 *   upcast: { 1: (v1) => ({ ...v1, messages: v1.history ?? [] }) },
 * });
 * type S = StateOf<typeof State>;   // { summary?: string; messages: string[]; readonly count: number }
 * ```
 */
import type { StandardSchemaV1 } from '@standard-schema/spec';
import {
  SchemaDefinitionError,
  SchemaFromFutureError,
  SchemaTooOldError,
  StateValidationError,
  type ErrorPlace,
} from '../errors.js';
import { defaultOf, type AnyField, type ConflictPolicy, type ModelField, type RuntimeField, type RuntimeInfo, type ValueOf, type WriteOf } from './fields.js';

/** Default limit on one field's encoded size: big payloads belong in artifacts. */
export const DEFAULT_MAX_FIELD_BYTES = 256 * 1024;

type Fields = Record<string, AnyField>;
type PlainState = Record<string, unknown>;

/** The state of the stored fields (model and runtime). */
export type BaseState<F extends Fields> = { [K in keyof F]: ValueOf<F[K]> };

/** Derived field functions, typed by the stored fields; `D` maps each name to its value type. */
type DerivedFns<F extends Fields, D extends Record<string, unknown>> = { [K in keyof D]: (state: BaseState<F>) => D[K] };

type ModelKeys<F extends Fields> = { [K in keyof F]: F[K] extends { role: 'model' } ? K : never }[keyof F];

export interface StateDefinition<F extends Fields, D extends Record<string, unknown>> {
  /** Schema version stored with every checkpoint. Default 1. */
  version?: number;
  /** Oldest stored version still readable; older ones raise SchemaTooOldError. Default: as far back as upcasters reach. */
  oldestReadableVersion?: number;
  fields: F;
  /** Functions of the stored fields, recomputed on every read and never stored. */
  derived?: DerivedFns<F, D>;
  /** `upcast[n]` turns a version-n state into a version-(n+1) state, at read time. */
  upcast?: Record<number, (state: PlainState) => PlainState>;
  /** What two writes to one `replace` field in one step do. Default 'reject'. */
  onConflict?: ConflictPolicy;
  /** Limit on one field's encoded size (bytes). Default 256 KiB. */
  maxFieldBytes?: number;
}

/** A declared state schema. Create it with {@link defineState}. */
export class StateSchema<F extends Fields = Fields, D extends Record<string, unknown> = Record<string, unknown>> {
  readonly version: number;
  readonly oldestReadableVersion: number;
  readonly fields: F;
  /** Derived functions (the parameter is typed loosely here so that every schema is a `StateSchema`). */
  readonly derived: { readonly [K in keyof D]: (state: never) => D[K] };
  readonly onConflict: ConflictPolicy;
  readonly maxFieldBytes: number;
  /** Field names in declaration order: the order every merge and snapshot uses. */
  readonly fieldNames: readonly string[];
  readonly appendFields: ReadonlySet<string>;
  private readonly upcasters: Record<number, (state: PlainState) => PlainState>;

  /** Phantom members that carry the state's types. */
  declare readonly $state: BaseState<F> & { readonly [K in keyof D]: D[K] };
  declare readonly $update: { [K in ModelKeys<F>]?: WriteOf<F[K]> } & { [K in Exclude<keyof F, ModelKeys<F>> | keyof D]?: never };

  constructor(definition: StateDefinition<F, D>) {
    this.version = definition.version ?? 1;
    this.fields = definition.fields;
    this.derived = (definition.derived ?? {}) as { [K in keyof D]: (state: never) => D[K] };
    this.onConflict = definition.onConflict ?? 'reject';
    this.maxFieldBytes = definition.maxFieldBytes ?? DEFAULT_MAX_FIELD_BYTES;
    this.upcasters = definition.upcast ?? {};
    this.fieldNames = Object.keys(definition.fields);
    this.appendFields = new Set(this.fieldNames.filter((n) => (definition.fields[n] as AnyField).role === 'model' && (definition.fields[n] as ModelField<unknown, unknown>).reduce === 'append'));

    if (!Number.isInteger(this.version) || this.version < 1) {
      throw new SchemaDefinitionError(`state version must be a positive integer, got ${definition.version}.`);
    }
    for (const name of Object.keys(this.derived)) {
      if (name in definition.fields) throw new SchemaDefinitionError(`"${name}" is declared both as a field and as derived.`);
    }
    let reachable = this.version;
    while (reachable > 1 && typeof this.upcasters[reachable - 1] === 'function') reachable--;
    const below = Object.keys(this.upcasters).map(Number).filter((v) => v < reachable);
    if (below.length) {
      throw new SchemaDefinitionError(
        `upcast[${below.join('], upcast[')}] can never run: upcast[${reachable - 1}] is missing, so the chain to version ${this.version} stops at ${reachable}.`,
      );
    }
    const oldest = definition.oldestReadableVersion ?? reachable;
    if (oldest < reachable || oldest > this.version) {
      throw new SchemaDefinitionError(
        `oldestReadableVersion ${oldest} cannot be read: upcasters reach back to version ${reachable} (current ${this.version}). ` +
          `Add upcast[${reachable - 1}] or raise oldestReadableVersion.`,
      );
    }
    this.oldestReadableVersion = oldest;
  }

  field(name: string): AnyField | undefined {
    return Object.prototype.hasOwnProperty.call(this.fields, name) ? (this.fields[name] as AnyField) : undefined;
  }

  isDerived(name: string): boolean {
    return Object.prototype.hasOwnProperty.call(this.derived, name);
  }

  /** A fresh state holding every field's default. */
  initial(): PlainState {
    return this.withDefaults({});
  }

  /** Fills fields missing from a stored (possibly upcast) state with their defaults. */
  withDefaults(state: PlainState): PlainState {
    for (const name of this.fieldNames) {
      if (name in state) continue;
      const value = defaultOf(this.fields[name] as AnyField);
      // The runtime extends append lists in place: never hand it a default someone else holds.
      state[name] = this.appendFields.has(name) && Array.isArray(value) ? [...value] : value;
    }
    return state;
  }

  /**
   * Brings a state stored at `storedVersion` to the current version through the
   * upcasters, then fills defaults. The stored rows are never touched.
   */
  upcast(state: PlainState, storedVersion: number, place?: ErrorPlace): PlainState {
    this.checkReadable(storedVersion, place);
    let current = state;
    for (let v = storedVersion; v < this.version; v++) current = (this.upcasters[v] as (s: PlainState) => PlainState)(current);
    return this.withDefaults(current);
  }

  /** Throws SchemaTooOldError / SchemaFromFutureError when `storedVersion` cannot be read. */
  checkReadable(storedVersion: number, place?: ErrorPlace): void {
    if (storedVersion > this.version) throw new SchemaFromFutureError(storedVersion, this.version, place);
    if (storedVersion < this.oldestReadableVersion) {
      throw new SchemaTooOldError(storedVersion, this.oldestReadableVersion, this.version, place);
    }
  }

  /** The state a node or a caller sees: stored fields plus derived ones, frozen at the top level. */
  view(base: PlainState): this['$state'] {
    const view: PlainState = { ...base };
    for (const [name, fn] of Object.entries(this.derived) as [string, (s: PlainState) => unknown][]) view[name] = fn(base);
    return Object.freeze(view) as this['$state'];
  }

  /** The values the runtime sets at a commit: every runtime field that has a `compute`. */
  runtimeValues(info: RuntimeInfo): [string, unknown][] {
    const values: [string, unknown][] = [];
    for (const name of this.fieldNames) {
      const field = this.fields[name] as AnyField;
      if (field.role === 'runtime' && (field as RuntimeField<unknown>).compute) values.push([name, (field as RuntimeField<unknown>).compute!(info)]);
    }
    return values;
  }

  /** Validates a value against a field's schema; returns the schema's output. */
  async validate(name: string, value: unknown, place?: ErrorPlace): Promise<unknown> {
    const schema = (this.fields[name] as AnyField).schema as StandardSchemaV1;
    let result = schema['~standard'].validate(value);
    if (result instanceof Promise) result = await result;
    if (result.issues) {
      throw new StateValidationError(
        name,
        result.issues.map((issue) => ({
          message: issue.message,
          path: (issue.path ?? []).map((p) => (typeof p === 'object' ? (p.key as string | number) : (p as string | number))),
        })),
        place,
      );
    }
    return result.value;
  }
}

/** Declares a state schema. See {@link StateSchema}. */
export function defineState<F extends Fields, D extends Record<string, unknown> = Record<never, never>>(
  definition: StateDefinition<F, D>,
): StateSchema<F, D> {
  return new StateSchema(definition);
}

/** The full state type (stored + derived fields) of a schema. */
export type StateOf<S extends StateSchema> = S['$state'];
/** What a node may return: model fields only (runtime and derived fields are `never`). */
export type UpdateOf<S extends StateSchema> = S['$update'];
