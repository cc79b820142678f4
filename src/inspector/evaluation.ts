/**
 * @module inspector/evaluation
 * Evaluation replay from the web inspector. `POST /api/evaluate` (an action: it needs
 * `--allow-actions`, the page's proof of origin, and `--app`, since it runs the
 * application's code and calls its models) evaluates a set of stored threads with the
 * loaded application, as `cairn eval --app` does, and answers the
 * {@link EvaluationReport}; nothing is written. `GET /api/evaluation-report` answers
 * the report `cairn inspect --eval-report <file>` loaded (one `cairn eval --json`
 * saved), read-only: nothing runs.
 *
 * | body field | meaning |
 * |---|---|
 * | `threads` | thread ids, evaluated in this order |
 * | `filters` | the thread list's filters, as `GET /api/threads` takes them (`q`, `status`, `kind`, `tenant`, `meta`, `updatedSince`, `order`) |
 * | `limit` | at most this many listed threads (default {@link INSPECTOR_EVAL_THREADS}, at most {@link INSPECTOR_EVAL_MAX}); ids count too |
 */
import type { ThreadQuery } from '../contracts/threads.js';
import { decode } from '../codec/tagged-json.js';
import { INSPECTOR_EVAL_MAX, INSPECTOR_EVAL_THREADS } from '../defaults.js';
import { AppRequiredError, InvalidOptionError } from '../errors.js';
import type { EvaluationReport, EvaluationSelection } from '../runtime/evaluate.js';
import type { ActionContext } from './actions.js';
import { threadQueryOf } from './thread-list.js';

/** The route of the evaluation action (`POST`). */
export const EVALUATE_ROUTE = '/api/evaluate';

/** The route of a saved report (`GET`): `{ report }`, null when none was loaded. */
export const SAVED_REPORT_ROUTE = '/api/evaluation-report';

/** The filters of the thread list an evaluation may take (what `GET /api/threads` reads, without paging). */
const FILTERS = new Set(['q', 'status', 'kind', 'tenant', 'meta', 'updatedSince', 'order']);

/**
 * Which threads a `POST /api/evaluate` body names: its ids, and the threads its
 * filters list (read as the thread list reads them, so the page's current filters
 * select the same threads it shows), at most `limit` in all. InvalidOptionError for a
 * malformed body or one that names no thread.
 *
 * @example
 * ```ts
 * evaluationSelection({ filters: { status: 'completed' }, limit: 10 });
 * // { query: { order: 'id', status: ['completed'], limit: 10 } }
 * ```
 */
export function evaluationSelection(body: Record<string, unknown>): EvaluationSelection {
  const limit = body.limit ?? INSPECTOR_EVAL_THREADS;
  if (typeof limit !== 'number' || !Number.isSafeInteger(limit) || limit < 1 || limit > INSPECTOR_EVAL_MAX) {
    throw new InvalidOptionError(`limit: expected a whole number from 1 to ${INSPECTOR_EVAL_MAX} (each thread's model calls are made again).`);
  }
  let threads: string[] | undefined;
  if (body.threads !== undefined) {
    if (!Array.isArray(body.threads) || body.threads.some((t) => typeof t !== 'string' || t === '')) throw new InvalidOptionError('threads: expected a list of thread ids.');
    threads = [...new Set(body.threads as string[])];
    if (threads.length > limit) throw new InvalidOptionError(`threads: ${threads.length} ids, more than the limit of ${limit}.`);
  }
  let query: ThreadQuery | undefined;
  if (body.filters !== undefined) {
    if (typeof body.filters !== 'object' || body.filters === null || Array.isArray(body.filters)) throw new InvalidOptionError("filters: expected an object of the thread list's filters.");
    const params = new URLSearchParams();
    for (const [name, value] of Object.entries(body.filters)) {
      if (!FILTERS.has(name)) throw new InvalidOptionError(`filters.${name}: not a filter of the thread list (${[...FILTERS].join(', ')}).`);
      const values = Array.isArray(value) ? value : [value];
      for (const v of values) {
        if (typeof v !== 'string' && typeof v !== 'number') throw new InvalidOptionError(`filters.${name}: expected text or a number.`);
        if (v !== '') params.append(name, String(v));
      }
    }
    // The list's own parser: the same threads the page lists, without its paging.
    const { query: listed } = threadQueryOf(params);
    const { after: _after, limit: _limit, ...rest } = listed;
    query = { ...rest, limit: limit - (threads?.length ?? 0) };
  }
  if (!threads?.length && !query) throw new InvalidOptionError('say which threads to evaluate: threads (ids) or filters (those the thread list takes).');
  return { ...(threads?.length ? { threads } : {}), ...(query && query.limit! > 0 ? { query } : {}) };
}

/** Performs `POST /api/evaluate`: the loaded application evaluates the threads `body` names. AppRequiredError without one. */
export async function evaluateAction(context: ActionContext, body: Record<string, unknown>): Promise<EvaluationReport> {
  if (!context.app) throw new AppRequiredError('evaluating threads');
  return context.app.evaluate(evaluationSelection(body));
}

/**
 * A report `cairn eval --json` saved (tagged JSON), read back; InvalidOptionError when
 * `text` is not one.
 *
 * @example
 * ```ts
 * const report = parseEvaluationReport(readFileSync('eval.json', 'utf8'), 'eval.json');
 * await startInspector({ engine, evaluationReport: report });
 * ```
 */
export function parseEvaluationReport(text: string, where: string): EvaluationReport {
  let report: Partial<EvaluationReport>;
  try {
    // Text that is not JSON is said as such: decode's CorruptRecordError would advise
    // `cairn verify`, which is about a database, not a file.
    JSON.parse(text);
  } catch (error) {
    throw new InvalidOptionError(`${where}: not a report of cairn eval --json: it is not JSON (${(error as Error).message}).`);
  }
  try {
    report = decode<Partial<EvaluationReport>>(text, where);
  } catch (error) {
    throw new InvalidOptionError(`${where}: not a report of cairn eval --json: ${(error as Error).message}`);
  }
  if (typeof report !== 'object' || report === null || !Array.isArray(report.threads) || typeof report.summary !== 'object' || report.summary === null) {
    throw new InvalidOptionError(`${where}: not a report of cairn eval --json (it has no threads and summary).`);
  }
  return report as EvaluationReport;
}
