/** The threads list: status, kind, tenant, head, attempts, last update; filter by status, search by id prefix, page on. */
import { useState } from 'preact/hooks';
import { api, isoTime, type ThreadRecord } from './api';
import { href } from './route';
import { useApi } from './use-api';

const STATUSES = ['running', 'interrupted', 'completed', 'failed', 'needs_attention', 'waiting'];

/** A thread's status as a coloured badge. */
export function StatusBadge({ status }: { status: string }) {
  return (
    <span class={`badge status-${status}`} data-testid="status-badge">
      {status}
    </span>
  );
}

export function ThreadsView() {
  const [status, setStatus] = useState('');
  const [q, setQ] = useState('');
  // The `after` of each page shown so far: the last one is the page on screen.
  const [pages, setPages] = useState<(string | undefined)[]>([undefined]);
  const after = pages.at(-1);
  const page = useApi(() => api<{ threads: ThreadRecord[]; next: string | null }>('threads', { status, q, after }), [status, q, after]);
  const restart = () => setPages([undefined]);
  return (
    <section>
      <h1>Threads</h1>
      <form class="filters" onSubmit={(e) => e.preventDefault()}>
        <label>
          status{' '}
          <select data-testid="status-filter" value={status} onChange={(e) => (setStatus((e.target as HTMLSelectElement).value), restart())}>
            <option value="">any</option>
            {STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label>
          id starts with{' '}
          <input data-testid="thread-search" type="search" value={q} onInput={(e) => (setQ((e.target as HTMLInputElement).value), restart())} />
        </label>
      </form>
      {page.error && <p class="error">{page.error.message}</p>}
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
