/**
 * @module store/base-store
 * What every store engine shares: validation of everything a call names before
 * storage is touched (a namespace and key written together within
 * MAX_STORE_KEY_BYTES, so every engine refuses the same writes), declared merge
 * rules, the `update` compare-and-set loop, the merge-function loop, paging,
 * namespace listing and the access-policy views, and
 * (given the engine's lifecycle) the guard around every storage call: lazy open,
 * EngineClosedError after close. An engine extends {@link BaseStore} and implements
 * six storage primitives; every write decision inside them is made by `decide` (store/rows).
 *
 * @example
 * ```ts
 * class MyStore extends BaseStore {
 *   readonly engine = 'mine';
 *   readonly capabilities = { ttl: true, sweep: true, filters: true, crossProcess: false };
 *   protected async readRow(ns, key) { ... }
 *   protected async applyOps(ops, now) { ... }   // one transaction: decide() each op, write its row
 *   ...
 * }
 * ```
 */
import type {
  AccessPolicy,
  DeleteOptions,
  ListNamespacesOptions,
  ListOverwritesOptions,
  MergeRule,
  NamespaceDeclaration,
  OverwriteRecord,
  PurgedNamespaces,
  PutOptions,
  ScopedStore,
  SearchOptions,
  Store,
  StoreCapabilities,
  StoreItem,
  StoreOp,
  StoreOpResult,
  StorePage,
  UpdateOptions,
} from '../contracts/store.js';
import { encode } from '../codec/tagged-json.js';
import { STORE_UPDATE_RETRIES } from '../defaults.js';
import { InvalidOptionError, NotSupportedError, UpdateConflictError, VersionConflictError } from '../errors.js';
import { checkStoreEntry, checkStoreKey, compareCodePoints, decodeNamespace, encodeNamespace } from '../internal/keys.js';
import { checkOptionKeys, unknownOption } from '../internal/option-keys.js';
import type { Lifecycle } from '../internal/lifecycle.js';
import { parseFilter, type Condition } from './filter.js';
import { MergeRules } from './merge-rules.js';
import { scopedStore } from './policy.js';
import { conflictIndex, decodeCursor, encodeCursor, isLive, toItem, toOverwriteRecord, type OverwriteRow, type PreparedOp, type StoredRow } from './rows.js';

/** A search as engines run it: live rows under `ns`, matching, after `after`, ordered by (ns, key) in code point order. */
export interface ScanQuery {
  /** Encoded prefix ('' for everything). */
  ns: string;
  now: number;
  conditions: Condition[];
  after: { ns: string; key: string } | null;
  offset: number;
  /** Rows to return at most, or null for all. */
  limit: number | null;
}

/** Rounds of a merge function against other writers before giving up. */
const MERGE_ROUNDS = 64;
/** About a century: a longer ttl is a mistake (or a unit error). */
const MAX_TTL_MS = 100 * 365 * 24 * 3600 * 1000;

function nonNegativeInteger(name: string, value: unknown, { positive = false, max = Number.MAX_SAFE_INTEGER } = {}): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < (positive ? 1 : 0) || value > max) {
    throw new InvalidOptionError(`${name} must be ${positive ? 'a positive' : 'a non-negative'} integer${max < Number.MAX_SAFE_INTEGER ? ` up to ${max}` : ''}, got ${String(value)}.`);
  }
  return value;
}

/** What each call takes: a misspelt `ifversion` would write unconditionally, a misspelt `limt` read everything. */
const CALL_OPTIONS = {
  search: ['filter', 'limit', 'offset', 'cursor'],
  listNamespaces: ['prefix', 'maxDepth', 'limit', 'offset'],
  listOverwrites: ['limit', 'afterId'],
  put: ['ifVersion', 'idempotencyKey', 'ttlMs'],
  delete: ['ifVersion'],
  update: ['maxRetries', 'ttlMs', 'idempotencyKey', 'onRetry'],
} as const;

/** What a batch operation of each kind holds. */
const OP_KEYS: Record<StoreOp['op'], readonly string[]> = {
  put: ['op', 'namespace', 'key', 'value', ...CALL_OPTIONS.put],
  delete: ['op', 'namespace', 'key', ...CALL_OPTIONS.delete],
  check: ['op', 'namespace', 'key', 'version'],
};

