/**
 * @module inspect/signal
 * Sending a signal to a thread from code that has no App (a script, a webhook
 * handler, `cairn signal`): the payload is encoded with the tagged codec, as a wait
 * decodes it, and queued durably by the engine's checkpointer.
 */
import { decode, encode } from '../codec/tagged-json.js';
import type { Engine } from '../contracts/engine.js';
import type { StoredSignal } from '../contracts/threads.js';
import { MAX_SIGNAL_NAME_LENGTH } from '../defaults.js';
import { InvalidOptionError } from '../errors.js';
import { checkSignalName, checkThreadId } from '../internal/keys.js';

/** Options of {@link signalThread}. */
export interface SignalThreadOptions {
  /** The thread to signal. */
  thread: string;
  /** The signal's name: a wait takes the signals it names. */
  name: string;
  /** Any value the codec encodes (default null); the wait that takes the signal gets it back. */
  payload?: unknown;
}

/** A signal as {@link signalThread} queued it: the stored record, its payload as the wait that takes it will get it. */
export interface SentSignal extends Omit<StoredSignal, 'payload'> {
  /** The payload, decoded: what the wait that takes the signal gets. */
  payload: unknown;
}

/**
 * Queues a signal for a thread: durable when it resolves, whether or not a run or a
 * worker is up; a thread that waits is made due so a worker continues it. Throws
 * ThreadNotFoundError for a missing thread, InvalidKeyError for a bad thread id or
 * name, UnencodableValueError / ValueTooDeepError for a payload the codec cannot
 * store (a function, a class instance, a cycle), InvalidOptionError for options that
 * are not an object or a payload over the size limit. Nothing is queued when it throws.
 *
 * @example
 * ```ts
 * import { signalThread } from 'cairn/inspect';
 * const signal = await signalThread(engine, { thread: 'order_7', name: 'approved', payload: { by: 'ana' } });
 * console.log(`signal ${signal.id} queued`, signal.payload); // { by: 'ana' }
 * ```
 */
export async function signalThread(engine: Engine, options: SignalThreadOptions): Promise<SentSignal> {
  if (options === null || typeof options !== 'object') throw new InvalidOptionError(`signal: pass { thread, name, payload? }, got ${options === null ? 'null' : typeof options}.`);
  // The thread and the name first: an encoding error quotes the name, which must be one.
  checkThreadId(options.thread);
  checkSignalName(options.name, MAX_SIGNAL_NAME_LENGTH);
  const payload = encode(options.payload ?? null, `payload of signal ${JSON.stringify(options.name)}`);
  const stored = await engine.checkpointer.sendSignal(options.thread, { name: options.name, payload });
  // The codec text this call made, decoded: the value a wait gets (a Date as a Date), whatever
  // form the engine handed back (an encrypted engine's answer is the stored row's).
  return { ...stored, payload: decode(payload) };
}
