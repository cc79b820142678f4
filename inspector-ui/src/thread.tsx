/**
 * A thread: its record, integrity badge, pending interrupts, the timeline of its
 * positions (newest first) with two to pick for a diff, its effects and attempts.
 * Polls the head every second and reloads when it moved.
 */
import { useEffect, useState } from 'preact/hooks';
import { EffectActions, InterruptAnswer, ThreadActions, useActions, type ActionsInfo } from './actions';
import { api, isoTime, type AttemptInfo, type Interrupt, type LedgerEntry, type PositionInfo, type ThreadRecord, type VerifyReport } from './api';
import { JsonValue } from './json-tree';
import { href } from './route';
import { GraphView } from './graph-view';
import { StatusBadge } from './threads';
import { TimelineTree } from './timeline-tree';
import { useApi } from './use-api';

/** How often an open thread asks for its head, ms. */
const POLL_MS = 1000;

interface ThreadAnswer {
  thread: ThreadRecord;
  attempts: AttemptInfo[];
  interrupts: { pending: Interrupt[]; answered: Interrupt[] };
}

/** ok, or the first bad seq, from verify. */
function IntegrityBadge({ id, version }: { id: string; version: string }) {
  const report = useApi(() => api<VerifyReport>(`threads/${encodeURIComponent(id)}/verify`), [id, version]);
  if (report.error) return <span class="badge bad">verify failed: {report.error.message}</span>;
  if (!report.data) return <span class="badge">verifying…</span>;
  const first = report.data.problems[0];
  return (
    <span class={`badge ${report.data.ok ? 'ok' : 'bad'}`} data-testid="integrity-badge" title={first?.message}>
      {report.data.ok ? `integrity ok (${report.data.positions} positions)` : `integrity FAIL at ${first?.ns ? `${first.ns} ` : ''}seq ${first?.seq}: ${first?.kind}`}
    </span>
  );
}

function PendingInterrupts({ pending, thread, info, onDone }: { pending: Interrupt[]; thread: string; info: ActionsInfo | null; onDone(): void }) {
  if (pending.length === 0) return null;
  return (
    <div class="interrupt-box" data-testid="pending-interrupt">
      <h2>Waiting for an answer</h2>
      {pending.map((i) => (
        <div key={i.id} class="interrupt">
          <p>
            interrupt <code>{i.id}</code> at node <b>{i.node}</b> ({i.when})
          </p>
          <div class="payload" data-testid="interrupt-payload">
            <JsonValue value={i.payload} />
          </div>
          <InterruptAnswer thread={thread} interrupt={i} info={info} onDone={onDone} />
        </div>
      ))}
    </div>
  );
}

function notes(p: PositionInfo): string[] {
  return [
    ...p.interrupts.map((i) => `pending ${i.id}`),
    ...(p.answered !== undefined ? [`answered ${p.answered}`] : []),
    ...(p.waits ?? []).map((w) => `${w.kind} ${w.key}${w.until !== null ? ` until ${isoTime(w.until)}` : ''}`),
  ];
}

function Timeline({ id, ns, version }: { id: string; ns: string; version: string }) {
  const [pages, setPages] = useState<(number | undefined)[]>([undefined]);
  const [picked, setPicked] = useState<number[]>([]);
  useEffect(() => setPages([undefined]), [id, ns]);
  const beforeSeq = pages.at(-1);
  const page = useApi(() => api<{ positions: PositionInfo[]; next: number | null }>(`threads/${encodeURIComponent(id)}/history`, { ns, beforeSeq }), [id, ns, beforeSeq, version]);
  const toggle = (seq: number) => setPicked(picked.includes(seq) ? picked.filter((s) => s !== seq) : [...picked.slice(-1), seq]);
  const [from, to] = [...picked].sort((a, b) => a - b);
  return (
    <section>
      <h2>Timeline{ns ? ` of child run ${ns}` : ''}</h2>
      <p class="hint">
        Pick two positions to compare:{' '}
        {from !== undefined && to !== undefined ? (
          <a data-testid="diff-link" href={href({ view: 'diff', id, ns, from, to })}>
            diff seq {from} → {to}
          </a>
        ) : (
          <span>{picked.length} of 2 picked</span>
        )}
      </p>
      {page.error && <p class="error">{page.error.message}</p>}
      {page.data && (
        <table data-testid="timeline">
          <thead>
            <tr>
              <th />
              <th>seq</th>
              <th>parent</th>
              <th>kind</th>
              <th>nodes</th>
              <th>changed</th>
              <th>effects</th>
              <th>interrupts / waits</th>
              <th>actor</th>
              <th>child runs</th>
              <th>at</th>
            </tr>
          </thead>
          <tbody>
            {page.data.positions.map((p) => {
              const n = notes(p);
              return (
                <tr key={p.seq} data-testid="position-row" data-seq={p.seq} class={n.length ? 'flag' : ''}>
                  <td>
                    <input type="checkbox" data-testid="pick" aria-label={`pick seq ${p.seq}`} checked={picked.includes(p.seq)} onChange={() => toggle(p.seq)} />
                  </td>
                  <td>
                    <a href={href({ view: 'position', id, ns, seq: p.seq })}>{p.seq}</a>
                  </td>
                  <td>{p.parent ?? '-'}</td>
                  <td>{p.kind}</td>
                  <td>{p.nodes.join(', ') || '-'}</td>
                  <td>{Object.entries(p.changes).map(([f, c]) => `${f} (${c})`).join(', ') || '-'}</td>
                  <td>{[...p.effects.map((e) => e.name), ...p.records.map((r) => `record ${r.name}`)].join(', ') || '-'}</td>
                  <td class={n.length ? 'note' : ''}>{n.join('; ') || '-'}</td>
                  <td>{p.actor ?? '-'}</td>
                  <td>
                    {p.children.length
                      ? p.children.map((c) => (
                          <a key={c} href={href({ view: 'thread', id, ns: c })}>
                            {c}{' '}
                          </a>
                        ))
                      : '-'}
                  </td>
                  <td class="time">{isoTime(p.createdAt)}</td>
                </tr>
              );
            })}
          </tbody>
        </table>
      )}
      {page.data?.next != null && (
        <button type="button" data-testid="older-positions" onClick={() => setPages([...pages, page.data!.next!])}>
          older positions
        </button>
      )}
    </section>
  );
}

