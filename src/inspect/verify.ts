/**
 * @module inspect/verify
 * Checks everything a read of a thread relies on, from its stored rows:
 * - **positions**: every hash equals H(parent hash ‖ header ‖ body ‖ items), every
 *   parent exists, every body decodes;
 * - **heads**: each namespace's head anchored in the thread record names its newest
 *   position, by seq and hash (a truncated log fails here);
 * - **snapshots**: each is sealed, names the chain hashes of its position and of that
 *   position's parent, and its item checksums and counts match the items in the log;
 * - **the ledger**: every recorded output and effect outcome a position used exists,
 *   belongs to that step, and matches the digest the position holds.
 * Each namespace (the root graph '' and every child run's) is a chain of its own,
 * starting from the genesis hash, or, once retention compacted it, from its anchored
 * base: the base position's hash is the anchor's, and its parent hash is the one its
 * sealed snapshot names. Works on any {@link Checkpointer} and {@link Ledger}.
 */
import { CHECK_PACKS, type PackChecks } from '../internal/pack-checks.js';
import { verifyingReads } from '../crypto/scopes.js';
import type { Checkpointer, CompactionAnchor, HeadAnchor, RangeItem, SeqRange, StoredPosition } from '../contracts/checkpointer.js';
import type { Engine } from '../contracts/engine.js';
import type { LedgerEntry } from '../contracts/ledger.js';
import { comparePositionItems } from '../contracts/checkpointer.js';
import { GENESIS_HASH, ItemChecksum, sha256Hex } from '../codec/hash.js';
import { decode } from '../codec/tagged-json.js';
import { ThreadNotFoundError } from '../errors.js';
import { derivedCallKey } from '../runtime/task-scope.js';
import { ancestorRanges, type SnapshotBody } from '../runtime/materialize.js';
import { SNAPSHOT_FORMAT, hashPosition, openSnapshot, type CallRef, type PositionBody } from '../runtime/position.js';
import { describePosition } from './walk.js';

/** What a problem was found in. */
export type VerifyProblemKind = 'position' | 'head' | 'snapshot' | 'ledger' | 'pack';

/** One thing {@link verifyThread} found wrong: which row, where, and what a read of it would raise. */
export interface VerifyProblem {
  /** Namespace of the damaged row: '' for the root graph, e.g. `research:0@4` for a child run. */
  ns: string;
  /** The position the problem is at (a snapshot's seq; for the ledger, the position that used the entry). */
  seq: number;
  kind: VerifyProblemKind;
  code: 'ERR_CORRUPT_RECORD';
  message: string;
}

/** What {@link verifyThread} checked (positions, heads, snapshots, ledger rows) and every problem found. */
export interface VerifyReport {
  threadId: string;
  ok: boolean;
  /** Positions checked, over every namespace. */
  positions: number;
  /** Snapshots checked, over every namespace. */
  snapshots: number;
  /** Ledger entries checked (recorded outputs and effect outcomes positions rely on). */
  ledgerEntries: number;
  /** Root problems first, then each child namespace's, in `listNamespaces` order; by seq within one. */
  problems: VerifyProblem[];
}

/** Positions (and their items) read per query. */
const BATCH = 500;

/**
 * Verifies every namespace of a thread: positions, anchored heads, snapshots and (given
 * an engine, not only its checkpointer) the ledger rows its positions rely on.
 * ThreadNotFoundError for a missing thread.
 *
 * @example
 * ```ts
 * const report = await verifyThread(engine, 'cust_42');
 * for (const p of report.problems) console.log(p.kind, p.ns || '(root)', p.seq, p.message);
 * ```
 */
export async function verifyThread(source: Engine | Checkpointer, threadId: string): Promise<VerifyReport> {
  const { cp: stored, ledger } = 'checkpointer' in source ? { cp: source.checkpointer, ledger: source.ledger } : { cp: source, ledger: undefined };
  // On an encrypted engine, every row is opened with its tag checked (a load opens items in bulk).
  const cp = verifyingReads(stored);
  const thread = await cp.getThread(threadId);
  if (!thread) throw new ThreadNotFoundError(threadId, { engine: cp.engine });
  const entries = ledger ? new Map((await ledger.list(threadId)).map((entry) => [entry.key, entry])) : undefined;
  const report: VerifyReport = { threadId, ok: true, positions: 0, snapshots: 0, ledgerEntries: 0, problems: [] };
  for (const ns of await cp.listNamespaces(threadId)) {
    const head = await cp.getHead(threadId, ns);
    const chain = await verifyNamespace(cp, threadId, ns, head?.base, entries, report);
    await verifyHead(cp, threadId, ns, head, chain, report.problems);
    await verifySnapshots(cp, threadId, ns, chain, report);
    await verifyPacks(stored, threadId, ns, report);
  }
  report.ok = report.problems.length === 0;
  return report;
}

