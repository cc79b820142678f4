/**
 * @module testing/checkpointer/context
 * What every feature file of the Checkpointer conformance suite is handed: the
 * engine of the test under way (a fresh one per test) and the helpers that build
 * threads on it.
 */
import type { Checkpointer } from '../../contracts/checkpointer.js';
import type { Engine } from '../../contracts/engine.js';
import type { LeaseOwner, ThreadKind, ThreadLease } from '../../contracts/threads.js';
import { freshEnginePerTest, type EngineSuiteOptions } from '../suite-kit.js';
import { commitOf, linearPosition, LONG_LEASE, remoteOwner, SHORT_LEASE, sleep } from './fixtures.js';

/** Options of `checkpointerSuite`. */
export type CheckpointerSuiteOptions = EngineSuiteOptions;

/** The test's engine (read it inside a test or a hook, never at registration) and helpers over it. */
export interface CheckpointerSuiteContext {
  readonly options: CheckpointerSuiteOptions;
  readonly engine: Engine;
  readonly cp: Checkpointer;
  /** Creates a thread and returns the creating lease. */
  create(
    threadId: string,
    attrs?: { kind?: ThreadKind; tenant?: string | null; metadata?: Record<string, unknown>; leaseMs?: number; owner?: LeaseOwner },
  ): Promise<ThreadLease>;
  /** A thread whose first holder's lease expired and was taken over: `stale` is the lost lease, `fresh` the live one. */
  takenOver(threadId: string): Promise<{ stale: ThreadLease; fresh: ThreadLease }>;
  /** Commits positions `from`..`last` in a line under `lease`. */
  commitLine(lease: ThreadLease, last: number, from?: number): Promise<void>;
}

/** Registers the hooks that give every test a fresh engine (and dispose of it), and returns the context. */
export function checkpointerContext(options: CheckpointerSuiteOptions): CheckpointerSuiteContext {
  const engine = freshEnginePerTest(options, 'checkpointerSuite');

  const context: CheckpointerSuiteContext = {
    options,
    get engine() {
      return engine();
    },
    get cp() {
      return context.engine.checkpointer;
    },
    create(threadId, attrs = {}) {
      return context.cp.acquireThread(threadId, {
        owner: attrs.owner ?? remoteOwner(),
        leaseMs: attrs.leaseMs ?? LONG_LEASE,
        create: { kind: attrs.kind ?? 'task', tenant: attrs.tenant ?? null, metadata: attrs.metadata ?? {} },
      });
    },
    async takenOver(threadId) {
      const stale = await context.create(threadId, { leaseMs: SHORT_LEASE });
      await sleep(SHORT_LEASE * 2);
      const fresh = await context.cp.acquireThread(threadId, { owner: remoteOwner('successor'), leaseMs: LONG_LEASE });
      return { stale, fresh };
    },
    async commitLine(lease, last, from = 0) {
      for (let seq = from; seq <= last; seq++) await context.cp.commitStep(lease, commitOf(linearPosition(seq), seq === 0 ? null : seq - 1));
    },
  };
  return context;
}
