/** The inspector's page: one view per route (threads, a thread, a position, a diff); read-only unless the inspector allows actions. */
import { render } from 'preact';
import { useActions } from './actions';
import { DiffView } from './diff';
import { EvaluateView } from './evaluate';
import { PositionView } from './position';
import { useRoute } from './route';
import { ThreadView } from './thread';
import { ThreadsView } from './threads';
import './style.css';

function App() {
  const route = useRoute();
  const actions = useActions();
  return (
    <>
      <header>
        <a href="#/" class="brand">
          cairn inspector
        </a>{' '}
        {actions?.allowed ? (
          <span class="actor" data-testid="actions-allowed">
            actions allowed, as {actions.actor}
          </span>
        ) : (
          <span class="readonly">read-only</span>
        )}
      </header>
      <main>
        {route.view === 'threads' && <ThreadsView />}
        {route.view === 'thread' && <ThreadView key={`${route.id} ${route.ns}`} id={route.id} ns={route.ns} />}
        {route.view === 'position' && <PositionView id={route.id} ns={route.ns} seq={route.seq} />}
        {route.view === 'diff' && <DiffView id={route.id} ns={route.ns} from={route.from} to={route.to} />}
        {route.view === 'evaluate' && <EvaluateView key={route.query} query={route.query} />}
      </main>
    </>
  );
}

render(<App />, document.getElementById('app')!);
