/**
 * @module runtime/node-store
 * `ctx.store`: the store as one task of a step sees it. Reads are direct and may ask
 * to be validated at commit; writes are effects of the task (idempotent by key, under
 * the side-effect invariant) applied in one store transaction together with a check
 * that every validated read is still current, so nothing lands on a stale read.
 */
import type { ListNamespacesOptions, ScopedStore, SearchOptions, Store, StoreApi, StoreItem, StoreOp, StorePage } from '../contracts/store.js';
import { STORE_UPDATE_RETRIES } from '../defaults.js';
import { InvalidOptionError, StaleReadError, UpdateConflictError, VersionConflictError, type ErrorPlace } from '../errors.js';
import { unknownOption } from '../internal/option-keys.js';
import { backoff } from '../store/base-store.js';
import type { EffectSpec } from './effects.js';

/** A read a step asked to validate at commit: the version it saw (0: absent). */
export interface ValidatedRead {
  namespace: string[];
  key: string;
  version: number;
}

/** Options of a write from a node. */
export interface NodeWriteOptions {
  /**
   * The version the write is based on (0: absent). Default: the version this task last
   * read of the item, if it read it (so read-modify-write is a compare-and-set and a
   * concurrent writer is settled by the namespace's merge rule, never silently lost);
   * otherwise none. `'any'`: overwrite whatever is there.
   */
  ifVersion?: number | 'any';
  /** Idempotency key of the write (an effect key). Default: derived from the step and call index. */
  idempotencyKey?: string;
}

/**
 * Store access inside a node, as the thread's tenant (the store's access policy applies).
 *
 * Reads are direct. `get(..., { validateAtCommit: true })` records the version read: if
 * another writer changes the item before the step commits, the step runs again on
 * fresh data (bounded, then StaleReadLimitError), so nothing is committed on a stale read.
 *
 * Writes are effects under the side-effect invariant (idempotent by key: a crash neither
 * applies one twice nor loses it), and each is applied together with a check that every
 * validated read is still current, in one store transaction. A write that already landed
 * in an earlier execution of the step is not repeated when the step runs again.
 */
export interface NodeStore {
  /** The principal the policy sees: the thread's tenant (null without one). */
  readonly principal: string | null;
  get<T = unknown>(namespace: string[], key: string, options?: { validateAtCommit?: boolean }): Promise<StoreItem<T> | null>;
  search<T = unknown>(prefix: string[], options?: SearchOptions): Promise<StorePage<T>>;
  listNamespaces(options?: ListNamespacesOptions): Promise<string[][]>;
  put<T = unknown>(namespace: string[], key: string, value: T, options?: NodeWriteOptions & { ttlMs?: number }): Promise<StoreItem<T>>;
  delete(namespace: string[], key: string, options?: NodeWriteOptions): Promise<boolean>;
  /** A compare-and-set loop (as Store.update) run as one effect; `fn` must be pure. */
  update<T = unknown>(
    namespace: string[],
    key: string,
    fn: (current: T | undefined, item: StoreItem<T> | null) => T | Promise<T>,
    options?: { maxRetries?: number; ttlMs?: number; idempotencyKey?: string },
  ): Promise<StoreItem<T>>;
}

/** Runs one effect of the task the view belongs to (`ctx.effect`). */
export type TaskEffect = <T>(name: string, spec: EffectSpec<T>) => Promise<T>;

/**
 * What each `ctx.store` call takes. Another key is refused, not ignored, as the store's
 * own calls refuse it: a misspelt `validateAtcommit` would let the step commit on a
 * stale read, `ttlMS` would keep the item forever, `ifversion` would write over a
 * version the caller meant to check.
 */
const NODE_CALL_OPTIONS = {
  get: ['validateAtCommit'],
  put: ['ifVersion', 'idempotencyKey', 'ttlMs'],
  delete: ['ifVersion', 'idempotencyKey'],
  update: ['maxRetries', 'ttlMs', 'idempotencyKey'],
} as const;

/**
 * A `ctx.store` call's options: undefined and null read as none (as on the store);
 * anything but an object, a key the call does not take, or a malformed
 * `validateAtCommit` / `maxRetries` is InvalidOptionError, before anything is read or
 * written (a CairnError: the step is not retried over it).
 */
