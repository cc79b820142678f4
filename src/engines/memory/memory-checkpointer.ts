/**
 * @module engines/memory/memory-checkpointer
 * The thread log in process memory: for tests and development. Same contract,
 * same behaviour as the durable engines, nothing survives the process.
 */
import type {
  AcquireRequest,
  ClaimRequest,
  AttemptFailure,
  Checkpointer,
  CheckpointerCapabilities,
  HeadAnchor,
  PendingWrite,
  PositionItem,
  RangeItem,
  SeqRange,
  StepCommit,
  StoredPosition,
  ThreadPatch,
} from '../../contracts/checkpointer.js';
import { comparePositionItems } from '../../contracts/checkpointer.js';
import type { DeleteThreadOptions, DeleteThreadResult, ThreadLease, ThreadQuery, ThreadRecord } from '../../contracts/threads.js';
import { HeadMovedError, LeaseLostError, PositionNotFoundError, ThreadBusyError, ThreadNotFoundError } from '../../errors.js';
import { checkThreadId, compareCodePoints } from '../../internal/keys.js';
import { describeHolder, holderIsLive, type HolderInfo } from '../../internal/lease.js';
import type { Lifecycle } from '../../internal/lifecycle.js';
import { PIN_NAMESPACE_STORED, threadPinSuffix } from '../../internal/pins.js';
import { compareThreads, isAfterCursor, normalizeIfStatus, normalizeThreadQuery, threadMatches } from '../../internal/thread-query.js';

interface ThreadRow {
  record: ThreadRecord;
  holder: HolderInfo;
  epoch: number;
  positions: Map<string, Map<number, StoredPosition>>;
  /** The anchored head per namespace: seq and hash of its newest position. */
  heads: Map<string, HeadAnchor>;
  items: Map<string, Map<number, PositionItem[]>>;
  snapshots: Map<string, Map<number, string>>;
  pending: Map<string, PendingWrite>;
  failures: AttemptFailure[];
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
}

export class MemoryCheckpointer implements Checkpointer {
  readonly engine = 'memory';
  readonly capabilities: CheckpointerCapabilities = { claims: true, wakeUps: true, leaseExpiry: true };
  private readonly threads = new Map<string, ThreadRow>();
  private readonly listeners = new Set<(threadId: string) => void>();

  constructor(
    private readonly lifecycle: Lifecycle,
    private readonly cascade?: MemoryThreadCascade,
  ) {}

  private row(threadId: string): ThreadRow | undefined {
    this.lifecycle.assertOpen();
    return this.threads.get(threadId);
  }

  private held(lease: ThreadLease): ThreadRow {
    const row = this.row(lease.threadId);
    if (!row || row.holder.runId !== lease.runId || row.epoch !== lease.epoch) throw new LeaseLostError(lease.threadId, { engine: this.engine });
    return row;
  }

  /** True when the thread exists (the engine's ledger asks before writing an entry). */
  hasThread(threadId: string): boolean {
    return this.threads.has(threadId);
  }

  async getThread(threadId: string): Promise<ThreadRecord | null> {
    const row = this.row(threadId);
    return row ? structuredClone(row.record) : null;
  }

  async listThreads(query: ThreadQuery = {}): Promise<ThreadRecord[]> {
    const q = normalizeThreadQuery(query);
    this.lifecycle.assertOpen();
    return [...this.threads.values()]
      .map((r) => r.record)
      .filter((t) => threadMatches(t, q) && isAfterCursor(t, q))
      .sort(compareThreads(q))
      .slice(0, q.limit ?? Infinity)
      .map((t) => structuredClone(t));
  }

