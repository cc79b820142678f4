/**
 * @module inspector/actions
 * What the web inspector may change, when it is started with `--allow-actions`
 * (`startInspector({ allowActions: true })`): each action is a `POST` with a JSON
 * body, answered with JSON, and goes through the same function the CLI calls, with
 * the inspector's actor recorded where the CLI records one:
 *
 * | route (`POST`) | body | does, as |
 * |---|---|---|
 * | `/api/threads/:id/resume` | `{ answer? , input?, interrupt? }` | `app.resume({ actor })`: `cairn resume` (needs the app) |
 * | `/api/threads/:id/signal` | `{ name, payload? }` | {@link signalThread}: `cairn signal` |
 * | `/api/threads/:id/resolve-effect` | `{ key, outcome }` or `{ key, failed: true, message? }` | {@link resolveEffect} / {@link failEffect} (`actor`): `cairn resolve-effect` |
 * | `/api/threads/:id/replay` | `{ from, to? }` | `app.replay`: `cairn replay` (needs the app; writes nothing) |
 * | `/api/threads/:id/fork` | `{ seq, patch?, run? }` | `app.fork({ actor })`, then `app.run` with `run`: `cairn fork` (needs the app) |
 * | `/api/threads/:id/cancel` | `{ reason? }` | {@link cancelThread} (`actor`): `cairn cancel` |
 * | `/api/threads/:id/delete` | `{ confirm: id }` | `checkpointer.deleteThread`: `cairn delete-thread` |
 * | `/api/evaluate` | `{ threads?, filters?, limit? }` | `app.evaluate`: `cairn eval` (needs the app; writes nothing; see inspector/evaluation) |
 *
 * `GET /api/actions` tells the page what it may offer: whether actions are allowed,
 * whether an application is loaded (actions that run code need one), the actor, and
 * the application's model fields (what a fork's state editor may write) and which of
 * them append.
 *
 * A request is refused before anything changes: {@link ActionsDisabledError} (403)
 * without `--allow-actions`, {@link CrossSiteRequestError} (403) without the proof
 * that the inspector's own page sent it ({@link checkSameSite}), {@link AppRequiredError}
 * (409) for an action that runs code when no application was given.
 */
import type { IncomingMessage } from 'node:http';
import type { Engine } from '../contracts/engine.js';
import { AppRequiredError, CrossSiteRequestError, InvalidOptionError } from '../errors.js';
import { pathSegment, threadSegment } from './params.js';
import { cancelThread } from '../inspect/cancel.js';
import { failEffect, resolveEffect } from '../inspect/effects.js';
import { signalThread } from '../inspect/signal.js';
import type { App } from '../runtime/app.js';
import type { StateSchema } from '../state/schema.js';
import { holdsMarker, REDACTED } from '../internal/redaction.js';
import { sameToken } from './auth.js';

/** What the actions act on, and who they are recorded as. */
export interface ActionContext {
  engine: Engine;
  /** The application, for the actions that run its code (resume, fork, replay). */
  app?: App<StateSchema>;
  /** Recorded as the actor of resumes, forks, failed effects and cancellations. */
  actor: string;
  /** True when the page is shown redacted values: a write that holds the marker is refused (see {@link refuseMarker}). */
  redacting?: boolean;
}

/**
 * Refuses a write (a fork's patch, a resume's input or answer, an effect's outcome)
 * that holds the redaction marker while the page shows redacted values: it was edited
 * from what the page showed, and would replace a stored value with `[redacted]`.
 */
function refuseMarker(context: ActionContext, what: string, value: unknown): void {
  if (context.redacting && holdsMarker(value)) {
    throw new InvalidOptionError(
      `the ${what} holds "${REDACTED}", which the page shows in place of stored values: writing it would replace them. Leave the redacted fields out of it, or start the inspector with --raw to edit them.`,
    );
  }
}

/** The header the inspector's page sends its token in: a cross-site form or script cannot set it without the token (and a preflight). */
export const TOKEN_HEADER = 'x-cairn-token';

/** The largest request body an action reads, bytes. */
const MAX_BODY_BYTES = 1024 * 1024;

const ACTION = /^\/api\/threads\/([^/]+)\/(resume|signal|resolve-effect|replay|fork|cancel|delete)$/;

