/**
 * @module inspector/views-api
 * The JSON routes of the inspector's richer views, each over one inspect function:
 *
 * | route | returns |
 * |---|---|
 * | `GET /api/threads/:id/timeline?ns=&beforeSeq=&limit=` | {@link threadTimeline}: a page of positions with their branches, failed attempts, retries and pending pauses |
 * | `GET /api/threads/:id/graph` | {@link threadGraph}: the stored description of the thread's graph and where the run is in it |
 * | `GET /api/threads/:id/ledger?seq=&ns=` | {@link positionLedger}: the recorded outputs and effects of a position's step |
 *
 * The artifact bytes route (`/api/threads/:id/artifact`) is not JSON: see inspector/artifact-route.
 */
import type { Engine } from '../contracts/engine.js';
import { INSPECTOR_HISTORY_PAGE, INSPECTOR_MAX_PAGE } from '../defaults.js';
import { InvalidOptionError } from '../errors.js';
import { threadGraph } from '../inspect/graph.js';
import { positionLedger } from '../inspect/position-ledger.js';
import { threadTimeline } from '../inspect/timeline.js';

/** The view routes' names, as the last segment of `/api/threads/:id/<name>`. */
export const VIEW_ROUTES = ['timeline', 'graph', 'ledger'] as const;

/** A non-negative integer query parameter, or undefined when absent. */
export function queryInteger(params: URLSearchParams, name: string, min = 0): number | undefined {
  const text = params.get(name);
  if (text === null || text === '') return undefined;
  if (!/^\d+$/.test(text) || Number(text) < min || !Number.isSafeInteger(Number(text))) throw new InvalidOptionError(`${name}=${JSON.stringify(text)}: expected an integer of ${min} or more.`);
  return Number(text);
}

/** Answers `GET /api/threads/:id/<route>?params` for one of {@link VIEW_ROUTES}. */
export async function answerView(context: { engine: Engine }, id: string, route: (typeof VIEW_ROUTES)[number], params: URLSearchParams): Promise<unknown> {
  const { engine } = context;
  const ns = params.get('ns') ?? '';
  switch (route) {
    case 'timeline': {
      const limit = queryInteger(params, 'limit', 1) ?? INSPECTOR_HISTORY_PAGE;
      if (limit > INSPECTOR_MAX_PAGE) throw new InvalidOptionError(`limit=${limit}: at most ${INSPECTOR_MAX_PAGE} per page.`);
      const beforeSeq = queryInteger(params, 'beforeSeq');
      return threadTimeline(engine.checkpointer, id, { ns, limit, ...(beforeSeq !== undefined ? { beforeSeq } : {}) });
    }
    case 'graph':
      return threadGraph(engine, id);
    case 'ledger': {
      const seq = queryInteger(params, 'seq');
      if (seq === undefined) throw new InvalidOptionError('ledger needs seq=<seq>.');
      return positionLedger(engine, id, { ns, seq });
    }
  }
}
