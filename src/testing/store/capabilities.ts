/**
 * @module testing/store/capabilities
 * Store conformance. Capabilities: the flags that decide which of the other tests apply.
 * Registered by {@link storeSuite}, inside its describe block.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { Store } from '../../contracts/store.js';
import type { StoreSuiteContext } from './context.js';

/** Registers the tests of this feature. */
export function capabilityTests(suite: StoreSuiteContext): void {
  let store: Store;

  describe('capabilities', () => {
    beforeEach(() => {
      store = suite.store;
    });

    it('declares its capabilities as booleans (they decide which tests below apply)', () => {
      const caps = store.capabilities;
      for (const flag of ['ttl', 'sweep', 'filters', 'crossProcess'] as const) expect(typeof caps[flag], flag).toBe('boolean');
    });
  });
}
