/**
 * @module inspect/gc
 * Retention and mark-and-sweep garbage collection of artifacts, as a pure
 * function over the contracts (Checkpointer, Store, Ledger, ArtifactStore): the
 * CLI's `cairn gc` and any maintenance job call {@link collectArtifacts}.
 *
 * **Roots** (what keeps an artifact): every ref found in a retained thread — the
 * `set` values and appended items of all its positions on every branch of every
 * namespace (the root graph's and each child run's), its snapshots, and its ledger
 * (recorded outputs and effect outcomes, which is where the ref of a step that has
 * not committed yet lives when it was written through `ctx.effect` or
 * `ctx.recordArtifact`) — every ref in a store value, pins kept in the store
 * ({@link pinArtifact}) and pins passed in.
 *
 * **Grace**: an artifact written or handed out again (put of known bytes,
 * putNamed of an existing key, head) less than `graceMs` ago is never collected,
 * whatever the roots say: that covers a step that wrote an artifact and has not
 * committed the position referencing it yet. `freshAt` is measured with the
 * artifact store's own clock (`artifacts.now()`), so the writer's and the
 * collector's clocks need not agree. The delete itself is conditional
 * (`staleBefore`), so an artifact refreshed between the listing and the delete is
 * kept. The rule a runtime must keep: a step commits within `graceMs` of obtaining
 * an artifact ref (default 24 h).
 *
 * **Retention rules** retire threads or expire artifacts:
 * - a thread rule (`{ status, tenant, olderThanMs }`) is thread retention: matching
 *   threads not updated for `olderThanMs` are deleted (`Checkpointer.deleteThread`: the
 *   thread with its positions, ledger and pins), and then nothing they referred to is
 *   a root. Artifact retention follows thread retention: a thread that stays (it does
 *   not match, or a run holds it, or it changed since it was listed) keeps every
 *   artifact it refers to, so GC never leaves a kept thread with a dangling ref. A dry
 *   run deletes nothing and reports the threads it would delete;
 * - an artifact rule (`{ mediaType, tenant, olderThanMs }`) expires matching artifacts
 *   not refreshed for `olderThanMs` even while referenced (their refs then dangle, and
 *   `cairn verify --artifacts` says so). Pins still win.
 */
import type { ArtifactInfo, ArtifactRef, ArtifactStore, ArtifactSweepReport } from '../contracts/artifact-store.js';
import type { Checkpointer } from '../contracts/checkpointer.js';
import type { Ledger } from '../contracts/ledger.js';
import type { Store } from '../contracts/store.js';
import type { ThreadRecord, ThreadStatus } from '../contracts/threads.js';
import { decode } from '../codec/tagged-json.js';
import { InvalidOptionError, ThreadBusyError } from '../errors.js';
import { listArtifacts, parseDuration } from '../artifacts/helpers.js';
import { GC_GRACE_MS } from '../defaults.js';
import { findArtifactRefs, isArtifactRef, parseRefId } from '../artifacts/refs.js';
import { checkThreadId } from '../internal/keys.js';
import { appendedFields, openSnapshot, type PositionBody } from '../runtime/position.js';
import { isGraphNamespace } from '../internal/graphs.js';
import { PIN_NAMESPACE as PIN_NAMESPACE_INTERNAL, threadPinKey } from '../internal/pins.js';
import { THREAD_STATUSES } from '../internal/thread-query.js';
import { describePosition, namespacePositions } from './walk.js';
import { checkOptionKeys } from '../internal/option-keys.js';

/** How old a rule's subjects must be: `olderThanMs` (or, deprecated, `olderThan`). */
export interface RuleAge {
  /** Not updated (threads) or refreshed (artifacts) for this many ms. */
  olderThanMs?: number;
  /** @deprecated Since 0.2.0: use `olderThanMs`. A number of ms or a duration (`30d`, `12h`). */
  olderThan?: number | string;
}

/** Releases threads: matching threads not updated for `olderThanMs` keep no artifact alive. */
export interface ThreadRetentionRule extends RuleAge {
  status?: ThreadStatus | ThreadStatus[];
  tenant?: string | string[];
}

/** Expires artifacts: matching artifacts not refreshed for `olderThanMs` are collected even if referenced. */
export interface ArtifactRetentionRule extends RuleAge {
  /** Exact (`image/png`) or a type wildcard (`image/*`); parameters (`; charset=…`) are ignored. */
  mediaType?: string | string[];
  tenant?: string | string[];
}

/**
 * Which threads {@link collectArtifacts} deletes and which artifacts it expires even while
 * referenced; `applyRetention` applies the other kinds too (positions compacted, store
 * rows), and collects artifacts after them. `collectArtifacts` ignores those.
 */
export interface RetentionPolicy {
  threads?: ThreadRetentionRule[];
  artifacts?: ArtifactRetentionRule[];
  /** Compaction of long threads (see `applyRetention`). */
  positions?: PositionRetentionRule[];
  /** Store rows by namespace prefix and age (see `applyRetention`). */
  store?: StoreRetentionRule[];
  /** Ledger rows by age: the steps they belong to are compacted away with them (see `applyRetention`). */
  ledger?: LedgerRetentionRule[];
}

