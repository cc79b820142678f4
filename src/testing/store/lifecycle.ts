/**
 * @module testing/store/lifecycle
 * Store conformance. Lifecycle: no call succeeds after close.
 * Registered by {@link storeSuite}, inside its describe block.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { Engine } from '../../contracts/engine.js';
import type { Store } from '../../contracts/store.js';
import { EngineClosedError } from '../../errors.js';
import { callFor, STORE_CALLS } from '../contract-calls.js';
import { expectError } from './fixtures.js';
import type { StoreSuiteContext } from './context.js';

/** Registers the tests of this feature. */
export function lifecycleTests(suite: StoreSuiteContext): void {
  const { ns } = suite;
  let store: Store;
  let engine: Engine;

  describe('lifecycle', () => {
    beforeEach(() => {
      store = suite.store;
      engine = suite.engine;
    });

    it('throws EngineClosedError after engine.close()', async () => {
      await store.put(ns, 'k', 1);
      await engine.close();
      await expectError(() => store.get(ns, 'k'), EngineClosedError);
      await expectError(() => store.put(ns, 'k', 2), EngineClosedError);
      await expectError(() => store.delete(ns, 'k'), EngineClosedError);
      await expectError(() => store.list(ns), EngineClosedError);
      await expectError(() => store.update(ns, 'k', () => 3), EngineClosedError);
      await expectError(() => store.search(ns), EngineClosedError);
      await expectError(() => store.listNamespaces(), EngineClosedError);
      await expectError(() => store.batch([{ op: 'put', namespace: ns, key: 'k', value: 4 }]), EngineClosedError);
      await expectError(() => store.sweepExpired(), EngineClosedError);
      await expectError(() => store.listOverwrites([]), EngineClosedError);
    });

    it('every storage method the contract names (the list is derived from it) throws EngineClosedError after close()', async () => {
      const lease = await engine.checkpointer.acquireThread('t1', {
        owner: { runId: 'store-suite', pid: 4242, host: 'cairn-suite.remote.invalid' },
        leaseMs: 60_000,
        create: { kind: 'task', tenant: null, metadata: {} },
      });
      await engine.close();
      for (const [method, entry] of Object.entries(STORE_CALLS)) {
        const call = callFor(entry, engine);
        if (typeof call === 'string') continue; // declarations and policies live in the process
        const caught = await call({ engine, lease }).then(
          () => undefined,
          (error: unknown) => error,
        );
        expect((caught as { code?: string } | undefined)?.code, `${method} after close`).toBe(EngineClosedError.code);
      }
    });
  });
}
