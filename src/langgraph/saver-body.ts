/**
 * @module langgraph/saver-body
 * What a position written by `CairnSaver` holds besides cairn's own body: the
 * LangGraph checkpoint's identity and bookkeeping (id, time, format version, the
 * channel versions, versions seen, metadata, the parent's id) and the pending
 * writes of its parent that it folded in. Channel values are not here: they are
 * the position's `changes` (set values, and list items stored once each).
 */
import * as crypto from 'node:crypto';
import { createHash } from 'node:crypto';
import type { PositionBody } from '../runtime/position.js';

/** One LangGraph pending write as stored: the task, its path, the write's index and channel, and the value's text. */
export interface StoredWrite {
  task: string;
  /** The task's path (`writesSortKey`), '' when the caller gave none. */
  path: string;
  /** The index LangGraph keys the write by: its place in the call, or WRITES_IDX_MAP's for special channels. */
  idx: number;
  channel: string;
  /** Canonical text of the value's stored form (see `ChannelValues`); absent for a list value. */
  value?: string;
  /** A list value: each item's text, as a list channel's items are stored. */
  items?: string[];
  /**
   * In a child's `parentWrites` only: the list value is items `[from, from + count)` that
   * the child appended to (or reset) the write's channel, so they are stored once, as
   * the child's items, not twice.
   */
  ref?: [from: number, count: number];
  /** From a folded write of a body (`parentTasks`): the value's stored form, decoded with the body. */
  storedValue?: unknown;
  /** From a folded write of a body: a list value's items' stored forms, decoded with the body. */
  storedItems?: unknown[];
}

/**
 * One task's writes as the child checkpoint keeps them (`parentTasks`): the task id and
 * path once for all of its writes, each write's value in place (not as a text inside the
 * text), its index only when it is not the write's place in the list.
 */
export interface FoldedTask {
  task: string;
  path: string;
  writes: FoldedWrite[];
}

/** One write of a {@link FoldedTask}: a value, a list's items, or a `ref` to the child's own items (see {@link StoredWrite.ref}). */
export interface FoldedWrite {
  channel: string;
  idx?: number;
  value?: unknown;
  items?: unknown[];
  ref?: [from: number, count: number];
}

/** A checkpoint's channel versions. */
export type Versions = Record<string, string | number>;
/** A checkpoint's versions seen, by node. */
export type Seen = Record<string, Versions>;

/** The LangGraph checkpoint format version records leave out (`v` absent). */
export const CHECKPOINT_FORMAT = 4;

/**
 * The LangGraph part of a position's body.
 *
 * Versions and versions seen are kept in full (`versions`, `seen`) by a namespace's
 * first position, by every position the saver wrote a snapshot at (so a load, which
 * starts at the nearest snapshot, and a compaction base, which is one, always start
 * from a full record), and by every record written before the short form. Other
 * records keep only what differs from their parent's, once the parent's are rolled
 * forward by what LangGraph does at each step (see {@link impliedVersions}):
 * `dv`/`xv` for the versions, `ds` (or `dl`) for the versions seen, and `tl` for folded writes
 * shaped as the parent's were. Metadata likewise leaves out what the position says
 * (see {@link metadataRest}).
 */
export interface LangGraphRecord {
  /** The checkpoint id (a uuid6). */
  id: string;
  /** The checkpoint's `ts`, as given; absent when it is the position's `createdAt` as an ISO string (as LangGraph's are). */
  ts?: string;
  /** The checkpoint format version (`v`); absent when it is {@link CHECKPOINT_FORMAT}. */
  v?: number;
  /** The channel versions in full; absent in a record that keeps only their difference from the parent's (`dv`, `xv`). */
  versions?: Versions;
  /** The versions seen in full; absent in a record that keeps only their difference from the parent's (`ds`). */
  seen?: Seen;
  /** Channel versions that are not the implied ones (see {@link impliedVersions}), when `versions` is absent. */
  dv?: Versions;
  /** Channels of the implied versions the checkpoint does not have, when `versions` is absent. */
  xv?: string[];
  /** Versions seen that differ from the parent's (each node's entries merged over the parent's), when `seen` is absent. */
  ds?: Seen;
  /**
   * In place of `ds` (value 1): the versions seen are the parent's with the entries the
   * parent record changed (see {@link ResolvedRecord.seenChanged}) each set to the
   * parent's version of its channel: the same node ran again, on the same trigger.
   */
  dl?: 1;
  /** The metadata's stored form (records written before `meta`: `metadata`, its canonical text). */
  meta?: unknown;
  /** Canonical text of the metadata's stored form, in records written before `meta`. */
  metadata?: string;
  /**
   * The metadata's stored form without what the position says (see {@link metadataRest});
   * a record with none of `meta`, `metadata` and `m` has only what the position says.
   */
  m?: unknown;
  /**
   * The id of the checkpoint this one was put after, when the caller named one. Absent
   * when it is the id of the parent position's checkpoint (records write it only when
   * the named checkpoint was not found, so that the position has no parent).
   */
  parentId?: string;
  /** The parent's pending writes, as they were when this checkpoint landed (cairn folds a parent's writes into its child), by task. */
  parentTasks?: FoldedTask[];
  /**
   * In place of `parentTasks` when they are the parent record's (its `parentTasks`, or
   * its own `tl` resolved) but for the task ids: those ids, in order, each `0` when it is
   * the id LangGraph derives for the task (see {@link derivedTaskId}). A loop's steps
   * fold the same node's writes to the same channels, step after step.
   */
  tl?: (string | 0)[];
  /** The same, in records written before `parentTasks`: one entry per write, values as texts. */
  parentWrites?: StoredWrite[];
  /** Further checkpoint fields LangGraph may add, kept as given. */
  extra?: Record<string, unknown>;
}

