/** One position: the state stored there as a tree (artifact refs as links), the interrupts pending and answered there, and its step's recorded outputs and effects. */
import { PositionActions, useActions } from './actions';
import { api, type Interrupt } from './api';
import { ArtifactScope } from './artifact-link';
import { JsonTree, JsonValue } from './json-tree';
import { PositionLedgerView } from './position-ledger';
import { href } from './route';
import { useApi } from './use-api';

interface StateAnswer {
  seq: number;
  schemaVersion: number;
  next: string[];
  state: Record<string, unknown>;
  interrupts: { pending: Interrupt[]; answered: Interrupt[] };
}

export function PositionView({ id, ns, seq }: { id: string; ns: string; seq: number }) {
  const info = useActions();
  const view = useApi(() => api<StateAnswer>(`threads/${encodeURIComponent(id)}/state`, { seq, ns }), [id, ns, seq]);
  return (
    <section>
      <p>
        <a href={href({ view: 'thread', id, ns })}>← thread {id}</a>
      </p>
      <h1>
        {id}
        {ns ? ` · child ${ns}` : ''} · seq {seq}
      </h1>
      {view.error && <p class="error" data-testid="error">{view.error.message}</p>}
      {view.data && (
        <>
          <p class="facts">
            schema v{view.data.schemaVersion} · next → {view.data.next.join(', ') || 'END'}
          </p>
          <ArtifactScope.Provider value={{ id, ns, seq }}>
            <JsonTree value={view.data.state} testid="state-tree" />
          </ArtifactScope.Provider>
          {!ns && <PositionActions thread={id} seq={seq} state={view.data.state} info={info} />}
          {view.data.interrupts.pending.length > 0 && (
            <div class="interrupt-box">
              <h2>Pending interrupts</h2>
              {view.data.interrupts.pending.map((i) => (
                <p key={i.id}>
                  {i.id} at {i.node}: <JsonValue value={i.payload} />
                </p>
              ))}
            </div>
          )}
          {view.data.interrupts.answered.length > 0 && (
            <>
              <h2>Answered interrupts</h2>
              <ul>
                {view.data.interrupts.answered.map((i) => (
                  <li key={i.id}>
                    {i.id} at {i.node}, answered at seq {i.answeredAt} by {i.actor ?? '-'}: <JsonValue value={i.payload} />
                  </li>
                ))}
              </ul>
            </>
          )}
          <ArtifactScope.Provider value={{ id, ns, seq }}>
            <PositionLedgerView id={id} ns={ns} seq={seq} />
          </ArtifactScope.Provider>
        </>
      )}
    </section>
  );
}
