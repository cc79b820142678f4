/**
 * @module inspect/retention
 * `applyRetention`: one policy for everything cairn keeps, applied in an order that
 * never leaves a kept thread with a dangling ref:
 * 1. **threads** (`threads` rules: status, tenant, not updated for `olderThanMs`) are
 *    deleted with everything under them (`Checkpointer.deleteThread`: positions, items,
 *    snapshots, ledger, signals, child namespaces, pins);
 * 2. **positions** (`positions` rules) of long threads are compacted
 *    (`inspect/compact`): the positions older than the cut go with their ledger entries,
 *    the newest snapshot at or before the cut stays as the base the thread record
 *    anchors, so `verify` still proves what is kept;
 * 3. **store** rows (`store` rules: namespace prefix, age) are deleted;
 * 4. **artifacts** are collected last (`collectArtifacts`, with the `artifacts` rules):
 *    what the deleted threads and compacted positions alone referred to is garbage
 *    now; what any kept row refers to is kept.
 * Threads and compactions take the thread's lease (never a live run's: a held thread
 * is skipped and reported), so no run writes while rows go. A dry run reads the same
 * rows, counts what would go (rows and characters) and removes nothing; its report is
 * the real run's.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { ArtifactStore } from '../contracts/artifact-store.js';
import type { Checkpointer, CompactionResult } from '../contracts/checkpointer.js';
import type { Ledger } from '../contracts/ledger.js';
import type { Store } from '../contracts/store.js';
import type { ThreadRecord } from '../contracts/threads.js';
import { LEASE_MS } from '../defaults.js';
import { InvalidOptionError, NotSupportedError, ThreadBusyError } from '../errors.js';
import { isGraphNamespace } from '../internal/graphs.js';
import { collectArtifactsAfter, durationOption, oneOf, ruleAge, threadRuleMatches, type GcReport, type PlannedRemovals, type PositionRetentionRule, type RetentionPolicy } from './gc.js';
import { compactNamespace, cutByAge, planCompaction, type CompactionPlan } from './compact.js';

/** Which retention step is under way, and how far it got (`total` when known). */
export interface RetentionProgress {
  phase: 'threads' | 'positions' | 'store' | 'artifacts';
  done: number;
  total?: number;
}

/** What {@link applyRetention} works on, and how. */
export interface RetentionOptions {
  checkpointer: Checkpointer;
  ledger?: Ledger;
  store?: Store;
  /** The unscoped artifact store; without it no artifact is collected. */
  artifacts?: ArtifactStore;
  policy: RetentionPolicy;
  /** Report what would go, remove nothing. */
  dryRun?: boolean;
  /** Artifacts written or refreshed less than this many ms ago are kept (default 24 h: see `collectArtifacts`). */
  graceMs?: number;
  /** Time the ages are measured from; default `Date.now()`. */
  now?: number;
  onProgress?: (progress: RetentionProgress) => void;
}

/** Rows removed (or, dry run, to be), by kind, and the characters they held. */
export interface RetentionRows {
  positions: number;
  items: number;
  snapshots: number;
  ledgerEntries: number;
  signals: number;
  namespaces: number;
  bytes: number;
}

/** One thread left as it was, and why. */
export interface RetentionSkip {
  thread: string;
  reason: 'busy' | 'changed' | 'nothing-to-cut' | 'no-snapshot' | 'legacy-snapshot' | 'not-supported';
}

/** What {@link applyRetention} removed (or, dry run, would), per kind. */
export interface RetentionReport {
  dryRun: boolean;
  threads: { deleted: string[]; skipped: RetentionSkip[]; rows: RetentionRows };
  positions: { compacted: { thread: string; ns: string; base: number; rows: RetentionRows }[]; skipped: RetentionSkip[]; rows: RetentionRows };
  store: { items: number; bytes: number };
  /** Null when no artifact store was given. */
  artifacts: { count: number; bytes: number; gc: GcReport } | null;
}

const PAGE = 200;

function noRows(): RetentionRows {
  return { positions: 0, items: 0, snapshots: 0, ledgerEntries: 0, signals: 0, namespaces: 0, bytes: 0 };
}

