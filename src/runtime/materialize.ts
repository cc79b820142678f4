/**
 * @module runtime/materialize
 * Loading position N of a thread: the nearest snapshot on N's branch, the changes
 * of the positions after it, and the items of every append field (fetched in one
 * query per field), then upcast to the current schema version, then defaults.
 * Derived fields are added by the caller (`schema.view`). Shared by every engine.
 */
import type { Checkpointer, SeqRange, StoredPosition } from '../contracts/checkpointer.js';
import { decode } from '../codec/tagged-json.js';
import { CorruptRecordError, PositionNotFoundError, type ErrorPlace } from '../errors.js';
import type { StateSchema } from '../state/schema.js';
import { GENESIS_HASH } from '../codec/hash.js';
import { encode } from '../codec/tagged-json.js';
import { openSnapshot, recomputeHash, type PositionBody } from './position.js';

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

/** What a snapshot stores: non-append values in full, append fields as cursors only. */
export interface SnapshotBody {
  schemaVersion: number;
  values: Record<string, unknown>;
  /** `inline` appears only in snapshots rewritten at a new schema version (their items, upcast). */
  appends: Record<string, AppendCursor & { inline?: unknown[] }>;
}

export interface LoadedPosition {
  position: StoredPosition;
  body: PositionBody;
  /** Stored fields at the current schema version (upcast, defaults filled); as stored when no schema was given. */
  state: Record<string, unknown>;
  /** Schema version the position was written with. */
  storedVersion: number;
  /** Append cursors as stored (meaningful while storedVersion is current). */
  appends: Record<string, AppendCursor>;
  /** Positions and change bytes since the last snapshot on this branch (the snapshot policy's inputs). */
  sinceSnapshot: { positions: number; bytes: number };
}

/**
 * The seq ranges of `position` and all its ancestors, oldest first. A linear
 * history is one range; every fork on the path adds one.
 */
export async function ancestorRanges(cp: Checkpointer, threadId: string, position: StoredPosition): Promise<SeqRange[]> {
  const ranges: SeqRange[] = [];
  let current: StoredPosition | null = position;
  while (current) {
    ranges.unshift({ from: current.segment, to: current.seq });
    const start: StoredPosition | null =
      current.segment === current.seq ? current : await cp.getPosition(threadId, current.ns, current.segment);
    if (!start) throw new CorruptRecordError(`position ${current.seq} names segment start ${current.segment}, which is missing.`, { place: { thread: threadId, seq: current.seq } });
    if (start.parent === null) break;
    current = await cp.getPosition(threadId, current.ns, start.parent);
    if (!current) throw new CorruptRecordError(`position ${start.seq} names parent ${start.parent}, which is missing.`, { place: { thread: threadId, seq: start.seq } });
  }
  return ranges;
}

/**
 * Loads position `seq` of a thread namespace. Without a schema (inspection tools that
 * do not know the application's code) the state is returned as stored, not upcast.
 */