  async deleteThread(threadId: string, options: DeleteThreadOptions = {}): Promise<DeleteThreadResult> {
    const ifStatus = normalizeIfStatus(options.ifStatus);
    const row = this.row(threadId);
    if (!row) return { deleted: false, threadId, reason: 'missing' };
    if (options.lease) {
      if (row.holder.runId !== options.lease.runId || row.epoch !== options.lease.epoch) throw new LeaseLostError(threadId, { engine: this.engine });
    } else if (holderIsLive(row.holder, Date.now())) throw new ThreadBusyError(threadId, describeHolder(row.holder), { engine: this.engine });
    if (ifStatus && !ifStatus.includes(row.record.status)) return { deleted: false, threadId, reason: 'status', status: row.record.status };
    const count = <V>(byNs: Map<string, Map<number, V>>, size: (v: V) => number = () => 1) =>
      [...byNs.values()].reduce((n, inner) => n + [...inner.values()].reduce((m, v) => m + size(v), 0), 0);
    const removed = {
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

  async listFailures(threadId: string): Promise<AttemptFailure[]> {
    return structuredClone(this.row(threadId)?.failures ?? []);
  }

  async acquireThread(threadId: string, request: AcquireRequest): Promise<ThreadLease> {
    checkThreadId(threadId);
    const now = Date.now();
    let row = this.row(threadId);
    if (!row) {
      if (!request.create) throw new ThreadNotFoundError(threadId, { engine: this.engine });
      row = {
        record: {
          id: threadId,
          kind: request.create.kind,
          status: 'running',
          head: null,
          attempts: 0,
          tenant: request.create.tenant,
          metadata: structuredClone(request.create.metadata),
          lastError: null,
          createdAt: request.create.createdAt ?? now,
          updatedAt: request.create.updatedAt ?? request.create.createdAt ?? now,
        },
        holder: { runId: null, pid: null, host: null, leaseUntil: null },
        epoch: 0,
        positions: new Map(),
        heads: new Map(),
        items: new Map(),
        snapshots: new Map(),
        pending: new Map(),
        failures: [],
      };
      this.threads.set(threadId, row);
    } else if (holderIsLive(row.holder, now)) {
      throw new ThreadBusyError(threadId, describeHolder(row.holder), { engine: this.engine });
    }
    row.epoch++;
    row.holder = { runId: request.owner.runId, pid: request.owner.pid, host: request.owner.host, leaseUntil: now + request.leaseMs };
    return { threadId, runId: request.owner.runId, epoch: row.epoch, expiresAt: now + request.leaseMs, thread: structuredClone(row.record) };
  }

  async claimThreads(request: ClaimRequest): Promise<ThreadLease[]> {
    this.lifecycle.assertOpen();
    const now = Date.now();
    const leases: ThreadLease[] = [];
    const runnable = [...this.threads.values()]
      .filter((row) => row.record.status === 'running' && (request.graph === undefined || row.record.metadata.graph === request.graph) && !holderIsLive(row.holder, now))
      .sort((a, b) => a.record.updatedAt - b.record.updatedAt);
    for (const row of runnable.slice(0, request.limit)) {
      row.epoch++;
      row.holder = { runId: request.owner.runId, pid: request.owner.pid, host: request.owner.host, leaseUntil: now + request.leaseMs };
      leases.push({ threadId: row.record.id, runId: request.owner.runId, epoch: row.epoch, expiresAt: now + request.leaseMs, thread: structuredClone(row.record) });
    }
    return leases;
  }

  async nextLeaseExpiry(graph?: string): Promise<number | null> {
    let earliest: number | null = null;
    this.lifecycle.assertOpen();
    for (const row of this.threads.values()) {
      const until = row.holder.leaseUntil;
      if (row.record.status !== 'running' || until === null || (graph !== undefined && row.record.metadata.graph !== graph)) continue;
      earliest = earliest === null ? until : Math.min(earliest, until);
    }
    return earliest;
  }

  async subscribeRunnable(listener: (threadId: string) => void): Promise<() => Promise<void>> {
    this.listeners.add(listener);
    return async () => {
      this.listeners.delete(listener);
    };
  }

  async renewLease(lease: ThreadLease, leaseMs: number): Promise<ThreadLease> {
    const row = this.held(lease);
    row.holder.leaseUntil = Date.now() + leaseMs;
    return { ...lease, expiresAt: row.holder.leaseUntil };
  }

  async releaseThread(lease: ThreadLease): Promise<void> {
    const row = this.row(lease.threadId);
    if (row && row.holder.runId === lease.runId && row.epoch === lease.epoch) {
      row.holder = { runId: null, pid: null, host: null, leaseUntil: null };
      // Work left: wake the workers.
      if (row.record.status === 'running') for (const listener of this.listeners) listener(lease.threadId);
    }
  }

  async updateThread(lease: ThreadLease, patch: ThreadPatch): Promise<ThreadRecord> {
    const row = this.held(lease);
    const record = row.record;
    if (patch.status !== undefined) record.status = patch.status;
    if (patch.lastError !== undefined) record.lastError = structuredClone(patch.lastError);
    if (patch.attempts) record.attempts += patch.attempts;
    if (patch.failure) row.failures.push(structuredClone(patch.failure));
    record.updatedAt = patch.updatedAt ?? Date.now();
    return structuredClone(record);
  }

  async commitStep(lease: ThreadLease, commit: StepCommit): Promise<void> {
    const row = this.held(lease);
    const { position } = commit;
    const ns = position.ns;
    const positions = mapOf(row.positions, ns);
    const head = row.heads.get(ns)?.seq ?? null;
    if (head !== commit.expectedHead || position.seq !== (head ?? -1) + 1) {
      throw new HeadMovedError(lease.threadId, commit.expectedHead, head, { engine: this.engine });
    }
    positions.set(position.seq, { ...position });
    row.heads.set(ns, { seq: position.seq, hash: position.hash });
    if (commit.items.length) mapOf(row.items, ns).set(position.seq, commit.items.map((i) => ({ ...i })));
    if (commit.snapshot !== undefined) mapOf(row.snapshots, ns).set(position.seq, commit.snapshot);
    for (const key of [...row.pending.keys()]) if (key.startsWith(`${ns}\u0000${position.parent}\u0000`)) row.pending.delete(key);
    if (ns === '') {
      row.record.head = position.seq;
      row.record.status = commit.status;
    }
    row.record.updatedAt = Date.now();
  }

  async putSnapshot(lease: ThreadLease, snapshot: { ns: string; seq: number; text: string }): Promise<void> {
    const row = this.held(lease);
    if (!row.positions.get(snapshot.ns)?.has(snapshot.seq)) throw new PositionNotFoundError(lease.threadId, snapshot.seq, { engine: this.engine });
    mapOf(row.snapshots, snapshot.ns).set(snapshot.seq, snapshot.text);
  }

  async putPendingWrite(lease: ThreadLease, write: PendingWrite): Promise<void> {
    const row = this.held(lease);
    row.pending.set(`${write.ns}\u0000${write.baseSeq}\u0000${write.task}`, { ...write });
  }

  async getPendingWrites(threadId: string, ns: string, baseSeq: number): Promise<PendingWrite[]> {
    const row = this.row(threadId);
    if (!row) return [];
    return [...row.pending.values()].filter((w) => w.ns === ns && w.baseSeq === baseSeq).sort((a, b) => (a.task < b.task ? -1 : 1));
  }

  async getPosition(threadId: string, ns: string, seq: number): Promise<StoredPosition | null> {
    const p = this.row(threadId)?.positions.get(ns)?.get(seq);
    return p ? { ...p } : null;
  }

  async getPositions(threadId: string, ns: string, range: SeqRange): Promise<StoredPosition[]> {
    const positions = this.row(threadId)?.positions.get(ns);
    if (!positions) return [];
    return [...positions.values()].filter((p) => p.seq >= range.from && p.seq <= range.to).sort((a, b) => a.seq - b.seq).map((p) => ({ ...p }));
  }

  async getHead(threadId: string, ns: string): Promise<HeadAnchor | null> {
    const head = this.row(threadId)?.heads.get(ns);
    return head ? { ...head } : null;
  }

  async listNamespaces(threadId: string): Promise<string[]> {
    const row = this.row(threadId);
    if (!row) return [];
    return [...new Set([...row.positions.keys(), ...row.heads.keys()])].sort(compareCodePoints);
  }

  async listPositions(threadId: string, ns: string, page: { beforeSeq?: number; limit?: number } = {}): Promise<StoredPosition[]> {
    const positions = this.row(threadId)?.positions.get(ns);
    if (!positions) return [];
    return [...positions.values()]
      .filter((p) => page.beforeSeq === undefined || p.seq < page.beforeSeq)
      .sort((a, b) => b.seq - a.seq)
      .slice(0, page.limit ?? Infinity)
      .map((p) => ({ ...p }));
  }

  async getSnapshot(threadId: string, ns: string, ranges: SeqRange[]): Promise<{ seq: number; text: string } | null> {
    const snapshots = this.row(threadId)?.snapshots.get(ns);
    let best: { seq: number; text: string } | null = null;
    for (const [seq, text] of snapshots ?? []) if (inRanges(seq, ranges) && (!best || seq > best.seq)) best = { seq, text };
    return best;
  }

  async getSnapshots(threadId: string, ns: string, range: SeqRange): Promise<{ seq: number; text: string }[]> {
    const snapshots = this.row(threadId)?.snapshots.get(ns);
    return [...(snapshots ?? [])].filter(([seq]) => seq >= range.from && seq <= range.to).sort(([a], [b]) => a - b).map(([seq, text]) => ({ seq, text }));
  }

  async getItems(threadId: string, ns: string, field: string, ranges: SeqRange[]): Promise<string[]> {
    const items = this.row(threadId)?.items.get(ns);
    const texts: string[] = [];
    for (const seq of [...(items?.keys() ?? [])].sort((a, b) => a - b)) {
      if (!inRanges(seq, ranges)) continue;
      const ofField = items!.get(seq)!.filter((item) => item.field === field).sort((a, b) => a.index - b.index);
      for (const item of ofField) texts.push(item.text);
    }
    return texts;
  }

  async getPositionItems(threadId: string, ns: string, seq: number, fields: readonly string[]): Promise<PositionItem[]> {
    const items = this.row(threadId)?.items.get(ns)?.get(seq) ?? [];
    return fields.flatMap((field) =>
      items
        .filter((i) => i.field === field)
        .sort((a, b) => a.index - b.index)
        .map((i) => ({ ...i })),
    );
  }

  async getRangeItems(threadId: string, ns: string, range: SeqRange): Promise<RangeItem[]> {
    const items = this.row(threadId)?.items.get(ns);
    const found: RangeItem[] = [];
    for (const seq of [...(items?.keys() ?? [])].sort((a, b) => a - b)) {
      if (seq < range.from || seq > range.to) continue;
      for (const item of [...items!.get(seq)!].sort(comparePositionItems)) found.push({ ...item, seq });
    }
    return found;
  }

  async close(): Promise<void> {
    this.lifecycle.close();
    this.threads.clear();
  }
}

function mapOf<K, V>(outer: Map<string, Map<K, V>>, key: string): Map<K, V> {
  let inner = outer.get(key);
  if (!inner) outer.set(key, (inner = new Map()));
  return inner;
}
