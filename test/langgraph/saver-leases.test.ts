/**
 * CairnSaver's lease and its errors: a thread's lease is kept while writes go on and
 * given back after `idleReleaseMs` or by `release()`, so another process's write
 * waits for it instead of failing; writes naming a checkpoint that never lands are
 * CheckpointNotFoundError, with nothing written.
 */
import { emptyCheckpoint } from '@langchain/langgraph-checkpoint';
import { describe, expect, it } from 'vitest';
import { memory } from '../../src/engines/memory/index.js';
import { CheckpointNotFoundError, ThreadBusyError } from '../../src/errors.js';
import { CairnSaver } from '../../src/langgraph/index.js';

const owner = { runId: 'other', pid: process.pid, host: 'elsewhere' };
const meta = { source: 'input' as const, step: -1, parents: {} };

describe('CairnSaver leases', () => {
  it('keeps the lease between writes and gives it back after idleReleaseMs, or on release()', async () => {
    const engine = memory();
    const saver = new CairnSaver({ engine, idleReleaseMs: 200 });
    await saver.put({ configurable: { thread_id: 't' } }, emptyCheckpoint(), meta, {});
    // Held: another owner is refused while the saver keeps it.
    await expect(engine.checkpointer.acquireThread('t', { owner, leaseMs: 1000 })).rejects.toSatisfy((e: unknown) => ThreadBusyError.is(e));
    await new Promise((resolve) => setTimeout(resolve, 400));
    const other = await engine.checkpointer.acquireThread('t', { owner, leaseMs: 1000 });
    await engine.checkpointer.releaseThread(other);

    // A second saver (another process) waits for a kept lease rather than failing.
    await saver.put({ configurable: { thread_id: 't2' } }, emptyCheckpoint(), meta, {});
    const second = new CairnSaver({ engine, busyWaitMs: 2000 });
    const started = Date.now();
    await second.put({ configurable: { thread_id: 't2' } }, emptyCheckpoint(), meta, {});
    expect(Date.now() - started).toBeGreaterThanOrEqual(100);
    await second.release();
    await saver.release();
    const free = await engine.checkpointer.acquireThread('t2', { owner, leaseMs: 1000 });
    expect(free.threadId).toBe('t2');
    await engine.close();
  });

  it('writes for a checkpoint that never lands are CheckpointNotFoundError, and nothing is written', async () => {
    const engine = memory();
    const saver = new CairnSaver({ engine, writesWaitMs: 50 });
    const config = await saver.put({ configurable: { thread_id: 't' } }, emptyCheckpoint(), meta, {});
    const missing = { configurable: { ...config.configurable, checkpoint_id: '1f000000-0000-6000-8000-000000000000' } };
    await expect(saver.putWrites(missing, [['x', 1]], 'task')).rejects.toSatisfy((e: unknown) => CheckpointNotFoundError.is(e) && /no checkpoint 1f000000/.test((e as Error).message));
    expect((await saver.getTuple(config))?.pendingWrites).toEqual([]);
    await saver.release();
    await engine.close();
  });
});
