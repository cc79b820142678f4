/**
 * @module engines/memory/memory-checkpointer
 * The thread log in process memory: for tests and development. Same contract,
 * same behaviour as the durable engines, nothing survives the process.
 */
import { BaseCheckpointer, extendsHead, judgeCompaction, noneCompacted, packInRanges, wakeAtFor, type CommitRefusal, type CompactionRefusal, type ConsumptionToStore, type HeldThread, type SignalToStore } from '../../checkpointer/base-checkpointer.js';
import type {
  AcquireRequest,
  AttemptFailure,
  CheckpointerCapabilities,
  ClaimRequest,
  CommittedEffect,
  CompactionRequest,
  CompactionResult,
  HeadAnchor,
  ItemPack,
  LeaseHolderQuery,
  PendingWrite,
  PositionItem,
  RangeItem,
  SeqRange,
  StepCommit,
  StoredPosition,
  ThreadPatch,
} from '../../contracts/checkpointer.js';
import { comparePositionItems } from '../../contracts/checkpointer.js';
import type { DeleteThreadResult, LeaseOwner, SignalQuery, StoredSignal, ThreadLease, ThreadRecord } from '../../contracts/threads.js';
import { compareCodePoints } from '../../internal/keys.js';
import { holderIsLive, type HolderInfo } from '../../internal/lease.js';
import type { Lifecycle } from '../../internal/lifecycle.js';
import { PIN_NAMESPACE_STORED, threadPinSuffix } from '../../internal/pins.js';
import { compareThreads, isAfterCursor, threadMatches, type NormalizedThreadQuery } from '../../internal/thread-query.js';

interface ThreadRow {
  record: ThreadRecord;
  /**
   * The times `record.updatedAt` is the later of, as the SQL engines keep them: the
   * thread's own (its creation, a status change, an update) and its root head's
   * position's (null before the first commit). A child run's commit moves neither.
   */
  ownUpdatedAt: number;
  headAt: number | null;
  holder: HolderInfo;
  epoch: number;
  positions: Map<string, Map<number, StoredPosition>>;
  /** The anchored head per namespace: seq and hash of its newest position. */
  heads: Map<string, HeadAnchor>;
  items: Map<string, Map<number, PositionItem[]>>;
  /** Item packs per namespace, by ascending toSeq (each commit's end after the last). */
  packs: Map<string, ItemPack[]>;
  snapshots: Map<string, Map<number, string>>;
  pending: Map<string, PendingWrite>;
  failures: AttemptFailure[];
  /** Signals by ascending id (1, 2, 3…: the id is the index + 1). */
  signals: StoredSignal[];
}

/** True when a worker may claim the thread at `now` (its holder aside): running, or waiting and due. */
/** A thread's updatedAt: the later of its own time and its root head's (as `threadOf` reads SQL rows). */
function updatedAtOf(row: ThreadRow): number {
  return Math.max(row.ownUpdatedAt, row.headAt ?? 0);
}

function claimable(record: ThreadRecord, now: number): boolean {
  return record.status === 'running' || (record.status === 'waiting' && record.wakeAt !== null && record.wakeAt <= now);
}

const inRanges = (seq: number, ranges: SeqRange[]) => ranges.some((r) => seq >= r.from && seq <= r.to);

/**
 * What a thread owns outside the thread log, in the same engine: `deleteThread` removes
 * it in the same synchronous turn (the memory engine's transaction).
 */
export interface MemoryThreadCascade {
  /** Deletes the thread's ledger entries; returns how many. */
  dropLedger(threadId: string): number;
  /** Deletes the store items under `ns` whose key ends with `suffix` (a thread's pins); returns how many. */
  dropKeys(ns: string, suffix: string): number;
  /** Deletes the thread's ledger entries of namespace `ns` whose step seq `drop` says goes; returns how many. */
  dropLedgerSteps?(threadId: string, ns: string, drop: (seq: number) => boolean): number;
  /** Stores the ledger entries of the effects a step commit carries (see {@link StepCommit.effects}). */
  commitEffects?(effects: readonly CommittedEffect[]): void;
}

/**
 * The thread log contract in process memory. `memory()` builds one; every call runs
 * synchronously on the maps below, so each is atomic.
 *
 * @example `const cp = memory().checkpointer;`
 */
