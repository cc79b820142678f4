/**
 * @module langgraph/metadata-filter
 * `CairnSaver.list`'s `filter`, matched as PostgresSaver matches it: `metadata @> filter`,
 * PostgreSQL's jsonb containment, on every engine. The filter is taken as PostgresSaver
 * sends it (`JSON.stringify`: keys set to undefined dropped, `toJSON` applied). A filter
 * key matches when the metadata has it and its value contains the filter's: a scalar
 * equal to it, an object with each of its keys (recursively, other keys allowed), an
 * array with each of its elements somewhere (order and repeats ignored; a scalar matches
 * a scalar element, an object or array one it contains). A scalar does not match an
 * array holding it, nor an array an object, as in jsonb. A filter jsonb cannot hold (not
 * JSON data, U+0000, a lone surrogate), on which PostgresSaver fails with PostgreSQL's
 * error, is InvalidOptionError.
 *
 * LangGraph's other savers differ, and agree with PostgresSaver only on scalar values
 * (all their validation suite asks): MemorySaver keeps `metadata[key] === value` (an
 * object or array never matches), SqliteSaver compares each key's JSON text (an object
 * matches only with the same keys, in the same order).
 */
import { InvalidOptionError } from '../errors.js';
import { isPlainObject } from '../internal/plain-object.js';

/** The filter as PostgresSaver sends it, or null when it keeps every checkpoint (none, `{}`, only keys set to undefined). */
export function metadataFilter(filter: unknown): Record<string, unknown> | null {
  if (filter === undefined || filter === null) return null;
  let json: unknown;
  try {
    json = JSON.parse(JSON.stringify(filter) ?? 'null');
  } catch (error) {
    throw new InvalidOptionError(`list's filter must be JSON data (PostgresSaver sends it as JSON): ${(error as Error).message}.`, { place: { engine: 'langgraph' } });
  }
  if (!isPlainObject(json)) throw new InvalidOptionError("list's filter must be an object of metadata keys and the values they must contain.", { place: { engine: 'langgraph' } });
  // PostgreSQL refuses them in jsonb (PostgresSaver's list fails with its error): refused alike on every engine, typed.
  if (hasUnstorableText(json)) throw new InvalidOptionError("list's filter may not contain U+0000 or lone surrogates, in keys or values: jsonb holds neither.", { place: { engine: 'langgraph' } });
  return Object.keys(json).length ? json : null;
}

const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function hasUnstorableText(json: unknown): boolean {
  if (typeof json === 'string') return UNSTORABLE.test(json);
  if (Array.isArray(json)) return json.some(hasUnstorableText);
  if (isPlainObject(json)) return Object.keys(json).some((key) => UNSTORABLE.test(key) || hasUnstorableText(json[key]));
  return false;
}

/**
 * True when `metadata` (JSON data) contains `filter` (see {@link metadataFilter}), as
 * `metadata @> filter` is true in PostgreSQL.
 */
export function metadataContains(metadata: Record<string, unknown>, filter: Record<string, unknown>): boolean {
  return contains(metadata, filter);
}

/**
 * True when every value `filter` names in `metadata` is JSON data as it stands (plain
 * objects, arrays, finite numbers, strings, booleans, null): nothing a serializer would
 * write in another form (a Date, a Map, a class instance), which the match must then see
 * as PostgresSaver stored it.
 */
export function filteredValuesAreJson(metadata: Record<string, unknown>, filter: Record<string, unknown>): boolean {
  for (const key of Object.keys(filter)) if (Object.hasOwn(metadata, key) && !isJsonData(metadata[key])) return false;
  return true;
}

function contains(value: unknown, wanted: unknown): boolean {
  if (Array.isArray(wanted)) {
    if (!Array.isArray(value)) return false;
    // Each wanted element somewhere in the array: a scalar among its scalars, a container within one of its containers.
    return wanted.every((w) => value.some((v) => contains(v, w)));
  }
  if (isPlainObject(wanted)) {
    if (!isPlainObject(value)) return false;
    for (const key of Object.keys(wanted)) {
      if (!Object.hasOwn(value, key) || value[key] === undefined || !contains(value[key], wanted[key])) return false;
    }
    return true;
  }
  // A scalar: jsonb compares numbers by value, strings, booleans and null by identity.
  return value === wanted;
}

function isJsonData(value: unknown): boolean {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isFinite(value);
  if (Array.isArray(value)) return value.every(isJsonData);
  if (isPlainObject(value)) {
    for (const key of Object.keys(value)) if (value[key] !== undefined && !isJsonData(value[key])) return false;
    return true;
  }
  return false;
}
