/**
 * @module engines/memory/memory-store
 * The cross-thread store in process memory.
 */
import type { PutOptions, Store, StoreItem } from '../../contracts/store.js';
import { decode, encode } from '../../codec/tagged-json.js';
import { VersionConflictError } from '../../errors.js';
import { checkStoreKey, decodeNamespace, encodeNamespace } from '../../internal/keys.js';
import type { Lifecycle } from '../../internal/lifecycle.js';

interface Row {
  ns: string;
  key: string;
  /** Encoded value: the store keeps copies, never the caller's objects. */
  value: string;
  version: number;
  lastWriteKey: string | null;
  createdAt: number;
  updatedAt: number;
}

export class MemoryStore implements Store {
  readonly engine = 'memory';
  private readonly rows = new Map<string, Row>();
  /** Last version of deleted items, so versions never go backwards. */
  private readonly tombstones = new Map<string, number>();

  constructor(private readonly lifecycle: Lifecycle) {}

  private id(ns: string, key: string): string {
    this.lifecycle.assertOpen();
    return `${ns}\u0000${key}`;
  }

  async get<T>(namespace: string[], key: string): Promise<StoreItem<T> | null> {
    const ns = encodeNamespace(namespace);
    checkStoreKey(key);
    const row = this.rows.get(this.id(ns, key));
    return row ? toItem<T>(row) : null;
  }

  async put<T>(namespace: string[], key: string, value: T, options: PutOptions = {}): Promise<StoreItem<T>> {
    const ns = encodeNamespace(namespace);
    checkStoreKey(key);
    const text = encode(value, `store ${namespace.join('/')}/${key}`);
    const id = this.id(ns, key);
    const row = this.rows.get(id);
    if (row && options.idempotencyKey !== undefined && row.lastWriteKey === options.idempotencyKey) return toItem<T>(row);
    const current = row?.version ?? 0;
    if (options.ifVersion !== undefined && options.ifVersion !== current) {
      throw new VersionConflictError(namespace, key, options.ifVersion, current, { engine: this.engine });
    }
    const now = Date.now();
    const next: Row = {
      ns,
      key,
      value: text,
      version: Math.max(current, this.tombstones.get(id) ?? 0) + 1,
      lastWriteKey: options.idempotencyKey ?? null,
      createdAt: row?.createdAt ?? now,
      updatedAt: now,
    };
    this.rows.set(id, next);
    return toItem<T>(next);
  }

  async delete(namespace: string[], key: string, options: { ifVersion?: number } = {}): Promise<boolean> {
    const ns = encodeNamespace(namespace);
    checkStoreKey(key);
    const id = this.id(ns, key);
    const row = this.rows.get(id);
    if (options.ifVersion !== undefined && options.ifVersion !== (row?.version ?? 0)) {
      throw new VersionConflictError(namespace, key, options.ifVersion, row?.version ?? 0, { engine: this.engine });
    }
    if (!row) return false;
    this.rows.delete(id);
    this.tombstones.set(id, row.version);
    return true;
  }

  async list(prefix: string[], options: { limit?: number } = {}): Promise<StoreItem[]> {
    const ns = encodeNamespace(prefix);
    this.lifecycle.assertOpen();
    return [...this.rows.values()]
      .filter((r) => r.ns.startsWith(ns))
      .sort((a, b) => (a.ns === b.ns ? (a.key < b.key ? -1 : 1) : a.ns < b.ns ? -1 : 1))
      .slice(0, options.limit ?? Infinity)
      .map((r) => toItem(r));
  }

  clear(): void {
    this.rows.clear();
  }
}

function toItem<T>(row: Row): StoreItem<T> {
  return {
    namespace: decodeNamespace(row.ns),
    key: row.key,
    value: decode<T>(row.value),
    version: row.version,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
  };
}
