/**
 * @module langgraph/saver-body
 * What a position written by `CairnSaver` holds besides cairn's own body: the
 * LangGraph checkpoint's identity and bookkeeping (id, time, format version, the
 * channel versions, versions seen, metadata, the parent's id) and the pending
 * writes of its parent that it folded in. Channel values are not here: they are
 * the position's `changes` (set values, and list items stored once each).
 */
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

/** The LangGraph part of a position's body. */
export interface LangGraphRecord {
  /** The checkpoint id (a uuid6). */
  id: string;
  /** The checkpoint's `ts`, as given; absent when it is the position's `createdAt` as an ISO string (as LangGraph's are). */
  ts?: string;
  /** The checkpoint format version (`v`). */
  v: number;
  versions: Record<string, string | number>;
  seen: Record<string, Record<string, string | number>>;
  /** The metadata's stored form (records written before `meta`: `metadata`, its canonical text). */
  meta?: unknown;
  /** Canonical text of the metadata's stored form, in records written before `meta`. */
  metadata?: string;
  /**
   * The id of the checkpoint this one was put after, when the caller named one. Absent
   * when it is the id of the parent position's checkpoint (records write it only when
   * the named checkpoint was not found, so that the position has no parent).
   */
  parentId?: string;
  /** The parent's pending writes, as they were when this checkpoint landed (cairn folds a parent's writes into its child), by task. */
  parentTasks?: FoldedTask[];
  /** The same, in records written before `parentTasks`: one entry per write, values as texts. */
  parentWrites?: StoredWrite[];
  /** Further checkpoint fields LangGraph may add, kept as given. */
  extra?: Record<string, unknown>;
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

/** The parent's writes a record folded in, as stored writes, whichever form the record has; undefined when none. */
export function foldedWrites(record: LangGraphRecord): StoredWrite[] | undefined {
  if (record.parentWrites) return record.parentWrites;
  if (!record.parentTasks) return undefined;
  return record.parentTasks.flatMap(({ task, path, writes }) =>
    writes.map((w, i): StoredWrite => {
      const write: StoredWrite = { task, path, idx: w.idx ?? i, channel: w.channel };
      if (w.ref) write.ref = w.ref;
      else if (w.items) write.storedItems = w.items;
      else write.storedValue = w.value ?? null;
      return write;
    }),
  );
}
