/**
 * @module inspect/diff
 * What differs between two states, field by field: `cairn diff` and any tool that
 * compares two positions of a thread. A list that grew at its end is told as the
 * items appended (what a reducer like `append` does), a list that lost its tail as
 * the items removed, anything else that differs as the old and the new value.
 * Values are compared by their canonical encoding, so a Date, a Map or `undefined`
 * compares as what it is.
 *
 * @example
 * ```ts
 * const { fields } = await threadDiff(engine.checkpointer, 'cust_42', { from: 2, to: 5 });
 * for (const f of fields) console.log(f.kind, f.field);
 * ```
 */
import type { Checkpointer } from '../contracts/checkpointer.js';
import { encode } from '../codec/tagged-json.js';
import { storedState } from './stored-state.js';

/** How one field differs between two states (fields that are equal are left out). */
export type FieldDiff =
  /** The field is in the second state only. */
  | { field: string; kind: 'added'; after: unknown }
  /** The field is in the first state only. */
  | { field: string; kind: 'removed'; before: unknown }
  /** A list field lost its last items: `items` were at indexes `from`, `from + 1`, … */
  | { field: string; kind: 'removed'; from: number; items: unknown[] }
  /** A list field grew at its end: `items` are at indexes `from`, `from + 1`, … */
  | { field: string; kind: 'appended'; from: number; items: unknown[] }
  /** Any other difference: the whole old and new value. */
  | { field: string; kind: 'changed'; before: unknown; after: unknown };

/** What {@link diffStates} returns: the fields that differ, in the first state's field order, then the new ones. */
export interface StateDiff {
  fields: FieldDiff[];
}

/** What {@link threadDiff} returns: the two positions compared and how their states differ. */
export interface ThreadDiff extends StateDiff {
  thread: string;
  /** The child run's namespace; absent for the root graph. */
  ns?: string;
  from: { seq: number; schemaVersion: number };
  to: { seq: number; schemaVersion: number };
}

/** Which two positions {@link threadDiff} compares. */
export interface ThreadDiffOptions {
  /** The first position (the "before"). */
  from: number;
  /** The second position (the "after"). */
  to: number;
  /** The checkpoint namespace: '' (default) for the root graph, a child run's for a subgraph's state. */
  ns?: string;
}

const same = (a: unknown, b: unknown) => encode(a) === encode(b);

/** The length of the longest common prefix of two lists. */
function commonPrefix(a: unknown[], b: unknown[]): number {
  let i = 0;
  while (i < a.length && i < b.length && same(a[i], b[i])) i++;
  return i;
}

/**
 * How state `b` differs from state `a`, field by field (equal fields are left out).
 *
 * @example
 * ```ts
 * diffStates({ messages: ['hi'], topic: 'a' }, { messages: ['hi', 'ho'], topic: 'b', done: true }).fields;
 * // [{ field: 'messages', kind: 'appended', from: 1, items: ['ho'] },
 * //  { field: 'topic', kind: 'changed', before: 'a', after: 'b' },
 * //  { field: 'done', kind: 'added', after: true }]
 * ```
 */
export function diffStates(a: Record<string, unknown>, b: Record<string, unknown>): StateDiff {
  const has = (o: Record<string, unknown>, k: string) => Object.prototype.hasOwnProperty.call(o, k);
  const fields: FieldDiff[] = [];
  for (const field of Object.keys(a)) {
    const before = a[field];
    if (!has(b, field)) {
      fields.push({ field, kind: 'removed', before });
      continue;
    }
    const after = b[field];
    if (same(before, after)) continue;
    if (Array.isArray(before) && Array.isArray(after)) {
      const prefix = commonPrefix(before, after);
      if (prefix === before.length) {
        fields.push({ field, kind: 'appended', from: prefix, items: after.slice(prefix) });
        continue;
      }
      if (prefix === after.length) {
        fields.push({ field, kind: 'removed', from: prefix, items: before.slice(prefix) });
        continue;
      }
    }
    fields.push({ field, kind: 'changed', before, after });
  }
  for (const field of Object.keys(b)) if (!has(a, field)) fields.push({ field, kind: 'added', after: b[field] });
  return { fields };
}

/**
 * How the stored state at position `to` differs from the one at `from` (of namespace
 * `ns`), read with {@link storedState}: as stored, not upcast. Throws what
 * storedState throws (ThreadNotFoundError, NamespaceNotFoundError, PositionNotFoundError).
 *
 * @example
 * ```ts
 * const diff = await threadDiff(engine.checkpointer, 'cust_42', { from: 1, to: 3 });
 * ```
 */
export async function threadDiff(cp: Checkpointer, threadId: string, options: ThreadDiffOptions): Promise<ThreadDiff> {
  const ns = options.ns ?? '';
  const a = await storedState(cp, threadId, { ns, seq: options.from });
  const b = await storedState(cp, threadId, { ns, seq: options.to });
  return {
    thread: threadId,
    ...(ns ? { ns } : {}),
    from: { seq: a.seq, schemaVersion: a.schemaVersion },
    to: { seq: b.seq, schemaVersion: b.schemaVersion },
    ...diffStates(a.state, b.state),
  };
}
