/**
 * A listing query's refusals say what was given: a metadata value that is not a
 * finite number is named as itself (NaN, Infinity), not as the null JSON makes of it.
 */
import { describe, expect, it } from 'vitest';
import { InvalidOptionError } from '../../src/errors.js';
import { normalizeThreadQuery } from '../../src/internal/thread-query.js';
import type { ThreadQuery } from '../../src/contracts/threads.js';

function refusal(query: unknown): Error {
  try {
    normalizeThreadQuery(query as ThreadQuery);
  } catch (error) {
    return error as Error;
  }
  throw new Error('the query was accepted');
}

describe('normalizeThreadQuery', () => {
  it('names a metadata number that is not finite as itself', () => {
    for (const [value, shown] of [[Number.NaN, 'NaN'], [Number.POSITIVE_INFINITY, 'Infinity'], [10n, '10']] as const) {
      const error = refusal({ metadata: { n: value } });
      expect(error).toBeInstanceOf(InvalidOptionError);
      expect(error.message).toContain(`metadata.n must be a string, a finite number, a boolean or null (equality on top-level keys), got ${shown}.`);
    }
    expect(refusal({ metadata: { n: { deep: 1 } } }).message).toContain('got {"deep":1}.');
  });
});
