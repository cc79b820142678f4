/**
 * @module runtime/effects
 * The shape of a side effect as a node declares it (`ctx.effect(name, spec)`), shared
 * by the task scope that runs it and the node store whose writes are effects, and what
 * becomes of a `commit: 'with-step'` effect's entry when the step's commit does not take it.
 */
import type { CommittedEffect } from '../contracts/checkpointer.js';
import type { Ledger, LedgerEntry } from '../contracts/ledger.js';
import { InvalidOptionError, type ErrorPlace } from '../errors.js';
import { unknownOption } from '../internal/option-keys.js';
import { checkCallName } from './ctx-options.js';

/** How an effect is recovered when it has an intent and no outcome. */
export type EffectMode = 'atLeastOnce' | 'atMostOnce';

/** A side effect, as passed to `ctx.effect`. */
export interface EffectSpec<T> {
  /**
   * Idempotency key, a non-empty string. Default: derived from (thread, namespace, step,
   * task, call index). One key is one effect: another effect (another name) asking for a
   * key already used in the thread is EffectConflictError, not served the first one's outcome.
   */
  idempotencyKey?: string;
  /** The effect's arguments: their digest is kept with the intent, and a re-execution with other arguments is an error. */
  args?: unknown;
  /** Performs the effect. Receives the idempotency key: pass it to the external system. */
  run: (idempotencyKey: string) => T | Promise<T>;
  /** After a crash: did the effect with this key land? Return its outcome, or null/undefined if not. */
  probe?: (idempotencyKey: string) => T | null | undefined | Promise<T | null | undefined>;
  /** `atLeastOnce` (default): without a probe, re-run with the same key. `atMostOnce`: stop for a person instead. */
  mode?: EffectMode;
  /**
   * When the effect's intent and outcome reach the ledger. `separately` (default): the
   * intent is durable before `run` is called and the outcome right after, each its own
   * commit, so a crash anywhere later in the node finds the outcome and does not run the
   * effect again. `with-step`: both are written by the step's commit, in its transaction
   * (one commit per step instead of three). A stop before that commit (a crash, a lost
   * lease) runs the effect again with the same key, so the external system must honour
   * the key; a node that throws, stops at an interrupt or a wait, finishes while a
   * sibling task still runs, or a step that fails before its commit, writes them to the
   * ledger first, as `separately` would. Only with `atLeastOnce` and no `probe`: both of
   * those rely on an intent that is durable before the call.
   */
  commit?: EffectCommit;
}

/** When an effect's intent and outcome reach the ledger: see {@link EffectSpec.commit}. */
export type EffectCommit = 'separately' | 'with-step';

const MODES: readonly string[] = ['atLeastOnce', 'atMostOnce'] satisfies EffectMode[];

/** What an effect spec takes. */
const EFFECT_SPEC_KEYS: readonly string[] = ['run', 'idempotencyKey', 'args', 'probe', 'mode', 'commit'] satisfies (keyof EffectSpec<unknown>)[];

/** A value as a message shows it: a string quoted, a function as `a function`. */
function shown(value: unknown): string {
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'string') return JSON.stringify(value);
  return String(value);
}

/**
 * Refuses a `mode` that is not one of the two: a misspelt one ('atmostonce') would
 * otherwise be taken for the default and re-run an effect meant to run at most once.
 */
export function checkEffectMode(name: string, mode: unknown, place: ErrorPlace | undefined): void {
  if (mode !== undefined && !MODES.includes(mode as string)) {
    throw new InvalidOptionError(`effect "${name}": mode must be ${MODES.map((m) => `'${m}'`).join(' or ')}, not ${shown(mode)}.`, { place });
  }
}

/**
 * Refuses a spec `ctx.effect` cannot keep, at the call and before anything is written:
 * a missing `run`, an empty or non-string key, an unknown mode, a probe that is not a
 * function, a commit it cannot honour. These are programming errors (cairn errors, so
 * the default retry policy does not retry them).
 */
export function checkEffectSpec(name: string, spec: unknown, place: ErrorPlace | undefined): void {
  const unnamed = checkCallName('ctx.effect', name, place);
  if (unnamed) throw unnamed;
  if (spec === null || typeof spec !== 'object') throw new InvalidOptionError(`effect "${name}": ctx.effect takes a spec object with run, not ${shown(spec)}.`, { place });
  // A misspelt `comit` or `idempotency_key` would run the effect with the defaults, as if it had not been asked for.
  const unknown = unknownOption(`effect "${name}"`, spec, EFFECT_SPEC_KEYS);
  if (unknown) throw new InvalidOptionError(unknown, { place });
  const { run, idempotencyKey, probe, mode } = spec as Partial<Record<keyof EffectSpec<unknown>, unknown>>;
  if (typeof run !== 'function') throw new InvalidOptionError(`effect "${name}": spec.run must be the function that performs the effect, not ${shown(run)}.`, { place });
  if (idempotencyKey !== undefined && (typeof idempotencyKey !== 'string' || idempotencyKey.length === 0)) {
    throw new InvalidOptionError(`effect "${name}": idempotencyKey must be a non-empty string (or left out for a derived one), not ${shown(idempotencyKey)}.`, { place });
  }
  if (probe !== undefined && typeof probe !== 'function') throw new InvalidOptionError(`effect "${name}": probe must be a function, not ${shown(probe)}.`, { place });
  checkEffectMode(name, mode, place);
  checkEffectCommit(name, spec as { commit?: unknown; probe?: unknown; mode?: EffectMode }, place);
}

/** Refuses a `commit` option the effect cannot keep: `with-step` leaves no intent to recover by, which a probe and `atMostOnce` need. */
export function checkEffectCommit(name: string, spec: { commit?: unknown; probe?: unknown; mode?: EffectMode }, place: ErrorPlace | undefined): void {
  const { commit } = spec;
  if (commit === undefined || commit === 'separately') return;
  if (commit !== 'with-step') throw new InvalidOptionError(`effect "${name}": commit must be 'separately' or 'with-step', not ${JSON.stringify(commit)}.`, { place });
  if (spec.probe !== undefined || spec.mode === 'atMostOnce') {
    throw new InvalidOptionError(
      `effect "${name}": commit: 'with-step' writes no intent before the call, and ${spec.probe !== undefined ? 'a probe' : "mode: 'atMostOnce'"} needs one to recover by; leave commit out (or 'separately').`,
      { place },
    );
  }
}

/** A held `with-step` entry as the ledger would read it back once committed. */
export function doneEntry(held: CommittedEffect): LedgerEntry {
  return { ...held, status: 'done' };
}

/**
 * Writes `with-step` entries the step's commit will not take (the node stopped or
 * failed, or its result is kept while a sibling runs) as `separately` would have: the
 * intent, then the outcome. Their call already happened; what matters is that a
 * re-execution finds the outcome and does not run the effect again.
 */
export async function writeEffectsToLedger(ledger: Ledger, entries: readonly CommittedEffect[]): Promise<void> {
  for (const { outcome, completedAt, ...intent } of entries) {
    await ledger.writeIntent(intent);
    await ledger.writeOutcome(intent.threadId, intent.key, outcome, completedAt);
  }
}
