/** The inspector's page: one view per route (threads, a thread, a position, a diff). Read-only. */
import { render } from 'preact';
import { DiffView } from './diff';
import { PositionView } from './position';
import { useRoute } from './route';
import { ThreadView } from './thread';
import { ThreadsView } from './threads';
import './style.css';

function App() {
  const route = useRoute();
  return (
    <>
      <header>
        <a href="#/" class="brand">
          cairn inspector
        </a>{' '}
        <span class="readonly">read-only</span>
      </header>
      <main>
        {route.view === 'threads' && <ThreadsView />}
        {route.view === 'thread' && <ThreadView key={`${route.id} ${route.ns}`} id={route.id} ns={route.ns} />}
        {route.view === 'position' && <PositionView id={route.id} ns={route.ns} seq={route.seq} />}
        {route.view === 'diff' && <DiffView id={route.id} ns={route.ns} from={route.from} to={route.to} />}
      </main>
    </>
  );
}

render(<App />, document.getElementById('app')!);
