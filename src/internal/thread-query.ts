/**
 * @module internal/thread-query
 * Validation of a {@link ThreadQuery} and of `deleteThread`'s options, done once for
 * every engine so they all refuse the same malformed input with the same message,
 * plus the in-memory matcher and order (the reference the SQL engines agree with),
 * and of a new thread's kind, tenant and metadata, so that what is stored can be listed.
 */
import type { ThreadKind, ThreadQuery, ThreadRecord, ThreadStatus } from '../contracts/threads.js';
import { InvalidOptionError } from '../errors.js';
import { checkTenant } from '../artifacts/refs.js';
import { compareCodePoints } from './keys.js';
import { isPlainObject } from './plain-object.js';
import { checkOptionKeys, unknownOption } from './option-keys.js';

export const THREAD_STATUSES: readonly ThreadStatus[] = ['running', 'interrupted', 'completed', 'failed', 'needs_attention', 'waiting'];
export const THREAD_KINDS: readonly ThreadKind[] = ['conversation', 'task', 'session', 'workflow'];

/** A value a thread-metadata filter may compare with (equality on top-level keys). */
export type MetadataValue = string | number | boolean | null;

/** A query as engines run it: every optional part either present and valid, or null. */
export interface NormalizedThreadQuery {
  statuses: ThreadStatus[] | null;
  kinds: ThreadKind[] | null;
  /** undefined: any tenant; null: threads without a tenant. */
  tenant: string | null | undefined;
  metadata: [key: string, value: MetadataValue][];
  /** `idPrefix` as a range of ids: `from` inclusive, `to` exclusive (null: no upper bound). */
  ids: { from: string; to: string | null } | null;
  created: { from: number | null; to: number | null };
  updated: { from: number | null; to: number | null };
  order: 'id' | 'updatedAt';
  /** Continue after this thread; `updatedAt` is set when the order is `updatedAt`. */
  after: { id: string; updatedAt: number | null } | null;
  limit: number | null;
}

/**
 * U+0000 (no place in PostgreSQL text) or a lone surrogate (no UTF-8 form): SQLite
 * compares their raw bytes, PostgreSQL a U+FFFD in their place, so a filter naming
 * one could match differently on each engine.
 */
const UNMATCHABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function invalid(message: string): never {
  throw new InvalidOptionError(`listThreads: ${message}`);
}

function oneOrMany<T extends string>(name: string, value: T | readonly T[] | undefined, allowed: readonly T[]): T[] | null {
  if (value === undefined) return null;
  const list = Array.isArray(value) ? [...(value as readonly T[])] : [value as T];
  if (list.length === 0) invalid(`${name}: [] matches no thread; leave ${name} out to match any.`);
  for (const v of list) if (!allowed.includes(v)) invalid(`${name} ${JSON.stringify(v)} is not one of ${allowed.join(', ')}.`);
  return [...new Set(list)];
}

function range(name: string, value: ThreadQuery['createdAt']): { from: number | null; to: number | null } {
  if (value === undefined) return { from: null, to: null };
  if (value === null || typeof value !== 'object') invalid(`${name} must be { from?, to? } in ms since the epoch.`);
  const bound = (key: 'from' | 'to') => {
    const v = value[key];
    if (v === undefined) return null;
    if (typeof v !== 'number' || !Number.isFinite(v)) invalid(`${name}.${key} must be a finite number of ms since the epoch, got ${String(v)}.`);
    return v;
  };
  return { from: bound('from'), to: bound('to') };
}

/**
 * The least string above every string that starts with `prefix`, in code point order
 * (the byte order of UTF-8), or null when there is none (a prefix of U+10FFFF only):
 * the last code point below U+10FFFF goes up by one, and the ones after it go.
 */
export function prefixEnd(prefix: string): string | null {
  const points = Array.from(prefix, (c) => c.codePointAt(0)!);
  while (points.length && points.at(-1) === 0x10ffff) points.pop();
  if (!points.length) return null;
  const last = points.pop()! + 1;
  // The surrogates are no code points of their own: the next one after U+D7FF is U+E000.
  points.push(last === 0xd800 ? 0xe000 : last);
  return String.fromCodePoint(...points);
}

function idRange(prefix: unknown): NormalizedThreadQuery['ids'] {
  if (prefix === undefined || prefix === '') return null;
  if (typeof prefix !== 'string') invalid(`idPrefix must be a string, got ${typeof prefix}.`);
  if (UNMATCHABLE.test(prefix)) invalid('idPrefix may not contain U+0000 or lone surrogates (engines cannot compare them alike).');
  return { from: prefix, to: prefixEnd(prefix) };
}

/**
 * Whether the query filters on time alone (updatedAt, with paging): then the ids of the
 * threads updated since tell which of them a page holds, but for the threads of the
 * first second, which their exact time decides. Any other filter may keep few of them.
 */
