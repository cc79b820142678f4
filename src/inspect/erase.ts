/**
 * @module inspect/erase
 * Erasure: everything of one tenant (or of one thread without a tenant) deleted, and
 * on an encrypted engine its keys destroyed, so that what cannot be deleted (a backup
 * taken before, an export, a copy of the artifact store) cannot be read either.
 *
 * In order:
 * 1. **Threads**: every thread of the tenant (or the one thread) is deleted with all
 *    it owns (`Checkpointer.deleteThread`: positions of every namespace, items,
 *    snapshots, pending writes, failures, ledger entries, signals, its pins). A thread
 *    a run holds is fenced first, as `cancelThread` does: the lease is taken over, so
 *    the holder's next commit or renewal throws LeaseLostError and writes nothing.
 * 2. **Store rows** whose scope is the erased one (`engine.encryption.storeScope`, and
 *    any namespace under `options.store`), purged (`Store.purgeNamespaces`): live items,
 *    the tombstones of deleted and expired ones (their namespaces and keys), the overwrite
 *    records `lastWins` kept (the values it replaced); and the global pins of erased artifacts.
 * 3. **Artifacts**: with `options.artifacts`, every artifact of the tenant (its view's
 *    refs) and every one the erased threads and rows referred to, unless a thread or
 *    row that stays refers to it too: records and bytes deleted at once (`purge`).
 * 4. **Keys** (encrypted engines): the scope's data keys and, in the key provider, its
 *    key-encryption keys (`Keyring.destroyScope`). With a provider that `destroys`
 *    (`keyFile`, a KMS), every copy taken before is unreadable; with `envKey` the copies
 *    open with the master key still, and the report says so.
 * 5. **Files**: the deletes run under `engine.purging` (SQLite: `secure_delete`, then the
 *    WAL checkpointed and truncated; PostgreSQL: VACUUM of cairn's tables), and the
 *    report lists what remains where.
 *
 * Ids, tenant names, namespaces, store keys, artifact keys and thread metadata are
 * names, not payloads: an encrypted engine keeps them in the clear, so a backup taken
 * before the erasure still shows them. Keep personal data out of them.
 *
 * @example
 * ```ts
 * const report = await eraseTenant(engine, { tenant: 'acme', artifacts });
 * console.log(report.threads.length, report.keys.destroyed, report.covers.backups);
 * ```
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { ArtifactRef, ArtifactStore } from '../contracts/artifact-store.js';
import type { DeletedThreadRows, ThreadRecord } from '../contracts/threads.js';
import type { Engine, PurgeReport } from '../contracts/engine.js';
import type { PurgedNamespaces } from '../contracts/store.js';
import { LEASE_MS } from '../defaults.js';
import { InvalidOptionError, NotSupportedError, ThreadBusyError, ThreadNotFoundError } from '../errors.js';
import { checkTenant, findArtifactRefs, isArtifactRef, parseRefId } from '../artifacts/refs.js';
import { listArtifacts } from '../artifacts/helpers.js';
import { tenantScope, threadScope } from '../crypto/scopes.js';
import { DATA_KEYS_NS } from '../crypto/keyring.js';
import { PIN_NAMESPACE } from '../internal/pins.js';
import { encodeNamespace } from '../internal/keys.js';
import { walkThreadRefs } from './gc.js';
import { checkOptionKeys } from '../internal/option-keys.js';

/** Options of {@link eraseTenant}: whose data (a tenant, or one thread without one), and where else it lives. */
export interface EraseOptions {
  /** Erase this tenant: its threads, its store rows, its artifacts, its keys. */
  tenant?: string;
  /** Erase this thread, which has no tenant (a tenant's thread shares the tenant's keys: erase the tenant). */
  thread?: string;
  /** The unscoped artifact store the threads wrote to: their artifacts go too. */
  artifacts?: ArtifactStore;
  /** Store namespaces (prefixes) that belong to the tenant, beside those the engine's `storeScope` maps to it. */
  store?: string[][];
  /**
   * PostgreSQL: `'full'` rewrites cairn's tables (VACUUM FULL, an exclusive lock per
   * table while it runs), `false` skips the VACUUM; default a plain VACUUM. SQLite:
   * `true` or `'full'` runs VACUUM, rewriting the file without older row versions left
   * in pages' free space; default none (it rewrites the whole file).
   */
  vacuum?: boolean | 'full';
  /** Who erases (kept nowhere: the thread is gone; shown in the report). */
  actor?: string;
}