/** True when `pathname` is an action's route (so a POST to it is an action, allowed or not). */
export function isActionRoute(pathname: string): boolean {
  return ACTION.test(pathname);
}

/** The thread an action's route names, or undefined when `pathname` is not one. */
export function actionThread(pathname: string): string | undefined {
  const match = ACTION.exec(pathname);
  return match ? pathSegment(match[1]!) : undefined;
}

/**
 * Refuses a request the inspector's own page did not send: it must carry the token in
 * {@link TOKEN_HEADER} (a custom header: another site's form cannot send one, and its
 * script cannot without a CORS preflight, which this server never grants), a JSON
 * body, and, where the browser says, a same-origin `Origin` and `Sec-Fetch-Site`.
 * Throws CrossSiteRequestError.
 */
export function checkSameSite(request: IncomingMessage, token: string): void {
  if (!sameToken(headerText(request, TOKEN_HEADER), token)) {
    throw new CrossSiteRequestError(`an action needs the inspector's token in the ${TOKEN_HEADER} header (the inspector's page sends it): refused as a possible cross-site request. Reload the page from the URL cairn inspect printed.`);
  }
  const site = headerText(request, 'sec-fetch-site');
  if (site !== undefined && site !== 'same-origin' && site !== 'none') throw new CrossSiteRequestError(`an action from another site (Sec-Fetch-Site: ${site}) is refused.`);
  const origin = headerText(request, 'origin');
  if (origin !== undefined && origin !== `http://${request.headers.host ?? ''}`) throw new CrossSiteRequestError(`an action from another origin (${origin}) is refused.`);
  const type = headerText(request, 'content-type') ?? '';
  if (!/^application\/json\b/i.test(type)) throw new CrossSiteRequestError(`an action's body must be JSON (Content-Type: application/json), not ${type || 'none'}.`);
}

function headerText(request: IncomingMessage, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

/** The request's JSON body, an object; InvalidOptionError for anything else or more than 1 MiB. */
export async function readJsonBody(request: IncomingMessage): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY_BYTES) throw new InvalidOptionError(`an action's body is at most ${MAX_BODY_BYTES} bytes.`);
    chunks.push(chunk);
  }
  let body: unknown;
  try {
    body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
  } catch (error) {
    throw new InvalidOptionError(`an action's body must be JSON: ${(error as Error).message}`);
  }
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new InvalidOptionError("an action's body must be a JSON object.");
  return body as Record<string, unknown>;
}

/** What `GET /api/actions` answers: what the page may offer, and why not. */
export interface ActionsInfo {
  allowed: boolean;
  /** Whether an application is loaded: resume, fork and replay need it. */
  app: boolean;
  actor: string | null;
  /** Model fields of the application's root state (what a fork's patch may write), or null without an app. */
  modelFields: string[] | null;
  /** Those of them whose reducer appends: a fork's patch adds items to them, it does not replace them. */
  appendFields: string[] | null;
}

/** The answer of `GET /api/actions`. */
export function actionsInfo(context: ActionContext | undefined): ActionsInfo {
  if (!context) return { allowed: false, app: false, actor: null, modelFields: null, appendFields: null };
  const schema = context.app?.schema;
  return {
    allowed: true,
    app: context.app !== undefined,
    actor: context.actor,
    modelFields: schema ? schema.fieldNames.filter((name) => schema.field(name)?.role === 'model') : null,
    appendFields: schema ? schema.fieldNames.filter((name) => schema.appendFields.has(name)) : null,
  };
}

function text(body: Record<string, unknown>, name: string, required: true): string;
function text(body: Record<string, unknown>, name: string, required?: false): string | undefined;
function text(body: Record<string, unknown>, name: string, required = false): string | undefined {
  const value = body[name];
  if (value === undefined && !required) return undefined;
  if (typeof value !== 'string' || value === '') throw new InvalidOptionError(`${name}: expected a non-empty string.`);
  return value;
}

function seqOf(body: Record<string, unknown>, name: string, required: boolean): number | undefined {
  const value = body[name];
  if (value === undefined && !required) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw new InvalidOptionError(`${name}: expected a position's seq, a whole number (0 or more).`);
  return value;
}

function objectOf(body: Record<string, unknown>, name: string): Record<string, unknown> | undefined {
  const value = body[name];
  if (value === undefined) return undefined;
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new InvalidOptionError(`${name}: expected a JSON object of state fields.`);
  return value as Record<string, unknown>;
}

