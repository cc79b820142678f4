/**
 * The threads list: status, kind, tenant, head, attempts, last update. Filters by
 * status, kind, tenant, metadata pairs and update time, searches by id prefix, orders
 * by id or most recent update, and pages on with the server's cursor.
 */
import { useState } from 'preact/hooks';
import { api, isoTime, type ThreadRecord } from './api';
import { EvaluateLinks } from './evaluate';
import { href } from './route';
import { useApi } from './use-api';

const STATUSES = ['running', 'interrupted', 'completed', 'failed', 'needs_attention', 'waiting'];
const KINDS = ['conversation', 'task', 'session', 'workflow'];
/** "updated within" choices, in ms. */
const WINDOWS: [label: string, ms: number][] = [
  ['1 hour', 3_600_000],
  ['1 day', 86_400_000],
  ['7 days', 7 * 86_400_000],
  ['30 days', 30 * 86_400_000],
];

/** A thread's status as a coloured badge. */
export function StatusBadge({ status }: { status: string }) {
  return (
    <span class={`badge status-${status}`} data-testid="status-badge">
      {status}
    </span>
  );
}

/** `queue=support, vip=true` as the API's `meta` pairs (blank ones left out). */
function metaPairs(text: string): string[] {
  return text
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean);
}

interface Filters {
  status: string;
  kind: string;
  tenant: string;
  meta: string;
  /** The chosen window, ms, and the time it counts back from (fixed when chosen, so pages agree). */
  within: number;
  since: number | null;
  order: 'id' | 'updatedAt';
  q: string;
}

const NO_FILTERS: Filters = { status: '', kind: '', tenant: '', meta: '', within: 0, since: null, order: 'id', q: '' };

export function ThreadsView() {
  const [filters, setFilters] = useState<Filters>(NO_FILTERS);
  // The `after` of each page shown so far: the last one is the page on screen.
  const [pages, setPages] = useState<(string | undefined)[]>([undefined]);
  const after = pages.at(-1);
  const { status, kind, tenant, meta, since, order, q } = filters;
  const page = useApi(
    () => api<{ threads: ThreadRecord[]; next: string | null }>('threads', { status, kind, tenant, meta: metaPairs(meta), updatedSince: since, order, q, after }),
    [status, kind, tenant, meta, since, order, q, after],
  );
  const restart = () => setPages([undefined]);
  const set = (change: Partial<Filters>) => (setFilters({ ...filters, ...change }), restart());
  const value = (e: Event) => (e.target as HTMLInputElement | HTMLSelectElement).value;
  const filtered = JSON.stringify(filters) !== JSON.stringify(NO_FILTERS);
  return (
    <section>
      <h1>Threads</h1>
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        <label>
          id starts with <input data-testid="thread-search" type="search" value={q} onInput={(e) => set({ q: value(e) })} />
        </label>
        <label>
          status{' '}
          <select data-testid="status-filter" value={status} onChange={(e) => set({ status: value(e) })}>
            <option value="">any</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label>
          kind{' '}
          <select data-testid="kind-filter" value={kind} onChange={(e) => set({ kind: value(e) })}>
            <option value="">any</option>
            {KINDS.map((k) => (
              <option key={k} value={k}>
                {k}
              </option>
            ))}
          </select>
        </label>
        <label>
          tenant <input data-testid="tenant-filter" type="search" size={10} value={tenant} onInput={(e) => set({ tenant: value(e) })} />
        </label>
        <label title="key=value pairs, comma-separated; 5, true and null match numbers, booleans and null, anything else text">
          metadata <input data-testid="meta-filter" type="search" placeholder="queue=support, vip=true" value={meta} onInput={(e) => set({ meta: value(e) })} />
        </label>
        <label>
          updated within{' '}
          <select
            data-testid="updated-filter"
            value={String(filters.within)}
            onChange={(e) => {
              const within = Number(value(e));
              set({ within, since: within ? Date.now() - within : null });
            }}
          >
            <option value="0">any time</option>
            {WINDOWS.map(([label, ms]) => (
              <option key={ms} value={String(ms)}>
                {label}
              </option>
            ))}
          </select>
        </label>
        <label>
          order{' '}
          <select data-testid="order-filter" value={order} onChange={(e) => set({ order: value(e) as Filters['order'] })}>
            <option value="id">by id</option>
            <option value="updatedAt">most recently updated</option>
          </select>
        </label>
        {filtered && (
          <button type="button" class="link" data-testid="clear-filters" onClick={() => set(NO_FILTERS)}>
            clear
          </button>
        )}
      </form>
      <EvaluateLinks filters={{ status, kind, tenant, meta: metaPairs(meta), updatedSince: since, order, q }} />
      {page.error && (
        <p class="error" data-testid="threads-error">
          {page.error.message}
        </p>
      )}
      {page.data && (
        <>
          {page.data.threads.length === 0 ? (
            <p data-testid="no-threads">no threads</p>
          ) : (
            <table data-testid="threads-table">
              <thead>
                <tr>
                  <th>thread</th>
                  <th>status</th>
                  <th>kind</th>
                  <th>tenant</th>
                  <th>head</th>
                  <th>attempts</th>
                  <th>updated</th>
                </tr>
              </thead>
              <tbody>
                {page.data.threads.map((t) => (
                  <tr key={t.id} data-testid="thread-row" data-thread={t.id}>
                    <td>
                      <a href={href({ view: 'thread', id: t.id, ns: '' })}>{t.id}</a>
                    </td>
                    <td>
                      <StatusBadge status={t.status} />
                    </td>
                    <td>{t.kind}</td>
                    <td>{t.tenant ?? '-'}</td>
                    <td>{t.head ?? '-'}</td>
                    <td>{t.attempts}</td>
                    <td>{isoTime(t.updatedAt)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <p class="paging">
            {pages.length > 1 && (
              <button type="button" onClick={restart}>
                first page
              </button>
            )}{' '}
            {page.data.next !== null && (
              <button type="button" data-testid="next-page" onClick={() => setPages([...pages, page.data!.next!])}>
                next page
              </button>
            )}
          </p>
        </>
      )}
    </section>
  );
}
