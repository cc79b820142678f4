/**
 * @module crypto/key-provider
 * Where key-encryption keys (KEKs) live: outside the database, so that a copy of the
 * database (a backup, a stolen file) holds only wrapped data keys. A provider wraps
 * and unwraps data keys for a *scope* (a tenant, or a thread without one) and can
 * destroy a scope's KEKs, which is what makes erasure by crypto-shredding reach
 * backups taken before it.
 *
 * Two built in: {@link keyFile} (a KEK per scope in a local file, destroyable) and
 * {@link envKey} (one master key from an environment variable, scope keys derived
 * from it: nothing to destroy, so erasure with it shreds the live database's data
 * keys but not a backup's). The interface fits a cloud KMS: `wrapKey` is its
 * GenerateDataKey/Encrypt with the scope as encryption context, `destroyScope` the
 * scheduled deletion of the scope's key.
 *
 * @example
 * ```ts
 * const keys = keyFile('./cairn-keys.json');        // created 0600 on first use
 * const engine = encrypted(sqlite('./cairn.db'), { keys });
 * ```
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';
import { accessSync, closeSync, constants, fsyncSync, openSync, readFileSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { dirname } from 'node:path';
import { InvalidOptionError, KeyUnavailableError } from '../errors.js';

/** A data key as a provider wrapped it: which KEK, and the wrapped bytes (base64). */
export interface WrappedKey {
  /** The KEK that wrapped it (a provider's own id; rotation adds new ones). */
  kekId: string;
  wrapped: string;
}

/** Keeps the key-encryption keys; cairn keeps only what they wrapped. */
export interface KeyProvider {
  /** Shown in errors and reports (`key-file`, `env`, `aws-kms`…). */
  readonly name: string;
  /** True when {@link destroyScope} makes the scope's wrapped keys unopenable everywhere, backups included. */
  readonly destroys: boolean;
  /** Wraps a data key under the scope's current KEK. */
  wrapKey(scope: string, dataKey: Buffer): Promise<WrappedKey>;
  /** Unwraps a data key wrapped for `scope`; KeyUnavailableError when its KEK is gone. */
  unwrapKey(scope: string, wrapped: WrappedKey): Promise<Buffer>;
  /** Makes a new KEK current for the scope; keys wrapped by older ones still unwrap until re-wrapped. Returns its id. */
  rotate(scope: string): Promise<string>;
  /** Destroys every KEK of the scope (crypto-shredding). Idempotent. */
  destroyScope(scope: string): Promise<void>;
}

const KEY_BYTES = 32;
const IV_BYTES = 12;

function wrapWith(kek: Buffer, scope: string, dataKey: Buffer): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', kek, iv);
  cipher.setAAD(Buffer.from(`cairn-dek|${scope}`));
  return Buffer.concat([iv, cipher.update(dataKey), cipher.final(), cipher.getAuthTag()]).toString('base64');
}

function unwrapWith(kek: Buffer, scope: string, wrapped: string, what: string): Buffer {
  const packed = Buffer.from(wrapped, 'base64');
  try {
    const decipher = createDecipheriv('aes-256-gcm', kek, packed.subarray(0, IV_BYTES));
    decipher.setAAD(Buffer.from(`cairn-dek|${scope}`));
    decipher.setAuthTag(packed.subarray(packed.length - 16));
    return Buffer.concat([decipher.update(packed.subarray(IV_BYTES, packed.length - 16)), decipher.final()]);
  } catch (err) {
    throw new KeyUnavailableError(what, `it does not unwrap under its key-encryption key for scope ${JSON.stringify(scope)} (wrong key file or variable, or a changed row).`, { cause: err });
  }
}

interface KeyFileContents {
  version: 1;
  /** scope → its KEKs, newest last. */
  scopes: Record<string, { id: string; key: string; createdAt: number }[]>;
}

/** The key file at `path`, parsed; null when there is none. InvalidOptionError for one that cannot be read or is not a key file. */
function readKeyFile(path: string): KeyFileContents | null {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code !== 'ENOENT') throw new InvalidOptionError(`the key file ${path} cannot be read (${code ?? (err as Error).message}).`, { cause: err });
    return null;
  }
  let parsed: KeyFileContents | null;
  try {
    parsed = JSON.parse(text) as KeyFileContents | null;
  } catch (err) {
    throw new InvalidOptionError(`${path} is not a cairn key file: it is not JSON.`, { cause: err });
  }
  if (typeof parsed !== 'object' || parsed === null || parsed.version !== 1 || typeof parsed.scopes !== 'object' || parsed.scopes === null) throw new InvalidOptionError(`${path} is not a cairn key file.`);
  // A hand-edited or damaged entry would otherwise fail deep in node:crypto with a TypeError, or wrap keys under garbage.
  for (const [scope, keks] of Object.entries(parsed.scopes)) {
    const bad = !Array.isArray(keks)
      ? 'is not a list of keys'
      : keks.some((k) => typeof k !== 'object' || k === null || typeof k.id !== 'string' || typeof k.key !== 'string' || Buffer.from(k.key, 'base64').length !== KEY_BYTES)
        ? 'holds a key without an id or a 32-byte base64 key'
        : null;
    if (bad) throw new InvalidOptionError(`${path} is not a cairn key file: scope ${JSON.stringify(scope)} ${bad}.`);
  }
  return parsed;
}