/**
 * A call's options: null reads as none given (as undefined does); anything else but an
 * object, or a key the call does not take, is InvalidOptionError.
 */
function readOptions<O extends object>(call: keyof typeof CALL_OPTIONS, options: O | null | undefined): O {
  if (options === undefined || options === null) return {} as O;
  if (typeof options !== 'object' || Array.isArray(options)) throw new InvalidOptionError(`${call}: options must be an object, got ${JSON.stringify(options) ?? String(options)}.`);
  const unknown = unknownOption(call, options, CALL_OPTIONS[call]);
  if (unknown) throw new InvalidOptionError(unknown);
  return options;
}

/** What one namespace's purge deleted: its rows (`live` of them live) and overwrite records. */
export interface NamespaceRows {
  rows: number;
  live: number;
  overwrites: number;
}

/** The store contract over six storage primitives. Engines extend it. */
export abstract class BaseStore implements Store {
  abstract readonly engine: string;
  abstract readonly capabilities: StoreCapabilities;
  private readonly rules = new MergeRules();
  private policy: AccessPolicy | null = null;

  /**
   * `lifecycle`: the engine's, shared with its checkpointer and ledger; every storage
   * primitive runs through it. A store without one keeps its own lifecycle.
   */
  constructor(protected readonly lifecycle?: Lifecycle) {}

  /** The item's row, deleted or expired ones included, or null if it never existed. */
  protected abstract readRow(ns: string, key: string): Promise<StoredRow | null>;
  /**
   * Applies `ops` in one transaction, in order: for each, read its row (as left by the
   * earlier ops, locked where concurrent writers could interleave), call `decide`, write
   * the row and overwrite record it returns. A throw (a conflict from `decide`) rolls back all.
   */
  protected abstract applyOps(ops: PreparedOp[], now: number): Promise<StoreOpResult[]>;
  protected abstract scan(query: ScanQuery): Promise<StoredRow[]>;
  /** Distinct encoded namespaces under `ns` with at least one live row, in code point order. */
  protected abstract scanNamespaces(ns: string, now: number): Promise<string[]>;
  /** Turns rows expired at `now` into tombstones; returns how many. */
  protected abstract sweep(now: number): Promise<number>;
  /**
   * Deletes the overwrite records of the stored namespace `ns` (with `under`, of every
   * namespace under the prefix `ns`); returns how many. Engines that keep overwrite
   * records implement it; the default says the engine cannot.
   */
  protected async deleteOverwrites(_ns: string, _under: boolean): Promise<number> {
    throw new NotSupportedError(`the ${this.engine} store cannot delete overwrite records.`);
  }
  /**
   * Every stored namespace, encoded: those of live rows, of tombstones and of overwrite
   * records, distinct, in code point order. Engines that can purge namespaces implement
   * it with {@link deleteNamespace}.
   */
  protected async scanStoredNamespaces(): Promise<string[]> {
    throw new NotSupportedError(`the ${this.engine} store cannot purge namespaces.`);
  }
  /**
   * Deletes, in one transaction, every row of exactly the stored namespace `ns` and its
   * overwrite records; counts the rows live at `now` apart from the others.
   */
  protected async deleteNamespace(_ns: string, _now: number): Promise<NamespaceRows> {
    throw new NotSupportedError(`the ${this.engine} store cannot purge namespaces.`);
  }
  /** Overwrite records under `ns` with an id above `afterId`, by id. */
  protected abstract readOverwrites(ns: string, afterId: number, limit: number | null): Promise<OverwriteRow[]>;

  // ---------------------------------------------------------------- configuration

  declare(prefix: string[], declaration: NamespaceDeclaration): void {
    this.rules.declare(prefix, declaration);
  }

  mergeRuleOf(namespace: string[]): MergeRule {
    return this.rules.of(namespace);
  }

  setPolicy(policy: AccessPolicy | null): void {
    if (policy !== null && typeof policy !== 'function') throw new InvalidOptionError('setPolicy() takes a function (principal, namespace, operation) => "allow" | "deny", or null.');
    this.policy = policy;
  }

