/**
 * A thread's timeline as a tree: each branch's positions newest first, a fork's
 * branch hung under the position it forks from, the failed attempts of a step shown
 * where it started and a retry marked on the position it committed, the interrupt or
 * wait pending at the head highlighted, and each step's child runs opening in place
 * as a tree of their own. Loaded a page at a time (older pages on request).
 */
import { Fragment } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { api, isoTime } from './api';
import { href } from './route';
import { useApi } from './use-api';
import type { TimelineBranch, TimelineEntry, TimelinePage } from './views-api';
import './views.css';

/** Positions per page: the first page of a long thread stays cheap. */
const PAGE = 50;

function Failures({ entry }: { entry: TimelineEntry }) {
  if (entry.failed.length === 0) return null;
  return (
    <>
      {entry.failed.map((f, i) => (
        <li key={`f${i}`} class="tree-failure" data-testid="tree-failure" data-seq={entry.seq}>
          <span class="glyph">✗</span> attempt {f.attempt ?? '?'} of <b>{f.node ?? 'a step'}</b> failed from seq {entry.seq}: <code>{f.code}</code> {f.message}{' '}
          <span class="time">{isoTime(f.at)}</span>
        </li>
      ))}
    </>
  );
}

function ChildRuns({ id, entry }: { id: string; entry: TimelineEntry }) {
  const [open, setOpen] = useState<string[]>([]);
  if (entry.children.length === 0) return null;
  return (
    <div class="tree-children">
      {entry.children.map((c) => (
        <div key={c} class="tree-child" data-testid="child-run" data-ns={c}>
          <button type="button" class="link" data-testid="child-toggle" data-ns={c} onClick={() => setOpen(open.includes(c) ? open.filter((o) => o !== c) : [...open, c])}>
            {open.includes(c) ? '▾' : '▸'} child run {c}
          </button>{' '}
          <a href={href({ view: 'thread', id, ns: c })}>open</a>
          {open.includes(c) && <TimelineTree id={id} ns={c} version="" nested />}
        </div>
      ))}
    </div>
  );
}

function Row({ id, ns, entry, head }: { id: string; ns: string; entry: TimelineEntry; head: number | null }) {
  const notes = [
    ...(entry.pending ? entry.interrupts.map((i) => `interrupt ${i.id} at ${i.node}`) : []),
    ...(entry.pending ? (entry.waits ?? []).map((w) => `${w.kind} ${w.key}${w.until !== null ? ` until ${isoTime(w.until)}` : ''}`) : []),
  ];
  // Glyphs every system font has (no emoji font in a headless browser or a minimal desktop).
  const glyph = entry.kind === 'fork' ? '◆' : entry.kind === 'interrupt' ? '‖' : entry.kind === 'resume' ? '▶' : '●';
  return (
    <li class={`tree-position${entry.pending ? ' pending' : ''}${entry.seq === head ? ' head' : ''}`} data-testid="tree-position" data-seq={entry.seq} data-ns={ns} data-branch={entry.branch}>
      <span class="glyph">{glyph}</span>{' '}
      <a href={href({ view: 'position', id, ns, seq: entry.seq })}>seq {entry.seq}</a> <span class="kind">{entry.kind}</span>{' '}
      <b>{entry.nodes.join(', ')}</b>
      {entry.next.length > 0 && <span class="next"> → {entry.next.join(', ')}</span>}
      {entry.kind === 'fork' && <span class="fork-note"> from seq {entry.parent}{entry.actor ? ` by ${entry.actor}` : ''}</span>}
      {entry.kind !== 'fork' && entry.actor && <span class="actor"> by {entry.actor}</span>}
      {entry.retries > 0 && (
        <span class="marker retry" data-testid="retry-marker" title="attempts of this step failed before it committed">
          ↻ retried after {entry.retries} failed {entry.retries === 1 ? 'attempt' : 'attempts'}
        </span>
      )}
      {entry.seq === head && <span class="marker head-marker">head</span>}
      {notes.length > 0 && (
        <span class="marker pending-marker" data-testid="pending-marker">
          pending: {notes.join('; ')}
        </span>
      )}
      {entry.artifacts.length > 0 && <span class="artifacts-note"> · {entry.artifacts.length} artifact{entry.artifacts.length === 1 ? '' : 's'}</span>}
      <span class="time"> {isoTime(entry.createdAt)}</span>
      <ChildRuns id={id} entry={entry} />
    </li>
  );
}