/**
 * Compacts every namespace of matching threads (the root's and each child run's, each
 * on its own): positions older than the cut go (`olderThanMs`: created that long ago;
 * `keepLast`: never the newest this many of the namespace), the newest snapshot at or
 * before the cut stays as the base. `ledger` (default true): the ledger entries of the
 * removed steps go too.
 */
export interface PositionRetentionRule extends RuleAge {
  status?: ThreadStatus | ThreadStatus[];
  tenant?: string | string[];
  /** Never the newest this many positions (counted by seq back from the head). */
  keepLast?: number;
  ledger?: boolean;
}

/**
 * Removes the ledger rows (recorded outputs, effect intents and outcomes) of matching
 * threads created more than `olderThanMs` ago, with the steps they belong to: each
 * namespace holding such a row is compacted past that row's step, as a positions rule
 * compacts, so every kept position keeps every row it binds. A row a kept position or
 * a step still to run needs (the step from the head, a suspended step, a step above
 * the newest snapshot that can be the base) stays, and is counted as kept.
 */
export interface LedgerRetentionRule extends RuleAge {
  status?: ThreadStatus | ThreadStatus[];
  tenant?: string | string[];
}

/**
 * Deletes store items under `namespace` (a prefix: `['cache']` covers `['cache', 'a']`) not updated for `olderThanMs`.
 * Each delete is conditional on the version the scan found: an item written again meanwhile stays.
 */
export interface StoreRetentionRule extends RuleAge {
  namespace: string[];
}

/**
 * What a dry run of retention would remove before artifacts are collected, so that the
 * dry run's collection sees what the real one will: threads deleted, and per thread the
 * rows a compaction removes (`goes`), its dropped namespaces, and the base snapshot it writes.
 */
export interface PlannedRemovals {
  threads: Set<string>;
  compactions: Map<string, { ns: string; goes: (seq: number) => boolean; dropNamespaces: string[]; ledger: boolean; snapshot: string }[]>;
  /** Store items the store rules delete, by {@link storeItemId}: their values are no roots. */
  storeItems: Set<string>;
}

/** One store item's identity in {@link PlannedRemovals.storeItems}. */
export function storeItemId(namespace: readonly string[], key: string): string {
  return JSON.stringify([namespace, key]);
}

/** What {@link collectArtifacts} reports while it works. */
export type GcProgress =
  | { phase: 'mark'; threads: number; positions: number; refs: number }
  | { phase: 'sweep'; scanned: number; deleted: number; total?: number };

/** What {@link collectArtifacts} sweeps, what it treats as roots, and the retention rules it applies. */
export interface GcOptions {
  checkpointer: Checkpointer;
  /** The unscoped artifact store (it sees every tenant). */
  artifacts: ArtifactStore;
  /** Store values are roots, and pins live here. */
  store?: Store;
  /** Recorded outputs and effect outcomes are roots: pass the engine's ledger. */
  ledger?: Ledger;
  retention?: RetentionPolicy;
  /** Nothing written or refreshed less than this many ms ago is collected (default 24 h). */
  graceMs?: number;
  /** @deprecated Since 0.2.0: use `graceMs`. A number of ms or a duration (`24h`). */
  grace?: number | string;
  /** More roots for this run: refs or ref ids. */
  pins?: (ArtifactRef | string)[];
  /** Report what would go, delete nothing. */
  dryRun?: boolean;
  /** Time for thread ages (the checkpointer's clock); default `Date.now()`. */
  now?: number;
  onProgress?: (progress: GcProgress) => void;
}

/** Where a ref was found: a thread, and the seq of a position, snapshot or ledger entry in namespace `ns` ('' for the root graph). */
export interface RefPlace {
  thread: string;
  ns: string;
  seq: number;
}

/** One artifact collected (or, in a dry run, that would be). */
export interface GcVictim {
  ref: ArtifactRef;
  tenant: string | null;
  freshAt: number;
  /** `unreferenced`: no root reaches it; `expired`: an artifact rule expired it. */
  reason: 'unreferenced' | 'expired';
  /** For `expired`: the rule, as text. */
  rule?: string;
  /** For `expired`: a position that still refers to it (its ref will dangle), with its namespace ('' for the root). */
  referencedBy?: RefPlace;
}

/** What {@link collectArtifacts} deleted (or would, on a dry run), what it kept and why. */
export interface GcReport {
  dryRun: boolean;
  /** Threads deleted by thread retention rules (dry run: that would be), in id order. */
  deletedThreads: string[];
  /** The artifact store's clock when the run started, and the grace cutoff derived from it. */
  startedAt: number;
  cutoff: number;
  roots: { threads: number; releasedThreads: number; positions: number; snapshots: number; ledgerEntries: number; storeItems: number; pins: number; refs: number };
  scanned: number;
  kept: { referenced: number; pinned: number; inGrace: number; retained: number };
  /** Collected (or, dry run, to be collected). */
  victims: GcVictim[];
  /** Candidates refreshed between the listing and the delete, and so kept. */
  refreshed: number;
  bytes: number;
  /** Unreferenced blobs, temp files and incomplete uploads removed by the store's sweep. */
  sweep: ArtifactSweepReport;
}

