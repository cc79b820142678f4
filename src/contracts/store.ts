/**
 * @module contracts/store
 * Cross-thread durable data: JSON values under a namespace (`string[]`) and a key,
 * each with a version that grows by one on every write. Stores outlive runs: user
 * preferences, learned facts, shared knowledge read and written by many threads
 * and many workers at once.
 *
 * Contract (every engine; {@link BaseStore} implements the parts that do not touch storage):
 * - **Atomicity.** Every call is atomic: `put`, `delete` and each `update` round are one
 *   transaction; `batch` applies all of its operations in one transaction or none of them.
 * - **Versions** start at 1 and grow by one per write; they never go backwards, not even
 *   across a delete or an expiry (the next write after either continues the count).
 * - **Compare-and-set.** `ifVersion` makes a write conditional on the version the writer
 *   read (0: "absent"). A mismatch is a *conflict*: the namespace's declared
 *   {@link MergeRule} decides — `reject` (the default) raises {@link VersionConflictError}
 *   and changes nothing; `lastWins` writes anyway and keeps an {@link OverwriteRecord} of the
 *   value it replaced; a merge function combines the two values. A write without
 *   `ifVersion` is an unconditional overwrite the caller asked for, not a conflict.
 *   `update` is a compare-and-set loop and never loses a concurrent write.
 * - **Idempotency.** A `put` whose `idempotencyKey` equals the key of the item's last write
 *   returns the item unchanged: a write retried after a crash does not apply twice.
 * - **Expiry.** An item written with `ttlMs` reads as absent once that time has passed
 *   (get, search, listNamespaces, `ifVersion`), whether or not `sweepExpired()` has run.
 *   Expiry compares the clocks of the processes involved (`Date.now()`).
 * - **Ordering.** `search`, `list` and `listNamespaces` return namespaces then keys in
 *   Unicode code point order (the byte order of their UTF-8), the same on every engine, so
 *   paging is stable. Prefixes are bounded at label boundaries: `["tenant","acme"]` never
 *   matches `["tenant","acme-corp"]`.
 * - **Validation before storage.** Namespaces, keys, values, filters and options are
 *   checked before anything is touched ({@link InvalidKeyError}, {@link UnencodableValueError},
 *   {@link ValueTooDeepError} for a value nested deeper than `MAX_VALUE_DEPTH`,
 *   {@link InvalidFilterError}, {@link InvalidOptionError}); nothing is written on a failure.
 * - **Access.** The store itself is trusted; `store.as(principal)` gives a view on which
 *   every call is first checked by the store's {@link AccessPolicy}. A denied call raises
 *   {@link AccessDeniedError} and touches nothing. Nodes of a run get such a view, whose
 *   principal is the thread's tenant.
 *
 * @example
 * ```ts
 * const store = engine.store;
 * store.declare(['prefs'], { merge: 'lastWins' });
 * await store.put(['prefs', 'u42'], 'theme', { mode: 'dark' }, { ttlMs: 86_400_000 });
 * await store.update(['counters'], 'visits', (n = 0) => n + 1);
 * const page = await store.search(['prefs'], { filter: { mode: { $in: ['dark', 'dim'] } }, limit: 50 });
 * ```
 */

/** One stored item, as read. */
export interface StoreItem<T = unknown> {
  namespace: string[];
  key: string;
  value: T;
  /** 1 on the first write, +1 on every write; never goes backwards. */
  version: number;
  createdAt: number;
  updatedAt: number;
  /** When the item starts reading as absent (ms since the epoch), or null if it never expires. */
  expiresAt: number | null;
}

/** Options of {@link StoreApi.put}. */
export interface PutOptions {
  /** Write only if the item is at this version (0: only if absent). A mismatch goes to the namespace's merge rule. */
  ifVersion?: number;
  /** Makes the write idempotent: repeating the item's last write with the same key is a no-op. */
  idempotencyKey?: string;
  /** Lifetime of this write, ms from now (a positive integer). Omitted: the item never expires. */
  ttlMs?: number;
}

/** Options of {@link StoreApi.delete}. */
export interface DeleteOptions {
  /** Delete only if the item is at this version (0: only if absent, which deletes nothing). */
  ifVersion?: number;
}

/** Options of {@link StoreApi.update}. */
export interface UpdateOptions {
  /** Compare-and-set rounds lost to other writers before {@link UpdateConflictError}. Default 64. */
  maxRetries?: number;
  /** Lifetime of the written value, ms (as in put). */
  ttlMs?: number;
  /** Idempotency key of the final write (as in put). */
  idempotencyKey?: string;
  /** Called each time a round lost to another writer, before the function runs again. */
  onRetry?: (info: { attempt: number; expected: number; actual: number }) => void;
}

/** A scalar a filter compares with. */
export type FilterScalar = string | number | boolean | null;

