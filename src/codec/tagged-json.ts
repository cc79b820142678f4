/**
 * @module codec/tagged-json
 * The one encoding of every value cairn stores: JSON with tagged types, written
 * canonically (object keys sorted) so that the same value always produces the
 * same bytes, which is what the hash chain needs.
 *
 * Tagged values are `{"$t": tag, "v": payload}`: `Date`, `BigInt`, `Bytes`
 * (Uint8Array/Buffer), `Map`, `Set`, `Num` (NaN, ±Infinity, -0) and `Undef`. A
 * plain object that itself has a `$t` key is wrapped as `{"$t":"Obj","v":{...}}`
 * so that it can never be mistaken for a tag. Decoding never executes code: it
 * only builds the types listed here.
 *
 * @example
 * ```ts
 * const text = encode({ at: new Date(0), n: 10n });   // '{"at":{"$t":"Date","v":"1970-01-01T00:00:00.000Z"},"n":{"$t":"BigInt","v":"10"}}'
 * decode(text);                                         // { at: Date(0), n: 10n }
 * ```
 */
import { CorruptRecordError, UnencodableValueError } from '../errors.js';

const TAG = '$t';

/**
 * Text that is already canonical tagged JSON, spliced into an encoding verbatim.
 * Internal: lets the runtime encode a value once and reuse the text (not exported
 * from the package entry).
 */
export class RawJson {
  constructor(readonly text: string) {}
}

/** Encodes `value` as canonical tagged JSON. Throws {@link UnencodableValueError} naming the path. */
export function encode(value: unknown, path = '$'): string {
  return write(value, { root: path, parts: [] }, new Set());
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

function child(value: unknown, part: string | number, cursor: Cursor, stack: Set<object>): string {
  cursor.parts.push(part);
  const text = write(value, cursor, stack);
  cursor.parts.pop();
  return text;
}

function write(value: unknown, cursor: Cursor, stack: Set<object>): string {
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'boolean':
      return value ? 'true' : 'false';
    case 'number':
      if (Number.isFinite(value) && !Object.is(value, -0)) return String(value);
      return `{"$t":"Num","v":${JSON.stringify(Object.is(value, -0) ? '-0' : String(value))}}`;
    case 'bigint':
      return `{"$t":"BigInt","v":"${value.toString()}"}`;
    case 'undefined':
      return '{"$t":"Undef"}';
    case 'object':
      break;
    default:
      throw new UnencodableValueError(pathOf(cursor), `a ${typeof value} cannot be stored`);
  }
  if (value === null) return 'null';
  if (stack.has(value)) throw new UnencodableValueError(pathOf(cursor), 'the value contains a cycle');
  stack.add(value);
  try {
    if (Array.isArray(value)) {
      let out = '[';
      for (let i = 0; i < value.length; i++) {
        if (i > 0) out += ',';
        out += child(value[i], i, cursor, stack);
      }
      return out + ']';
    }
    if (value instanceof RawJson) return value.text;
    if (value instanceof Date) {
      const time = value.getTime();
      return `{"$t":"Date","v":${Number.isNaN(time) ? 'null' : JSON.stringify(value.toISOString())}}`;
    }
    if (value instanceof Uint8Array) {
      return `{"$t":"Bytes","v":"${Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString('base64')}"}`;
    }
    if (value instanceof Map) {
      return `{"$t":"Map","v":${child([...value.entries()], '<map>', cursor, stack)}}`;
    }
    if (value instanceof Set) {
      return `{"$t":"Set","v":${child([...value], '<set>', cursor, stack)}}`;
    }
    const proto = Object.getPrototypeOf(value);
    if (proto !== Object.prototype && proto !== null) {
      const name = (value as { constructor?: { name?: string } }).constructor?.name ?? 'unknown';
      throw new UnencodableValueError(pathOf(cursor), `an instance of class ${name} is not plain data`);
    }
    const keys = Object.keys(value).sort();
    let out = '{';
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i]!;
      if (i > 0) out += ',';
      out += JSON.stringify(key) + ':' + child((value as Record<string, unknown>)[key], key, cursor, stack);
    }
    out += '}';
    return keys.includes(TAG) ? `{"$t":"Obj","v":${out}}` : out;
  } finally {
    stack.delete(value);
  }
}

/**
 * Decodes canonical tagged JSON. Throws {@link CorruptRecordError} on text that is
 * not valid tagged JSON; `where` names the record in that message (a function is
 * called only then: loads decode thousands of items).
 */
export function decode<T = unknown>(text: string, where?: string | (() => string)): T {
  let parsed: unknown;
  const place = () => (typeof where === 'function' ? where() : where);
  try {
    parsed = JSON.parse(text);
  } catch (cause) {
    throw new CorruptRecordError(`${place() ?? 'a stored value'} is not valid JSON (${(cause as Error).message}).`, { cause });
  }
  // Fast path: most stored values carry no tags at all, and a substring scan is far
  // cheaper than walking a large decoded value.
  if (!text.includes('"$t"')) return parsed as T;
  return revive(parsed, place()) as T;
}

function revive(value: unknown, where: string | undefined): unknown {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = revive(value[i], where);
    return value;
  }
  const record = value as Record<string, unknown>;
  if (TAG in record) return reviveTag(record, where);
  for (const key of Object.keys(record)) record[key] = revive(record[key], where);
  return record;
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const INTEGER = /^-?\d+$/;
const SPECIAL_NUMBERS = new Set(['NaN', 'Infinity', '-Infinity', '-0']);

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Builds a tagged value after checking its payload's shape, so a damaged or forged
 * record is a CorruptRecordError, never a TypeError from a constructor, and no
 * payload reaches a constructor that would call its toString or valueOf.
 */
function reviveTag(record: Record<string, unknown>, where: string | undefined): unknown {
  const v = record.v;
  const tag = record[TAG];
  const bad = () => new CorruptRecordError(`${where ?? 'a stored value'} has a malformed ${JSON.stringify(tag)} value.`);
  switch (tag) {
    case 'Date': {
      if (v !== null && typeof v !== 'string') throw bad();
      const date = new Date(v === null ? NaN : v);
      if (v !== null && Number.isNaN(date.getTime())) throw bad();
      return date;
    }
    case 'BigInt':
      if (typeof v !== 'string' || !INTEGER.test(v)) throw bad();
      return BigInt(v);
    case 'Bytes':
      if (typeof v !== 'string' || v.length % 4 !== 0 || !BASE64.test(v)) throw bad();
      return new Uint8Array(Buffer.from(v, 'base64'));
    case 'Map': {
      if (!Array.isArray(v) || !v.every((entry) => Array.isArray(entry) && entry.length === 2)) throw bad();
      return new Map(revive(v, where) as [unknown, unknown][]);
    }
    case 'Set':
      if (!Array.isArray(v)) throw bad();
      return new Set(revive(v, where) as unknown[]);
    case 'Num':
      if (typeof v !== 'string' || !SPECIAL_NUMBERS.has(v)) throw bad();
      return v === '-0' ? -0 : Number(v);
    case 'Undef':
      return undefined;
    case 'Obj': {
      if (!isPlainObject(v)) throw bad();
      for (const key of Object.keys(v)) v[key] = revive(v[key], where);
      return v;
    }
    default:
      throw new CorruptRecordError(`${where ?? 'a stored value'} has an unknown type tag ${JSON.stringify(tag)}.`);
  }
}

/** Byte length of a string in UTF-8, without allocating a buffer. */
export function utf8Length(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}
