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
 * Rows (namespace `['cairn', 'data-keys']`, key: the data key id; and
 * `['cairn', 'data-key-current']`, key: a digest of the scope) are written with
 * compare-and-set, so two processes creating a scope's first key agree on one.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Store } from '../contracts/store.js';
import { KeyUnavailableError, VersionConflictError } from '../errors.js';
import type { DataKey } from './envelope.js';
import type { KeyProvider, WrappedKey } from './key-provider.js';
import type { KeyringApi } from './scopes.js';

/** The store namespaces the keyring owns. */
export const DATA_KEYS_NS = ['cairn', 'data-keys'];
export const CURRENT_KEY_NS = ['cairn', 'data-key-current'];

/** A data key's stored row. */
export interface DataKeyRow extends WrappedKey {
  scope: string;
  createdAt: number;
}

interface CurrentKeyRow {
  scope: string;
  keyId: string;
}

/** How long a data key stays in the clear in this process after it was last fetched. */
const CLEAR_KEY_TTL_MS = 60_000;

function scopeDigest(scope: string): string {
  return createHash('sha256').update(scope).digest('hex').slice(0, 40);
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
  }

  /** The scope's current data key, created (and made current) when it has none. */
  keyForWrite(scope: string): Promise<DataKey> {
    const cached = this.current.get(scope);
    if (cached && cached.until > this.now()) return this.keyById(cached.keyId);
    let pending = this.finding.get(scope);
    if (!pending) {
      pending = this.findCurrent(scope).finally(() => this.finding.delete(scope));
      this.finding.set(scope, pending);
    }
    return pending;
  }

  private async findCurrent(scope: string): Promise<DataKey> {
    for (;;) {
      const item = await this.store.get<CurrentKeyRow>(CURRENT_KEY_NS, scopeDigest(scope));
      if (item) {
        this.current.set(scope, { keyId: item.value.keyId, until: this.now() + this.cacheMs });
        return this.keyById(item.value.keyId);
      }
      try {
        return await this.createCurrent(scope, 0);
      } catch (err) {
        if (!VersionConflictError.is(err)) throw err;
        // Another process made the scope's first key: use theirs.
      }
    }
  }

  /** Makes a new data key current for `scope`: new writes use it, old rows keep opening with theirs. */
  async rotateDataKey(scope: string): Promise<DataKey> {
    for (;;) {
      const item = await this.store.get<CurrentKeyRow>(CURRENT_KEY_NS, scopeDigest(scope));
      try {
        return await this.createCurrent(scope, item?.version ?? 0);
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
    let pending = this.fetching.get(keyId);
    if (!pending) {
      pending = this.fetchKey(keyId).finally(() => this.fetching.delete(keyId));
      this.fetching.set(keyId, pending);
    }
    return pending;
  }

  private async fetchKey(keyId: string): Promise<DataKey> {
    const item = await this.store.get<DataKeyRow>(DATA_KEYS_NS, keyId);
    if (!item) {
      this.clear.delete(keyId);
      throw new KeyUnavailableError(keyId, 'no such data key (its scope was erased, or the row comes from another database).');
    }
    const key: DataKey = { id: keyId, key: await this.provider.unwrapKey(item.value.scope, item.value) };
    this.clear.set(keyId, { key, scope: item.value.scope, until: this.now() + this.cacheMs });
    return key;
  }

  /** The data key rows of `scope` (every scope when omitted). */
  async listKeys(scope?: string): Promise<(DataKeyRow & { id: string })[]> {
    const items = await this.store.list<DataKeyRow>(DATA_KEYS_NS, scope === undefined ? {} : { filter: { scope } });
    return items.filter((item) => item.namespace.length === DATA_KEYS_NS.length).map((item) => ({ id: item.key, ...item.value }));
  }

  /**
   * Re-wraps every data key of `scope` (all scopes when omitted) under the provider's
   * current key-encryption key: after `provider.rotate(scope)`, this retires the old
   * KEK without touching a data row. Returns how many keys were re-wrapped.
   */
  async rewrap(scope?: string): Promise<number> {
    let count = 0;
    for (const row of await this.listKeys(scope)) {
      const clearKey = await this.provider.unwrapKey(row.scope, row);
      const wrapped = await this.provider.wrapKey(row.scope, clearKey);
      if (wrapped.kekId === row.kekId) continue;
      await this.store.put<DataKeyRow>(DATA_KEYS_NS, row.id, { scope: row.scope, createdAt: row.createdAt, ...wrapped });
      count++;
    }
    return count;
  }

  /**
   * Crypto-shredding: destroys the scope's key-encryption keys in the provider, then
   * deletes its data key rows and forgets them here. Every row sealed for the scope is
   * unreadable afterwards, in this database and (with a provider that `destroys`) in
   * every copy of it. Returns how many data keys were destroyed.
   */
  async destroyScope(scope: string): Promise<number> {
    const rows = await this.listKeys(scope);
    await this.provider.destroyScope(scope);
    await this.store.batch([
      ...rows.map((row) => ({ op: 'delete' as const, namespace: DATA_KEYS_NS, key: row.id })),
      { op: 'delete' as const, namespace: CURRENT_KEY_NS, key: scopeDigest(scope) },
    ]);
    for (const row of rows) this.clear.delete(row.id);
    this.current.delete(scope);
    return rows.length;
  }

  /** Forgets every key held in the clear (they are fetched and unwrapped again when needed). */
  forget(): void {
    this.clear.clear();
    this.current.clear();
  }

  private async createCurrent(scope: string, ifVersion: number): Promise<DataKey> {
    const clearKey = randomBytes(32);
    const id = `dk-${randomBytes(9).toString('base64url')}`;
    const wrapped = await this.provider.wrapKey(scope, clearKey);
    // The key row first: a current pointer must never name a key that is not stored.
    await this.store.put<DataKeyRow>(DATA_KEYS_NS, id, { scope, createdAt: this.now(), ...wrapped });
    await this.store.put<CurrentKeyRow>(CURRENT_KEY_NS, scopeDigest(scope), { scope, keyId: id }, { ifVersion });
    const key: DataKey = { id, key: clearKey };
    this.clear.set(id, { key, scope, until: this.now() + this.cacheMs });
    this.current.set(scope, { keyId: id, until: this.now() + this.cacheMs });
    return key;
  }
}
