/**
 * @module runtime/merge
 * Folding node writes into a change set through the reducers, in a deterministic
 * order, with the checks that keep state honest: unknown, runtime and derived
 * fields are rejected, every written value passes its schema, two writes to one
 * `replace` field in a step are a conflict (or, under `lastWins`, kept and
 * logged), and no field may grow past the size limit. Pure: it reads the state
 * and returns what changes, encoded once; the cursor applies it (runtime/cursor),
 * and a rejected merge leaves nothing behind.
 */
import { MAX_VALUE_DEPTH, RawJson, encode as encodeValue, utf8Length } from '../codec/tagged-json.js';
import {
  DerivedFieldWriteError,
  InvalidUpdateError,
  RuntimeFieldWriteError,
  StateConflictError,
  StateTooLargeError,
  StateValidationError,
  UnencodableValueError,
  UnknownFieldError,
  ValueTooDeepError,
  type ErrorPlace,
} from '../errors.js';
import { isPlainObject } from '../internal/plain-object.js';
import type { ModelField } from '../state/fields.js';
import type { StateSchema } from '../state/schema.js';
import type { ConflictRecord } from './position.js';

/** One writer's writes, already in merge order. */
export interface Writer {
  /** Who wrote: a node name, `input`, `fork`. */
  name: string;
  writes: Record<string, unknown> | undefined | void;
}

/** A field's change in a step, already encoded. */
export type EncodedChange =
  | { kind: 'set'; text: string }
  /** `reset`: the items replace the whole list (a thread's first position, a rebase, a fork patch). */
  | { kind: 'append'; items: string[]; reset?: boolean };

/** What a set of writes changes, encoded once. Nothing in it aliases the state it was merged onto. */
export interface MergeResult {
  /** Every written field's change, encoded: a `set` value's text, or the texts of the items appended. */
  changes: Map<string, EncodedChange>;
  /** The new value of each `set` field (validated). */
  values: Map<string, unknown>;
  /** The items appended to each `append` field (validated), in merge order. */
  appended: Map<string, unknown[]>;
  conflicts: ConflictRecord[];
}

/** A merge that changes nothing. */
export function noChanges(): MergeResult {
  return { changes: new Map(), values: new Map(), appended: new Map(), conflicts: [] };
}

/**
 * `state` with `merged` applied, as a new object whose lists are new arrays: for
 * callers that keep both states (replay, a shared child's seed). A run's cursor
 * applies a merge to the state it owns instead, without copying its lists.
 */
export function applyMerge(state: Readonly<Record<string, unknown>>, merged: MergeResult): Record<string, unknown> {
  const next = { ...state };
  for (const [name, value] of merged.values) next[name] = value;
  for (const [name, items] of merged.appended) next[name] = [...((state[name] as unknown[] | undefined) ?? []), ...items];
  return next;
}

/**
 * How deeply a replaced field's value may nest: it is stored inside its position's
 * record (`{ changes: { <field>: { set: <value> } } }`), and the whole record must stay
 * within MAX_VALUE_DEPTH. Appended items are stored as they are, and may use it all.
 */
export const MAX_SET_VALUE_DEPTH = MAX_VALUE_DEPTH - 3;

/**
 * Encodes a written value; an unencodable or too deep one is rejected naming the
 * path, the thread and the position, before anything is stored.
 */
function encodeWrite(value: unknown, path: string, place: ErrorPlace, maxDepth = MAX_VALUE_DEPTH): string {
  let text: string;
  try {
    text = encodeValue(value, path);
  } catch (error) {
    if (UnencodableValueError.is(error)) throw new UnencodableValueError(error.path, error.reason, place);
    if (ValueTooDeepError.is(error)) throw new ValueTooDeepError(error.path, error.limit, { stackExhausted: error.cause !== undefined, cause: error.cause, place });
    throw error;
  }
  // A text shorter than twice the limit cannot nest that deep: only long ones are scanned.
  if (maxDepth < MAX_VALUE_DEPTH && text.length > 2 * maxDepth && new RawJson(text).depth > maxDepth) throw new ValueTooDeepError(path, maxDepth, { place });
  return text;
}

/**
 * Merges `writers` (in order) onto `state` and returns the change set. Throws a typed
 * error on the first bad write; `state` is never touched.
 */
