/**
 * @module langgraph/cairn-store
 * `CairnStore`: a LangGraph.js `BaseStore` over a cairn engine's {@link Store}.
 * LangGraph's long-term memory (`config.store`, `getStore()`) then lives in the same
 * database as the checkpoints, versioned and shared by every process, and a prefix
 * search is bounded at label edges (`["user", "1"]` never returns `["user", "10"]`).
 *
 * Filters are run by the engine where cairn's filter language says the same thing
 * (top-level keys, scalar values, `$eq $ne $gt $gte $lt $lte $in`), and in memory,
 * after the engine's prefix scan, otherwise (`$nin`, object values, other keys).
 * There is no vector index: a search's `query` is ignored, as LangGraph's own
 * in-memory store does without an index.
 */
import {
  BaseStore,
  validateNamespace,
  type Item,
  type ListNamespacesOperation,
  type Operation,
  type OperationResults,
  type SearchItem,
  type SearchOperation,
} from '@langchain/langgraph-checkpoint';
import type { Engine } from '../contracts/engine.js';
import { InvalidOptionError } from '../errors.js';
import type { FilterOperators, FilterScalar, Store, StoreFilter, StoreItem } from '../contracts/store.js';
import { checkAdapterOptions } from './adapter-options.js';

/** Options of {@link CairnStore}. */
export interface CairnStoreOptions {
  /** The engine whose store holds the items: `memory()`, `sqlite(path)`, `postgres(url)`. */
  engine: Engine;
}

/** Operators cairn's filter language has with LangGraph's meaning. */
const ENGINE_OPERATORS = new Set(['$eq', '$ne', '$gt', '$gte', '$lt', '$lte', '$in']);
const LABEL = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * A LangGraph.js store over a cairn engine's store. Pass it as `compile({ store })`.
 *
 * @example
 * ```ts
 * import { sqlite } from 'cairn/sqlite';
 * import { CairnSaver, CairnStore } from 'cairn/langgraph';
 *
 * const engine = sqlite('./cairn.db');
 * const app = workflow.compile({ checkpointer: new CairnSaver({ engine }), store: new CairnStore({ engine }) });
 * ```
 */
export class CairnStore extends BaseStore {
  /** The engine the items live in. */
  readonly engine: Engine;
  private readonly store: Store;

  constructor(options: CairnStoreOptions) {
    super();
    checkAdapterOptions('CairnStore', options, ['engine']);
    this.engine = options.engine;
    this.store = options.engine.store;
  }

  /** Runs each operation in order; a later one sees what an earlier one wrote. */
  async batch<Op extends Operation[]>(operations: Op): Promise<OperationResults<Op>> {
    const results: unknown[] = [];
    for (const op of operations) results.push(await this.run(op));
    return results as OperationResults<Op>;
  }

  private async run(op: Operation): Promise<unknown> {
    if ('key' in op && 'value' in op) {
      validateNamespace(op.namespace);
      if (op.value === null) await this.store.delete(op.namespace, op.key);
      else await this.store.put(op.namespace, op.key, op.value);
      return undefined;
    }
    if ('key' in op) {
      const item = await this.store.get<Record<string, unknown>>(op.namespace, op.key);
      return item ? toItem(item) : null;
    }
    if ('namespacePrefix' in op) return this.searchOp(op);
    return this.listNamespacesOp(op);
  }

  private async searchOp(op: SearchOperation): Promise<SearchItem[]> {
    const { limit, offset } = pageWindow('search', op.limit ?? 10, op.offset ?? 0);
    if (limit === 0) return [];
    const split = splitFilter(op.filter);
    if (!split.rest) {
      const page = await this.store.search<Record<string, unknown>>(op.namespacePrefix, { limit, offset, ...(split.engine ? { filter: split.engine } : {}) });
      return page.items.map(toItem);
    }
    // Part of the filter has no engine form: page through the prefix and filter here.
    const matched: SearchItem[] = [];
    let cursor: string | null = null;
    let skipped = 0;
    do {
      const page: { items: StoreItem<Record<string, unknown>>[]; cursor: string | null } = await this.store.search<Record<string, unknown>>(op.namespacePrefix, {
        limit: 200,
        ...(cursor ? { cursor } : {}),
        ...(split.engine ? { filter: split.engine } : {}),
      });
      for (const item of page.items) {
        if (!matchesAll(item.value, split.rest)) continue;
        if (skipped++ < offset) continue;
        matched.push(toItem(item));
        if (matched.length >= limit) return matched;
      }
      cursor = page.cursor;
    } while (cursor);
    return matched;
  }