export function filtersOnTimeOnly(q: NormalizedThreadQuery): boolean {
  return !q.statuses && !q.kinds && q.tenant === undefined && !q.metadata.length && !q.ids && q.created.from === null && q.created.to === null;
}

/** What `listThreads` filters on: any other key is a misspelt filter, which would list every thread. */
export const THREAD_QUERY_KEYS = ['status', 'kind', 'tenant', 'metadata', 'idPrefix', 'createdAt', 'updatedAt', 'order', 'after', 'limit'] as const;

/** Validates `query` and returns it in the form engines run. Throws InvalidOptionError. */
export function normalizeThreadQuery(query: ThreadQuery = {}): NormalizedThreadQuery {
  if (query === null || typeof query !== 'object' || Array.isArray(query)) invalid('the query must be an object.');
  const unknownQueryKey = unknownOption('listThreads', query, THREAD_QUERY_KEYS);
  if (unknownQueryKey) throw new InvalidOptionError(unknownQueryKey);
  const metadata: [string, MetadataValue][] = [];
  if (query.metadata !== undefined) {
    if (query.metadata === null || typeof query.metadata !== 'object' || Array.isArray(query.metadata)) invalid('metadata must be an object of key → value.');
    for (const [key, value] of Object.entries(query.metadata)) {
      const scalar = value === null || typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value));
      // String() for numbers: JSON would say NaN and Infinity are null.
      if (!scalar) invalid(`metadata.${key} must be a string, a finite number, a boolean or null (equality on top-level keys), got ${typeof value === 'number' || typeof value === 'bigint' ? String(value) : (JSON.stringify(value) ?? String(value))}.`);
      if (UNMATCHABLE.test(key) || (typeof value === 'string' && UNMATCHABLE.test(value))) {
        invalid(`metadata filter ${JSON.stringify(key)}: keys and values may not contain U+0000 or lone surrogates (engines cannot compare them alike); stored metadata may, but cannot be filtered on them.`);
      }
      metadata.push([key, value]);
    }
  }
  if (query.tenant !== undefined && query.tenant !== null && typeof query.tenant !== 'string') invalid('tenant must be a string, or null for threads without one.');
  const order = query.order ?? 'id';
  if (order !== 'id' && order !== 'updatedAt') invalid(`order must be 'id' or 'updatedAt', got ${JSON.stringify(order)}.`);
  let after: NormalizedThreadQuery['after'] = null;
  if (query.after !== undefined) {
    const cursor = query.after;
    const id = typeof cursor === 'string' ? cursor : cursor?.id;
    if (typeof id !== 'string') invalid('after must be the last thread of the previous page (its id, or the record).');
    if (order === 'updatedAt') {
      const updatedAt = typeof cursor === 'string' ? undefined : cursor.updatedAt;
      if (typeof updatedAt !== 'number' || !Number.isFinite(updatedAt)) invalid("with order 'updatedAt', after must be the last record of the previous page (its id and updatedAt).");
      after = { id, updatedAt };
    } else after = { id, updatedAt: null };
  }
  let limit: number | null = null;
  if (query.limit !== undefined) {
    if (typeof query.limit !== 'number' || !Number.isSafeInteger(query.limit) || query.limit < 0) invalid(`limit must be a non-negative integer, got ${String(query.limit)}.`);
    limit = query.limit;
  }
  return {
    statuses: oneOrMany('status', query.status, THREAD_STATUSES),
    kinds: oneOrMany('kind', query.kind, THREAD_KINDS),
    tenant: query.tenant,
    metadata,
    ids: idRange(query.idPrefix),
    created: range('createdAt', query.createdAt),
    updated: range('updatedAt', query.updatedAt),
    order,
    after,
    limit,
  };
}

/** What an engine's `deleteThread` takes: a misspelt `ifStatuss` would delete the thread whatever its status. */
const DELETE_THREAD_KEYS = ['ifStatus', 'lease'];

/** Refuses `deleteThread` options that are not an object of the keys it takes. */
export function checkDeleteThreadOptions(options: unknown): void {
  checkOptionKeys('deleteThread', options, DELETE_THREAD_KEYS);
}

/** Validates `deleteThread`'s `ifStatus`; null when absent. */
export function normalizeIfStatus(ifStatus: ThreadStatus | readonly ThreadStatus[] | undefined): ThreadStatus[] | null {
  if (ifStatus === undefined) return null;
  const list = Array.isArray(ifStatus) ? [...(ifStatus as readonly ThreadStatus[])] : [ifStatus as ThreadStatus];
  if (list.length === 0) throw new InvalidOptionError('deleteThread: ifStatus [] matches no status, so nothing would ever be deleted; leave ifStatus out to delete whatever the status.');
  for (const v of list) {
    if (!THREAD_STATUSES.includes(v)) throw new InvalidOptionError(`deleteThread: ifStatus ${JSON.stringify(v)} is not one of ${THREAD_STATUSES.join(', ')}.`);
  }
  return list;
}