/** The scope's KEKs in `file` (its own entry: a scope named like an Object member is a scope too). */
function keksOf(file: KeyFileContents, scope: string): KeyFileContents['scopes'][string] | undefined {
  return Object.hasOwn(file.scopes, scope) ? file.scopes[scope] : undefined;
}

/** How long a lock file may stand before it is taken for one left by a process that died holding it. */
const STALE_LOCK_MS = 10_000;

/**
 * Runs `change` on the key file as it is on disk now, holding `<path>.lock` (created
 * exclusively) while it reads, changes and rewrites it: other processes, and other
 * `keyFile` providers of the same path, write the same file, and a change made from a
 * copy read earlier would drop the KEKs they added since (their data unreadable) or
 * bring back KEKs an erasure destroyed. `change` returns null to write nothing.
 */
async function underLock<T>(path: string, change: (file: KeyFileContents) => { next: KeyFileContents | null; result: T }, save: (next: KeyFileContents) => void): Promise<{ file: KeyFileContents; result: T }> {
  const lock = `${path}.lock`;
  for (;;) {
    let fd: number;
    try {
      fd = openSync(lock, 'wx', 0o600);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== 'EEXIST') throw new InvalidOptionError(`the key file ${path} cannot be written (${code ?? (err as Error).message}).`, { cause: err });
      try {
        if (Date.now() - statSync(lock).mtimeMs > STALE_LOCK_MS) rmSync(lock, { force: true });
      } catch {
        // Released meanwhile: try again.
      }
      await sleep(5 + Math.random() * 10);
      continue;
    }
    try {
      closeSync(fd);
      const file = readKeyFile(path) ?? { version: 1 as const, scopes: {} };
      const { next, result } = change(file);
      if (next) save(next);
      return { file: next ?? file, result };
    } finally {
      rmSync(lock, { force: true });
    }
  }
}

/**
 * Throws, without writing anything, what the first use of `keyFile(path)` would for a
 * file that cannot be read or is not a key file, or for one that is not there and could
 * not be created (its folder missing, not a folder, or not writable): for a command
 * that is about to create the database the keys are for, and would otherwise leave an
 * empty one behind when the keys fail.
 */
export function checkKeyFile(path: string): void {
  if (typeof path !== 'string' || path === '') throw new InvalidOptionError('keyFile(path) needs the path of the key file.');
  if (readKeyFile(path) !== null) return;
  const folder = dirname(path);
  let code: string | undefined;
  try {
    if (!statSync(folder).isDirectory()) code = 'ENOTDIR';
    else accessSync(folder, constants.W_OK);
  } catch (err) {
    code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
  }
  // As save() says it.
  if (code) throw new InvalidOptionError(`the key file ${path} cannot be written (${code}).`);
}

/**
 * KEKs in a local JSON file (created with mode 0600; rewritten atomically on every
 * change): one per scope, created when the scope first needs one. Destroying a scope
 * removes its KEKs from the file, so its data keys cannot be unwrapped from any copy
 * of the database. Keep the file out of the database's backups (that is the point),
 * and back it up on its own terms.
 */
