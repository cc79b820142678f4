/**
 * @module testing/checkpointer.suite
 * The conformance suite of the {@link Checkpointer} contract: every rule its JSDoc
 * states (leases and fencing, head checks, atomic commits, pending writes, range
 * reads, namespace listing, thread listing with its filters and paging, deleting a thread with all it
 * owns, durable waits and signals, id validation, lifecycle), as vitest tests, and the optional methods workers
 * use, each where the engine's `capabilities` declare it (elsewhere, their refusal).
 * Every engine runs it; a third-party engine proves itself with the same ten lines.
 *
 * Each test gets a fresh engine from `create()` and hands it to `destroy()` (or
 * `close()`) afterwards. Tests that wait for a lease to expire use leases of a
 * few tens of milliseconds. The tests live in one file per feature under
 * `testing/checkpointer/`; this function registers them all.
 *
 * @example
 * ```ts
 * import { checkpointerSuite } from 'cairn/testing';
 * import { memory } from 'cairn/memory';
 * checkpointerSuite({ name: 'memory', create: () => memory() });
 * ```
 */
import { describe } from 'vitest';
import { commitTests } from './checkpointer/commits.js';
import { checkpointerContext, type CheckpointerSuiteOptions } from './checkpointer/context.js';
import { compactionTests } from './checkpointer/compaction.js';
import { deleteThreadTests } from './checkpointer/delete-thread.js';
import { itemPackTests } from './checkpointer/item-packs.js';
import { leaseTests } from './checkpointer/leases.js';
import { lifecycleTests } from './checkpointer/lifecycle.js';
import { readTests } from './checkpointer/reads.js';
import { signalTests } from './checkpointer/signals.js';
import { threadTests } from './checkpointer/threads.js';
import { waitTests } from './checkpointer/waits.js';
import { workerTests } from './checkpointer/workers.js';

export type { CheckpointerSuiteOptions } from './checkpointer/context.js';
export { linearPosition } from './checkpointer/fixtures.js';

/**
 * Registers the Checkpointer conformance tests for one engine.
 *
 * @example `checkpointerSuite({ name: 'sqlite', create: () => sqlite(tempFile()), destroy: (e) => e.close() })`
 */
export function checkpointerSuite(options: CheckpointerSuiteOptions): void {
  describe(`Checkpointer conformance: ${options.name}`, () => {
    const suite = checkpointerContext(options);
    leaseTests(suite);
    commitTests(suite);
    readTests(suite);
    threadTests(suite);
    deleteThreadTests(suite);
    compactionTests(suite);
    itemPackTests(suite);
    workerTests(suite);
    waitTests(suite);
    signalTests(suite);
    lifecycleTests(suite);
  });
}
