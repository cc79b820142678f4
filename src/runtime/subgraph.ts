/**
 * @module runtime/subgraph
 * Child runs: a node that runs a whole graph (a subgraph) of its own. The child's
 * positions live in their own checkpoint namespace inside the thread
 * (`<parent ns>|<node>:<index>@<seq>`), so a crash inside the child resumes inside
 * the child, and history and `stateAt` can address it.
 *
 * Two ways for the parent to see the child's work:
 * - **isolated** (default): the child starts from `input(parentState)` and the parent
 *   sees only what `output(childResult, parentState)` returns, as the node's writes;
 *   everything else the child wrote stays in the child's namespace.
 * - **shared** (`share: true`): the child starts from the parent's values of its
 *   fields, and what it changed (the items it appended, the values it replaced) is
 *   written back through the parent's reducers, as the node's writes. Only the
 *   child's net change goes back, never its whole final state: an `append` list is
 *   not duplicated into the parent.
 */
import { encode } from '../codec/tagged-json.js';
import { GraphDefinitionError, type ErrorPlace } from '../errors.js';
import type { ModelField } from '../state/fields.js';
import type { StateOf, StateSchema, UpdateOf } from '../state/schema.js';
import type { RetryPolicy } from './retry.js';
import type { ChildSpec } from './graph-spec.js';
import { noChanges, type MergeResult } from './merge.js';

/** How a subgraph node maps the parent's state in and the child's result out. */
export type SubgraphOptions<P extends StateSchema, C extends StateSchema> = (
  | {
      /** The child reads the parent's values of its fields; its changes go back through the parent's reducers. */
      share: true;
      input?: never;
      output?: never;
    }
  | {
      share?: false;
      /** The child's input writes, from the parent's state. Default: none (the child's defaults). */
      input?: (state: StateOf<P>) => UpdateOf<C>;
      /** The parent's writes, from the child's final state. Default: none (the parent sees nothing). */
      output?: (result: StateOf<C>, state: StateOf<P>) => UpdateOf<P> | void | undefined;
    }
) & {
  /** Retry policy of the subgraph node itself in the parent (a retry resumes the child where it stopped). */
  retry?: Partial<RetryPolicy>;
  /** Pause before the child run starts (as for any node). */
  interruptBefore?: boolean | ((state: StateOf<P>) => unknown);
  /** Pause after the step that ran the child commits. */
  interruptAfter?: boolean | ((state: StateOf<P>) => unknown);
};

/** A child run's first position: the state it starts from, and the writes its first position stores. */
export interface ChildStart {
  state: Record<string, unknown>;
  merged: MergeResult;
}

/**
 * Checks that a shared child's fields can be written back through the parent's
 * reducers: each must be a model field of the parent with the same kind of reducer.
 * A custom reducer cannot be shared (the child's net change is not a write that
 * reducer understands): map such fields with input/output instead.
 */
export function checkSharedFields(node: string, parent: StateSchema, child: StateSchema): void {
  for (const name of child.fieldNames) {
    const own = child.field(name)!;
    if (own.role !== 'model') continue;
    const theirs = parent.field(name);
    if (!theirs || theirs.role !== 'model') {
      throw new GraphDefinitionError(`subgraph "${node}" shares field "${name}", which is not a model field of the parent state: map it with input/output instead.`);
    }
    const mine = (own as ModelField<unknown, unknown>).reduce;
    const parents = (theirs as ModelField<unknown, unknown>).reduce;
    if (typeof mine === 'function' || typeof parents === 'function') {
      throw new GraphDefinitionError(`subgraph "${node}" shares field "${name}", which has a custom reducer: map it with input/output instead.`);
    }
    if (mine !== parents) {
      throw new GraphDefinitionError(`subgraph "${node}" shares field "${name}", a "${mine}" field in the child but "${parents}" in the parent.`);
    }
  }
}

/** The model fields a shared child takes from the parent. */
function sharedNames(child: StateSchema): string[] {
  return child.fieldNames.filter((name) => child.field(name)!.role === 'model');
}

/**
 * A shared child's first state: its defaults, with the parent's values of the shared
 * fields (validated against the child's schemas; lists copied, since the child's
 * cursor extends them in place). The changes make the child's first position store them.
 */
async function sharedSeed(child: StateSchema, parentState: Readonly<Record<string, unknown>>, place: ErrorPlace): Promise<ChildStart> {
  const state = child.initial();
  const merged = noChanges();
  const { changes } = merged;
  for (const name of sharedNames(child)) {
    const value = (await child.validate(name, parentState[name], place)) as unknown;
    if (child.appendFields.has(name)) {
      const list = [...(value as unknown[])];
      state[name] = list;
      changes.set(name, { kind: 'append', items: list.map((item, i) => encode(item, `${name}[${i}]`)), reset: true });
    } else {
      state[name] = value;
      changes.set(name, { kind: 'set', text: encode(value, name) });
    }
  }
  return { state, merged };
}

/** What a shared child started from, per field: a list's length, or a value's encoding. */
type SharedBaseline = Map<string, number | string>;

/**
 * Taken before the child runs: the child's run extends its lists in place, so the
 * seed's own arrays do not stay as they started.
 */
function sharedBaseline(child: StateSchema, seed: Record<string, unknown>): SharedBaseline {
  const baseline: SharedBaseline = new Map();
  for (const name of sharedNames(child)) {
    baseline.set(name, child.appendFields.has(name) ? (seed[name] as unknown[]).length : encode(seed[name], name));
  }
  return baseline;
}

/**
 * What a shared child changed, as writes for the parent's reducers: the items it
 * appended to each list, and each replaced value that differs from the one it started with.
 */
function sharedWrites(child: StateSchema, baseline: SharedBaseline, final: Record<string, unknown>): Record<string, unknown> {
  const writes: Record<string, unknown> = {};
  for (const [name, before] of baseline) {
    if (typeof before === 'number') {
      const added = (final[name] as unknown[]).slice(before);
      if (added.length) writes[name] = added;
    } else if (encode(final[name], name) !== before) {
      writes[name] = final[name];
    }
  }
  return writes;
}

/** Where a shared child starts (its first position's writes) and the baseline its net change is measured from. */
export interface SharedStart {
  seed: ChildStart;
  baseline: SharedBaseline;
}

/** For a shared child, its start from the parent's state; undefined for an isolated one. */
export async function sharedStart(child: ChildSpec, parentState: Readonly<Record<string, unknown>>, place: ErrorPlace): Promise<SharedStart | undefined> {
  if (!child.share) return undefined;
  const seed = await sharedSeed(child.schema, parentState, place);
  return { seed, baseline: sharedBaseline(child.schema, seed.state) };
}

/**
 * The subgraph node's writes, from its child's final state: the net change of a
 * shared child, or the `output` mapping of an isolated one (none without a mapping).
 */
export function childResultWrites(
  child: ChildSpec,
  shared: SharedStart | undefined,
  final: Record<string, unknown>,
  parentView: unknown,
): Record<string, unknown> | undefined {
  if (shared) return sharedWrites(child.schema, shared.baseline, final);
  return child.output?.(child.schema.view(final) as never, parentView as never) ?? undefined;
}
