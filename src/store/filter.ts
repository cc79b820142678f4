/**
 * @module store/filter
 * Store search filters: validation into a list of conditions (the one place that
 * decides what a filter may contain), and their evaluation on a stored JSON value
 * (the memory engine's search, and the reference the SQL engines must agree with).
 *
 * A path is a list of object-field labels, each `[A-Za-z_][A-Za-z0-9_]*`: nothing a
 * query language could read as syntax. Engines still bind paths and operands as
 * parameters; the grammar is a second wall, not the first.
 *
 * @example
 * ```ts
 * const conditions = parseFilter({ 'profile.city': 'Oslo', age: { $gte: 18, $lt: 65 } });
 * matches(JSON.parse(storedText), conditions);
 * ```
 */
import type { FilterScalar, StoreFilter } from '../contracts/store.js';
import { InvalidFilterError } from '../errors.js';
import { compareCodePoints } from '../internal/keys.js';
import { isPlainObject } from '../internal/plain-object.js';

export type FilterOp = '$eq' | '$ne' | '$gt' | '$gte' | '$lt' | '$lte' | '$in' | '$exists';

/** One validated condition. */
export type Condition =
  | { path: string[]; op: '$eq' | '$ne'; value: FilterScalar }
  | { path: string[]; op: '$gt' | '$gte' | '$lt' | '$lte'; value: string | number }
  | { path: string[]; op: '$in'; value: FilterScalar[] }
  | { path: string[]; op: '$exists'; value: boolean };

const LABEL = /^[A-Za-z_][A-Za-z0-9_]*$/;
const MAX_LABELS = 16;
const MAX_PATH = 256;
const MAX_CONDITIONS = 32;
const MAX_IN = 100;
const MAX_STRING = 4096;
const OPS = new Set<string>(['$eq', '$ne', '$gt', '$gte', '$lt', '$lte', '$in', '$exists']);

function fail(message: string): never {
  throw new InvalidFilterError(`filter: ${message}`);
}

function parsePath(path: string): string[] {
  if (path.length === 0 || path.length > MAX_PATH) fail(`a path must have 1 to ${MAX_PATH} characters, got ${JSON.stringify(path.slice(0, 80))}.`);
  const labels = path.split('.');
  if (labels.length > MAX_LABELS) fail(`path ${JSON.stringify(path)} has ${labels.length} labels; the limit is ${MAX_LABELS}.`);
  for (const label of labels) {
    if (!LABEL.test(label)) {
      fail(`path ${JSON.stringify(path)} is not a dotted list of field names (each [A-Za-z_][A-Za-z0-9_]*).`);
    }
  }
  return labels;
}

function scalar(path: string, op: string, value: unknown): FilterScalar {
  if (value === null || typeof value === 'boolean') return value;
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) fail(`${path} ${op}: numbers must be finite, got ${String(value)}.`);
    return value;
  }
  if (typeof value === 'string') {
    if (value.length > MAX_STRING) fail(`${path} ${op}: strings are limited to ${MAX_STRING} characters.`);
    // U+0000 has no place in PostgreSQL text, and a lone surrogate no UTF-8 form: neither
    // could compare the same on every engine.
    if (/\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(value)) {
      fail(`${path} ${op}: strings may not contain U+0000 or lone surrogates.`);
    }
    return value;
  }
  return fail(`${path} ${op}: expected a string, a finite number, a boolean or null, got ${describe(value)}.`);
}

function describe(value: unknown): string {
  if (Array.isArray(value)) return 'an array';
  if (value instanceof Date) return 'a Date (filters compare stored JSON: dates are tagged objects)';
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/** Validates a filter and returns its conditions. Throws {@link InvalidFilterError}. */
export function parseFilter(filter: StoreFilter | undefined): Condition[] {
  if (filter === undefined) return [];
  if (!isPlainObject(filter)) fail(`a filter is a plain object of { path: value | { $op: value } }, got ${describe(filter)}.`);
  const conditions: Condition[] = [];
  for (const [rawPath, spec] of Object.entries(filter)) {
    const path = parsePath(rawPath);
    if (!isPlainObject(spec)) {
      conditions.push({ path, op: '$eq', value: scalar(rawPath, '$eq', spec) });
      continue;
    }
    const entries = Object.entries(spec);
    if (entries.length === 0) fail(`${rawPath}: an operator object needs at least one operator.`);
    for (const [op, operand] of entries) {
      if (!OPS.has(op)) fail(`${rawPath}: unknown operator ${JSON.stringify(op)} (known: ${[...OPS].join(' ')}).`);
      switch (op as FilterOp) {
        case '$eq':
        case '$ne':
          conditions.push({ path, op: op as '$eq' | '$ne', value: scalar(rawPath, op, operand) });
          break;
        case '$gt':
        case '$gte':
        case '$lt':
        case '$lte': {
          const value = scalar(rawPath, op, operand);
          if (typeof value !== 'string' && typeof value !== 'number') fail(`${rawPath} ${op}: compares numbers or strings, got ${JSON.stringify(value)}.`);
          conditions.push({ path, op: op as '$gt', value });
          break;
        }
        case '$in': {
          if (!Array.isArray(operand) || operand.length === 0 || operand.length > MAX_IN) fail(`${rawPath} $in: expected an array of 1 to ${MAX_IN} scalars.`);
          conditions.push({ path, op: '$in', value: operand.map((v) => scalar(rawPath, '$in', v)) });
          break;
        }
        case '$exists':
          if (typeof operand !== 'boolean') fail(`${rawPath} $exists: expected true or false, got ${describe(operand)}.`);
          conditions.push({ path, op: '$exists', value: operand });
          break;
      }
    }
  }
  if (conditions.length > MAX_CONDITIONS) fail(`${conditions.length} conditions; the limit is ${MAX_CONDITIONS}.`);
  return conditions;
}

const MISSING = Symbol('missing');

/** The JSON value at `path` (object fields only), or MISSING. */
function at(json: unknown, path: string[]): unknown {
  let current: unknown = json;
  for (const label of path) {
    if (typeof current !== 'object' || current === null || Array.isArray(current) || !Object.prototype.hasOwnProperty.call(current, label)) return MISSING;
    current = (current as Record<string, unknown>)[label];
  }
  return current;
}

function equal(found: unknown, value: FilterScalar): boolean {
  return found !== MISSING && typeof found === typeof value && found === value;
}

function compare(found: unknown, value: string | number): number | undefined {
  if (typeof value === 'number') return typeof found === 'number' ? found - value : undefined;
  return typeof found === 'string' ? compareCodePoints(found, value) : undefined;
}

/** True when the parsed stored JSON `json` meets every condition. */
export function matches(json: unknown, conditions: readonly Condition[]): boolean {
  return conditions.every((c) => {
    const found = at(json, c.path);
    switch (c.op) {
      case '$exists':
        return (found !== MISSING) === c.value;
      case '$eq':
        return equal(found, c.value);
      case '$ne':
        return !equal(found, c.value);
      case '$in':
        return c.value.some((v) => equal(found, v));
      default: {
        const order = compare(found, c.value);
        if (order === undefined) return false;
        return c.op === '$gt' ? order > 0 : c.op === '$gte' ? order >= 0 : c.op === '$lt' ? order < 0 : order <= 0;
      }
    }
  });
}