/** What {@link eraseTenant} deleted and destroyed, and what it could not reach. */
export interface ErasureReport {
  /** The erased scope: `tenant:<t>` or `thread:<id>`. */
  scope: string;
  tenant: string | null;
  /** The threads deleted, in id order. */
  threads: string[];
  /** Threads a live run held, fenced before the delete. */
  fenced: string[];
  /** Rows deleted with the threads, summed. */
  rows: DeletedThreadRows;
  /**
   * Store rows deleted (the tenant's namespaces, those with no live item left included):
   * live items; tombstones, the rows deleted and expired items leave with their namespace
   * and key (null when the store cannot purge them); the overwrite records `lastWins` kept
   * (null when the store cannot delete those); and global pins of erased artifacts.
   */
  store: { items: number; tombstones: number | null; overwrites: number | null; namespaces: string[][]; pins: number };
  /** Artifacts deleted (records, their blobs and the blobs' stored bytes), and those kept because something that stays refers to them. Null without `options.artifacts`. */
  artifacts: { deleted: number; blobs: number; bytes: number; keptShared: number } | null;
  /** The keys destroyed. */
  keys: {
    encrypted: boolean;
    /** The key provider (`key-file`, `env`…), or null on an engine without encryption. */
    provider: string | null;
    /** True when the provider destroyed the scopes' key-encryption keys, so copies taken before cannot be opened. */
    providerDestroys: boolean;
    scopes: string[];
    /** Data keys deleted from the keyring. */
    destroyed: number;
  };
  /** What the engine did to its files, and what remains; null when the engine has no `purging`. */
  files: PurgeReport | null;
  /** Whether copies made before the erasure are covered: unreadable after it. */
  covers: { backups: boolean; exports: boolean; artifactCopies: boolean };
  /** What is not covered, in words. */
  notes: string[];
  /**
   * False when nothing of the scope was found: no thread, no store row, no pin, no
   * artifact and no data key (a mistyped tenant, or one erased before). Erasing again
   * is safe and finds nothing, so this is how a caller tells a typo from an erasure.
   */
  found: boolean;
  actor: string;
}

/** What {@link eraseTenant} takes: a misspelt `artifact` or `stores` would erase less than asked, and say nothing. */
const ERASE_KEYS: readonly (keyof EraseOptions)[] = ['tenant', 'thread', 'artifacts', 'store', 'vacuum', 'actor'];

const ZERO_ROWS: DeletedThreadRows = { positions: 0, items: 0, snapshots: 0, pendingWrites: 0, failures: 0, ledgerEntries: 0, pins: 0, signals: 0 };

/**
 * Erases a tenant (`{ tenant }`) or a thread without one (`{ thread }`): see the
 * module documentation for what goes, in which order, and what copies stay readable.
 * InvalidOptionError without exactly one of them, or for a thread that has a tenant;
 * ThreadNotFoundError for a missing thread. A tenant with nothing left is erased
 * again harmlessly (its keys are destroyed, nothing else is found); a tenant of which
 * nothing at all was found is reported with `found: false`.
 *
 * @example
 * ```ts
 * import { eraseTenant } from 'cairn/inspect';
 * const report = await eraseTenant(engine, { tenant: 'acme', artifacts });
 * if (!report.covers.backups) console.warn(report.notes.join('\n'));
 * ```
 */
