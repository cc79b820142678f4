/**
 * Evaluation replay on the page: stored threads re-run with the loaded application's
 * code (`cairn inspect --allow-actions --app …`), as `cairn eval` does. Model calls
 * are made anew, tool results and effect outcomes are served from the record, nothing
 * is written. The page says which threads it will evaluate and runs only when asked
 * (each run calls the models again); then it shows the summary (same, diverged,
 * failed), a row per thread with its outcome, and for each diverged thread the first
 * step that diverged: why (another tool, other arguments, an effect the record does
 * not hold), the state diff (stored → evaluated) and the model calls, recorded beside
 * evaluated, with their tokens and latency. `#/evaluate?saved=1` shows the report
 * `cairn inspect --eval-report <file>` loaded, without running anything.
 */
import { useState } from 'preact/hooks';
import { ApiError, api, type FieldDiff } from './api';
import { post, useActions } from './actions';
import { rows as diffRows } from './diff';
import { divergenceKind, type DivergentCall } from './divergence';
import { href } from './route';
import { useApi } from './use-api';

interface Usage {
  inputTokens?: number;
  outputTokens?: number;
  totalTokens?: number;
}
interface Cost {
  calls: number;
  usage: Usage;
  latencyMs: number;
}
interface RecordMeta {
  kind: string;
  model?: string;
  provider?: string;
  usage?: Usage;
  latencyMs?: number;
}
interface ThreadEvaluation {
  threadId: string;
  outcome: 'same' | 'diverged' | 'failed';
  steps: number;
  firstDivergence: { seq: number; nodes: string[]; differences: string[]; calls: DivergentCall[]; diff: { fields: FieldDiff[] } | null } | null;
  recorded: Cost;
  evaluated: Cost;
  models: { seq: number; node: string; call: number; name: string; recorded: RecordMeta | null; evaluated: RecordMeta }[];
  error?: { code: string; message: string };
}
/** What `POST /api/evaluate` answers (and `cairn eval --json` prints). */
export interface EvaluationReport {
  threads: ThreadEvaluation[];
  summary: { threads: number; same: number; diverged: number; failed: number; recorded: Cost; evaluated: Cost };
}

/** The thread list's filters an evaluation takes, as the list sends them to `GET /api/threads`. */
const FILTERS = ['q', 'status', 'kind', 'tenant', 'meta', 'updatedSince', 'order'];
const DEFAULT_LIMIT = 20;

/** The `#/evaluate` query of the threads a list with these filters shows (empty values left out). */
export function evaluateQuery(filters: Record<string, string | number | null | undefined | readonly string[]>): string {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(filters)) {
    if (Array.isArray(value)) for (const v of value) query.append(name, v);
    else if (value !== undefined && value !== null && value !== '') query.set(name, String(value));
  }
  return query.toString();
}

