/**
 * The web inspector's actions, over HTTP against a real SQLite file, as the page
 * sends them: refused (403, nothing changed) without `allowActions`, and without the
 * page's proof of origin (the token header, a same-origin Origin and Sec-Fetch-Site,
 * a JSON body); then each action's effect on the database, through the functions the
 * CLI calls, with the actor recorded: an interrupt answered (a refused answer is the
 * typed error, nothing changed), a signal sent, an effect resolved or failed, a
 * replay, a fork with an edited state, a cancellation, a deletion; and the actions
 * that run code refused without the application.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/contracts/engine.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { TOKEN_HEADER } from '../../src/inspector/actions.js';
import { startInspector, type Inspector } from '../../src/inspector/index.js';
import type { App } from '../../src/runtime/app.js';
import { ensureBuilt } from '../artifacts/build.js';

let dir: string;
let engine: Engine;
// eslint-disable-next-line @typescript-eslint/no-explicit-any
let app: App<any>;
let readOnly: Inspector;
let acting: Inspector;
let noApp: Inspector;
let setChargeBroken: (broken: boolean) => void;

beforeAll(async () => {
  ensureBuilt();
  const fixture = (await import('../fixtures/actions-app.mjs')) as typeof import('../fixtures/actions-app.mjs');
  setChargeBroken = fixture.setChargeBroken;
  dir = mkdtempSync(join(tmpdir(), 'cairn-inspector-actions-'));
  engine = sqlite(join(dir, 'cairn.db'));
  app = fixture.createApp(engine);
  readOnly = await startInspector({ engine, uiDir: dir });
  acting = await startInspector({ engine, uiDir: dir, allowActions: true, app, actor: 'ana' });
  noApp = await startInspector({ engine, uiDir: dir, allowActions: true });
}, 120_000);

afterAll(async () => {
  await readOnly?.close();
  await acting?.close();
  await noApp?.close();
  await engine?.close();
  rmSync(dir, { recursive: true, force: true });
});

const base = (i: Inspector) => i.url.slice(0, i.url.indexOf('/?token='));

/** POSTs `body` to `path` as the inspector's page does (token in the query and the header, JSON), with `headers` over those. */
async function post(i: Inspector, path: string, body: unknown, headers: Record<string, string | undefined> = {}): Promise<{ status: number; body: any }> {
  const sent: Record<string, string> = {};
  for (const [k, v] of Object.entries({ 'content-type': 'application/json', [TOKEN_HEADER]: i.token, ...headers })) if (v !== undefined) sent[k] = v;
  const response = await fetch(`${base(i)}${path}?token=${i.token}`, { method: 'POST', headers: sent, body: JSON.stringify(body) });
  return { status: response.status, body: await response.json() };
}

const get = async (i: Inspector, path: string) => (await fetch(`${base(i)}${path}?token=${i.token}`)).json() as Promise<any>;

/** Every stored row a test could change, to prove a refused action changed none. */
async function footprint(thread: string) {
  return {
    record: await engine.checkpointer.getThread(thread),
    head: await engine.checkpointer.getHead(thread, ''),
    ledger: await engine.ledger.list(thread),
    signals: await engine.checkpointer.listSignals(thread),
  };
}

