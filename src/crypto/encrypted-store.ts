/**
 * @module crypto/encrypted-store
 * The store of an encrypted engine: every value (and every value a `lastWins` overwrite
 * record keeps) is sealed for the scope `storeScope(namespace)` names, bound to
 * (namespace, key). In the clear: namespaces, keys, versions, times, expiry and
 * idempotency keys.
 *
 * It is a {@link BaseStore} over the inner store's own storage primitives, so every rule
 * that needs the plaintext runs here, on opened values, exactly as the engines run it:
 * validation before sealing (the codec's UnencodableValueError and ValueTooDeepError,
 * InvalidKeyError), declared merge rules (a merge function sees opened values),
 * `update`'s compare-and-set loop, and value filters, which the inner engine's SQL
 * cannot evaluate over ciphertext: a filtered search scans the prefix in pages and
 * matches the opened values with the memory engine's matcher (`store/filter.ts`), the
 * reference every engine agrees with. Versions, expiry, idempotency and the
 * transaction stay the inner engine's.
 *
 * The keyring's namespaces (`['cairn', 'data-keys']`, `['cairn', 'data-key-current']`,
 * `['cairn', 'tenant-keys']`: wrapped data keys and which is current) belong to the engine, not to the application: the keyring writes
 * them through the inner store, and this store neither lists, reads nor writes them.
 */
import type { Store, StoreCapabilities, StoreItem, StoreOpResult } from '../contracts/store.js';
import { decode } from '../codec/tagged-json.js';
import { InvalidKeyError, InvalidOptionError } from '../errors.js';
import { decodeNamespace, encodeNamespace } from '../internal/keys.js';
import type { Lifecycle } from '../internal/lifecycle.js';
import { BaseStore, type NamespaceRows, type ScanQuery } from '../store/base-store.js';
import { matches } from '../store/filter.js';
import type { OverwriteRow, PreparedOp, StoredRow } from '../store/rows.js';
import { isSealed, sealText } from './envelope.js';
import { CURRENT_KEY_NS, DATA_KEYS_NS, TENANT_KEYS_NS } from './keyring.js';
import { rowAad, type Sealer } from './sealer.js';

/** The storage primitives of a {@link BaseStore}, reached on the inner store. */
interface StorePrimitives {
  readonly lifecycle?: Lifecycle;
  readRow(ns: string, key: string): Promise<StoredRow | null>;
  applyOps(ops: PreparedOp[], now: number): Promise<StoreOpResult[]>;
  scan(query: ScanQuery): Promise<StoredRow[]>;
  scanNamespaces(ns: string, now: number): Promise<string[]>;
  sweep(now: number): Promise<number>;
  readOverwrites(ns: string, afterId: number, limit: number | null): Promise<OverwriteRow[]>;
  deleteOverwrites(ns: string, under: boolean): Promise<number>;
  scanStoredNamespaces(): Promise<string[]>;
  deleteNamespace(ns: string, now: number): Promise<NamespaceRows>;
}

/** Rows a filtered search opens per round trip. */
const FILTER_PAGE = 500;
/** A sealed value as the inner store keeps it: a JSON string holding the envelope. */
const SEALED_JSON = '"~c1:';

const KEYRING_NAMESPACES = [encodeNamespace(DATA_KEYS_NS), encodeNamespace(CURRENT_KEY_NS), encodeNamespace(TENANT_KEYS_NS)];

function keyringRow(ns: string): boolean {
  return KEYRING_NAMESPACES.some((prefix) => ns.startsWith(prefix));
}

const valueAad = (ns: string, key: string) => rowAad('store', ns, key);

export class EncryptedStore extends BaseStore {
  readonly engine: string;
  readonly capabilities: StoreCapabilities;
  private readonly primitives: StorePrimitives;

  constructor(
    inner: Store,
    private readonly sealer: Sealer,
    private readonly scopeOf: (namespace: readonly string[]) => string,
  ) {
    if (!(inner instanceof BaseStore)) {
      throw new InvalidOptionError(`encrypted(): the ${inner.engine} engine's store does not extend BaseStore (cairn/engine-kit), so its values cannot be sealed beneath its rules.`);
    }
    const primitives = inner as unknown as StorePrimitives;
    super(primitives.lifecycle);
    this.primitives = primitives;
    this.engine = inner.engine;
    // Filters are evaluated here on opened values, whatever the inner engine's SQL can do.
    this.capabilities = { ...inner.capabilities, filters: true };
  }

  protected async readRow(ns: string, key: string): Promise<StoredRow | null> {
    if (keyringRow(ns)) return null;
    const row = await this.primitives.readRow(ns, key);
    return row && this.openRow(row);
  }

