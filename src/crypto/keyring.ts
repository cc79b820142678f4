/**
 * @module crypto/keyring
 * The data keys of every scope, kept wrapped in the engine's own store (so they move
 * with the database and commit like any store row) and in the clear only in this
 * process's memory, for a bounded time.
 *
 * A scope is what one erasure destroys: `tenant:<tenant>` for a tenant's threads,
 * `thread:<id>` for a thread without a tenant, or what the application names. Each
 * scope has a current data key for new writes; rotating it makes a new one current
 * while rows sealed with older ones keep opening (each row names its key). The data
 * keys are wrapped by the {@link KeyProvider}'s key-encryption key of their scope;
 * rotating that re-wraps the data keys only (a few small rows), never the data.
 *
 * A tenant scope's rows are the tenant's (see `key-rows.ts` for the layout): under
 * PostgreSQL row-level security another tenant's connection can neither read, change
 * nor delete them. Rows written before that (shared, keyed by the key id) keep
 * opening; {@link Keyring.rewrap} moves them into the tenant's rows. Rows are written
 * with compare-and-set, so two processes creating a scope's first key agree on one.
 */
import { randomBytes } from 'node:crypto';
import type { Store, StorePage } from '../contracts/store.js';
import { KeyUnavailableError, VersionConflictError } from '../errors.js';
import type { DataKey } from './envelope.js';
import type { KeyProvider, WrappedKey } from './key-provider.js';
import {
  CURRENT_KEY_NS,
  DATA_KEYS_NS,
  TENANT_KEYS_NS,
  keyIdOf,
  keyRowKey,
  newKeyId,
  ownerOf,
  scopeOfTenant,
  sharedCurrentKey,
  tagOf,
  tenantKeysRowKey,
  tenantTag,
  type TenantKeysRow,
} from './key-rows.js';
import type { KeyringApi } from './scopes.js';

export { CURRENT_KEY_NS, DATA_KEYS_NS, TENANT_KEYS_NS } from './key-rows.js';

/** A data key's stored row. */
export interface DataKeyRow extends WrappedKey {
  scope: string;
  createdAt: number;
}

interface CurrentKeyRow {
  scope: string;
  keyId: string;
}

/** A scope's current-key row as read: the tenant's own, or a shared one. */
interface CurrentPointer {
  keyId: string;
  version: number;
  /** The tenant's row of `['cairn', 'tenant-keys']` (its legacy list comes along on rotation). */
  owned: TenantKeysRow | null;
}

/** A data key row with where it is stored. */
interface StoredKeyRow {
  id: string;
  storeKey: string;
  row: DataKeyRow;
}

/** How long a data key stays in the clear in this process after it was last fetched. */
const CLEAR_KEY_TTL_MS = 60_000;

/** The promise of `make()` under `key` in `pending` while it runs: callers at the same time share one. */
function shared<T>(pending: Map<string, Promise<T>>, key: string, make: () => Promise<T>): Promise<T> {
  let promise = pending.get(key);
  if (!promise) {
    promise = make().finally(() => pending.delete(key));
    pending.set(key, promise);
  }
  return promise;
}

export interface KeyringOptions {
  /** Clock for the in-memory key cache (tests). */
  now?: () => number;
  /** How long an unwrapped key is kept in memory, ms (default 60 s): an erasure in another process reaches this one within it. */
  cacheMs?: number;
}

export class Keyring implements KeyringApi {
  private readonly clear = new Map<string, { key: DataKey; scope: string; until: number }>();
  private readonly current = new Map<string, { keyId: string; until: number }>();
  private readonly fetching = new Map<string, Promise<DataKey>>();
  private readonly finding = new Map<string, Promise<DataKey>>();
  /** Tenants by the tag their key ids carry. Names only, never a key: kept for the process's life. */
  private readonly tenantsByTag = new Map<string, Set<string>>();
  /** Ids of keys from before keys were owned, moved into a tenant's rows: the tenant. */
  private readonly legacyOwner = new Map<string, string>();
  private directory: Promise<void> | null = null;
  private directoryRead = false;
  private readonly now: () => number;
  private readonly cacheMs: number;

  constructor(
    private readonly store: Store,
    readonly provider: KeyProvider,
    options: KeyringOptions = {},
  ) {
    this.now = options.now ?? Date.now;
    this.cacheMs = options.cacheMs ?? CLEAR_KEY_TTL_MS;
    // Conflicts must be seen, whatever default merge rule the application declared.
    store.declare(DATA_KEYS_NS, { merge: 'reject' });
    store.declare(CURRENT_KEY_NS, { merge: 'reject' });
    store.declare(TENANT_KEYS_NS, { merge: 'reject' });
  }