/**
 * The namespace's item packs, where the checkpointer keeps them (an encrypted engine's):
 * each opened with its tag and compared with its rows, so that what a load reads from
 * them is what this report proved of the rows.
 */
async function verifyPacks(cp: Checkpointer, threadId: string, ns: string, report: VerifyReport): Promise<void> {
  const check = (cp as Partial<PackChecks>)[CHECK_PACKS];
  if (typeof check !== 'function') return;
  const { problems } = await check.call(cp, threadId, ns);
  for (const problem of problems) report.problems.push({ ns, seq: problem.seq, kind: 'pack', code: 'ERR_CORRUPT_RECORD', message: problem.message });
}

/** What one namespace's walk learned: each position's stored hash (those whose body decoded) and the newest seq. */
interface NamespaceChain {
  hashes: Map<number, string>;
  positions: Map<number, StoredPosition>;
  newest: number | null;
  /** A compacted namespace's base (its positions start there), with the parent hash its snapshot names. */
  base?: CompactionAnchor & { parentHash: string | undefined };
}

/** Checks one namespace's positions and the ledger rows they rely on. */
async function verifyNamespace(
  cp: Checkpointer,
  threadId: string,
  ns: string,
  base: CompactionAnchor | undefined,
  entries: Map<string, LedgerEntry> | undefined,
  report: VerifyReport,
): Promise<NamespaceChain> {
  // This namespace's hashes only: a parent seq names a position of the same chain, and
  // a first position (parent null) extends the genesis hash, in a child run as at the root.
  const chain: NamespaceChain = { hashes: new Map(), positions: new Map(), newest: null };
  if (base) {
    // Compacted: the chain starts at the base, whose parent hash its sealed snapshot names.
    const [stored] = await cp.getSnapshots(threadId, ns, { from: base.seq, to: base.seq });
    const sealed = stored ? openSnapshot(stored.text) : null;
    let parentHash: string | undefined;
    try {
      const body = sealed === null ? undefined : decode<SnapshotBody>(sealed, `the snapshot at seq ${base.seq}`);
      if (body?.position === base.hash && typeof body.parent === 'string') parentHash = body.parent;
    } catch {
      parentHash = undefined;
    }
    if (parentHash === undefined) {
      report.problems.push({ ns, seq: base.seq, kind: 'snapshot', code: 'ERR_CORRUPT_RECORD', message: `the compaction base ${base.seq} has no sealed snapshot of its own position: nothing proves the positions kept.` });
    }
    chain.base = { ...base, parentHash };
  }
  /** Seq a step's records are keyed by, for positions whose next superstep resumes a suspended one. */
  const origins = new Map<number, number>();
  const [newest] = await cp.listPositions(threadId, ns, { limit: 1 });
  if (!newest) return chain;
  chain.newest = newest.seq;
  for (let from = base?.seq ?? 0; from <= newest.seq; from += BATCH) {
    const range = { from, to: Math.min(newest.seq, from + BATCH - 1) };
    const [positions, items] = await Promise.all([cp.getPositions(threadId, ns, range), cp.getRangeItems(threadId, ns, range)]);
    const itemsBySeq = groupBySeq(items);
    for (const position of positions) {
      report.positions++;
      chain.positions.set(position.seq, position);
      const problem = (message: string) => report.problems.push({ ns, seq: position.seq, kind: 'position', code: 'ERR_CORRUPT_RECORD', message });
      let body: PositionBody;
      try {
        body = decode<PositionBody>(position.body, describePosition(ns, position.seq));
      } catch (error) {
        problem((error as Error).message);
        continue;
      }
      let parentHash = GENESIS_HASH;
      const isBase = chain.base?.seq === position.seq;
      if (isBase) {
        if (position.hash !== chain.base!.hash) problem(`the compaction base's hash ${chain.base!.hash.slice(0, 16)}… is not position ${position.seq}'s (${position.hash.slice(0, 16)}…).`);
        if (chain.base!.parentHash === undefined) continue;
        parentHash = chain.base!.parentHash;
      } else if (position.parent !== null) {
        const known = chain.hashes.get(position.parent);
        if (known === undefined) {
          problem(`parent ${position.parent} is missing or comes after its child.`);
          continue;
        }
        parentHash = known;
      }
      const expected = hashPosition(position, itemsBySeq.get(position.seq) ?? [], parentHash);
      if (expected !== position.hash) problem(`hash mismatch: stored ${position.hash.slice(0, 16)}…, recomputed ${expected.slice(0, 16)}….`);
      chain.hashes.set(position.seq, position.hash);
      if (body.suspended) origins.set(position.seq, body.suspended.origin);
      // The base's own step was compacted away (its records with it): nothing to check.
      if (entries && position.parent !== null && !isBase) {
        const origin = origins.get(position.parent) ?? position.parent;
        for (const [kind, refs] of [['record', body.records], ['effect', body.effects]] as const) {
          for (const ref of refs ?? []) {
            report.ledgerEntries++;
            const message = ledgerProblem(threadId, ref, kind, entries.get(ref.key), ns, origin);
            if (message) report.problems.push({ ns, seq: position.seq, kind: 'ledger', code: 'ERR_CORRUPT_RECORD', message });
          }
        }
      }
    }
  }
  return chain;
}

