/**
 * The inspector's server, started in-process as `cairn/inspector` exports it, over
 * the memory engine: the token guards every path (query or cookie, nothing else),
 * the first page load sets the `HttpOnly; SameSite=Strict` cookie, a path that
 * climbs out of the UI's folder is no file, the API pages threads by id and
 * searches by id prefix, and values the codec carries but JSON cannot come out
 * readable (`undefined`, `10n`, a Date).
 */
import { mkdtempSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Engine } from '../../src/contracts/engine.js';
import { memory } from '../../src/engines/memory/index.js';
import { RAW_KEY } from '../../src/inspector/api.js';
import { startInspector, type Inspector } from '../../src/inspector/index.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import { field } from '../../src/state/fields.js';
import { defineState } from '../../src/state/schema.js';

const Odd = defineState({
  fields: {
    big: field.model(z.bigint(), { default: 0n }),
    when: field.model(z.date().optional()),
    maybe: field.model(z.array(z.string().optional()), { default: [] }),
  },
});

let dir: string;
let engine: Engine;
let inspector: Inspector;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-inspector-server-'));
  mkdirSync(join(dir, 'ui', 'assets'), { recursive: true });
  writeFileSync(join(dir, 'ui', 'index.html'), '<!doctype html><p>inspector</p>');
  writeFileSync(join(dir, 'ui', 'assets', 'app.js'), 'console.log(1)');
  writeFileSync(join(dir, 'secret.txt'), 'not for the page');
  engine = memory();
  const app = graph(Odd)
    .node('set', () => ({ big: 10n, when: new Date('2026-01-02T03:04:05.000Z'), maybe: ['a', undefined] }))
    .edge(START, 'set')
    .edge('set', END)
    .compile({ engine });
  for (const id of ['a1', 'a2', 'a3', 'b1', 'odd']) await app.run({ thread: id, input: {} });
  inspector = await startInspector({ engine, uiDir: join(dir, 'ui') });
});

afterAll(async () => {
  await inspector?.close();
  await engine?.close();
  rmSync(dir, { recursive: true, force: true });
});

const base = () => inspector.url.slice(0, inspector.url.indexOf('/?token='));
const get = (path: string, headers: Record<string, string> = {}) => fetch(`${base()}${path}`, { headers });
const withToken = (path: string) => get(`${path}${path.includes('?') ? '&' : '?'}token=${inspector.token}`);

