/**
 * @module runtime/effects
 * The shape of a side effect as a node declares it (`ctx.effect(name, spec)`), shared
 * by the task scope that runs it and the node store whose writes are effects.
 */

/** How an effect is recovered when it has an intent and no outcome. */
export type EffectMode = 'atLeastOnce' | 'atMostOnce';

/** A side effect, as passed to `ctx.effect`. */
export interface EffectSpec<T> {
  /** Idempotency key. Default: derived from (thread, namespace, step, task, call index). */
  idempotencyKey?: string;
  /** The effect's arguments: their digest is kept with the intent, and a re-execution with other arguments is an error. */
  args?: unknown;
  /** Performs the effect. Receives the idempotency key: pass it to the external system. */
  run: (idempotencyKey: string) => T | Promise<T>;
  /** After a crash: did the effect with this key land? Return its outcome, or null/undefined if not. */
  probe?: (idempotencyKey: string) => T | null | undefined | Promise<T | null | undefined>;
  /** `atLeastOnce` (default): without a probe, re-run with the same key. `atMostOnce`: stop for a person instead. */
  mode?: EffectMode;
}
