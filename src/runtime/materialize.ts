/**
 * @module runtime/materialize
 * Loading position N of a thread: the nearest snapshot on N's branch, the changes
 * of the positions after it, and the items of every append field, then upcast to
 * the current schema version, then defaults. Derived fields are added by the caller
 * (`schema.view`). Shared by every engine.
 *
 * Nothing is built from a row whose hash was not checked:
 * - the positions from the snapshot to N (or from the thread's start) are checked
 *   link by link against the chain, their items included;
 * - the snapshot is sealed (its own digest), names the chain hashes of its position
 *   and of that position's parent (so it belongs to this very position of this
 *   chain), and holds a checksum of the items it points at below it: those items are
 *   checked as they are read, without walking the positions that appended them;
 * - a load of the head compares N with the head the thread record anchors, so a
 *   truncated log is an error, not an older state.
 * And nothing is handed over that the code would misread: a position written at the
 * current schema version by code whose fields were something else is a
 * {@link SchemaDriftError}.
 */
import { own } from '../internal/own.js';
import { DECODED_ITEMS, type DecodedItemList, type DecodedItems } from '../internal/decoded-items.js';
import type { Checkpointer, CompactionAnchor, HeadAnchor, RangeItem, SeqRange, StoredPosition } from '../contracts/checkpointer.js';
import { comparePositionItems } from '../contracts/checkpointer.js';
import { GENESIS_HASH, ItemChecksum } from '../codec/hash.js';
import { decode } from '../codec/tagged-json.js';
import { CorruptRecordError, NamespaceNotFoundError, PositionCompactedError, PositionNotFoundError, ThreadNotFoundError, type ErrorPlace } from '../errors.js';
import type { StateSchema } from '../state/schema.js';
import { SNAPSHOT_FORMAT, hashPosition, openSnapshot, type FieldTable, type PositionBody } from './position.js';

/**
 * Where an append field's items come from: the last reset on the branch (null: the
 * root) and how many. `base`: the first items are held inline by the snapshot at that
 * seq (a snapshot rewritten at a new schema version), the rest come from the log after it.
 */
export interface AppendCursor {
  since: number | null;
  count: number;
  base?: number;
}

/** One append field in a snapshot: its cursor, and the checksum of the log items it points at. */
export interface SnapshotAppend extends AppendCursor {
  /** {@link ItemChecksum} of the field's items in the log up to the snapshot (after `base`, or from `since`). */
  checksum?: string;
  /** Only in snapshots rewritten at a new schema version: their items, upcast. */
  inline?: unknown[];
}

/** What a snapshot stores: non-append values in full, append fields as cursors only. */
export interface SnapshotBody {
  /** {@link SNAPSHOT_FORMAT}; absent in snapshots written before it, which loads do not trust. */
  format?: number;
  schemaVersion: number;
  /** Chain hash of the position the snapshot was taken at. */
  position?: string;
  /** Chain hash of that position's parent (the genesis hash for a first position). */
  parent?: string;
  /** What each field was when the snapshot was taken (see `StateSchema.fieldTable`). */
  fields?: FieldTable;
  values: Record<string, unknown>;
  appends: Record<string, SnapshotAppend>;
}

/** A position read and proven: the stored row, its decoded body and the state it leaves. */
export interface LoadedPosition {
  position: StoredPosition;
  body: PositionBody;
  /** Stored fields at the current schema version (upcast, defaults filled); as stored when no schema was given. */
  state: Record<string, unknown>;
  /** Schema version the position was written with. */
  storedVersion: number;
  /** Append cursors as stored (meaningful while storedVersion is current). */
  appends: Record<string, AppendCursor>;
  /** The checksum of each append field's log items (what the next snapshot records), by field. */
  checksums: Map<string, ItemChecksum>;
  /** Positions and set-value characters since the last snapshot on this branch (the snapshot policy's inputs). */
  sinceSnapshot: { positions: number; bytes: number };
  /**
   * The positions the load read and proved, oldest first (the snapshot's own position
   * first when there is one, the loaded position last), with their decoded bodies:
   * what a caller that keeps its own record along the branch rolls forward from.
   */
  chain?: readonly ChainLink[];
}

/** One position of a load's chain and its decoded body. */
export interface ChainLink {
  position: StoredPosition;
  body: PositionBody;
}

/** Options of {@link materialize}. */
export interface LoadOptions {
  /** The namespace's anchored head, when the position loaded is the head: its hash must be the anchor's. */
  head?: HeadAnchor;
}

/**
 * The seq ranges of `position` and all its ancestors, oldest first. A linear
 * history is one range; every fork on the path adds one.
 */
