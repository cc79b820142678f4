/**
 * @module inspect/transfer
 * Moving threads between engines (SQLite → PostgreSQL, or back) with their whole
 * history: every position as stored (bodies and hashes byte for byte, so the hash
 * chain verifies on the other side), items, snapshots, pending writes, failures,
 * and the ledger (intents, outcomes, recorded outputs), of every namespace (the
 * root graph's and every child run's). The stream is JSON lines (`cairn export`
 * writes it, `cairn import` reads it). Store data is not per-thread and is not part
 * of it.
 *
 * Format versions: 1 held the root namespace only; 2 holds every namespace, each in
 * seq order, the root's first. Import reads both: a position or pending write without
 * `ns` belongs to the root. An importer that knows only version 1 refuses a version 2
 * stream at its header, rather than mis-chaining a child's positions onto the root's
 * and leaving a half-imported thread.
 */
import type { Checkpointer, PositionItem, StoredPosition, AttemptFailure, PendingWrite } from '../contracts/checkpointer.js';
import type { Engine } from '../contracts/engine.js';
import type { LedgerEntry } from '../contracts/ledger.js';
import type { ThreadRecord } from '../contracts/threads.js';
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import { decode } from '../codec/tagged-json.js';
import { CairnError, ThreadNotFoundError } from '../errors.js';
import { appendedFields, type PositionBody } from '../runtime/position.js';
import { describePosition, namespacePositions } from './walk.js';

/** The format version `exportThreads` writes. */
export const TRANSFER_FORMAT_VERSION = 2;
/** The format versions `importThreads` reads. */
const READABLE_VERSIONS: readonly number[] = [1, TRANSFER_FORMAT_VERSION];

export type TransferRecord =
  | { type: 'header'; format: 'cairn-threads'; version: 1 | 2; exportedAt: number; engine: string }
  | { type: 'thread'; thread: ThreadRecord }
  | { type: 'position'; threadId: string; position: StoredPosition; items: PositionItem[]; snapshot: string | null }
  | { type: 'pending'; threadId: string; write: PendingWrite }
  | { type: 'failure'; threadId: string; failure: AttemptFailure }
  | { type: 'ledger'; threadId: string; entry: LedgerEntry }
  | { type: 'end'; threads: number; positions: number };

/**
 * Every record of the given threads, in an order `importThreads` can replay. Throws
 * ThreadNotFoundError, before the first record, if one of them does not exist.
 */
export async function* exportThreads(engine: Engine, threadIds: string[]): AsyncGenerator<TransferRecord> {
  const cp = engine.checkpointer;
  for (const threadId of threadIds) if (!(await cp.getThread(threadId))) throw new ThreadNotFoundError(threadId, { engine: engine.name });
  yield { type: 'header', format: 'cairn-threads', version: TRANSFER_FORMAT_VERSION, exportedAt: Date.now(), engine: engine.name };
  let positions = 0;
  for (const threadId of threadIds) {
    const thread = await cp.getThread(threadId);
    if (!thread) throw new ThreadNotFoundError(threadId, { engine: engine.name });
    yield { type: 'thread', thread };
    // The root first ('' sorts first), then each child run's namespace, each in seq order: import replays them in this order.
    for (const ns of await cp.listNamespaces(threadId)) {
      for await (const position of namespacePositions(cp, threadId, ns)) {
        yield* positionRecords(cp, threadId, position);
        positions++;
      }
    }
    for (const failure of await cp.listFailures(threadId)) yield { type: 'failure', threadId, failure };
    for (const entry of await engine.ledger.list(threadId)) yield { type: 'ledger', threadId, entry };
  }
  yield { type: 'end', threads: threadIds.length, positions };
}

/** A position as exported (with its items and snapshot), then the pending writes of the superstep that starts from it. */
async function* positionRecords(cp: Checkpointer, threadId: string, position: StoredPosition): AsyncGenerator<TransferRecord> {
  const { ns, seq } = position;
  const body = decode<PositionBody>(position.body, describePosition(ns, seq));
  const fields = appendedFields(body);
  const items = fields.length ? await cp.getPositionItems(threadId, ns, seq, fields) : [];
  const snapshot = await cp.getSnapshot(threadId, ns, [{ from: seq, to: seq }]);
  yield { type: 'position', threadId, position, items, snapshot: snapshot?.text ?? null };
  for (const write of await cp.getPendingWrites(threadId, ns, seq)) yield { type: 'pending', threadId, write };
}

