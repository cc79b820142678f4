/**
 * @module runtime/rewrite-snapshots
 * `cairn migrate --rewrite-snapshots`: for threads still in progress whose head was
 * written under an older schema version, store a fresh snapshot of the head at the
 * current version (the upcast state, append items included), so that loading them
 * no longer runs the upcasters. Stored positions are never touched: a snapshot is
 * derived data beside the chain. Explicit and optional: reading old threads works
 * without it.
 */
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import type { Engine } from '../contracts/engine.js';
import type { ThreadStatus } from '../contracts/threads.js';
import { GENESIS_HASH, ItemChecksum } from '../codec/hash.js';
import { encode } from '../codec/tagged-json.js';
import { LEASE_MS } from '../defaults.js';
import type { StateSchema } from '../state/schema.js';
import { materialize, type SnapshotBody } from './materialize.js';
import { SNAPSHOT_FORMAT, sealSnapshot } from './position.js';

/** What {@link rewriteSnapshots} rewrote and what it left (and why). */
export interface RewriteReport {
  rewritten: { threadId: string; seq: number; fromVersion: number; toVersion: number }[];
  skipped: { threadId: string; reason: string }[];
}

const ACTIVE: ReadonlySet<ThreadStatus> = new Set(['running', 'interrupted', 'waiting', 'failed', 'needs_attention']);

/**
 * Rewrites the head snapshot of every active thread stored below the schema's version,
 * upcast to it, so later loads start from the current version (old positions stay as
 * they are: the chain is never rewritten).
 *
 * @example
 * ```ts
 * const report = await rewriteSnapshots(engine, State);
 * console.log(report.rewritten.length, 'snapshots rewritten;', report.skipped);
 * ```
 */
export async function rewriteSnapshots(engine: Engine, schema: StateSchema, options: { leaseMs?: number } = {}): Promise<RewriteReport> {
  const cp = engine.checkpointer;
  const report: RewriteReport = { rewritten: [], skipped: [] };
  for (let after: string | undefined; ; ) {
    const page = await cp.listThreads({ limit: 200, ...(after !== undefined ? { after } : {}) });
    for (const thread of page) {
      if (thread.head === null) continue;
      if (!ACTIVE.has(thread.status)) {
        report.skipped.push({ threadId: thread.id, reason: `${thread.status}: not active` });
        continue;
      }
      const lease = await cp
        .acquireThread(thread.id, { owner: { runId: randomUUID(), pid: process.pid, host: hostname() }, leaseMs: options.leaseMs ?? LEASE_MS })
        .catch((error: unknown) => error as Error);
      if (lease instanceof Error) {
        report.skipped.push({ threadId: thread.id, reason: `busy: ${lease.message}` });
        continue;
      }
      try {
        const head = lease.thread.head!;
        const loaded = await materialize(cp, schema, thread.id, '', head);
        if (loaded.storedVersion === schema.version) {
          report.skipped.push({ threadId: thread.id, reason: `already at version ${schema.version}` });
          continue;
        }
        const parent = loaded.position.parent === null ? null : await cp.getPosition(thread.id, '', loaded.position.parent);
        const body: SnapshotBody = {
          format: SNAPSHOT_FORMAT,
          schemaVersion: schema.version,
          position: loaded.position.hash,
          parent: parent?.hash ?? GENESIS_HASH,
          fields: schema.fieldTable(),
          values: {},
          appends: {},
        };
        // Every item is held inline: none comes from the log below the snapshot.
        const none = ItemChecksum.of([]).value();
        for (const name of schema.fieldNames) {
          const value = loaded.state[name];
          if (schema.appendFields.has(name)) body.appends[name] = { since: head, count: (value as unknown[]).length, checksum: none, inline: value as unknown[] };
          else body.values[name] = value;
        }
        await cp.putSnapshot(lease, { ns: '', seq: head, text: sealSnapshot(encode(body, 'snapshot')) });
        report.rewritten.push({ threadId: thread.id, seq: head, fromVersion: loaded.storedVersion, toVersion: schema.version });
      } finally {
        await cp.releaseThread(lease);
      }
    }
    if (page.length < 200) break;
    after = page[page.length - 1]!.id;
  }
  return report;
}