/**
 * Operators on one JSON path. Several operators on one path must all hold.
 * - `$eq` / `$ne`: equal (same JSON type and value) / not equal (a missing path is "not equal").
 * - `$gt $gte $lt $lte`: number with number, string with string (code point order); any other type never matches.
 * - `$in`: equal to one of the listed scalars (at most 100).
 * - `$exists`: the path is present (its value may be null) / absent.
 */
export interface FilterOperators {
  $eq?: FilterScalar;
  $ne?: FilterScalar;
  $gt?: string | number;
  $gte?: string | number;
  $lt?: string | number;
  $lte?: string | number;
  $in?: FilterScalar[];
  $exists?: boolean;
}

/**
 * Conditions on the stored JSON value, all of which must hold. Keys are paths of
 * object fields joined by dots (`"profile.city"`; each label `[A-Za-z_][A-Za-z0-9_]*`,
 * at most 16 of them); a bare scalar means `$eq`. Values are compared as stored:
 * tagged values (Date, BigInt, Map...) are objects and match no scalar operator.
 * Paths and values are always bound as query parameters, never spliced into SQL.
 */
export type StoreFilter = Record<string, FilterScalar | FilterOperators>;

/** Options of {@link StoreApi.search} and {@link StoreApi.list}. */
export interface SearchOptions {
  filter?: StoreFilter;
  /** Items per page (a positive integer). Default: all of them. */
  limit?: number;
  /** Items to skip (after the cursor, if any). Default 0. */
  offset?: number;
  /** Where the previous page ended: its `cursor`. */
  cursor?: string | null;
}

/** One page of items. */
export interface StorePage<T = unknown> {
  items: StoreItem<T>[];
  /** Pass as `cursor` for the next page; null when there is none. */
  cursor: string | null;
}

/** Options of {@link StoreApi.listNamespaces}. */
export interface ListNamespacesOptions {
  /** Only namespaces under this prefix (label-bounded). Default: all. */
  prefix?: string[];
  /** Cut longer namespaces to their first `maxDepth` labels (deduplicated). */
  maxDepth?: number;
  limit?: number;
  offset?: number;
}

/** One operation of a {@link StoreApi.batch}. */
export type StoreOp =
  | { op: 'put'; namespace: string[]; key: string; value: unknown; ifVersion?: number; idempotencyKey?: string; ttlMs?: number }
  | { op: 'delete'; namespace: string[]; key: string; ifVersion?: number }
  /** Asserts that the item is at `version` (0: absent); a mismatch fails the batch with VersionConflictError. */
  | { op: 'check'; namespace: string[]; key: string; version: number };

/** Result of one batch operation, by position: put → the item, delete → whether it existed, check → null. */
export type StoreOpResult = StoreItem | boolean | null;

/** What a `lastWins` write replaced: kept by the store, read with {@link StoreApi.listOverwrites}. */
export interface OverwriteRecord {
  /** Increasing id, the order of the overwrites. */
  id: number;
  namespace: string[];
  key: string;
  operation: 'put' | 'delete';
  /** The version the writer expected (its `ifVersion`). */
  expectedVersion: number;
  /** The item as it was before the overwrite, or null if it was absent. */
  overwritten: { value: unknown; version: number; updatedAt: number } | null;
  /** Version of the item after the write (for a delete: the version it was deleted at). */
  version: number;
  at: number;
}

/** Options of {@link StoreApi.listOverwrites}. */
export interface ListOverwritesOptions {
  limit?: number;
  /** Only records with an id above this one (paging). */
  afterId?: number;
}

/**
 * Combines a conflicting write with the current value: `current` is what the store
 * holds (undefined if absent), `incoming` what the writer meant to write. Must be pure:
 * it may run several times under contention.
 */
export type MergeFunction<T = any> = (current: T | undefined, incoming: T, info: { namespace: string[]; key: string; currentVersion: number }) => T;

/** `reject` (default): a conflicting write raises VersionConflictError. `lastWins`: it wins and the replaced value is kept. Or a merge function. */
export type MergeRule = 'reject' | 'lastWins' | MergeFunction;

/** What a namespace prefix declares. */
export interface NamespaceDeclaration {
  merge: MergeRule;
}

/** What a principal asks to do. `check` ops of a batch count as `get`; `update` asks for `get` and `put`. */
export type StoreOperation = 'get' | 'put' | 'delete' | 'search' | 'listNamespaces' | 'listOverwrites' | 'sweep';

/**
 * Decides whether `principal` may do `operation` on `namespace` (for searches and listings:
 * the prefix asked for). Must be synchronous and pure.
 */
export type AccessPolicy = (principal: string | null, namespace: readonly string[], operation: StoreOperation) => 'allow' | 'deny';

/** What an engine supports; the conformance suite runs the tests of what is declared. */
export interface StoreCapabilities {
  /** `ttlMs` is honoured: expired items read as absent. */
  ttl: boolean;
  /** `sweepExpired()` removes expired items. */
  sweep: boolean;
  /** `search` accepts value filters. */
  filters: boolean;
  /** Writers in other processes share the data, and compare-and-set holds across them. */
  crossProcess: boolean;
}