  as(principal: string | null): ScopedStore {
    return scopedStore(this, () => this.policy, principal);
  }

  // ---------------------------------------------------------------- reads

  async get<T>(namespace: string[], key: string): Promise<StoreItem<T> | null> {
    const ns = encodeNamespace(namespace);
    checkStoreKey(key);
    const row = await this.io(() => this.readRow(ns, key));
    return isLive(row, Date.now()) ? toItem<T>(row) : null;
  }

  async search<T>(prefix: string[], given?: SearchOptions | null): Promise<StorePage<T>> {
    const options = readOptions('search', given);
    const ns = encodeNamespace(prefix);
    const conditions = parseFilter(options.filter);
    const limit = options.limit === undefined ? null : nonNegativeInteger('limit', options.limit, { positive: true });
    const offset = options.offset === undefined ? 0 : nonNegativeInteger('offset', options.offset);
    const after = options.cursor === undefined || options.cursor === null ? null : decodeCursor(String(options.cursor));
    // One row more than asked says whether another page exists.
    const rows = await this.io(() => this.scan({ ns, now: Date.now(), conditions, after, offset, limit: limit === null ? null : limit + 1 }));
    const page = limit === null ? rows : rows.slice(0, limit);
    const more = limit !== null && rows.length > limit;
    return { items: page.map((row) => toItem<T>(row)), cursor: more ? encodeCursor(page[page.length - 1]!) : null };
  }

  async list<T>(prefix: string[], options?: SearchOptions | null): Promise<StoreItem<T>[]> {
    return (await this.search<T>(prefix, options)).items;
  }

  async listNamespaces(given?: ListNamespacesOptions | null): Promise<string[][]> {
    const options = readOptions('listNamespaces', given);
    const ns = encodeNamespace(options.prefix ?? []);
    const depth = options.maxDepth === undefined ? null : nonNegativeInteger('maxDepth', options.maxDepth, { positive: true });
    const limit = options.limit === undefined ? null : nonNegativeInteger('limit', options.limit, { positive: true });
    const offset = options.offset === undefined ? 0 : nonNegativeInteger('offset', options.offset);
    const found: string[][] = [];
    let last: string[] | undefined;
    // Engines return encoded namespaces in order; cutting to a depth keeps that order
    // (the separator sorts below every label character), so duplicates are adjacent.
    for (const encoded of await this.io(() => this.scanNamespaces(ns, Date.now()))) {
      let labels = decodeNamespace(encoded);
      if (depth !== null && labels.length > depth) labels = labels.slice(0, depth);
      if (last && last.length === labels.length && last.every((l, i) => l === labels[i])) continue;
      found.push(labels);
      last = labels;
    }
    return found.slice(offset, limit === null ? undefined : offset + limit);
  }

  async listOverwrites(prefix: string[], given?: ListOverwritesOptions | null): Promise<OverwriteRecord[]> {
    const options = readOptions('listOverwrites', given);
    const ns = encodeNamespace(prefix);
    const limit = options.limit === undefined ? null : nonNegativeInteger('limit', options.limit, { positive: true });
    const afterId = options.afterId === undefined ? 0 : nonNegativeInteger('afterId', options.afterId);
    return (await this.io(() => this.readOverwrites(ns, afterId, limit))).map(toOverwriteRecord);
  }

  // ---------------------------------------------------------------- writes

  async put<T>(namespace: string[], key: string, value: T, given?: PutOptions | null): Promise<StoreItem<T>> {
    const options = readOptions('put', given);
    const [item] = await this.write([{ op: 'put', namespace, key, value, ...options }]);
    return item as StoreItem<T>;
  }

  async delete(namespace: string[], key: string, given?: DeleteOptions | null): Promise<boolean> {
    const options = readOptions('delete', given);
    const [existed] = await this.write([{ op: 'delete', namespace, key, ...options }]);
    return existed as boolean;
  }

  async batch(ops: StoreOp[]): Promise<StoreOpResult[]> {
    if (!Array.isArray(ops)) throw new InvalidOptionError('batch() takes an array of operations.');
    if (ops.length === 0) return [];
    return this.write(ops);
  }