/** Namespace of the pins kept in the store: one item per pinned ref, keyed by its id (a thread's pins by id and thread). */
export const PIN_NAMESPACE = [...PIN_NAMESPACE_INTERNAL];

/** Options of {@link pinArtifact} and {@link unpinArtifact}. */
export interface PinOptions {
  /**
   * The pin belongs to this thread: it is a pin of its own (beside a global pin or
   * another thread's pin of the same artifact), and `deleteThread` removes it.
   */
  thread?: string;
}

/**
 * Keeps an artifact from collection until {@link unpinArtifact}, whatever the roots
 * and retention rules say. The pin is a store item, so every collector sees it.
 *
 * @example
 * ```ts
 * await pinArtifact(engine.store, ref, 'legal hold 2024-17');
 * await pinArtifact(engine.store, ref, 'kept while the thread lives', { thread: 'cust_42' });
 * ```
 */
export async function pinArtifact(store: Store, ref: ArtifactRef, note = '', options: PinOptions = {}): Promise<void> {
  const thread = pinThread('pinArtifact', options);
  if (!isArtifactRef(ref)) {
    throw new InvalidOptionError(`pinArtifact takes the artifact's ref ({ id, sha256, media_type, size_bytes }, as put returned it), got ${describeRef(ref)}.`);
  }
  parseRefId(ref.id);
  if (typeof note !== 'string') throw new InvalidOptionError(`pinArtifact: note must be a string, got ${JSON.stringify(note) ?? String(note)}.`);
  if (thread === undefined) await store.put(PIN_NAMESPACE, ref.id, { ref, note, pinnedAt: Date.now() });
  else await store.put(PIN_NAMESPACE, threadPinKey(ref.id, thread), { ref, note, pinnedAt: Date.now(), thread });
}

/**
 * Removes a pin (a thread's, with `{ thread }`); true if there was one.
 *
 * @example
 * ```ts
 * await pinArtifact(engine.store, ref);     // kept by every collection
 * await unpinArtifact(engine.store, ref);   // collectable again once unreferenced
 * ```
 */
export async function unpinArtifact(store: Store, ref: ArtifactRef | string, options: PinOptions = {}): Promise<boolean> {
  const thread = pinThread('unpinArtifact', options);
  const id = typeof ref === 'string' ? ref : isArtifactRef(ref) ? ref.id : undefined;
  if (id === undefined) throw new InvalidOptionError(`unpinArtifact takes the artifact's ref or its id, got ${describeRef(ref)}.`);
  parseRefId(id);
  return store.delete(PIN_NAMESPACE, thread === undefined ? id : threadPinKey(id, thread));
}

/**
 * The thread a pin call names, checked. A key the options do not take is refused: a
 * misspelt `thred` made a thread's pin global (kept after the thread is deleted) and
 * an unpin remove the global pin (a legal hold) instead of the thread's.
 */
function pinThread(call: string, options: PinOptions): string | undefined {
  checkOptionKeys(call, options, ['thread']);
  if (options.thread !== undefined) checkThreadId(options.thread);
  return options.thread;
}

function describeRef(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? String(value);
  return `an object with ${Object.keys(value).join(', ') || 'no keys'}`;
}

/**
 * Collects unreferenced (and expired) artifacts. Safe while runs are writing: see
 * the module documentation for why nothing a committed position refers to, and
 * nothing a running step has just written, is collected.
 *
 * @example
 * ```ts
 * const DAY = 86_400_000;
 * const report = await collectArtifacts({
 *   checkpointer: engine.checkpointer, store: engine.store, ledger: engine.ledger, artifacts,
 *   retention: { threads: [{ status: 'completed', olderThanMs: 30 * DAY }], artifacts: [{ mediaType: 'image/*', olderThanMs: 7 * DAY }] },
 *   dryRun: true,
 * });
 * for (const v of report.victims) console.log(v.ref.id, v.reason);
 * ```
 */
export async function collectArtifacts(options: GcOptions): Promise<GcReport> {
  checkStoresOption('collectArtifacts', options, GC_KEYS, { artifacts: true });
  return collectArtifactsAfter(options, undefined);
}

/** Every option {@link collectArtifacts} takes: another key (a misspelt `dryrun`) is refused, not ignored (it would collect for real). */
const GC_KEYS = ['checkpointer', 'artifacts', 'store', 'ledger', 'retention', 'graceMs', 'grace', 'pins', 'dryRun', 'now', 'onProgress'];

/**
 * Refuses the options of a maintenance call over an engine's parts (collectArtifacts,
 * applyRetention) that it cannot run on, before anything is read: not one options
 * object, a key it does not take, no `checkpointer` (or, with `needs.artifacts`, no
 * `artifacts`) of the kind it reads. Each was a TypeError from deep inside the call.
 */
