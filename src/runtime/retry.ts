/**
 * @module runtime/retry
 * Retry policy of a node. A retry is a new attempt in the same thread (the
 * thread's attempt counter grows and the error is kept), never a new thread.
 */
import { RETRY } from '../defaults.js';
import { CairnError } from '../errors.js';

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

/** The policy in force: the default, then each layer given (graph, then node) over it. */
export function resolveRetry(...layers: (Partial<RetryPolicy> | undefined)[]): RetryPolicy {
  return Object.assign({}, DEFAULT_RETRY, ...layers.filter(Boolean));
}

/** Delay before retry number `retry` (1-based). */
export function retryDelay(policy: RetryPolicy, retry: number): number {
  return Math.min(policy.maxDelayMs, policy.initialDelayMs * policy.backoff ** (retry - 1));
}
