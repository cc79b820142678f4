/**
 * @module codec/tagged-json
 * The one encoding of every value cairn stores: JSON with tagged types, written
 * canonically (object keys sorted) so that the same value always produces the
 * same bytes, which is what the hash chain needs.
 *
 * Tagged values are `{"$t": tag, "v": payload}`: `Date`, `BigInt`, `Bytes`
 * (Uint8Array), `Buffer`, `Map`, `Set`, `Num` (NaN, ±Infinity, -0), `Undef`,
 * `Hole` (an array hole) and `NullProto` (an object without a prototype). A
 * plain object that itself has a `$t` key is wrapped as `{"$t":"Obj","v":{...}}`
 * so that it can never be mistaken for a tag. Decoding never executes code: it
 * only builds the types listed here.
 *
 * Like JSON.stringify, it stores an object's own enumerable string-keyed properties
 * (a getter's value included) and an array's elements: symbol keys, non-enumerable
 * properties and an array's other properties are left out. A subclass of Array, Date,
 * Map, Set or Uint8Array is stored as its built-in (a Buffer excepted: it reads back
 * as a Buffer); any other class instance is refused.
 *
 * No text nests deeper than {@link MAX_VALUE_DEPTH} objects and arrays: the encoder
 * refuses deeper values, the decoder refuses deeper text, and nothing on the read
 * path recurses per level, so whatever was written reads back in any process.
 *
 * @example
 * ```ts
 * const text = encode({ at: new Date(0), n: 10n });   // '{"at":{"$t":"Date","v":"1970-01-01T00:00:00.000Z"},"n":{"$t":"BigInt","v":"10"}}'
 * decode(text);                                         // { at: Date(0), n: 10n }
 * ```
 */
import { CorruptRecordError, UnencodableValueError, ValueTooDeepError } from '../errors.js';

const TAG = '$t';
const hasOwn = Object.prototype.hasOwnProperty;

/**
 * How deeply a stored text may nest objects and arrays (`[]` is 1, `{"a":[1]}` is 2).
 * Tagged values count as what they are stored as: a Date, BigInt, byte array or
 * special number is one object (`{"$t":...}`), an array hole one, a Set two levels
 * (tag, list), a Map three (tag, entries, pair), an object with a `$t` key or without
 * a prototype two. The encoder refuses a deeper value with {@link ValueTooDeepError};
 * the decoder refuses deeper text as corrupt. 256 is far beyond real data; encoding
 * that deep takes about a seventh of Node's default stack in a fresh process, so a
 * caller may already have used most of it (and code that walks a decoded value
 * recursively is as safe); and it stays below SQLite's JSON limit of 1,000 levels,
 * beyond which its filters fail on the row.
 *
 * @example
 * ```ts
 * import { MAX_VALUE_DEPTH } from 'cairn';
 * let tree: unknown = 'leaf';
 * for (let i = 0; i < MAX_VALUE_DEPTH; i++) tree = [tree];   // 256 nested arrays: stored
 * encode([tree]);                                            // 257: ValueTooDeepError at $[0][0]...
 * ```
 */
export const MAX_VALUE_DEPTH = 256;

/**
 * Text that is already canonical tagged JSON, spliced into an encoding verbatim.
 * Internal: lets the runtime encode a value once and reuse the text (not exported
 * from the package entry).
 */
export class RawJson {
  #depth: number | undefined;
  constructor(readonly text: string) {}

