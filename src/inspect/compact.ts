/**
 * @module inspect/compact
 * Position compaction, the part of retention that shortens a long thread: the
 * positions of a namespace (the root's or a child run's) older than a cut go, the
 * newest snapshot at or before the cut on the head's branch becomes the namespace's
 * base, and the namespace's anchor names that base (seq and chain hash), so that
 * `verify`, `history`, `getState` and `stateAt` of every kept position still prove and
 * read what is kept. Each namespace has its own anchor (`cairn_heads` is keyed by
 * thread and namespace), so a child run is compacted as the root is.
 *
 * What keeps a kept position readable: the base snapshot is rewritten to hold its
 * append fields' items inline (the log items below the base go with their positions);
 * every kept snapshot above it whose items reached below the base is rewritten to take
 * them from the base's snapshot; positions above the base on branches forked below it
 * go too (nothing could read them), and so do the child runs started by removed steps.
 * A suspended superstep (an interrupted or waiting thread) is never cut into: the cut
 * stays at or below the seq it started from, whose ledger entries and pending writes it
 * reads again; nor is one that stopped part-way and finished since: the base is never
 * one of its interrupt or resume positions, since the position that finished it binds
 * records keyed by the seq it started from, below such a base. Positions are never
 * rewritten: the chain from the base to the head is the chain that was committed.
 */
import type { Checkpointer, CompactionRequest, CompactionResult, HeadAnchor, SeqRange, StoredPosition } from '../contracts/checkpointer.js';
import type { Ledger } from '../contracts/ledger.js';
import type { ThreadLease } from '../contracts/threads.js';
import { ItemChecksum } from '../codec/hash.js';
import { decode, encode } from '../codec/tagged-json.js';
import { ancestorRanges, materialize, type SnapshotBody } from '../runtime/materialize.js';
import { SNAPSHOT_FORMAT, openSnapshot, sealSnapshot, type PositionBody } from '../runtime/position.js';

/** Positions read per query. */
const BATCH = 500;

/** Where a namespace's compaction would cut, and what would go: the plan {@link compactNamespace} carries out. */
export interface CompactionPlan {
  ns: string;
  /** The new base: the oldest position kept. */
  base: { seq: number; hash: string };
  request: CompactionRequest;
  /** What goes (counted from the stored rows before anything is removed). */
  removes: CompactionResult;
  /** Characters of the removed positions' bodies and items and of the removed snapshots. */
  bytes: number;
}

/** Why a namespace is not compacted: nothing older than the cut, or no snapshot to keep as the base. */
export type NoCompaction = { skipped: 'nothing-to-cut' | 'no-snapshot' | 'legacy-snapshot' };

/**
 * Plans the compaction of namespace `ns` at `cut` (positions below the newest snapshot
 * at or before `cut` on the head's branch go). `cut` is clamped to the seq a suspended
 * superstep of the head started from. Reads only.
 */
