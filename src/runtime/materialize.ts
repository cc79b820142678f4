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

/** Where an append field's items come from: the last reset on the branch (null: the root) and how many. */
export interface AppendCursor {
  since: number | null;
  count: number;
}

/** What a snapshot stores: non-append values in full, append fields as cursors only. */
export interface SnapshotBody {
  schemaVersion: number;
  values: Record<string, unknown>;
  appends: Record<string, AppendCursor>;
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
  if (snapshot) {
    const sealed = openSnapshot(snapshot.text);
    if (sealed === null) throw new CorruptRecordError(`the snapshot at seq ${snapshot.seq} does not match its digest.`, { place: { ...place, seq: snapshot.seq } });
    const snap = decode<SnapshotBody>(sealed, `snapshot ${snapshot.seq} of thread ${threadId}`);
    version = snap.schemaVersion;
    values = snap.values;
    appends = snap.appends;
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
        } else appends[name] = { since: delta.seq, count: change.reset };
      }
      sincePositions++;
      if (delta.seq === seq) body = deltaBody;
    }
  }
  body ??= decode<PositionBody>(position.body, `position ${seq} of thread ${threadId}`);

  for (const [name, cursor] of Object.entries(appends)) {
    const fieldRanges = cursor.since === null ? ranges : clipRanges(ranges, cursor.since);
    const texts = await cp.getItems(threadId, ns, name, fieldRanges);
    if (texts.length !== cursor.count) {
      throw new CorruptRecordError(`field "${name}" should have ${cursor.count} items but ${texts.length} are stored.`, { place });
    }
    const items = new Array<unknown>(texts.length);
    for (let i = 0; i < texts.length; i++) items[i] = decode(texts[i]!, `item ${i} of field "${name}" of thread ${threadId}`);
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

function clipRanges(ranges: SeqRange[], from: number): SeqRange[] {
  return ranges.filter((r) => r.to >= from).map((r) => ({ from: Math.max(r.from, from), to: r.to }));
}