  /** How deeply the text nests (see {@link MAX_VALUE_DEPTH}), measured on first use. */
  get depth(): number {
    return (this.#depth ??= textDepth(this.text));
  }
}

/**
 * Encodes `value` as canonical tagged JSON. Throws {@link UnencodableValueError} naming
 * the path, or {@link ValueTooDeepError} when the value nests deeper than {@link MAX_VALUE_DEPTH}
 * (or the call stack runs out first).
 *
 * @example
 * ```ts
 * encode({ b: 1n, a: new Date(0) }); // '{"a":{"$t":"Date","v":"1970-01-01T00:00:00.000Z"},"b":{"$t":"BigInt","v":"1"}}'
 * ```
 */
export function encode(value: unknown, path = '$'): string {
  const cursor: Cursor = { root: path, parts: [] };
  try {
    return write(value, cursor, new Set(), 0);
  } catch (error) {
    // The parts still say where the throw happened: a failing child is never popped.
    if (!(error instanceof RangeError)) throw error;
    if (/call stack/i.test(error.message)) throw new ValueTooDeepError(pathOf(cursor), MAX_VALUE_DEPTH, { stackExhausted: true, cause: error });
    throw new UnencodableValueError(pathOf(cursor), `its encoding is longer than the longest string JavaScript can hold (${error.message})`);
  }
}

/** Nesting depth of canonical JSON text; strings are skipped whole, so it never counts a bracket inside one. */
function textDepth(text: string): number {
  let depth = 0;
  let max = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // The closing quote is the next one not escaped (preceded by an even number of backslashes).
      let end = text.indexOf('"', i + 1);
      while (end > 0 && text.charCodeAt(end - 1) === 0x5c) {
        let start = end - 1;
        while (text.charCodeAt(start - 1) === 0x5c) start--;
        if ((end - start) % 2 === 0) break;
        end = text.indexOf('"', end + 1);
      }
      if (end < 0) break;
      i = end;
    } else if (c === 0x7b || c === 0x5b) {
      if (++depth > max) max = depth;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return max;
}

/**
 * Where the encoder is, kept as a stack of keys and indexes: the path text is built
 * only for an error message, never on the way (encoding runs at every step).
 */
interface Cursor {
  root: string;
  parts: (string | number)[];
}

function pathOf(cursor: Cursor): string {
  return cursor.root + cursor.parts.map((part) => (typeof part === 'number' ? `[${part}]` : part.startsWith('<') ? part : `.${part}`)).join('');
}

function child(value: unknown, part: string | number, cursor: Cursor, stack: Set<object>, depth: number): string {
  cursor.parts.push(part);
  const text = write(value, cursor, stack, depth);
  cursor.parts.pop();
  return text;
}

function tooDeep(cursor: Cursor, part?: string | number): ValueTooDeepError {
  if (part !== undefined) cursor.parts.push(part);
  return new ValueTooDeepError(pathOf(cursor), MAX_VALUE_DEPTH);
}

const HOLE = '{"$t":"Hole"}';

/** Writes `value`, which sits inside `depth` objects and arrays of the text. */
function write(value: unknown, cursor: Cursor, stack: Set<object>, depth: number): string {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (Number.isFinite(value) && !Object.is(value, -0)) return String(value);
      if (depth >= MAX_VALUE_DEPTH) throw tooDeep(cursor);
      return `{"$t":"Num","v":${JSON.stringify(Object.is(value, -0) ? '-0' : String(value))}}`;
    case 'bigint':
      if (depth >= MAX_VALUE_DEPTH) throw tooDeep(cursor);
      return `{"$t":"BigInt","v":"${value.toString()}"}`;
    case 'undefined':
      if (depth >= MAX_VALUE_DEPTH) throw tooDeep(cursor);
      return '{"$t":"Undef"}';
    case 'object':
      break;
    default:
      throw new UnencodableValueError(pathOf(cursor), `a ${typeof value} cannot be stored`);
  }
  if (value === null) return 'null';
  if (value instanceof RawJson) {
    // A text of length n nests at most n/2 deep: most spliced texts need no scan.
    if (depth + value.text.length / 2 > MAX_VALUE_DEPTH && depth + value.depth > MAX_VALUE_DEPTH) throw tooDeep(cursor);
    return value.text;
  }
  // Every value below is at least one object or array of the text.
  if (depth >= MAX_VALUE_DEPTH) throw tooDeep(cursor);
  if (stack.has(value)) throw new UnencodableValueError(pathOf(cursor), 'the value contains a cycle');
  stack.add(value);
  try {
    if (Array.isArray(value)) {
      let out = '[';
      for (let i = 0; i < value.length; i++) {
        if (i > 0) out += ',';
        const item: unknown = value[i];
        // Only an undefined element can be a hole: the common path pays nothing.
        if (item === undefined && !(i in value)) {
          if (depth + 1 >= MAX_VALUE_DEPTH) throw tooDeep(cursor, i);
          out += HOLE;
        } else out += child(item, i, cursor, stack, depth + 1);
      }
      return out + ']';
    }
    if (value instanceof Date) {
      const time = value.getTime();
      return `{"$t":"Date","v":${Number.isNaN(time) ? 'null' : JSON.stringify(value.toISOString())}}`;
    }
    if (value instanceof Uint8Array) {
      const base64 = Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64');
      return Buffer.isBuffer(value) ? `{"$t":"Buffer","v":"${base64}"}` : `{"$t":"Bytes","v":"${base64}"}`;
    }
    if (value instanceof Map) {
      return `{"$t":"Map","v":${child([...value.entries()], '<map>', cursor, stack, depth + 1)}}`;
    }
    if (value instanceof Set) {
      return `{"$t":"Set","v":${child([...value], '<set>', cursor, stack, depth + 1)}}`;
    }
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) {
      const name = (value as { constructor?: { name?: string } }).constructor?.name ?? 'unknown';
      throw new UnencodableValueError(pathOf(cursor), `an instance of class ${name} is not plain data`);
    }
    // Own enumerable string keys only, as JSON.stringify: symbol keys and non-enumerable properties are not stored.
    const keys = Object.keys(value).sort();
    // A null-prototype object, or one with a "$t" key of its own, is wrapped: its fields sit one level deeper.
    const wrapped = proto === null || keys.includes(TAG);
    if (wrapped && depth + 1 >= MAX_VALUE_DEPTH) throw tooDeep(cursor);
    const inner = wrapped ? depth + 2 : depth + 1;
    let out = '{';
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      if (i > 0) out += ',';
      // The key is pushed before the field is read: a getter that throws is reported at its own path.
      cursor.parts.push(key);
      out += JSON.stringify(key) + ':' + write((value as Record<string, unknown>)[key], cursor, stack, inner);
      cursor.parts.pop();
    }
    out += '}';
    if (!wrapped) return out;
    return proto === null ? `{"$t":"NullProto","v":${out}}` : `{"$t":"Obj","v":${out}}`;
  } finally {
    stack.delete(value);
  }
}

