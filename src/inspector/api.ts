/**
 * @module inspector/api
 * The web inspector's JSON API: each route parses its query, calls one of the
 * inspect functions (or lists threads through the checkpointer) and returns what it
 * gave. Read-only: no route writes. Values are the user's data, decoded; the server
 * turns what JSON cannot carry into readable stand-ins ({@link viewJson}).
 *
 * | route | returns |
 * |---|---|
 * | `GET /api/threads?q=&status=&kind=&tenant=&meta=&updatedSince=&order=&after=&limit=` | `{ threads, next }` ({@link listThreadPage}): a page in id order or most recently updated first; `next` is the opaque `after` of the next page, or null |
 * | `GET /api/threads/:id` | `{ thread, attempts, interrupts }`: the record, its attempts (each with `positions`, the count it committed, in place of the list), its interrupts pending and answered at the head ({@link threadOverview}) |
 * | `GET /api/threads/:id/head` | `{ head, status, updatedAt }`, polled by an open thread page |
 * | `GET /api/threads/:id/history?ns=&beforeSeq=&limit=` | `{ positions, next }`: newest first; `next` is the `beforeSeq` of the next page, or null |
 * | `GET /api/threads/:id/state?seq=&ns=` | the stored state ({@link storedState}) and the interrupts at that position |
 * | `GET /api/threads/:id/diff?from=&to=&ns=` | {@link threadDiff} |
 * | `GET /api/threads/:id/verify[?artifacts=1]` | {@link verifyThread}'s report (and, with an artifact store and `artifacts=1`, the artifact check of the thread) |
 * | `GET /api/threads/:id/effects` | the ledger, outcomes decoded |
 * | `GET /api/threads/:id/timeline`, `/graph`, `/ledger` | the richer views' routes: see inspector/views-api |
 *
 * Every answer is redacted by the rules stored with the thread's graph (the thread
 * list by every stored graph's) and the inspector's own patterns, unless it was
 * started with `redaction: { raw: true }` (inspect/redaction).
 */
import type { ArtifactStore } from '../contracts/artifact-store.js';
import type { Engine } from '../contracts/engine.js';
import type { LedgerEntry } from '../contracts/ledger.js';
import { decode } from '../codec/tagged-json.js';
import { INSPECTOR_HISTORY_PAGE } from '../defaults.js';
import { InvalidOptionError, ThreadNotFoundError } from '../errors.js';
import { verifyArtifacts } from '../inspect/artifact-verify.js';
import { threadDiff } from '../inspect/diff.js';
import { threadEffects } from '../inspect/effects.js';
import { threadHistory, threadInterrupts } from '../inspect/history.js';
import { storedState } from '../inspect/stored-state.js';
import { learnDiffStates, learnErrorHeads, learnHead, redactDiff, redactLedgerEntry, redactStoredState, threadRedactor, type RedactionChoice } from '../inspect/redaction.js';
import { verifyThread } from '../inspect/verify.js';
import { printable } from '../internal/printable.js';
import { Redactor } from '../internal/redaction.js';
import { integer, pageSize, threadSegment } from './params.js';
import { listThreadPage } from './thread-list.js';
import { threadOverview } from './thread-overview.js';
import { answerView, VIEW_ROUTES } from './views-api.js';

/** What the API reads from. */
export interface ApiContext {
  engine: Engine;
  artifacts?: ArtifactStore;
  /** How answers are redacted: the stored rules by default; `raw` shows stored values; `patterns` adds some. */
  redaction?: RedactionChoice;
}

/** The key of a stand-in for what JSON cannot carry (`undefined`, `10n`…): `{ "\u0000raw": "10n" }`. A NUL in a key keeps it apart from any real field. */
export const RAW_KEY = '\u0000raw';

/** `value` as JSON can carry it, for the page: what JSON has no form for becomes `{ [RAW_KEY]: text }`. */
export function viewJson(value: unknown): unknown {
  return printable(value, (text) => ({ [RAW_KEY]: text }));
}

/** No route for this method and path. */
export class RouteNotFound extends Error {}

