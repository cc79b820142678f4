/**
 * @module crypto/key-rows
 * Where the keyring keeps each scope's rows, so that a tenant's keys are the tenant's
 * rows under PostgreSQL row-level security (`cairn_store_tenant(ns, key)` names the
 * tenant of a `['cairn', ...]` row keyed `tenant:<tenant, URI-encoded>/...`), while
 * the sealed form of a data row stays `~c1:<key id>:...` with a short key id.
 *
 * - A tenant scope's data key (`tenant:<t>`): key id `tk-<tag>-<random>`, where the
 *   tag is 16 hex digits of the tenant's SHA-256, and store key
 *   `tenant:<t, URI-encoded>/<key id>` in `['cairn', 'data-keys']`. Its current key is
 *   named by the row `tenant:<t, URI-encoded>/current` of `['cairn', 'tenant-keys']`,
 *   which also lists the tenants (what a tag is resolved against) and the ids of the
 *   tenant's keys from before keys were owned, once moved into its rows (`legacy`).
 * - Every other scope (`thread:<id>`, `store`, a tenant whose encoded name does not
 *   fit a store key): key id `dk-<random>`, store key the key id, current key in
 *   `['cairn', 'data-key-current']` keyed by a digest of the scope. Shared rows. Keys
 *   of tenant scopes written before cairn owned them have this form too.
 */
import { createHash, randomBytes } from 'node:crypto';

/** The store namespaces the keyring owns. */
export const DATA_KEYS_NS = ['cairn', 'data-keys'];
export const CURRENT_KEY_NS = ['cairn', 'data-key-current'];
export const TENANT_KEYS_NS = ['cairn', 'tenant-keys'];

const TENANT_SCOPE = 'tenant:';
/** The store's limit on a key, less the longest suffix written after a tenant's prefix (a key id of 36 characters). */
const MAX_OWNED_PREFIX = 1024 - 40;
const TAG = /^tk-([0-9a-f]{16})-/;

/** The row of `['cairn', 'tenant-keys']`: a tenant scope's current key, and its moved older keys. */
export interface TenantKeysRow {
  scope: string;
  keyId: string;
  /** Ids of the tenant's keys from before keys were owned, whose rows were moved into the tenant's. */
  legacy?: string[];
}

/** The tenant whose rows hold `scope`'s keys; null for a scope kept in shared rows. */
export function ownerOf(scope: string): string | null {
  if (!scope.startsWith(TENANT_SCOPE) || scope.length === TENANT_SCOPE.length) return null;
  const tenant = scope.slice(TENANT_SCOPE.length);
  let prefix: string;
  try {
    prefix = ownedPrefix(tenant);
  } catch {
    return null; // a lone surrogate: no URI form (cairn's tenant checks refuse such a tenant before)
  }
  return prefix.length <= MAX_OWNED_PREFIX ? tenant : null;
}

/** The prefix of a tenant's rows in cairn's namespaces (as artifact pins are keyed). */
function ownedPrefix(tenant: string): string {
  return `${TENANT_SCOPE}${encodeURIComponent(tenant)}/`;
}

/** The scope a tenant's keys belong to. */
export function scopeOfTenant(tenant: string): string {
  return `${TENANT_SCOPE}${tenant}`;
}

/** 16 hex digits of the tenant's SHA-256: what a key id carries to say whose rows hold it. */
export function tenantTag(tenant: string): string {
  return createHash('sha256').update(tenant, 'utf8').digest('hex').slice(0, 16);
}

/** The tag a tenant's key id carries; null for a key id of shared rows (or from before keys were owned). */
export function tagOf(keyId: string): string | null {
  return TAG.exec(keyId)?.[1] ?? null;
}

/** A new data key id for a key kept in `owner`'s rows (null: shared rows). No `:` (the envelope's separator) and no `/`. */
export function newKeyId(owner: string | null): string {
  const random = randomBytes(9).toString('base64url');
  return owner === null ? `dk-${random}` : `tk-${tenantTag(owner)}-${random}`;
}

/** The store key of a data key's row. */
export function keyRowKey(owner: string | null, keyId: string): string {
  return owner === null ? keyId : ownedPrefix(owner) + keyId;
}

/** The key id of a data key row, from its store key. */
export function keyIdOf(storeKey: string): string {
  return storeKey.startsWith(TENANT_SCOPE) ? storeKey.slice(storeKey.lastIndexOf('/') + 1) : storeKey;
}

/** The store key of a tenant's row in `['cairn', 'tenant-keys']`. */
export function tenantKeysRowKey(owner: string): string {
  return `${ownedPrefix(owner)}current`;
}

/** The store key of a shared scope's current-key row (and of a tenant scope's, before keys were owned). */
export function sharedCurrentKey(scope: string): string {
  return createHash('sha256').update(scope).digest('hex').slice(0, 40);
}
