/**
 * @module internal/lease
 * When may a run take a thread whose lease is held? When the lease expired, or
 * when the holder was a process on this host that no longer exists (a SIGKILLed
 * run must not block its own restart for a whole lease period).
 */
import { hostname } from 'node:os';
import type { ThreadStatus } from '../contracts/threads.js';

export interface HolderInfo {
  runId: string | null;
  pid: number | null;
  host: string | null;
  leaseUntil: number | null;
}

/** A thread as the lease rules judge it: read by an engine inside its transaction, with the engine's clock. */
export interface HeldThread {
  status: ThreadStatus;
  holder: HolderInfo;
  epoch: number;
  /** The engine's clock (ms) when the row was read: leases are set and judged by one clock. */
  now: number;
}

const thisHost = hostname();

/** True if the holder still holds the thread at `now`. */
export function holderIsLive(holder: HolderInfo, now: number): boolean {
  if (holder.runId === null || holder.leaseUntil === null) return false;
  if (holder.leaseUntil <= now) return false;
  if (holder.host === thisHost && holder.pid !== null && holder.pid !== process.pid) return processExists(holder.pid);
  return true;
}

/**
 * True only when `owner` provably died: a process of this host, not this one, that no
 * longer exists. Another host's holder, or a pid that exists (even reused by an
 * unrelated process), is never judged dead: its lease must expire instead.
 */
export function holderIsDead(owner: { pid: number | null; host: string | null }): boolean {
  return owner.host === thisHost && owner.pid !== null && owner.pid !== process.pid && !processExists(owner.pid);
}

/** This machine's host name, as lease owners record it. */
export function leaseHost(): string {
  return thisHost;
}

function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Human-readable holder, for ThreadBusyError. */
export function describeHolder(holder: HolderInfo): string {
  return `run ${holder.runId} pid ${holder.pid} on ${holder.host}`;
}
