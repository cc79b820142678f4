/**
 * @module inspector/thread-list
 * `GET /api/threads`: a page of threads, filtered and ordered as the query says, run
 * as one {@link Checkpointer.listThreads} call (so every engine's indexes serve it)
 * and continued by an opaque keyset cursor.
 *
 * | parameter | meaning |
 * |---|---|
 * | `q` | ids that start with it (case-sensitive), a range of the id index |
 * | `status`, `kind` | one value or several, comma-separated (any of them) |
 * | `tenant` | that tenant's threads |
 * | `meta` | `key=value`, repeatable (all must hold); the value is read as JSON when it is a JSON scalar (`5`, `true`, `null`, `"5"`), else as text |
 * | `updatedSince` | updated at or after: ms since the epoch, or an ISO 8601 time |
 * | `order` | `id` (default, ascending) or `updatedAt` (most recently updated first) |
 * | `after` | the `next` of the previous page, as given |
 * | `limit` | 1 to 500, default 50 |
 */
import type { Checkpointer } from '../contracts/checkpointer.js';
import type { MetadataFilter, ThreadKind, ThreadQuery, ThreadRecord, ThreadStatus } from '../contracts/threads.js';
import { INSPECTOR_THREAD_PAGE } from '../defaults.js';
import { InvalidOptionError } from '../errors.js';
import { pageSize } from './params.js';

/** A page of the thread list: `next` is the `after` of the next page, or null on the last one. */
export interface ThreadPage {
  threads: ThreadRecord[];
  next: string | null;
}

/** At most this many `meta` pairs: each is one more condition on every row the query reads. */
export const MAX_METADATA_FILTERS = 16;

type Order = NonNullable<ThreadQuery['order']>;

/**
 * The cursor of the page after `last`: base64url of `["id", id]` or
 * `["updatedAt", updatedAt, id]`. Opaque to the page, which hands it back as it got it;
 * it names its order, so a cursor of one order is refused by the other.
 */
export function encodeThreadCursor(order: Order, last: ThreadRecord): string {
  const parts = order === 'updatedAt' ? [order, last.updatedAt, last.id] : [order, last.id];
  return Buffer.from(JSON.stringify(parts)).toString('base64url');
}

/** The `after` of a listThreads query from a cursor of {@link encodeThreadCursor}; InvalidOptionError when it is not one of `order`. */
export function decodeThreadCursor(order: Order, cursor: string): NonNullable<ThreadQuery['after']> {
  const refuse = (why: string): never => {
    throw new InvalidOptionError(`after=${JSON.stringify(cursor.slice(0, 80))}: ${why}; pass the \`next\` of the previous page as it was given, with the same order.`);
  };
  if (!/^[A-Za-z0-9_-]+$/.test(cursor)) refuse('not a cursor of this API');
  let parts: unknown;
  try {
    parts = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    return refuse('not a cursor of this API');
  }
  if (!Array.isArray(parts) || (parts[0] !== 'id' && parts[0] !== 'updatedAt')) return refuse('not a cursor of this API');
  if (parts[0] !== order) return refuse(`a cursor of order ${parts[0]}, not ${order}`);
  if (order === 'id') {
    if (parts.length !== 2 || typeof parts[1] !== 'string') return refuse('not a cursor of this API');
    return parts[1];
  }
  if (parts.length !== 3 || typeof parts[1] !== 'number' || !Number.isSafeInteger(parts[1]) || typeof parts[2] !== 'string') return refuse('not a cursor of this API');
  return { updatedAt: parts[1], id: parts[2] };
}

/** `a,b` as ['a', 'b'], or undefined when absent or empty. The checkpointer validates the values. */
function list<T extends string>(params: URLSearchParams, name: string): T[] | undefined {
  const text = params.get(name);
  if (!text) return undefined;
  const values = text.split(',').map((s) => s.trim()).filter(Boolean);
  return values.length ? (values as T[]) : undefined;
}

function metadataFilter(params: URLSearchParams): MetadataFilter | undefined {
  const pairs = params.getAll('meta').filter((p) => p !== '');
  if (!pairs.length) return undefined;
  if (pairs.length > MAX_METADATA_FILTERS) throw new InvalidOptionError(`meta: ${pairs.length} filters, at most ${MAX_METADATA_FILTERS}.`);
  const filter: MetadataFilter = Object.create(null) as MetadataFilter;
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new InvalidOptionError(`meta=${JSON.stringify(pair)}: expected key=value (for example meta=queue=support).`);
    const key = pair.slice(0, eq);
    const text = pair.slice(eq + 1);
    let value: string | number | boolean | null = text;
    try {
      const parsed: unknown = JSON.parse(text);
      if (parsed === null || typeof parsed === 'string' || typeof parsed === 'number' || typeof parsed === 'boolean') value = parsed;
    } catch {
      // Not JSON: the text itself.
    }
    filter[key] = value;
  }
  return filter;
}

function updatedSince(params: URLSearchParams): number | undefined {
  const text = params.get('updatedSince');
  if (!text) return undefined;
  const ms = /^\d+$/.test(text) ? Number(text) : /^\d{4}-\d\d-\d\d/.test(text) ? Date.parse(text) : Number.NaN;
  if (!Number.isSafeInteger(ms)) throw new InvalidOptionError(`updatedSince=${JSON.stringify(text.slice(0, 80))}: expected ms since the epoch or an ISO 8601 time (2026-12-01T09:00:00Z).`);
  return ms;
}

function order(params: URLSearchParams): Order {
  const text = params.get('order') || 'id';
  if (text !== 'id' && text !== 'updatedAt') throw new InvalidOptionError(`order=${JSON.stringify(text.slice(0, 80))}: expected id or updatedAt.`);
  return text;
}

/** The listThreads query the parameters ask for, one more than the page (to tell whether there is a next one). */
export function threadQueryOf(params: URLSearchParams): { query: ThreadQuery; limit: number } {
  const limit = pageSize(params, INSPECTOR_THREAD_PAGE);
  const sort = order(params);
  const status = list<ThreadStatus>(params, 'status');
  const kind = list<ThreadKind>(params, 'kind');
  const tenant = params.get('tenant');
  const metadata = metadataFilter(params);
  const since = updatedSince(params);
  const q = params.get('q');
  const after = params.get('after');
  const query: ThreadQuery = {
    order: sort,
    limit: limit + 1,
    ...(status ? { status } : {}),
    ...(kind ? { kind } : {}),
    ...(tenant ? { tenant } : {}),
    ...(metadata ? { metadata } : {}),
    ...(since !== undefined ? { updatedAt: { from: since } } : {}),
    ...(q ? { idPrefix: q } : {}),
    ...(after ? { after: decodeThreadCursor(sort, after) } : {}),
  };
  return { query, limit };
}

/**
 * A page of threads for `GET /api/threads` (see the module's table). Throws
 * InvalidOptionError for a malformed parameter (the checkpointer's own validation included).
 *
 * @example
 * ```ts
 * const page = await listThreadPage(engine.checkpointer, new URLSearchParams('status=failed&order=updatedAt'));
 * const next = page.next && (await listThreadPage(engine.checkpointer, new URLSearchParams(`status=failed&order=updatedAt&after=${page.next}`)));
 * ```
 */
export async function listThreadPage(cp: Checkpointer, params: URLSearchParams): Promise<ThreadPage> {
  const { query, limit } = threadQueryOf(params);
  const rows = await cp.listThreads(query);
  const threads = rows.slice(0, limit);
  return { threads, next: rows.length > limit ? encodeThreadCursor(query.order!, threads.at(-1)!) : null };
}