export class MemoryCheckpointer extends BaseCheckpointer {
  readonly engine = 'memory';
  readonly capabilities: CheckpointerCapabilities = { claims: true, wakeUps: true, leaseExpiry: true, leaseHolders: true, itemPacks: true };
  private readonly threads = new Map<string, ThreadRow>();
  private readonly listeners = new Set<(threadId: string) => void>();

  constructor(
    lifecycle: Lifecycle,
    private readonly cascade?: MemoryThreadCascade,
  ) {
    super(lifecycle);
  }

  /** The thread's row while `lease` holds it, else undefined. */
  private held(lease: ThreadLease): ThreadRow | undefined {
    const row = this.threads.get(lease.threadId);
    return row && row.holder.runId === lease.runId && row.epoch === lease.epoch ? row : undefined;
  }

  private judged(row: ThreadRow | undefined): HeldThread | null {
    return row ? { status: row.record.status, holder: row.holder, epoch: row.epoch, now: Date.now() } : null;
  }

  /** True when the thread exists (the engine's ledger asks before writing an entry). */
  hasThread(threadId: string): boolean {
    return this.threads.has(threadId);
  }

  /** True when `lease` holds its thread (the engine's ledger fences its discards with it). */
  holds(lease: ThreadLease): boolean {
    return this.held(lease) !== undefined;
  }

  /** Forgets every thread: the engine's close. */
  clear(): void {
    this.threads.clear();
    this.listeners.clear();
  }

  protected async readThread(threadId: string): Promise<ThreadRecord | null> {
    const row = this.threads.get(threadId);
    return row ? structuredClone(row.record) : null;
  }

  protected async queryThreads(q: NormalizedThreadQuery): Promise<ThreadRecord[]> {
    return [...this.threads.values()]
      .map((r) => r.record)
      .filter((t) => threadMatches(t, q) && isAfterCursor(t, q))
      .sort(compareThreads(q))
      .slice(0, q.limit ?? Infinity)
      .map((t) => structuredClone(t));
  }

  protected async removeThread(threadId: string, judge: (held: HeldThread | null) => DeleteThreadResult | null): Promise<DeleteThreadResult> {
    const row = this.threads.get(threadId);
    const verdict = judge(this.judged(row));
    if (verdict || !row) return verdict ?? { deleted: false, threadId, reason: 'missing' };
    const count = <V>(byNs: Map<string, Map<number, V>>, size: (v: V) => number = () => 1) =>
      [...byNs.values()].reduce((n, inner) => n + [...inner.values()].reduce((m, v) => m + size(v), 0), 0);
    const removed = {
      signals: row.signals.length,
      positions: count(row.positions),
      items: count(row.items, (items) => items.length),
      snapshots: count(row.snapshots),
      pendingWrites: row.pending.size,
      failures: row.failures.length,
      ledgerEntries: this.cascade?.dropLedger(threadId) ?? 0,
      pins: this.cascade?.dropKeys(PIN_NAMESPACE_STORED, threadPinSuffix(threadId)) ?? 0,
    };
    this.threads.delete(threadId);
    return { deleted: true, threadId, removed };
  }

  protected async readFailures(threadId: string): Promise<AttemptFailure[]> {
    return structuredClone(this.threads.get(threadId)?.failures ?? []);
  }

  protected async acquire(threadId: string, request: AcquireRequest, admit: (held: HeldThread | null) => 'create' | 'take'): Promise<ThreadLease> {
    const now = Date.now();
    let row = this.threads.get(threadId);
    if (admit(this.judged(row)) === 'create') {
      const create = request.create!;
      row = {
        record: {
          id: threadId,
          kind: create.kind,
          status: 'running',
          head: null,
          attempts: 0,
          tenant: create.tenant,
          metadata: structuredClone(create.metadata),
          lastError: null,
          wakeAt: null,
          createdAt: create.createdAt ?? now,
          updatedAt: create.updatedAt ?? create.createdAt ?? now,
        },
        ownUpdatedAt: create.updatedAt ?? create.createdAt ?? now,
        headAt: null,
        holder: { runId: null, pid: null, host: null, leaseUntil: null },
        epoch: 0,
        positions: new Map(),
        heads: new Map(),
        items: new Map(),
        packs: new Map(),
        snapshots: new Map(),
        pending: new Map(),
        failures: [],
        signals: [],
      };
      this.threads.set(threadId, row);
    }
    return this.grant(row!, request, now);
  }

