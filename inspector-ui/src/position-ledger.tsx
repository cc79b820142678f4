/**
 * What a position's step recorded: its recorded outputs (name, key, the output as a
 * tree, and for entries that carry `meta`: the kind, model, tokens and latency) and
 * its effects (key, argument digest, outcome, status, and what the ledger tells of
 * recovery), with an effect that needs a person shown first and loud. At the head,
 * the entries of the step in progress (not committed yet) too.
 */
import { api, isoTime } from './api';
import { JsonValue } from './json-tree';
import { useApi } from './use-api';
import type { LedgerEntryView, PositionLedger } from './views-api';
import './views.css';

const RECOVERY: Record<string, string> = {
  done: 'outcome recorded',
  probe_found: 'recovered: in doubt after a crash or failed try, its probe found it (not run again)',
  probe_absent_reran: 'recovered: in doubt, its probe did not find it, so it ran again with the same key',
  reran: 'recovered: in doubt, no probe, so it ran again with the same key',
  open: 'intent without outcome: the next run probes it, or runs it again with the same key',
  in_doubt: 'in doubt: at-most-once, a person settles it (cairn resolve-effect)',
};

/** The generic fields of an entry's `meta`, when it has one: kind, model, tokens, latency. */
function Meta({ entry }: { entry: LedgerEntryView }) {
  const meta = entry.meta;
  if (!meta || typeof meta !== 'object') return null;
  const m = meta as { kind?: unknown; model?: unknown; usage?: unknown; latencyMs?: unknown };
  const usage = m.usage && typeof m.usage === 'object' ? (m.usage as Record<string, unknown>) : null;
  const tokens = usage ? Object.entries(usage).filter(([, v]) => typeof v === 'number') : [];
  return (
    <span class="meta" data-testid="record-meta">
      {typeof m.kind === 'string' && <span class="badge">{m.kind}</span>}
      {typeof m.model === 'string' && <> model <code>{m.model}</code></>}
      {tokens.length > 0 && <> · {tokens.map(([k, v]) => `${k} ${v}`).join(', ')}</>}
      {typeof m.latencyMs === 'number' && <> · {m.latencyMs} ms</>}
    </span>
  );
}

function Records({ records, testid }: { records: LedgerEntryView[]; testid: string }) {
  if (records.length === 0) return null;
  return (
    <table data-testid={testid}>
      <thead>
        <tr>
          <th>name</th>
          <th>kind</th>
          <th>key</th>
          <th>output</th>
          <th>at</th>
        </tr>
      </thead>
      <tbody>
        {records.map((r) => (
          <tr key={r.key} data-testid="record-row" data-name={r.name}>
            <td>{r.name}</td>
            <td>
              <Meta entry={r} />
            </td>
            <td>
              <code>{r.key}</code>
            </td>
            <td data-testid="record-output">{'outcome' in r ? <JsonValue value={r.outcome} depth={1} /> : '-'}</td>
            <td class="time">{isoTime(r.completedAt ?? r.createdAt)}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function Effects({ effects, testid }: { effects: LedgerEntryView[]; testid: string }) {
  if (effects.length === 0) return null;
  const sorted = [...effects].sort((a, b) => Number(b.needsAttention === true) - Number(a.needsAttention === true));
  return (
    <table data-testid={testid}>
      <thead>
        <tr>
          <th>name</th>
          <th>status</th>
          <th>key</th>
          <th>args digest</th>
          <th>outcome</th>
          <th>recovery</th>
          <th>intent → outcome</th>
        </tr>
      </thead>
      <tbody>
        {sorted.map((e) => (
          <tr key={e.key} data-testid="effect-entry" data-name={e.name} class={e.needsAttention ? 'attention' : ''}>
            <td>
              {e.name}
              {e.needsAttention && (
                <span class="badge bad" data-testid="needs-attention">
                  needs attention
                </span>
              )}
            </td>
            <td class={e.status === 'intent' ? 'note' : ''}>{e.status}</td>
            <td>
              <code>{e.key}</code>
            </td>
            <td>{e.argsDigest ? <code title={e.argsDigest}>{e.argsDigest.slice(0, 12)}…</code> : '-'}</td>
            <td>{'outcome' in e ? <JsonValue value={e.outcome} depth={1} /> : '-'}</td>
            <td data-testid="effect-recovery">{RECOVERY[e.recovery ?? ''] ?? e.recovery ?? '-'}</td>
            <td class="time">
              {isoTime(e.createdAt)} → {isoTime(e.completedAt)}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

/** The recorded outputs and effects of position `seq` of `ns` of thread `id`. */
export function PositionLedgerView({ id, ns, seq }: { id: string; ns: string; seq: number }) {
  const view = useApi(() => api<PositionLedger>(`threads/${encodeURIComponent(id)}/ledger`, { seq, ns }), [id, ns, seq]);
  if (view.error) return <p class="error">{view.error.message}</p>;
  if (!view.data) return null;
  const { records, effects, inProgress } = view.data;
  const attention = inProgress.filter((e) => e.needsAttention);
  return (
    <section data-testid="position-ledger">
      {attention.length > 0 && (
        <div class="attention-box" data-testid="attention-box">
          <h2>Needs attention</h2>
          {attention.map((e) => (
            <p key={e.key}>
              effect <b>{e.name}</b> (<code>{e.key}</code>) has an intent and no outcome, and is at-most-once: it may have happened. Check it, then record its outcome with{' '}
              <code>cairn resolve-effect</code>.
            </p>
          ))}
        </div>
      )}
      <h2>Recorded outputs of this step</h2>
      {records.length === 0 ? <p class="hint">none</p> : <Records records={records} testid="position-records" />}
      <h2>Effects of this step</h2>
      {effects.length === 0 ? <p class="hint">none</p> : <Effects effects={effects} testid="position-effects" />}
      {inProgress.length > 0 && (
        <>
          <h2>Step in progress (started from this position, not committed)</h2>
          <Records records={inProgress.filter((e) => e.kind === 'record')} testid="progress-records" />
          <Effects effects={inProgress.filter((e) => e.kind === 'effect')} testid="progress-effects" />
        </>
      )}
    </section>
  );
}
