/**
 * @module langgraph/position-states
 * The states of a page of positions, for `CairnSaver.list` (`getStateHistory`).
 * Loading each position on its own costs its whole state: a 1,000-step history would
 * read and decode the list's items half a million times. A page that is one linear
 * run of positions is loaded once, at its oldest position (proven as every load is),
 * and rolled forward: each newer position's changes are applied to the state before
 * it, after its chain hash, items included, is checked against its parent's.
 */
import type { Checkpointer, RangeItem, StoredPosition } from '../contracts/checkpointer.js';
import { comparePositionItems } from '../contracts/checkpointer.js';
import { decode } from '../codec/tagged-json.js';
import { CorruptRecordError } from '../errors.js';
import { materialize, type ChainLink } from '../runtime/materialize.js';
import { hashPosition, type PositionBody } from '../runtime/position.js';

/**
 * A list field's value at one position of a page: the first `length` items of the
 * page's list for that field, shared by the positions that appended to it. A page of
 * 500 positions of a 1,000-item list would otherwise copy half a million items.
 */
export class ListView {
  constructor(
    readonly items: readonly unknown[],
    readonly length: number,
  ) {}
}

/** A position and the state it leaves, as stored (list fields as their items: an array, or a {@link ListView} in a rolled-forward page). */
export interface PositionState {
  position: StoredPosition;
  body: PositionBody;
  state: Record<string, unknown>;
  /** The list fields (append or reset changes on the branch), by name. */
  appends: Record<string, unknown>;
  /** The position's own items, when they were read with the page (the checkpoint before it points at them from its folded writes). */
  items?: RangeItem[];
  /** The chain a load of this position read (see `LoadedPosition.chain`), for a position loaded rather than rolled forward to. */
  chain?: readonly ChainLink[];
}

/**
 * The states of `page` (positions of one namespace, newest first, as `listPositions` gives them), newest first.
 * `bodies`: the positions' bodies the caller decoded already, by seq.
 */
export async function pageStates(cp: Checkpointer, threadId: string, ns: string, page: readonly StoredPosition[], bodies?: ReadonlyMap<number, PositionBody>): Promise<PositionState[]> {
  const ascending = [...page].reverse();
  const linear = ascending.every((p, i) => i === 0 || p.parent === ascending[i - 1]!.seq);
  if (!linear || ascending.length < 3) {
    return Promise.all(page.map((p) => materialize(cp, undefined, threadId, ns, p.seq)));
  }
  const base = await materialize(cp, undefined, threadId, ns, ascending[0]!.seq);
  const items = await cp.getRangeItems(threadId, ns, { from: ascending[1]!.seq, to: ascending[ascending.length - 1]!.seq });
  const bySeq = new Map<number, RangeItem[]>();
  for (const item of items) {
    let list = bySeq.get(item.seq);
    if (!list) bySeq.set(item.seq, (list = []));
    list.push(item);
  }
  // Each list field's items so far, appended to in place: a position's value is a view of its first ones.
  const full = new Map<string, unknown[]>();
  let values: Record<string, unknown> = { ...base.state };
  for (const name of Object.keys(base.appends)) {
    if (!Array.isArray(values[name])) continue;
    const items = [...(values[name] as unknown[])];
    full.set(name, items);
    values[name] = new ListView(items, items.length);
  }
  const states: PositionState[] = [{ ...base, state: values }];
  const lists: Record<string, unknown> = { ...base.appends };
  let previous = base.position;
  for (const position of ascending.slice(1)) {
    const own = (bySeq.get(position.seq) ?? []).sort(comparePositionItems);
    if (hashPosition(position, own, previous.hash) !== position.hash) {
      throw new CorruptRecordError(`position ${position.seq} does not match its hash: its row or its items were changed or damaged.`, { place: { engine: cp.engine, thread: threadId, ns, seq: position.seq } });
    }
    const body = bodies?.get(position.seq) ?? decode<PositionBody>(position.body, `position ${position.seq} of thread ${threadId}`);
    values = { ...values };
    for (const [name, change] of Object.entries(body.changes)) {
      if ('set' in change) {
        values[name] = change.set;
        continue;
      }
      const added = own.filter((item) => item.field === name).map((item) => decode(item.text));
      let items = full.get(name);
      if ('append' in change && items && values[name] instanceof ListView && (values[name] as ListView).length === items.length) items.push(...added);
      else if ('append' in change) full.set(name, (items = [...listOf(values[name]), ...added]));
      else full.set(name, (items = added));
      values[name] = new ListView(items, items.length);
      lists[name] = true;
    }
    states.push({ position, body, state: values, appends: { ...lists }, items: own });
    previous = position;
  }
  return states.reverse();
}

/** The items of a list field's value (an array or a view); none for anything else. */
function listOf(value: unknown): unknown[] {
  if (value instanceof ListView) return value.items.slice(0, value.length);
  return Array.isArray(value) ? value : [];
}
