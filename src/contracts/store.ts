/**
 * @module contracts/store
 * Cross-thread durable key-value data in namespaces (`string[]`), each item with
 * a version that increases by one on every write.
 *
 * Contract:
 * - `put` with `ifVersion` writes only if the current version equals it (0 means
 *   "absent"); otherwise {@link VersionConflictError} and nothing changes.
 * - `put` with `idempotencyKey` equal to the key of the item's last write returns the
 *   item unchanged: a retried write (after a crash) never applies twice.
 * - Each call is atomic; versions never go backwards, even across deletes.
 */

export interface StoreItem<T = unknown> {
  namespace: string[];
  key: string;
  value: T;
  version: number;
  createdAt: number;
  updatedAt: number;
}

export interface PutOptions {
  /** Write only if the item is at this version (0: only if absent). */
  ifVersion?: number;
  /** Makes the write idempotent: repeating the item's last write with the same key is a no-op. */
  idempotencyKey?: string;
}

export interface Store {
  readonly engine: string;
  get<T = unknown>(namespace: string[], key: string): Promise<StoreItem<T> | null>;
  put<T = unknown>(namespace: string[], key: string, value: T, options?: PutOptions): Promise<StoreItem<T>>;
  /** Deletes the item; true if it existed. `ifVersion` as in put. */
  delete(namespace: string[], key: string, options?: { ifVersion?: number }): Promise<boolean>;
  /** Items whose namespace starts with `prefix` (label by label), ordered by namespace then key. */
  list(prefix: string[], options?: { limit?: number }): Promise<StoreItem[]>;
}