export async function planCompaction(cp: Checkpointer, ledger: Ledger | undefined, threadId: string, ns: string, cut: number, options: { ledger?: boolean } = {}): Promise<CompactionPlan | NoCompaction> {
  const head = await cp.getHead(threadId, ns);
  if (!head) return { skipped: 'nothing-to-cut' };
  const headPosition = await cp.getPosition(threadId, ns, head.seq);
  if (!headPosition) return { skipped: 'nothing-to-cut' };
  const headBody = decode<PositionBody>(headPosition.body, `position ${head.seq} of thread ${threadId}`);
  // A suspended superstep runs again from its origin: its state, records and pending writes stay.
  const limit = Math.min(cut, head.seq, headBody.suspended?.origin ?? head.seq);
  if (head.base && limit <= head.base.seq) return { skipped: 'nothing-to-cut' };
  const branch = await ancestorRanges(cp, threadId, headPosition, undefined, head.base);
  const candidates = await cp.getSnapshots(threadId, ns, { from: head.base?.seq ?? 0, to: limit });
  const onBranch = candidates.filter((s) => inRanges(s.seq, branch)).reverse();
  let chosen: { seq: number; body: SnapshotBody } | undefined;
  for (const snapshot of onBranch) {
    const body = openBody(snapshot.text);
    if (body && body.format === SNAPSHOT_FORMAT && typeof body.position === 'string' && typeof body.parent === 'string') {
      // Not a position of a superstep that stopped part-way (an interrupt, a wait): the
      // positions that finish it bind records keyed by its origin, below such a base.
      if (await isSuspended(cp, threadId, ns, snapshot.seq)) continue;
      chosen = { seq: snapshot.seq, body };
      break;
    }
  }
  if (!chosen) return { skipped: onBranch.length ? 'legacy-snapshot' : 'no-snapshot' };
  const baseSeq = chosen.seq;
  if (head.base && baseSeq <= head.base.seq) return { skipped: 'nothing-to-cut' };

  // The base's state, read and proven as a load reads it: every item inline in its new snapshot.
  const loaded = await materialize(cp, undefined, threadId, ns, baseSeq, baseSeq === head.seq ? { head } : {});
  const none = ItemChecksum.of([]).value();
  const baseBody: SnapshotBody = { ...chosen.body, appends: {} };
  for (const name of new Set([...Object.keys(chosen.body.appends), ...Object.keys(loaded.appends)])) {
    const items = (loaded.state[name] as unknown[] | undefined) ?? [];
    baseBody.appends[name] = { since: baseSeq, count: items.length, checksum: none, inline: items };
  }
  const base = { seq: baseSeq, hash: loaded.position.hash };

  // Positions above the base that do not descend from it, and the rest kept.
  const kept = new Map<number, StoredPosition>();
  const drop: number[] = [];
  for (let from = baseSeq; from <= head.seq; from += BATCH) {
    for (const position of await cp.getPositions(threadId, ns, { from, to: Math.min(head.seq, from + BATCH - 1) })) {
      if (position.seq === baseSeq || (position.parent !== null && kept.has(position.parent))) kept.set(position.seq, position);
      else drop.push(position.seq);
    }
  }

  // Kept snapshots whose items reach below the base take them from the base's snapshot.
  const snapshots: { seq: number; text: string }[] = [];
  const removes: CompactionResult = { positions: 0, items: 0, snapshots: 0, pendingWrites: 0, ledgerEntries: 0, namespaces: 0 };
  let bytes = 0;
  const dropped = new Set(drop);
  for (const stored of await cp.getSnapshots(threadId, ns, { from: baseSeq + 1, to: head.seq })) {
    if (dropped.has(stored.seq)) continue;
    const body = openBody(stored.text);
    if (!body || body.format !== SNAPSHOT_FORMAT) return { skipped: 'legacy-snapshot' };
    const position = kept.get(stored.seq);
    if (!position) continue;
    let changed = false;
    const appends: SnapshotBody['appends'] = {};
    for (const [name, cursor] of Object.entries(body.appends)) {
      const below = !cursor.inline && (cursor.base === undefined ? (cursor.since ?? -1) <= baseSeq : cursor.base < baseSeq);
      if (!below) {
        appends[name] = cursor;
        continue;
      }
      const ranges = clip(await ancestorRanges(cp, threadId, position, kept, base), baseSeq + 1, stored.seq);
      const texts = ranges.length ? await cp.getItems(threadId, ns, name, ranges) : [];
      appends[name] = { since: cursor.since, count: cursor.count, base: baseSeq, checksum: ItemChecksum.of(texts).value() };
      changed = true;
    }
    if (changed) snapshots.push({ seq: stored.seq, text: sealSnapshot(encode({ ...body, appends }, 'snapshot')) });
  }

  // What goes, counted from the rows: positions below the base and on dropped branches.
  const goes = (seq: number) => seq < baseSeq || dropped.has(seq);
  const count = async (range: SeqRange) => {
    const [positions, items, snaps] = await Promise.all([cp.getPositions(threadId, ns, range), cp.getRangeItems(threadId, ns, range), cp.getSnapshots(threadId, ns, range)]);
    for (const p of positions) if (goes(p.seq)) (removes.positions++, (bytes += p.body.length));
    for (const i of items) if (goes(i.seq)) (removes.items++, (bytes += i.text.length));
    for (const s of snaps) if (goes(s.seq)) (removes.snapshots++, (bytes += s.text.length));
  };
  for (let from = 0; from < baseSeq; from += BATCH) await count({ from, to: Math.min(baseSeq - 1, from + BATCH - 1) });
  for (const seq of drop) await count({ from: seq, to: seq });

  // Child runs of removed steps (`<ns>|<task>@<origin>` with a removed origin), and theirs.
  const dropNamespaces: string[] = [];
  const roots: string[] = [];
  for (const child of await cp.listNamespaces(threadId)) {
    if (child === ns) continue;
    const origin = directChildOrigin(ns, child);
    const under = roots.some((r) => child.startsWith(`${r}|`));
    if ((origin !== null && goes(origin)) || under) {
      if (origin !== null) roots.push(child);
      dropNamespaces.push(child);
      removes.namespaces++;
      for await (const range of seqBatches(cp, threadId, child)) {
        const [positions, items, snaps] = await Promise.all([cp.getPositions(threadId, child, range), cp.getRangeItems(threadId, child, range), cp.getSnapshots(threadId, child, range)]);
        removes.positions += positions.length;
        removes.items += items.length;
        removes.snapshots += snaps.length;
        bytes += positions.reduce((n, p) => n + p.body.length, 0) + items.reduce((n, i) => n + i.text.length, 0) + snaps.reduce((n, s) => n + s.text.length, 0);
      }
    }
  }
  const withLedger = options.ledger !== false;
  if (withLedger && ledger) {
    const gone = new Set(dropNamespaces);
    for (const entry of await ledger.list(threadId)) {
      if ((entry.ns === ns && goes(entry.seq)) || gone.has(entry.ns)) {
        removes.ledgerEntries++;
        bytes += entry.outcome?.length ?? 0;
      }
    }
  }
  const request: CompactionRequest = {
    ns,
    base,
    snapshot: sealSnapshot(encode(baseBody, 'snapshot')),
    ...(snapshots.length ? { snapshots } : {}),
    ...(drop.length ? { drop } : {}),
    ...(dropNamespaces.length ? { dropNamespaces } : {}),
    ledger: withLedger,
  };
  return { ns, base, request, removes, bytes };
}