export async function ancestorRanges(
  cp: Checkpointer,
  threadId: string,
  position: StoredPosition,
  known?: ReadonlyMap<number, StoredPosition>,
  base?: CompactionAnchor,
): Promise<SeqRange[]> {
  // Positions the caller has read already (verify holds the namespace's): no round trip each.
  const positionAt = async (ns: string, seq: number) => known?.get(seq) ?? (await cp.getPosition(threadId, ns, seq));
  const ranges: SeqRange[] = [];
  let current: StoredPosition | null = position;
  while (current) {
    // Each step goes strictly back (segment <= seq, parent < segment start), so damaged
    // links end in an error, never in a loop.
    if (current.segment > current.seq) throw new CorruptRecordError(`position ${current.seq} names segment start ${current.segment}, which is not older.`, { place: { thread: threadId, seq: current.seq } });
    if (base && current.segment <= base.seq) {
      // A compacted namespace starts at its base: what lies below it is gone. Every
      // position kept descends from the base, so the base is on this segment.
      if (current.seq < base.seq) throw new PositionCompactedError(threadId, position.seq, base.seq, { engine: cp.engine, ns: position.ns });
      ranges.unshift({ from: base.seq, to: current.seq });
      break;
    }
    ranges.unshift({ from: current.segment, to: current.seq });
    const start: StoredPosition | null =
      current.segment === current.seq ? current : await positionAt(current.ns, current.segment);
    if (!start) throw new CorruptRecordError(`position ${current.seq} names segment start ${current.segment}, which is missing.`, { place: { thread: threadId, seq: current.seq } });
    if (start.parent === null) break;
    if (start.parent >= start.seq) throw new CorruptRecordError(`position ${start.seq} names parent ${start.parent}, which is not older.`, { place: { thread: threadId, seq: start.seq } });
    current = await positionAt(current.ns, start.parent);
    if (!current && base && start.parent < base.seq) throw new PositionCompactedError(threadId, position.seq, base.seq, { engine: cp.engine, ns: position.ns });
    if (!current) throw new CorruptRecordError(`position ${start.seq} names parent ${start.parent}, which is missing.`, { place: { thread: threadId, seq: start.seq } });
  }
  return ranges;
}

/**
 * The anchored head of a namespace, loaded. ThreadNotFoundError for a thread (root
 * namespace) with no position; NamespaceNotFoundError for a child namespace with none.
 *
 * @example
 * ```ts
 * const head = await materializeHead(engine.checkpointer, undefined, 'cust_42', '');
 * console.log(head.position.seq, head.state);
 * ```
 */
export async function materializeHead(cp: Checkpointer, schema: StateSchema | undefined, threadId: string, ns: string): Promise<LoadedPosition> {
  const head = await cp.getHead(threadId, ns);
  if (!head) {
    await checkUnanchored(cp, threadId, ns);
    if (ns === '' || ((await cp.getThread(threadId))?.head ?? null) === null) throw new ThreadNotFoundError(threadId, { engine: cp.engine });
    throw new NamespaceNotFoundError(threadId, ns, await cp.listNamespaces(threadId), { engine: cp.engine });
  }
  return materialize(cp, schema, threadId, ns, head.seq, { head });
}

/**
 * A namespace without a head anchor must hold no position: positions without one
 * mean the anchor was removed (with the newest positions, say), and reading or
 * starting the namespace afresh would pass an older state, or nothing, for the head.
 */
export async function checkUnanchored(cp: Checkpointer, threadId: string, ns: string): Promise<void> {
  const [newest] = await cp.listPositions(threadId, ns, { limit: 1 });
  if (newest) {
    throw new CorruptRecordError(`the thread record anchors no head for positions up to ${newest.seq}: the anchor was removed, with the newest positions or alone.`, {
      place: { engine: cp.engine, thread: threadId, ns, seq: newest.seq },
    });
  }
}

/**
 * Loads position `seq` of a thread namespace, proving it (chain from the nearest
 * snapshot, item checksums). Without a schema (inspection tools that do not know the
 * application's code) the state is returned as stored, not upcast.
 *
 * @example
 * ```ts
 * const { state, body } = await materialize(engine.checkpointer, undefined, 'cust_42', '', 3);
 * ```
 */