  /** Gives `row` a fresh lease (epoch + 1) for `request.owner`. */
  private grant(row: ThreadRow, request: { owner: AcquireRequest['owner']; leaseMs: number }, now: number): ThreadLease {
    row.epoch++;
    row.holder = { runId: request.owner.runId, pid: request.owner.pid, host: request.owner.host, leaseUntil: now + request.leaseMs };
    return { threadId: row.record.id, runId: request.owner.runId, epoch: row.epoch, expiresAt: now + request.leaseMs, thread: structuredClone(row.record) };
  }

  protected override async claim(request: ClaimRequest): Promise<ThreadLease[]> {
    const now = Date.now();
    const runnable = [...this.threads.values()]
      .filter((row) => claimable(row.record, now) && (request.graph === undefined || row.record.metadata.graph === request.graph) && !holderIsLive(row.holder, now))
      .sort((a, b) => a.record.updatedAt - b.record.updatedAt);
    return runnable.slice(0, request.limit).map((row) => this.grant(row, request, now));
  }

  protected override async earliestLeaseExpiry(graph: string | undefined): Promise<number | null> {
    let earliest: number | null = null;
    for (const row of this.threads.values()) {
      if (graph !== undefined && row.record.metadata.graph !== graph) continue;
      const until = row.holder.runId === null ? null : row.holder.leaseUntil;
      const { status, wakeAt } = row.record;
      // A waiting thread held by a lease is claimable once both its time and the lease are up.
      const at = status === 'running' ? until : status === 'waiting' && wakeAt !== null ? Math.max(wakeAt, until ?? -Infinity) : null;
      if (at !== null) earliest = earliest === null ? at : Math.min(earliest, at);
    }
    return earliest;
  }

  protected override async listHolders(query: LeaseHolderQuery): Promise<LeaseOwner[]> {
    const now = Date.now();
    const holders = new Map<string, LeaseOwner>();
    for (const { record, holder } of this.threads.values()) {
      if (holder.runId === null || holder.leaseUntil === null || holder.leaseUntil <= now || holder.host !== query.host || holder.pid === null) continue;
      if (record.status !== 'running' && record.status !== 'waiting') continue;
      if (query.graph !== undefined && record.metadata.graph !== query.graph) continue;
      holders.set(`${holder.runId}\u0000${holder.pid}`, { runId: holder.runId, pid: holder.pid, host: holder.host });
    }
    return [...holders.values()];
  }

  protected override async watchRunnable(listener: (threadId: string) => void): Promise<() => Promise<void>> {
    this.listeners.add(listener);
    return async () => {
      this.listeners.delete(listener);
    };
  }

  protected async renew(lease: ThreadLease, leaseMs: number): Promise<number | null> {
    const row = this.held(lease);
    if (!row) return null;
    row.holder.leaseUntil = Date.now() + leaseMs;
    return row.holder.leaseUntil;
  }

  protected async release(lease: ThreadLease): Promise<void> {
    const row = this.held(lease);
    if (!row) return;
    row.holder = { runId: null, pid: null, host: null, leaseUntil: null };
    // Work left: wake the workers.
    if (claimable(row.record, Date.now())) this.wake(lease.threadId);
  }

  protected async update(lease: ThreadLease, patch: ThreadPatch): Promise<ThreadRecord | null> {
    const row = this.held(lease);
    if (!row) return null;
    const record = row.record;
    if (patch.status !== undefined) record.status = patch.status;
    record.wakeAt = wakeAtFor(record.status, patch.wakeAt, record.wakeAt, { seen: patch.signalsSeen, newest: row.signals.length, now: Date.now() });
    if (patch.lastError !== undefined) record.lastError = structuredClone(patch.lastError);
    if (patch.attempts) record.attempts += patch.attempts;
    if (patch.failure) row.failures.push(structuredClone(patch.failure));
    row.ownUpdatedAt = patch.updatedAt ?? Date.now();
    record.updatedAt = updatedAtOf(row);
    return structuredClone(record);
  }