export function checkStoresOption(call: string, options: unknown, known: readonly string[], needs: { artifacts?: boolean } = {}): void {
  const takes = `${call} takes one options object with ${needs.artifacts ? 'checkpointer and artifacts' : 'checkpointer'} (${known.join(', ')})`;
  // Unlike most calls, no options is not the defaults: there is nothing to work on.
  if (options === undefined) throw new InvalidOptionError(`${takes}, got undefined.`);
  checkOptionKeys(call, options, known);
  const { checkpointer, artifacts } = options as { checkpointer?: unknown; artifacts?: unknown };
  if (typeof (checkpointer as Checkpointer | undefined)?.listThreads !== 'function') {
    throw new InvalidOptionError(`${call} needs checkpointer: the engine's checkpointer (engine.checkpointer), got ${describeStore(checkpointer)}.`);
  }
  if ((needs.artifacts || artifacts !== undefined) && typeof (artifacts as ArtifactStore | undefined)?.list !== 'function') {
    throw new InvalidOptionError(`${call} needs artifacts: the unscoped artifact store the threads wrote to, got ${describeStore(artifacts)}.`);
  }
}

/** What was passed where a store goes, for a message: `undefined`, `an engine (pass engine.checkpointer)`, `an object without listThreads`. */
function describeStore(value: unknown): string {
  if (value === undefined || value === null) return String(value);
  if (typeof value !== 'object') return typeof value;
  if ('checkpointer' in value) return 'an engine (pass its parts: engine.checkpointer, engine.store, engine.ledger)';
  return 'an object that is not one';
}

/** {@link collectArtifacts}, treating `planned` as already removed (a dry run of retention). */
export async function collectArtifactsAfter(options: GcOptions, planned: PlannedRemovals | undefined): Promise<GcReport> {
  const { checkpointer, artifacts, store, ledger } = options;
  if (artifacts.tenant !== null) throw new InvalidOptionError('collectArtifacts needs the unscoped artifact store (it sees every tenant), not a tenant view.');
  if (options.retention !== undefined) checkRetentionPolicy(options.retention);
  const grace = durationOption('graceMs', options.graceMs, options.grace) ?? GC_GRACE_MS;
  const threadRules = (options.retention?.threads ?? []).map((r) => ({ ...r, ms: ruleAge(r) }));
  const artifactRules = (options.retention?.artifacts ?? []).map((r) => ({ ...r, ms: ruleAge(r) }));
  const dryRun = dryRunOption('collectArtifacts', options.dryRun);
  const threadNow = nowOption('collectArtifacts', options.now);

  // The store's clock is read first: everything refreshed after this instant minus
  // grace is kept, including what is written while the mark phase runs. A dry run
  // writes nothing, not even the probe a backend's clock may take (S3's).
  const startedAt = await artifacts.now(dryRun ? { readOnly: true } : undefined);
  const cutoff = startedAt - grace;

  // ---------------------------------------------------------------- mark
  const marked = new Map<string, RefPlace | null>();
  const pinned = new Set<string>();
  const deletedThreads: string[] = [];
  const roots: GcReport['roots'] = { threads: 0, releasedThreads: 0, positions: 0, snapshots: 0, ledgerEntries: 0, storeItems: 0, pins: 0, refs: 0 };
  const mark = (value: unknown, from: RefPlace | null) => {
    for (const ref of findArtifactRefs(value)) if (!marked.has(ref.id)) marked.set(ref.id, from);
  };
  const progress = () => options.onProgress?.({ phase: 'mark', threads: roots.threads, positions: roots.positions, refs: marked.size });

  for (const pin of options.pins ?? []) {
    pinned.add(typeof pin === 'string' ? pin : pin.id);
    roots.pins++;
  }

  for (let after: string | undefined; ; ) {
    const threads = await checkpointer.listThreads({ limit: 200, ...(after !== undefined ? { after } : {}) });
    for (const thread of threads) {
      if (planned?.threads.has(thread.id)) {
        roots.releasedThreads++;
        deletedThreads.push(thread.id);
        continue;
      }
      if (threadRules.some((rule) => threadRuleMatches(rule, thread, threadNow)) && (dryRun || (await retireThread(checkpointer, thread, threadRules, threadNow)))) {
        roots.releasedThreads++;
        deletedThreads.push(thread.id);
        continue;
      }
      roots.threads++;
      await walkThreadRefs(checkpointer, ledger, thread, (value, at, source) => {
        if (source === 'position') roots.positions++;
        else if (source === 'snapshot') roots.snapshots++;
        else roots.ledgerEntries++;
        mark(value, at);
      }, planned?.compactions.get(thread.id));
      progress();
    }
    if (threads.length < 200) break;
    after = threads[threads.length - 1]!.id;
  }

  if (store) {
    for (let cursor: string | null | undefined; ; ) {
      const page = await store.search([], { limit: 500, ...(cursor ? { cursor } : {}) });
      for (const item of page.items) {
        // The graph descriptions the runtime keeps are cairn's own bookkeeping: they hold no refs.
        if (isGraphNamespace(item.namespace)) continue;
        // A dry run of retention: what its store rules delete first refers to nothing.
        if (planned?.storeItems.has(storeItemId(item.namespace, item.key))) continue;
        roots.storeItems++;
        mark(item.value, null);
        if (item.namespace.join('\u0000') === PIN_NAMESPACE.join('\u0000')) {
          const ref = (item.value as { ref?: unknown } | null)?.ref;
          pinned.add(isArtifactRef(ref) ? ref.id : item.key);
          roots.pins++;
        }
      }
      if (!page.cursor) break;
      cursor = page.cursor;
    }
  }
  roots.refs = marked.size;

  // ---------------------------------------------------------------- sweep
  const report: GcReport = {
    dryRun,
    deletedThreads,
    startedAt,
    cutoff,
    roots,
    scanned: 0,
    kept: { referenced: 0, pinned: 0, inGrace: 0, retained: 0 },
    victims: [],
    refreshed: 0,
    bytes: 0,
    sweep: { blobs: 0, bytes: 0, temps: 0 },
  };
  // Listed in full before deleting, so deletes never disturb a listing's cursor.
  const listed: ArtifactInfo[] = [];
  for await (const info of listArtifacts(artifacts, { allTenants: true })) listed.push(info);
  for (const info of listed) {
    report.scanned++;
    const id = info.ref.id;
    if (pinned.has(id)) {
      report.kept.pinned++;
      continue;
    }
    const expiredBy = artifactRules.find((rule) => artifactRuleMatches(rule, info, startedAt));
    let victim: GcVictim | undefined;
    if (expiredBy) {
      const from = marked.get(id);
      victim = { ref: info.ref, tenant: info.tenant, freshAt: info.freshAt, reason: 'expired', rule: describeRule(expiredBy), ...(from ? { referencedBy: from } : {}) };
    } else if (marked.has(id)) {
      report.kept.referenced++;
    } else if (info.freshAt >= cutoff) {
      report.kept.inGrace++;
    } else {
      victim = { ref: info.ref, tenant: info.tenant, freshAt: info.freshAt, reason: 'unreferenced' };
    }
    if (!victim) continue;
    const staleBefore = victim.reason === 'expired' ? startedAt - expiredBy!.ms : cutoff;
    if (dryRun || (await artifacts.delete(info.ref, { staleBefore }))) {
      report.victims.push(victim);
      report.bytes += info.ref.size_bytes;
    } else report.refreshed++;
    options.onProgress?.({ phase: 'sweep', scanned: report.scanned, deleted: report.victims.length, total: listed.length });
  }
  report.kept.retained = report.scanned - report.victims.length - report.refreshed;
  // Blobs whose last ref just went (and crash leftovers) go too, under the same cutoff.
  report.sweep = await artifacts.sweep({ staleBefore: cutoff, dryRun });
  return report;
}

