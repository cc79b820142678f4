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
import { sha256Hex } from '../codec/hash.js';
import { encode } from '../codec/tagged-json.js';
import {
  SchemaDefinitionError,
  SchemaDriftError,
  SchemaFromFutureError,
  SchemaTooOldError,
  StateValidationError,
  UpcastError,
  type ErrorPlace,
  type ValidationIssue,
} from '../errors.js';
import { MAX_FIELD_BYTES } from '../defaults.js';
import { checkStateDefinition } from './definition-checks.js';
import { defaultOf, type AnyField, type ConflictPolicy, type ModelField, type RuntimeField, type RuntimeInfo, type ValueOf, type WriteOf } from './fields.js';

/** Default limit on one field's encoded size, bytes: big payloads belong in artifacts. */
export const DEFAULT_MAX_FIELD_BYTES = MAX_FIELD_BYTES;

type Fields = Record<string, AnyField>;
type PlainState = Record<string, unknown>;

/** The state of the stored fields (model and runtime). */
export type BaseState<F extends Fields> = { [K in keyof F]: ValueOf<F[K]> };

/** Derived field functions, typed by the stored fields; `D` maps each name to its value type. */
type DerivedFns<F extends Fields, D extends Record<string, unknown>> = { [K in keyof D]: (state: BaseState<F>) => D[K] };

type ModelKeys<F extends Fields> = { [K in keyof F]: F[K] extends { role: 'model' } ? K : never }[keyof F];

/** What `defineState` takes: the fields, derived values, schema version and upcasters. */
export interface StateDefinition<F extends Fields, D extends Record<string, unknown>> {
  /** Schema version stored with every checkpoint. Default 1. */
  version?: number;
  /** The same as `version` (the name each checkpoint stores it under): give one of the two. */
  schemaVersion?: number;
  /** Oldest stored version still readable; older ones raise SchemaTooOldError. Default: as far back as upcasters reach. */
  oldestReadableVersion?: number;
  fields: F;
  /** Functions of the stored fields, recomputed on every read and never stored. */
  derived?: DerivedFns<F, D>;
  /**
   * `upcast[n]` turns a version-n state into a version-(n+1) state, at read time. It
   * sees the fields as stored: a field left at its default never was, so renaming it
   * hands on undefined, and a field an upcaster leaves undefined that the checkpoint
   * did not hold reads as its current default.
   */
  upcast?: Record<number, (state: PlainState) => PlainState>;
  /** What two writes to one `replace` field in one step do. Default 'reject'. */
  onConflict?: ConflictPolicy;
  /** Limit on one field's encoded size (bytes). Default 256 KiB. */
  maxFieldBytes?: number;
}

