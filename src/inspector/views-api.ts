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
import { INSPECTOR_HISTORY_PAGE } from '../defaults.js';
import { InvalidOptionError } from '../errors.js';
import { threadGraph } from '../inspect/graph.js';
import { positionLedger } from '../inspect/position-ledger.js';
import { threadTimeline } from '../inspect/timeline.js';
import { learnHead, redactPositionLedger, threadRedactor, type RedactionChoice } from '../inspect/redaction.js';
import { integer, pageSize } from './params.js';

/** The view routes' names, as the last segment of `/api/threads/:id/<name>`. */
export const VIEW_ROUTES = ['timeline', 'graph', 'ledger'] as const;

/** Answers `GET /api/threads/:id/<route>?params` for one of {@link VIEW_ROUTES}. */
export async function answerView(context: { engine: Engine; redaction?: RedactionChoice }, id: string, route: (typeof VIEW_ROUTES)[number], params: URLSearchParams): Promise<unknown> {
  const { engine } = context;
  const ns = params.get('ns') ?? '';
  // Redacted by the thread's stored rules (inspect/redaction), as every thread route is.
  const r = await threadRedactor(engine, id, context.redaction ?? {});
  await learnHead(r, engine, id);
  switch (route) {
    case 'timeline': {
      const limit = pageSize(params, INSPECTOR_HISTORY_PAGE);
      const beforeSeq = integer(params, 'beforeSeq', 0);
      return r.value(await threadTimeline(engine.checkpointer, id, { ns, limit, ...(beforeSeq !== undefined ? { beforeSeq } : {}) }));
    }
    case 'graph':
      return r.value(await threadGraph(engine, id));
    case 'ledger': {
      const seq = integer(params, 'seq', 0);
      if (seq === undefined) throw new InvalidOptionError('ledger needs seq=<seq>.');
      return r.value(redactPositionLedger(r, await positionLedger(engine, id, { ns, seq })));
    }
  }
}