  protected async commit(lease: ThreadLease, commit: StepCommit): Promise<CommitRefusal | undefined> {
    const row = this.held(lease);
    if (!row) return { reason: 'lease' };
    const { position } = commit;
    const ns = position.ns;
    const head = row.heads.get(ns)?.seq ?? null;
    if (!extendsHead(commit, head)) return { reason: 'head', head };
    mapOf(row.positions, ns).set(position.seq, { ...position });
    const base = row.heads.get(ns)?.base;
    row.heads.set(ns, { seq: position.seq, hash: position.hash, ...(base ? { base } : {}) });
    if (commit.items.length) mapOf(row.items, ns).set(position.seq, commit.items.map((i) => ({ ...i })));
    if (commit.snapshot !== undefined) mapOf(row.snapshots, ns).set(position.seq, commit.snapshot);
    if (commit.packs?.length) {
      let packs = row.packs.get(ns);
      if (!packs) row.packs.set(ns, (packs = []));
      packs.push(...commit.packs.map((pack) => ({ ...pack })));
    }
    for (const key of [...row.pending.keys()]) if (key.startsWith(`${ns}\u0000${position.parent}\u0000`)) row.pending.delete(key);
    if (commit.effects?.length) this.cascade?.commitEffects?.(commit.effects);
    if (ns === '') {
      const { status, wakeAt } = row.record;
      row.record.head = position.seq;
      row.record.status = commit.status;
      row.record.wakeAt = wakeAtFor(commit.status, commit.wakeAt ?? null, null, { seen: commit.signalsSeen, newest: row.signals.length, now: Date.now() });
      if (row.record.status !== status || row.record.wakeAt !== wakeAt) row.ownUpdatedAt = Date.now();
      row.headAt = position.createdAt;
      row.record.updatedAt = updatedAtOf(row);
    }
    return undefined;
  }

  protected async insertSignal(threadId: string, signal: SignalToStore): Promise<StoredSignal | null> {
    const row = this.threads.get(threadId);
    if (!row) return null;
    const stored: StoredSignal = { threadId, id: row.signals.length + 1, ...signal, consumedBy: null, consumedAt: null };
    row.signals.push(stored);
    if (row.record.status === 'waiting') {
      const now = Date.now();
      row.record.wakeAt = row.record.wakeAt === null ? now : Math.min(row.record.wakeAt, now);
      this.wake(threadId);
    }
    return { ...stored };
  }

  protected async readSignals(threadId: string, query: SignalQuery): Promise<StoredSignal[]> {
    const signals = this.threads.get(threadId)?.signals ?? [];
    return signals
      .filter(
        (s) =>
          (query.name === undefined || s.name === query.name) &&
          (query.pending === undefined || (s.consumedBy === null) === query.pending) &&
          (query.consumedBy === undefined || s.consumedBy === query.consumedBy),
      )
      .map((s) => ({ ...s }));
  }

  protected async markConsumed(lease: ThreadLease, consumption: ConsumptionToStore): Promise<StoredSignal | 'lease' | 'missing'> {
    const row = this.held(lease);
    if (!row) return 'lease';
    const signal = row.signals[consumption.id - 1];
    if (!signal) return 'missing';
    if (signal.consumedBy === null) {
      signal.consumedBy = consumption.by;
      signal.consumedAt = consumption.consumedAt;
    }
    return { ...signal };
  }

  /** Tells the wake-up listeners that the thread may be claimable. */
  private wake(threadId: string): void {
    for (const listener of this.listeners) listener(threadId);
  }

  protected async writeSnapshot(lease: ThreadLease, snapshot: { ns: string; seq: number; text: string }): Promise<'stored' | 'lease' | 'position'> {
    const row = this.held(lease);
    if (!row) return 'lease';
    if (!row.positions.get(snapshot.ns)?.has(snapshot.seq)) return 'position';
    mapOf(row.snapshots, snapshot.ns).set(snapshot.seq, snapshot.text);
    return 'stored';
  }

  protected async writePending(lease: ThreadLease, write: PendingWrite): Promise<boolean> {
    const row = this.held(lease);
    row?.pending.set(`${write.ns}\u0000${write.baseSeq}\u0000${write.task}`, { ...write });
    return row !== undefined;
  }

