/**
 * @module inspect/effects
 * A thread's ledger as the inspection tools show it: every recorded output and
 * effect (intent, and outcome once it landed), oldest first, and the two ways a
 * person settles an effect in doubt without the graph's code: its outcome
 * ({@link resolveEffect}) or its failure ({@link failEffect}). Functions over the
 * {@link Checkpointer} and {@link Ledger} contracts, used by `cairn effects` and
 * `cairn resolve-effect`.
 *
 * @example
 * ```ts
 * for (const e of await threadEffects(engine, 'cust_42')) console.log(e.kind, e.status, e.seq, e.node, e.name, e.key);
 * ```
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Engine } from '../contracts/engine.js';
import type { LedgerEntry } from '../contracts/ledger.js';
import type { ThreadRecord } from '../contracts/threads.js';
import { encode } from '../codec/tagged-json.js';
import { LEASE_MS } from '../defaults.js';
import { EffectConflictError, EffectFailedError, EffectNotFoundError, ThreadNotFoundError } from '../errors.js';

/**
 * The ledger entries of a thread, every namespace's, oldest first.
 * ThreadNotFoundError for a missing thread (a thread with no entries yet reads as `[]`).
 *
 * @example
 * ```ts
 * const pending = (await threadEffects(engine, 'cust_42')).filter((e) => e.kind === 'effect' && e.status === 'intent');
 * ```
 */
export async function threadEffects(engine: Pick<Engine, 'checkpointer' | 'ledger'>, threadId: string): Promise<LedgerEntry[]> {
  if (!(await engine.checkpointer.getThread(threadId))) throw new ThreadNotFoundError(threadId, { engine: engine.checkpointer.engine });
  return engine.ledger.list(threadId);
}

/** Which effect {@link resolveEffect} settles, and with what outcome. */
export interface ResolveEffectOptions {
  thread: string;
  /** The effect's idempotency key (as `cairn effects` lists it). */
  idempotencyKey: string;
  /** The outcome a person checked by hand; the next run is served it as the effect's result. */
  outcome: unknown;
}

/** Which effect {@link failEffect} records as failed, why, and who says so. */
export interface FailEffectOptions {
  thread: string;
  /** The effect's idempotency key (as `cairn effects` lists it). */
  idempotencyKey: string;
  /** Why it failed, as the person found it. Default `recorded as failed by hand`. */
  message?: string;
  /** Who recorded it. Default `resolve-effect`. */
  actor?: string;
}

/** The effect intent a person may settle: the thread and an effect without an outcome, or the error that says why not. */
async function openIntent(engine: Pick<Engine, 'checkpointer' | 'ledger'>, threadId: string, key: string, verb: string): Promise<LedgerEntry> {
  const place = { engine: engine.checkpointer.engine, thread: threadId };
  if (!(await engine.checkpointer.getThread(threadId))) throw new ThreadNotFoundError(threadId, place);
  const entry = await engine.ledger.get(threadId, key);
  if (!entry || entry.kind !== 'effect') throw new EffectNotFoundError(key, place);
  if (entry.status === 'done') throw new EffectConflictError(key, `already has an outcome; ${verb} only settles an intent that has none.`, place);
  return entry;
}

/**
 * Records the outcome of an effect a person checked by hand (typically of a
 * `needs_attention` thread), with no graph code: the ledger entry becomes `done` with
 * `outcome`, and the next run of the thread is served it. What `app.resolveEffect`
 * does, over the engine alone. ThreadNotFoundError, EffectNotFoundError for a key that
 * is not an effect of the thread, EffectConflictError for an effect that has an outcome.
 *
 * @example
 * ```ts
 * await resolveEffect(engine, { thread: 'cust_42', idempotencyKey: 'charge:0#0', outcome: { charged: true } });
 * ```
 */
export async function resolveEffect(engine: Pick<Engine, 'checkpointer' | 'ledger'>, options: ResolveEffectOptions): Promise<LedgerEntry> {
  const { thread, idempotencyKey: key } = options;
  await openIntent(engine, thread, key, 'resolveEffect');
  await engine.ledger.writeOutcome(thread, key, encode(options.outcome, 'effect outcome'), Date.now());
  return (await engine.ledger.get(thread, key))!;
}

/**
 * Records that an effect a person checked by hand failed: the thread becomes `failed`
 * with an {@link EffectFailedError} (`ERR_EFFECT_FAILED`, naming the effect, the
 * message and the actor) as its last error and in its attempt history. The ledger has
 * no failed outcome, so the entry keeps its intent: a later run of the thread meets
 * it again (and stops in `needs_attention` again unless the effect's probe finds it),
 * so fix the cause first, or fork the thread from before the effect. Takes the
 * thread's lease for the update: ThreadBusyError while a run holds it; otherwise the
 * errors of {@link resolveEffect}.
 *
 * @example
 * ```ts
 * await failEffect(engine, { thread: 'cust_42', idempotencyKey: 'charge:0#0', message: 'card declined', actor: 'alice' });
 * ```
 */
export async function failEffect(engine: Pick<Engine, 'checkpointer' | 'ledger'>, options: FailEffectOptions): Promise<ThreadRecord> {
  const { thread: threadId, idempotencyKey: key } = options;
  const entry = await openIntent(engine, threadId, key, 'failEffect');
  const cp = engine.checkpointer;
  const error = new EffectFailedError(key, entry.name, options.message ?? 'recorded as failed by hand', options.actor ?? 'resolve-effect', { engine: cp.engine, thread: threadId });
  const lease = await cp.acquireThread(threadId, { owner: { runId: randomUUID(), pid: process.pid, host: hostname() }, leaseMs: LEASE_MS });
  try {
    const at = Date.now();
    const failure = { code: error.code, message: error.message, node: entry.node, seq: entry.seq, attempt: lease.thread.attempts, at };
    return await cp.updateThread(lease, { status: 'failed', lastError: failure, failure: { ns: entry.ns, ...failure } });
  } finally {
    await cp.releaseThread(lease);
  }
}