/** What a record says once rolled forward from its ancestors': versions and versions seen in full, and its folded writes by task. */
export interface ResolvedRecord {
  /** The checkpoint id. */
  id: string;
  versions: Versions;
  seen: Seen;
  /** The record's `parentTasks` (none: `[]`), or undefined for a record that keeps them in the earlier form (`parentWrites`). */
  tasks: FoldedTask[] | undefined;
  /** The versions-seen entries the record changed from its parent's, by node (undefined for a record that keeps them in full). */
  seenChanged?: Record<string, string[]>;
}

/**
 * The versions a checkpoint has when LangGraph did what it does at a step: every
 * channel the step changed (the position's `changes`, which are the put's
 * `newVersions`) takes the next version after the parent's highest
 * (`getNextVersion(maxChannelVersion(...))`, numbers counting up), the others keep the
 * parent's. Versions that are not numbers imply nothing new: those are kept as given.
 */
export function impliedVersions(parent: Versions, changed: readonly string[]): Versions {
  const implied: Versions = { ...parent };
  if (changed.length === 0) return implied;
  let max = 0;
  for (const name in parent) {
    const version = parent[name];
    if (typeof version !== 'number') return implied;
    if (version > max) max = version;
  }
  for (const name of changed) implied[name] = max + 1;
  return implied;
}

/** How `actual` differs from the implied versions: the versions to set (`dv`) and the channels to drop (`xv`). */
export function versionsDelta(parent: Versions, changed: readonly string[], actual: Versions): { dv?: Versions; xv?: string[] } {
  const implied = impliedVersions(parent, changed);
  const delta: { dv?: Versions; xv?: string[] } = {};
  for (const [name, version] of Object.entries(actual)) {
    if (Object.hasOwn(implied, name) && implied[name] === version) continue;
    (delta.dv ??= {})[name] = version;
  }
  for (const name of Object.keys(implied)) if (!Object.hasOwn(actual, name)) (delta.xv ??= []).push(name);
  return delta;
}

/** How `actual` differs from the parent's versions seen, or null when a node or an entry went (the record then keeps them in full). */
export function seenDelta(parent: Seen, actual: Seen): Seen | null {
  for (const [node, versions] of Object.entries(parent)) {
    const now = actual[node];
    if (!Object.hasOwn(actual, node) || typeof now !== 'object' || now === null) return null;
    for (const name of Object.keys(versions)) if (!Object.hasOwn(now, name)) return null;
  }
  const delta: Seen = {};
  for (const [node, versions] of Object.entries(actual)) {
    const before = Object.hasOwn(parent, node) ? parent[node]! : undefined;
    let changed: Versions | undefined = before ? undefined : {};
    for (const [name, version] of Object.entries(versions)) {
      if (before && Object.hasOwn(before, name) && before[name] === version) continue;
      (changed ??= {})[name] = version;
    }
    if (changed) delta[node] = changed;
  }
  return delta;
}

/**
 * A record resolved: its versions and versions seen in full (its own, or its parent's
 * rolled forward by its changed channels, `changed`, its position's `changes`, and its
 * deltas) and its folded writes (its own, or the parent's with its task ids). `place`:
 * the record's namespace and position step (what derived task ids are derived from). Undefined
 * when the record needs its parent's and `parent` is not given (or does not fit).
 */
