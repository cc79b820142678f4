/**
 * @module inspect/retention
 * `applyRetention`: one policy for everything cairn keeps, applied in an order that
 * never leaves a kept thread with a dangling ref:
 * 1. **threads** (`threads` rules: status, tenant, not updated for `olderThanMs`) are
 *    deleted with everything under them (`Checkpointer.deleteThread`: positions, items,
 *    snapshots, ledger, signals, child namespaces, pins);
 * 2. **positions** (`positions` rules) of long threads are compacted
 *    (`inspect/compact`), every namespace on its own (the root's and each child run's):
 *    the positions older than the cut go with their ledger entries, the newest snapshot
 *    at or before the cut stays as the base the namespace's anchor names, so `verify`
 *    still proves what is kept. **Ledger** rows (`ledger` rules) older than an age go
 *    the same way: a namespace holding one is cut past that row's step, so no kept
 *    position ever names a removed row (one compaction per namespace, at the further
 *    of the two cuts: see `inspect/retention-compaction`);
 * 3. **store** rows (`store` rules: namespace prefix, age) are deleted;
 * 4. **artifacts** are collected last (`collectArtifacts`, with the `artifacts` rules):
 *    what the deleted threads and compacted positions alone referred to is garbage
 *    now; what any kept row refers to is kept.
 * Threads and compactions take the thread's lease (never a live run's: a held thread
 * is skipped and reported), so no run writes while rows go. A dry run reads the same
 * rows, counts what would go (rows and characters) and removes nothing; its report is
 * the real run's.
 */
import type { ArtifactStore } from '../contracts/artifact-store.js';
import type { Checkpointer, CompactionResult } from '../contracts/checkpointer.js';
import type { Ledger } from '../contracts/ledger.js';
import type { Store } from '../contracts/store.js';
import type { ThreadRecord } from '../contracts/threads.js';
import { encode } from '../codec/tagged-json.js';
import { InvalidOptionError, ThreadBusyError, VersionConflictError } from '../errors.js';
import { isGraphNamespace } from '../internal/graphs.js';
import { checkRetentionPolicy, checkStoresOption, collectArtifactsAfter, dryRunOption, durationOption, nowOption, oneOf, ruleAge, storeItemId, threadRuleMatches, type GcReport, type PlannedRemovals, type PositionRetentionRule, type RetentionPolicy } from './gc.js';
import { compactThreadByRules, type CheckedPositionRule, type CompactionRules, type ThreadCompaction } from './retention-compaction.js';

/** Which retention step is under way, and how far it got (`total` when known). `positions` covers the compactions of `positions` and `ledger` rules, a thread at a time. */
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

/** Every option {@link applyRetention} takes: another key (a misspelt `dryrun`) is refused, not ignored (it would remove for real). */
const RETENTION_KEYS = ['checkpointer', 'ledger', 'store', 'artifacts', 'policy', 'dryRun', 'graceMs', 'now', 'onProgress'];

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

/** One thread (or, with `ns`, one child namespace of it) left as it was, and why. */
export interface RetentionSkip {
  thread: string;
  /** A child run's namespace; absent for the thread (its root namespace, or all of it: `busy`, `not-supported`). */
  ns?: string;
  reason: 'busy' | 'changed' | 'nothing-to-cut' | 'no-snapshot' | 'legacy-snapshot' | 'not-supported';
}

/** One namespace compacted: the positions below `base` (and branches not descending from it) went, with `rows`. */
export interface RetentionCompaction {
  thread: string;
  /** '' for the root graph, a child run's (`research:0@4`) otherwise. */
  ns: string;
  base: number;
  rows: RetentionRows;
}