  private async listNamespacesOp(op: ListNamespacesOperation): Promise<string[][]> {
    const { limit, offset } = pageWindow('listNamespaces', op.limit ?? null, op.offset ?? 0);
    if (limit === 0) return [];
    const conditions = op.matchConditions ?? [];
    // A leading prefix without wildcards is the engine's (label-bounded) prefix; the rest is matched here.
    const prefixCondition = conditions.find((c) => c.matchType === 'prefix' && !c.path.includes('*'));
    const rest = conditions.filter((c) => c !== prefixCondition);
    if (rest.length === 0) {
      return this.store.listNamespaces({
        ...(prefixCondition ? { prefix: prefixCondition.path as string[] } : {}),
        ...(op.maxDepth !== undefined ? { maxDepth: op.maxDepth } : {}),
        ...(limit !== null ? { limit } : {}),
        offset,
      });
    }
    let namespaces = await this.store.listNamespaces(prefixCondition ? { prefix: prefixCondition.path as string[] } : {});
    namespaces = namespaces.filter((ns) => rest.every((c) => matchesPath(c.matchType, c.path, ns)));
    if (op.maxDepth !== undefined) {
      const seen = new Set<string>();
      namespaces = namespaces
        .map((ns) => ns.slice(0, op.maxDepth))
        .filter((ns) => {
          const key = JSON.stringify(ns);
          if (seen.has(key)) return false;
          seen.add(key);
          return true;
        });
    }
    return namespaces.slice(offset, limit === null ? undefined : offset + limit);
  }
}

/**
 * A search's or a listing's page as LangGraph's stores take it. `limit: 0` is an empty
 * page, as LangGraph's InMemoryStore and PostgresStore both answer (cairn's own store
 * refuses it: it never reads nothing). A negative or fractional limit or offset is
 * InvalidOptionError, as PostgresStore refuses it (`LIMIT must not be negative`);
 * InMemoryStore's `Array.slice` would count a negative one from the end of everything
 * under the prefix, which no database store does. `limit: null`: no limit.
 */
function pageWindow<L extends number | null>(call: string, limit: L, offset: number): { limit: L; offset: number } {
  const whole = (name: string, value: unknown, min: number) => {
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) throw new InvalidOptionError(`${call}: ${name} must be a whole number, ${min} or more, got ${String(value)}.`);
  };
  if (limit !== null) whole('limit', limit, 0);
  whole('offset', offset, 0);
  return { limit, offset };
}

function toItem(item: StoreItem<Record<string, unknown>>): Item {
  return { namespace: item.namespace, key: item.key, value: item.value, createdAt: new Date(item.createdAt), updatedAt: new Date(item.updatedAt) };
}

function isScalar(value: unknown): value is FilterScalar {
  return value === null || typeof value === 'string' || typeof value === 'boolean' || (typeof value === 'number' && Number.isFinite(value));
}

/**
 * LangGraph compares `$gt $gte $lt $lte` as numbers (`Number(actual) > Number(operand)`);
 * the engine compares strings in code point order and never a number with a string.
 * Only a number operand means the same to both: a string one is matched here.
 */
function isFiniteNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

function isOperators(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && Object.keys(value).some((k) => k.startsWith('$'));
}

/** The part of a LangGraph filter the engine runs, and the part left to match in memory (null: none). */
function splitFilter(filter: Record<string, unknown> | undefined): { engine: StoreFilter | null; rest: Record<string, unknown> | null } {
  if (!filter) return { engine: null, rest: null };
  const engine: StoreFilter = {};
  const rest: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(filter)) {
    const labelled = LABEL.test(key);
    if (labelled && isScalar(value)) engine[key] = value;
    else if (
      labelled &&
      isOperators(value) &&
      Object.entries(value).every(([op, operand]) => ENGINE_OPERATORS.has(op) && (op === '$in' ? Array.isArray(operand) && operand.every(isScalar) : op === '$eq' || op === '$ne' ? isScalar(operand) : isFiniteNumber(operand)))
    )
      engine[key] = value as FilterOperators;
    else rest[key] = value;
  }
  return { engine: Object.keys(engine).length ? engine : null, rest: Object.keys(rest).length ? rest : null };
}

/** LangGraph's own filter semantics (top-level keys; operators; otherwise deep equality). */
function matchesAll(value: Record<string, unknown>, filter: Record<string, unknown>): boolean {
  return Object.entries(filter).every(([key, wanted]) => matches(value[key], wanted));
}

function matches(actual: unknown, wanted: unknown): boolean {
  if (isOperators(wanted)) {
    return Object.entries(wanted).every(([op, operand]) => {
      switch (op) {
        case '$eq':
          return deepEqual(actual, operand);
        case '$ne':
          return !deepEqual(actual, operand);
        case '$gt':
          return Number(actual) > Number(operand);
        case '$gte':
          return Number(actual) >= Number(operand);
        case '$lt':
          return Number(actual) < Number(operand);
        case '$lte':
          return Number(actual) <= Number(operand);
        case '$in':
          return Array.isArray(operand) && operand.some((o) => deepEqual(actual, o));
        case '$nin':
          return !Array.isArray(operand) || !operand.some((o) => deepEqual(actual, o));
        default:
          return false;
      }
    });
  }
  return deepEqual(actual, wanted);
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (Object.is(a, b)) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k) => Object.hasOwn(b, k) && deepEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}

function matchesPath(type: 'prefix' | 'suffix', path: readonly string[], ns: readonly string[]): boolean {
  if (path.length > ns.length) return false;
  const offset = type === 'prefix' ? 0 : ns.length - path.length;
  return path.every((label, i) => label === '*' || ns[offset + i] === label);
}