export interface ImportReport {
  threads: string[];
  positions: number;
  ledgerEntries: number;
}

/**
 * Writes exported threads into `engine`. A thread that already exists there is
 * refused (nothing of it is written). Positions are committed in seq order with
 * their stored bodies and hashes, so `verify` passes on the target as on the source.
 */
export async function importThreads(engine: Engine, records: AsyncIterable<TransferRecord> | Iterable<TransferRecord>): Promise<ImportReport> {
  const cp = engine.checkpointer;
  const report: ImportReport = { threads: [], positions: 0, ledgerEntries: 0 };
  /** The thread being imported, and the seq last imported into each of its namespaces (each namespace is a chain with its own head). */
  let current: { thread: ThreadRecord; lease: Awaited<ReturnType<Checkpointer['acquireThread']>>; heads: Map<string, number> } | undefined;

  const finish = async () => {
    if (!current) return;
    const { thread, lease } = current;
    await cp.updateThread(lease, { status: thread.status, attempts: thread.attempts - lease.thread.attempts, lastError: thread.lastError });
    await cp.releaseThread(lease);
    current = undefined;
  };

  for await (const record of records) {
    switch (record.type) {
      case 'header':
        if (record.format !== 'cairn-threads' || !READABLE_VERSIONS.includes(record.version)) {
          throw new CairnError(`not a cairn thread export this version reads (format ${record.format} v${record.version}; reads v${READABLE_VERSIONS.join(', v')}).`);
        }
        break;
      case 'thread': {
        await finish();
        const { thread } = record;
        if (await cp.getThread(thread.id)) throw new CairnError(`thread ${thread.id} already exists in the ${engine.name} engine: import refuses to merge histories.`);
        const lease = await cp.acquireThread(thread.id, {
          owner: { runId: randomUUID(), pid: process.pid, host: hostname() },
          leaseMs: 5 * 60_000,
          create: { kind: thread.kind, tenant: thread.tenant, metadata: thread.metadata },
        });
        current = { thread, lease, heads: new Map() };
        report.threads.push(thread.id);
        break;
      }
      case 'position': {
        if (!current || current.thread.id !== record.threadId) throw new CairnError(`position of thread ${record.threadId} before its thread record.`);
        // A version 1 export may carry no ns: its positions are the root's.
        const position = { ...record.position, ns: record.position.ns ?? '' };
        // Only root commits set the thread's status; the root head's carries the exported one.
        const isHead = position.ns === '' && position.seq === current.thread.head;
        await cp.commitStep(current.lease, {
          position,
          items: record.items,
          ...(record.snapshot !== null ? { snapshot: record.snapshot } : {}),
          status: isHead ? current.thread.status : 'running',
          expectedHead: current.heads.get(position.ns) ?? null,
        });
        current.heads.set(position.ns, position.seq);
        report.positions++;
        break;
      }
      case 'pending':
        await cp.putPendingWrite(current!.lease, { ...record.write, ns: record.write.ns ?? '' });
        break;
      case 'failure':
        await cp.updateThread(current!.lease, { failure: record.failure });
        break;
      case 'ledger': {
        const { entry } = record;
        const base = { threadId: entry.threadId, key: entry.key, kind: entry.kind, name: entry.name, ns: entry.ns, seq: entry.seq, node: entry.node, task: entry.task, call: entry.call, argsDigest: entry.argsDigest, createdAt: entry.createdAt };
        if (entry.kind === 'record') await engine.ledger.writeRecord({ ...base, outcome: entry.outcome ?? 'null' });
        else {
          await engine.ledger.writeIntent(base);
          if (entry.status === 'done' && entry.outcome !== null) await engine.ledger.writeOutcome(entry.threadId, entry.key, entry.outcome, entry.completedAt ?? entry.createdAt);
        }
        report.ledgerEntries++;
        break;
      }
      case 'end':
        break;
    }
  }
  await finish();
  return report;
}