  /** The scope's current data key, created (and made current) when it has none. */
  keyForWrite(scope: string): Promise<DataKey> {
    const cached = this.current.get(scope);
    if (cached && cached.until > this.now()) return this.keyById(cached.keyId);
    return shared(this.finding, scope, () => this.findCurrent(scope));
  }

  private async findCurrent(scope: string): Promise<DataKey> {
    for (;;) {
      const pointer = await this.readCurrent(scope);
      const key = pointer ? await this.currentKeyOf(pointer, scope) : null;
      if (key) {
        this.current.set(scope, { keyId: key.id, until: this.now() + this.cacheMs });
        return key;
      }
      try {
        return await this.createCurrent(scope, pointer);
      } catch (err) {
        if (!VersionConflictError.is(err)) throw err;
        // Another process made the scope's first key: use theirs.
      }
    }
  }

  /**
   * The key a current-key row names, when it is a key of `scope`; null when the row is
   * not to be used, and a new key is made current over it. A shared row is writable by
   * any tenant's connection: one naming another scope's key, or a key that is not
   * stored, is not this scope's current key. The tenant's own row naming a key that is
   * gone is KeyUnavailableError (its keys were destroyed while this ran).
   */
  private async currentKeyOf(pointer: CurrentPointer, scope: string): Promise<DataKey | null> {
    const cached = this.clear.get(pointer.keyId);
    const found = cached && cached.until > this.now() ? cached : await this.loadKey(pointer.keyId);
    if (!found) {
      if (pointer.owned) throw new KeyUnavailableError(pointer.keyId, 'no such data key (its scope was erased, or the row comes from another database).');
      return null;
    }
    return found.scope === scope ? found.key : null;
  }

  /** The scope's current-key row: the tenant's own first, then the shared one (all there was before keys were owned). */
  private async readCurrent(scope: string): Promise<CurrentPointer | null> {
    const owner = ownerOf(scope);
    if (owner !== null) {
      this.learnTenant(owner);
      const owned = await this.store.get<TenantKeysRow>(TENANT_KEYS_NS, tenantKeysRowKey(owner));
      if (owned) return { keyId: owned.value.keyId, version: owned.version, owned: owned.value };
    }
    const shared = await this.store.get<CurrentKeyRow>(CURRENT_KEY_NS, sharedCurrentKey(scope));
    return shared ? { keyId: shared.value.keyId, version: shared.version, owned: null } : null;
  }

  /** Makes a new data key current for `scope`: new writes use it, old rows keep opening with theirs. */
  async rotateDataKey(scope: string): Promise<DataKey> {
    for (;;) {
      try {
        return await this.createCurrent(scope, await this.readCurrent(scope));
      } catch (err) {
        if (!VersionConflictError.is(err)) throw err;
      }
    }
  }

  /** The data key a row names. KeyUnavailableError when it was destroyed or never existed. */
  keyById(keyId: string): Promise<DataKey> {
    const cached = this.clear.get(keyId);
    if (cached && cached.until > this.now()) return Promise.resolve(cached.key);
    // Rows read together name the same key: one fetch and unwrap serves them all.
    return shared(this.fetching, keyId, () => this.fetchKey(keyId));
  }

  private async fetchKey(keyId: string): Promise<DataKey> {
    const found = await this.loadKey(keyId);
    if (!found) throw new KeyUnavailableError(keyId, 'no such data key (its scope was erased, or the row comes from another database).');
    return found.key;
  }

  /** The key unwrapped and held in the clear, with its scope; null when no row of it is stored. */
  private async loadKey(keyId: string): Promise<{ key: DataKey; scope: string } | null> {
    const row = await this.findKeyRow(keyId);
    if (!row) {
      this.clear.delete(keyId);
      return null;
    }
    const key: DataKey = { id: keyId, key: await this.provider.unwrapKey(row.scope, row) };
    this.clear.set(keyId, { key, scope: row.scope, until: this.now() + this.cacheMs });
    return { key, scope: row.scope };
  }