/** What is wrong with the ledger entry a position's call ref names, or undefined. */
function ledgerProblem(threadId: string, ref: CallRef, kind: 'record' | 'effect', entry: LedgerEntry | undefined, ns: string, origin: number): string | undefined {
  const what = `${kind === 'record' ? 'recorded output' : 'effect'} ${ref.key} ("${ref.name}")`;
  if (!entry) return `${what} is missing from the ledger.`;
  if (entry.kind !== kind) return `${what} is stored as a ledger ${entry.kind}.`;
  if (entry.name !== ref.name) return `${what} is stored under the name "${entry.name}".`;
  if (entry.status !== 'done' || entry.outcome === null) return `${what} has no outcome in the ledger.`;
  if (entry.ns !== ns || entry.seq !== origin) return `${what} is stored for another step (namespace "${entry.ns}", seq ${entry.seq}; the step started at seq ${origin}).`;
  // A derived key is a digest of the call's place: the row must still name that call.
  const derived = /^(rec|eff)_[0-9a-f]{40}$/.exec(entry.key);
  if (derived && derivedCallKey(derived[1] as 'rec' | 'eff', threadId, entry.ns, entry.seq, entry.task, entry.call) !== entry.key) {
    return `${what} names another call (task "${entry.task}", call ${entry.call}) than its key was derived from.`;
  }
  if (sha256Hex(entry.outcome) !== ref.digest) return `${what} does not match the digest its position holds: its outcome was changed or damaged.`;
  return undefined;
}

/** The anchored head of `ns` must be its newest position, by seq and hash. */
async function verifyHead(cp: Checkpointer, threadId: string, ns: string, head: HeadAnchor | null, chain: NamespaceChain, problems: VerifyProblem[]): Promise<void> {
  const problem = (seq: number, message: string) => problems.push({ ns, seq, kind: 'head', code: 'ERR_CORRUPT_RECORD', message });
  if (!head) {
    if (chain.newest !== null) problem(chain.newest, `the thread record anchors no head for this namespace, whose newest stored position is ${chain.newest}: the anchor was removed, with the newest positions or alone.`);
    return;
  }
  if (chain.newest === null || head.seq > chain.newest) {
    problem(head.seq, `the thread record anchors the head at seq ${head.seq}, but the newest stored position is ${chain.newest ?? 'none'}: positions were removed.`);
    return;
  }
  if (head.seq < chain.newest) problem(chain.newest, `positions up to ${chain.newest} are stored after the anchored head ${head.seq}.`);
  const stored = chain.positions.get(head.seq);
  if (!stored) problem(head.seq, `the anchored head ${head.seq} is not a stored position.`);
  else if (stored.hash !== head.hash) problem(head.seq, `the anchored head's hash ${head.hash.slice(0, 16)}… is not position ${head.seq}'s (${stored.hash.slice(0, 16)}…).`);
}

/**
 * Every snapshot of `ns`: sealed, bound to its position and its parent by hash, and
 * its item counts and checksums those of the log. Checksums are carried from one
 * snapshot to the next on the same branch, so a long linear thread's items are read once.
 */