/** What {@link applyRetention} removed (or, dry run, would), per kind. */
export interface RetentionReport {
  dryRun: boolean;
  threads: { deleted: string[]; skipped: RetentionSkip[]; rows: RetentionRows };
  /** Namespaces compacted where a `positions` rule set the cut. */
  positions: { compacted: RetentionCompaction[]; skipped: RetentionSkip[]; rows: RetentionRows };
  /**
   * Namespaces compacted where a `ledger` rule set the cut (further than any positions
   * rule would): the old ledger rows went with the steps they belong to. `kept`: rows
   * older than a ledger rule's age that stay, because a kept position binds them or a
   * step still to run (from the head, or a suspended one) reads them.
   */
  ledger: { compacted: RetentionCompaction[]; skipped: RetentionSkip[]; rows: RetentionRows; kept: number };
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
 * The whole policy is checked first ({@link checkRetentionPolicy}): InvalidOptionError,
 * with nothing removed, for an unknown key, a status that is not a ThreadStatus, a
 * malformed age or count, a positions rule without `olderThanMs` or `keepLast`, a rule
 * of another kind without an age, a store rule without a namespace, or a ledger rule
 * without `options.ledger`.
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
  checkStoresOption('applyRetention', options, RETENTION_KEYS);
  const { checkpointer: cp, ledger, store } = options;
  // Whole, before anything runs: a misspelt key or status would make its rule match nothing.
  const policy = checkRetentionPolicy(options.policy);
  const dryRun = dryRunOption('applyRetention', options.dryRun);
  const now = nowOption('applyRetention', options.now);
  const threadRules = (policy.threads ?? []).map((r) => ({ ...r, ms: ruleAge(r) }));
  const positionRules = (policy.positions ?? []).map(checkPositionRule);
  const ledgerRules = (policy.ledger ?? []).map((r) => ({ ...r, ms: ruleAge(r) }));
  // Without the ledger no row is seen old: the rule would silently do nothing.
  if (ledgerRules.length && !ledger) throw new InvalidOptionError('a ledger retention rule needs the engine\'s ledger: pass ledger: engine.ledger.');
  const storeRules = (policy.store ?? []).map((r) => {
    if (!Array.isArray(r.namespace) || r.namespace.some((part) => typeof part !== 'string')) throw new InvalidOptionError(`a store retention rule needs namespace: a list of strings (a prefix), got ${JSON.stringify(r.namespace)}.`);
    return { namespace: r.namespace, ms: ruleAge(r) };
  });
  const report: RetentionReport = {
    dryRun,
    threads: { deleted: [], skipped: [], rows: noRows() },
    positions: { compacted: [], skipped: [], rows: noRows() },
    ledger: { compacted: [], skipped: [], rows: noRows(), kept: 0 },
    store: { items: 0, bytes: 0 },
    artifacts: null,
  };
  const planned: PlannedRemovals = { threads: new Set(), compactions: new Map(), storeItems: new Set() };

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
  const compacting = threads.filter((t) => !retired.has(t.id) && t.head !== null && [...positionRules, ...ledgerRules].some((rule) => compactionRuleMatches(rule, t)));
  done = 0;
  for (const thread of compacting) {
    const rules: CompactionRules = {
      positions: positionRules.find((r) => compactionRuleMatches(r, thread)),
      ledger: ledgerRules.find((r) => compactionRuleMatches(r, thread)),
    };
    const outcome = await compactThreadByRules(cp, ledger, thread, rules, now, dryRun);
    recordCompaction(report, thread.id, rules, outcome, dryRun ? planned : undefined);
    options.onProgress?.({ phase: 'positions', done: ++done, total: compacting.length });
  }

