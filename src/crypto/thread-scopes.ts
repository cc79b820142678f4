/**
 * @module crypto/thread-scopes
 * Which scope a thread's rows are sealed for (`threadScope(tenant, id)`), looked up
 * once per thread: from the lease a write holds (its thread record names the tenant),
 * else from the thread record. A thread's tenant never changes while it exists, so
 * the answer is cached; deleting the thread through the engine forgets it.
 */
import type { Checkpointer } from '../contracts/checkpointer.js';
import type { ThreadLease } from '../contracts/threads.js';
import { ThreadNotFoundError } from '../errors.js';
import { checkThreadId } from '../internal/keys.js';
import { threadScope } from './scopes.js';

/** Threads remembered at most (a worker touches many; the cache is only a shortcut). */
const MAX_CACHED = 10_000;

export class ThreadScopes {
  private readonly known = new Map<string, string>();

  constructor(private readonly inner: Checkpointer) {}

  /** The scope of the thread `lease` holds. */
  ofLease(lease: ThreadLease): string {
    const cached = this.known.get(lease.threadId);
    if (cached !== undefined) return cached;
    return this.remember(lease.threadId, threadScope(lease.thread.tenant, lease.threadId));
  }

  /** The scope of `threadId`; ThreadNotFoundError when there is no such thread. */
  async of(threadId: string): Promise<string> {
    const cached = this.known.get(threadId);
    if (cached !== undefined) return cached;
    // A malformed id is the caller's error (InvalidKeyError), as the engine would report it.
    checkThreadId(threadId);
    const thread = await this.inner.getThread(threadId);
    if (!thread) throw new ThreadNotFoundError(threadId, { engine: this.inner.engine });
    return this.remember(threadId, threadScope(thread.tenant, threadId));
  }

  /** Learns a thread's scope from its record. */
  learn(threadId: string, tenant: string | null): void {
    if (!this.known.has(threadId)) this.remember(threadId, threadScope(tenant, threadId));
  }

  forget(threadId: string): void {
    this.known.delete(threadId);
  }

  private remember(threadId: string, scope: string): string {
    if (this.known.size >= MAX_CACHED) this.known.clear();
    this.known.set(threadId, scope);
    return scope;
  }
}
