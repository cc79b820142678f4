/**
 * No driver error escapes an engine: with its driver failing under it, every method
 * of every storage contract (Checkpointer, Ledger, Store; the list is derived from
 * the contracts, see src/testing/contract-calls.ts) fails with EngineError, naming
 * what failed, with the driver's own error as `cause`; never the raw driver error.
 * Each engine's file gives a way to make its driver fail, in about ten lines.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/contracts/engine.js';
import { CairnError, EngineError, NotSupportedError } from '../../src/errors.js';
import { callFixture, contractCalls, type CallFixture } from '../../src/testing/contract-calls.js';

/** An engine whose driver can be made to fail. */
export interface BreakableEngine {
  engine: Engine;
  /** The error every driver call throws (or rejects with) once `fail()` was called. */
  error: Error;
  fail(): void;
  heal(): void;
  /** Closes the engine and whatever was made for it. */
  cleanup(): Promise<void>;
}

/** Methods that resolve with a driver that fails, and why: none may reject with a raw driver error either. */
const KEEP_TRYING: Record<string, string> = {
  subscribeRunnable: 'a LISTEN that fails is tried again in the background (see its contract): the subscription resolves',
};

async function settle(run: () => Promise<unknown>): Promise<{ ok: true; value: unknown } | { ok: false; error: unknown }> {
  try {
    return { ok: true, value: await run() };
  } catch (error) {
    return { ok: false, error };
  }
}

export function driverFailureSuite(options: { name: string; create: () => Promise<BreakableEngine> }): void {
  describe(`driver failures are EngineError: ${options.name}`, () => {
    let broken: BreakableEngine;
    let fixture: CallFixture;

    beforeEach(async () => {
      broken = await options.create();
      fixture = await callFixture(broken.engine);
      broken.fail();
    });

    afterEach(async () => {
      broken.heal();
      await broken.cleanup();
    });

    for (const [method, entry] of contractCalls()) {
      if (typeof entry !== 'function' && 'local' in entry) {
        it(`${method}: works with the driver failing (${entry.local})`, async () => {
          await expect(entry.call(fixture)).resolves.not.toThrow();
        });
        continue;
      }
      it(`${method}: EngineError naming the operation, with the driver's error as cause`, async () => {
        const call = typeof entry === 'function' ? entry : entry.call;
        const outcome = await settle(() => call(fixture));
        if ('capability' in entry && !fixture.engine.checkpointer.capabilities[entry.capability]) {
          // Not declared: refused before any driver call.
          expect(outcome.ok ? outcome.value : (outcome.error as { code?: string }).code, method).toBe(NotSupportedError.code);
          return;
        }
        if (outcome.ok) {
          expect(KEEP_TRYING[method], `${method} resolved with the driver failing`).toBeDefined();
          if (typeof outcome.value === 'function') await (outcome.value as () => Promise<void>)();
          return;
        }
        const error = outcome.error as Error;
        expect(EngineError.is(error), `${method}: ${String(error)}`).toBe(true);
        expect(CairnError.is(error)).toBe(true);
        expect(error.cause, `${method}: the cause is the driver's error`).toBe(broken.error);
        expect(error.message, method).toMatch(new RegExp(`^\\[cairn\\] \\[${fixture.engine.name}\\] .+ failed`));
        // The thread log's and the ledger's operations are named after their method (ledger.write for both
        // writeIntent and writeRecord); a store call after the primitive it failed in (store.get, store.search...).
        const operation = /^\[cairn\] \[\w+\] (\S+) failed/.exec(error.message)?.[1] ?? '';
        if (!method.startsWith('store.')) expect(method.startsWith(operation) && operation.length > 0, `${method} is named: ${error.message}`).toBe(true);
      });
    }

    it('the engine works again once the driver does', async () => {
      broken.heal();
      expect(await fixture.engine.checkpointer.getThread('t1')).toMatchObject({ id: 't1', head: 0 });
      expect(await fixture.engine.ledger.get('t1', 'k1')).toMatchObject({ status: 'intent' });
      expect(await fixture.engine.store.get(['ns'], 'k')).toMatchObject({ value: { a: 1 } });
    });
  });
}
