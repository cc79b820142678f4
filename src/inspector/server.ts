/**
 * @module inspector/server
 * The web inspector's HTTP server (`node:http`, no framework): the built single-page
 * app and its JSON API ({@link answer}), behind an access token. Read-only unless
 * started with `allowActions`: then the POST routes of inspector/actions answer,
 * interrupts, signals, effects, forks, replays, evaluations, cancellations and deletions, each
 * refused without the page's proof of origin ({@link checkSameSite}); without it every
 * POST is 403. `cairn inspect` starts it; `cairn/inspector` exports
 * {@link startInspector} for scripts.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { userInfo } from 'node:os';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { ArtifactStore } from '../contracts/artifact-store.js';
import type { Engine } from '../contracts/engine.js';
import { INSPECTOR_HOST, INSPECTOR_PORT } from '../defaults.js';
import {
  ActionsDisabledError,
  AppRequiredError,
  ArtifactIntegrityError,
  ArtifactTooLargeToRedactError,
  ArtifactNotFoundError,
  CairnError,
  CrossSiteRequestError,
  EffectConflictError,
  EffectNotFoundError,
  HeadMovedError,
  InterruptNotFoundError,
  InvalidKeyError,
  InvalidOptionError,
  InvalidUpdateError,
  LeaseLostError,
  NamespaceNotFoundError,
  PositionNotFoundError,
  RuntimeFieldWriteError,
  StateValidationError,
  ThreadBusyError,
  ThreadInterruptedError,
  ThreadNotFoundError,
  ThreadNotInterruptedError,
  UnknownFieldError,
} from '../errors.js';
import type { App } from '../runtime/app.js';
import type { EvaluationReport } from '../runtime/evaluate.js';
import type { StateSchema } from '../state/schema.js';
import { actionsInfo, actionThread, checkSameSite, isActionRoute, performAction, readJsonBody, type ActionContext } from './actions.js';
import { answer, RouteNotFound, viewJson } from './api.js';
import { learnHead, redactEvaluationReport, threadRedactor, type RedactionChoice } from '../inspect/redaction.js';
import { ARTIFACT_ROUTE, artifactResponse, NoArtifactStore } from './artifact-route.js';
import { EVALUATE_ROUTE, SAVED_REPORT_ROUTE, evaluateAction } from './evaluation.js';
import { access, newToken, tokenCookie } from './auth.js';
import { DEFAULT_UI_DIR, uiFile } from './static-files.js';
import { pathSegment } from './params.js';
import { checkOptionKeys } from '../internal/option-keys.js';

/** What {@link startInspector} serves, and where. */
export interface InspectorOptions {
  /** The engine to read (open it read-only, as `cairn inspect` does, unless `allowActions`). The inspector does not close it. */
  engine: Engine;
  /** An artifact store: for the artifact check of `verify?artifacts=1` and to open the artifacts a state refers to. */
  artifacts?: ArtifactStore;
  /** The port; default 0, a free one. */
  port?: number;
  /** The address to bind; default `127.0.0.1`. */
  host?: string;
  /** The built UI's folder; default `dist/inspector-ui/` of this package. */
  uiDir?: string;
  /** The access token; default 32 fresh random bytes, hex. */
  token?: string;
  /**
   * Serve the actions (answer an interrupt, signal, resolve an effect, replay, fork,
   * cancel, delete: see inspector/actions). Default false: read-only, every POST is
   * 403. The engine must then be open for writing.
   */
  allowActions?: boolean;
  /** The application, for the actions that run its code (resume, fork, replay); needs `allowActions`. */
  app?: App<StateSchema>;
  /** Who the actions are recorded as. Default `inspector:<os user>`. */
  actor?: string;
  /** A report `cairn eval --json` saved, shown read-only on the evaluation page (`GET /api/evaluation-report`); nothing runs. */
  evaluationReport?: EvaluationReport;
  /**
   * What the API shows of stored values. Default: redacted by the rules the runtime
   * stored with each thread's graph (`compile({ redact })`, fields declared
   * `redact: true`), plus `patterns` (regular expression sources, as
   * `cairn inspect --redact-pattern`); `raw: true` shows them as stored
   * (`cairn inspect --raw`). Artifact bytes are served as stored.
   */
  redaction?: RedactionChoice;
}

const INSPECTOR_OPTION_KEYS: readonly string[] = ['engine', 'artifacts', 'port', 'host', 'uiDir', 'token', 'allowActions', 'app', 'actor', 'evaluationReport', 'redaction'] satisfies (keyof InspectorOptions)[];

