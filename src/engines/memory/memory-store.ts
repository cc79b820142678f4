/**
 * @module engines/memory/memory-store
 * The cross-thread store in process memory. A transaction runs synchronously on a
 * staged copy of the rows it touches and is committed only if every operation
 * succeeded, so a batch is all or nothing and no other call can interleave with it.
 * Values are kept as encoded text: the store holds copies, never the caller's objects.
 */
import type { StoreCapabilities, StoreOpResult } from '../../contracts/store.js';
import type { Lifecycle } from '../../internal/lifecycle.js';
import { compareCodePoints } from '../../internal/keys.js';
import { BaseStore, type NamespaceRows, type ScanQuery } from '../../store/base-store.js';
import { matches } from '../../store/filter.js';
import { decide, isLive, type OverwriteRow, type PreparedOp, type StoredRow } from '../../store/rows.js';

const order = (a: { ns: string; key: string }, b: { ns: string; key: string }) => compareCodePoints(a.ns, b.ns) || compareCodePoints(a.key, b.key);

/**
 * The store contract in memory. `memory()` builds one.
 *
 * @example `const store = memory().store; await store.put(['user', '42'], 'prefs', { theme: 'dark' });`
 */
export class MemoryStore extends BaseStore {
  readonly engine = 'memory';
  readonly capabilities: StoreCapabilities = { ttl: true, sweep: true, filters: true, crossProcess: false };
  private readonly rows = new Map<string, StoredRow>();
  private readonly overwrites: OverwriteRow[] = [];
  /** Ids of overwrite records never repeat, as the SQL engines' never do: records are deleted with a thread's pins. */
  private lastOverwriteId = 0;

  constructor(lifecycle: Lifecycle) {
    super(lifecycle);
  }

  private id(ns: string, key: string): string {
    return `${ns}\u0000${key}`;
  }

  protected async readRow(ns: string, key: string): Promise<StoredRow | null> {
    return this.rows.get(this.id(ns, key)) ?? null;
  }

  protected async applyOps(ops: PreparedOp[], now: number): Promise<StoreOpResult[]> {
    const staged = new Map<string, StoredRow>();
    const records: OverwriteRow[] = [];
    const results = ops.map((op, index) => {
      const id = this.id(op.ns, op.key);
      const step = decide(op, staged.get(id) ?? this.rows.get(id) ?? null, now, this.engine, index);
      if (step.kind === 'write') {
        staged.set(id, step.row);
        if (step.overwrite) records.push({ ...step.overwrite, id: this.lastOverwriteId + records.length + 1 });
      }
      return step.result;
    });
    for (const [id, row] of staged) this.rows.set(id, row);
    this.overwrites.push(...records);
    this.lastOverwriteId += records.length;
    return results;
  }

  protected async scan(query: ScanQuery): Promise<StoredRow[]> {
    const { ns, now, after, conditions } = query;
    const found = [...this.rows.values()]
      .filter((r) => r.ns.startsWith(ns) && isLive(r, now) && (!after || order(r, after) > 0))
      .filter((r) => conditions.length === 0 || matches(JSON.parse(r.value), conditions))
      .sort(order);
    return found.slice(query.offset, query.limit === null ? undefined : query.offset + query.limit);
  }

  protected async scanNamespaces(ns: string, now: number): Promise<string[]> {
    const found = new Set<string>();
    for (const row of this.rows.values()) if (row.ns.startsWith(ns) && isLive(row, now)) found.add(row.ns);
    return [...found].sort(compareCodePoints);
  }

  protected async sweep(now: number): Promise<number> {
    let swept = 0;
    for (const [id, row] of this.rows) {
      if (!row.deleted && row.expiresAt !== null && row.expiresAt <= now) {
        this.rows.set(id, { ...row, value: 'null', deleted: true, lastWriteKey: null, updatedAt: now, expiresAt: null });
        swept++;
      }
    }
    return swept;
  }

  protected override async deleteOverwrites(ns: string, under: boolean): Promise<number> {
    const before = this.overwrites.length;
    for (let i = this.overwrites.length - 1; i >= 0; i--) {
      const found = this.overwrites[i]!.ns;
      if (under ? found.startsWith(ns) : found === ns) this.overwrites.splice(i, 1);
    }
    return before - this.overwrites.length;
  }

  protected override async scanStoredNamespaces(): Promise<string[]> {
    const found = new Set<string>();
    for (const row of this.rows.values()) found.add(row.ns);
    for (const record of this.overwrites) found.add(record.ns);
    return [...found].sort(compareCodePoints);
  }

  protected override async deleteNamespace(ns: string, now: number): Promise<NamespaceRows> {
    let rows = 0;
    let live = 0;
    for (const [id, row] of this.rows) {
      if (row.ns !== ns) continue;
      rows++;
      if (isLive(row, now)) live++;
      this.rows.delete(id);
    }
    return { rows, live, overwrites: await this.deleteOverwrites(ns, false) };
  }

  protected async readOverwrites(ns: string, afterId: number, limit: number | null): Promise<OverwriteRow[]> {
    const found = this.overwrites.filter((r) => r.id > afterId && r.ns.startsWith(ns));
    return limit === null ? found : found.slice(0, limit);
  }

  /**
   * Deletes the rows under the stored namespace `ns` whose key ends with `suffix`, live
   * or not, with their overwrite records: a deleted thread's pins leave nothing behind.
   * Returns how many items were live. Called by the engine's `deleteThread`.
   */
  dropKeys(ns: string, suffix: string): number {
    let live = 0;
    const now = Date.now();
    for (const [id, row] of this.rows) {
      if (row.ns !== ns || !row.key.endsWith(suffix)) continue;
      if (isLive(row, now)) live++;
      this.rows.delete(id);
      for (let i = this.overwrites.length - 1; i >= 0; i--) if (this.overwrites[i]!.ns === ns && this.overwrites[i]!.key === row.key) this.overwrites.splice(i, 1);
    }
    return live;
  }

  clear(): void {
    this.rows.clear();
    this.overwrites.length = 0;
  }
}
