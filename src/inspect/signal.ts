/**
 * @module inspect/signal
 * Sending a signal to a thread from code that has no App (a script, a webhook
 * handler, `cairn signal`): the payload is encoded with the tagged codec, as a wait
 * decodes it, and queued durably by the engine's checkpointer.
 */
import { encode } from '../codec/tagged-json.js';
import type { Engine } from '../contracts/engine.js';
import type { StoredSignal } from '../contracts/threads.js';

/** Options of {@link signalThread}. */
export interface SignalThreadOptions {
  /** The thread to signal. */
  thread: string;
  /** The signal's name: a wait takes the signals it names. */
  name: string;
  /** Any value the codec encodes (default null); the wait that takes the signal gets it back. */
  payload?: unknown;
}

/**
 * Queues a signal for a thread: durable when it resolves, whether or not a run or a
 * worker is up; a thread that waits is made due so a worker continues it. Throws
 * ThreadNotFoundError for a missing thread, InvalidKeyError for a bad name,
 * InvalidOptionError for a payload over the size limit.
 *
 * @example
 * ```ts
 * import { signalThread } from 'cairn/inspect';
 * const signal = await signalThread(engine, { thread: 'order_7', name: 'approved', payload: { by: 'ana' } });
 * console.log(`signal ${signal.id} queued`);
 * ```
 */
export async function signalThread(engine: Engine, options: SignalThreadOptions): Promise<StoredSignal> {
  return engine.checkpointer.sendSignal(options.thread, { name: options.name, payload: encode(options.payload ?? null, `payload of signal "${options.name}"`) });
}