/** A running inspector. */
export interface Inspector {
  /** The page's address with its token: `http://127.0.0.1:43117/?token=…`. */
  url: string;
  token: string;
  port: number;
  /** Stops the server (open connections are closed); the engine stays open. */
  close(): Promise<void>;
}

/** Codes of a request that cannot be done as asked: a malformed body, an answer or patch the schema refuses. */
const BAD_REQUEST = new Set<string>([InvalidOptionError.code, InvalidKeyError.code, InvalidUpdateError.code, StateValidationError.code, UnknownFieldError.code, RuntimeFieldWriteError.code]);
/** Codes of an action the thread's present state refuses: busy, not interrupted, already settled, no app. */
const CONFLICT = new Set<string>([AppRequiredError.code, ThreadBusyError.code, EffectConflictError.code, ThreadInterruptedError.code, ThreadNotInterruptedError.code, LeaseLostError.code, HeadMovedError.code]);

/** The HTTP status and stable code of an error the API met. */
function errorStatus(error: unknown): { status: number; code: string; message: string } {
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof RouteNotFound) return { status: 404, code: 'ERR_NO_ROUTE', message: `no API route ${message}` };
  if (error instanceof NoArtifactStore) return { status: 404, code: 'ERR_NO_ARTIFACT_STORE', message };
  if (ArtifactTooLargeToRedactError.is(error)) return { status: 413, code: error.code, message };
  if (ArtifactIntegrityError.is(error)) return { status: 409, code: error.code, message };
  if (ArtifactNotFoundError.is(error)) return { status: 404, code: error.code, message };
  const code = CairnError.is(error) ? (error as CairnError & { code: string }).code : 'ERR_INTERNAL';
  if (ThreadNotFoundError.is(error) || PositionNotFoundError.is(error) || NamespaceNotFoundError.is(error)) return { status: 404, code, message };
  if (EffectNotFoundError.is(error) || InterruptNotFoundError.is(error)) return { status: 404, code, message };
  if (ActionsDisabledError.is(error) || CrossSiteRequestError.is(error)) return { status: 403, code, message };
  if (BAD_REQUEST.has(code)) return { status: 400, code, message };
  if (CONFLICT.has(code)) return { status: 409, code, message };
  return { status: 500, code, message };
}

const SECURITY_HEADERS = {
  // The token is in the page's URL: never send it on as a Referer.
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'content-security-policy': "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'",
  'cache-control': 'no-store',
};

function send(response: ServerResponse, status: number, type: string, body: string | Buffer, headers: Record<string, string> = {}): void {
  response.writeHead(status, { ...SECURITY_HEADERS, 'content-type': type, 'content-length': Buffer.byteLength(body), ...headers });
  response.end(body);
}

function sendJson(response: ServerResponse, status: number, value: unknown): void {
  send(response, status, 'application/json; charset=utf-8', JSON.stringify(viewJson(value)));
}

/** The URL a person opens: the host as a browser writes it (an IPv6 address in brackets). */
function pageUrl(host: string, port: number, token: string): string {
  const shown = host.includes(':') ? `[${host}]` : host;
  return `http://${shown}:${port}/?token=${token}`;
}

/**
 * Starts the web inspector on `host:port` (default 127.0.0.1, a free port) and
 * resolves once it listens. Every request (page, assets, API) without the token,
 * in the query or in the cookie the first page load sets, is answered 401. With
 * `allowActions` (an engine open for writing, and `app` for the actions that run
 * code) the page may act on threads, recorded as `actor`.
 *
 * @example
 * ```ts
 * import { sqlite } from 'cairn/sqlite';
 * import { startInspector } from 'cairn/inspector';
 * const engine = sqlite('./cairn.db', { readOnly: true });
 * const inspector = await startInspector({ engine });
 * console.log(inspector.url);
 * // later: await inspector.close(); await engine.close();
 * ```
 */