  async update<T>(
    namespace: string[],
    key: string,
    fn: (current: T | undefined, item: StoreItem<T> | null) => T | Promise<T>,
    given?: UpdateOptions | null,
  ): Promise<StoreItem<T>> {
    const options = readOptions('update', given);
    const ns = encodeNamespace(namespace);
    checkStoreKey(key);
    checkStoreEntry(ns, key);
    if (typeof fn !== 'function') throw new InvalidOptionError('update() takes a function (current) => next.');
    const maxRetries = options.maxRetries === undefined ? STORE_UPDATE_RETRIES : nonNegativeInteger('maxRetries', options.maxRetries);
    for (let attempt = 0; ; attempt++) {
      const current = await this.get<T>(namespace, key);
      const next = await fn(current ? current.value : undefined, current);
      const expected = current?.version ?? 0;
      try {
        // Always a strict compare-and-set, whatever the namespace's rule: the function
        // itself is the merge, applied again to the newer value when a round is lost.
        const [item] = await this.write([{ op: 'put', namespace, key, value: next, ifVersion: expected, ...pick(options) }], true);
        return item as StoreItem<T>;
      } catch (error) {
        if (!VersionConflictError.is(error)) throw error;
        if (attempt >= maxRetries) throw new UpdateConflictError(namespace, key, attempt + 1, { engine: this.engine });
        options.onRetry?.({ attempt: attempt + 1, expected, actual: error.actual });
        await backoff(attempt + 1);
      }
    }
  }

  async sweepExpired(): Promise<number> {
    return this.io(() => this.sweep(Date.now()));
  }

  /**
   * Deletes the overwrite records `lastWins` kept for `namespace` (with `{ under: true }`,
   * for every namespace under it), values they replaced included: an erasure's, for
   * whom deleting the items is not enough. Returns how many were deleted.
   */
  async purgeOverwrites(namespace: string[], options: { under?: boolean } = {}): Promise<number> {
    const ns = encodeNamespace(namespace);
    // A misspelt `undr: true` would purge the one namespace and leave everything under it.
    checkOptionKeys('purgeOverwrites', options, ['under']);
    if (options.under !== undefined && typeof options.under !== 'boolean') throw new InvalidOptionError(`purgeOverwrites: under must be true or false, got ${JSON.stringify(options.under)}.`);
    if (ns === '' && options.under) throw new InvalidOptionError('purgeOverwrites: the empty prefix names every namespace: name one.');
    return this.io(() => this.deleteOverwrites(ns, options.under === true));
  }

  async purgeNamespaces(match: (namespace: string[]) => boolean): Promise<PurgedNamespaces> {
    if (typeof match !== 'function') throw new InvalidOptionError('purgeNamespaces() takes a function (namespace) => boolean, which says the namespaces to purge.');
    const purged: PurgedNamespaces = { namespaces: [], items: 0, tombstones: 0, overwrites: 0 };
    for (const ns of (await this.io(() => this.scanStoredNamespaces())).sort(compareCodePoints)) {
      const labels = decodeNamespace(ns);
      // cairn's own rows (artifact pins, an encrypted engine's keys) are the engine's, not the application's.
      if (labels[0] === 'cairn' || !match([...labels])) continue;
      const rows = await this.io(() => this.deleteNamespace(ns, Date.now()));
      purged.namespaces.push(labels);
      purged.items += rows.live;
      purged.tombstones += rows.rows - rows.live;
      purged.overwrites += rows.overwrites;
    }
    return purged;
  }

