/**
 * @module inspect/redaction
 * Redaction for the faces that read storage without the application's code (the
 * CLI, the web inspector, exports): the rules come from the graph descriptions the
 * runtime keeps in the store (`['cairn', 'graphs', <name>]`, each with the `redact`
 * rules of its version), merged with the patterns a face is given (`--redact-pattern`),
 * and are applied by internal/redaction's {@link Redactor} to the shapes the inspect
 * functions return: a stored state, a diff, ledger entries, a position's ledger.
 * Everything else a face shows goes through {@link Redactor.value} last, which hides
 * what matches a pattern and what a path rule hid elsewhere in the same output.
 *
 * @example
 * ```ts
 * const r = await threadRedactor(engine, 'cust_42', { patterns: ['sk-[a-z0-9]+'] });
 * const view = redactStoredState(r, await storedState(engine.checkpointer, 'cust_42'));
 * ```
 */
import type { ArtifactRef } from '../contracts/artifact-store.js';
import type { Engine } from '../contracts/engine.js';
import type { Store } from '../contracts/store.js';
import type { ThreadRecord } from '../contracts/threads.js';
import { ArtifactTooLargeToRedactError } from '../errors.js';
import { GRAPH_NAMESPACE } from '../internal/graphs.js';
import { compilePattern, mergeRules, Redactor, type RedactionRules } from '../internal/redaction.js';
import type { EvaluationReport, ThreadEvaluation } from '../runtime/evaluate.js';
import type { GraphDescription } from '../runtime/graph-description.js';
import type { FieldDiff, ThreadDiff } from './diff.js';
import type { LedgerEntryView, PositionLedger } from './position-ledger.js';
import { storedState, type StoredState } from './stored-state.js';

/** How a face redacts: the default is the stored rules; `raw` shows values as stored; `patterns` adds patterns of its own. */
export interface RedactionChoice {
  /** Show stored values intact (`--raw`). Default false. */
  raw?: boolean;
  /** More patterns to hide, as regular expression sources (`--redact-pattern`). */
  patterns?: readonly string[];
}

/** The rules stored with the descriptions of graph `graph` (every version), or of every graph when `graph` is omitted. */
export async function storedRedaction(store: Pick<Store, 'list'>, graph?: string): Promise<RedactionRules> {
  const namespace = graph === undefined ? [...GRAPH_NAMESPACE] : [...GRAPH_NAMESPACE, graph];
  const all: RedactionRules[] = [];
  for (let offset = 0; ; offset += 1000) {
    const page = await store.list<GraphDescription>(namespace, { limit: 1000, offset });
    for (const item of page) if (item.value && typeof item.value === 'object' && item.value.redact) all.push(item.value.redact);
    if (page.length < 1000) break;
  }
  return mergeRules(...all);
}

/** The extra patterns of a choice as rules; InvalidOptionError for one that does not compile. */
function choiceRules(choice: RedactionChoice): RedactionRules {
  return {
    paths: [],
    records: {},
    effects: {},
    patterns: (choice.patterns ?? []).map((source) => {
      const re = compilePattern(source);
      return { source: re.source, flags: re.flags.replace('g', '') };
    }),
  };
}

/**
 * The redactor for what a face shows of thread `thread` (an id or its record): the
 * rules of its graph (`metadata.graph`, default `default`) merged with the choice's
 * patterns; nothing hidden with `raw`. Without a thread (a list of threads), the
 * rules of every stored graph.
 */
export async function threadRedactor(engine: Pick<Engine, 'checkpointer' | 'store'>, thread: string | ThreadRecord | null | undefined, choice: RedactionChoice = {}): Promise<Redactor> {
  if (choice.raw) return Redactor.none();
  const record = typeof thread === 'string' ? await engine.checkpointer.getThread(thread) : thread;
  const graph = thread === undefined || thread === null ? undefined : typeof record?.metadata.graph === 'string' ? record.metadata.graph : 'default';
  return new Redactor(mergeRules(await storedRedaction(engine.store, graph), choiceRules(choice)));
}

/** A stored state, its fields through the path rules. */
export function redactStoredState<T extends Pick<StoredState, 'state'>>(r: Redactor, view: T): T {
  return r.active ? { ...view, state: r.state(view.state) } : view;
}

/** A diff, each field's values (and items, at their indexes) as the states would show them. */
export function redactDiff<T extends Pick<ThreadDiff, 'fields'>>(r: Redactor, diff: T): T {
  if (!r.active) return diff;
  const field = (f: FieldDiff): FieldDiff => {
    if ('items' in f) return { ...f, items: r.items(f.field, f.from, f.items) };
    const out = { ...f } as Record<string, unknown>;
    if ('before' in f) out.before = r.field(f.field, f.before);
    if ('after' in f) out.after = r.field(f.field, f.after);
    return out as FieldDiff;
  };
  return { ...diff, fields: diff.fields.map(field) };
}

/**
 * Teaches `r` what its path rules hide in the two states a diff compares (of its
 * namespace, at both seqs), before {@link redactDiff}: a diff holds only the fields
 * that differ, and one of them may quote a field that does not (a draft that repeats
 * the customer's email), or one listed after it. Does nothing when the rules have no
 * paths.
 */
export async function learnDiffStates(r: Redactor, engine: Pick<Engine, 'checkpointer'>, diff: Pick<ThreadDiff, 'thread' | 'ns' | 'from' | 'to'>): Promise<void> {
  if (!r.active || r.rules.paths.length === 0) return;
  for (const seq of new Set([diff.from.seq, diff.to.seq])) r.learnState((await storedState(engine.checkpointer, diff.thread, { ns: diff.ns ?? '', seq })).state);
}