/**
 * A declared state schema: its fields (model-writable, runtime-owned), derived values,
 * schema version and upcasters. Create it with {@link defineState}; a graph, its
 * checkpoints and its reads all go through it.
 *
 * @example
 * ```ts
 * const State = defineState({ fields: { n: field.model(z.number(), { default: 0 }) } });
 * State.version; // 1
 * ```
 */
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
  /** Fields declared with `redact: true`, in declaration order: shown as `[redacted]` wherever stored data is shown. */
  readonly redactedFields: readonly string[];
  private readonly upcasters: Record<number, (state: PlainState) => PlainState>;
  private readonly table: Readonly<Record<string, string>>;

  /**
   * Phantom members that carry the state's types. The state is read-only at the top
   * level, as {@link StateSchema.view} freezes it: an assignment to a field of the
   * state a node is given throws at run time, so it is a type error too.
   */
  declare readonly $state: Readonly<BaseState<F>> & { readonly [K in keyof D]: D[K] };
  declare readonly $update: { [K in ModelKeys<F>]?: WriteOf<F[K]> } & { [K in Exclude<keyof F, ModelKeys<F>> | keyof D]?: never };

  constructor(definition: StateDefinition<F, D>) {
    checkStateDefinition(definition);
    this.version = definition.version ?? definition.schemaVersion ?? 1;
    this.fields = definition.fields;
    this.derived = (definition.derived ?? {}) as { [K in keyof D]: (state: never) => D[K] };
    this.onConflict = definition.onConflict ?? 'reject';
    this.maxFieldBytes = definition.maxFieldBytes ?? DEFAULT_MAX_FIELD_BYTES;
    this.upcasters = definition.upcast ?? {};
    this.fieldNames = Object.keys(definition.fields);
    this.appendFields = new Set(this.fieldNames.filter((n) => (definition.fields[n] as AnyField).role === 'model' && (definition.fields[n] as ModelField<unknown, unknown>).reduce === 'append'));

    this.redactedFields = this.fieldNames.filter((n) => (definition.fields[n] as AnyField).redact === true);

    if (!Number.isInteger(this.version) || this.version < 1) {
      throw new SchemaDefinitionError(`state version must be a positive integer, got ${definition.version ?? definition.schemaVersion}.`);
    }
    for (const name of Object.keys(this.derived)) {
      if (Object.hasOwn(definition.fields, name)) throw new SchemaDefinitionError(`"${name}" is declared both as a field and as derived.`);
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
    // Computed once, here: the first commit and every load of a thread compare with it.
    this.table = this.computeFieldTable();
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

  /**
   * Fills fields missing from a stored (possibly upcast) state with their defaults.
   * With `stored` (the fields the checkpoint held before upcasting), a field an
   * upcaster left `undefined` that was not among them is filled too.
   */
  withDefaults(state: PlainState, stored?: ReadonlySet<string>): PlainState {
    for (const name of this.fieldNames) {
      // Own properties only: a field named "constructor" or "toString" is not "present" through Object.prototype.
      if (Object.hasOwn(state, name) && !(stored && state[name] === undefined && !stored.has(name))) continue;
      const value = this.defaultValue(name);
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
    if (storedVersion === this.version) return this.withDefaults(state);
    // A field left at its default is never stored, so an upcaster that renames it
    // (`s.to = s.from; delete s.from`) hands on undefined: taken before the upcasters
    // run (they may change the object in place), this says which undefined values were
    // stored ones, and the others read as the field's current default.
    const stored = new Set(Object.keys(state));
    let current = state;
    for (let v = storedVersion; v < this.version; v++) {
      let next: unknown;
      try {
        next = (this.upcasters[v] as (s: PlainState) => PlainState)(current);
      } catch (err) {
        throw new UpcastError(v, `threw: ${err instanceof Error ? err.message : String(err)}.`, { ...(place ? { place } : {}), cause: err });
      }
      if (typeof next !== 'object' || next === null || Array.isArray(next) || next instanceof Promise) {
        throw new UpcastError(v, `returned ${next instanceof Promise ? 'a Promise (upcasters run synchronously)' : Array.isArray(next) ? 'an array' : String(next)}, not a state object.`, place ? { place } : {});
      }
      current = next as PlainState;
    }
    return this.withDefaults(current, stored);
  }

  /**
   * Checks a state {@link upcast} brought from `storedVersion` against this version's
   * field schemas: a field the upcasters wrote a value of the wrong type to, or whose
   * type changed without an upcaster converting it, is UpcastError naming the field,
   * not data of the wrong shape handed to nodes. Checked: every field the upcasters
   * gave a new value, and every field whose definition (`storedTable`, the field table
   * stored at that version) differs or is unknown. A value the upcasters left as it
   * was, under the same definition, passed this schema when it was written.
   */
  async checkUpcast(stored: Readonly<PlainState>, upcast: Readonly<PlainState>, storedVersion: number, storedTable: Readonly<Record<string, string>> | undefined, place?: ErrorPlace): Promise<void> {
    if (storedVersion >= this.version) return;
    const table = this.fieldTable();
    for (const name of this.fieldNames) {
      if (!Object.hasOwn(upcast, name)) continue;
      const sameDefinition = storedTable !== undefined && Object.hasOwn(storedTable, name) && storedTable[name] === table[name];
      if (sameDefinition && Object.hasOwn(stored, name) && stored[name] === upcast[name]) continue;
      const checked = await this.check(name, upcast[name]);
      if (checked.issues) {
        throw new UpcastError(storedVersion, `field "${name}" failed validation: ${describeIssues(checked.issues)}.`, {
          ...(place ? { place } : {}),
          refused: { field: name, toVersion: this.version, issues: checked.issues },
        });
      }
    }
  }

  /**
   * What each stored field is at this version: `<role> <reducer> <schema fingerprint>`
   * by name (`model append 3f9c0b1d2e4a5c6f`). The fingerprint is a digest of the
   * field schema's JSON Schema (Standard JSON Schema, which zod 4, valibot and arktype
   * provide), without annotations (descriptions, titles, defaults, examples); `?` when
   * the validator cannot describe itself. Recorded with the positions and snapshots
   * that start a version, and compared on every load ({@link checkDrift}).
   */
  fieldTable(): Record<string, string> {
    return this.table;
  }

  private computeFieldTable(): Record<string, string> {
    const table: Record<string, string> = {};
    for (const name of this.fieldNames) {
      const field = this.fields[name] as AnyField;
      const reducer = field.role === 'runtime' ? '-' : typeof field.reduce === 'function' ? 'custom' : field.reduce;
      table[name] = `${field.role} ${reducer} ${schemaFingerprint(field.schema as StandardSchemaV1)}`;
    }
    return Object.freeze(table);
  }

  /**
   * Throws {@link SchemaDriftError} when a position stored at this schema version says
   * a field was something else (role, reducer, or schema) than this code declares.
   * Fields only one side has are fine: new fields read as their defaults, dropped ones
   * are ignored. A `?` fingerprint on either side compares role and reducer only.
   */
  checkDrift(stored: Record<string, string>, place?: ErrorPlace): void {
    const current = this.fieldTable();
    for (const [name, then] of Object.entries(stored)) {
      const now = Object.hasOwn(current, name) ? current[name]! : undefined;
      if (now === undefined || now === then) continue;
      const [thenRole, thenReducer, thenPrint] = then.split(' ');
      const [nowRole, nowReducer, nowPrint] = now.split(' ');
      let detail: string | undefined;
      if (thenRole !== nowRole) detail = `it was a ${thenRole} field when this position was written and is a ${nowRole} field now`;
      else if (thenReducer !== nowReducer) detail = `its reducer was "${thenReducer}" when this position was written and is "${nowReducer}" now`;
      else if (thenPrint !== '?' && nowPrint !== '?' && thenPrint !== nowPrint) detail = `its schema changed (fingerprint ${thenPrint} when this position was written, ${nowPrint} now)`;
      if (detail) throw new SchemaDriftError(name, this.version, detail, place);
    }
  }

  /** Throws SchemaTooOldError / SchemaFromFutureError when `storedVersion` cannot be read. */
  checkReadable(storedVersion: number, place?: ErrorPlace): void {
    if (storedVersion > this.version) throw new SchemaFromFutureError(storedVersion, this.version, place);
    if (storedVersion < this.oldestReadableVersion) {
      throw new SchemaTooOldError(storedVersion, this.oldestReadableVersion, this.version, place);
    }
  }

  /**
   * The state a node or a caller sees: the fields this schema declares plus the derived
   * ones, frozen at the top level only. A stored field the schema no longer declares
   * (dropped at the same version, or handed on by an upcaster) is not in it: the types
   * say it is not there; the positions that stored it keep it. Its values are the run's
   * own, not copies (copying an append list at every step would make a run quadratic):
   * read them, and return changes as writes. A run refuses code that changed an append
   * list's length in place (StateMutationError); a change inside an item or a value goes
   * unseen, and is never stored.
   */
  view(base: PlainState): this['$state'] {
    const view: PlainState = {};
    for (const name of this.fieldNames) if (Object.hasOwn(base, name)) view[name] = base[name];
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

  /** `true` once every default passed synchronously; the promise while (or after) some are checked asynchronously. */
  private defaultsChecked: Promise<void> | true | undefined;

  /** Each checked literal default as its schema gave it back (a `.trim()` schema's default trimmed), by field. */
  private readonly defaultOutputs = new Map<string, unknown>();

  /**
   * A fresh copy of field `name`'s default: the schema's output for a literal default
   * once {@link checkDefaults} has checked it, so that a default reads as a node's write
   * of the same value would be stored; the literal as given before, and a function's result.
   */
  private defaultValue(name: string): unknown {
    if (!this.defaultOutputs.has(name)) return defaultOf(this.fields[name] as AnyField);
    const value = this.defaultOutputs.get(name);
    // A default given as a literal object or array must not be shared between threads.
    return typeof value === 'object' && value !== null ? structuredClone(value) : value;
  }

  /**
   * Checks each field's literal default against the field's own schema, once per schema:
   * a default the schema refuses (`field.model(z.number(), { default: 'x' })`) would be
   * stored into every new thread, since defaults are not writes and are not validated
   * on the way in. It is checked as a node's write of the same value would be. Throws
   * SchemaDefinitionError naming the field; returns a promise only
   * when some schema validates asynchronously (a Standard Schema may), for the first run
   * to await. A default given as a function is not called here: it may read the clock
   * or make an id, and runs when a state is made. A checked default reads from then on as
   * the schema's output (trimmed, coerced, filled in), as a write of it would be stored.
   */
  checkDefaults(): Promise<void> | undefined {
    if (this.defaultsChecked === true) return undefined;
    if (this.defaultsChecked) return this.defaultsChecked;
    const pending: Promise<void>[] = [];
    for (const name of this.fieldNames) {
      const f = this.fields[name] as AnyField;
      if (f.default === undefined || typeof f.default === 'function') continue;
      const result = (f.schema as StandardSchemaV1)['~standard'].validate(f.default);
      const keep = (settled: StandardSchemaV1.Result<unknown>) => {
        refuseDefault(name, settled);
        this.defaultOutputs.set(name, (settled as StandardSchemaV1.SuccessResult<unknown>).value);
      };
      if (result instanceof Promise) pending.push(result.then(keep));
      else keep(result);
    }
    if (!pending.length) {
      this.defaultsChecked = true;
      return undefined;
    }
    this.defaultsChecked = Promise.all(pending).then(() => undefined);
    // Awaited by the first run; a schema never run must not raise an unhandled rejection.
    this.defaultsChecked.catch(() => undefined);
    return this.defaultsChecked;
  }

  /** Validates a value against a field's schema; returns the schema's output. */
  async validate(name: string, value: unknown, place?: ErrorPlace): Promise<unknown> {
    const checked = await this.check(name, value);
    if (checked.issues) throw new StateValidationError(name, checked.issues, place);
    return checked.value;
  }

  /** What a field's schema says of a value: its output, or its issues. */
  private async check(name: string, value: unknown): Promise<{ value: unknown; issues?: undefined } | { issues: ValidationIssue[] }> {
    const schema = (this.fields[name] as AnyField).schema as StandardSchemaV1;
    let result = schema['~standard'].validate(value);
    if (result instanceof Promise) result = await result;
    if (!result.issues) return { value: result.value };
    return {
      issues: result.issues.map((issue) => ({
        message: issue.message,
        path: (issue.path ?? []).map((p) => (typeof p === 'object' ? (p.key as string | number) : (p as string | number))),
      })),
    };
  }
}

/** Issues as StateValidationError words them: `path: message; …`. */
function describeIssues(issues: ValidationIssue[]): string {
  return issues.map((i) => (i.path.length ? `${i.path.join('.')}: ` : '') + i.message).join('; ');
}

/** JSON Schema keywords that describe a value without constraining it: not part of a fingerprint. */
function refuseDefault(name: string, result: StandardSchemaV1.Result<unknown>): void {
  if (!result.issues) return;
  const detail = result.issues.map((i) => (i.path?.length ? `${i.path.map((p) => (typeof p === 'object' ? String(p.key) : String(p))).join('.')}: ` : '') + i.message).join('; ');
  throw new SchemaDefinitionError(`the default of field "${name}" fails the field's own schema: ${detail}. Give a default the schema accepts (or none).`);
}

const ANNOTATIONS = new Set(['$schema', '$id', '$comment', 'title', 'description', 'default', 'examples', 'deprecated', 'readOnly', 'writeOnly']);

function withoutAnnotations(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(withoutAnnotations);
  if (typeof value !== 'object' || value === null) return value;
  const out: Record<string, unknown> = {};
  for (const [key, inner] of Object.entries(value)) if (!ANNOTATIONS.has(key)) out[key] = withoutAnnotations(inner);
  return out;
}

/**
 * A JSON Schema (draft 2020-12) of what a Standard Schema validator accepts (`input`)
 * or gives (`output`), when the validator can describe itself (the Standard JSON
 * Schema interface, `~standard.jsonSchema`: zod 4, among others); undefined when it
 * cannot. Types JSON Schema cannot express (Date, BigInt...) describe as "anything"
 * rather than failing.
 *
 * @example
 * ```ts
 * describeSchema(z.object({ ok: z.boolean() }), 'input');
 * // { $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'], additionalProperties: false }
 * ```
 */
export function describeSchema(schema: StandardSchemaV1, side: 'input' | 'output'): Record<string, unknown> | undefined {
  const jsonSchema = (schema['~standard'] as { jsonSchema?: Partial<Record<'input' | 'output', (options: unknown) => unknown>> }).jsonSchema;
  const describe = jsonSchema?.[side];
  if (typeof describe !== 'function') return undefined;
  try {
    const described = describe({ target: 'draft-2020-12', libraryOptions: { unrepresentable: 'any' } });
    return typeof described === 'object' && described !== null && !Array.isArray(described) ? (described as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** 16 hex characters of the sha256 of a validator's JSON Schema (output side), or `?`. */
function schemaFingerprint(schema: StandardSchemaV1): string {
  const described = describeSchema(schema, 'output');
  return described === undefined ? '?' : sha256Hex(encode(withoutAnnotations(described))).slice(0, 16);
}

/**
 * Declares a state schema. See {@link StateSchema}.
 *
 * @example
 * ```ts
 * const State = defineState({
 *   version: 2,
 *   fields: {
 *     topic: field.model(z.string(), { default: '' }),
 *     notes: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
 *   },
 *   derived: { noteCount: (s) => s.notes.length },
 *   upcast: { 1: (old) => ({ ...old, notes: old.notes ?? [] }) },
 * });
 * ```
 */
export function defineState<F extends Fields, D extends Record<string, unknown> = Record<never, never>>(
  definition: StateDefinition<F, D>,
): StateSchema<F, D> {
  return new StateSchema(definition);
}

/** The full state type (stored + derived fields) of a schema. */
export type StateOf<S extends StateSchema> = S['$state'];
/** What a node may return: model fields only (runtime and derived fields are `never`). */
export type UpdateOf<S extends StateSchema> = S['$update'];