/** "Evaluate these threads", for the thread list: shown when the inspector has actions and an app; a saved report's link when one is loaded. */
export function EvaluateLinks({ filters }: { filters: Record<string, string | number | null | undefined | readonly string[]> }) {
  const info = useActions();
  const saved = useApi(() => api<{ report: unknown }>('evaluation-report'), []);
  return (
    <p class="evaluate-links">
      {info?.allowed &&
        (info.app ? (
          <a href={href({ view: 'evaluate', query: evaluateQuery(filters) })} data-testid="evaluate-threads">
            Evaluate these threads
          </a>
        ) : (
          <span class="disabled-action" data-testid="evaluate-threads-disabled">
            evaluate these threads <span class="hint">(runs the app’s code and models: start the inspector with --app &lt;module#export&gt;)</span>
          </span>
        ))}{' '}
      {saved.data?.report ? (
        <a href={href({ view: 'evaluate', query: 'saved=1' })} data-testid="saved-report">
          saved evaluation report
        </a>
      ) : null}
    </p>
  );
}

/** The page of `#/evaluate?…`: the selection and a run button, or the saved report. */
export function EvaluateView({ query }: { query: string }) {
  const params = new URLSearchParams(query);
  if (params.get('saved') === '1') return <SavedReport />;
  return <RunEvaluation params={params} />;
}

function SavedReport() {
  const saved = useApi(() => api<{ report: EvaluationReport | null }>('evaluation-report'), []);
  return (
    <section>
      <p>
        <a href={href({ view: 'threads' })}>← threads</a>
      </p>
      <h1>Saved evaluation report</h1>
      {saved.error && <p class="error" data-testid="error">{saved.error.message}</p>}
      {saved.data && !saved.data.report && <p data-testid="no-report">no report was loaded: start the inspector with --eval-report &lt;file&gt; (one cairn eval --json wrote).</p>}
      {saved.data?.report && (
        <>
          <p class="hint">read from the file cairn inspect --eval-report named: nothing was run.</p>
          <Report report={saved.data.report} />
        </>
      )}
    </section>
  );
}

function RunEvaluation({ params }: { params: URLSearchParams }) {
  const info = useActions();
  const threads = (params.get('threads') ?? '').split(',').filter(Boolean);
  const filters: Record<string, string[]> = {};
  for (const name of FILTERS) if (params.getAll(name).length) filters[name] = params.getAll(name);
  const [limit, setLimit] = useState(Number(params.get('limit')) || Math.max(DEFAULT_LIMIT, threads.length));
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<Error | null>(null);
  const [report, setReport] = useState<EvaluationReport | null>(null);
  const run = async () => {
    setBusy(true);
    setError(null);
    try {
      const body = threads.length ? { threads, limit } : { filters, limit };
      setReport(await post<EvaluationReport>('evaluate', body));
    } catch (e) {
      setError(e as Error);
    } finally {
      setBusy(false);
    }
  };
  const shown = Object.entries(filters).map(([k, v]) => `${k}=${v.join(',')}`);
  return (
    <section>
      <p>
        <a href={href({ view: 'threads' })}>← threads</a>
        {threads.length === 1 && (
          <>
            {' · '}
            <a href={href({ view: 'thread', id: threads[0]!, ns: '' })}>thread {threads[0]}</a>
          </>
        )}
      </p>
      <h1>Evaluation replay</h1>
      <p data-testid="eval-selection">
        {threads.length ? `threads ${threads.join(', ')}` : `the threads the list shows${shown.length ? ` with ${shown.join(' · ')}` : ''}`}, re-run with the loaded application: its model calls are made anew, tool results and effect outcomes are served from the record, nothing is written.
      </p>
      {info && !(info.allowed && info.app) ? (
        <p class="disabled-action" data-testid="eval-disabled">
          evaluating runs the application’s code and calls its models: start the inspector with --allow-actions --app &lt;module#export&gt;
        </p>
      ) : (
        <p>
          {!threads.length && (
            <label>
              at most{' '}
              <input type="number" min={1} max={200} size={4} data-testid="eval-limit" value={limit} onInput={(e) => setLimit(Number((e.target as HTMLInputElement).value))} /> threads{' '}
            </label>
          )}
          <button type="button" data-testid="eval-run" disabled={busy} onClick={() => void run()}>
            {busy ? 'evaluating…' : report ? 'evaluate again' : 'evaluate'}
          </button>
        </p>
      )}
      {error && (
        <p class="error" data-testid="action-error">
          {error instanceof ApiError ? `${error.code}: ` : ''}
          {error.message}
        </p>
      )}
      {report && <Report report={report} />}
    </section>
  );
}

function tokens(u: Usage | undefined): string {
  return u ? `${u.inputTokens ?? 0} in / ${u.outputTokens ?? 0} out` : '-';
}

function OutcomeBadge({ outcome }: { outcome: ThreadEvaluation['outcome'] }) {
  return (
    <span class={`badge ${outcome === 'same' ? 'ok' : 'bad'}`} data-testid="eval-outcome">
      {outcome}
    </span>
  );
}

/** A thread's first divergence in one cell. */
function firstDivergence(t: ThreadEvaluation): string {
  if (t.error) return `${t.error.code}: ${t.error.message}`;
  const d = t.firstDivergence;
  if (!d) return '-';
  const call = d.calls[0];
  if (call) return `seq ${d.seq}: ${divergenceKind(call)} (${call.name})`;
  return `seq ${d.seq}: state differs (${d.differences.join(', ')})`;
}

function Report({ report }: { report: EvaluationReport }) {
  const { summary } = report;
  return (
    <div data-testid="eval-report">
      <p class="eval-summary" data-testid="eval-summary">
        {summary.threads} {summary.threads === 1 ? 'thread' : 'threads'}:{' '}
        <span class="badge ok">
          <span data-testid="eval-same">{summary.same}</span> same
        </span>{' '}
        <span class={`badge ${summary.diverged ? 'bad' : ''}`}>
          <span data-testid="eval-diverged">{summary.diverged}</span> diverged
        </span>{' '}
        <span class={`badge ${summary.failed ? 'bad' : ''}`}>
          <span data-testid="eval-failed">{summary.failed}</span> failed
        </span>
      </p>
      <table class="eval-costs" data-testid="eval-costs">
        <thead>
          <tr>
            <th>model calls</th>
            <th>calls</th>
            <th>tokens</th>
            <th>latency</th>
          </tr>
        </thead>
        <tbody>
          {(['recorded', 'evaluated'] as const).map((which) => (
            <tr key={which} data-testid={`eval-cost-${which}`}>
              <td>{which}</td>
              <td>{summary[which].calls}</td>
              <td>{tokens(summary[which].usage)}</td>
              <td>{summary[which].latencyMs} ms</td>
            </tr>
          ))}
        </tbody>
      </table>
      <h2>Threads</h2>
      <table data-testid="eval-threads">
        <thead>
          <tr>
            <th>thread</th>
            <th>outcome</th>
            <th>steps</th>
            <th>first divergence</th>
            <th>tokens recorded → evaluated</th>
            <th>latency recorded → evaluated</th>
          </tr>
        </thead>
        <tbody>
          {report.threads.map((t) => (
            <tr key={t.threadId} data-testid="eval-row" data-thread={t.threadId} data-outcome={t.outcome} class={t.outcome === 'same' ? '' : 'flag'}>
              <td>
                <a href={href({ view: 'thread', id: t.threadId, ns: '' })}>{t.threadId}</a>
              </td>
              <td>
                <OutcomeBadge outcome={t.outcome} />
              </td>
              <td>{t.steps}</td>
              <td data-testid="eval-first">{firstDivergence(t)}</td>
              <td>
                {tokens(t.recorded.usage)} → {tokens(t.evaluated.usage)}
              </td>
              <td>
                {t.recorded.latencyMs} → {t.evaluated.latencyMs} ms
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {report.threads
        .filter((t) => t.outcome !== 'same')
        .map((t) => (
          <ThreadDetail key={t.threadId} t={t} />
        ))}
    </div>
  );
}

/** A diverged or failed thread: where, why, the state diff, and its model calls beside the stored run's. */
function ThreadDetail({ t }: { t: ThreadEvaluation }) {
  const d = t.firstDivergence;
  return (
    <section class="eval-detail" data-testid="eval-detail" data-thread={t.threadId}>
      <h2>
        {t.threadId} <OutcomeBadge outcome={t.outcome} />
        {d && (
          <>
            {' '}
            at <a href={href({ view: 'position', id: t.threadId, ns: '', seq: d.seq })}>seq {d.seq}</a> ({d.nodes.join(', ')})
          </>
        )}
      </h2>
      {t.error && (
        <p class="error" data-testid="eval-error">
          {t.error.code}: {t.error.message}
        </p>
      )}
      {d && d.calls.length > 0 && (
        <ul data-testid="eval-reasons">
          {d.calls.map((c) => (
            <li key={`${c.node}${c.call}${c.name}`} data-testid="eval-reason">
              <strong>{divergenceKind(c)}</strong>: {c.node}
              {c.call >= 0 ? ` call ${c.call}` : ''} asked for “{c.name}”, {c.reason} (the thread stopped there; nothing was executed)
            </li>
          ))}
        </ul>
      )}
      {d?.diff && d.diff.fields.length > 0 && (
        <>
          <h3>State at seq {d.seq}: stored → evaluated</h3>
          <table class="diff" data-testid="eval-diff">
            <tbody>{d.diff.fields.flatMap(diffRows)}</tbody>
          </table>
        </>
      )}
      {t.models.length > 0 && (
        <>
          <h3>Model calls: recorded beside evaluated</h3>
          <table data-testid="eval-models">
            <thead>
              <tr>
                <th>seq</th>
                <th>call</th>
                <th>model recorded → evaluated</th>
                <th>tokens recorded → evaluated</th>
                <th>latency recorded → evaluated</th>
              </tr>
            </thead>
            <tbody>
              {t.models.map((m) => (
                <tr key={`${m.seq} ${m.node} ${m.call}`} data-testid="eval-model">
                  <td>{m.seq}</td>
                  <td>
                    {m.node} #{m.call} {m.name}
                  </td>
                  <td>
                    {m.recorded?.model ?? '-'} → {m.evaluated.model ?? '-'}
                  </td>
                  <td>
                    {tokens(m.recorded?.usage)} → {tokens(m.evaluated.usage)}
                  </td>
                  <td class="time">
                    {m.recorded?.latencyMs ?? '-'} → {m.evaluated.latencyMs ?? '-'} ms
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </section>
  );
}
