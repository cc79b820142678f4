/**
 * @module runtime/pauses
 * How a node stops at a call and is brought back to it: why it stopped (an
 * interrupt call, a sleep, a signal wait), the error that unwinds the node's
 * function, the signal queue a wait takes from, and the answer check `resume` runs
 * before it commits an answer (the node re-executed with everything served, up to
 * the call, where the answer meets the call's schema).
 */
import type { StandardSchemaV1 } from '@standard-schema/spec';
import { StateValidationError, type ErrorPlace } from '../errors.js';

/** Where a live run's `ctx.waitFor` finds and takes signals. */
export interface SignalQueue {
  /** Signals of the thread not yet taken, named `name`, oldest first; and the one `key` took, if any. */
  pending(name: string): Promise<QueuedSignal[]>;
  takenBy(key: string): Promise<QueuedSignal | null>;
  /** Takes signal `id` for the wait `key` (fenced by the run's lease); false when another wait took it first. */
  take(id: number, key: string): Promise<boolean>;
}

/** A signal as a wait sees it. */
export interface QueuedSignal {
  id: number;
  name: string;
  /** Codec text. */
  payload: string;
  sentAt: number;
}

/** Why a node stopped at one of its calls: an interrupt call or a wait, not yet answered or due. */
export type TaskPause =
  | { kind: 'interrupt'; call: number; key: string; payload: unknown; answerSchema?: Record<string, unknown> }
  | { kind: 'sleep'; call: number; key: string; until: number }
  | { kind: 'signal'; call: number; key: string; until: number | null; name: string };

/**
 * Thrown from the call a node stopped at (and from every call after it): the node's
 * function is not meant to go on. A node that catches it still stops: its writes
 * are not committed.
 */
export class NodeSuspended extends Error {
  constructor(readonly node: string) {
    super(`node "${node}" stopped at an interrupt or a wait; it goes on when it is answered or due.`);
  }
}

/** An answer check's result: the interrupt call was reached and its schema's output is `value`. */
export class AnswerChecked extends Error {
  constructor(readonly value: unknown) {
    super('answer checked');
  }
}

/** An answer check that could not reach its interrupt call without calling something. */
export class AnswerUnchecked extends Error {
  constructor() {
    super('answer not checked');
  }
}

/**
 * The outcome of an answer check: `checked` with the schema's output, or `unchecked`
 * when the node could not be brought back to the call with everything served (it then
 * validates the answer when it re-executes).
 */
export type AnswerProbe = { checked: true; value: unknown } | { checked: false };

/** Reads an answer check's outcome from what the probed node's execution threw or returned. */
export function probeOutcome(thrown: unknown): AnswerProbe {
  if (thrown instanceof AnswerChecked) return { checked: true, value: thrown.value };
  if (StateValidationError.is(thrown)) throw thrown;
  return { checked: false };
}

/** Validates an interrupt's answer with the call's schema; returns the schema's output. */
export async function validateAnswer<T>(schema: StandardSchemaV1<unknown, T> | undefined, value: unknown, place: ErrorPlace): Promise<T> {
  return validateWith(schema, value, 'answer', place);
}

export async function validateWith<T>(schema: StandardSchemaV1<unknown, T> | undefined, value: unknown, what: string, place: ErrorPlace): Promise<T> {
  if (!schema) return value as T;
  let result = schema['~standard'].validate(value);
  if (result instanceof Promise) result = await result;
  if (result.issues) {
    throw new StateValidationError(
      what,
      result.issues.map((issue) => ({ message: issue.message, path: (issue.path ?? []).map((p) => (typeof p === 'object' ? (p.key as string | number) : (p as string | number))) })),
      place,
    );
  }
  return result.value;
}