/**
 * Deletes a thread a retention rule matched; false (the thread stays, and keeps its
 * artifacts) when it no longer matches, a run holds it, or it is gone. Read again
 * first: it may have been resumed since it was listed; `ifStatus` and the delete's
 * own busy check close the rest of that window.
 */
async function retireThread(cp: Checkpointer, listed: ThreadRecord, rules: (ThreadRetentionRule & { ms: number })[], now: number): Promise<boolean> {
  const thread = await cp.getThread(listed.id);
  if (!thread || !rules.some((rule) => threadRuleMatches(rule, thread, now))) return false;
  try {
    return (await cp.deleteThread(thread.id, { ifStatus: thread.status })).deleted;
  } catch (error) {
    if (ThreadBusyError.is(error)) return false;
    throw error;
  }
}

/** Where a value that may hold refs was found. */
export type RefSource = 'position' | 'snapshot' | 'ledger';

/** Called by {@link walkThreadRefs} with each stored value that may hold refs. */
export type RefVisitor = (value: unknown, at: RefPlace, source: RefSource) => void;

/**
 * Calls `visit` with every stored value of a thread that may hold artifact refs:
 * each position's `set` values and appended items (every branch), each snapshot,
 * in every namespace of the thread, and, given a ledger, each recorded output and
 * effect outcome. Once per position, snapshot and ledger entry.
 */
export async function walkThreadRefs(
  cp: Checkpointer,
  ledger: Ledger | undefined,
  thread: ThreadRecord,
  visit: RefVisitor,
  compactions?: NonNullable<ReturnType<PlannedRemovals['compactions']['get']>>,
): Promise<void> {
  const dropped = new Set(compactions?.flatMap((c) => c.dropNamespaces));
  // A child run's positions hold refs as the root's do (a subgraph's tool output, say).
  for (const ns of await cp.listNamespaces(thread.id)) {
    if (dropped.has(ns)) continue;
    const compaction = compactions?.find((c) => c.ns === ns);
    const skip = compaction?.goes;
    const last = await visitPositions(cp, thread.id, ns, visit, skip);
    await visitSnapshots(cp, thread.id, ns, last, visit, skip);
    // The base snapshot the compaction writes holds the items kept from below it.
    if (compaction) visit(decode(openSnapshot(compaction.snapshot)!, 'planned snapshot'), { thread: thread.id, ns, seq: -1 }, 'snapshot');
  }
  if (ledger) {
    for (const entry of await ledger.list(thread.id)) {
      if (dropped.has(entry.ns)) continue;
      const compaction = compactions?.find((c) => c.ns === entry.ns);
      if (compaction?.ledger && compaction.goes(entry.seq)) continue;
      visit(entry.outcome === null ? null : decode(entry.outcome, `ledger entry ${entry.key}`), { thread: thread.id, ns: entry.ns, seq: entry.seq }, 'ledger');
    }
  }
}