function addRows(into: RetentionRows, rows: RetentionRows): void {
  for (const key of Object.keys(into) as (keyof RetentionRows)[]) into[key] += rows[key];
}

/**
 * Applies a retention policy (see the module documentation for the order and why).
 * InvalidOptionError for a malformed rule (a positions rule without `olderThanMs` or
 * `keepLast`, a store rule without a namespace).
 *
 * @example
 * ```ts
 * const DAY = 86_400_000;
 * const report = await applyRetention({
 *   checkpointer: engine.checkpointer, ledger: engine.ledger, store: engine.store, artifacts,
 *   policy: { threads: [{ status: 'completed', olderThanMs: 90 * DAY }], positions: [{ keepLast: 200 }] },
 *   dryRun: true,
 * });
 * console.log(report.threads.deleted.length, report.positions.rows.positions);
 * ```
 */
export async function applyRetention(options: RetentionOptions): Promise<RetentionReport> {
  const { checkpointer: cp, ledger, store, policy } = options;
  const dryRun = options.dryRun === true;
  const now = options.now ?? Date.now();
  const threadRules = (policy.threads ?? []).map((r) => ({ ...r, ms: ruleAge(r) }));
  const positionRules = (policy.positions ?? []).map(checkPositionRule);
  const storeRules = (policy.store ?? []).map((r) => {
    if (!Array.isArray(r.namespace) || r.namespace.some((part) => typeof part !== 'string')) throw new InvalidOptionError(`a store retention rule needs namespace: a list of strings (a prefix), got ${JSON.stringify(r.namespace)}.`);
    return { namespace: r.namespace, ms: ruleAge(r) };
  });
  const report: RetentionReport = {
    dryRun,
    threads: { deleted: [], skipped: [], rows: noRows() },
    positions: { compacted: [], skipped: [], rows: noRows() },
    store: { items: 0, bytes: 0 },
    artifacts: null,
  };
  const planned: PlannedRemovals = { threads: new Set(), compactions: new Map() };

  // ---------------------------------------------------------------- threads, then positions
  const threads: ThreadRecord[] = [];
  for (let after: string | undefined; ; ) {
    const page = await cp.listThreads({ limit: PAGE, ...(after !== undefined ? { after } : {}) });
    threads.push(...page);
    if (page.length < PAGE) break;
    after = page[page.length - 1]!.id;
  }
  const retiring = threads.filter((t) => threadRules.some((rule) => threadRuleMatches(rule, t, now)));
  let done = 0;
  for (const listed of retiring) {
    const rows = await threadFootprint(cp, ledger, listed.id);
    if (dryRun) {
      report.threads.deleted.push(listed.id);
      addRows(report.threads.rows, rows);
      planned.threads.add(listed.id);
    } else {
      const outcome = await retire(cp, listed, threadRules, now);
      if (outcome === true) {
        report.threads.deleted.push(listed.id);
        addRows(report.threads.rows, rows);
      } else report.threads.skipped.push({ thread: listed.id, reason: outcome });
    }
    options.onProgress?.({ phase: 'threads', done: ++done, total: retiring.length });
  }

  const retired = new Set(report.threads.deleted);
  const compacting = threads.filter((t) => !retired.has(t.id) && t.head !== null && positionRules.some((rule) => positionRuleMatches(rule, t)));
  done = 0;
  for (const thread of compacting) {
    const rule = positionRules.find((r) => positionRuleMatches(r, thread))!;
    const outcome = await compactThreadByRule(cp, ledger, thread, rule, now, dryRun);
    if ('reason' in outcome) report.positions.skipped.push({ thread: thread.id, reason: outcome.reason });
    else {
      const rows: RetentionRows = { ...noRows(), ...pick(outcome.result), bytes: outcome.plan.bytes };
      report.positions.compacted.push({ thread: thread.id, ns: outcome.plan.ns, base: outcome.plan.base.seq, rows });
      addRows(report.positions.rows, rows);
      if (dryRun) {
        const dropped = new Set(outcome.plan.request.drop ?? []);
        const base = outcome.plan.base.seq;
        planned.compactions.set(thread.id, [
          {
            ns: outcome.plan.ns,
            goes: (seq) => seq < base || dropped.has(seq),
            dropNamespaces: outcome.plan.request.dropNamespaces ?? [],
            ledger: outcome.plan.request.ledger === true,
            snapshot: outcome.plan.request.snapshot,
          },
        ]);
      }
    }
    options.onProgress?.({ phase: 'positions', done: ++done, total: compacting.length });
  }

  // ---------------------------------------------------------------- store rows
  if (store && storeRules.length) {
    done = 0;
    for (const rule of storeRules) {
      const victims: { namespace: string[]; key: string; bytes: number }[] = [];
      for (let cursor: string | null | undefined; ; ) {
        const page = await store.search(rule.namespace, { limit: 500, ...(cursor ? { cursor } : {}) });
        for (const item of page.items) {
          // cairn's own bookkeeping (graph descriptions, artifact pins) is not a retention subject.
          if (isGraphNamespace(item.namespace) || (item.namespace[0] === 'cairn' && item.namespace[1] === 'artifact-pins')) continue;
          if (item.updatedAt < now - rule.ms) victims.push({ namespace: item.namespace, key: item.key, bytes: JSON.stringify(item.value ?? null).length });
        }
        if (!page.cursor) break;
        cursor = page.cursor;
      }
      for (const victim of victims) {
        if (dryRun || (await store.delete(victim.namespace, victim.key))) {
          report.store.items++;
          report.store.bytes += victim.bytes;
        }
        options.onProgress?.({ phase: 'store', done: ++done });
      }
    }
  }

  // ---------------------------------------------------------------- artifacts, last
  if (options.artifacts) {
    const gc = await collectArtifactsAfter(
      {
        checkpointer: cp,
        artifacts: options.artifacts,
        ...(store ? { store } : {}),
        ...(ledger ? { ledger } : {}),
        retention: { artifacts: policy.artifacts ?? [] },
        ...(options.graceMs !== undefined ? { graceMs: options.graceMs } : {}),
        dryRun,
        onProgress: (p) => {
          if (p.phase === 'sweep') options.onProgress?.({ phase: 'artifacts', done: p.scanned, ...(p.total !== undefined ? { total: p.total } : {}) });
        },
      },
      dryRun ? planned : undefined,
    );
    report.artifacts = { count: gc.victims.length, bytes: gc.bytes, gc };
  }
  return report;
}