export function keyFile(path: string): KeyProvider {
  if (typeof path !== 'string' || path === '') throw new InvalidOptionError('keyFile(path) needs the path of the key file.');
  let contents: KeyFileContents | null = null;
  /** The file was not there when last read (it is created by the first key it stores). */
  let absent = false;

  function load(): KeyFileContents {
    if (contents) return contents;
    const read = readKeyFile(path);
    absent = read === null;
    return (contents = read ?? { version: 1, scopes: {} });
  }
  function save(next: KeyFileContents): void {
    const temp = `${path}.${process.pid}.tmp`;
    try {
      const fd = openSync(temp, 'w', 0o600);
      try {
        writeSync(fd, JSON.stringify(next));
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      renameSync(temp, path);
    } catch (err) {
      // A folder that is not there or not writable: said as for a file that cannot be read, not as a bare ENOENT.
      rmSync(temp, { force: true });
      throw new InvalidOptionError(`the key file ${path} cannot be written (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}).`, { cause: err });
    }
    contents = next;
  }
  /** Applies `change` to the file as it is on disk (see underLock), and keeps what it holds then. */
  async function update<T>(change: (file: KeyFileContents) => { next: KeyFileContents | null; result: T }): Promise<T> {
    const { file, result } = await underLock(path, change, save);
    contents = file;
    absent = false;
    return result;
  }
  /**
   * The scope's newest KEK as the file holds it now: read again, not from the copy held
   * since the last read, because another process may have destroyed the scope (an
   * erasure) or rotated it since. Rare: only a new or re-wrapped data key is wrapped.
   */
  async function current(scope: string): Promise<{ id: string; key: Buffer }> {
    contents = null;
    let keks = keksOf(load(), scope);
    if (!keks?.length) {
      keks = await update((file) => {
        const there = keksOf(file, scope);
        if (there?.length) return { next: null, result: there };
        const made = [{ id: `kek-${randomBytes(6).toString('hex')}`, key: randomBytes(KEY_BYTES).toString('base64'), createdAt: Date.now() }];
        return { next: { ...file, scopes: { ...file.scopes, [scope]: made } }, result: made };
      });
    }
    const newest = keks[keks.length - 1]!;
    return { id: newest.id, key: Buffer.from(newest.key, 'base64') };
  }

  return {
    name: 'key-file',
    destroys: true,
    async wrapKey(scope, dataKey) {
      const kek = await current(scope);
      return { kekId: kek.id, wrapped: wrapWith(kek.key, scope, dataKey) };
    },
    async unwrapKey(scope, wrapped) {
      // Re-read once on a miss: another process may have created or rotated the scope's KEK.
      let kek = keksOf(load(), scope)?.find((k) => k.id === wrapped.kekId);
      if (!kek) {
        contents = null;
        kek = keksOf(load(), scope)?.find((k) => k.id === wrapped.kekId);
      }
      if (!kek && absent) throw new KeyUnavailableError(wrapped.kekId, `there is no key file at ${path} (no such file): pass the key file the data was encrypted with.`);
      if (!kek) throw new KeyUnavailableError(wrapped.kekId, `the key file ${path} holds no key-encryption key ${wrapped.kekId} for scope ${JSON.stringify(scope)} (destroyed by an erasure, or another key file).`);
      return unwrapWith(Buffer.from(kek.key, 'base64'), scope, wrapped.wrapped, wrapped.kekId);
    },
    async rotate(scope) {
      const kek = { id: `kek-${randomBytes(6).toString('hex')}`, key: randomBytes(KEY_BYTES).toString('base64'), createdAt: Date.now() };
      return update((file) => ({ next: { ...file, scopes: { ...file.scopes, [scope]: [...(keksOf(file, scope) ?? []), kek] } }, result: kek.id }));
    },
    async destroyScope(scope) {
      await update((file) => {
        if (!Object.hasOwn(file.scopes, scope)) return { next: null, result: undefined };
        const { [scope]: _gone, ...rest } = file.scopes;
        return { next: { ...file, scopes: rest }, result: undefined };
      });
    },
  };
}

/**
 * One master key from an environment variable (32 bytes, base64 or hex; default
 * `CAIRN_MASTER_KEY`), read when first needed. Each scope's KEK is derived from it
 * with HKDF-SHA-256, salted by the KEK's id; `rotate` moves the scope to a new id.
 * There is nothing per scope to destroy: erasure with this provider deletes the
 * scope's wrapped data keys from the live database, but a backup taken before the
 * erasure, together with the master key, still opens. Use {@link keyFile} or a KMS
 * where backups must be covered too.
 */
export function envKey(variable = 'CAIRN_MASTER_KEY'): KeyProvider {
  let master: Buffer | null = null;
  const rotated = new Map<string, string>();
  function masterKey(): Buffer {
    if (master) return master;
    const text = process.env[variable];
    if (!text) throw new KeyUnavailableError(variable, `the environment variable ${variable} is not set (it must hold a 32-byte key, base64 or hex).`);
    const key = /^[0-9a-fA-F]{64}$/.test(text) ? Buffer.from(text, 'hex') : Buffer.from(text, 'base64');
    if (key.length !== KEY_BYTES) throw new InvalidOptionError(`${variable} must hold a 32-byte key (base64 or 64 hex digits); it decodes to ${key.length} bytes.`);
    return (master = key);
  }
  function kek(scope: string, id: string): Buffer {
    return Buffer.from(hkdfSync('sha256', masterKey(), Buffer.from(id), Buffer.from(`cairn-kek|${scope}`), KEY_BYTES));
  }
  return {
    name: 'env',
    destroys: false,
    async wrapKey(scope, dataKey) {
      const id = rotated.get(scope) ?? 'env-1';
      return { kekId: id, wrapped: wrapWith(kek(scope, id), scope, dataKey) };
    },
    async unwrapKey(scope, wrapped) {
      return unwrapWith(kek(scope, wrapped.kekId), scope, wrapped.wrapped, wrapped.kekId);
    },
    async rotate(scope) {
      const id = `env-${randomBytes(6).toString('hex')}`;
      rotated.set(scope, id);
      return id;
    },
    async destroyScope() {},
  };
}
