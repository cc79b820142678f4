/**
 * @module internal/plain-object
 * What cairn takes for a plain object wherever it reads one key by key: an update a
 * node returns, thread metadata, a store filter, a value the redaction walk copies.
 * An object literal or a null-prototype object (`Object.create(null)`, which
 * tagged JSON keeps as such); never an array, a Map, a Date or a class instance,
 * whose own keys are not what they hold.
 */

/** True for an object whose prototype is Object.prototype or null, and not an array. */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}
