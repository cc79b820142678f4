/**
 * @module inspect/position-ledger
 * What one position's step recorded: its recorded outputs (`ctx.record`: name, key,
 * the value served on re-execution) and its effects (`ctx.effect`: key, argument
 * digest, outcome, status), read from the ledger by the keys the position names. At
 * a namespace's head it adds the entries of the step in progress (started from the
 * head, not committed yet): where an effect in doubt sits while the thread needs
 * attention.
 *
 * The ledger keeps an effect's intent and outcome; the position that committed an
 * effect recovered after a crash or a failed try also says how recovery settled it
 * (its probe found it, or it ran again with the same key): {@link EffectView.recovery}
 * tells both.
 *
 * @example
 * ```ts
 * const { records, effects, inProgress } = await positionLedger(engine, 'cust_42', { seq: 3 });
 * for (const e of [...effects, ...inProgress]) console.log(e.name, e.key, e.status, e.recovery);
 * ```
 */
import type { Engine } from '../contracts/engine.js';
import type { LedgerEntry } from '../contracts/ledger.js';
import { decode } from '../codec/tagged-json.js';
import { PositionNotFoundError, ThreadNotFoundError } from '../errors.js';
import type { EffectRecoveryDecision } from '../runtime/position.js';
import { positionInfo } from './history.js';
import { checkNamespace } from './walk.js';

/** A ledger entry with its outcome decoded (absent while it has none). Fields a runtime adds to entries (`meta`…) are kept as they are. */
export type LedgerEntryView = Omit<LedgerEntry, 'outcome'> & { outcome?: unknown };

/**
 * What is known of an effect's recovery:
 * - `done`: its outcome is recorded (it ran once, or a person resolved it);
 * - `probe_found`: it was found in doubt and its probe found it: it did not run again;
 * - `probe_absent_reran`: found in doubt, its probe did not find it: it ran again with the same key;
 * - `reran`: found in doubt, with no probe: it ran again with the same key;
 * - `open`: an intent without an outcome; the next run recovers it (its probe, or a run again with the same key);
 * - `in_doubt`: an intent without an outcome on a thread that needs attention: an at-most-once effect a person settles (`cairn resolve-effect`).
 */
export type EffectRecovery = 'done' | EffectRecoveryDecision | 'open' | 'in_doubt';

/** An effect entry with what the ledger tells of its recovery. */
export type EffectView = LedgerEntryView & { recovery: EffectRecovery; needsAttention: boolean };

/** What {@link positionLedger} returns. */
export interface PositionLedger {
  thread: string;
  ns: string;
  seq: number;
  /** The nodes of the position's step. */
  nodes: string[];
  /** The step's recorded outputs, in the order the position names them. */
  records: LedgerEntryView[];
  /** The step's effects, in the order the position names them. */
  effects: EffectView[];
  /** At the namespace's head only: entries of the step that started from it and has not committed (effects in doubt, records of a failed try). */
  inProgress: (LedgerEntryView | EffectView)[];
}

/** `entry` with its outcome decoded. */
export function ledgerEntryView(entry: LedgerEntry): LedgerEntryView {
  const { outcome, ...rest } = entry;
  return outcome === null ? rest : { ...rest, outcome: decode(outcome, `outcome of ${entry.key}`) };
}

/**
 * The recorded outputs and effects of the step of position `seq` of namespace `ns`
 * (default the root graph) of thread `threadId`. ThreadNotFoundError,
 * NamespaceNotFoundError for a namespace the thread does not have,
 * PositionNotFoundError for a seq the namespace does not have.
 *
 * @example
 * ```ts
 * const { records } = await positionLedger(engine, 'post', { seq: 1 });
 * console.log(records.map((r) => [r.name, r.outcome]));
 * ```
 */
export async function positionLedger(engine: Pick<Engine, 'checkpointer' | 'ledger'>, threadId: string, options: { ns?: string; seq: number }): Promise<PositionLedger> {
  const cp = engine.checkpointer;
  const ns = options.ns ?? '';
  const thread = await cp.getThread(threadId);
  if (!thread) throw new ThreadNotFoundError(threadId, { engine: cp.engine });
  await checkNamespace(cp, threadId, ns);
  const stored = await cp.getPosition(threadId, ns, options.seq);
  if (!stored) throw new PositionNotFoundError(threadId, options.seq, { engine: cp.engine });
  const info = positionInfo(stored, threadId);
  const inDoubt = thread.status === 'needs_attention';
  const decided = new Map(info.effects.map((e) => [e.key, e.recovery]));
  const effect = (e: LedgerEntry): EffectView => {
    const recovery: EffectRecovery = e.status === 'done' ? (decided.get(e.key) ?? 'done') : inDoubt ? 'in_doubt' : 'open';
    return { ...ledgerEntryView(e), recovery, needsAttention: recovery === 'in_doubt' };
  };
  const read = async (keys: string[]) => (await Promise.all(keys.map((k) => engine.ledger.get(threadId, k)))).filter((e): e is LedgerEntry => e !== null);
  const records = (await read(info.records.map((r) => r.key))).map(ledgerEntryView);
  const effects = (await read(info.effects.map((e) => e.key))).map(effect);

  const head = ns === '' ? thread.head : ((await cp.getHead(threadId, ns))?.seq ?? null);
  let inProgress: PositionLedger['inProgress'] = [];
  if (head === options.seq && info.next.length > 0) {
    // The step in progress is keyed by the seq it started from: the head. Its tasks are
    // not known before it commits, so every entry of the thread is read and filtered.
    const open = (await engine.ledger.list(threadId)).filter((e) => e.ns === ns && e.seq === options.seq);
    inProgress = open.map((e) => (e.kind === 'effect' ? effect(e) : ledgerEntryView(e)));
  }
  return { thread: threadId, ns, seq: options.seq, nodes: info.nodes, records, effects, inProgress };
}