export async function materialize(
  cp: Checkpointer,
  schema: StateSchema | undefined,
  threadId: string,
  ns: string,
  seq: number,
  options: LoadOptions = {},
): Promise<LoadedPosition> {
  const place: ErrorPlace = { engine: cp.engine, thread: threadId, ns, seq };
  const corrupt = (message: string, at = seq) => new CorruptRecordError(message, { place: { ...place, seq: at } });
  // A read below a compacted namespace's base is refused, not answered from what is left.
  const [position, anchor] = await Promise.all([cp.getPosition(threadId, ns, seq), options.head ? options.head : cp.getHead(threadId, ns)]);
  const base = anchor?.base;
  if (base && seq < base.seq) throw new PositionCompactedError(threadId, seq, base.seq, { engine: cp.engine, ns });
  if (!position) {
    if (options.head) throw corrupt(`the thread record anchors the head at seq ${seq}, but no position ${seq} is stored: the newest positions were removed.`);
    throw new PositionNotFoundError(threadId, seq, { engine: cp.engine, ns });
  }
  if (options.head && options.head.hash !== position.hash) {
    throw corrupt(`position ${seq} is not the head the thread record anchors (hash ${options.head.hash.slice(0, 16)}…, stored ${position.hash.slice(0, 16)}…).`);
  }
  if (base && position.seq === base.seq && position.hash !== base.hash) {
    throw corrupt(`position ${seq} is not the compaction base the thread record anchors (hash ${base.hash.slice(0, 16)}…, stored ${position.hash.slice(0, 16)}…).`);
  }
  const ranges = await ancestorRanges(cp, threadId, position, undefined, base);
  const snapshot = await trustedSnapshot(cp, threadId, ns, ranges, place);

  // The positions the load applies (after the snapshot), with the snapshot's own
  // position first when there is one: its hash is what binds the snapshot to the chain.
  const start = snapshot ? snapshot.seq : 0;
  const chain: StoredPosition[] = [];
  const itemsBySeq = new Map<number, RangeItem[]>();
  for (const range of ranges) {
    if (range.to < start) continue;
    const clipped = { from: Math.max(range.from, start), to: range.to };
    // A range of the loaded position alone (a thread's first position, a snapshot at the head) is read already.
    const known = clipped.from === position.seq && clipped.to === position.seq;
    const [positions, items] = await Promise.all([known ? [position] : cp.getPositions(threadId, ns, clipped), cp.getRangeItems(threadId, ns, clipped)]);
    chain.push(...positions);
    for (const item of items) {
      let list = itemsBySeq.get(item.seq);
      if (!list) itemsBySeq.set(item.seq, (list = []));
      list.push(item);
    }
  }
  const bodies = checkChain(chain, itemsBySeq, snapshot, seq, threadId, corrupt);

  let version = snapshot ? snapshot.body.schemaVersion : chain[0]!.schemaVersion;
  let values: Record<string, unknown> = snapshot ? snapshot.body.values : {};
  let fields: FieldTable | undefined = snapshot?.body.fields;
  const appends: Record<string, AppendCursor> = {};
  /** Items held inline by a rewritten snapshot, by field. */
  const inline = new Map<string, unknown[]>();
  /** Per field: the log items after the snapshot (after the field's last reset), in order. */
  const tails = new Map<string, string[]>();
  if (snapshot) {
    for (const [name, cursor] of Object.entries(snapshot.body.appends)) {
      if (cursor.inline) {
        inline.set(name, cursor.inline);
        appends[name] = { since: cursor.since, count: cursor.count, base: snapshot.seq };
      } else {
        if (cursor.base !== undefined) inline.set(name, await inlineItems(cp, threadId, ns, cursor.base, name, place));
        appends[name] = { since: cursor.since, count: cursor.count, ...(cursor.base !== undefined ? { base: cursor.base } : {}) };
      }
    }
  }

  let sinceBytes = 0;
  let sincePositions = 0;
  for (let i = snapshot ? 1 : 0; i < chain.length; i++) {
    const delta = chain[i]!;
    const body = bodies[i]!;
    if (delta.schemaVersion !== version) {
      // The first position under a new schema version rebases: it resets every
      // field, so nothing accumulated at the older version is needed any more.
      values = {};
      for (const name of Object.keys(appends)) delete appends[name];
      inline.clear();
      tails.clear();
      fields = undefined;
      version = delta.schemaVersion;
    }
    if (body.fields) fields = body.fields;
    const items = itemsBySeq.get(delta.seq);
    for (const [name, change] of Object.entries(body.changes)) {
      if ('set' in change) {
        values[name] = change.set;
        continue;
      }
      const texts = items ? items.filter((item) => item.field === name).map((item) => item.text) : [];
      if ('append' in change) {
        const cursor = own(appends, name) ?? (appends[name] = { since: null, count: 0 });
        cursor.count += change.append;
        const tail = tails.get(name);
        if (tail) tail.push(...texts);
        else tails.set(name, texts);
      } else {
        appends[name] = { since: delta.seq, count: change.reset };
        inline.delete(name);
        tails.set(name, texts);
      }
    }
    sinceBytes += body.setBytes ?? 0;
    sincePositions++;
  }

  const checksums = new Map<string, ItemChecksum>();
  for (const [name, cursor] of Object.entries(appends)) {
    const held = cursor.base !== undefined ? (inline.get(name) ?? []) : [];
    const tail = tails.get(name) ?? [];
    // The field's items below the snapshot, unless it was reset after it: read in one
    // query and checked against the snapshot's checksum.
    let below: string[] = [];
    // The same items decoded already, where the checkpointer hands them so (internal/decoded-items).
    let belowValues: unknown[] | null = null;
    let checksum = ItemChecksum.of([]);
    const fromSnapshot = snapshot && (cursor.since === null || cursor.since <= snapshot.seq) ? own(snapshot.body.appends, name) : undefined;
    if (snapshot && fromSnapshot) {
      const from = cursor.base !== undefined ? cursor.base + 1 : cursor.since;
      const belowRanges = clipRanges(ranges, from ?? 0, snapshot.seq);
      const decoded = belowRanges.length ? await decodedItems(cp, threadId, ns, name, belowRanges, fromSnapshot.checksum) : null;
      if (decoded) {
        belowValues = decoded.values;
        checksum = decoded.checksum;
      } else {
        below = await cp.getItems(threadId, ns, name, belowRanges);
        checksum = ItemChecksum.of(below);
      }
      const belowCount = belowValues ? belowValues.length : below.length;
      const logCount = fromSnapshot.count - held.length;
      if (belowCount !== logCount || checksum.value() !== fromSnapshot.checksum) {
        throw corrupt(
          belowCount !== logCount
            ? `field "${name}" should have ${logCount} items up to the snapshot at seq ${snapshot.seq} but ${belowCount} are stored.`
            : `the items of field "${name}" up to the snapshot at seq ${snapshot.seq} do not match its checksum: an item row was changed or damaged.`,
          snapshot.seq,
        );
      }
    }
    checksum = checksum.extend(tail);
    const belowCount = belowValues ? belowValues.length : below.length;
    if (held.length + belowCount + tail.length !== cursor.count) {
      throw corrupt(`field "${name}" should have ${cursor.count} items but ${held.length + belowCount + tail.length} are stored.`);
    }
    const list = new Array<unknown>(cursor.count);
    for (let i = 0; i < held.length; i++) list[i] = structuredClone(held[i]);
    if (belowValues) for (let i = 0; i < belowValues.length; i++) list[held.length + i] = belowValues[i];
    else decodeItems(below, list, held.length, name, threadId);
    decodeItems(tail, list, held.length + belowCount, name, threadId);
    values[name] = list;
    checksums.set(name, checksum);
  }

  if (schema && fields && version === schema.version) schema.checkDrift(fields, place);
  // What was stored, before the upcasters (which may change `values` in place) ran: what checkUpcast compares against.
  const stored = schema && version < schema.version ? { ...values } : values;
  const state = schema ? schema.upcast(values, version, place) : values;
  if (schema) await schema.checkUpcast(stored, state, version, fields, place);
  return {
    position,
    body: bodies[bodies.length - 1]!,
    state,
    storedVersion: version,
    appends,
    checksums,
    sinceSnapshot: { positions: sincePositions, bytes: sinceBytes },
    chain: chain.map((link, i) => ({ position: link, body: bodies[i]! })),
  };
}