  /**
   * Validates and encodes `ops`, applies them in one transaction, and settles conflicts by
   * each namespace's merge rule: `lastWins` inside the transaction (it overwrites and keeps
   * a record), a merge function here (merge with the current value, try again).
   * `strict` makes every conflict a VersionConflictError (update's own loop).
   */
  private async write(ops: StoreOp[], strict = false): Promise<StoreOpResult[]> {
    const prepared = ops.map((op, i) => this.prepare(op, i, strict));
    for (let round = 1; ; round++) {
      try {
        return await this.io(() => this.applyOps(prepared, Date.now()));
      } catch (error) {
        if (!VersionConflictError.is(error) || strict) throw error;
        const index = conflictIndex.get(error as VersionConflictError);
        const op = index === undefined ? undefined : prepared[index];
        const rule = op?.kind === 'put' ? this.rules.of(op.namespace) : undefined;
        if (!op || op.kind !== 'put' || typeof rule !== 'function') throw error;
        if (round >= MERGE_ROUNDS) throw new UpdateConflictError(op.namespace, op.key, round, { engine: this.engine });
        if (round > 1) await backoff(round - 1);
        const current = await this.get(op.namespace, op.key);
        const incoming = (ops[index!] as { value: unknown }).value;
        const merged = rule(current ? current.value : undefined, incoming, { namespace: [...op.namespace], key: op.key, currentVersion: current?.version ?? 0 });
        prepared[index!] = { ...op, text: encode(merged, `merged store ${op.namespace.join('/')}/${op.key}`), ifVersion: current?.version ?? 0 };
      }
    }
  }

  /** Runs one storage primitive through the engine's lifecycle, when it has one. */
  private io<T>(fn: () => Promise<T>): Promise<T> {
    return this.lifecycle ? this.lifecycle.run(fn) : fn();
  }

  private prepare(op: StoreOp, index: number, strict: boolean): PreparedOp {
    if (typeof op !== 'object' || op === null) throw new InvalidOptionError(`batch op ${index} is not an object.`);
    // An op that is none of the three is named as such, before its namespace or key is read.
    if (!Object.hasOwn(OP_KEYS, op.op)) throw new InvalidOptionError(`batch op ${index}: unknown op ${JSON.stringify((op as { op?: unknown }).op)} (put, delete or check).`);
    const unknown = unknownOption(`batch op ${index} (${op.op})`, op, OP_KEYS[op.op]);
    if (unknown) throw new InvalidOptionError(unknown);
    const namespace = op.namespace;
    const ns = encodeNamespace(namespace);
    checkStoreKey(op.key);
    const where = `${namespace.join('/')}/${op.key}`;
    const ifVersion = (v: unknown) => (v === undefined ? undefined : nonNegativeInteger(`ifVersion of ${where}`, v));
    const copy = [...namespace];
    switch (op.op) {
      case 'check':
        return { kind: 'check', namespace: copy, ns, key: op.key, version: nonNegativeInteger(`version of check ${where}`, op.version) };
      case 'delete':
        return { kind: 'delete', namespace: copy, ns, key: op.key, ifVersion: ifVersion(op.ifVersion), onConflict: !strict && this.rules.of(namespace) === 'lastWins' ? 'overwrite' : 'reject' };
      case 'put': {
        checkStoreEntry(ns, op.key);
        if (op.idempotencyKey !== undefined && (typeof op.idempotencyKey !== 'string' || op.idempotencyKey === '')) {
          throw new InvalidOptionError(`idempotencyKey of ${where} must be a non-empty string.`);
        }
        return {
          kind: 'put',
          namespace: copy,
          ns,
          key: op.key,
          text: encode(op.value, `store ${where}`),
          ifVersion: ifVersion(op.ifVersion),
          idempotencyKey: op.idempotencyKey ?? null,
          ttlMs: op.ttlMs === undefined ? null : nonNegativeInteger(`ttlMs of ${where}`, op.ttlMs, { positive: true, max: MAX_TTL_MS }),
          onConflict: !strict && this.rules.of(namespace) === 'lastWins' ? 'overwrite' : 'reject',
        };
      }
    }
  }
}

/**
 * A random pause before round `lost + 1`, growing with each lost round (up to ~50 ms).
 * Without it two tight loops can fall into step, the same one always reading just
 * before the other commits and losing every round (seen on PostgreSQL: 65 in a row).
 */
export function backoff(lost: number): Promise<void> {
  const ms = Math.random() * Math.min(50, 2 ** (lost - 1));
  return new Promise((resolve) => (ms < 1 ? setImmediate(resolve) : setTimeout(resolve, ms)));
}

function pick(options: UpdateOptions): Pick<PutOptions, 'ttlMs' | 'idempotencyKey'> {
  return {
    ...(options.ttlMs !== undefined ? { ttlMs: options.ttlMs } : {}),
    ...(options.idempotencyKey !== undefined ? { idempotencyKey: options.idempotencyKey } : {}),
  };
}
