/**
 * @module inspector/api
 * The web inspector's JSON API: each route parses its query, calls one of the
 * inspect functions (or lists threads through the checkpointer) and returns what it
 * gave. Read-only: no route writes. Values are the user's data, decoded; the server
 * turns what JSON cannot carry into readable stand-ins ({@link viewJson}).
 *
 * | route | returns |
 * |---|---|
 * | `GET /api/threads?status=&after=&limit=&q=` | `{ threads, next }`: a page in id order; `q` keeps ids that start with it; `next` is the `after` of the next page, or null |
 * | `GET /api/threads/:id` | `{ thread, attempts, interrupts }`: the record, its attempts, its interrupts pending and answered at the head |
 * | `GET /api/threads/:id/head` | `{ head, status, updatedAt }`, polled by an open thread page |
 * | `GET /api/threads/:id/history?ns=&beforeSeq=&limit=` | `{ positions, next }`: newest first; `next` is the `beforeSeq` of the next page, or null |
 * | `GET /api/threads/:id/state?seq=&ns=` | the stored state ({@link storedState}) and the interrupts at that position |
 * | `GET /api/threads/:id/diff?from=&to=&ns=` | {@link threadDiff} |
 * | `GET /api/threads/:id/verify[?artifacts=1]` | {@link verifyThread}'s report (and, with an artifact store and `artifacts=1`, the artifact check of the thread) |
 * | `GET /api/threads/:id/effects` | the ledger, outcomes decoded |
 */
import type { ArtifactStore } from '../contracts/artifact-store.js';
import type { Engine } from '../contracts/engine.js';
import type { LedgerEntry } from '../contracts/ledger.js';
import type { ThreadRecord, ThreadStatus } from '../contracts/threads.js';
import { decode } from '../codec/tagged-json.js';
import { INSPECTOR_HISTORY_PAGE, INSPECTOR_MAX_PAGE, INSPECTOR_THREAD_PAGE } from '../defaults.js';
import { InvalidOptionError, ThreadNotFoundError } from '../errors.js';
import { verifyArtifacts } from '../inspect/artifact-verify.js';
import { threadAttempts } from '../inspect/attempts.js';
import { threadDiff } from '../inspect/diff.js';
import { threadEffects } from '../inspect/effects.js';
import { threadHistory, threadInterrupts } from '../inspect/history.js';
import { storedState } from '../inspect/stored-state.js';
import { verifyThread } from '../inspect/verify.js';
import { printable } from '../internal/printable.js';

/** What the API reads from. */
export interface ApiContext {
  engine: Engine;
  artifacts?: ArtifactStore;
}

/** The key of a stand-in for what JSON cannot carry (`undefined`, `10n`…): `{ "\u0000raw": "10n" }`. A NUL in a key keeps it apart from any real field. */
export const RAW_KEY = '\u0000raw';

/** `value` as JSON can carry it, for the page: what JSON has no form for becomes `{ [RAW_KEY]: text }`. */
export function viewJson(value: unknown): unknown {
  return printable(value, (text) => ({ [RAW_KEY]: text }));
}

/** No route for this method and path. */
export class RouteNotFound extends Error {}

const STATUSES: readonly ThreadStatus[] = ['running', 'interrupted', 'completed', 'failed', 'needs_attention', 'waiting'];

function integer(params: URLSearchParams, name: string, min: number): number | undefined {
  const text = params.get(name);
  if (text === null || text === '') return undefined;
  if (!/^\d+$/.test(text) || Number(text) < min || !Number.isSafeInteger(Number(text))) throw new InvalidOptionError(`${name}=${JSON.stringify(text)}: expected an integer of ${min} or more.`);
  return Number(text);
}

function pageSize(params: URLSearchParams, fallback: number): number {
  const limit = integer(params, 'limit', 1) ?? fallback;
  if (limit > INSPECTOR_MAX_PAGE) throw new InvalidOptionError(`limit=${limit}: at most ${INSPECTOR_MAX_PAGE} per page.`);
  return limit;
}

