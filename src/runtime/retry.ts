/**
 * @module runtime/retry
 * Retry policy of a node. A retry is a new attempt in the same thread (the
 * thread's attempt counter grows and the error is kept), never a new thread.
 */
import { RETRY } from '../defaults.js';
import { CairnError, InvalidOptionError } from '../errors.js';

/** How a node retries: how often, how long between attempts, and which errors are worth another attempt. */

export interface RetryPolicy {
  /** Total attempts of a node before the run fails (1 = no retry). Default 3. */
  maxAttempts: number;
  /** Delay before the first retry, ms. Default 200. */
  initialDelayMs: number;
  /** Multiplier applied to the delay after each retry. Default 2. */
  backoff: number;
  /** Upper bound of the delay, ms. Default 10 000. */
  maxDelayMs: number;
  /** Which errors are worth retrying. Default: everything except cairn's own errors (they are deterministic). */
  retryOn: (error: unknown) => boolean;
}

/** The policy a node runs under when neither it nor its graph sets one. */
export const DEFAULT_RETRY: RetryPolicy = {
  ...RETRY,
  retryOn: (error) => !CairnError.is(error),
};

/** What each key of a retry policy must be, as a message says it. */
const POLICY_KEYS: Record<keyof RetryPolicy, [test: (value: unknown) => boolean, expected: string]> = {
  maxAttempts: [(v) => v === Number.POSITIVE_INFINITY || (typeof v === 'number' && Number.isSafeInteger(v) && v >= 1), 'a whole number of attempts, 1 or more (1: no retry)'],
  initialDelayMs: [(v) => typeof v === 'number' && Number.isFinite(v) && v >= 0, 'a finite number of milliseconds, 0 or more'],
  backoff: [(v) => typeof v === 'number' && Number.isFinite(v) && v > 0, 'a finite multiplier above 0'],
  maxDelayMs: [(v) => typeof v === 'number' && Number.isFinite(v) && v >= 0, 'a finite number of milliseconds, 0 or more'],
  retryOn: [(v) => typeof v === 'function', 'a function of the error'],
};

/**
 * Checks a retry policy as given (`compile({ retry })`, a node's or a subgraph's `retry`):
 * InvalidOptionError for a key that is not a policy's (a typo would be silently ignored)
 * or a value out of range (`maxAttempts: 0` would fail a node without running it).
 */
export function checkRetryPolicy(where: string, policy: unknown): void {
  if (policy === undefined) return;
  if (policy === null || typeof policy !== 'object' || Array.isArray(policy)) throw new InvalidOptionError(`${where}: retry must be an object ({ maxAttempts, initialDelayMs, backoff, maxDelayMs, retryOn }), got ${String(policy)}.`);
  for (const [key, value] of Object.entries(policy)) {
    const rule = POLICY_KEYS[key as keyof RetryPolicy];
    if (!rule) throw new InvalidOptionError(`${where}: retry.${key} is not a retry option (options: ${Object.keys(POLICY_KEYS).join(', ')}).`);
    if (value !== undefined && !rule[0](value)) throw new InvalidOptionError(`${where}: retry.${key} must be ${rule[1]}, got ${typeof value === 'number' ? String(value) : (JSON.stringify(value) ?? String(value))}.`);
  }
}

/** The policy in force: the default, then each layer given (graph, then node) over it. */
export function resolveRetry(...layers: (Partial<RetryPolicy> | undefined)[]): RetryPolicy {
  return Object.assign({}, DEFAULT_RETRY, ...layers.filter(Boolean));
}

/** Delay before retry number `retry` (1-based). */
export function retryDelay(policy: RetryPolicy, retry: number): number {
  return Math.min(policy.maxDelayMs, policy.initialDelayMs * policy.backoff ** (retry - 1));
}