/**
 * Checks `chain` link by link, the first against the snapshot (its position's parent
 * hash and own hash) or the genesis hash, each with its own items, and that it ends
 * at `seq`. Returns the decoded bodies, in chain order.
 */
function checkChain(
  chain: StoredPosition[],
  itemsBySeq: Map<number, RangeItem[]>,
  snapshot: TrustedSnapshot | null,
  seq: number,
  threadId: string,
  corrupt: (message: string, at?: number) => CorruptRecordError,
): PositionBody[] {
  const bodies: PositionBody[] = [];
  let previous: StoredPosition | undefined;
  for (const position of chain) {
    let parentHash: string;
    if (!previous) {
      if (snapshot) {
        if (position.seq !== snapshot.seq) throw corrupt(`the snapshot at seq ${snapshot.seq} has no position of its own.`, snapshot.seq);
        if (position.hash !== snapshot.body.position) throw corrupt(`the snapshot at seq ${snapshot.seq} was taken at another position than the one stored there.`, snapshot.seq);
        parentHash = snapshot.body.parent!;
      } else {
        if (position.parent !== null) throw corrupt(`position ${position.seq} starts the branch but names parent ${position.parent}.`, position.seq);
        parentHash = GENESIS_HASH;
      }
    } else {
      if (position.parent !== previous.seq) {
        throw corrupt(`position ${position.seq} names parent ${position.parent}, but its branch reaches it from position ${previous.seq}.`, position.seq);
      }
      parentHash = previous.hash;
    }
    const items = itemsBySeq.get(position.seq) ?? [];
    if (items.length > 1) items.sort(comparePositionItems);
    if (hashPosition(position, items, parentHash) !== position.hash) {
      throw corrupt(`position ${position.seq} does not match its hash: its row or its items were changed or damaged.`, position.seq);
    }
    bodies.push(decode<PositionBody>(position.body, `position ${position.seq} of thread ${threadId}`));
    previous = position;
  }
  if (previous?.seq !== seq) throw corrupt(`the branch of position ${seq} does not reach it: a position on the way is missing.`);
  return bodies;
}

