/**
 * @module crypto/encrypted
 * `encrypted(engine, { keys })`: the same engine with every persisted payload sealed
 * with AES-256-GCM before it reaches storage, and opened on the way back. The runtime,
 * workers, the LangGraph adapter and the inspector run on it unchanged: it is an
 * Engine like the one it wraps.
 */
import type { Engine } from '../contracts/engine.js';
import { InvalidOptionError } from '../errors.js';
import { checkOptionKeys } from '../internal/option-keys.js';
import { EncryptedCheckpointer } from './encrypted-checkpointer.js';
import { EncryptedLedger } from './encrypted-ledger.js';
import { EncryptedStore } from './encrypted-store.js';
import type { KeyProvider } from './key-provider.js';
import { Keyring, type KeyringOptions } from './keyring.js';
import { SHARED_STORE_SCOPE, type EngineEncryption } from './scopes.js';
import { Sealer } from './sealer.js';
import { ThreadScopes } from './thread-scopes.js';

/** Options of {@link encrypted}. */
export interface EncryptedOptions {
  /** Where the key-encryption keys live: `keyFile(path)`, `envKey()`, or your KMS's provider. */
  keys: KeyProvider;
  /**
   * Refuse to read a row stored in the clear (PlaintextRowError), so that a writer
   * without encryption cannot leave data in the clear unnoticed. Default true; `false`
   * reads old plaintext rows (while a database is being moved to encryption) and still
   * seals every write.
   */
  require?: boolean;
  /**
   * The scope a store row of `namespace` is sealed for (what one erasure destroys).
   * Default: one shared scope, `store`. Map a tenant's namespaces to `tenantScope(t)`
   * so that erasing the tenant reaches its store rows.
   */
  storeScope?: (namespace: readonly string[]) => string;
  /** How long an unwrapped data key is kept in this process's memory, ms (default 60 s). */
  keyCacheMs?: number;
}

/**
 * Encryption at rest for an engine: position bodies, items, snapshots, pending writes,
 * ledger outcomes, signal payloads, thread error messages and store values are sealed
 * with AES-256-GCM under per-scope data keys (a tenant's, or a thread's without one),
 * which the key provider's key-encryption keys wrap. Each row's identity is its
 * associated data: a ciphertext moved to another row is DecryptionError. Ids,
 * namespaces, tenants, metadata, names, codes, times and chain hashes stay in the clear
 * (engines index and filter them): keep personal data out of them.
 *
 * @example
 * ```ts
 * import { encrypted, keyFile } from 'cairn/crypto';
 * const engine = encrypted(sqlite('./cairn.db'), { keys: keyFile('./cairn-keys.json') });
 * ```
 */
export function encrypted(engine: Engine, options: EncryptedOptions): Engine & { readonly encryption: EngineEncryption } {
  if (!engine || typeof engine !== 'object' || !engine.checkpointer || !engine.ledger || !engine.store) throw new InvalidOptionError('encrypted(engine, { keys }) takes an engine (sqlite(...), postgres(...), memory()).');
  if (engine.encryption) throw new InvalidOptionError('encrypted(): this engine is encrypted already.');
  if (options === undefined) throw new InvalidOptionError('encrypted(engine, { keys }) takes an options object with the key provider.');
  checkOptionKeys('encrypted', options, ['keys', 'require', 'storeScope', 'keyCacheMs']);
  if (options.require !== undefined && typeof options.require !== 'boolean') throw new InvalidOptionError(`encrypted(): require must be true or false, not ${JSON.stringify(options.require)}.`);
  if (options.keyCacheMs !== undefined && (typeof options.keyCacheMs !== 'number' || !Number.isFinite(options.keyCacheMs) || options.keyCacheMs < 0)) {
    throw new InvalidOptionError(`encrypted(): keyCacheMs must be a number of milliseconds, 0 or more, not ${String(options.keyCacheMs)}.`);
  }
  const keys = options.keys;
  if (!keys || typeof keys.wrapKey !== 'function' || typeof keys.unwrapKey !== 'function') throw new InvalidOptionError('encrypted(engine, { keys }): keys must be a KeyProvider (keyFile(path), envKey(), or your own).');
  if (options.storeScope !== undefined && typeof options.storeScope !== 'function') throw new InvalidOptionError('encrypted(): storeScope must be a function (namespace) => scope.');
  const required = options.require ?? true;
  const storeScope = options.storeScope ?? (() => SHARED_STORE_SCOPE);
  const keyringOptions: KeyringOptions = options.keyCacheMs === undefined ? {} : { cacheMs: options.keyCacheMs };
  const keyring = new Keyring(engine.store, keys, keyringOptions);
  const sealer = new Sealer(keyring, required);
  const scopes = new ThreadScopes(engine.checkpointer);
  const encryption: EngineEncryption = { provider: keys, keyring, required, storeScope };
  const close = () => engine.close();
  return {
    name: engine.name,
    checkpointer: new EncryptedCheckpointer(engine.checkpointer, sealer, scopes),
    ledger: new EncryptedLedger(engine.ledger, sealer, scopes),
    store: new EncryptedStore(engine.store, sealer, storeScope),
    encryption,
    // Erasure's deletes run through the wrapped engine's purge (secure_delete, VACUUM).
    ...(engine.purging ? { purging: engine.purging } : {}),
    close,
    [Symbol.asyncDispose]: close,
  };
}