/**
 * Plans the removal of the ledger rows a namespace keeps below its compaction base (a
 * compaction with `ledger: false` left them): their steps are gone, so no position
 * binds them and no step runs from them again. The base stays where it is (its own
 * snapshot is stored again as it is). Null when the namespace was never compacted or
 * keeps no such row. Reads only.
 */
export async function planLedgerBelowBase(cp: Checkpointer, ledger: Ledger, threadId: string, ns: string): Promise<CompactionPlan | null> {
  const head = await cp.getHead(threadId, ns);
  if (!head?.base) return null;
  const below = (await ledger.list(threadId)).filter((entry) => entry.ns === ns && entry.seq < head.base!.seq);
  const [snapshot] = await cp.getSnapshots(threadId, ns, { from: head.base.seq, to: head.base.seq });
  if (!below.length || !snapshot) return null;
  const removes: CompactionResult = { positions: 0, items: 0, snapshots: 0, pendingWrites: 0, ledgerEntries: below.length, namespaces: 0 };
  const bytes = below.reduce((n, entry) => n + (entry.outcome?.length ?? 0), 0);
  return { ns, base: head.base, request: { ns, base: head.base, snapshot: snapshot.text, ledger: true }, removes, bytes };
}

/** Carries out a plan under the thread's lease (one transaction in the engine); returns the rows removed. */
export function compactNamespace(cp: Checkpointer, lease: ThreadLease, plan: CompactionPlan): Promise<CompactionResult> {
  return cp.compactThread!(lease, plan.request);
}

/** The highest seq of the head's branch created before `before` (ms), at most `maxSeq`; null when none. */
export async function cutByAge(cp: Checkpointer, threadId: string, ns: string, head: HeadAnchor, before: number, maxSeq: number): Promise<number | null> {
  const headPosition = await cp.getPosition(threadId, ns, head.seq);
  if (!headPosition) return null;
  const ranges = await ancestorRanges(cp, threadId, headPosition, undefined, head.base);
  // Newest first: the first old enough is the cut (times grow along a branch).
  for (const range of [...ranges].reverse()) {
    for (let to = Math.min(range.to, maxSeq); to >= range.from; to -= BATCH) {
      const positions = await cp.getPositions(threadId, ns, { from: Math.max(range.from, to - BATCH + 1), to });
      for (let i = positions.length - 1; i >= 0; i--) if (positions[i]!.createdAt < before) return positions[i]!.seq;
    }
  }
  return null;
}

/** The origin seq of `child` when it is a direct child run of `ns` (`<ns>|<task>@<origin>`, or `<task>@<origin>` under the root), else null. */
function directChildOrigin(ns: string, child: string): number | null {
  const prefix = ns === '' ? '' : `${ns}|`;
  if (!child.startsWith(prefix)) return null;
  const own = child.slice(prefix.length);
  if (own.includes('|')) return null;
  const match = /@(\d+)$/.exec(own);
  return match ? Number(match[1]) : null;
}

async function* seqBatches(cp: Checkpointer, threadId: string, ns: string): AsyncGenerator<SeqRange> {
  const [newest] = await cp.listPositions(threadId, ns, { limit: 1 });
  if (!newest) return;
  for (let from = 0; from <= newest.seq; from += BATCH) yield { from, to: Math.min(newest.seq, from + BATCH - 1) };
}

async function isSuspended(cp: Checkpointer, threadId: string, ns: string, seq: number): Promise<boolean> {
  const position = await cp.getPosition(threadId, ns, seq);
  return position !== null && decode<PositionBody>(position.body, `position ${seq} of thread ${threadId}`).suspended !== undefined;
}

function openBody(text: string): SnapshotBody | null {
  const sealed = openSnapshot(text);
  if (sealed === null) return null;
  try {
    return decode<SnapshotBody>(sealed, 'snapshot');
  } catch {
    return null;
  }
}

function inRanges(seq: number, ranges: SeqRange[]): boolean {
  return ranges.some((r) => seq >= r.from && seq <= r.to);
}

function clip(ranges: SeqRange[], from: number, to: number): SeqRange[] {
  return ranges.filter((r) => r.to >= from && r.from <= to).map((r) => ({ from: Math.max(r.from, from), to: Math.min(r.to, to) }));
}