/** Visits the values of every position of one namespace (every branch); returns its highest seq (-1 when empty). */
async function visitPositions(cp: Checkpointer, threadId: string, ns: string, visit: RefVisitor, skip?: (seq: number) => boolean): Promise<number> {
  let last = -1;
  for await (const position of namespacePositions(cp, threadId, ns)) {
    if (skip?.(position.seq)) continue;
    const where = `${describePosition(ns, position.seq)} of thread ${threadId}`;
    const body = decode<PositionBody>(position.body, where);
    const values: unknown[] = [body.interrupts];
    for (const change of Object.values(body.changes)) if ('set' in change) values.push(change.set);
    // Newer positions list the refs they wrote (values and items) in their body; older
    // ones are read item by item.
    if (body.artifacts) values.push(body.artifacts);
    else {
      const fields = appendedFields(body);
      if (fields.length) for (const item of await cp.getPositionItems(threadId, ns, position.seq, fields)) values.push(decode(item.text, `item of ${where}`));
    }
    visit(values, { thread: threadId, ns, seq: position.seq }, 'position');
    last = position.seq;
  }
  return last;
}

/** Visits the snapshots of one namespace at or below `last`, newest first: each query finds the newest one below the previous. */
async function visitSnapshots(cp: Checkpointer, threadId: string, ns: string, last: number, visit: RefVisitor, skip?: (seq: number) => boolean): Promise<void> {
  for (let below = last; below >= 0; ) {
    const snapshot = await cp.getSnapshot(threadId, ns, [{ from: 0, to: below }]);
    if (!snapshot) break;
    if (skip?.(snapshot.seq)) {
      below = snapshot.seq - 1;
      continue;
    }
    const body = openSnapshot(snapshot.text);
    // A damaged snapshot is a verify problem, not a reason to stop collecting: the
    // positions above hold every value a snapshot can hold (rewritten snapshots aside).
    const where = `snapshot ${snapshot.seq}${ns === '' ? '' : ` of namespace ${ns}`} of thread ${threadId}`;
    visit(body === null ? null : decode(body, where), { thread: threadId, ns, seq: snapshot.seq }, 'snapshot');
    below = snapshot.seq - 1;
  }
}

export function oneOf<T>(value: T, allowed: T | T[] | undefined): boolean {
  return allowed === undefined || (Array.isArray(allowed) ? allowed.includes(value) : allowed === value);
}

export function threadRuleMatches(rule: ThreadRetentionRule & { ms: number }, thread: ThreadRecord, now: number): boolean {
  return oneOf(thread.status, rule.status) && (rule.tenant === undefined || (thread.tenant !== null && oneOf(thread.tenant, rule.tenant))) && thread.updatedAt < now - rule.ms;
}

function artifactRuleMatches(rule: ArtifactRetentionRule & { ms: number }, info: ArtifactInfo, now: number): boolean {
  if (rule.tenant !== undefined && (info.tenant === null || !oneOf(info.tenant, rule.tenant))) return false;
  if (rule.mediaType !== undefined) {
    const type = info.ref.media_type.split(';')[0]!.trim().toLowerCase();
    const patterns = Array.isArray(rule.mediaType) ? rule.mediaType : [rule.mediaType];
    const hit = patterns.some((p) => {
      const pattern = p.trim().toLowerCase();
      return pattern === '*/*' || pattern === type || (pattern.endsWith('/*') && type.startsWith(pattern.slice(0, -1)));
    });
    if (!hit) return false;
  }
  return info.freshAt < now - rule.ms;
}

/** A rule as `parseRetentionRule` reads it back: `mediaType=image/* olderThan=7d`. */
function describeRule(rule: ArtifactRetentionRule & { ms: number }): string {
  const parts = [];
  if (rule.mediaType !== undefined) parts.push(`mediaType=${[rule.mediaType].flat().join('|')}`);
  if (rule.tenant !== undefined) parts.push(`tenant=${[rule.tenant].flat().join('|')}`);
  parts.push(`olderThan=${formatDuration(rule.ms)}`);
  return parts.join(' ');
}

/**
 * Parses a rule written on a command line: `threads:status=completed,tenant=acme,olderThan=30d`
 * or `artifacts:mediaType=image/*,olderThan=7d` (`|` separates alternatives).
 *
 * @example
 * ```ts
 * parseRetentionRule('threads:status=completed|failed,olderThan=30d');
 * ```
 */