function readNodeOptions<O extends object>(call: keyof typeof NODE_CALL_OPTIONS, options: O | null | undefined, place: ErrorPlace): O {
  if (options === undefined || options === null) return {} as O;
  const where = `ctx.store.${call}`;
  if (typeof options !== 'object' || Array.isArray(options)) throw new InvalidOptionError(`${where}: options must be an object, got ${JSON.stringify(options) ?? String(options)}.`, { place });
  const unknown = unknownOption(where, options, NODE_CALL_OPTIONS[call]);
  if (unknown) throw new InvalidOptionError(unknown, { place });
  const { validateAtCommit, maxRetries } = options as { validateAtCommit?: unknown; maxRetries?: unknown };
  if (validateAtCommit !== undefined && typeof validateAtCommit !== 'boolean') {
    throw new InvalidOptionError(`${where}: validateAtCommit must be true or false, got ${JSON.stringify(validateAtCommit) ?? String(validateAtCommit)}.`, { place });
  }
  if (maxRetries !== undefined && (typeof maxRetries !== 'number' || !Number.isSafeInteger(maxRetries) || maxRetries < 0)) {
    throw new InvalidOptionError(`${where}: maxRetries must be a non-negative integer, got ${String(maxRetries)}.`, { place });
  }
  return options;
}

/** One task's view of the store (see {@link NodeStore}); the runtime reads back its validated reads. */
export class TaskStore implements NodeStore {
  readonly principal: string | null;
  private readonly view: ScopedStore | Store;
  /** Version this task last saw of each store item (read or written): the default ifVersion of its writes. */
  private readonly seen = new Map<string, number>();
  /** Reads made with validateAtCommit, by item. */
  private readonly validated = new Map<string, ValidatedRead>();

  /**
   * `principal`: whose view the policy checks (the thread's tenant, or null);
   * undefined for the store itself (replay).
   */
  constructor(
    store: Store,
    principal: string | null | undefined,
    private readonly effect: TaskEffect,
    private readonly place: ErrorPlace,
  ) {
    this.principal = principal ?? null;
    this.view = principal === undefined ? store : store.as(principal);
    // Nodes may pass `ctx.store.put` around on its own: the methods keep their view.
    for (const method of ['get', 'search', 'listNamespaces', 'put', 'delete', 'update'] as const) {
      (this as Record<string, unknown>)[method] = (this[method] as (...args: unknown[]) => unknown).bind(this);
    }
  }

  /** Reads made with validateAtCommit, at the versions seen (or last written by this task). */
  validatedReads(): ValidatedRead[] {
    return [...this.validated.values()].map((r) => ({ namespace: [...r.namespace], key: r.key, version: r.version }));
  }

  async get<T>(namespace: string[], key: string, given?: { validateAtCommit?: boolean } | null): Promise<StoreItem<T> | null> {
    const options = readNodeOptions('get', given, this.place);
    const item = await this.view.get<T>(namespace, key);
    const id = itemId(namespace, key);
    const version = item?.version ?? 0;
    this.seen.set(id, version);
    const earlier = this.validated.get(id);
    // Two reads of one item disagree: the first one is already stale.
    if (earlier && earlier.version !== version) throw new StaleReadError(earlier.namespace, key, earlier.version, version, this.place);
    if (options.validateAtCommit && !earlier) this.validated.set(id, { namespace: [...namespace], key, version });
    return item;
  }

  search<T>(prefix: string[], options?: SearchOptions): Promise<StorePage<T>> {
    return this.view.search<T>(prefix, options);
  }

  listNamespaces(options?: ListNamespacesOptions): Promise<string[][]> {
    return this.view.listNamespaces(options);
  }

  async put<T>(namespace: string[], key: string, value: T, given?: (NodeWriteOptions & { ttlMs?: number }) | null): Promise<StoreItem<T>> {
    const options = readNodeOptions('put', given, this.place);
    const ifVersion = this.basis(namespace, key, options);
    return this.write(
      'put',
      namespace,
      key,
      options,
      async (idempotencyKey) =>
        (await this.guardedWrite({
          op: 'put',
          namespace,
          key,
          value,
          idempotencyKey,
          ...(ifVersion !== undefined ? { ifVersion } : {}),
          ...(options.ttlMs !== undefined ? { ttlMs: options.ttlMs } : {}),
        })) as StoreItem<T>,
      (item) => item.version,
    );
  }

  async delete(namespace: string[], key: string, given?: NodeWriteOptions | null): Promise<boolean> {
    const options = readNodeOptions('delete', given, this.place);
    const ifVersion = this.basis(namespace, key, options);
    return this.write(
      'delete',
      namespace,
      key,
      options,
      async () => {
        try {
          return (await this.guardedWrite({ op: 'delete', namespace, key, ...(ifVersion !== undefined ? { ifVersion } : {}) })) as boolean;
        } catch (error) {
          // Already absent (this delete landed before a crash, or another writer's did):
          // what the delete asked for holds.
          if (VersionConflictError.is(error) && error.actual === 0 && itemId(error.namespace, error.key) === itemId(namespace, key)) return false;
          throw error;
        }
      },
      () => 0,
    );
  }

