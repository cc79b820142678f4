/**
 * @module internal/pins
 * Where artifact pins live in the store, and how a pin that belongs to a thread is
 * keyed, so that `deleteThread` can remove a thread's pins (live or already
 * unpinned) in its own transaction, on every engine, without reading their values.
 *
 * A pin is a store item under {@link PIN_NAMESPACE}; a global pin is keyed by the
 * artifact's ref id, a thread's pin by the ref id plus {@link threadPinSuffix} of the
 * thread (a digest: thread ids may be 512 characters long, store keys at most 1024).
 */
import { createHash } from 'node:crypto';
import { encodeNamespace } from './keys.js';

/** Namespace of the pins kept in the store (the collector's roots). */
export const PIN_NAMESPACE: readonly string[] = ['cairn', 'artifact-pins'];

/** {@link PIN_NAMESPACE} in stored form, as engines keep it in their `ns` column. */
export const PIN_NAMESPACE_STORED = encodeNamespace(PIN_NAMESPACE);

/** The end of every pin key of one thread: `#thread:` and 32 hex digits of the thread id's SHA-256. */
export function threadPinSuffix(threadId: string): string {
  return `#thread:${createHash('sha256').update(threadId, 'utf8').digest('hex').slice(0, 32)}`;
}

/** The store key of `threadId`'s pin on the artifact `refId`. */
export function threadPinKey(refId: string, threadId: string): string {
  return refId + threadPinSuffix(threadId);
}