/** The data operations: the same on the store and on a principal's view of it. */
export interface StoreApi {
  /** The item, or null if absent, deleted or expired. */
  get<T = unknown>(namespace: string[], key: string): Promise<StoreItem<T> | null>;
  /**
   * Writes the item. With `ifVersion`, a mismatch is a conflict settled by the namespace's
   * merge rule (default: VersionConflictError, nothing changes).
   */
  put<T = unknown>(namespace: string[], key: string, value: T, options?: PutOptions): Promise<StoreItem<T>>;
  /**
   * Compare-and-set loop: reads the item, calls `fn(current value | undefined, item | null)`,
   * writes the result if the item is still at the version read, and otherwise starts
   * again with the newer value. Never loses a concurrent write, whatever the merge rule;
   * raises {@link UpdateConflictError} after `maxRetries` lost rounds.
   */
  update<T = unknown>(namespace: string[], key: string, fn: (current: T | undefined, item: StoreItem<T> | null) => T | Promise<T>, options?: UpdateOptions): Promise<StoreItem<T>>;
  /** Deletes the item; true if it existed. `ifVersion` as in put (a `lastWins` namespace deletes anyway and keeps the replaced value). */
  delete(namespace: string[], key: string, options?: DeleteOptions): Promise<boolean>;
  /** Items under `prefix` matching `filter`, in namespace-then-key order, one page at a time. */
  search<T = unknown>(prefix: string[], options?: SearchOptions): Promise<StorePage<T>>;
  /** `search(...).items`: the items of one page. */
  list<T = unknown>(prefix: string[], options?: SearchOptions): Promise<StoreItem<T>[]>;
  /** Namespaces holding at least one live item, in order, optionally cut to `maxDepth` labels. */
  listNamespaces(options?: ListNamespacesOptions): Promise<string[][]>;
  /** Applies every operation in one transaction, in order (a later op sees an earlier one), or none of them. */
  batch(ops: StoreOp[]): Promise<StoreOpResult[]>;
  /** Turns every expired item into a tombstone (its version kept); returns how many. */
  sweepExpired(): Promise<number>;
  /** Overwrites kept by `lastWins` namespaces under `prefix`, oldest first. */
  listOverwrites(prefix: string[], options?: ListOverwritesOptions): Promise<OverwriteRecord[]>;
  /**
   * Deletes the overwrite records of `namespace` (with `under`, of every namespace under
   * it), the values they kept included; returns how many. Erasure uses it: stores that
   * keep no overwrite records, or cannot delete them, leave it out.
   */
  purgeOverwrites?(namespace: string[], options?: { under?: boolean }): Promise<number>;
}

/** What {@link Store.purgeNamespaces} deleted. */
export interface PurgedNamespaces {
  /** The namespaces purged, in order. */
  namespaces: string[][];
  /** Live items deleted. */
  items: number;
  /** Rows of deleted and expired items deleted: the tombstones that kept their namespace, key and version. */
  tombstones: number;
  /** Overwrite records deleted, the values they kept included. */
  overwrites: number;
}

/** A principal's view of a store: every call is checked by the store's access policy first. */
export interface ScopedStore extends StoreApi {
  readonly principal: string | null;
}

/**
 * Cross-thread durable key-value data in namespaces: versioned items, compare-and-set,
 * declared merge rules, expiry, search. The same contract on every engine.
 */
export interface Store extends StoreApi {
  readonly engine: string;
  readonly capabilities: StoreCapabilities;
  /**
   * Declares the merge rule of every namespace under `prefix` (the longest declared
   * prefix wins; `[]` sets the default). Declarations live in this process: declare the
   * same rules in every process that writes.
   */
  declare(prefix: string[], declaration: NamespaceDeclaration): void;
  /** The merge rule that applies to `namespace`. */
  mergeRuleOf(namespace: string[]): MergeRule;
  /** Sets (or with null removes) the policy that views from {@link Store.as} enforce. Without one, views allow everything. */
  setPolicy(policy: AccessPolicy | null): void;
  /** A view acting as `principal` (null: anonymous), checked by the policy on every call. */
  as(principal: string | null): ScopedStore;
  /**
   * Deletes for good every row of each stored namespace `match` accepts: its live items,
   * the tombstones that deleted and expired items leave (which keep the namespace, the key
   * and the version), and the overwrite records kept for it. Nothing of the namespace is
   * left, so a key written again starts at version 1. `match` sees every namespace that
   * holds a row or an overwrite record, those with no live item included; cairn's own
   * (first label `cairn`) never. Each namespace goes in one transaction. Erasure uses it;
   * a store that cannot leaves it out.
   */
  purgeNamespaces?(match: (namespace: string[]) => boolean): Promise<PurgedNamespaces>;
}
