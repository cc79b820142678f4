/**
 * @module bench/cairn-graph
 *
 * The cairn app the `cairn` contender runs, shared by the bench (which runs it)
 * and its child processes (which compile the same app to load state from the
 * same file: `getState` / `stateAt` need the state schema).
 *
 * Built from the BUILT package (`dist/`), as a user would import it, so what is
 * measured is the compiled JavaScript `npm run build` produces.
 *
 * The state is one append-reducer field, `messages`, validated by a zod schema
 * of the workload's message (the way a cairn user declares it). One node,
 * `append`, appends `makeMessage(k)` (k = current length) and loops back to
 * itself until the list holds `n` messages, so one `run` makes exactly one
 * input position (seq 0) and then one position per appended message (seq k
 * holds k messages): the same shape as the LangGraph contender's self-loop.
 */
import { z } from 'zod';
import { END, START, defineState, field, graph, type EventSink } from '../dist/index.js';
import type { Engine } from '../dist/contracts/engine.js';
import { makeMessage } from './workload.js';

/** The one thread every run writes to. */
export const CAIRN_THREAD_ID = 'bench';

const Message = z.object({ role: z.enum(['user', 'assistant']), content: z.string(), index: z.number() });

export const BenchState = defineState({
  fields: { messages: field.model(z.array(Message), { reduce: 'append', default: [] }) },
});

/**
 * The append loop compiled on `engine`. `n` only steers the loop (an app
 * compiled just to read state can pass 0); `recursionLimit` leaves room for
 * exactly `n` appends plus headroom.
 */
export function buildCairnApp({ engine, n, onEvent }: { engine: Engine; n: number; onEvent?: EventSink }) {
  return graph(BenchState)
    .node('append', (s) => ({ messages: [makeMessage(s.messages.length)] }))
    .edge(START, 'append')
    .conditionalEdge('append', (s) => (s.messages.length < n ? 'append' : END))
    .compile({ engine, recursionLimit: n + 5, ...(onEvent ? { onEvent } : {}) });
}