function needApp(context: ActionContext, action: string): App<StateSchema> {
  if (!context.app) throw new AppRequiredError(action);
  return context.app;
}

/** The result of a run, as the page shows it (the state is left out: the page reads it from the position). */
function runView(result: { threadId: string; status: string; seq: number; interrupts: unknown[] }) {
  return { thread: result.threadId, status: result.status, seq: result.seq, interrupts: result.interrupts };
}

/**
 * Performs the action `POST pathname` with `body` names. Throws the error of the
 * function it calls (typed: StateValidationError, ThreadBusyError…), InvalidOptionError
 * for a malformed body, AppRequiredError for an action that needs the application.
 */
export async function performAction(context: ActionContext, pathname: string, body: Record<string, unknown>): Promise<unknown> {
  const match = ACTION.exec(pathname);
  if (!match) throw new InvalidOptionError(`no action at ${pathname}`);
  const thread = threadSegment(match[1]!);
  const { engine, actor } = context;
  switch (match[2]) {
    case 'resume': {
      const app = needApp(context, 'answering an interrupt');
      const hasAnswer = 'answer' in body;
      const input = objectOf(body, 'input');
      if (!hasAnswer && input === undefined) throw new InvalidOptionError('give the answer (what ctx.interrupt resolves to) or input (state writes).');
      const interrupt = text(body, 'interrupt');
      refuseMarker(context, 'input', input);
      if (hasAnswer) refuseMarker(context, 'answer', body.answer);
      // The input is checked by the graph's own schema: it is typed as the graph's writes only there.
      const resume = { thread, actor, ...(hasAnswer ? { answer: body.answer } : {}), ...(input ? { input } : {}), ...(interrupt ? { interrupt } : {}) } as Parameters<App<StateSchema>['resume']>[0];
      return runView(await app.resume(resume));
    }
    case 'signal': {
      const signal = await signalThread(engine, { thread, name: text(body, 'name', true), payload: body.payload ?? null });
      return { thread, signal: { id: signal.id, name: signal.name, sentAt: signal.sentAt } };
    }
    case 'resolve-effect': {
      const key = text(body, 'key', true);
      if (body.failed === true) {
        const message = text(body, 'message');
        const record = await failEffect(engine, { thread, idempotencyKey: key, actor, ...(message ? { message } : {}) });
        return { thread, key, resolution: 'failed', status: record.status, error: record.lastError };
      }
      if (!('outcome' in body)) throw new InvalidOptionError('say how the effect ended: outcome (JSON), or failed: true.');
      refuseMarker(context, 'outcome', body.outcome);
      const entry = await resolveEffect(engine, { thread, idempotencyKey: key, outcome: body.outcome });
      return { thread, key, resolution: 'outcome', name: entry.name };
    }
    case 'replay': {
      const app = needApp(context, 'replaying');
      const to = seqOf(body, 'to', false);
      return app.replay({ thread, from: seqOf(body, 'from', true)!, ...(to !== undefined ? { to } : {}) });
    }
    case 'fork': {
      const app = needApp(context, 'forking');
      const seq = seqOf(body, 'seq', true)!;
      const patch = objectOf(body, 'patch');
      refuseMarker(context, 'patch', patch);
      const fork = { thread, seq, actor, ...(patch ? { patch } : {}) } as Parameters<App<StateSchema>['fork']>[0];
      const forked = await app.fork(fork);
      if (body.run !== true) return { ...runView(forked), forkedFrom: seq };
      return { ...runView(await app.run({ thread })), forkedFrom: seq, forkSeq: forked.seq };
    }
    case 'cancel': {
      const reason = text(body, 'reason');
      const result = await cancelThread(engine, { thread, actor, ...(reason ? { reason } : {}) });
      return { thread, cancelled: result.cancelled, status: result.thread.status, error: result.thread.lastError };
    }
    case 'delete': {
      // The page asks the person to type the id; the server checks it too, so no stray request deletes a thread.
      if (body.confirm !== thread) throw new InvalidOptionError(`deleting thread ${thread} needs confirm: "${thread}" (its id, typed again).`);
      return engine.checkpointer.deleteThread(thread);
    }
    default:
      throw new InvalidOptionError(`no action at ${pathname}`);
  }
}