describe('startInspector', () => {
  it('listens on 127.0.0.1 on a free port, with a 64-hex-digit token in its URL', () => {
    expect(inspector.url).toBe(`http://127.0.0.1:${inspector.port}/?token=${inspector.token}`);
    expect(inspector.token).toMatch(/^[0-9a-f]{64}$/);
    expect(inspector.port).toBeGreaterThan(0);
  });

  it('answers 401 without the token, with a wrong one, or with a cookie of another name', async () => {
    expect((await get('/')).status).toBe(401);
    expect((await get('/assets/app.js')).status).toBe(401);
    expect((await get(`/api/threads?token=${inspector.token.slice(0, -1)}`)).status).toBe(401);
    expect((await get('/api/threads', { cookie: `other=${inspector.token}` })).status).toBe(401);
    expect((await get('/api/threads', { authorization: `Bearer ${inspector.token}` })).status).toBe(401);
  });

  it('sets an HttpOnly SameSite=Strict cookie on the first load, which then serves the assets and the API', async () => {
    const first = await withToken('/');
    expect(first.status).toBe(200);
    expect(await first.text()).toContain('inspector');
    const cookie = first.headers.get('set-cookie')!;
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Strict/);
    expect(first.headers.get('referrer-policy')).toBe('no-referrer');
    const pair = cookie.split(';')[0]!;
    const asset = await get('/assets/app.js', { cookie: pair });
    expect(asset.status).toBe(200);
    expect(asset.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect((await get('/api/threads', { cookie: `x=1; ${pair}` })).status).toBe(200);
  });

  it('serves no file outside the UI folder', async () => {
    for (const path of ['/../secret.txt', '/%2e%2e/secret.txt', '/assets/%2e%2e/%2e%2e/secret.txt']) {
      const response = await withToken(path);
      expect(response.status, path).toBe(404);
      expect(await response.text()).not.toContain('not for the page');
    }
  });

  it('pages threads by id and searches by id prefix', async () => {
    const first = (await (await withToken('/api/threads?limit=2')).json()) as { threads: { id: string }[]; next: string | null };
    expect(first.threads.map((t) => t.id)).toEqual(['a1', 'a2']);
    expect(first.next).toEqual(expect.any(String));
    const second = (await (await withToken(`/api/threads?limit=2&after=${first.next}`)).json()) as { threads: { id: string }[]; next: string | null };
    expect(second.threads.map((t) => t.id)).toEqual(['a3', 'b1']);
    const search = (await (await withToken('/api/threads?q=a')).json()) as { threads: { id: string }[]; next: string | null };
    expect(search.threads.map((t) => t.id)).toEqual(['a1', 'a2', 'a3']);
    expect(search.next).toBeNull();
    const exact = (await (await withToken('/api/threads?q=b1')).json()) as { threads: { id: string }[] };
    expect(exact.threads.map((t) => t.id)).toEqual(['b1']);
    const bad = await withToken('/api/threads?status=sleeping');
    expect(bad.status).toBe(400);
  });

  it('opens a thread: its record, attempts with the count of positions each committed (not the list), and interrupts', async () => {
    const answer = (await (await withToken('/api/threads/a1')).json()) as { thread: { id: string; head: number }; attempts: Record<string, unknown>[]; interrupts: { pending: unknown[]; answered: unknown[] } };
    expect(answer.thread).toMatchObject({ id: 'a1', head: 1 });
    expect(answer.attempts).toEqual([expect.objectContaining({ attempt: 1, outcome: 'completed', node: 'set', seq: 1, positions: 2, failures: [] })]);
    expect(answer.attempts[0]).not.toHaveProperty('committed');
    expect(answer.interrupts).toEqual({ pending: [], answered: [] });
    expect((await withToken('/api/threads/nope')).status).toBe(404);
  });

  it('sends values JSON cannot carry as readable stand-ins: 10n, undefined; a Date as its ISO time', async () => {
    const view = (await (await withToken('/api/threads/odd/state')).json()) as { state: Record<string, unknown> };
    expect(view.state.big).toEqual({ [RAW_KEY]: '10n' });
    expect(view.state.when).toBe('2026-01-02T03:04:05.000Z');
    expect(view.state.maybe).toEqual(['a', { [RAW_KEY]: 'undefined' }]);
  });

  it('is read-only: anything but GET is 405, an unknown route 404', async () => {
    const post = await fetch(`${base()}/api/threads?token=${inspector.token}`, { method: 'POST' });
    expect(post.status).toBe(405);
    const unknown = await withToken('/api/nothing');
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { code: string } }).error.code).toBe('ERR_NO_ROUTE');
  });
});

/** POST /api/threads/<encoded id>/cancel on a new inspector that allows actions; the response, once the inspector is closed. */
async function cancelOnActingInspector(encodedId: string): Promise<Response> {
  const acting = await startInspector({ engine, uiDir: join(dir, 'ui'), allowActions: true });
  try {
    const response = await fetch(`${acting.url.slice(0, acting.url.indexOf('/?'))}/api/threads/${encodedId}/cancel?token=${acting.token}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-cairn-token': acting.token },
      body: '{}',
    });
    // Read before the server closes.
    await response.clone().arrayBuffer();
    return response;
  } finally {
    await acting.close();
  }
}

describe('a thread id whose escapes are not UTF-8', () => {
  it('is a 400 JSON error on every thread route, never a 500; a page path with one is no file', async () => {
    for (const route of ['', '/history', '/state', '/diff?from=0&to=1', '/timeline', '/graph', '/ledger?seq=0', '/artifact?ref=x']) {
      const response = await withToken(`/api/threads/%ff${route}`);
      expect(response.status, route).toBe(400);
      expect(response.headers.get('content-type'), route).toMatch(/^application\/json/);
      expect(((await response.json()) as { error: { code: string } }).error.code, route).toBe('ERR_INVALID_OPTION');
    }
    expect((await withToken('/%ff')).status).toBe(404);
    const response = await cancelOnActingInspector('%ff');
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('ERR_INVALID_OPTION');
  });
});

describe('a thread id no thread can have (over 512 characters, a control character)', () => {
  it('is a 400 ERR_INVALID_KEY on every thread route and action, as the CLI refuses it, not a 404 "no such thread"', async () => {
    for (const id of ['x'.repeat(600), 'a%0Ab']) {
      for (const route of ['', '/history', '/state', '/timeline', '/graph']) {
        const response = await withToken(`/api/threads/${id}${route}`);
        expect(response.status, route).toBe(400);
        const { error } = (await response.json()) as { error: { code: string; message: string } };
        expect(error.code, route).toBe('ERR_INVALID_KEY');
        expect(error.message, route).toMatch(/the limit is 512|contains a control character/);
      }
    }
    const response = await cancelOnActingInspector('x'.repeat(600));
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('ERR_INVALID_KEY');
  });
});