  // ---------------------------------------------------------------- store rows
  if (store && storeRules.length) {
    done = 0;
    for (const rule of storeRules) {
      const victims: { namespace: string[]; key: string; version: number; bytes: number }[] = [];
      for (let cursor: string | null | undefined; ; ) {
        const page = await store.search(rule.namespace, { limit: 500, ...(cursor ? { cursor } : {}) });
        for (const item of page.items) {
          // cairn's own bookkeeping (graph descriptions, artifact pins) is not a retention subject.
          if (isGraphNamespace(item.namespace) || (item.namespace[0] === 'cairn' && item.namespace[1] === 'artifact-pins')) continue;
          // Counted as the codec text the row holds: JSON.stringify throws on a BigInt
          // and writes a Map or a Set as {}, values a store keeps like any other.
          if (item.updatedAt < now - rule.ms) victims.push({ namespace: item.namespace, key: item.key, version: item.version, bytes: encode(item.value).length });
        }
        if (!page.cursor) break;
        cursor = page.cursor;
      }
      for (const victim of victims) {
        const id = storeItemId(victim.namespace, victim.key);
        // Rules with overlapping prefixes find an item once each: it goes (and counts) once.
        if (!planned.storeItems.has(id) && (dryRun || (await deleteUnchanged(store, victim)))) {
          planned.storeItems.add(id);
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

/**
 * Deletes a store item retention found old, only if it is still at the version found:
 * one written since (by another process, say) is no longer old and stays. A `check`
 * fails on a mismatch whatever the namespace's merge rule (a versioned delete in a
 * `lastWins` namespace would delete anyway). False when the item changed or is gone.
 */
async function deleteUnchanged(store: Store, item: { namespace: string[]; key: string; version: number }): Promise<boolean> {
  try {
    const [, existed] = await store.batch([
      { op: 'check', namespace: item.namespace, key: item.key, version: item.version },
      { op: 'delete', namespace: item.namespace, key: item.key },
    ]);
    return existed === true;
  } catch (error) {
    if (VersionConflictError.is(error)) return false;
    throw error;
  }
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

function checkPositionRule(rule: PositionRetentionRule): CheckedPositionRule {
  const { keepLast } = rule;
  const olderThanMs = durationOption('olderThanMs', rule.olderThanMs, rule.olderThan);
  if (olderThanMs === undefined && keepLast === undefined) throw new InvalidOptionError(`a positions retention rule needs olderThanMs or keepLast (or both), got ${JSON.stringify(rule)}.`);
  if (keepLast !== undefined && (!Number.isSafeInteger(keepLast) || keepLast < 1)) throw new InvalidOptionError(`keepLast must be a whole number of positions (1 or more), got ${JSON.stringify(keepLast)}.`);
  return { ...rule, ...(olderThanMs !== undefined ? { ms: olderThanMs } : {}) };
}

function compactionRuleMatches(rule: { status?: ThreadRecord['status'] | ThreadRecord['status'][]; tenant?: string | string[] }, thread: ThreadRecord): boolean {
  return oneOf(thread.status, rule.status) && (rule.tenant === undefined || (thread.tenant !== null && oneOf(thread.tenant, rule.tenant)));
}

/** Puts one thread's compaction outcome in the report: each namespace under the rule kind that set its cut. */
function recordCompaction(report: RetentionReport, threadId: string, rules: CompactionRules, outcome: ThreadCompaction, planned: PlannedRemovals | undefined): void {
  const sections = (['positions', 'ledger'] as const).filter((kind) => rules[kind] !== undefined);
  if ('reason' in outcome) {
    for (const kind of sections) report[kind].skipped.push({ thread: threadId, reason: outcome.reason });
    return;
  }
  report.ledger.kept += outcome.kept;
  const compacted = outcome.namespaces.filter((n) => 'plan' in n);
  for (const n of outcome.namespaces) {
    if (!('plan' in n)) {
      // A child run too short to cut is the common case, not news; a root one is, unless another namespace of the thread was cut.
      if (n.reason === 'nothing-to-cut' && (n.ns !== '' || compacted.length)) continue;
      report[n.by].skipped.push({ thread: threadId, ...(n.ns === '' ? {} : { ns: n.ns }), reason: n.reason });
      continue;
    }
    const rows: RetentionRows = { ...noRows(), ...pick(n.result), bytes: n.plan.bytes };
    report[n.by].compacted.push({ thread: threadId, ns: n.ns, base: n.plan.base.seq, rows });
    addRows(report[n.by].rows, rows);
  }
  if (planned && compacted.length) {
    planned.compactions.set(
      threadId,
      compacted.map(({ plan }) => {
        const dropped = new Set(plan.request.drop ?? []);
        const base = plan.base.seq;
        return { ns: plan.ns, goes: (seq: number) => seq < base || dropped.has(seq), dropNamespaces: plan.request.dropNamespaces ?? [], ledger: plan.request.ledger === true, snapshot: plan.request.snapshot };
      }),
    );
  }
}

function pick(result: CompactionResult): Pick<RetentionRows, 'positions' | 'items' | 'snapshots' | 'ledgerEntries' | 'namespaces'> {
  return { positions: result.positions, items: result.items, snapshots: result.snapshots, ledgerEntries: result.ledgerEntries, namespaces: result.namespaces };
}