interface TrustedSnapshot {
  seq: number;
  body: SnapshotBody;
}

/**
 * The newest snapshot on the branch, opened and checked, or null when there is none
 * or it predates {@link SNAPSHOT_FORMAT} (then the load reads the log from its start).
 * A snapshot that does not match its own digest is an error, not a reason to look
 * further back: damage is reported where it is.
 */
async function trustedSnapshot(cp: Checkpointer, threadId: string, ns: string, ranges: SeqRange[], place: ErrorPlace): Promise<TrustedSnapshot | null> {
  const stored = await cp.getSnapshot(threadId, ns, ranges);
  if (!stored) return null;
  const body = openSnapshotBody(stored, threadId, place);
  if (body.format !== SNAPSHOT_FORMAT) return null;
  if (typeof body.position !== 'string' || typeof body.parent !== 'string') {
    throw new CorruptRecordError(`the snapshot at seq ${stored.seq} does not name its position.`, { place: { ...place, seq: stored.seq } });
  }
  return { seq: stored.seq, body };
}

function openSnapshotBody(snapshot: { seq: number; text: string }, threadId: string, place: ErrorPlace): SnapshotBody {
  const sealed = openSnapshot(snapshot.text);
  if (sealed === null) throw new CorruptRecordError(`the snapshot at seq ${snapshot.seq} does not match its digest.`, { place: { ...place, seq: snapshot.seq } });
  return decode<SnapshotBody>(sealed, `snapshot ${snapshot.seq} of thread ${threadId}`);
}

/** The items a rewritten snapshot holds inline for one field. */
async function inlineItems(cp: Checkpointer, threadId: string, ns: string, seq: number, field: string, place: ErrorPlace): Promise<unknown[]> {
  const stored = await cp.getSnapshot(threadId, ns, [{ from: seq, to: seq }]);
  const items = stored ? own(openSnapshotBody(stored, threadId, place).appends, field)?.inline : undefined;
  if (!items) throw new CorruptRecordError(`field "${field}" refers to items held by the snapshot at seq ${seq}, which has none.`, { place: { ...place, seq } });
  return items;
}

/** The checkpointer's decoded items of `field` inside `ranges`, or null when it hands out texts only. */
function decodedItems(cp: Checkpointer, threadId: string, ns: string, field: string, ranges: SeqRange[], expected: string | undefined): Promise<DecodedItemList | null> | null {
  const read = (cp as Partial<DecodedItems>)[DECODED_ITEMS];
  return typeof read === 'function' ? read.call(cp, threadId, ns, field, ranges, expected) : null;
}

/**
 * Decodes item texts into `into` from `offset`, naming the item of a text that does
 * not decode. A tight loop: a long thread's load is mostly this and the checksum.
 */
function decodeItems(texts: readonly string[], into: unknown[], offset: number, field: string, threadId: string): void {
  let i = 0;
  try {
    for (; i < texts.length; i++) into[offset + i] = decode(texts[i]!);
  } catch (error) {
    throw new CorruptRecordError(`item ${offset + i} of field "${field}" of thread ${threadId} does not decode (${(error as Error).message}).`, { cause: error });
  }
}

/** The ranges restricted to `from <= seq <= to`. */
function clipRanges(ranges: SeqRange[], from: number, to: number): SeqRange[] {
  return ranges.filter((r) => r.to >= from && r.from <= to).map((r) => ({ from: Math.max(r.from, from), to: Math.min(r.to, to) }));
}
