/**
 * @module runtime/holder-watch
 * What lets an idle {@link Worker} take over a crashed worker's threads without waiting
 * out their leases: the processes of this host that hold leases (asked of the engine
 * now and then), and a cheap local check of whether each still exists (no database
 * round trip). A holder whose process is gone is named in the next claim
 * (`ClaimRequest.deadHolders`); the engine judges it again before taking anything.
 * Only same-host holders are watched: another machine's process cannot be checked, so
 * its threads wait for their leases to expire.
 */
import type { Checkpointer } from '../contracts/checkpointer.js';
import type { LeaseOwner } from '../contracts/threads.js';
import { WORKER_HOLDER_CHECK_MS, WORKER_HOLDER_REFRESH_MS } from '../defaults.js';
import { holderIsDead, leaseHost } from '../internal/lease.js';

/** The lease holders of this host a worker watches, and which of them died. */
export class HolderWatch {
  private holders: LeaseOwner[] = [];
  private listedAt = -Infinity;
  /** Run ids of dead holders already named in a claim that took all it could: no reason to wake for them again. */
  private readonly settled = new Set<string>();

  constructor(
    private readonly cp: Checkpointer,
    private readonly graph: string | undefined,
    private readonly refreshMs = WORKER_HOLDER_REFRESH_MS,
  ) {}

  /** Asks the engine for the holders again when the last answer is older than the refresh interval. */
  async refresh(): Promise<void> {
    if (Date.now() - this.listedAt < this.refreshMs) return;
    const listed = await this.cp.leaseHolders!({ host: leaseHost(), ...(this.graph !== undefined ? { graph: this.graph } : {}) });
    this.listedAt = Date.now();
    this.holders = listed.filter((holder) => holder.pid !== process.pid);
    const current = new Set(this.holders.map((holder) => holder.runId));
    for (const runId of this.settled) if (!current.has(runId)) this.settled.delete(runId);
  }

  /** Ms until {@link refresh} asks the engine again. */
  untilRefresh(): number {
    return Math.max(0, this.listedAt + this.refreshMs - Date.now());
  }

  /** The known holders whose process is gone now: what a claim names in `deadHolders`. */
  dead(): LeaseOwner[] {
    return this.holders.filter((holder) => holderIsDead(holder));
  }

  /** True when a holder died that no claim has named yet. */
  newDeath(): boolean {
    return this.holders.some((holder) => !this.settled.has(holder.runId) && holderIsDead(holder));
  }

  /** A claim that named `owners` took all it could of their threads. */
  settle(owners: readonly LeaseOwner[]): void {
    for (const owner of owners) this.settled.add(owner.runId);
  }

  /** Calls `onDeath` once, as soon as a holder is seen dead that no claim named yet; returns the stopper. */
  watch(onDeath: () => void): () => void {
    if (this.holders.length === 0) return () => undefined;
    const timer = setInterval(() => {
      if (!this.newDeath()) return;
      clearInterval(timer);
      onDeath();
    }, WORKER_HOLDER_CHECK_MS);
    timer.unref();
    return () => clearInterval(timer);
  }
}