/**
 * Decodes canonical tagged JSON. Throws {@link CorruptRecordError} on text that is
 * not valid tagged JSON, and on tagged text that nests deeper than
 * {@link MAX_VALUE_DEPTH} (which cairn never writes); `where` names the record in that
 * message (a function is called only then: loads decode thousands of items). Nothing
 * here recurses per level (V8's JSON.parse does not either), so no depth of text can
 * overflow the stack: untagged text is returned as parsed, however deep.
 *
 * @example
 * ```ts
 * const value = decode<{ at: Date }>(position.body, () => `position ${position.seq}`);
 * ```
 */
export function decode<T = unknown>(text: string, where?: string | (() => string)): T {
  let parsed: unknown;
  const place = () => (typeof where === 'function' ? where() : where) ?? 'a stored value';
  try {
    parsed = JSON.parse(text);
  } catch (cause) {
    throw new CorruptRecordError(`${place()} is not valid JSON (${(cause as Error).message}).`, { cause });
  }
  if (typeof parsed !== 'object' || parsed === null) return parsed as T;
  // Fast path: most stored values carry no tags, and a substring scan is far cheaper
  // than walking a large decoded value (a long thread's load decodes thousands of
  // items). Untagged text needs nothing more: JSON.parse built it without recursion,
  // and nothing here walks it, so no depth of it can overflow the decoder.
  if (!text.includes('"$t"')) return parsed as T;
  // A tagged value is walked (without recursion, checking the depth on the way) to
  // look for tags outside strings, and walked again to revive them if there are any.
  if (!hasTags(parsed, place)) return parsed as T;
  return new Reviver(place).run(parsed) as T;
}

function tooDeepText(place: () => string): CorruptRecordError {
  return new CorruptRecordError(
    `${place()} nests deeper than ${MAX_VALUE_DEPTH} levels of objects and arrays (MAX_VALUE_DEPTH), which cairn never writes: it was damaged or forged.`,
  );
}

/**
 * True when a parsed value holds a tag (an object with a `$t` key); throws if it nests
 * deeper than the limit. Walks containers only, with an explicit stack, over own values.
 */