  /**
   * The stored row of a key id. A tenant's key (its id carries the tenant's tag) is
   * looked up in the rows of the tenants with that tag; another id in the rows of the
   * tenant it was moved to, else in the shared rows. Tenants not known yet are learned
   * from `['cairn', 'tenant-keys']` (one read, again only when a key is not found).
   */
  private async findKeyRow(keyId: string): Promise<DataKeyRow | null> {
    const tag = tagOf(keyId);
    // Before the shared rows are trusted with an old id, know which old ids were moved:
    // a shared row left under a moved id (written by anyone) is not the key.
    if (tag === null && !this.directoryRead) await this.readDirectory();
    for (let round = 0; round < 2; round++) {
      if (tag !== null) {
        for (const tenant of this.tenantsByTag.get(tag) ?? []) {
          const item = await this.store.get<DataKeyRow>(DATA_KEYS_NS, keyRowKey(tenant, keyId));
          if (item && item.value.scope === scopeOfTenant(tenant)) return item.value;
        }
      } else {
        const owner = this.legacyOwner.get(keyId);
        if (owner !== undefined) {
          const item = await this.store.get<DataKeyRow>(DATA_KEYS_NS, keyRowKey(owner, keyId));
          if (item) return item.value;
        }
        const shared = await this.store.get<DataKeyRow>(DATA_KEYS_NS, keyId);
        if (shared) return shared.value;
      }
      if (round === 0) await this.readDirectory();
    }
    return null;
  }

  /** Learns every tenant with keys (those this connection may see) and the old ids moved into their rows. */
  private readDirectory(): Promise<void> {
    this.directory ??= (async () => {
      try {
        for (let cursor: string | null = null; ; ) {
          const page: StorePage<TenantKeysRow> = await this.store.search<TenantKeysRow>(TENANT_KEYS_NS, { limit: 1000, ...(cursor ? { cursor } : {}) });
          for (const item of page.items) {
            const owner = item.namespace.length === TENANT_KEYS_NS.length ? ownerOf(item.value.scope) : null;
            if (owner === null) continue;
            this.learnTenant(owner);
            for (const id of item.value.legacy ?? []) this.legacyOwner.set(id, owner);
          }
          if (!page.cursor) break;
          cursor = page.cursor;
        }
        this.directoryRead = true;
      } finally {
        this.directory = null;
      }
    })();
    return this.directory;
  }

  private learnTenant(tenant: string): void {
    const tag = tenantTag(tenant);
    let tenants = this.tenantsByTag.get(tag);
    if (!tenants) this.tenantsByTag.set(tag, (tenants = new Set()));
    tenants.add(tenant);
  }

  /** The data key rows of `scope` (every scope when omitted). */
  async listKeys(scope?: string): Promise<(DataKeyRow & { id: string })[]> {
    const rows = await this.listRows(scope);
    // A row being moved into its tenant's rows is there twice for a moment: list the tenant's.
    const byId = new Map<string, StoredKeyRow>();
    for (const stored of rows) if (!byId.has(stored.id) || stored.storeKey !== stored.id) byId.set(stored.id, stored);
    return [...byId.values()].map(({ id, row }) => ({ id, ...row }));
  }

  private async listRows(scope?: string): Promise<StoredKeyRow[]> {
    const items = await this.store.list<DataKeyRow>(DATA_KEYS_NS, scope === undefined ? {} : { filter: { scope } });
    return items.filter((item) => item.namespace.length === DATA_KEYS_NS.length).map((item) => ({ id: keyIdOf(item.key), storeKey: item.key, row: item.value }));
  }

  /**
   * Re-wraps every data key of `scope` (all scopes when omitted) under the provider's
   * current key-encryption key: after `provider.rotate(scope)`, this retires the old
   * KEK without touching a data row. A tenant's key still in a shared row (written
   * before keys were owned) is moved into the tenant's rows, under the same id, and
   * the shared row deleted. Returns how many key rows were re-wrapped or moved.
   */
  async rewrap(scope?: string): Promise<number> {
    let count = 0;
    const rows = await this.listRows(scope);
    const moved = new Set<string>();
    for (const { id, storeKey, row } of rows) {
      const owner = ownerOf(row.scope);
      const moving = owner !== null && storeKey === id;
      const clearKey = await this.provider.unwrapKey(row.scope, row);
      const wrapped = await this.provider.wrapKey(row.scope, clearKey);
      if (!moving) {
        if (wrapped.kekId === row.kekId) continue;
        await this.store.put<DataKeyRow>(DATA_KEYS_NS, storeKey, { scope: row.scope, createdAt: row.createdAt, ...wrapped });
        count++;
        continue;
      }
      // The tenant's row first, then the id on its list, then the shared row gone: at
      // every moment one of them finds the key.
      await this.store.put<DataKeyRow>(DATA_KEYS_NS, keyRowKey(owner, id), { scope: row.scope, createdAt: row.createdAt, ...wrapped });
      await this.adoptLegacy(owner, row.scope, id);
      await this.store.delete(DATA_KEYS_NS, id);
      this.legacyOwner.set(id, owner);
      moved.add(row.scope);
      count++;
    }
    // The shared current-key row of a moved scope: the tenant's row names the current key now.
    for (const movedScope of moved) {
      await this.store.delete(CURRENT_KEY_NS, sharedCurrentKey(movedScope));
      this.current.delete(movedScope);
    }
    return count;
  }

