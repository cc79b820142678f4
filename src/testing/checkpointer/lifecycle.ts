/**
 * @module testing/checkpointer/lifecycle
 * Checkpointer conformance. Lifecycle: no call succeeds after close, and closing twice is harmless.
 * Registered by {@link checkpointerSuite}, inside its describe block.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { Checkpointer } from '../../contracts/checkpointer.js';
import type { Engine } from '../../contracts/engine.js';
import { EngineClosedError } from '../../errors.js';
import { callFor, CHECKPOINTER_CALLS } from '../contract-calls.js';
import { commitOf, expectError, linearPosition, LONG_LEASE, remoteOwner } from './fixtures.js';
import type { CheckpointerSuiteContext } from './context.js';

/** Registers the tests of this feature. */
export function lifecycleTests(suite: CheckpointerSuiteContext): void {
  const { create, commitLine } = suite;
  let cp: Checkpointer;
  let engine: Engine;

  describe('lifecycle', () => {
    beforeEach(() => {
      cp = suite.cp;
      engine = suite.engine;
    });

    it('throws EngineClosedError from every method after engine.close()', async () => {
      const lease = await create('t1');
      await commitLine(lease, 0);
      await engine.close();
      const calls: [string, () => Promise<unknown>][] = [
        ['getThread', () => cp.getThread('t1')],
        ['listThreads', () => cp.listThreads()],
        ['listFailures', () => cp.listFailures('t1')],
        ['acquireThread', () => cp.acquireThread('t2', { owner: remoteOwner(), leaseMs: LONG_LEASE, create: { kind: 'task', tenant: null, metadata: {} } })],
        ['renewLease', () => cp.renewLease(lease, LONG_LEASE)],
        ['updateThread', () => cp.updateThread(lease, { attempts: 1 })],
        ['commitStep', () => cp.commitStep(lease, commitOf(linearPosition(1), 0))],
        ['putPendingWrite', () => cp.putPendingWrite(lease, { ns: '', baseSeq: 0, task: 'a:0', body: '{}' })],
        ['getPendingWrites', () => cp.getPendingWrites('t1', '', 0)],
        ['getPosition', () => cp.getPosition('t1', '', 0)],
        ['getPositions', () => cp.getPositions('t1', '', { from: 0, to: 1 })],
        ['listPositions', () => cp.listPositions('t1', '')],
        ['listNamespaces', () => cp.listNamespaces('t1')],
        ['getSnapshot', () => cp.getSnapshot('t1', '', [{ from: 0, to: 1 }])],
        ['getItems', () => cp.getItems('t1', '', 'm', [{ from: 0, to: 1 }])],
        ['getPositionItems', () => cp.getPositionItems('t1', '', 0, ['m'])],
        ['deleteThread', () => cp.deleteThread('t1')],
        ['releaseThread', () => cp.releaseThread(lease)],
      ];
      for (const [method, call] of calls) {
        let caught: unknown;
        try {
          await call();
        } catch (error) {
          caught = error;
        }
        expect((caught as { code?: string } | undefined)?.code, `${method} after close`).toBe(EngineClosedError.code);
      }
    });

    it('every method the contract names (the list is derived from it) throws EngineClosedError after close()', async () => {
      const lease = await create('t1');
      await engine.close();
      for (const [method, entry] of Object.entries(CHECKPOINTER_CALLS)) {
        const call = callFor(entry, engine);
        if (typeof call === 'string') continue; // close itself; an undeclared optional method
        const caught = await call({ engine, lease }).then(
          () => undefined,
          (error: unknown) => error,
        );
        expect((caught as { code?: string } | undefined)?.code, `${method} after close`).toBe(EngineClosedError.code);
      }
    });

    it('throws EngineClosedError after checkpointer.close()', async () => {
      const lease = await create('t1');
      await cp.close();
      await expectError(() => cp.getThread('t1'), EngineClosedError);
      await expectError(() => cp.listThreads(), EngineClosedError);
      await expectError(() => cp.commitStep(lease, commitOf(linearPosition(0), null)), EngineClosedError);
    });

    it('close() twice is harmless', async () => {
      await engine.close();
      await engine.close();
    });
  });
}
