/**
 * @module runtime/list-lengths
 * The length each append field's list of a state must have. A run's cursor extends
 * those lists in place at every step (copying them would make a run quadratic), and
 * nodes, routing functions and derived fields are handed the same arrays: one that
 * pushes onto a list (or splices, pops, sets its length) changes what the rest of the
 * run sees, but nothing of it is stored, and a resumed run would see another state.
 * Comparing each list's length with the one recorded costs one read a field, never
 * a walk of the state; what keeps a list's length (a pop, then a push) goes unseen,
 * as does a change inside an item.
 */
import { StateMutationError, type ErrorPlace } from '../errors.js';
import type { StateSchema } from '../state/schema.js';

interface Entry {
  readonly field: string;
  readonly list: unknown[];
  readonly length: number;
}

export class AppendLengths {
  private constructor(private readonly entries: readonly Entry[]) {}

  /** The lengths the append lists of `state` have now. */
  static of(schema: StateSchema, state: Readonly<Record<string, unknown>>): AppendLengths {
    const entries: Entry[] = [];
    for (const field of schema.appendFields) {
      const list = state[field];
      if (Array.isArray(list)) entries.push({ field, list, length: list.length });
    }
    return new AppendLengths(entries);
  }

  /** The same lists once `appended` (a merge's items by field) is pushed onto them. */
  extended(appended: ReadonlyMap<string, readonly unknown[]>): AppendLengths {
    if (appended.size === 0) return this;
    return new AppendLengths(this.entries.map((e) => ({ ...e, length: e.length + (appended.get(e.field)?.length ?? 0) })));
  }

  /** The fields whose list is not at its recorded length. */
  changed(): string[] {
    const fields: string[] = [];
    for (const e of this.entries) if (e.list.length !== e.length) fields.push(e.field);
    return fields;
  }

  /** Cuts every list longer than its recorded length back to it; false when one is shorter (its items are gone). */
  restore(): boolean {
    let restored = true;
    for (const e of this.entries) {
      if (e.list.length > e.length) e.list.length = e.length;
      else if (e.list.length < e.length) restored = false;
    }
    return restored;
  }
}

/**
 * Checks `expected` (what the lists must be now), and on a difference puts the lists
 * back to `committed` (what the store holds) and returns the error that refuses the
 * step, naming the step's nodes; `cause` is what the code threw besides, if anything.
 */
export function refuseListChanges(
  expected: AppendLengths,
  committed: AppendLengths,
  nodes: () => readonly string[],
  place: ErrorPlace,
  cause?: unknown,
): StateMutationError | undefined {
  const fields = expected.changed();
  if (fields.length === 0) return undefined;
  const restored = committed.restore();
  return new StateMutationError(fields, [...nodes()], restored, { place, ...(cause !== undefined ? { cause } : {}) });
}