  async update<T>(
    namespace: string[],
    key: string,
    fn: (current: T | undefined, item: StoreItem<T> | null) => T | Promise<T>,
    given?: { maxRetries?: number; ttlMs?: number; idempotencyKey?: string } | null,
  ): Promise<StoreItem<T>> {
    const options = readNodeOptions('update', given, this.place);
    return this.write(
      'update',
      namespace,
      key,
      options,
      async (idempotencyKey) => {
        const maxRetries = options.maxRetries ?? STORE_UPDATE_RETRIES;
        for (let attempt = 0; ; attempt++) {
          const current = await this.view.get<T>(namespace, key);
          const next = await fn(current ? current.value : undefined, current);
          const expected = current?.version ?? 0;
          try {
            // The check makes this round a strict compare-and-set even in a lastWins
            // namespace: the function is the merge.
            const op: StoreOp = { op: 'put', namespace, key, value: next, ifVersion: expected, idempotencyKey, ...(options.ttlMs !== undefined ? { ttlMs: options.ttlMs } : {}) };
            return (await this.guardedWrite(op, { op: 'check', namespace, key, version: expected })) as StoreItem<T>;
          } catch (error) {
            if (!VersionConflictError.is(error)) throw error;
            if (attempt >= maxRetries) throw new UpdateConflictError(namespace, key, attempt + 1, this.place);
            await backoff(attempt + 1);
          }
        }
      },
      (item) => item.version,
    );
  }

  /** The version a write builds on: the caller's, or the one this task last saw (none for `'any'`). */
  private basis(namespace: string[], key: string, options: NodeWriteOptions): number | undefined {
    return options.ifVersion === 'any' ? undefined : (options.ifVersion ?? this.seen.get(itemId(namespace, key)));
  }

  /** Runs a write as an effect and keeps what it wrote as this task's view of the item. */
  private async write<R>(
    verb: string,
    namespace: string[],
    key: string,
    options: NodeWriteOptions,
    run: (idempotencyKey: string) => Promise<R>,
    version: (result: R) => number,
  ): Promise<R> {
    let executed = false;
    const result = await this.effect(`store.${verb} ${namespace.join('/')}/${key}`, {
      ...(options.idempotencyKey !== undefined ? { idempotencyKey: options.idempotencyKey } : {}),
      // The value is not an argument: a step re-run on fresh data may compute another
      // one, under the same key, for a write that never landed (its batch failed).
      args: { op: verb, namespace, key },
      run: async (idempotencyKey) => {
        executed = true;
        return run(idempotencyKey);
      },
    });
    // A write served from the ledger landed in an earlier execution: what this execution
    // read since is newer, so it stays the reference.
    if (executed) this.noteWrite(namespace, key, version(result));
    return result;
  }

  /**
   * Applies `op` in one store transaction with a check of every validated read (and
   * `own`, a check of the op's item), so a write never lands on a stale read. A failed
   * validated check is a StaleReadError; any other conflict is the op's own.
   */
  private async guardedWrite(op: StoreOp, own?: StoreOp): Promise<unknown> {
    const view: StoreApi = this.view;
    const checks: StoreOp[] = [...this.validated.values()].map((r) => ({ op: 'check', namespace: r.namespace, key: r.key, version: r.version }));
    try {
      const results = await view.batch([...checks, ...(own ? [own] : []), op]);
      return results[results.length - 1];
    } catch (error) {
      if (VersionConflictError.is(error)) {
        const read = this.validated.get(itemId(error.namespace, error.key));
        if (read && read.version === error.expected) throw new StaleReadError(read.namespace, read.key, read.version, error.actual, this.place);
      }
      throw error;
    }
  }

  /** After this execution wrote an item: later writes build on that version, and its validated read moves with it. */
  private noteWrite(namespace: string[], key: string, version: number): void {
    const id = itemId(namespace, key);
    this.seen.set(id, version);
    const read = this.validated.get(id);
    if (read) read.version = version;
  }
}

function itemId(namespace: readonly string[], key: string): string {
  return JSON.stringify([namespace, key]);
}

/**
 * The first of `reads` that is no longer current in `store` (as StaleReadError), or null.
 * The runtime asks just before a step commits.
 */
export async function findStaleRead(store: Store, reads: readonly ValidatedRead[], place?: ErrorPlace): Promise<StaleReadError | null> {
  for (const read of reads) {
    const actual = (await store.get(read.namespace, read.key))?.version ?? 0;
    if (actual !== read.version) return new StaleReadError(read.namespace, read.key, read.version, actual, place);
  }
  return null;
}