  /** Puts an old key id on the tenant's list of moved keys, creating the tenant's row from the shared current-key row if it has none. */
  private async adoptLegacy(owner: string, scope: string, keyId: string): Promise<void> {
    const shared = await this.store.get<CurrentKeyRow>(CURRENT_KEY_NS, sharedCurrentKey(scope));
    await this.store.update<TenantKeysRow>(TENANT_KEYS_NS, tenantKeysRowKey(owner), (row) => {
      if (!row) return { scope, keyId: shared?.value.scope === scope ? shared.value.keyId : keyId, legacy: [keyId] };
      return (row.legacy ?? []).includes(keyId) ? row : { ...row, legacy: [...(row.legacy ?? []), keyId] };
    });
  }

  /**
   * Crypto-shredding: destroys the scope's key-encryption keys in the provider, then
   * deletes its data key rows and forgets them here. Every row sealed for the scope is
   * unreadable afterwards, in this database and (with a provider that `destroys`) in
   * every copy of it. Returns how many data keys were destroyed.
   */
  async destroyScope(scope: string): Promise<number> {
    const rows = await this.listRows(scope);
    const owner = ownerOf(scope);
    // Only rows this connection sees: under row-level security a delete of another
    // tenant's row (an invisible one) is refused, and it is none of this caller's.
    const owned = owner !== null ? await this.store.get<TenantKeysRow>(TENANT_KEYS_NS, tenantKeysRowKey(owner)) : null;
    await this.provider.destroyScope(scope);
    await this.store.batch([
      ...rows.map((stored) => ({ op: 'delete' as const, namespace: DATA_KEYS_NS, key: stored.storeKey })),
      { op: 'delete' as const, namespace: CURRENT_KEY_NS, key: sharedCurrentKey(scope) },
      ...(owned ? [{ op: 'delete' as const, namespace: TENANT_KEYS_NS, key: tenantKeysRowKey(owner!) }] : []),
    ]);
    for (const stored of rows) {
      this.clear.delete(stored.id);
      this.legacyOwner.delete(stored.id);
    }
    this.current.delete(scope);
    return new Set(rows.map((stored) => stored.id)).size;
  }

  /** Forgets every key held in the clear (they are fetched and unwrapped again when needed). */
  forget(): void {
    this.clear.clear();
    this.current.clear();
  }

  /** A new data key made current for `scope`, over the current-key row read (`pointer`, compare-and-set). */
  private async createCurrent(scope: string, pointer: CurrentPointer | null): Promise<DataKey> {
    const owner = ownerOf(scope);
    const clearKey = randomBytes(32);
    const id = newKeyId(owner);
    const wrapped = await this.provider.wrapKey(scope, clearKey);
    // The key row first: a current pointer must never name a key that is not stored.
    await this.store.put<DataKeyRow>(DATA_KEYS_NS, keyRowKey(owner, id), { scope, createdAt: this.now(), ...wrapped });
    if (owner === null) {
      await this.store.put<CurrentKeyRow>(CURRENT_KEY_NS, sharedCurrentKey(scope), { scope, keyId: id }, { ifVersion: pointer?.version ?? 0 });
    } else {
      // A tenant scope that had only a shared pointer gets its own row (version 0); the shared one no longer counts.
      const legacy = pointer?.owned?.legacy;
      const row: TenantKeysRow = { scope, keyId: id, ...(legacy?.length ? { legacy } : {}) };
      await this.store.put<TenantKeysRow>(TENANT_KEYS_NS, tenantKeysRowKey(owner), row, { ifVersion: pointer?.owned ? pointer.version : 0 });
      this.learnTenant(owner);
    }
    const key: DataKey = { id, key: clearKey };
    this.clear.set(id, { key, scope, until: this.now() + this.cacheMs });
    this.current.set(scope, { keyId: id, until: this.now() + this.cacheMs });
    return key;
  }
}
