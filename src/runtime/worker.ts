/**
 * @module runtime/worker
 * A worker claims runnable threads of one graph and runs them, as many at once as
 * its concurrency allows, each under a lease it renews while working. It sleeps
 * until there may be work: a wake-up from the engine (PostgreSQL LISTEN/NOTIFY: a
 * submitted run, an answered interrupt, another worker stopping), the death of a
 * process of this host that holds leases (its threads are taken over at once: see
 * {@link HolderWatch}), the moment the earliest held lease expires (another host's
 * crashed worker's threads become claimable then), or a slow poll as a last resort. `stop()` (SIGTERM in `cairn worker`) stops
 * claiming, cancels the runs between steps and releases their leases, so other
 * workers take the threads over at once.
 *
 * @example
 * ```ts
 * const worker = new Worker(app, { concurrency: 8 });
 * process.on('SIGTERM', () => worker.stop());
 * await worker.run();
 * ```
 */
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import type { ThreadLease } from '../contracts/threads.js';
import { WORKER_CLAIM_RETRY_MS, WORKER_CONCURRENCY, WORKER_POLL_MS } from '../defaults.js';
import { CairnError, InvalidOptionError } from '../errors.js';
import type { StateSchema } from '../state/schema.js';
import type { App } from './app.js';
import type { EventSink } from './events.js';
import { HolderWatch } from './holder-watch.js';
import { checkOptionKeys } from '../internal/option-keys.js';
import { isCompiledGraph } from './call-options.js';

/** How many threads a {@link Worker} runs at once, its leases, and where its events and errors go. */
export interface WorkerOptions {
  /** Threads run at once: a whole number, 1 or more (InvalidOptionError otherwise). Default 4. */
  concurrency?: number;
  /** Lease of a claimed thread; the run renews it. Default: the app's (`compile({ leaseMs })`). */
  leaseMs?: number;
  /** Longest sleep without any wake-up, ms. Default 5000. */
  pollMs?: number;
  onEvent?: EventSink;
  /** Told about every thread the worker finishes, stops or loses. */
  onRun?: (report: WorkerRunReport) => void;
  /** Told when claiming threads fails (the database is unreachable, say); the worker tries again after a pause. */
  onError?: (error: unknown) => void;
}

/** One thread a worker ran: how the run ended. */
export interface WorkerRunReport {
  threadId: string;
  epoch: number;
  status?: string;
  /** Code of the error that ended the run here (ERR_LEASE_LOST when another worker took it over). */
  error?: string;
  message?: string;
}


/** An option's value in a message: numbers as written (NaN, Infinity), the rest as JSON. */
const shown = (value: unknown): string => (typeof value === 'number' ? String(value) : JSON.stringify(value));

class WorkerStopping extends Error {
  constructor() {
    super('the worker is stopping');
  }
}

const WORKER_OPTION_KEYS: readonly string[] = ['concurrency', 'leaseMs', 'pollMs', 'onEvent', 'onRun', 'onError'] satisfies (keyof WorkerOptions)[];

/**
 * Runs submitted threads of one app: claims runnable threads as its concurrency allows,
 * each under a lease it renews while working, and takes over threads whose worker died.
 *
 * @example
 * ```ts
 * const worker = new Worker(app, { concurrency: 8 });
 * const running = worker.run();          // until stop()
 * await app.submit({ thread: 'cust_42', input: { customerId: 'cust_42' } });
 * process.on('SIGTERM', () => worker.stop());
 * await running;
 * ```
 */
export class Worker {
  private readonly active = new Map<string, { controller: AbortController; done: Promise<void> }>();
  private stopping = false;
  private wake: (() => void) | undefined;
  private pending = false;
  private readonly concurrency: number;
  private readonly leaseMs: number;
  private readonly pollMs: number;
  private stopped: Promise<void> | undefined;
  /** The claim loop `run()` started, while it runs. */
  private loop: Promise<void> | undefined;
  /** Same-host lease holders and their liveness, where the engine can list them. */
  private holders: HolderWatch | undefined;

  constructor(
    readonly app: App<StateSchema>,
    private readonly options: WorkerOptions = {},
  ) {
    if (!isCompiledGraph(app)) throw new InvalidOptionError(`Worker: pass the app to run (what graph(State)….compile() returns), got ${app === null ? 'null' : typeof app}.`);
    // A misspelt `concurency` would run the default number of threads at once, and say nothing.
    checkOptionKeys('Worker', options, WORKER_OPTION_KEYS);
    for (const name of ['onEvent', 'onRun', 'onError'] as const) {
      if (options[name] !== undefined && typeof options[name] !== 'function') throw new InvalidOptionError(`Worker: ${name} must be a function, got ${shown(options[name])}.`);
    }
    // A worker that may run no thread (0, a negative or fractional count) would claim nothing, ever, and say nothing.
    const concurrency = options.concurrency ?? WORKER_CONCURRENCY;
    if (typeof concurrency !== 'number' || !Number.isSafeInteger(concurrency) || concurrency < 1) {
      throw new InvalidOptionError(`Worker: concurrency must be a whole number of threads run at once (1 or more), got ${shown(concurrency)}.`);
    }
    for (const name of ['leaseMs', 'pollMs'] as const) {
      const ms = options[name];
      if (ms !== undefined && (typeof ms !== 'number' || !Number.isFinite(ms) || ms <= 0)) throw new InvalidOptionError(`Worker: ${name} must be a number of milliseconds above 0, got ${shown(ms)}.`);
    }
    // A lease is stored as whole milliseconds: PostgreSQL refuses 1.5 at the first claim, not here.
    if (options.leaseMs !== undefined && !Number.isSafeInteger(options.leaseMs)) throw new InvalidOptionError(`Worker: leaseMs must be a whole number of milliseconds, got ${shown(options.leaseMs)}.`);
    this.concurrency = concurrency;
    this.leaseMs = options.leaseMs ?? app.leaseMs;
    this.pollMs = options.pollMs ?? WORKER_POLL_MS;
  }