/** One branch: its positions newest first, each followed by the branches that fork from it. */
function Branch({ id, ns, branch, byBranch, branches, head }: { id: string; ns: string; branch: TimelineBranch; byBranch: Map<number, TimelineEntry[]>; branches: TimelineBranch[]; head: number | null }) {
  const entries = byBranch.get(branch.start) ?? [];
  const label = branch.forkOf === null ? 'first branch' : `branch forked from seq ${branch.forkOf}`;
  return (
    <div class={`tree-branch${branch.onHeadPath ? ' on-head' : ''}`} data-testid="tree-branch" data-branch={branch.start} data-fork-of={branch.forkOf ?? ''} data-head-path={String(branch.onHeadPath)}>
      <div class="branch-label">
        {label}
        {branch.onHeadPath && ' · leads to the head'}
      </div>
      <ul>
        {entries.map((e) => (
          <Fragment key={e.seq}>
            {/* Newest first: a step's failed attempts came after the position it started from. */}
            <Failures entry={e} />
            <Row id={id} ns={ns} entry={e} head={head} />
            {branches
              .filter((b) => b.forkOf === e.seq && b.start !== branch.start)
              .map((b) => (
                <li key={`b${b.start}`} class="tree-fork">
                  <Branch id={id} ns={ns} branch={b} byBranch={byBranch} branches={branches} head={head} />
                </li>
              ))}
          </Fragment>
        ))}
      </ul>
    </div>
  );
}

/** The timeline tree of namespace `ns` of thread `id`; reloads its first page when `version` changes. */
export function TimelineTree({ id, ns, version, nested = false }: { id: string; ns: string; version: string; nested?: boolean }) {
  const [older, setOlder] = useState<TimelinePage[]>([]);
  const [loading, setLoading] = useState(false);
  useEffect(() => setOlder([]), [id, ns, version]);
  const first = useApi(() => api<TimelinePage>(`threads/${encodeURIComponent(id)}/timeline`, { ns, limit: PAGE }), [id, ns, version]);
  if (first.error) return <p class="error">{first.error.message}</p>;
  if (!first.data) return <p>loading…</p>;
  const pages = [first.data, ...older];
  const positions = pages.flatMap((p) => p.positions);
  const branches = new Map<number, TimelineBranch>();
  for (const p of pages) for (const b of p.branches) branches.set(b.start, b);
  const all = [...branches.values()];
  const byBranch = new Map<number, TimelineEntry[]>();
  for (const e of positions) byBranch.set(e.branch, [...(byBranch.get(e.branch) ?? []), e]);
  const loaded = new Set(positions.map((p) => p.seq));
  // A branch hangs under the position it forks from; one whose fork point is not loaded yet (or the first) stands at the top.
  const roots = all.filter((b) => b.forkOf === null || !loaded.has(b.forkOf)).filter((b) => byBranch.has(b.start) || b.forkOf === null);
  roots.sort((a, b) => Number(b.onHeadPath) - Number(a.onHeadPath) || b.start - a.start);
  const next = pages.at(-1)!.next;
  const loadOlder = async () => {
    setLoading(true);
    try {
      const page = await api<TimelinePage>(`threads/${encodeURIComponent(id)}/timeline`, { ns, limit: PAGE, beforeSeq: next });
      setOlder([...older, page]);
    } finally {
      setLoading(false);
    }
  };
  const body = (
    <div class="timeline-tree" data-testid="timeline-tree" data-ns={ns}>
      {roots.map((b) => (
        <Branch key={b.start} id={id} ns={ns} branch={b} byBranch={byBranch} branches={all} head={first.data!.head} />
      ))}
      {positions.length === 0 && <p class="hint">no positions</p>}
      {next !== null && (
        <button type="button" data-testid="tree-older" disabled={loading} onClick={() => void loadOlder()}>
          {loading ? 'loading…' : `older positions (before seq ${next})`}
        </button>
      )}
    </div>
  );
  if (nested) return body;
  return (
    <section>
      {/* "Timeline tree of <ns>": the table below names the child run in its own heading. */}
      <h2>Timeline tree{ns ? ` of ${ns}` : ''}</h2>
      <p class="hint">Branches newest first; a fork hangs under the position it forks from. ◆ a fork, ‖ a pause, ✗ a failed attempt, ↻ a retried step.</p>
      {body}
    </section>
  );
}
