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
}

/** The LangGraph part of a position's body. */
export interface LangGraphRecord {
  /** The checkpoint id (a uuid6). */
  id: string;
  /** The checkpoint's `ts`, as given. */
  ts: string;
  /** The checkpoint format version (`v`). */
  v: number;
  versions: Record<string, string | number>;
  seen: Record<string, Record<string, string | number>>;
  /** Canonical text of the metadata's stored form. */
  metadata: string;
  /** The id of the checkpoint this one was put after, when the caller named one. */
  parentId?: string;
  /** The parent's pending writes, as they were when this checkpoint landed (cairn folds a parent's writes into its child). */
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
