/**
 * @module runtime/signal-queue
 * A run's view of its thread's signal queue, for `ctx.waitFor`: the pending signals,
 * the one a wait took before a crash, and taking one (fenced by the run's lease,
 * once only). It remembers the newest signal id any wait of the run looked at, which
 * the commit of a waiting position hands the engine (`signalsSeen`): a signal sent
 * after that look, while the thread was still running, then makes the thread due at
 * once instead of being missed.
 */
import type { Checkpointer } from '../contracts/checkpointer.js';
import type { ThreadLease } from '../contracts/threads.js';
import { SignalConsumedError } from '../errors.js';
import type { QueuedSignal, SignalQueue } from './pauses.js';

export class ThreadSignals implements SignalQueue {
  /** The newest signal id a wait of this run looked at (0: none). */
  seen = 0;

  constructor(
    private readonly cp: Checkpointer,
    private readonly lease: ThreadLease,
  ) {}

  /** Every signal of the thread not yet taken, oldest first. */
  async all(): Promise<QueuedSignal[]> {
    const pending = await this.cp.listSignals(this.lease.threadId, { pending: true });
    for (const s of pending) if (s.id > this.seen) this.seen = s.id;
    return pending;
  }

  async pending(name: string): Promise<QueuedSignal[]> {
    return (await this.all()).filter((s) => s.name === name);
  }

  async takenBy(key: string): Promise<QueuedSignal | null> {
    return (await this.cp.listSignals(this.lease.threadId, { consumedBy: key }))[0] ?? null;
  }

  async take(id: number, key: string): Promise<boolean> {
    try {
      await this.cp.consumeSignal(this.lease, { id, by: key });
      return true;
    } catch (error) {
      // Another wait of this thread (a parallel node) took it first.
      if (SignalConsumedError.is(error)) return false;
      throw error;
    }
  }
}