export async function eraseTenant(engine: Engine, options: EraseOptions): Promise<ErasureReport> {
  if (options === undefined) throw new InvalidOptionError('eraseTenant takes one options object ({ tenant } or { thread }).');
  checkOptionKeys('eraseTenant', options, ERASE_KEYS);
  const { tenant, thread: threadOnly } = options;
  if (options.vacuum !== undefined && options.vacuum !== true && options.vacuum !== false && options.vacuum !== 'full') throw new InvalidOptionError(`eraseTenant: vacuum must be true, false or 'full', got ${JSON.stringify(options.vacuum)}.`);
  if (options.actor !== undefined && typeof options.actor !== 'string') throw new InvalidOptionError(`eraseTenant: actor must be a string, got ${JSON.stringify(options.actor)}.`);
  if (options.store !== undefined && !(Array.isArray(options.store) && options.store.every((ns) => Array.isArray(ns) && ns.every((label) => typeof label === 'string')))) {
    throw new InvalidOptionError(`eraseTenant: store must be a list of namespaces (lists of labels), got ${JSON.stringify(options.store)}.`);
  }
  for (const ns of options.store ?? []) {
    // [] is a prefix of every namespace: one tenant's erasure would delete every tenant's rows.
    if (ns.length === 0) throw new InvalidOptionError('eraseTenant: store holds an empty namespace, which names every namespace of every tenant: name the prefixes that belong to this one (["tenants", "acme"]). Nothing was erased.');
    // A label no write accepts matches nothing: the rows meant would stay, and the report say nothing.
    encodeNamespace(ns);
  }
  if ((tenant === undefined) === (threadOnly === undefined)) throw new InvalidOptionError('eraseTenant needs exactly one of { tenant } or { thread } (a thread without a tenant).');
  if (tenant !== undefined && (typeof tenant !== 'string' || tenant === '')) throw new InvalidOptionError(`eraseTenant: tenant must be a non-empty string, got ${JSON.stringify(tenant)}.`);
  // A tenant no thread can have (over 256 characters, a control character, a lone surrogate) is InvalidKeyError on every
  // engine, as for a run: the plain engines reported it found: false, an encrypted one failed in its key lookup's filter.
  if (tenant !== undefined) checkTenant(tenant);
  if (options.artifacts && options.artifacts.tenant !== null) throw new InvalidOptionError('eraseTenant needs the unscoped artifact store (it sees every tenant), not a tenant view.');
  const cp = engine.checkpointer;
  const encryption = engine.encryption;
  const scope = tenant !== undefined ? tenantScope(tenant) : threadScope(null, threadOnly!);
  // An encrypted database opened without its keys would be erased without destroying them.
  if (!encryption && (await engine.store.search(DATA_KEYS_NS, { limit: 1 })).items.length) {
    throw new InvalidOptionError('this database holds encryption keys: open it with them (encrypted(engine, { keys }), or --key-file on the command line), so the erasure destroys its keys too.');
  }

  // The threads to erase.
  const victims: ThreadRecord[] = [];
  if (threadOnly !== undefined) {
    const record = await cp.getThread(threadOnly);
    if (!record) throw new ThreadNotFoundError(threadOnly, { engine: engine.name });
    if (record.tenant !== null) {
      throw new InvalidOptionError(`thread ${threadOnly} belongs to tenant ${JSON.stringify(record.tenant)}, whose threads share its keys: erase the tenant (eraseTenant({ tenant })), or delete the thread (deleteThread), which leaves copies readable.`);
    }
    victims.push(record);
  } else {
    for (let after: string | undefined; ; ) {
      const page = await cp.listThreads({ tenant: tenant!, limit: 200, ...(after !== undefined ? { after } : {}) });
      victims.push(...page);
      if (page.length < 200) break;
      after = page[page.length - 1]!.id;
    }
  }
  const victimIds = new Set(victims.map((t) => t.id));

  // What the erased threads and rows refer to: candidates; what stays refers to: kept.
  const candidates = new Map<string, ArtifactRef>();
  const kept = new Set<string>();
  const mark = (into: 'candidates' | 'kept', value: unknown) => {
    for (const ref of findArtifactRefs(value)) {
      if (into === 'kept') kept.add(ref.id);
      else if (!candidates.has(ref.id)) candidates.set(ref.id, ref);
    }
  };
  const belongs = storeBelongs(engine, scope, options.store ?? []);
  const storeNamespaces = await tenantNamespaces(engine, belongs);
  if (options.artifacts) {
    for (const record of victims) await walkThreadRefs(cp, engine.ledger, record, (value) => mark('candidates', value));
    for (let after: string | undefined; ; ) {
      const page = await cp.listThreads({ limit: 200, ...(after !== undefined ? { after } : {}) });
      for (const other of page) if (!victimIds.has(other.id)) await walkThreadRefs(cp, engine.ledger, other, (value) => mark('kept', value));
      if (page.length < 200) break;
      after = page[page.length - 1]!.id;
    }
    const erasedNs = new Set(storeNamespaces.map((ns) => ns.join('\u0000')));
    for (const ns of await engine.store.listNamespaces()) {
      if (ns[0] === 'cairn') continue;
      const into = erasedNs.has(ns.join('\u0000')) ? 'candidates' : 'kept';
      await eachItem(engine, ns, (item) => mark(into, item.value));
    }
    // Every artifact stored for the tenant, referred to or not (a step that never committed, say).
    if (tenant !== undefined) {
      for await (const info of listArtifacts(options.artifacts, { allTenants: true })) if (info.tenant === tenant && !candidates.has(info.ref.id)) candidates.set(info.ref.id, info.ref);
    }
  }

  const work = async () => {
    const fenced: string[] = [];
    const rows: DeletedThreadRows = { ...ZERO_ROWS };
    const deleted: string[] = [];
    for (const record of victims) {
      const result = await deleteFenced(engine, record, fenced);
      if (!result) continue;
      deleted.push(record.id);
      for (const kind of Object.keys(rows) as (keyof DeletedThreadRows)[]) rows[kind] += result[kind] ?? 0;
    }
    // The tenant's namespaces, deleted for good: live items, the tombstones that keep
    // deleted items' namespaces and keys, and the values lastWins overwrites replaced.
    let items = 0;
    let tombstones: number | null = 0;
    let overwrites: number | null = 0;
    let namespaces = storeNamespaces;
    const purged = await purgeStoreNamespaces(engine, belongs);
    if (purged) ({ items, tombstones, overwrites, namespaces } = purged);
    else {
      // A store without it: its items are deleted (each leaving a tombstone), and the overwrite records purged where it can.
      tombstones = null;
      for (const ns of storeNamespaces) {
        const keys: string[] = [];
        await eachItem(engine, ns, (item) => keys.push(item.key));
        for (let i = 0; i < keys.length; i += 200) {
          const results = await engine.store.batch(keys.slice(i, i + 200).map((key) => ({ op: 'delete' as const, namespace: ns, key })));
          items += results.filter((r) => r === true).length;
        }
      }
      const purgeOverwrites = engine.store.purgeOverwrites?.bind(engine.store);
      if (!purgeOverwrites) overwrites = null;
      else {
        for (const ns of storeNamespaces) overwrites += await purgeOverwrites(ns);
        // A named prefix is the tenant's whole: namespaces under it with no live item left keep overwrite records too.
        for (const prefix of options.store ?? []) overwrites += await purgeOverwrites(prefix, { under: true });
      }
    }
    const erasedRefs = [...candidates.values()].filter((ref) => !kept.has(ref.id));
    const erasedIds = new Set(erasedRefs.map((ref) => ref.id));
    let pins = 0;
    if (erasedIds.size) {
      await eachItem(engine, [...PIN_NAMESPACE], async (item) => {
        const ref = (item.value as { ref?: unknown } | null)?.ref;
        const id = isArtifactRef(ref) ? ref.id : item.key;
        if (erasedIds.has(id) && (await engine.store.delete([...PIN_NAMESPACE], item.key))) pins++;
      });
    }
    let artifacts: ErasureReport['artifacts'] = null;
    if (options.artifacts) {
      const keptShared = [...candidates.keys()].filter((id) => kept.has(id)).length;
      const store = options.artifacts as ArtifactStore & { purge?: (refs: readonly ArtifactRef[]) => Promise<{ records: number; blobs: number; bytes: number }> };
      if (typeof store.purge === 'function') {
        const purged = await store.purge(erasedRefs);
        artifacts = { deleted: purged.records, blobs: purged.blobs, bytes: purged.bytes, keptShared };
      } else {
        let count = 0;
        let bytes = 0;
        for (const ref of erasedRefs) {
          parseRefId(ref.id);
          if (await store.delete(ref)) {
            count++;
            bytes += ref.size_bytes;
          }
        }
        artifacts = { deleted: count, blobs: 0, bytes, keptShared };
      }
    }
    const scopes: string[] = [];
    let destroyed = 0;
    if (encryption) {
      // Last: a failure above leaves the keys, so the data that is still there stays readable.
      for (const s of [scope]) {
        destroyed += await encryption.keyring.destroyScope(s);
        scopes.push(s);
      }
    }
    return { fenced, rows, deleted, items, tombstones, overwrites, namespaces, pins, artifacts, scopes, destroyed };
  };

  const purgeOptions = options.vacuum === undefined ? {} : { vacuum: options.vacuum };
  const { result, purge } = engine.purging ? await engine.purging(work, purgeOptions) : { result: await work(), purge: null };

  const providerDestroys = encryption?.provider.destroys === true;
  const notes: string[] = [];
  if (!encryption) {
    notes.push('the engine is not encrypted: backups, exports and copies of the artifact store taken before the erasure still hold the data in the clear; erase or expire them too.');
  } else if (!providerDestroys) {
    notes.push(`the key provider (${encryption.provider.name}) cannot destroy keys: the data keys are gone from this database, but a backup or export taken before the erasure opens with the provider's key still. Use keyFile or a KMS that destroys keys to cover copies.`);
  }
  if (options.artifacts && threadOnly !== undefined) {
    notes.push('artifacts of a thread without a tenant are sealed under the shared artifacts scope: they were deleted, but a copy of the artifact store taken before stays readable. Give threads a tenant to have their artifacts shredded.');
  }
  if (!options.artifacts) notes.push('no artifact store was given: artifacts were not deleted.');
  if (result.tombstones === null) notes.push(`the ${engine.store.engine} store cannot purge namespaces: the erased items' namespaces and keys stay in it as tombstones.`);
  if (result.overwrites === null) notes.push(`the ${engine.store.engine} store cannot delete overwrite records: values lastWins overwrites replaced in the erased namespaces are still kept.`);
  if (!engine.purging) notes.push(`the ${engine.name} engine says nothing of its files: deleted rows may remain in them until the database reuses the space.`);
  return {
    scope,
    tenant: tenant ?? null,
    threads: result.deleted.sort(),
    fenced: result.fenced.sort(),
    rows: result.rows,
    store: { items: result.items, tombstones: result.tombstones, overwrites: result.overwrites, namespaces: result.namespaces, pins: result.pins },
    artifacts: result.artifacts,
    keys: { encrypted: encryption !== undefined, provider: encryption?.provider.name ?? null, providerDestroys, scopes: result.scopes, destroyed: result.destroyed },
    files: purge,
    covers: {
      backups: providerDestroys,
      exports: providerDestroys,
      artifactCopies: providerDestroys && options.artifacts !== undefined && threadOnly === undefined,
    },
    notes,
    found:
      result.deleted.length > 0 || result.fenced.length > 0 || result.items > 0 || (result.tombstones ?? 0) > 0 || (result.overwrites ?? 0) > 0 || result.pins > 0 || (result.artifacts?.deleted ?? 0) > 0 || (result.artifacts?.keptShared ?? 0) > 0 || result.destroyed > 0,
    actor: options.actor ?? 'erase',
  };
}

