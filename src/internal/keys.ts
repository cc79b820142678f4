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
  if (/[\u0000-\u001f\u007f-\u009f]/.test(value)) throw new InvalidKeyError(`${kind} ${JSON.stringify(value)} contains a control character.`);
  // Shown in a terminal or a page, these reorder the text after them: a name could pass for another.
  if (/[\u202a-\u202e\u2066-\u2069]/.test(value)) {
    throw new InvalidKeyError(`${kind} ${JSON.stringify(value)} contains a bidirectional control character (U+202A-U+202E, U+2066-U+2069), which would reorder how it is shown.`);
  }
  // A lone surrogate has no UTF-8 form: a database would store U+FFFD instead, so the
  // name read back (or listed) would differ from the one written.
  if (LONE_SURROGATE.test(value)) throw new InvalidKeyError(`${kind} ${JSON.stringify(value)} contains a lone UTF-16 surrogate (not valid Unicode).`);
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

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

/**
 * The most bytes of UTF-8 a store item's namespace (as stored: each label followed by
 * a one-byte separator) and key may take together, on every engine. PostgreSQL keeps
 * them in one btree index entry, which it refuses over 2,704 bytes: 2,688 bytes of
 * namespace and key that do not compress (measured on the real index; fewer with
 * alignment). 2,048 stays clear of that whatever the characters and however deep the
 * namespace, and SQLite and the memory engine refuse the same writes.
 */
export const MAX_STORE_KEY_BYTES = 2048;

/**
 * Checks that an item written under `ns` (stored form, from {@link encodeNamespace})
 * and `key` (checked) fits {@link MAX_STORE_KEY_BYTES}: InvalidKeyError before
 * storage is touched. Writes only: a read or delete of a longer one finds nothing.
 */
export function checkStoreEntry(ns: string, key: string): void {
  const nsBytes = Buffer.byteLength(ns, 'utf8');
  const keyBytes = Buffer.byteLength(key, 'utf8');
  if (nsBytes + keyBytes <= MAX_STORE_KEY_BYTES) return;
  const labels = decodeNamespace(ns).length;
  throw new InvalidKeyError(
    `a store item's namespace and key take ${nsBytes + keyBytes} bytes of UTF-8 together (namespace ${nsBytes}, ${labels} label${labels === 1 ? '' : 's'} with their separators; key ${keyBytes}), ` +
      `over the ${MAX_STORE_KEY_BYTES}-byte limit (MAX_STORE_KEY_BYTES) every engine enforces. Use a shorter key (a digest of a long one), or fewer or shorter labels. Nothing was written.`,
  );
}

export function checkThreadId(id: unknown): asserts id is string {
  checkText('thread id', id, 512);
}

/** A signal's name: what a wait matches signals by. */
export function checkSignalName(name: unknown, max: number): asserts name is string {
  checkText('signal name', name, max);
}

/**
 * Compares two strings in Unicode code point order, which is the byte order of their
 * UTF-8 and so the order SQLite and PostgreSQL (`COLLATE "C"`) sort them in. JavaScript's
 * `<` compares UTF-16 code units instead, which puts U+E000..U+FFFF after characters
 * outside the BMP.
 */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return rank(x) - rank(y);
  }
  return a.length - b.length;
}

/** Surrogates (U+D800..DFFF) rank above U+E000..U+FFFF, as the code points they encode do. */
function rank(unit: number): number {
  return unit >= 0xe000 ? unit - 0x800 : unit >= 0xd800 ? unit + 0x2000 : unit;
}
