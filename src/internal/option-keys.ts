/**
 * @module internal/option-keys
 * The one message for an option a call does not take. cairn refuses such a key rather
 * than ignoring it: a misspelt option acts as the default while the caller believes it
 * applied (`readonly: true` opening for writing, `requir: true` reading plaintext).
 */
import { InvalidOptionError, type ErrorPlace } from '../errors.js';

/** "`call`: unknown option "k" (options: a, b)." for the first key of `options` not in `known`; undefined when there is none. */
export function unknownOption(call: string, options: object, known: readonly string[]): string | undefined {
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) return `${call}: unknown option "${key}" (options: ${known.join(', ')}).`;
  }
  return undefined;
}

/**
 * Refuses, with InvalidOptionError, options that are not an object or that hold a key
 * the call does not take. `undefined` is no options (the defaults).
 */
export function checkOptionKeys(call: string, options: unknown, known: readonly string[], place?: ErrorPlace): void {
  if (options === undefined) return;
  if (options === null || typeof options !== 'object' || Array.isArray(options)) {
    throw new InvalidOptionError(`${call} takes an options object ({ ${known.join(', ')} }), not ${JSON.stringify(options) ?? String(options)}.`, place ? { place } : {});
  }
  const unknown = unknownOption(call, options, known);
  if (unknown) throw new InvalidOptionError(unknown, place ? { place } : {});
}
