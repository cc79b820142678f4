/**
 * @module inspect/retention-compaction
 * The compaction part of `applyRetention`, one thread at a time: every namespace of the
 * thread (the root's first, then each child run's, parents before their children) is
 * cut on its own, at the further of two cuts:
 * - a **positions** rule's: `keepLast` and `olderThanMs` counted in that namespace;
 * - a **ledger** rule's: the namespace's ledger rows created more than `olderThanMs`
 *   ago go, and with them the steps they belong to. A row is keyed by the seq its step
 *   started from; a compaction at base B removes the rows keyed below B (the base's own
 *   step, whose records `verify` no longer asks for, and every older one), so the cut
 *   is one past the newest old row's seq. Rows are never removed under a kept position:
 *   a kept position binds every row it used (`verify`), and nothing could serve it a
 *   missing one. Rows a compaction with `ledger: false` left below a base are needed by
 *   nothing: they go alone, the base staying. What a compaction cannot reach stays and is counted as kept: a row of
 *   the step from the head (a failed step that will run again, whose effect outcomes
 *   keep it from repeating a side effect), of a suspended step, or above the newest
 *   snapshot that can be the base.
 * Each namespace's compaction is its own `compactThread` transaction on the namespace's
 * own anchor (`cairn_heads` is keyed by thread and namespace); a child namespace the
 * parent's compaction removes (its step went) is not planned again. Plans of different
 * namespaces read disjoint rows, so a dry run, which plans them all on the unchanged
 * thread, reports what the real run removes.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Checkpointer, CompactionResult, HeadAnchor } from '../contracts/checkpointer.js';
import type { Ledger, LedgerEntry } from '../contracts/ledger.js';
import type { ThreadLease, ThreadRecord } from '../contracts/threads.js';
import { LEASE_MS } from '../defaults.js';
import { NotSupportedError, ThreadBusyError } from '../errors.js';
import type { LedgerRetentionRule, PositionRetentionRule } from './gc.js';
import { compactNamespace, cutByAge, planCompaction, planLedgerBelowBase, type CompactionPlan, type NoCompaction } from './compact.js';

export type CheckedPositionRule = PositionRetentionRule & { ms?: number };
export type CheckedLedgerRule = LedgerRetentionRule & { ms: number };

/** The first rule of each kind that matched the thread. */
export interface CompactionRules {
  positions: CheckedPositionRule | undefined;
  ledger: CheckedLedgerRule | undefined;
}

/** One namespace's outcome, under the rule kind whose cut was further (`positions` on a tie). */
export type NamespaceCompaction =
  | { ns: string; by: 'positions' | 'ledger'; plan: CompactionPlan; result: CompactionResult }
  | { ns: string; by: 'positions' | 'ledger'; reason: NoCompaction['skipped'] | 'not-supported' };

/** A thread left whole (`busy`: a run holds it; `not-supported`: the engine cannot compact), or what each namespace did, and how many old ledger rows stay. */
export type ThreadCompaction = { reason: 'busy' | 'not-supported' } | { namespaces: NamespaceCompaction[]; kept: number };

/**
 * Compacts a thread's namespaces by its rules, under the thread's lease (a live run's
 * lease is never taken: the thread is skipped). The plans are made under the lease, so
 * nothing moves between a plan and its compaction. A dry run plans and removes nothing.
 */
export async function compactThreadByRules(
  cp: Checkpointer,
  ledger: Ledger | undefined,
  thread: ThreadRecord,
  rules: CompactionRules,
  now: number,
  dryRun: boolean,
): Promise<ThreadCompaction> {
  if (dryRun) return compactNamespaces(cp, ledger, thread.id, rules, now, null);
  if (!cp.compactThread) return { reason: 'not-supported' };
  const lease = await cp
    .acquireThread(thread.id, { owner: { runId: `retention:${randomUUID()}`, pid: process.pid, host: hostname() }, leaseMs: LEASE_MS })
    .catch((error: unknown) => {
      if (ThreadBusyError.is(error)) return null;
      throw error;
    });
  if (!lease) return { reason: 'busy' };
  try {
    return await compactNamespaces(cp, ledger, thread.id, rules, now, lease);
  } finally {
    await cp.releaseThread(lease);
  }
}

