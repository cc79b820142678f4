/**
 * @module inspect/migrate-check
 * What `cairn migrate --check` reports: per schema version, how many threads have
 * their head there and how many positions are stored at it, and which threads fall
 * outside the compatibility window (they would raise SchemaTooOldError or
 * SchemaFromFutureError). Works on any Checkpointer; reads only.
 */
import type { Checkpointer } from '../contracts/checkpointer.js';

export interface SchemaWindow {
  currentVersion: number;
  oldestReadableVersion: number;
}

export interface VersionCount {
  version: number;
  /** Threads whose head position is at this version. */
  threads: number;
  /** Positions stored at this version, over all threads. */
  positions: number;
  /** Inside the window (unknown without one). */
  readable: boolean | null;
}

export interface MigrateCheckReport {
  window: SchemaWindow | null;
  versions: VersionCount[];
  /** Threads whose head cannot be read by the code with this window. */
  outside: { threadId: string; status: string; headVersion: number; reason: 'too-old' | 'from-the-future' }[];
  threads: number;
  positions: number;
}

/** Counts every thread's positions by schema version. */
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
  for (let after: string | undefined; ; ) {
    const page = await cp.listThreads({ limit: 200, ...(after !== undefined ? { after } : {}) });
    for (const thread of page) {
      threads++;
      let headVersion: number | undefined;
      for (let beforeSeq: number | undefined; ; ) {
        const batch = await cp.listPositions(thread.id, '', { limit: 500, ...(beforeSeq !== undefined ? { beforeSeq } : {}) });
        for (const position of batch) {
          count(position.schemaVersion).positions++;
          positions++;
          if (position.seq === thread.head) headVersion = position.schemaVersion;
        }
        if (batch.length < 500) break;
        beforeSeq = batch[batch.length - 1]!.seq;
      }
      if (headVersion === undefined) continue;
      count(headVersion).threads++;
      if (window && headVersion < window.oldestReadableVersion) outside.push({ threadId: thread.id, status: thread.status, headVersion, reason: 'too-old' });
      if (window && headVersion > window.currentVersion) outside.push({ threadId: thread.id, status: thread.status, headVersion, reason: 'from-the-future' });
    }
    if (page.length < 200) break;
    after = page[page.length - 1]!.id;
  }
  return { window, versions: [...versions.values()].sort((a, b) => a.version - b.version), outside, threads, positions };
}
