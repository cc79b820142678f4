/**
 * @module internal/keys
 * Validation of names that reach storage: store namespaces and keys, thread ids.
 * Checked before anything is touched, so a hostile value cannot reach a query,
 * a path or a prefix scan.
 */
import { InvalidKeyError } from '../errors.js';

/** Separator of namespace labels in stored form; never allowed inside a label. */
export const NS_SEPARATOR = '\u001f';

const MAX_LABEL = 256;

function checkText(kind: string, value: unknown, max: number): asserts value is string {
  if (typeof value !== 'string' || value.length === 0) throw new InvalidKeyError(`${kind} must be a non-empty string, got ${JSON.stringify(value)}.`);
  if (value.length > max) throw new InvalidKeyError(`${kind} is ${value.length} characters long; the limit is ${max}.`);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(value)) throw new InvalidKeyError(`${kind} ${JSON.stringify(value)} contains a control character.`);
}

/** Validates a store namespace and returns its stored form (labels joined by a separator, plus one at the end). */
export function encodeNamespace(namespace: readonly string[]): string {
  if (!Array.isArray(namespace)) throw new InvalidKeyError(`a namespace is an array of labels, got ${JSON.stringify(namespace)}.`);
  namespace.forEach((label, i) => checkText(`namespace label ${i}`, label, MAX_LABEL));
  // The trailing separator makes a prefix scan stop at label boundaries:
  // ["tenant","acme"] is stored as "tenant␟acme␟", which "tenant␟acme-corp␟" does not start with.
  return namespace.length ? namespace.join(NS_SEPARATOR) + NS_SEPARATOR : '';
}

export function decodeNamespace(stored: string): string[] {
  return stored === '' ? [] : stored.slice(0, -1).split(NS_SEPARATOR);
}

export function checkStoreKey(key: unknown): asserts key is string {
  checkText('store key', key, 1024);
}

export function checkThreadId(id: unknown): asserts id is string {
  checkText('thread id', id, 512);
}