function hasTags(root: object, place: () => string): boolean {
  if (!Array.isArray(root) && TAG in root) return true;
  const pending: object[] = [root];
  const depths: number[] = [1];
  while (pending.length > 0) {
    const container = pending.pop() as Record<string, unknown>;
    const depth = depths.pop()!;
    if (Array.isArray(container)) {
      for (let i = 0; i < container.length; i++) {
        const value: unknown = container[i];
        if (typeof value !== 'object' || value === null) continue;
        if (depth >= MAX_VALUE_DEPTH) throw tooDeepText(place);
        if (!Array.isArray(value) && TAG in value) return true;
        pending.push(value);
        depths.push(depth + 1);
      }
      continue;
    }
    // for-in allocates nothing (a key array per object would make the young-generation
    // collector copy the whole freshly parsed value); own keys only, whatever a
    // polluted Object.prototype may hold.
    for (const key in container) {
      if (!hasOwn.call(container, key)) continue;
      const value = container[key];
      if (typeof value !== 'object' || value === null) continue;
      if (depth >= MAX_VALUE_DEPTH) throw tooDeepText(place);
      if (!Array.isArray(value) && TAG in value) return true;
      pending.push(value);
      depths.push(depth + 1);
    }
  }
  return false;
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const INTEGER = /^-?\d+$/;
const SPECIAL_NUMBERS = new Set(['NaN', 'Infinity', '-Infinity', '-0']);

/**
 * True for a JSON object: an object, not an array, of what JSON.parse returned. Not
 * internal/plain-object's isPlainObject on purpose: the decoder only ever sees
 * JSON.parse's output, whose objects all have Object.prototype, so there is no
 * prototype to check (the encoder, which sees any value, checks it itself).
 */
function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

type Slot = Record<string | number, unknown>;

/** A Map or Set to build from its payload once every member in it is revived. */
class Collection {
  constructor(
    readonly parent: Slot,
    readonly key: string | number,
    readonly tag: 'Map' | 'Set',
    readonly payload: unknown[],
  ) {}
}

/**
 * Revives the tags of a parsed value in place, depth first with an explicit stack
 * (never recursion: a deep value cannot overflow it), checking the depth on the way.
 * Each tag's payload is checked before anything is built from it, so a damaged or
 * forged record is a CorruptRecordError, never a TypeError from a constructor, and no
 * payload reaches a constructor that would call its toString or valueOf.
 */
class Reviver {
  /** Containers still to visit, with the depth each sits at; a Collection is built when popped, after its members. */
  private readonly work: object[] = [];
  private readonly depths: number[] = [];
  /** Holds the root, so that a root tag is revived in its slot like any other. */
  private readonly holder: unknown[] = [];

  constructor(private readonly place: () => string) {}

  run(root: unknown): unknown {
    const { work, depths, holder } = this;
    holder.push(root);
    work.push(holder);
    depths.push(0);
    while (work.length > 0) {
      const container = work.pop()!;
      const depth = depths.pop()!;
      if (container instanceof Collection) {
        container.parent[container.key] = container.tag === 'Map' ? new Map(container.payload as [unknown, unknown][]) : new Set(container.payload);
      } else if (Array.isArray(container)) {
        const list = container as unknown[];
        for (let i = 0; i < list.length; i++) {
          const value = list[i];
          if (typeof value === 'object' && value !== null) this.visit(list as unknown as Slot, i, value, depth);
        }
      } else {
        const record = container as Slot;
        // As in hasTags; replacing the value of the key being visited does not disturb for-in.
        for (const key in record) {
          if (!hasOwn.call(record, key)) continue;
          const value = record[key];
          if (typeof value === 'object' && value !== null) this.visit(record, key, value, depth);
        }
      }
    }
    return holder[0];
  }

  /** `value` sits at `parent[key]`, inside a container at `depth`. */
  private visit(parent: Slot, key: string | number, value: object, depth: number): void {
    if (depth >= MAX_VALUE_DEPTH) throw tooDeepText(this.place);
    if (Array.isArray(value) || !(TAG in value)) {
      this.work.push(value);
      this.depths.push(depth + 1);
      return;
    }
    const record = value as Record<string, unknown>;
    const v = record.v;
    const tag = record[TAG];
    const bad = () => new CorruptRecordError(`${this.place()} has a malformed ${JSON.stringify(tag)} value.`);
    switch (tag) {
      case 'Date': {
        if (v !== null && typeof v !== 'string') throw bad();
        const date = new Date(v === null ? NaN : v);
        if (v !== null && Number.isNaN(date.getTime())) throw bad();
        parent[key] = date;
        return;
      }
      case 'BigInt':
        if (typeof v !== 'string' || !INTEGER.test(v)) throw bad();
        parent[key] = BigInt(v);
        return;
      case 'Bytes':
      case 'Buffer': {
        if (typeof v !== 'string' || v.length % 4 !== 0 || !BASE64.test(v)) throw bad();
        // A copy in its own ArrayBuffer: never a view of Buffer's shared pool.
        const bytes = new Uint8Array(Buffer.from(v, 'base64'));
        parent[key] = tag === 'Buffer' ? Buffer.from(bytes.buffer, 0, bytes.byteLength) : bytes;
        return;
      }
      case 'Num':
        if (typeof v !== 'string' || !SPECIAL_NUMBERS.has(v)) throw bad();
        parent[key] = v === '-0' ? -0 : Number(v);
        return;
      case 'Undef':
        parent[key] = undefined;
        return;
      case 'Hole':
        if (!Array.isArray(parent) || parent === this.holder) throw bad();
        delete parent[key as number];
        return;
      case 'Map':
      case 'Set':
        if (!Array.isArray(v)) throw bad();
        if (tag === 'Map' && !v.every((entry) => Array.isArray(entry) && entry.length === 2)) throw bad();
        if (depth + 1 >= MAX_VALUE_DEPTH) throw tooDeepText(this.place);
        this.work.push(new Collection(parent, key, tag, v), v);
        this.depths.push(0, depth + 2);
        return;
      case 'Obj':
      case 'NullProto':
        if (!isJsonObject(v)) throw bad();
        if (depth + 1 >= MAX_VALUE_DEPTH) throw tooDeepText(this.place);
        if (tag === 'NullProto') Object.setPrototypeOf(v, null);
        parent[key] = v;
        this.work.push(v);
        this.depths.push(depth + 2);
        return;
      default:
        throw new CorruptRecordError(`${this.place()} has an unknown type tag ${JSON.stringify(tag)}.`);
    }
  }
}

/** Byte length of a string in UTF-8, without allocating a buffer. */
export function utf8Length(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}
