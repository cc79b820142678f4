/**
 * @module runtime/current-node
 * The node a piece of code runs in, found without being handed its `ctx`: what lets a
 * model middleware (cairn/ai-sdk) record every call an agent library makes, however
 * deep in that library the call is. One AsyncLocalStorage, set around a node's
 * function by every runner (live, replay, answer check).
 *
 * Inside a recorded call (`ctx.record`'s `fn`, an effect's `run` or `probe`) there is
 * no current node: what the call does is recorded as one value already, and a second,
 * nested record would take a call index on the first execution that a served
 * re-execution never takes, shifting every later call's key.
 *
 * @example
 * ```ts
 * import { currentNode } from 'cairn';
 * const ctx = currentNode();
 * const value = ctx ? await ctx.record('lookup', () => lookup(id)) : await lookup(id);
 * ```
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import type { NodeContext } from './node-context.js';

/** The node's ctx, or null inside one of its recorded calls. */
const storage = new AsyncLocalStorage<NodeContext | null>();

/**
 * The `ctx` of the node the caller runs in (in a live run, a replay or an answer
 * check); undefined outside any node, and inside a recorded call or an effect (whose
 * result is recorded as a whole).
 *
 * @example
 * ```ts
 * const ctx = currentNode();
 * if (ctx) await ctx.record('clock', () => Date.now());
 * ```
 */
export function currentNode(): NodeContext | undefined {
  return storage.getStore() ?? undefined;
}

/** Runs a node's function with `ctx` as its current node. */
export function withinNode<R>(ctx: NodeContext, fn: () => R): R {
  return storage.run(ctx, fn);
}

/** Runs a recorded call's body with no current node (see the module documentation). */
export function withinCall<R>(fn: () => R): R {
  return storage.run(null, fn);
}