/** The rows a thread holds (what deleting it removes), counted from the contracts, and their characters. */
async function threadFootprint(cp: Checkpointer, ledger: Ledger | undefined, threadId: string): Promise<RetentionRows> {
  const rows = noRows();
  for (const ns of await cp.listNamespaces(threadId)) {
    rows.namespaces++;
    const [newest] = await cp.listPositions(threadId, ns, { limit: 1 });
    if (!newest) continue;
    for (let from = 0; from <= newest.seq; from += 500) {
      const range = { from, to: Math.min(newest.seq, from + 499) };
      const [positions, items, snapshots] = await Promise.all([cp.getPositions(threadId, ns, range), cp.getRangeItems(threadId, ns, range), cp.getSnapshots(threadId, ns, range)]);
      rows.positions += positions.length;
      rows.items += items.length;
      rows.snapshots += snapshots.length;
      rows.bytes += positions.reduce((n, p) => n + p.body.length, 0) + items.reduce((n, i) => n + i.text.length, 0) + snapshots.reduce((n, s) => n + s.text.length, 0);
    }
  }
  if (ledger) {
    for (const entry of await ledger.list(threadId)) {
      rows.ledgerEntries++;
      rows.bytes += entry.outcome?.length ?? 0;
    }
  }
  for (const signal of await cp.listSignals(threadId)) {
    rows.signals++;
    rows.bytes += signal.payload.length;
  }
  return rows;
}