/** Plans (and, given a lease, carries out) each namespace's compaction, parents first. */
async function compactNamespaces(cp: Checkpointer, ledger: Ledger | undefined, threadId: string, rules: CompactionRules, now: number, lease: ThreadLease | null): Promise<ThreadCompaction> {
  const old = rules.ledger && ledger ? (await ledger.list(threadId)).filter((entry) => entry.createdAt < now - rules.ledger!.ms) : [];
  const removed = new Set<string>();
  // A ledger rule means the rows of removed steps go, whatever the positions rule says.
  const withLedger = rules.ledger !== undefined || rules.positions?.ledger !== false;
  const gone = new Set<string>();
  const namespaces: NamespaceCompaction[] = [];
  for (const ns of byDepth(await cp.listNamespaces(threadId))) {
    if (gone.has(ns)) continue;
    const head = await cp.getHead(threadId, ns);
    if (!head) continue;
    const wanted = await wantedCut(cp, threadId, ns, head, rules, old, now);
    if (!wanted) {
      namespaces.push({ ns, by: rules.positions ? 'positions' : 'ledger', reason: 'nothing-to-cut' });
      continue;
    }
    let plan = await planCompaction(cp, ledger, threadId, ns, wanted.cut, { ledger: withLedger });
    // Old rows only below the base (a `ledger: false` compaction kept them): they go alone.
    if ('skipped' in plan && plan.skipped === 'nothing-to-cut' && wanted.by === 'ledger' && ledger) plan = (await planLedgerBelowBase(cp, ledger, threadId, ns)) ?? plan;
    if ('skipped' in plan) {
      namespaces.push({ ns, by: wanted.by, reason: plan.skipped });
      continue;
    }
    let result = plan.removes;
    if (lease) {
      try {
        result = await compactNamespace(cp, lease, plan);
      } catch (error) {
        if (!NotSupportedError.is(error)) throw error;
        namespaces.push({ ns, by: wanted.by, reason: 'not-supported' });
        continue;
      }
    }
    const dropped = new Set(plan.request.dropNamespaces ?? []);
    for (const child of dropped) gone.add(child);
    if (withLedger) for (const entry of old) if (goesWith(plan, dropped, entry)) removed.add(entry.key);
    namespaces.push({ ns, by: wanted.by, plan, result });
  }
  return { namespaces, kept: old.filter((entry) => !removed.has(entry.key)).length };
}

/** Where each rule would cut `ns`, and which cut is further; null when neither cuts anything. */
async function wantedCut(cp: Checkpointer, threadId: string, ns: string, head: HeadAnchor, rules: CompactionRules, old: LedgerEntry[], now: number): Promise<{ cut: number; by: 'positions' | 'ledger' } | null> {
  let positions: number | null = null;
  if (rules.positions) {
    const maxSeq = head.seq - (rules.positions.keepLast ?? 0);
    const cut = rules.positions.ms === undefined ? maxSeq : await cutByAge(cp, threadId, ns, head, now - rules.positions.ms, maxSeq);
    if (cut !== null && cut > 0) positions = cut;
  }
  // One past the newest old row's step: a base there removes the rows keyed below it.
  let ledgerCut: number | null = null;
  for (const entry of old) if (entry.ns === ns && (ledgerCut === null || entry.seq + 1 > ledgerCut)) ledgerCut = entry.seq + 1;
  if (positions === null && ledgerCut === null) return null;
  return ledgerCut !== null && (positions === null || ledgerCut > positions) ? { cut: ledgerCut, by: 'ledger' } : { cut: positions!, by: 'positions' };
}

/** Whether a compaction removes a ledger row: one of its namespace's keyed below the base or on a dropped branch, or one of a child namespace it removes. */
function goesWith(plan: CompactionPlan, droppedNamespaces: Set<string>, entry: LedgerEntry): boolean {
  if (droppedNamespaces.has(entry.ns)) return true;
  return entry.ns === plan.ns && (entry.seq < plan.base.seq || (plan.request.drop ?? []).includes(entry.seq));
}

/** Root first, then child runs before their own children (`a` before `a|b`). */
function byDepth(namespaces: string[]): string[] {
  const depth = (ns: string) => (ns === '' ? 0 : ns.split('|').length);
  return [...namespaces].sort((a, b) => depth(a) - depth(b) || (a < b ? -1 : a > b ? 1 : 0));
}
