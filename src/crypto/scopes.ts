/**
 * @module crypto/scopes
 * What one erasure destroys, named: a tenant's threads share the scope
 * `tenant:<tenant>`, a thread without a tenant is its own scope `thread:<id>`, and a
 * store row belongs to the scope the engine's `storeScope(namespace)` names (by
 * default one shared `store` scope, which no tenant erasure destroys).
 */
import type { Checkpointer } from '../contracts/checkpointer.js';
import type { DataKey } from './envelope.js';
import type { KeyProvider } from './key-provider.js';

/** A data key's stored row, as the keyring lists it. */
export interface DataKeyInfo {
  id: string;
  scope: string;
  kekId: string;
  wrapped: string;
  createdAt: number;
}

/**
 * The keyring as the rest of cairn sees it (the `Keyring` class implements it): a
 * structural type, so that two builds of cairn in one program (a script importing
 * `dist/` beside tests importing `src/`) still agree on what an Engine is.
 */
export interface KeyringApi {
  readonly provider: KeyProvider;
  keyForWrite(scope: string): Promise<DataKey>;
  rotateDataKey(scope: string): Promise<DataKey>;
  keyById(keyId: string): Promise<DataKey>;
  listKeys(scope?: string): Promise<DataKeyInfo[]>;
  rewrap(scope?: string): Promise<number>;
  destroyScope(scope: string): Promise<number>;
  forget(): void;
}

/** The scope of a thread's rows (positions, items, snapshots, pending writes, ledger, signals, its artifacts). */
export function threadScope(tenant: string | null, threadId: string): string {
  return tenant !== null ? `tenant:${tenant}` : `thread:${threadId}`;
}

/** The scope of a tenant. */
export function tenantScope(tenant: string): string {
  return `tenant:${tenant}`;
}

/** The scope store rows fall in when the application maps none. */
export const SHARED_STORE_SCOPE = 'store';

/**
 * How an encrypted engine encrypts: present on an Engine as `engine.encryption` when
 * it was wrapped by `encrypted(...)`; absent on an engine that stores plaintext.
 * Erasure, exports and encrypted artifact stores find the keys through it.
 */
export interface EngineEncryption {
  readonly provider: KeyProvider;
  readonly keyring: KeyringApi;
  /** True when a plaintext row is refused on read (PlaintextRowError). */
  readonly required: boolean;
  /** The scope a store row of `namespace` is sealed for. */
  storeScope(namespace: readonly string[]): string;
}

/**
 * Where an encrypted engine's checkpointer keeps its verifying view: the same log with
 * the tag of every row checked, the items of a load included (which the read path
 * opens in bulk, proven by the snapshot's checksum instead).
 */
export const VERIFYING_READS: unique symbol = Symbol.for('cairn.crypto.verifyingReads');

/** The checkpointer `verifyThread` reads through: `cp`'s verifying view when it has one, else `cp`. */
export function verifyingReads(cp: Checkpointer): Checkpointer {
  return (cp as { [VERIFYING_READS]?: Checkpointer })[VERIFYING_READS] ?? cp;
}