  /** Threads being run now. */
  get running(): string[] {
    return [...this.active.keys()];
  }

  /**
   * Claims and runs threads until `stop()`. Called again while it runs, it returns the
   * same promise: a second claim loop would claim past the concurrency.
   */
  run(): Promise<void> {
    this.loop ??= this.claimLoop().finally(() => {
      this.loop = undefined;
    });
    return this.loop;
  }

  private async claimLoop(): Promise<void> {
    const cp = this.app.engine.checkpointer;
    if (!cp.capabilities.claims) {
      throw new CairnError(`the ${cp.engine} engine cannot hand threads to workers: use postgres(url) (or sqlite(file) on one machine).`);
    }
    // The first run's imports load while the worker connects and claims.
    this.app.prepareRuns();
    this.holders = cp.capabilities.leaseHolders ? new HolderWatch(cp, this.app.name) : undefined;
    // The same-host holders are listed before the first claim, so that it already takes
    // the threads of those that died (a worker started after a crash finds them at once).
    const [unsubscribe] = await Promise.all([
      cp.capabilities.wakeUps ? cp.subscribeRunnable!(() => this.wakeUp()) : undefined,
      this.holders?.refresh().catch((error: unknown) => this.options.onError?.(error)),
    ]);
    try {
      while (!this.stopping) {
        const free = this.concurrency - this.active.size;
        if (free > 0) {
          // A wake-up from here on may concern a thread this claim cannot see yet: idle() then skips its sleep.
          this.pending = false;
          let leases: ThreadLease[];
          // Dead holders' threads are taken like expired ones (the engine judges them again).
          const deadHolders = this.holders?.dead() ?? [];
          try {
            leases = await cp.claimThreads!({
              owner: { runId: randomUUID(), pid: process.pid, host: hostname() },
              leaseMs: this.leaseMs,
              limit: free,
              graph: this.app.name,
              ...(deadHolders.length ? { deadHolders } : {}),
            });
          } catch (error) {
            this.options.onError?.(error);
            await this.idle(Math.min(this.pollMs, WORKER_CLAIM_RETRY_MS));
            continue;
          }
          for (const lease of leases) this.start(lease);
          // Fewer than asked for: nothing of theirs is left that this worker can claim.
          if (leases.length < free) this.holders?.settle(deadHolders);
          if (leases.length === free) continue;
        }
        await this.idle();
      }
    } finally {
      await Promise.all([...this.active.values()].map((a) => a.done));
      await unsubscribe?.();
    }
  }

  /** Stops claiming, cancels running threads between steps and releases them; resolves once they are released. */
  stop(): Promise<void> {
    if (!this.stopped) {
      this.stopping = true;
      for (const { controller } of this.active.values()) controller.abort(new WorkerStopping());
      this.wakeUp();
      this.stopped = Promise.all([...this.active.values()].map((a) => a.done)).then(() => undefined);
    }
    return this.stopped;
  }

  private start(lease: ThreadLease): void {
    const controller = new AbortController();
    const report = (fields: Omit<WorkerRunReport, 'threadId' | 'epoch'>) => this.options.onRun?.({ threadId: lease.threadId, epoch: lease.epoch, ...fields });
    const done = this.app
      .runClaimed(lease, { signal: controller.signal, leaseMs: this.leaseMs, ...(this.options.onEvent ? { onEvent: this.options.onEvent } : {}) })
      .then(
        (result) => report({ status: result.status }),
        (error: unknown) => report({ error: (error as { code?: string }).code ?? 'ERR_THROWN', message: (error as Error).message }),
      )
      .finally(() => {
        this.active.delete(lease.threadId);
        this.wakeUp();
      });
    this.active.set(lease.threadId, { controller, done });
  }

  /** Sleeps until a wake-up, a free slot, a same-host holder's death, the earliest lease expiry, or the poll interval (or `longest`). */
  private async idle(longest = this.pollMs): Promise<void> {
    let delay = longest;
    const watching = this.holders !== undefined && !this.pending && this.active.size < this.concurrency;
    if (!this.pending && this.active.size < this.concurrency) {
      const cp = this.app.engine.checkpointer;
      const [expiry] = await Promise.all([
        cp.capabilities.leaseExpiry ? cp.nextLeaseExpiry!(this.app.name).catch(() => null) : null,
        this.holders?.refresh().catch((error: unknown) => this.options.onError?.(error)),
      ]);
      if (expiry !== null && expiry !== undefined) delay = Math.min(delay, Math.max(5, expiry - Date.now() + 5));
      // Holders that started since the last listing are seen at the next one.
      if (watching) delay = Math.min(delay, Math.max(5, this.holders!.untilRefresh()));
    }
    // A wake-up that arrived while claiming or asking for the expiry is not slept through,
    // nor is a holder that died while nobody was watching.
    if (this.pending || this.stopping || (watching && this.holders!.newDeath())) {
      this.pending = false;
      return;
    }
    let unwatch = () => undefined as void;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, delay);
      function done() {
        clearTimeout(timer);
        resolve();
      }
      this.wake = done;
      if (watching) unwatch = this.holders!.watch(done);
    });
    unwatch();
    this.wake = undefined;
  }

  private wakeUp(): void {
    if (this.wake) this.wake();
    else this.pending = true;
  }
}