  protected async applyOps(ops: PreparedOp[], now: number): Promise<StoreOpResult[]> {
    for (const op of ops) {
      if (keyringRow(op.ns)) throw new InvalidKeyError(`namespace ${op.namespace.join('/')} is the keyring's (wrapped data keys): the engine writes it, an application does not.`);
    }
    const envelopes = new Map<number, string>();
    const sealed = await Promise.all(
      ops.map(async (op, i) => {
        if (op.kind !== 'put') return op;
        const key = await this.sealer.keyFor(this.scopeOf(op.namespace));
        const envelope = sealText(key, op.text, valueAad(op.ns, op.key));
        envelopes.set(i, envelope);
        return { ...op, text: JSON.stringify(envelope) };
      }),
    );
    const results = await this.primitives.applyOps(sealed, now);
    return Promise.all(
      results.map(async (result, i) => {
        const op = ops[i]!;
        if (result === null || typeof result !== 'object' || op.kind !== 'put') return result;
        const item = result as StoreItem;
        // The value just written is the op's own plaintext; one an idempotent retry kept is opened.
        if (item.value === envelopes.get(i)) return { ...item, value: decode(op.text, `store item ${op.key}`) };
        if (typeof item.value !== 'string' || !isSealed(item.value)) {
          await this.sealer.open(JSON.stringify(item.value), valueAad(op.ns, op.key), this.where(op.ns, op.key));
          return item;
        }
        return { ...item, value: decode(await this.openText(op.ns, op.key, JSON.stringify(item.value)), `store item ${op.key}`) };
      }),
    );
  }

  protected async scan(query: ScanQuery): Promise<StoredRow[]> {
    const hidesKeyring = KEYRING_NAMESPACES.some((prefix) => prefix.startsWith(query.ns));
    if (query.conditions.length === 0 && !hidesKeyring) return Promise.all((await this.primitives.scan(query)).map((row) => this.openRow(row)));
    // Filters (and the keyring's rows, left out) are settled here, so offset and limit too:
    // the prefix is read in pages from the cursor on, and what passes is counted.
    const found: StoredRow[] = [];
    let skip = query.offset;
    let after = query.after;
    for (;;) {
      const page = await this.primitives.scan({ ...query, conditions: [], after, offset: 0, limit: FILTER_PAGE });
      for (const stored of page) {
        if (keyringRow(stored.ns)) continue;
        const row = await this.openRow(stored);
        if (query.conditions.length > 0 && !matches(JSON.parse(row.value), query.conditions)) continue;
        if (skip > 0) {
          skip--;
          continue;
        }
        found.push(row);
        if (query.limit !== null && found.length >= query.limit) return found;
      }
      if (page.length < FILTER_PAGE) return found;
      const last = page[page.length - 1]!;
      after = { ns: last.ns, key: last.key };
    }
  }

  protected async scanNamespaces(ns: string, now: number): Promise<string[]> {
    return (await this.primitives.scanNamespaces(ns, now)).filter((found) => !keyringRow(found));
  }

  protected sweep(now: number): Promise<number> {
    return this.primitives.sweep(now);
  }

  protected override deleteOverwrites(ns: string, under: boolean): Promise<number> {
    return this.primitives.deleteOverwrites(ns, under);
  }

  protected override async scanStoredNamespaces(): Promise<string[]> {
    return (await this.primitives.scanStoredNamespaces()).filter((found) => !keyringRow(found));
  }

  protected override deleteNamespace(ns: string, now: number): Promise<NamespaceRows> {
    if (keyringRow(ns)) throw new InvalidKeyError('the keyring\'s namespaces are the engine\'s: they are not purged through its store.');
    return this.primitives.deleteNamespace(ns, now);
  }

  protected async readOverwrites(ns: string, afterId: number, limit: number | null): Promise<OverwriteRow[]> {
    const rows = (await this.primitives.readOverwrites(ns, afterId, limit)).filter((row) => !keyringRow(row.ns));
    return Promise.all(
      rows.map(async (row) => (row.overwritten ? { ...row, overwritten: { ...row.overwritten, value: await this.openText(row.ns, row.key, row.overwritten.value) } } : row)),
    );
  }

  /** The row with its value opened (tombstones and the keyring's rows as they are). */
  private async openRow(row: StoredRow): Promise<StoredRow> {
    if (row.deleted) return row;
    return { ...row, value: await this.openText(row.ns, row.key, row.value) };
  }

  /** The tagged JSON text a stored value text holds, opened when sealed. */
  private async openText(ns: string, key: string, stored: string): Promise<string> {
    if (!stored.startsWith(SEALED_JSON)) return this.sealer.open(stored, valueAad(ns, key), this.where(ns, key));
    return this.sealer.open(JSON.parse(stored) as string, valueAad(ns, key), this.where(ns, key));
  }

  private where(ns: string, key: string): string {
    return `store item ${[...decodeNamespace(ns), key].join('/')}`;
  }
}