/** Deletes one thread; a live holder is fenced first (its lease taken over, as cancelThread does). Null when it was gone already. */
async function deleteFenced(engine: Engine, record: ThreadRecord, fenced: string[]): Promise<DeletedThreadRows | null> {
  const cp = engine.checkpointer;
  try {
    const result = await cp.deleteThread(record.id);
    return result.deleted ? result.removed : null;
  } catch (error) {
    if (!ThreadBusyError.is(error)) throw error;
  }
  let lease;
  try {
    lease = await cp.acquireThread(record.id, { owner: { runId: `erase:${randomUUID()}`, pid: process.pid, host: hostname() }, leaseMs: LEASE_MS, takeover: true });
  } catch (error) {
    if (ThreadNotFoundError.is(error)) return null;
    throw error;
  }
  fenced.push(record.id);
  const result = await cp.deleteThread(record.id, { lease });
  return result.deleted ? result.removed : null;
}

/** Whether a store namespace belongs to `scope`: the engine's `storeScope` maps it there, or it is under one of `prefixes`. cairn's own (`cairn/…`) never. */
function storeBelongs(engine: Engine, scope: string, prefixes: string[][]): (ns: readonly string[]) => boolean {
  return (ns) => {
    if (ns[0] === 'cairn') return false;
    const mapped = engine.encryption !== undefined && engine.encryption.storeScope(ns) === scope;
    return mapped || prefixes.some((prefix) => prefix.length <= ns.length && prefix.every((label, i) => ns[i] === label));
  };
}