export function parseRetentionRule(text: string): { threads: ThreadRetentionRule } | { artifacts: ArtifactRetentionRule } {
  const match = /^(threads|artifacts):(.+)$/.exec(text.trim());
  if (!match) throw new InvalidOptionError(`retention rule ${JSON.stringify(text)} must start with "threads:" or "artifacts:", e.g. threads:status=completed,olderThan=30d.`);
  const fields: Record<string, string[]> = {};
  for (const pair of match[2]!.split(',')) {
    const [name, value] = pair.split('=');
    if (!name || value === undefined || value === '') throw new InvalidOptionError(`retention rule ${JSON.stringify(text)}: "${pair}" is not name=value.`);
    fields[name.trim()] = value.split('|').map((v) => v.trim());
  }
  const one = (values: string[] | undefined) => (values === undefined ? undefined : values.length === 1 ? values[0]! : values);
  if (!fields.olderThan) throw new InvalidOptionError(`retention rule ${JSON.stringify(text)} needs olderThan=<duration>.`);
  const olderThanMs = parseDuration(fields.olderThan[0]!);
  const allowed = match[1] === 'threads' ? ['status', 'tenant', 'olderThan'] : ['mediaType', 'tenant', 'olderThan'];
  for (const name of Object.keys(fields)) if (!allowed.includes(name)) throw new InvalidOptionError(`retention rule ${JSON.stringify(text)}: unknown field "${name}" (allowed: ${allowed.join(', ')}).`);
  for (const status of fields.status ?? []) if (!(THREAD_STATUSES as readonly string[]).includes(status)) throw new InvalidOptionError(`retention rule ${JSON.stringify(text)}: unknown status "${status}" (one of ${THREAD_STATUSES.join(', ')}).`);
  if (match[1] === 'threads') {
    return { threads: { olderThanMs, ...(fields.status ? { status: one(fields.status) as ThreadStatus } : {}), ...(fields.tenant ? { tenant: one(fields.tenant)! } : {}) } };
  }
  return { artifacts: { olderThanMs, ...(fields.mediaType ? { mediaType: one(fields.mediaType)! } : {}), ...(fields.tenant ? { tenant: one(fields.tenant)! } : {}) } };
}

/** The rule kinds of a {@link RetentionPolicy}, each with the keys its rules may hold. */
const RULE_KEYS: Record<keyof RetentionPolicy, readonly string[]> = {
  threads: ['status', 'tenant', 'olderThanMs', 'olderThan'],
  artifacts: ['mediaType', 'tenant', 'olderThanMs', 'olderThan'],
  positions: ['status', 'tenant', 'olderThanMs', 'olderThan', 'keepLast', 'ledger'],
  store: ['namespace', 'olderThanMs', 'olderThan'],
  ledger: ['status', 'tenant', 'olderThanMs', 'olderThan'],
};

/**
 * Checks a whole retention policy before anything runs: a misspelt key, status or age
 * would otherwise make a rule match nothing, and a retention run that removes nothing
 * looks like one that found nothing to remove. InvalidOptionError naming the rule
 * (`threads[0]`) and the value for: a key that is not a rule kind, a kind that is not a
 * list, a rule that is not an object or holds a key its kind does not have, a status
 * that is not a ThreadStatus, a tenant or media type that is not a string (or a
 * non-empty list of them), an age (`olderThanMs`, `olderThan`) that is not a duration of
 * 0 or more, a rule without one where its kind needs it, a `keepLast` that is not a
 * whole number of 1 or more, a `ledger` that is not a boolean, a store `namespace` that
 * is not a list of strings.
 *
 * @example
 * ```ts
 * checkRetentionPolicy({ threads: [{ status: 'complete', olderThanMs: 0 }] });
 * // InvalidOptionError: retention policy threads[0]: unknown status "complete" (one of running, …)
 * ```
 */
export function checkRetentionPolicy(policy: unknown): RetentionPolicy {
  if (typeof policy !== 'object' || policy === null || Array.isArray(policy)) {
    throw new InvalidOptionError(`a retention policy is an object of rule lists (${Object.keys(RULE_KEYS).join(', ')}), got ${JSON.stringify(policy)}.`);
  }
  const kinds = Object.keys(RULE_KEYS) as (keyof RetentionPolicy)[];
  for (const [kind, rules] of Object.entries(policy)) {
    if (!(kinds as string[]).includes(kind)) throw new InvalidOptionError(`retention policy: unknown key "${kind}" (allowed: ${kinds.join(', ')}).`);
    if (rules === undefined) continue;
    if (!Array.isArray(rules)) throw new InvalidOptionError(`retention policy: "${kind}" must be a list of rules, got ${JSON.stringify(rules)}.`);
    rules.forEach((rule: unknown, i) => checkRule(kind as keyof RetentionPolicy, `${kind}[${i}]`, rule));
  }
  return policy as RetentionPolicy;
}