export async function startInspector(options: InspectorOptions): Promise<Inspector> {
  if (options === undefined) throw new InvalidOptionError('startInspector takes an options object ({ engine, … }).');
  checkOptionKeys('startInspector', options, INSPECTOR_OPTION_KEYS);
  const token = options.token ?? newToken();
  const uiDir = options.uiDir ?? DEFAULT_UI_DIR;
  const host = options.host ?? INSPECTOR_HOST;
  let port = options.port ?? INSPECTOR_PORT;
  const redaction = options.redaction ?? {};
  // Patterns that do not compile are refused here, before the server listens.
  await threadRedactor(options.engine, undefined, redaction);
  const context = { engine: options.engine, redaction, ...(options.artifacts ? { artifacts: options.artifacts } : {}) };
  /** An action's answer, or an error's message: under the rules of the thread it names (every graph's when none). */
  const shown = async (value: unknown, thread: unknown): Promise<unknown> => (await threadRedactor(options.engine, typeof thread === 'string' ? thread : undefined, redaction)).value(value);
  /**
   * An action's answer: under every stored graph's rules, with what they hide in the
   * head of the thread it acted on learned (a cancel of a failed thread answers with its
   * error, which may quote the state).
   */
  const shownAction = async (value: unknown, pathname: string): Promise<unknown> => {
    const r = await threadRedactor(options.engine, undefined, redaction);
    const thread = actionThread(pathname);
    if (thread !== undefined) await learnHead(r, options.engine, thread);
    return r.value(value);
  };
  const failed = async (response: ServerResponse, error: unknown, thread?: unknown) => {
    const { status, code, message } = errorStatus(error);
    sendJson(response, status, { error: { code, message: (await shown(message, thread)) as string } });
  };
  if (options.app && !options.allowActions) throw new InvalidOptionError('startInspector: app serves the actions that run its code; pass allowActions: true with it.');
  const actions: ActionContext | undefined = options.allowActions
    ? { engine: options.engine, actor: options.actor ?? `inspector:${userInfo().username}`, redacting: redaction.raw !== true, ...(options.app ? { app: options.app } : {}) }
    : undefined;

  const handle = async (request: IncomingMessage, response: ServerResponse) => {
    const url = new URL(request.url ?? '/', 'http://inspector');
    const how = access(request, url, token, port);
    if (how === 'denied') {
      sendJson(response, 401, { error: { code: 'ERR_UNAUTHORIZED', message: 'this inspector needs its access token: open the URL cairn inspect printed (it ends with ?token=…).' } });
      return;
    }
    const evaluate = url.pathname === EVALUATE_ROUTE;
    let thread: unknown;
    if (request.method === 'POST' && (evaluate || isActionRoute(url.pathname))) {
      try {
        if (!actions) throw new ActionsDisabledError();
        checkSameSite(request, token);
        const body = await readJsonBody(request);
        thread = body.thread;
        sendJson(response, 200, evaluate ? await redactEvaluationReport(options.engine, await evaluateAction(actions, body), redaction, options.app?.redaction) : await shownAction(await performAction(actions, url.pathname, body), url.pathname));
      } catch (error) {
        await failed(response, error, thread);
      }
      return;
    }
    if (request.method !== 'GET' && request.method !== 'HEAD') {
      sendJson(response, 405, { error: { code: 'ERR_METHOD', message: actions ? 'only GET, and POST for actions.' : 'the inspector is read-only: only GET.' } });
      return;
    }
    if (url.pathname === '/api/actions') {
      sendJson(response, 200, actionsInfo(actions));
      return;
    }
    const artifact = ARTIFACT_ROUTE.exec(url.pathname);
    if (artifact) {
      try {
        const served = await artifactResponse(context, pathSegment(artifact[1]!), url.searchParams);
        response.writeHead(served.status, { ...SECURITY_HEADERS, ...served.headers });
        if (request.method === 'HEAD') {
          response.end();
          await served.cancel();
          return;
        }
        await pipeline(Readable.from(served.body), response);
      } catch (error) {
        if (response.headersSent) return void response.destroy();
        await failed(response, error);
      }
      return;
    }
    if (url.pathname === SAVED_REPORT_ROUTE) {
      sendJson(response, 200, { report: options.evaluationReport ? await redactEvaluationReport(options.engine, options.evaluationReport, redaction) : null });
      return;
    }
    if (url.pathname.startsWith('/api/')) {
      try {
        sendJson(response, 200, await answer(context, url.pathname, url.searchParams));
      } catch (error) {
        await failed(response, error);
      }
      return;
    }
    const file = await uiFile(uiDir, url.pathname);
    if (!file) {
      const missing = url.pathname === '/';
      send(response, 404, 'text/plain; charset=utf-8', missing ? `the inspector's page is not built: run npm run build (it writes ${uiDir}).` : 'not found');
      return;
    }
    // The first load carries the token in its URL; later requests (assets, API) the cookie.
    send(response, 200, file.type, file.body, how === 'query' ? { 'set-cookie': tokenCookie(token, port) } : {});
  };

  const server = createServer((request, response) => {
    handle(request, response).catch((error: unknown) => {
      if (!response.headersSent) sendJson(response, 500, { error: { code: 'ERR_INTERNAL', message: (error as Error).message } });
      else response.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  port = (server.address() as AddressInfo).port;
  return {
    url: pageUrl(host, port, token),
    token,
    port,
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((error) => (error ? reject(error) : resolve()));
        server.closeAllConnections();
      }),
  };
}