export async function mergeWrites(
  schema: StateSchema,
  state: Readonly<Record<string, unknown>>,
  writers: readonly Writer[],
  place: ErrorPlace,
): Promise<MergeResult> {
  const merged = noChanges();
  const { changes, values, appended, conflicts } = merged;
  const replacedBy = new Map<string, string[]>();

  for (const writer of writers) {
    if (writer.writes === undefined || writer.writes === null) continue;
    // A Map, an array or a class instance has no own fields to write (or the wrong ones): refused, not read as nothing.
    if (!isPlainObject(writer.writes)) throw new InvalidUpdateError(writer.name, describeReturn(writer.writes), place);
    for (const [name, value] of Object.entries(writer.writes)) {
      const field = schema.field(name);
      if (!field) {
        if (schema.isDerived(name)) throw new DerivedFieldWriteError(name, writer.name, place);
        throw new UnknownFieldError(name, writer.name, place);
      }
      if (field.role === 'runtime') throw new RuntimeFieldWriteError(name, writer.name, place);
      const model = field as ModelField<unknown, unknown>;

      if (model.reduce === 'append') {
        if (!Array.isArray(value)) {
          throw new StateValidationError(name, [{ message: 'an append field takes an array of items to append', path: [] }], place);
        }
        const items = (await schema.validate(name, value, place)) as unknown[];
        const change = changes.get(name);
        const texts = change?.kind === 'append' ? change.items : [];
        for (let i = 0; i < items.length; i++) texts.push(encodeWrite(items[i], `${name}[+${i}]`, place));
        checkSize(schema, name, texts, place);
        changes.set(name, { kind: 'append', items: texts });
        const pending = appended.get(name);
        if (pending) pending.push(...items);
        else appended.set(name, [...items]);
        continue;
      }

      let next: unknown;
      if (model.reduce === 'replace') {
        next = await schema.validate(name, value, place);
        const earlier = replacedBy.get(name);
        if (earlier) {
          const policy = model.onConflict ?? schema.onConflict;
          if (policy === 'reject') throw new StateConflictError(name, [...earlier, writer.name], place);
          conflicts.push({ field: name, writers: [...earlier, writer.name], kept: writer.name });
          earlier.push(writer.name);
        } else replacedBy.set(name, [writer.name]);
      } else {
        // A custom reducer's update has its own type: validate what it produces. A second
        // writer in the step reduces onto the first one's result.
        const current = values.has(name) ? values.get(name) : state[name];
        next = await schema.validate(name, model.reduce(current, value), place);
      }
      values.set(name, next);
      const text = encodeWrite(next, name, place, MAX_SET_VALUE_DEPTH);
      checkSize(schema, name, [text], place);
      changes.set(name, { kind: 'set', text });
    }
  }
  return merged;
}

/**
 * What a writer returned instead of an update, for the message: `a Map (2 entries)`,
 * `an array (3 items)`, `a string (12 characters)`, `an instance of Point`. Never the
 * contents: a returned string may be a model's answer, and messages are shown.
 */
function describeReturn(value: unknown): string {
  const count = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;
  if (Array.isArray(value)) return `an array (${count(value.length, 'item', 'items')})`;
  if (value instanceof Map) return `a Map (${count(value.size, 'entry', 'entries')})`;
  if (value instanceof Set) return `a Set (${count(value.size, 'member', 'members')})`;
  if (typeof value === 'string') return `a string (${count(value.length, 'character', 'characters')})`;
  if (typeof value === 'number' || typeof value === 'bigint') return `a ${typeof value}`;
  if (typeof value === 'boolean') return `the boolean ${String(value)}`;
  if (typeof value === 'object') {
    const name = (Object.getPrototypeOf(value) as { constructor?: { name?: unknown } } | null)?.constructor?.name;
    return typeof name === 'string' && name !== '' ? `an instance of ${name}` : 'an object that is not a plain object';
  }
  return `a ${typeof value}`;
}

function checkSize(schema: StateSchema, name: string, texts: string[], place: ErrorPlace): void {
  let bytes = 0;
  for (const text of texts) bytes += text.length;
  // Cheap bound first: UTF-8 needs at most 3 bytes per UTF-16 unit.
  if (bytes * 3 <= schema.maxFieldBytes) return;
  bytes = texts.reduce((sum, t) => sum + utf8Length(t), 0);
  if (bytes > schema.maxFieldBytes) throw new StateTooLargeError(name, bytes, schema.maxFieldBytes, place);
}