  protected async readPendingWrites(threadId: string, ns: string, baseSeq: number): Promise<PendingWrite[]> {
    const row = this.threads.get(threadId);
    if (!row) return [];
    return [...row.pending.values()].filter((w) => w.ns === ns && w.baseSeq === baseSeq).sort((a, b) => (a.task < b.task ? -1 : 1));
  }

  protected override async readPendingWritesIn(threadId: string, ns: string, range: SeqRange): Promise<PendingWrite[]> {
    const row = this.threads.get(threadId);
    if (!row) return [];
    return [...row.pending.values()]
      .filter((w) => w.ns === ns && w.baseSeq >= range.from && w.baseSeq <= range.to)
      .sort((a, b) => a.baseSeq - b.baseSeq || (a.task < b.task ? -1 : a.task > b.task ? 1 : 0));
  }

  protected async readPosition(threadId: string, ns: string, seq: number): Promise<StoredPosition | null> {
    const p = this.threads.get(threadId)?.positions.get(ns)?.get(seq);
    return p ? { ...p } : null;
  }

  protected async readPositions(threadId: string, ns: string, range: SeqRange): Promise<StoredPosition[]> {
    const positions = this.threads.get(threadId)?.positions.get(ns);
    if (!positions) return [];
    return [...positions.values()].filter((p) => p.seq >= range.from && p.seq <= range.to).sort((a, b) => a.seq - b.seq).map((p) => ({ ...p }));
  }

  protected async readHead(threadId: string, ns: string): Promise<HeadAnchor | null> {
    const head = this.threads.get(threadId)?.heads.get(ns);
    return head ? { ...head, ...(head.base ? { base: { ...head.base } } : {}) } : null;
  }

  protected override async compact(lease: ThreadLease, request: CompactionRequest): Promise<CompactionResult | CompactionRefusal> {
    const row = this.held(lease);
    if (!row) return { refused: 'lease' };
    const { ns, base } = request;
    const anchor = row.heads.get(ns);
    const refusal = judgeCompaction(request, anchor?.seq ?? null, anchor?.base?.seq ?? null, row.positions.get(ns)?.get(base.seq)?.hash ?? null);
    if (refusal) return refusal;
    const result = noneCompacted();
    const dropped = new Set(request.drop ?? []);
    const goes = (seq: number) => seq < base.seq || dropped.has(seq);
    const positions = row.positions.get(ns)!;
    const items = row.items.get(ns);
    const snapshots = row.snapshots.get(ns);
    for (const seq of [...positions.keys()]) {
      if (!goes(seq)) continue;
      positions.delete(seq);
      result.positions++;
      result.items += items?.get(seq)?.length ?? 0;
      items?.delete(seq);
      if (snapshots?.delete(seq)) result.snapshots++;
    }
    // A pack goes with any position it spans.
    const packs = row.packs.get(ns);
    if (packs) row.packs.set(ns, packs.filter((pack) => pack.fromSeq >= base.seq && !(request.drop ?? []).some((seq) => seq >= pack.fromSeq && seq <= pack.toSeq)));
    for (const [key, write] of [...row.pending]) {
      if (write.ns === ns && goes(write.baseSeq)) {
        row.pending.delete(key);
        result.pendingWrites++;
      }
    }
    if (request.ledger) result.ledgerEntries += this.cascade?.dropLedgerSteps?.(lease.threadId, ns, goes) ?? 0;
    for (const child of request.dropNamespaces ?? []) {
      if (!row.positions.has(child) && !row.heads.has(child)) continue;
      result.namespaces++;
      result.positions += row.positions.get(child)?.size ?? 0;
      result.items += [...(row.items.get(child)?.values() ?? [])].reduce((n, list) => n + list.length, 0);
      result.snapshots += row.snapshots.get(child)?.size ?? 0;
      for (const map of [row.positions, row.items, row.packs, row.snapshots, row.heads] as Map<string, unknown>[]) map.delete(child);
      for (const [key, write] of [...row.pending]) {
        if (write.ns === child) {
          row.pending.delete(key);
          result.pendingWrites++;
        }
      }
      if (request.ledger) result.ledgerEntries += this.cascade?.dropLedgerSteps?.(lease.threadId, child, () => true) ?? 0;
    }
    let kept = snapshots;
    if (!kept) row.snapshots.set(ns, (kept = new Map()));
    kept.set(base.seq, request.snapshot);
    for (const snapshot of request.snapshots ?? []) if (positions.has(snapshot.seq)) kept.set(snapshot.seq, snapshot.text);
    row.heads.set(ns, { ...anchor!, base: { seq: base.seq, hash: base.hash } });
    return result;
  }