/** `store.purgeNamespaces(belongs)`, or null when the store has none (an engine of its own whose store implements no purge). */
async function purgeStoreNamespaces(engine: Engine, belongs: (ns: readonly string[]) => boolean): Promise<PurgedNamespaces | null> {
  if (typeof engine.store.purgeNamespaces !== 'function') return null;
  try {
    return await engine.store.purgeNamespaces(belongs);
  } catch (error) {
    // BaseStore's default, before it deletes anything.
    if (NotSupportedError.is(error)) return null;
    throw error;
  }
}

/** The namespaces with a live item that belong to the erased scope. */
async function tenantNamespaces(engine: Engine, belongs: (ns: readonly string[]) => boolean): Promise<string[][]> {
  return (await engine.store.listNamespaces()).filter(belongs);
}

/** Calls `fn` with every item stored in exactly the namespace `ns`. */
async function eachItem(engine: Engine, ns: string[], fn: (item: { key: string; value: unknown }) => unknown): Promise<void> {
  for (let cursor: string | null | undefined; ; ) {
    const page = await engine.store.search(ns, { limit: 500, ...(cursor ? { cursor } : {}) });
    for (const item of page.items) if (item.namespace.length === ns.length) await fn(item);
    if (!page.cursor) break;
    cursor = page.cursor;
  }
}