export async function materialize(
  cp: Checkpointer,
  schema: StateSchema | undefined,
  threadId: string,
  ns: string,
  seq: number,
): Promise<LoadedPosition> {
  const place: ErrorPlace = { engine: cp.engine, thread: threadId, ns, seq };
  const position = await cp.getPosition(threadId, ns, seq);
  if (!position) throw new PositionNotFoundError(threadId, seq, { engine: cp.engine, ns });
  const ranges = await ancestorRanges(cp, threadId, position);
  const snapshot = await cp.getSnapshot(threadId, ns, ranges);

  let version: number;
  let values: Record<string, unknown>;
  let appends: Record<string, AppendCursor>;
  /** Items held inline by a rewritten snapshot, by field. */
  const inline = new Map<string, unknown[]>();
  if (snapshot) {
    const snap = openSnapshotBody(snapshot, threadId, place);
    version = snap.schemaVersion;
    values = snap.values;
    appends = {};
    for (const [name, cursor] of Object.entries(snap.appends)) {
      if (cursor.inline) {
        inline.set(name, cursor.inline);
        appends[name] = { since: cursor.since, count: cursor.count, base: snapshot.seq };
      } else {
        if (cursor.base !== undefined) inline.set(name, await inlineItems(cp, threadId, ns, cursor.base, name, place));
        appends[name] = cursor;
      }
    }
  } else {
    version = position.schemaVersion;
    values = {};
    appends = {};
  }

  const after = snapshot ? snapshot.seq + 1 : 0;
  // The chain is checked from the snapshot to the position on every load (a few
  // positions); the whole chain, items included, is what verifyThread() checks.
  let previous: StoredPosition | null = null;
  let body: PositionBody | undefined;
  let sinceBytes = 0;
  let sincePositions = 0;
  for (const range of ranges) {
    if (range.to < after) continue;
    const deltas = await cp.getPositions(threadId, ns, { from: Math.max(range.from, after), to: range.to });
    for (const delta of deltas) {
      const deltaBody = decode<PositionBody>(delta.body, `position ${delta.seq} of thread ${threadId}`);
      const parentHash =
        delta.parent === null ? GENESIS_HASH : previous?.seq === delta.parent ? previous.hash : (await cp.getPosition(threadId, ns, delta.parent))?.hash;
      if (parentHash === undefined) throw new CorruptRecordError(`position ${delta.seq} names parent ${delta.parent}, which is missing.`, { place: { ...place, seq: delta.seq } });
      if ((await recomputeHash(cp, threadId, delta, deltaBody, parentHash)) !== delta.hash) {
        throw new CorruptRecordError(`position ${delta.seq} does not match its hash: its row was changed or damaged.`, { place: { ...place, seq: delta.seq } });
      }
      previous = delta;
      if (delta.schemaVersion !== version) {
        // The first position under a new schema version rebases: it resets every
        // field, so nothing accumulated at the older version is needed any more.
        values = {};
        appends = {};
        version = delta.schemaVersion;
      }
      for (const [name, change] of Object.entries(deltaBody.changes)) {
        if ('set' in change) {
          values[name] = change.set;
          sinceBytes += encode(change.set).length;
        }
        else if ('append' in change) {
          const cursor = appends[name] ?? (appends[name] = { since: null, count: 0 });
          cursor.count += change.append;
        } else {
          appends[name] = { since: delta.seq, count: change.reset };
          inline.delete(name);
        }
      }
      sincePositions++;
      if (delta.seq === seq) body = deltaBody;
    }
  }
  body ??= decode<PositionBody>(position.body, `position ${seq} of thread ${threadId}`);

  for (const [name, cursor] of Object.entries(appends)) {
    const held = cursor.base !== undefined ? (inline.get(name) ?? []) : [];
    const from = cursor.base !== undefined ? cursor.base + 1 : cursor.since;
    const fieldRanges = from === null ? ranges : clipRanges(ranges, from);
    const texts = await cp.getItems(threadId, ns, name, fieldRanges);
    if (held.length + texts.length !== cursor.count) {
      throw new CorruptRecordError(`field "${name}" should have ${cursor.count} items but ${held.length + texts.length} are stored.`, { place });
    }
    const items = new Array<unknown>(held.length + texts.length);
    for (let i = 0; i < held.length; i++) items[i] = structuredClone(held[i]);
    let at = 0;
    const where = () => `item ${at} of field "${name}" of thread ${threadId}`;
    for (; at < texts.length; at++) items[held.length + at] = decode(texts[at]!, where);
    values[name] = items;
  }

  const state = schema ? schema.upcast(values, version, place) : values;
  return {
    position,
    body,
    state,
    storedVersion: version,
    appends,
    sinceSnapshot: { positions: sincePositions, bytes: sinceBytes },
  };
}

function openSnapshotBody(snapshot: { seq: number; text: string }, threadId: string, place: ErrorPlace): SnapshotBody {
  const sealed = openSnapshot(snapshot.text);
  if (sealed === null) throw new CorruptRecordError(`the snapshot at seq ${snapshot.seq} does not match its digest.`, { place: { ...place, seq: snapshot.seq } });
  return decode<SnapshotBody>(sealed, `snapshot ${snapshot.seq} of thread ${threadId}`);
}

/** The items a rewritten snapshot holds inline for one field. */
async function inlineItems(cp: Checkpointer, threadId: string, ns: string, seq: number, field: string, place: ErrorPlace): Promise<unknown[]> {
  const stored = await cp.getSnapshot(threadId, ns, [{ from: seq, to: seq }]);
  const items = stored ? openSnapshotBody(stored, threadId, place).appends[field]?.inline : undefined;
  if (!items) throw new CorruptRecordError(`field "${field}" refers to items held by the snapshot at seq ${seq}, which has none.`, { place: { ...place, seq } });
  return items;
}

function clipRanges(ranges: SeqRange[], from: number): SeqRange[] {
  return ranges.filter((r) => r.to >= from).map((r) => ({ from: Math.max(r.from, from), to: r.to }));
}