  protected async readNamespaces(threadId: string): Promise<string[]> {
    const row = this.threads.get(threadId);
    if (!row) return [];
    return [...new Set([...row.positions.keys(), ...row.heads.keys()])].sort(compareCodePoints);
  }

  protected async readPositionPage(threadId: string, ns: string, page: { beforeSeq?: number; limit?: number }): Promise<StoredPosition[]> {
    const positions = this.threads.get(threadId)?.positions.get(ns);
    if (!positions) return [];
    return [...positions.values()]
      .filter((p) => page.beforeSeq === undefined || p.seq < page.beforeSeq)
      .sort((a, b) => b.seq - a.seq)
      .slice(0, page.limit ?? Infinity)
      .map((p) => ({ ...p }));
  }

  protected async readSnapshot(threadId: string, ns: string, ranges: SeqRange[]): Promise<{ seq: number; text: string } | null> {
    const snapshots = this.threads.get(threadId)?.snapshots.get(ns);
    let best: { seq: number; text: string } | null = null;
    for (const [seq, text] of snapshots ?? []) if (inRanges(seq, ranges) && (!best || seq > best.seq)) best = { seq, text };
    return best;
  }

  protected async readSnapshots(threadId: string, ns: string, range: SeqRange): Promise<{ seq: number; text: string }[]> {
    const snapshots = this.threads.get(threadId)?.snapshots.get(ns);
    return [...(snapshots ?? [])].filter(([seq]) => seq >= range.from && seq <= range.to).sort(([a], [b]) => a - b).map(([seq, text]) => ({ seq, text }));
  }

  protected async readItems(threadId: string, ns: string, field: string, ranges: SeqRange[]): Promise<string[]> {
    const items = this.threads.get(threadId)?.items.get(ns);
    const texts: string[] = [];
    for (const seq of [...(items?.keys() ?? [])].sort((a, b) => a - b)) {
      if (!inRanges(seq, ranges)) continue;
      const ofField = items!.get(seq)!.filter((item) => item.field === field).sort((a, b) => a.index - b.index);
      for (const item of ofField) texts.push(item.text);
    }
    return texts;
  }

  protected override async readItemPacks(threadId: string, ns: string, field: string, ranges: SeqRange[]): Promise<ItemPack[]> {
    const packs = this.threads.get(threadId)?.packs.get(ns) ?? [];
    return packs
      .filter((pack) => pack.field === field && packInRanges(pack, ranges))
      .sort((a, b) => a.fromSeq - b.fromSeq)
      .map((pack) => ({ ...pack }));
  }

  protected async readPositionItems(threadId: string, ns: string, seq: number, fields: readonly string[]): Promise<PositionItem[]> {
    const items = this.threads.get(threadId)?.items.get(ns)?.get(seq) ?? [];
    return fields.flatMap((field) =>
      items
        .filter((i) => i.field === field)
        .sort((a, b) => a.index - b.index)
        .map((i) => ({ ...i })),
    );
  }

  protected async readRangeItems(threadId: string, ns: string, range: SeqRange): Promise<RangeItem[]> {
    const items = this.threads.get(threadId)?.items.get(ns);
    const found: RangeItem[] = [];
    for (const seq of [...(items?.keys() ?? [])].sort((a, b) => a - b)) {
      if (seq < range.from || seq > range.to) continue;
      for (const item of [...items!.get(seq)!].sort(comparePositionItems)) found.push({ ...item, seq });
    }
    return found;
  }
}

function mapOf<K, V>(outer: Map<string, Map<K, V>>, key: string): Map<K, V> {
  let inner = outer.get(key);
  if (!inner) outer.set(key, (inner = new Map()));
  return inner;
}