function Effects({ id, status, version, info, onDone }: { id: string; status: string; version: string; info: ActionsInfo | null; onDone(): void }) {
  const list = useApi(() => api<{ effects: LedgerEntry[] }>(`threads/${encodeURIComponent(id)}/effects`), [id, version]);
  if (!list.data || list.data.effects.length === 0) return null;
  return (
    <section>
      <h2>Recorded outputs and effects</h2>
      <table data-testid="effects">
        <thead>
          <tr>
            <th>kind</th>
            <th>status</th>
            <th>seq</th>
            <th>node</th>
            <th>name</th>
            <th>outcome</th>
            <th>at</th>
          </tr>
        </thead>
        <tbody>
          {list.data.effects.map((e) => (
            <tr key={e.key} data-testid="effect-row">
              <td>{e.kind}</td>
              <td class={e.status === 'intent' ? 'note' : ''}>{e.status}</td>
              <td>{e.seq}</td>
              <td>{e.node}</td>
              <td>{e.name}</td>
              <td>
                {'outcome' in e ? <JsonValue value={e.outcome} depth={2} /> : '-'}
                <EffectActions thread={id} status={status} entry={e} info={info} onDone={onDone} />
              </td>
              <td class="time">{isoTime(e.completedAt ?? e.createdAt)}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

function Attempts({ attempts }: { attempts: AttemptInfo[] }) {
  return (
    <section>
      <h2>Attempts</h2>
      <table data-testid="attempts">
        <thead>
          <tr>
            <th>attempt</th>
            <th>outcome</th>
            <th>node</th>
            <th>seq</th>
            <th>at</th>
            <th>error</th>
          </tr>
        </thead>
        <tbody>
          {attempts.map((a) => (
            <tr key={a.attempt}>
              <td>#{a.attempt}</td>
              <td>{a.outcome}</td>
              <td>{a.node ?? '-'}</td>
              <td>{a.seq ?? '-'}</td>
              <td>{isoTime(a.at)}</td>
              <td>{a.error ? `${a.error.code}: ${a.error.message}` : '-'}</td>
            </tr>
          ))}
        </tbody>
      </table>
    </section>
  );
}

/** The head and status as last polled: a change reloads every part of the page. */
function useHeadVersion(id: string): string {
  const [version, setVersion] = useState('');
  useEffect(() => {
    let live = true;
    const poll = async () => {
      try {
        const h = await api<{ head: number | null; status: string; updatedAt: number }>(`threads/${encodeURIComponent(id)}/head`);
        if (live) setVersion(`${h.head}:${h.status}:${h.updatedAt}`);
      } catch {
        // The next poll tries again; the page keeps what it shows.
      }
    };
    void poll();
    const timer = setInterval(poll, POLL_MS);
    return () => {
      live = false;
      clearInterval(timer);
    };
  }, [id]);
  return version;
}

export function ThreadView({ id, ns }: { id: string; ns: string }) {
  // An action done here (an effect settled) may not move the head: it reloads the page's parts itself.
  const [acted, setActed] = useState(0);
  const onDone = () => setActed((n) => n + 1);
  const info = useActions();
  const version = `${useHeadVersion(id)}#${acted}`;
  const answer = useApi(() => api<ThreadAnswer>(`threads/${encodeURIComponent(id)}`), [id, version]);
  if (answer.error) return <p class="error" data-testid="error">{answer.error.message}</p>;
  if (!answer.data) return <p>loading…</p>;
  const { thread, attempts, interrupts } = answer.data;
  return (
    <section>
      <p>
        <a href={href({ view: 'threads' })}>← threads</a>
        {ns && (
          <>
            {' · '}
            <a href={href({ view: 'thread', id, ns: '' })}>root graph</a>
          </>
        )}
      </p>
      <h1 data-testid="thread-title">
        {thread.id} <StatusBadge status={thread.status} /> <IntegrityBadge id={id} version={version} />
      </h1>
      <p class="facts" data-testid="thread-facts">
        {thread.kind} · tenant {thread.tenant ?? '-'} · head <span data-testid="thread-head">{thread.head ?? '-'}</span> · {thread.attempts} {thread.attempts === 1 ? 'attempt' : 'attempts'} · created {isoTime(thread.createdAt)} · updated{' '}
        {isoTime(thread.updatedAt)}
        {thread.wakeAt !== null && ` · wakes ${isoTime(thread.wakeAt)}`}
      </p>
      {thread.lastError && (
        <p class="error">
          last error {thread.lastError.code}: {thread.lastError.message}
        </p>
      )}
      {!ns && <ThreadActions thread={thread} info={info} onDone={onDone} />}
      {!ns && <PendingInterrupts pending={interrupts.pending} thread={id} info={info} onDone={onDone} />}
      {!ns && <GraphView id={id} version={version} />}
      <TimelineTree id={id} ns={ns} version={version} />
      <Timeline id={id} ns={ns} version={version} />
      {!ns && <Effects id={id} status={thread.status} version={version} info={info} onDone={onDone} />}
      {!ns && <Attempts attempts={attempts} />}
    </section>
  );
}
