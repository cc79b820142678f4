/**
 * @module runtime/evaluate
 * Evaluation replay: stored threads re-run with changed code, prompt or model. Each
 * thread's steps are recomputed from its first position by {@link replayThread} in
 * evaluation mode: model calls are made anew by the code under evaluation, tool
 * results and effect outcomes are served from the record and nothing external is
 * called; a call the record does not hold (another tool, other arguments, an effect
 * it never made) stops that thread at that step as a divergence, never executed.
 * Nothing is written: the stored threads stay as they are.
 *
 * The report gives, per thread, the first step whose state or calls diverged, with
 * the diff of the states, and the tokens and latency of the new model calls beside
 * what the stored run's recorded; then a summary over every thread.
 */
import type { TokenUsage } from '../contracts/ledger.js';
import type { ThreadQuery } from '../contracts/threads.js';
import { diffStates, type StateDiff } from '../inspect/diff.js';
import { replayThread, type ReplayDivergenceInfo, type ReplaySettings } from './replay.js';
import type { EvaluatedModelCall } from './task-scope.js';

/** How one thread fared: `same` (every step reached its stored state), `diverged`, or `failed` (it could not be evaluated). */
export type EvaluationOutcome = 'same' | 'diverged' | 'failed';

/** The first step of a thread that did not reach its stored state, and why. */
export interface EvaluationDivergence {
  seq: number;
  nodes: string[];
  /** Fields whose value differs from the stored one. */
  differences: string[];
  /** Calls the record could not answer (the thread stopped there), and control flow that went elsewhere. */
  calls: ReplayDivergenceInfo[];
  /** The evaluated state against the stored one (`before`: stored), when fields differ. */
  diff: StateDiff | null;
}

/** Tokens and time of a thread's model calls: the stored run's, and the evaluation's. */
export interface EvaluationCost {
  calls: number;
  usage: TokenUsage;
  latencyMs: number;
}

/** One thread's evaluation. */
export interface ThreadEvaluation {
  threadId: string;
  outcome: EvaluationOutcome;
  /** Positions recomputed (or applied) before the end or the first call divergence. */
  steps: number;
  firstDivergence: EvaluationDivergence | null;
  /** What the stored run's model calls recorded (every namespace), and what the evaluation's cost. */
  recorded: EvaluationCost;
  evaluated: EvaluationCost;
  /** Each model call the evaluation made, at its step, beside what the stored run recorded at the same call (null: nothing there). */
  models: (EvaluatedModelCall & { seq: number })[];
  /** Why a `failed` thread could not be evaluated. */
  error?: { code: string; message: string };
}

/** What {@link App.evaluate} found, per thread and over all of them. */
export interface EvaluationReport {
  threads: ThreadEvaluation[];
  summary: { threads: number; same: number; diverged: number; failed: number; recorded: EvaluationCost; evaluated: EvaluationCost };
}

/** Which threads to evaluate: by id, or every thread a query lists (both: the union, ids first). */
export interface EvaluationSelection {
  threads?: readonly string[];
  query?: ThreadQuery;
}

const PAGE = 500;

/**
 * Evaluates threads of `stored`'s engine with the graph of `candidate` (its nodes, so
 * its prompts and models). Threads are evaluated one after another, in the order
 * selected.
 */
export async function evaluateThreads(candidate: ReplaySettings, selection: EvaluationSelection): Promise<EvaluationReport> {
  const ids = await selectThreads(candidate, selection);
  const threads: ThreadEvaluation[] = [];
  for (const threadId of ids) threads.push(await evaluateThread(candidate, threadId));
  const count = (outcome: EvaluationOutcome) => threads.filter((t) => t.outcome === outcome).length;
  return {
    threads,
    summary: {
      threads: threads.length,
      same: count('same'),
      diverged: count('diverged'),
      failed: count('failed'),
      recorded: sumCosts(threads.map((t) => t.recorded)),
      evaluated: sumCosts(threads.map((t) => t.evaluated)),
    },
  };
}

async function selectThreads(settings: ReplaySettings, selection: EvaluationSelection): Promise<string[]> {
  const ids = [...(selection.threads ?? [])];
  if (selection.query) {
    const { limit, ...query } = selection.query;
    let taken = 0;
    for (let after: ThreadQuery['after']; ; ) {
      const want = limit === undefined ? PAGE : Math.min(PAGE, limit - taken);
      if (want <= 0) break;
      const page = await settings.engine.checkpointer.listThreads({ ...query, limit: want, ...(after !== undefined ? { after } : {}) });
      ids.push(...page.map((t) => t.id));
      taken += page.length;
      if (page.length < want) break;
      after = query.order === 'updatedAt' ? page.at(-1)! : page.at(-1)!.id;
    }
  }
  return [...new Set(ids)];
}

async function evaluateThread(settings: ReplaySettings, threadId: string): Promise<ThreadEvaluation> {
  const recorded = await recordedCost(settings, threadId);
  try {
    const report = await replayThread(settings, threadId, { from: 0 }, { evaluate: true, stopAtDivergence: true });
    const first = report.steps.find((s) => !s.same);
    const models = report.steps.flatMap((s) => (s.models ?? []).map((m) => ({ seq: s.seq, ...m })));
    return {
      threadId,
      outcome: first ? 'diverged' : 'same',
      steps: report.steps.length,
      firstDivergence: first
        ? { seq: first.seq, nodes: first.nodes, differences: first.differences, calls: first.divergences, diff: first.states ? diffStates(first.states.stored, first.states.evaluated) : null }
        : null,
      recorded,
      evaluated: sumCosts(models.map((m) => ({ calls: 1, usage: m.evaluated.usage ?? {}, latencyMs: m.evaluated.latencyMs ?? 0 }))),
      models,
    };
  } catch (error) {
    const e = error as { code?: string; message?: string };
    return {
      threadId,
      outcome: 'failed',
      steps: 0,
      firstDivergence: null,
      recorded,
      evaluated: { calls: 0, usage: {}, latencyMs: 0 },
      models: [],
      error: { code: e.code ?? 'ERR_THROWN', message: e.message ?? String(error) },
    };
  }
}

/** What the stored run's model records say they cost. */
async function recordedCost(settings: ReplaySettings, threadId: string): Promise<EvaluationCost> {
  const entries = await settings.engine.ledger.list(threadId);
  return sumCosts(entries.filter((e) => e.meta?.kind === 'model').map((e) => ({ calls: 1, usage: e.meta!.usage ?? {}, latencyMs: e.meta!.latencyMs ?? 0 })));
}

function sumCosts(costs: readonly EvaluationCost[]): EvaluationCost {
  const total: EvaluationCost = { calls: 0, usage: {}, latencyMs: 0 };
  for (const cost of costs) {
    total.calls += cost.calls;
    total.latencyMs += cost.latencyMs;
    for (const field of ['inputTokens', 'outputTokens', 'totalTokens'] as const) {
      const n = cost.usage[field];
      if (n !== undefined) total.usage[field] = (total.usage[field] ?? 0) + n;
    }
  }
  return total;
}