export function resolveRecord(record: LangGraphRecord, changed: readonly string[], parent: ResolvedRecord | undefined, place: { ns: string; step: number }): ResolvedRecord | undefined {
  let versions = record.versions;
  if (!versions) {
    if (!parent) return undefined;
    versions = impliedVersions(parent.versions, changed);
    if (record.dv) Object.assign(versions, record.dv);
    for (const name of record.xv ?? []) delete versions[name];
  }
  let seen = record.seen;
  let seenChanged: Record<string, string[]> | undefined;
  if (!seen) {
    if (!parent) return undefined;
    // The nodes it changes are copied; the others are the parent's own objects (resolved records are never changed in place).
    seen = { ...parent.seen };
    if (record.dl) {
      if (!parent.seenChanged) return undefined;
      for (const node in parent.seenChanged) {
        const channels = parent.seenChanged[node]!;
        const entries = (seen[node] = { ...(seen[node] ?? {}) });
        for (const channel of channels) {
          if (!Object.hasOwn(parent.versions, channel)) return undefined;
          entries[channel] = parent.versions[channel]!;
        }
      }
      seenChanged = parent.seenChanged;
    } else {
      for (const [node, entries] of Object.entries(record.ds ?? {})) seen[node] = { ...(seen[node] ?? {}), ...entries };
      seenChanged = changedOf(record.ds ?? {});
    }
  }
  let tasks: FoldedTask[] | undefined;
  if (record.tl) {
    if (!parent?.tasks || parent.tasks.length !== record.tl.length) return undefined;
    tasks = [];
    for (const [i, task] of parent.tasks.entries()) {
      const id = record.tl[i] === 0 ? derivedTaskId(task.path, { ns: place.ns, step: place.step - 1, parentId: parent.id, seenChanged }) : record.tl[i];
      if (id === undefined) return undefined;
      tasks.push({ ...task, task: id });
    }
  } else tasks = record.parentTasks ?? (record.parentWrites ? undefined : []);
  return { id: record.id, versions, seen, tasks, ...(seenChanged ? { seenChanged } : {}) };
}

/** What a task id is derived from besides the task's path (see {@link derivedTaskId}). */
export interface TaskContext {
  ns: string;
  /** The step of the checkpoint the writes were folded into (its metadata's `step`). */
  step: number;
  /** The id of the checkpoint the writes belong to (the task ran from it). */
  parentId: string;
  /** The versions-seen entries the checkpoint changed, by node (see {@link ResolvedRecord.seenChanged}). */
  seenChanged: Record<string, string[]> | undefined;
}

const PULL_PATH = '~__pregel_pull, ';

/** Node's one-shot digest where it has it (20.12+): a history derives a thousand ids, and a Hash object costs more than the digest. */
const hashOnce = (crypto as { hash?: (algorithm: string, data: Buffer, encoding: 'buffer') => Buffer }).hash;

function sha1(data: Buffer): Buffer {
  return hashOnce ? hashOnce('sha1', data, 'buffer') : createHash('sha1').update(data).digest();
}

/** The 16 bytes of a uuid in its canonical form (lowercase hex, dashes at 8-4-4-4-12), or undefined. */
function uuidBytes(id: string): Buffer | undefined {
  if (id.length !== 36 || id[8] !== '-' || id[13] !== '-' || id[18] !== '-' || id[23] !== '-') return undefined;
  const hex = id.slice(0, 8) + id.slice(9, 13) + id.slice(14, 18) + id.slice(19, 23) + id.slice(24);
  if (!/^[0-9a-f]{32}$/.test(hex)) return undefined;
  return Buffer.from(hex, 'hex');
}

/**
 * The id LangGraph gives a pull task (a node run because a trigger channel changed):
 * `uuid5(JSON.stringify([ns|node, step, node, "__pregel_pull", [trigger]]), checkpoint
 * id)`, as its `_prepareSingleTask` does, for a task whose path names the node and
 * whose checkpoint's versions seen changed one entry of that node (its trigger).
 * Undefined when the task is not such a one. A record keeps `0` for an id only when
 * this gives that very id back, so a derivation that does not match LangGraph's
 * only keeps the id as it is.
 */