function statuses(params: URLSearchParams): ThreadStatus[] | undefined {
  const text = params.get('status');
  if (!text) return undefined;
  const list = text.split(',').map((s) => s.trim()).filter(Boolean);
  for (const s of list) if (!STATUSES.includes(s as ThreadStatus)) throw new InvalidOptionError(`status=${JSON.stringify(s)}: expected one of ${STATUSES.join(', ')}.`);
  return list as ThreadStatus[];
}

/**
 * A page of threads in id order. With `q`, only ids that start with it: ids are kept
 * in byte order by every engine, so those are the ids from `q` on, up to the first
 * that does not start with it.
 */
async function listThreads(engine: Engine, params: URLSearchParams): Promise<{ threads: ThreadRecord[]; next: string | null }> {
  const limit = pageSize(params, INSPECTOR_THREAD_PAGE);
  const status = statuses(params);
  const q = params.get('q') ?? '';
  let after = params.get('after') ?? undefined;
  const threads: ThreadRecord[] = [];
  if (q && (after === undefined || after < q)) {
    // `after` is exclusive: the id equal to q itself is looked up on its own.
    const exact = await engine.checkpointer.getThread(q);
    if (exact && (!status || status.includes(exact.status))) threads.push(exact);
    after = q;
  }
  // One more than the page, to tell whether there is a next page.
  const rows = await engine.checkpointer.listThreads({ ...(status ? { status } : {}), ...(after !== undefined ? { after } : {}), limit: limit + 1 });
  for (const t of rows) {
    if (q && !t.id.startsWith(q)) break;
    threads.push(t);
  }
  const more = threads.length > limit;
  const page = threads.slice(0, limit);
  return { threads: page, next: more ? page.at(-1)!.id : null };
}

function ledgerView(e: LedgerEntry): Omit<LedgerEntry, 'outcome'> & { outcome?: unknown } {
  const { outcome, ...rest } = e;
  return outcome === null ? rest : { ...rest, outcome: decode(outcome, `outcome of ${e.key}`) };
}

/** Answers `GET pathname?params`; throws RouteNotFound, or what the inspect function threw. */
export async function answer(context: ApiContext, pathname: string, params: URLSearchParams): Promise<unknown> {
  const { engine } = context;
  const cp = engine.checkpointer;
  if (pathname === '/api/threads') return listThreads(engine, params);
  const match = /^\/api\/threads\/([^/]+)(?:\/(head|history|state|diff|verify|effects))?$/.exec(pathname);
  if (!match) throw new RouteNotFound(pathname);
  const id = decodeURIComponent(match[1]!);
  const ns = params.get('ns') ?? '';
  switch (match[2]) {
    case undefined: {
      const story = await threadAttempts(cp, id);
      const interrupts = await threadInterrupts(cp, id);
      return { thread: story.thread, attempts: story.attempts, interrupts };
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
      return { ...view, interrupts: await threadInterrupts(cp, id, { ns, seq: view.seq }) };
    }
    case 'diff': {
      const from = integer(params, 'from', 0);
      const to = integer(params, 'to', 0);
      if (from === undefined || to === undefined) throw new InvalidOptionError('diff needs from=<seq> and to=<seq>.');
      return threadDiff(cp, id, { from, to, ns });
    }
    case 'verify': {
      const report = await verifyThread(engine, id);
      if (params.get('artifacts') !== '1' || !context.artifacts) return report;
      const artifacts = await verifyArtifacts({ artifacts: context.artifacts, checkpointer: cp, store: engine.store, threads: [id] });
      return { ...report, artifacts };
    }
    case 'effects':
      return { effects: (await threadEffects(engine, id)).map(ledgerView) };
    default:
      throw new RouteNotFound(pathname);
  }
}