function ledgerView(e: LedgerEntry): Omit<LedgerEntry, 'outcome'> & { outcome?: unknown } {
  const { outcome, ...rest } = e;
  return outcome === null ? rest : { ...rest, outcome: decode(outcome, `outcome of ${e.key}`) };
}

/** Answers `GET pathname?params`; throws RouteNotFound, or what the inspect function threw. */
export async function answer(context: ApiContext, pathname: string, params: URLSearchParams): Promise<unknown> {
  const { engine } = context;
  const cp = engine.checkpointer;
  const choice = context.redaction ?? {};
  if (pathname === '/api/threads') {
    // Under every stored graph's rules, with what they hide in each failed thread's head learned (its error may quote it).
    const page = await listThreadPage(cp, params);
    const r = await threadRedactor(engine, undefined, choice);
    await learnErrorHeads(r, engine, page.threads);
    return r.value(page);
  }
  const view = /^\/api\/threads\/([^/]+)\/([a-z]+)$/.exec(pathname);
  if (view && (VIEW_ROUTES as readonly string[]).includes(view[2]!)) return answerView(context, threadSegment(view[1]!), view[2] as (typeof VIEW_ROUTES)[number], params);
  const match = /^\/api\/threads\/([^/]+)(?:\/(head|history|state|diff|verify|effects))?$/.exec(pathname);
  if (!match) throw new RouteNotFound(pathname);
  const id = threadSegment(match[1]!);
  const ns = params.get('ns') ?? '';
  // The head route, polled every second, shows no stored value.
  const r = match[2] === 'head' ? Redactor.none() : await threadRedactor(engine, id, choice);
  // Routes that do not show the state still hide what its path rules hide, where they repeat it.
  if (match[2] !== 'state' && match[2] !== 'diff') await learnHead(r, engine, id);
  return r.value(await answerRoute(context, r, id, ns, match[2], params));
}

/** One thread route's answer: its state, ledger outcomes and diff through `r`'s rules (the caller passes the rest through it). */
async function answerRoute(context: ApiContext, r: Redactor, id: string, ns: string, route: string | undefined, params: URLSearchParams): Promise<unknown> {
  const { engine } = context;
  const cp = engine.checkpointer;
  switch (route) {
    case undefined: {
      return threadOverview(cp, id);
    }
    case 'head': {
      const thread = await cp.getThread(id);
      if (!thread) throw new ThreadNotFoundError(id, { engine: cp.engine });
      return { head: thread.head, status: thread.status, updatedAt: thread.updatedAt };
    }
    case 'history': {
      const limit = pageSize(params, INSPECTOR_HISTORY_PAGE);
      const beforeSeq = integer(params, 'beforeSeq', 0);
      const rows = await threadHistory(cp, id, { ns, limit: limit + 1, ...(beforeSeq !== undefined ? { beforeSeq } : {}) });
      const positions = rows.slice(0, limit);
      return { positions, next: rows.length > limit ? positions.at(-1)!.seq : null };
    }
    case 'state': {
      const seq = integer(params, 'seq', 0);
      const view = await storedState(cp, id, { ns, ...(seq !== undefined ? { seq } : {}) });
      return { ...redactStoredState(r, view), interrupts: await threadInterrupts(cp, id, { ns, seq: view.seq }) };
    }
    case 'diff': {
      const from = integer(params, 'from', 0);
      const to = integer(params, 'to', 0);
      if (from === undefined || to === undefined) throw new InvalidOptionError('diff needs from=<seq> and to=<seq>.');
      const diff = await threadDiff(cp, id, { from, to, ns });
      await learnDiffStates(r, engine, diff);
      return redactDiff(r, diff);
    }
    case 'verify': {
      const report = await verifyThread(engine, id);
      if (params.get('artifacts') !== '1' || !context.artifacts) return report;
      const artifacts = await verifyArtifacts({ artifacts: context.artifacts, checkpointer: cp, store: engine.store, threads: [id] });
      return { ...report, artifacts };
    }
    case 'effects':
      return { effects: (await threadEffects(engine, id)).map((e) => redactLedgerEntry(r, ledgerView(e))) };
    default:
      throw new RouteNotFound(route);
  }
}