const inRange = (value: number, r: { from: number | null; to: number | null }) => (r.from === null || value >= r.from) && (r.to === null || value < r.to);

/** True when `thread` matches every filter of `q` (paging aside). */
export function threadMatches(thread: ThreadRecord, q: NormalizedThreadQuery): boolean {
  if (q.statuses && !q.statuses.includes(thread.status)) return false;
  if (q.kinds && !q.kinds.includes(thread.kind)) return false;
  if (q.tenant !== undefined && thread.tenant !== q.tenant) return false;
  if (q.ids && !thread.id.startsWith(q.ids.from)) return false;
  for (const [key, value] of q.metadata) {
    if (!Object.prototype.hasOwnProperty.call(thread.metadata, key) || thread.metadata[key] !== value) return false;
  }
  return inRange(thread.createdAt, q.created) && inRange(thread.updatedAt, q.updated);
}

/** The query's order: ascending id (code point order, as SQLite and PostgreSQL's `COLLATE "C"`), or newest update first. */
export function compareThreads(q: NormalizedThreadQuery): (a: ThreadRecord, b: ThreadRecord) => number {
  return q.order === 'updatedAt' ? (a, b) => b.updatedAt - a.updatedAt || compareCodePoints(a.id, b.id) : (a, b) => compareCodePoints(a.id, b.id);
}

/** True when `thread` comes after the query's cursor in its order. */
export function isAfterCursor(thread: ThreadRecord, q: NormalizedThreadQuery): boolean {
  const after = q.after;
  if (!after) return true;
  if (q.order === 'updatedAt') {
    return thread.updatedAt < after.updatedAt! || (thread.updatedAt === after.updatedAt && compareCodePoints(thread.id, after.id) > 0);
  }
  return compareCodePoints(thread.id, after.id) > 0;
}

/**
 * Validates what a new thread is created with, before anything is stored and alike on
 * every engine: a kind {@link ThreadKind} names (one listThreads can filter on), a
 * tenant by the rule artifact refs and tenant-scoped engines use (1 to 256 characters,
 * no control characters: InvalidKeyError, as for a thread id), and metadata of plain
 * JSON (InvalidOptionError naming the key). Metadata is stored as JSON: a bigint failed
 * in the driver, a function or an undefined value was dropped on SQLite and PostgreSQL
 * and refused by the memory engine's clone, a Date came back a string.
 */
export function checkNewThread(attrs: { kind?: unknown; tenant?: unknown; metadata?: unknown }, call = 'run'): void {
  const { kind, tenant, metadata } = attrs;
  if (kind !== undefined && !THREAD_KINDS.includes(kind as ThreadKind)) {
    throw new InvalidOptionError(`${call}: kind ${JSON.stringify(kind) ?? String(kind)} is not one of ${THREAD_KINDS.join(', ')}.`);
  }
  if (tenant !== undefined && tenant !== null) checkTenant(tenant);
  if (metadata === undefined) return;
  if (!isPlainObject(metadata)) throw new InvalidOptionError(`${call}: metadata must be a plain object of JSON values, not ${describeJson(metadata)}.`);
  checkJson(metadata, 'metadata', new Set(), call);
}

function describeJson(value: unknown): string {
  if (typeof value === 'bigint') return `a bigint (${value}n)`;
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'symbol') return 'a symbol';
  if (value === undefined) return 'undefined';
  if (typeof value === 'number') return String(value);
  if (typeof value === 'object' && value !== null) return `an instance of ${(value as object).constructor?.name ?? 'a class'}`;
  return typeof value;
}

/** `value` at `path` is plain JSON: null, a boolean, a finite number, a string, an array or a plain object of those, without cycles. */
function checkJson(value: unknown, path: string, ancestors: Set<object>, call: string): void {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return;
  if (typeof value === 'number' && Number.isFinite(value)) return;
  const refused = (what: string) =>
    new InvalidOptionError(`${call}: ${path} is ${what}; thread metadata is plain JSON (null, booleans, finite numbers, strings, arrays and plain objects). Nothing was stored.`);
  if (typeof value !== 'object' || !(Array.isArray(value) || isPlainObject(value))) throw refused(describeJson(value));
  if (ancestors.has(value)) throw refused('a cycle (it contains itself)');
  ancestors.add(value);
  if (Array.isArray(value)) value.forEach((item, i) => checkJson(item, `${path}[${i}]`, ancestors, call));
  else {
    if (Object.getOwnPropertySymbols(value).length) throw refused('an object with symbol keys');
    for (const [key, item] of Object.entries(value)) checkJson(item, `${path}.${key}`, ancestors, call);
  }
  ancestors.delete(value);
}