async function verifySnapshots(cp: Checkpointer, threadId: string, ns: string, chain: NamespaceChain, report: VerifyReport): Promise<void> {
  if (chain.newest === null) return;
  /** Per field: the last snapshot checksum computed, to extend from on the same branch. */
  const carried = new Map<string, { seq: number; from: number; checksum: ItemChecksum }>();
  for (let from = 0; from <= chain.newest; from += BATCH) {
    const snapshots = await cp.getSnapshots(threadId, ns, { from, to: Math.min(chain.newest, from + BATCH - 1) });
    const itemsOf = await batchItems(cp, threadId, ns, from, snapshots.at(-1)?.seq, carried);
    for (const snapshot of snapshots) {
      report.snapshots++;
      const problem = (message: string) => report.problems.push({ ns, seq: snapshot.seq, kind: 'snapshot', code: 'ERR_CORRUPT_RECORD', message });
      const sealed = openSnapshot(snapshot.text);
      if (sealed === null) {
        problem(`the snapshot does not match its checksum.`);
        continue;
      }
      let body: SnapshotBody;
      try {
        body = decode<SnapshotBody>(sealed, `the snapshot at seq ${snapshot.seq}`);
      } catch (error) {
        problem((error as Error).message);
        continue;
      }
      // Written before snapshots were bound to the chain: loads do not use it.
      if (body.format !== SNAPSHOT_FORMAT) continue;
      const position = chain.positions.get(snapshot.seq);
      if (!position) {
        problem(`the snapshot has no position.`);
        continue;
      }
      const isBase = chain.base?.seq === snapshot.seq;
      const parentHash = isBase ? chain.base!.parentHash : position.parent === null ? GENESIS_HASH : chain.hashes.get(position.parent);
      if (body.position !== position.hash) {
        problem(`the snapshot was taken at another position than the one stored at seq ${snapshot.seq}.`);
        continue;
      }
      if (body.parent !== parentHash) {
        problem(`the snapshot names another parent hash than position ${snapshot.seq}'s parent has.`);
        continue;
      }
      const ranges = await ancestorRanges(cp, threadId, position, chain.positions, chain.base).catch(() => undefined);
      if (!ranges) continue; // the chain walk has reported the broken ancestry
      for (const [field, cursor] of Object.entries(body.appends ?? {})) {
        const held = cursor.inline?.length ?? (cursor.base !== undefined ? undefined : 0);
        const start = cursor.inline ? snapshot.seq + 1 : cursor.base !== undefined ? cursor.base + 1 : (cursor.since ?? 0);
        const previous = carried.get(field);
        let checksum: ItemChecksum;
        if (previous && previous.from === start && ranges.some((r) => r.from <= previous.seq && previous.seq <= r.to)) {
          checksum = previous.checksum.extend(await itemsOf(field, clip(ranges, previous.seq + 1, snapshot.seq)));
        } else {
          checksum = ItemChecksum.of(await itemsOf(field, clip(ranges, start, snapshot.seq)));
        }
        carried.set(field, { seq: snapshot.seq, from: start, checksum });
        if (held !== undefined && checksum.count + held !== cursor.count) {
          problem(`field "${field}" counts ${cursor.count} items, but the log holds ${checksum.count + held} up to this snapshot.`);
        } else if (checksum.value() !== cursor.checksum) {
          problem(`the checksum of field "${field}"'s items does not match the items in the log.`);
        }
      }
    }
  }
}

/**
 * The items a batch of snapshots is checked against, read in one round trip: those of
 * the seqs from the earliest checksum carried into the batch (or the batch's start) to
 * its last snapshot. A snapshot taken every few steps would otherwise cost a read per
 * snapshot and field (5,000 of them for a thread of 10,000 positions). A range outside
 * that window (a branch's older ancestry, a field's first snapshot) is read on its own.
 */
async function batchItems(
  cp: Checkpointer,
  threadId: string,
  ns: string,
  batchFrom: number,
  lastSnapshot: number | undefined,
  carried: Map<string, { seq: number }>,
): Promise<(field: string, ranges: SeqRange[]) => Promise<string[]>> {
  const direct = (field: string, ranges: SeqRange[]) => cp.getItems(threadId, ns, field, ranges);
  if (lastSnapshot === undefined) return direct;
  const carriedFrom = Math.min(batchFrom, ...[...carried.values()].map((c) => c.seq + 1));
  // A field carried from far back would make the window the whole thread: start at the batch then.
  const window = { from: lastSnapshot - carriedFrom > 2 * BATCH ? batchFrom : carriedFrom, to: lastSnapshot };
  const bySeq = groupBySeq(await cp.getRangeItems(threadId, ns, window));
  return async (field, ranges) => {
    if (!ranges.every((r) => r.from >= window.from && r.to <= window.to)) return direct(field, ranges);
    const texts: string[] = [];
    for (const r of ranges) for (let seq = r.from; seq <= r.to; seq++) for (const item of bySeq.get(seq) ?? []) if (item.field === field) texts.push(item.text);
    return texts;
  };
}

function groupBySeq(items: RangeItem[]): Map<number, RangeItem[]> {
  const bySeq = new Map<number, RangeItem[]>();
  for (const item of items) {
    let list = bySeq.get(item.seq);
    if (!list) bySeq.set(item.seq, (list = []));
    list.push(item);
  }
  for (const list of bySeq.values()) if (list.length > 1) list.sort(comparePositionItems);
  return bySeq;
}

function clip(ranges: SeqRange[], from: number, to: number): SeqRange[] {
  return ranges.filter((r) => r.to >= from && r.from <= to).map((r) => ({ from: Math.max(r.from, from), to: Math.min(r.to, to) }));
}