export function derivedTaskId(path: string, context: TaskContext): string | undefined {
  if (!path.startsWith(PULL_PATH)) return undefined;
  const node = path.slice(PULL_PATH.length);
  const triggers = context.seenChanged && Object.hasOwn(context.seenChanged, node) ? context.seenChanged[node]! : undefined;
  if (!triggers || triggers.length !== 1) return undefined;
  const namespace = uuidBytes(context.parentId);
  if (!namespace) return undefined;
  const name = Buffer.from(JSON.stringify([context.ns === '' ? node : `${context.ns}|${node}`, String(context.step), node, '__pregel_pull', [triggers[0]]]), 'utf8');
  const data = Buffer.allocUnsafe(16 + name.length);
  namespace.copy(data, 0);
  name.copy(data, 16);
  const hash = sha1(data);
  hash[6] = (hash[6]! & 0x0f) | 0x50;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** The entries a versions-seen delta changes, by node. */
export function changedOf(delta: Seen): Record<string, string[]> {
  const changed: Record<string, string[]> = {};
  for (const [node, entries] of Object.entries(delta)) changed[node] = Object.keys(entries).sort();
  return changed;
}

/**
 * True when a versions-seen delta changes the same entries as the parent record did
 * (`seenChanged`), each to the parent's version of its channel: `dl` then says it all.
 */
export function seenAsParents(delta: Seen, parent: ResolvedRecord): boolean {
  const before = parent.seenChanged;
  if (!before) return false;
  const nodes = Object.keys(delta);
  if (nodes.length === 0 || nodes.length !== Object.keys(before).length) return false;
  for (const node of nodes) {
    const channels = Object.keys(delta[node]!).sort();
    const had = Object.hasOwn(before, node) ? before[node]! : undefined;
    if (!had || had.length !== channels.length || channels.some((channel, i) => channel !== had[i])) return false;
    for (const channel of channels) if (!Object.hasOwn(parent.versions, channel) || parent.versions[channel] !== delta[node]![channel]) return false;
  }
  return true;
}

/** True when the record needs nothing of its parent's to be resolved. */
export function isFullRecord(record: LangGraphRecord): boolean {
  return record.versions !== undefined && record.seen !== undefined && record.tl === undefined;
}

/** True when two records' folded writes are the same but for their task ids (compared as stored). */
export function sameTaskShape(a: readonly FoldedTask[], b: readonly FoldedTask[], encode: (value: unknown) => string): boolean {
  if (a.length !== b.length || a.length === 0) return false;
  const shape = (tasks: readonly FoldedTask[]) => encode(tasks.map(({ path, writes }) => ({ path, writes })));
  return shape(a) === shape(b);
}

/** The `source` a position's kind says (the saver maps `loop` to `step` and `input` to `input`; `update` and `fork` both to `fork`). */
const SOURCE_OF_KIND: Record<string, string> = { step: 'loop', input: 'input' };

/**
 * What the position says of a checkpoint's metadata: its `step` (the position's step
 * less one), its `source` (from the position's kind, where that names one source) and
 * `parents: {}`. Only for metadata that has all three keys of its own.
 */
export function impliedMetadata(kind: string, positionStep: number): Record<string, unknown> {
  const implied: Record<string, unknown> = { step: positionStep - 1, parents: {} };
  if (Object.hasOwn(SOURCE_OF_KIND, kind)) implied.source = SOURCE_OF_KIND[kind];
  return implied;
}

/**
 * The metadata without what the position says (see {@link impliedMetadata}), or null
 * when it does not have `source`, `step` and `parents` of its own (it is then kept whole).
 */
export function metadataRest(metadata: Record<string, unknown>, kind: string, positionStep: number): Record<string, unknown> | null {
  if (!['source', 'step', 'parents'].every((key) => Object.hasOwn(metadata, key))) return null;
  const implied = impliedMetadata(kind, positionStep);
  const rest: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(metadata)) {
    if (key === 'parents' ? isEmptyPlainObject(value) : Object.hasOwn(implied, key) && implied[key] === value) continue;
    rest[key] = value;
  }
  return rest;
}

function isEmptyPlainObject(value: unknown): boolean {
  return typeof value === 'object' && value !== null && Object.getPrototypeOf(value) === Object.prototype && Object.keys(value).length === 0;
}

/** A position body written by the saver. */
export interface SaverBody extends PositionBody {
  langgraph: LangGraphRecord;
}

/** The LangGraph record of a decoded body, or null for a position cairn's runtime wrote. */
export function langGraphRecord(body: PositionBody): LangGraphRecord | null {
  const record = (body as Partial<SaverBody>).langgraph;
  return record && typeof record.id === 'string' ? record : null;
}

/**
 * The parent's writes a record folded in, as stored writes, whichever form the record
 * has; undefined when none. `tasks`: the record's folded tasks resolved (see
 * {@link ResolvedRecord}), needed for a record that keeps `tl`.
 */
export function foldedWrites(record: LangGraphRecord, tasks?: readonly FoldedTask[]): StoredWrite[] | undefined {
  if (record.parentWrites) return record.parentWrites;
  const folded = tasks ?? record.parentTasks;
  if (!folded) return undefined;
  return folded.flatMap(({ task, path, writes }) =>
    writes.map((w, i): StoredWrite => {
      const write: StoredWrite = { task, path, idx: w.idx ?? i, channel: w.channel };
      if (w.ref) write.ref = w.ref;
      else if (w.items) write.storedItems = w.items;
      else write.storedValue = w.value ?? null;
      return write;
    }),
  );
}
