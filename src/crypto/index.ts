/**
 * @module cairn/crypto
 * Encryption at rest: `encrypted(engine, { keys })` seals every persisted payload with
 * AES-256-GCM under per-scope data keys wrapped by a {@link KeyProvider}'s
 * key-encryption keys (`keyFile(path)`, `envKey()`, or a KMS of your own).
 *
 * @example
 * ```ts
 * import { sqlite } from 'cairn/sqlite';
 * import { encrypted, keyFile } from 'cairn/crypto';
 * const engine = encrypted(sqlite('./cairn.db'), { keys: keyFile('./cairn-keys.json') });
 * ```
 */
export { encrypted } from './encrypted.js';
export type { EncryptedOptions } from './encrypted.js';
export { keyFile, envKey } from './key-provider.js';
export type { KeyProvider, WrappedKey } from './key-provider.js';
export { Keyring, DATA_KEYS_NS, CURRENT_KEY_NS, TENANT_KEYS_NS } from './keyring.js';
export type { DataKeyRow, KeyringOptions } from './keyring.js';
export { threadScope, tenantScope, SHARED_STORE_SCOPE, verifyingReads } from './scopes.js';
export type { EngineEncryption } from './scopes.js';
export { isSealed, sealedKeyId } from './envelope.js';
export type { DataKey } from './envelope.js';
export { DecryptionError, PlaintextRowError, KeyUnavailableError } from '../errors.js';
export { encryptedArtifacts, artifactScope, SHARED_ARTIFACT_SCOPE, ARTIFACT_SEGMENT_BYTES } from './artifacts.js';
export type { EncryptedArtifactsOptions } from './artifacts.js';