describe('inspector actions: refused', () => {
  it('answers 403 ERR_ACTIONS_DISABLED to every action of a read-only inspector, and GET /api/actions says so', async () => {
    await app.run({ thread: 'ro', input: { mode: 'ask' } });
    const before = await footprint('ro');
    for (const action of ['resume', 'signal', 'resolve-effect', 'replay', 'fork', 'cancel', 'delete']) {
      const answer = await post(readOnly, `/api/threads/ro/${action}`, { confirm: 'ro', name: 'x', answer: true, seq: 0, from: 0, key: 'k', outcome: 1 });
      expect(answer.status, action).toBe(403);
      expect(answer.body.error.code).toBe('ERR_ACTIONS_DISABLED');
      expect(answer.body.error.message).toContain('--allow-actions');
    }
    expect(await footprint('ro')).toEqual(before);
    expect(await get(readOnly, '/api/actions')).toEqual({ allowed: false, app: false, actor: null, modelFields: null, appendFields: null });
    // GET stays read-only everywhere: an action's path answers no GET.
    expect((await fetch(`${base(acting)}/api/threads/ro/cancel?token=${acting.token}`)).status).toBe(404);
  });

  it('refuses with 403 ERR_CROSS_SITE, changing nothing: no token header, a wrong one, another Origin, a cross-site fetch, a form body', async () => {
    await app.run({ thread: 'csrf', input: { mode: 'wait' } });
    const before = await footprint('csrf');
    const attempts: Record<string, string | undefined>[] = [
      { [TOKEN_HEADER]: undefined },
      { [TOKEN_HEADER]: '0'.repeat(64) },
      { origin: 'http://evil.example' },
      { 'sec-fetch-site': 'cross-site' },
      { 'content-type': 'application/x-www-form-urlencoded' },
      { 'content-type': 'text/plain' },
    ];
    for (const headers of attempts) {
      const answer = await post(acting, '/api/threads/csrf/cancel', {}, headers);
      expect(answer.status, JSON.stringify(headers)).toBe(403);
      expect(answer.body.error.code).toBe('ERR_CROSS_SITE');
    }
    expect(await footprint('csrf')).toEqual(before);
    // Without the token at all, 401 comes first.
    const anonymous = await fetch(`${base(acting)}/api/threads/csrf/cancel`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    expect(anonymous.status).toBe(401);
  });

  it('refuses the actions that run code without the app (409 ERR_APP_REQUIRED), and says so in GET /api/actions', async () => {
    await app.run({ thread: 'noapp', input: { mode: 'ask' } });
    const before = await footprint('noapp');
    for (const [action, body] of [['resume', { answer: {} }], ['fork', { seq: 0 }], ['replay', { from: 0 }]] as const) {
      const answer = await post(noApp, `/api/threads/noapp/${action}`, body);
      expect(answer.status, action).toBe(409);
      expect(answer.body.error.code).toBe('ERR_APP_REQUIRED');
      expect(answer.body.error.message).toContain('--app');
    }
    expect(await footprint('noapp')).toEqual(before);
    expect(await get(noApp, '/api/actions')).toMatchObject({ allowed: true, app: false, modelFields: null });
    expect(await get(acting, '/api/actions')).toEqual({ allowed: true, app: true, actor: 'ana', modelFields: ['mode', 'topic', 'decision', 'got', 'charged', 'notes'], appendFields: ['notes'] });
  });

  it('startInspector refuses an app without allowActions', async () => {
    await expect(startInspector({ engine, uiDir: dir, app })).rejects.toThrow(/allowActions/);
  });
});

describe('inspector actions: what each does', () => {
  it('answers an interrupt from its answer schema: a refused answer is 400 ERR_STATE_VALIDATION and changes nothing; a good one completes the thread, as ana', async () => {
    const asked = await app.run({ thread: 'ask', input: { mode: 'ask' } });
    expect(asked.interrupts[0]!.answerSchema).toMatchObject({ type: 'object', properties: { reason: { enum: ['stock', 'price', 'other'] } } });
    const before = await footprint('ask');
    const bad = await post(acting, '/api/threads/ask/resume', { answer: { approve: 'yes', amount: -1, reason: 'stock', shipTo: { city: '' } } });
    expect(bad.status).toBe(400);
    expect(bad.body.error.code).toBe('ERR_STATE_VALIDATION');
    expect(await footprint('ask')).toEqual(before);
    const good = await post(acting, '/api/threads/ask/resume', { answer: { approve: true, amount: 40, reason: 'price', shipTo: { city: 'Lyon' } } });
    expect(good.status, JSON.stringify(good.body)).toBe(200);
    expect(good.body).toMatchObject({ thread: 'ask', status: 'completed' });
    expect(((await app.getState({ thread: 'ask' })) as { decision: string }).decision).toBe('refund 40 (price) to Lyon');
    const history = await app.history({ thread: 'ask' });
    expect(history.some((p) => p.actor === 'ana')).toBe(true);
    // Again: the thread is no longer interrupted.
    const again = await post(acting, '/api/threads/ask/resume', { answer: { approve: true, amount: 1, reason: 'price', shipTo: { city: 'Lyon' } } });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('ERR_NOT_INTERRUPTED');
  });

  it('sends a signal to a waiting thread: queued, and the thread made due', async () => {
    await app.run({ thread: 'wait', input: { mode: 'wait' } });
    expect((await engine.checkpointer.getThread('wait'))!.status).toBe('waiting');
    const bad = await post(acting, '/api/threads/wait/signal', { payload: 1 });
    expect(bad.status).toBe(400);
    const sent = await post(acting, '/api/threads/wait/signal', { name: 'payment', payload: { amount: 42 } });
    expect(sent.status).toBe(200);
    expect(sent.body).toMatchObject({ thread: 'wait', signal: { id: 1, name: 'payment' } });
    const [signal] = await engine.checkpointer.listSignals('wait');
    expect(signal).toMatchObject({ name: 'payment', consumedBy: null });
    expect((await app.run({ thread: 'wait' })).state).toMatchObject({ got: 'paid 42' });
  });

  it('resolves a needs_attention effect with an outcome (the next run is served it), and records another as failed by ana', async () => {
    for (const thread of ['pay', 'pay2']) {
      setChargeBroken(true);
      await app.run({ thread, input: { mode: 'pay' } }).catch(() => undefined);
      setChargeBroken(false);
      await app.run({ thread }).catch(() => undefined);
      expect((await engine.checkpointer.getThread(thread))!.status).toBe('needs_attention');
    }
    const [intent] = await engine.ledger.list('pay');
    const missing = await post(acting, '/api/threads/pay/resolve-effect', { key: 'nope', outcome: 1 });
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('ERR_EFFECT_NOT_FOUND');
    const resolved = await post(acting, '/api/threads/pay/resolve-effect', { key: intent!.key, outcome: 'charged by hand' });
    expect(resolved.status).toBe(200);
    expect(await engine.ledger.get('pay', intent!.key)).toMatchObject({ status: 'done' });
    expect((await app.run({ thread: 'pay' })).state).toMatchObject({ charged: 'charged by hand' });
    const twice = await post(acting, '/api/threads/pay/resolve-effect', { key: intent!.key, outcome: 'x' });
    expect(twice.status).toBe(409);
    const [other] = await engine.ledger.list('pay2');
    const failed = await post(acting, '/api/threads/pay2/resolve-effect', { key: other!.key, failed: true, message: 'card declined' });
    expect(failed.status).toBe(200);
    const record = (await engine.checkpointer.getThread('pay2'))!;
    expect(record.status).toBe('failed');
    expect(record.lastError).toMatchObject({ code: 'ERR_EFFECT_FAILED' });
    expect(record.lastError!.message).toContain('ana');
  });

  it('replays a thread (writing nothing) and forks it from a position with an edited state, as ana, running it on', async () => {
    await app.run({ thread: 'post', input: { mode: 'post', topic: 'cairns' } });
    const before = await footprint('post');
    const replay = await post(acting, '/api/threads/post/replay', { from: 0 });
    expect(replay.status).toBe(200);
    expect(replay.body).toMatchObject({ threadId: 'post', sameStates: true });
    expect(await footprint('post')).toEqual(before);
    const refused = await post(acting, '/api/threads/post/fork', { seq: 0, patch: { topic: 7 } });
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('ERR_STATE_VALIDATION');
    const unknown = await post(acting, '/api/threads/post/fork', { seq: 0, patch: { nope: 1 } });
    expect(unknown.status).toBe(400);
    expect(await footprint('post')).toEqual(before);
    const forked = await post(acting, '/api/threads/post/fork', { seq: 0, patch: { topic: 'stones' }, run: true });
    expect(forked.status, JSON.stringify(forked.body)).toBe(200);
    expect(forked.body).toMatchObject({ thread: 'post', status: 'completed', forkedFrom: 0 });
    const state = (await app.getState({ thread: 'post' })) as { topic: string; notes: string[] };
    expect(state).toMatchObject({ topic: 'stones', notes: ['a post about stones'] });
    const fork = (await app.history({ thread: 'post' })).find((p) => p.kind === 'fork')!;
    expect(fork).toMatchObject({ parent: 0, actor: 'ana' });
  });

  it('cancels a thread (failed, ERR_THREAD_CANCELLED by ana) and deletes one only with its id typed again', async () => {
    await app.run({ thread: 'doomed', input: { mode: 'wait' } });
    const cancelled = await post(acting, '/api/threads/doomed/cancel', { reason: 'customer withdrew' });
    expect(cancelled.status).toBe(200);
    expect(cancelled.body).toMatchObject({ cancelled: true, status: 'failed', error: { code: 'ERR_THREAD_CANCELLED' } });
    expect((await engine.checkpointer.getThread('doomed'))!.lastError!.message).toContain('cancelled by ana: customer withdrew');
    const unconfirmed = await post(acting, '/api/threads/doomed/delete', { confirm: 'other' });
    expect(unconfirmed.status).toBe(400);
    expect(await engine.checkpointer.getThread('doomed')).not.toBeNull();
    const deleted = await post(acting, '/api/threads/doomed/delete', { confirm: 'doomed' });
    expect(deleted.status).toBe(200);
    expect(deleted.body).toMatchObject({ deleted: true, threadId: 'doomed' });
    expect(await engine.checkpointer.getThread('doomed')).toBeNull();
    const gone = await post(acting, '/api/threads/doomed/cancel', {});
    expect(gone.status).toBe(404);
    expect(gone.body.error.code).toBe('ERR_THREAD_NOT_FOUND');
  });

  it('refuses a body that is not a JSON object (400) and a POST to a path that is no action (405)', async () => {
    const response = await fetch(`${base(acting)}/api/threads/post/cancel?token=${acting.token}`, { method: 'POST', headers: { 'content-type': 'application/json', [TOKEN_HEADER]: acting.token }, body: '[1' });
    expect(response.status).toBe(400);
    const unknown = await post(acting, '/api/threads/post/explode', {});
    expect(unknown.status).toBe(405);
  });
});
