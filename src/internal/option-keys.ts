/**
 * @module internal/option-keys
 * The one message for an option a call does not take. cairn refuses such a key rather
 * than ignoring it: a misspelt option acts as the default while the caller believes it
 * applied (`readonly: true` opening for writing, `requir: true` reading plaintext).
 */

/** "`call`: unknown option "k" (options: a, b)." for the first key of `options` not in `known`; undefined when there is none. */
export function unknownOption(call: string, options: object, known: readonly string[]): string | undefined {
  for (const key of Object.keys(options)) {
    if (!known.includes(key)) return `${call}: unknown option "${key}" (options: ${known.join(', ')}).`;
  }
  return undefined;
}