function checkRule(kind: keyof RetentionPolicy, name: string, rule: unknown): void {
  const refuse = (why: string): never => {
    throw new InvalidOptionError(`retention policy ${name}: ${why}.`);
  };
  if (typeof rule !== 'object' || rule === null || Array.isArray(rule)) return refuse(`a rule is an object, got ${JSON.stringify(rule)}`);
  const r = rule as Record<string, unknown>;
  const allowed = RULE_KEYS[kind];
  for (const key of Object.keys(r)) if (!allowed.includes(key)) refuse(`unknown key "${key}" (allowed: ${allowed.join(', ')})`);
  const strings = (key: string, check?: (value: string) => void) => {
    const value = r[key];
    if (value === undefined) return;
    const list = Array.isArray(value) ? value : [value];
    if (list.length === 0) refuse(`${key} is an empty list, which matches nothing: leave ${key} out to match every one`);
    for (const item of list) {
      if (typeof item !== 'string') refuse(`${key} must be a string or a list of strings, got ${JSON.stringify(value)}`);
      check?.(item);
    }
  };
  strings('status', (status) => {
    if (!(THREAD_STATUSES as readonly string[]).includes(status)) refuse(`unknown status ${JSON.stringify(status)} (one of ${THREAD_STATUSES.join(', ')})`);
  });
  strings('tenant');
  strings('mediaType');
  if (r.olderThanMs !== undefined && (typeof r.olderThanMs !== 'number' || !Number.isFinite(r.olderThanMs) || r.olderThanMs < 0)) {
    refuse(`olderThanMs must be a number of milliseconds (0 or more), got ${JSON.stringify(r.olderThanMs)}`);
  }
  if (r.olderThan !== undefined) {
    if (typeof r.olderThan !== 'number' && typeof r.olderThan !== 'string') refuse(`olderThan must be a duration (30d, 12h) or a number of ms (0 or more), got ${JSON.stringify(r.olderThan)}`);
    try {
      parseDuration(r.olderThan as number | string);
    } catch {
      refuse(`olderThan must be a duration (30d, 12h) or a number of ms (0 or more), got ${JSON.stringify(r.olderThan)}`);
    }
  }
  const age = r.olderThanMs ?? r.olderThan;
  if (r.keepLast !== undefined && (typeof r.keepLast !== 'number' || !Number.isSafeInteger(r.keepLast) || r.keepLast < 1)) {
    refuse(`keepLast must be a whole number of positions (1 or more), got ${JSON.stringify(r.keepLast)}`);
  }
  if (r.ledger !== undefined && typeof r.ledger !== 'boolean') refuse(`ledger must be true or false, got ${JSON.stringify(r.ledger)}`);
  if (kind === 'store' && (!Array.isArray(r.namespace) || r.namespace.some((part) => typeof part !== 'string'))) {
    refuse(`a store rule needs namespace: a list of strings (a prefix), got ${JSON.stringify(r.namespace)}`);
  }
  if (kind === 'positions') {
    if (age === undefined && r.keepLast === undefined) refuse('a positions rule needs olderThanMs or keepLast (or both)');
  } else if (age === undefined) refuse('needs olderThanMs (an age: 0 for every age)');
}

/** A duration option given in ms (`name`) or, deprecated, under its old name as ms or a duration text. */
export function durationOption(name: string, ms: number | undefined, deprecated: number | string | undefined): number | undefined {
  if (ms !== undefined) {
    if (typeof ms !== 'number' || !Number.isFinite(ms) || ms < 0) throw new InvalidOptionError(`${name} must be a number of milliseconds (0 or more), got ${JSON.stringify(ms)}.`);
    return ms;
  }
  return deprecated === undefined ? undefined : parseDuration(deprecated);
}

/**
 * A maintenance call's `dryRun`: true, false or left out. Anything else is refused: a
 * `"true"` read from a config file or the environment is not `true`, and taken as "not
 * a dry run" it removed for real what the caller only meant to see.
 */
export function dryRunOption(call: string, value: unknown): boolean {
  if (value === undefined || typeof value === 'boolean') return value === true;
  throw new InvalidOptionError(`${call}: dryRun must be true or false, got ${JSON.stringify(value) ?? String(value)}. Nothing was removed.`);
}

/**
 * A maintenance call's `now` (ms since the epoch), default `Date.now()`. A value that is
 * not a finite number is refused: NaN, or a date as text, made every age comparison
 * false, so the rules silently matched nothing.
 */
export function nowOption(call: string, value: unknown): number {
  if (value === undefined) return Date.now();
  if (typeof value !== 'number' || !Number.isFinite(value)) throw new InvalidOptionError(`${call}: now must be a finite number of ms since the epoch, got ${typeof value === 'number' ? String(value) : (JSON.stringify(value) ?? String(value))}.`);
  return value;
}

/** The age in ms a retention rule asks for; a rule without one is an error, not "every age". */
export function ruleAge(rule: RuleAge): number {
  const ms = durationOption('olderThanMs', rule.olderThanMs, rule.olderThan);
  if (ms === undefined) throw new InvalidOptionError(`retention rule ${JSON.stringify(rule)} needs olderThanMs.`);
  return ms;
}

/** Milliseconds in the largest unit that divides them (`7d`, `90m`, `1500ms`), as durations are written on a command line. */
function formatDuration(ms: number): string {
  if (ms === 0) return '0';
  for (const [unit, size] of [['w', 604_800_000], ['d', 86_400_000], ['h', 3_600_000], ['m', 60_000], ['s', 1000]] as const) {
    if (ms % size === 0) return `${ms / size}${unit}`;
  }
  return `${ms}ms`;
}