/** A ledger entry with its outcome decoded: the outcome through its record's or effect's rules. */
export function redactLedgerEntry<T extends Pick<LedgerEntryView, 'kind' | 'name'> & { outcome?: unknown }>(r: Redactor, entry: T): T {
  if (!r.active || !('outcome' in entry)) return entry;
  return { ...entry, outcome: r.outcome(entry.kind, entry.name, entry.outcome) };
}

/** A position's ledger ({@link positionLedger}): every entry's outcome. */
export function redactPositionLedger(r: Redactor, ledger: PositionLedger): PositionLedger {
  if (!r.active) return ledger;
  return {
    ...ledger,
    records: ledger.records.map((e) => redactLedgerEntry(r, e)),
    effects: ledger.effects.map((e) => redactLedgerEntry(r, e)),
    inProgress: ledger.inProgress.map((e) => redactLedgerEntry(r, e)),
  };
}

/**
 * Teaches `r` the values its path rules hide in the thread's head state (root
 * namespace), for faces that do not show the state (history, effects, attempts) but
 * may repeat those values (an interrupt payload, an error message). Does nothing
 * when the rules have no paths or the thread has no readable head.
 */
export async function learnHead(r: Redactor, engine: Pick<Engine, 'checkpointer'>, threadId: string): Promise<void> {
  if (!r.active || r.rules.paths.length === 0) return;
  try {
    r.state((await storedState(engine.checkpointer, threadId)).state);
  } catch {
    // No head (or an unreadable one): the face reports that itself, if it reads it.
  }
}

/** Teaches `r` what its path rules hide in the thread's stored state at `seq` (root namespace); nothing when it cannot be read. */
async function learnStateAt(r: Redactor, engine: Pick<Engine, 'checkpointer'>, threadId: string, seq: number): Promise<void> {
  if (!r.active || r.rules.paths.length === 0) return;
  try {
    r.learnState((await storedState(engine.checkpointer, threadId, { seq })).state);
  } catch {
    // An unreadable position: the report says what the evaluation found there itself.
  }
}

/**
 * Teaches `r` what its path rules hide in the head state of each of `threads` that
 * holds an error, for faces that list thread records (the CLI's `threads`, the
 * inspector's thread list, an action's answer): a node's error message often quotes
 * the state it failed on, and a list shows no state to learn it from. One head read
 * per listed thread with an error; nothing when the rules have no paths.
 */
export async function learnErrorHeads(r: Redactor, engine: Pick<Engine, 'checkpointer'>, threads: readonly Pick<ThreadRecord, 'id' | 'lastError'>[]): Promise<void> {
  if (!r.active || r.rules.paths.length === 0) return;
  for (const thread of threads) if (thread.lastError) await learnHead(r, engine, thread.id);
}

/** An evaluation report: each thread's diff (stored → evaluated) under its thread's rules, then every text. */
export async function redactEvaluationReport(engine: Pick<Engine, 'checkpointer' | 'store'>, report: EvaluationReport, choice: RedactionChoice = {}, extra?: RedactionRules): Promise<EvaluationReport> {
  if (choice.raw) return report;
  const threads: ThreadEvaluation[] = [];
  for (const t of report.threads) {
    const stored = await threadRedactor(engine, t.threadId, choice);
    const r = extra ? new Redactor(mergeRules(stored.rules, extra)) : stored;
    const diff = t.firstDivergence?.diff;
    // A diff holds only the fields that differ: a changed one may quote a hidden one that did not (an answer repeating the email).
    if (diff) await learnStateAt(r, engine, t.threadId, t.firstDivergence!.seq);
    const shown = diff ? { ...t, firstDivergence: { ...t.firstDivergence!, diff: redactDiff(r, diff) } } : t;
    threads.push(r.value(shown) as ThreadEvaluation);
  }
  return { ...report, threads };
}

/** The longest text artifact read whole to redact it (16 MiB): longer ones are refused, not shown in the clear. */
export const MAX_REDACTED_TEXT_BYTES = 16 * 1024 * 1024;

/** Types whose bytes are text a person reads (any `text/*`, JSON and `+json`): what redaction rules apply to. Images and other binary types are not redacted. */
export function redactsAsText(mediaType: string): boolean {
  const type = mediaType.split(';')[0]!.trim().toLowerCase();
  return type.startsWith('text/') || type === 'application/json' || /^application\/[a-z0-9.+-]+\+json$/.test(type);
}

/**
 * A text artifact's bytes through `r`: the patterns, and the values path rules hid in
 * the states `r` has seen. ArtifactTooLargeToRedactError past {@link MAX_REDACTED_TEXT_BYTES}.
 */
export async function redactArtifactText(r: Redactor, ref: ArtifactRef, bytes: AsyncIterable<Uint8Array>): Promise<{ bytes: Buffer; changed: boolean }> {
  if (ref.size_bytes > MAX_REDACTED_TEXT_BYTES) {
    throw new ArtifactTooLargeToRedactError(`artifact ${ref.id} is ${ref.size_bytes} bytes of text, more than the ${MAX_REDACTED_TEXT_BYTES} that are redacted whole: show it raw (--raw) or leave artifacts out.`);
  }
  const chunks: Uint8Array[] = [];
  for await (const chunk of bytes) chunks.push(chunk);
  const text = Buffer.concat(chunks).toString('utf8');
  const shown = r.text(text);
  return { bytes: Buffer.from(shown, 'utf8'), changed: shown !== text };
}