/** Deletes a thread a rule matched, read again first (it may have been resumed since it was listed). */
async function retire(cp: Checkpointer, listed: ThreadRecord, rules: Parameters<typeof threadRuleMatches>[0][], now: number): Promise<true | 'busy' | 'changed'> {
  const thread = await cp.getThread(listed.id);
  if (!thread || !rules.some((rule) => threadRuleMatches(rule, thread, now))) return 'changed';
  try {
    return (await cp.deleteThread(thread.id, { ifStatus: thread.status })).deleted ? true : 'changed';
  } catch (error) {
    if (ThreadBusyError.is(error)) return 'busy';
    throw error;
  }
}

type CheckedPositionRule = PositionRetentionRule & { ms?: number };

function checkPositionRule(rule: PositionRetentionRule): CheckedPositionRule {
  const { keepLast } = rule;
  const olderThanMs = durationOption('olderThanMs', rule.olderThanMs, rule.olderThan);
  if (olderThanMs === undefined && keepLast === undefined) throw new InvalidOptionError(`a positions retention rule needs olderThanMs or keepLast (or both), got ${JSON.stringify(rule)}.`);
  if (keepLast !== undefined && (!Number.isSafeInteger(keepLast) || keepLast < 1)) throw new InvalidOptionError(`keepLast must be a whole number of positions (1 or more), got ${JSON.stringify(keepLast)}.`);
  return { ...rule, ...(olderThanMs !== undefined ? { ms: olderThanMs } : {}) };
}

function positionRuleMatches(rule: CheckedPositionRule, thread: ThreadRecord): boolean {
  return oneOf(thread.status, rule.status) && (rule.tenant === undefined || (thread.tenant !== null && oneOf(thread.tenant, rule.tenant)));
}

/**
 * Compacts a thread's root namespace by a rule, under the thread's lease (a live run's
 * lease is never taken: the thread is skipped). The plan is made under the lease, so
 * nothing moves between the plan and the compaction.
 */
async function compactThreadByRule(
  cp: Checkpointer,
  ledger: Ledger | undefined,
  thread: ThreadRecord,
  rule: CheckedPositionRule,
  now: number,
  dryRun: boolean,
): Promise<{ reason: RetentionSkip['reason'] } | { plan: CompactionPlan; result: CompactionResult }> {
  if (!dryRun && !cp.compactThread) return { reason: 'not-supported' };
  const plan = async () => {
    const head = await cp.getHead(thread.id, '');
    if (!head) return { reason: 'nothing-to-cut' } as const;
    const maxSeq = head.seq - (rule.keepLast ?? 0);
    const cut = rule.ms === undefined ? maxSeq : await cutByAge(cp, thread.id, '', head, now - rule.ms, maxSeq);
    if (cut === null || cut <= 0) return { reason: 'nothing-to-cut' } as const;
    const planned = await planCompaction(cp, ledger, thread.id, '', cut, { ledger: rule.ledger !== false });
    return 'skipped' in planned ? ({ reason: planned.skipped } as const) : planned;
  };
  if (dryRun) {
    const planned = await plan();
    return 'reason' in planned ? planned : { plan: planned, result: planned.removes };
  }
  const lease = await cp
    .acquireThread(thread.id, { owner: { runId: `retention:${randomUUID()}`, pid: process.pid, host: hostname() }, leaseMs: LEASE_MS })
    .catch((error: unknown) => {
      if (ThreadBusyError.is(error)) return null;
      throw error;
    });
  if (!lease) return { reason: 'busy' };
  try {
    const planned = await plan();
    if ('reason' in planned) return planned;
    try {
      return { plan: planned, result: await compactNamespace(cp, lease, planned) };
    } catch (error) {
      if (NotSupportedError.is(error)) return { reason: 'not-supported' };
      throw error;
    }
  } finally {
    await cp.releaseThread(lease);
  }
}

function pick(result: CompactionResult): Pick<RetentionRows, 'positions' | 'items' | 'snapshots' | 'ledgerEntries' | 'namespaces'> {
  return { positions: result.positions, items: result.items, snapshots: result.snapshots, ledgerEntries: result.ledgerEntries, namespaces: result.namespaces };
}
