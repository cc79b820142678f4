/**
 * @module inspect/migrate-check
 * What `cairn migrate --check` reports: per schema version, how many threads have
 * their head there and how many positions are stored at it, and which threads fall
 * outside the compatibility window (they would raise SchemaTooOldError or
 * SchemaFromFutureError). Works on any Checkpointer; reads only.
 *
 * Positions of child runs (namespaces other than '') are counted too, by their own
 * schema version, in the same per-version counts: a child graph's schema has versions
 * of its own, which this report does not tell apart from the parent's, so it says how
 * many of the positions are a child run's. A thread's head is its root head.
 */
import type { Checkpointer } from '../contracts/checkpointer.js';
import type { ThreadRecord } from '../contracts/threads.js';
import { namespacePositions } from './walk.js';

/** The schema versions code can read: its current version down to the oldest an upcaster reaches. */
export interface SchemaWindow {
  currentVersion: number;
  oldestReadableVersion: number;
}

/** How many threads have their head, and how many positions are stored, at one schema version. */
export interface VersionCount {
  version: number;
  /** Threads whose head position is at this version. */
  threads: number;
  /** Positions stored at this version, over all threads and all their namespaces. */
  positions: number;
  /** Inside the window (unknown without one). */
  readable: boolean | null;
}

/** Which schema versions a database's threads are at, and which heads a given window cannot read. */
export interface MigrateCheckReport {
  window: SchemaWindow | null;
  versions: VersionCount[];
  /** Threads whose head cannot be read by the code with this window. */
  outside: { threadId: string; status: string; headVersion: number; reason: 'too-old' | 'from-the-future' }[];
  threads: number;
  /** Every position of every namespace. */
  positions: number;
  /** How many of `positions` are child runs' (namespaces other than ''), counted by their own schema versions. */
  childPositions: number;
}

/**
 * Counts every thread's positions by schema version and, given the window the code
 * reads, lists the threads whose head it cannot read (before a deploy drops an upcaster).
 *
 * @example
 * ```ts
 * const report = await migrateCheck(engine.checkpointer, { currentVersion: 3, oldestReadableVersion: 2 });
 * if (report.outside.length) console.log('unreadable after the deploy:', report.outside.map((t) => t.threadId));
 * ```
 */
export async function migrateCheck(cp: Checkpointer, window: SchemaWindow | null): Promise<MigrateCheckReport> {
  const versions = new Map<number, VersionCount>();
  const count = (version: number) => {
    let entry = versions.get(version);
    if (!entry) {
      entry = { version, threads: 0, positions: 0, readable: window ? version >= window.oldestReadableVersion && version <= window.currentVersion : null };
      versions.set(version, entry);
    }
    return entry;
  };
  const outside: MigrateCheckReport['outside'] = [];
  let threads = 0;
  let positions = 0;
  let childPositions = 0;
  for (let after: string | undefined; ; ) {
    const page = await cp.listThreads({ limit: 200, ...(after !== undefined ? { after } : {}) });
    for (const thread of page) {
      threads++;
      const counted = await countThread(cp, thread, (version) => count(version).positions++);
      positions += counted.positions;
      childPositions += counted.childPositions;
      const { headVersion } = counted;
      if (headVersion === undefined) continue;
      count(headVersion).threads++;
      if (window && headVersion < window.oldestReadableVersion) outside.push({ threadId: thread.id, status: thread.status, headVersion, reason: 'too-old' });
      if (window && headVersion > window.currentVersion) outside.push({ threadId: thread.id, status: thread.status, headVersion, reason: 'from-the-future' });
    }
    if (page.length < 200) break;
    after = page[page.length - 1]!.id;
  }
  return { window, versions: [...versions.values()].sort((a, b) => a.version - b.version), outside, threads, positions, childPositions };
}

/** Calls `counted` with the schema version of every position of every namespace of a thread; returns the totals and its root head's version. */
async function countThread(
  cp: Checkpointer,
  thread: ThreadRecord,
  counted: (version: number) => void,
): Promise<{ positions: number; childPositions: number; headVersion: number | undefined }> {
  let positions = 0;
  let childPositions = 0;
  let headVersion: number | undefined;
  for (const ns of await cp.listNamespaces(thread.id)) {
    for await (const position of namespacePositions(cp, thread.id, ns)) {
      counted(position.schemaVersion);
      positions++;
      if (ns !== '') childPositions++;
      else if (position.seq === thread.head) headVersion = position.schemaVersion;
    }
  }
  return { positions, childPositions, headVersion };
}
