/**
 * Evaluation replay through the web inspector's API, over HTTP against a real SQLite
 * file: three threads stored by one AI SDK agent (test/fixtures/eval-app.mjs,
 * `stored`) evaluated by `POST /api/evaluate` with another version of it loaded as
 * the inspector's app (`candidate`). Refused with 403 by a read-only inspector and
 * without the page's token header, 409 without an app, 400 for a body that names no
 * thread or too many; the report names the same, the diverged (the diff, the call the
 * record lacks) and the failed thread; the thread list's filters select as the list
 * does; nothing is written. A saved report is served read-only.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/contracts/engine.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { TOKEN_HEADER } from '../../src/inspector/actions.js';
import { evaluationSelection, parseEvaluationReport } from '../../src/inspector/evaluation.js';
import { startInspector, type Inspector } from '../../src/inspector/index.js';
import { jsonText } from '../../src/cli/format.js';
import { ensureBuilt } from '../artifacts/build.js';

let dir: string;
let engine: Engine;
let readOnly: Inspector;
let acting: Inspector;
let noApp: Inspector;
let stored: any;
let candidate: any;

const THREADS = ['t-city-0', 't-city-1', 't-city-2'];

beforeAll(async () => {
  ensureBuilt();
  const fixture = (await import(new URL('../fixtures/eval-app.mjs', import.meta.url).href)) as { stored: (engine: Engine) => any; candidate: (engine: Engine) => any };
  dir = mkdtempSync(join(tmpdir(), 'cairn-inspector-eval-'));
  engine = sqlite(join(dir, 'cairn.db'));
  stored = fixture.stored(engine);
  candidate = fixture.candidate(engine);
  for (const city of ['city-0', 'city-1', 'city-2']) await stored.run({ thread: `t-${city}`, input: { city } });
  readOnly = await startInspector({ engine, uiDir: dir });
  acting = await startInspector({ engine, uiDir: dir, allowActions: true, app: candidate, actor: 'ana' });
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

async function post(i: Inspector, body: unknown, headers: Record<string, string | undefined> = {}): Promise<{ status: number; body: any }> {
  const sent: Record<string, string> = {};
  for (const [k, v] of Object.entries({ 'content-type': 'application/json', [TOKEN_HEADER]: i.token, ...headers })) if (v !== undefined) sent[k] = v;
  const response = await fetch(`${base(i)}/api/evaluate?token=${i.token}`, { method: 'POST', headers: sent, body: JSON.stringify(body) });
  return { status: response.status, body: await response.json() };
}

/** Every stored row of the threads, to show an evaluation wrote none. */
async function footprint() {
  return Promise.all(THREADS.map(async (t) => ({ record: await engine.checkpointer.getThread(t), head: await engine.checkpointer.getHead(t, ''), ledger: await engine.ledger.list(t) })));
}

describe('POST /api/evaluate: refused', () => {
  it('403 ERR_ACTIONS_DISABLED from a read-only inspector; 403 ERR_CROSS_SITE without the token header or from another origin', async () => {
    const ro = await post(readOnly, { threads: THREADS });
    expect(ro.status).toBe(403);
    expect(ro.body.error.code).toBe('ERR_ACTIONS_DISABLED');
    for (const headers of [{ [TOKEN_HEADER]: undefined }, { origin: 'http://evil.example' }, { 'content-type': 'text/plain' }]) {
      const refused = await post(acting, { threads: THREADS }, headers);
      expect(refused.status, JSON.stringify(headers)).toBe(403);
      expect(refused.body.error.code).toBe('ERR_CROSS_SITE');
    }
    // A GET of the route is no action.
    expect((await fetch(`${base(acting)}/api/evaluate?token=${acting.token}`)).status).toBe(404);
  });

  it('409 ERR_APP_REQUIRED without an app: evaluating runs its code and calls its models', async () => {
    const answer = await post(noApp, { threads: THREADS });
    expect(answer.status).toBe(409);
    expect(answer.body.error.code).toBe('ERR_APP_REQUIRED');
    expect(answer.body.error.message).toMatch(/evaluating threads runs the graph's code.*--app/);
  });

  it('400 ERR_INVALID_OPTION for a body that names no thread, too many, a bad limit or a filter the list does not take', async () => {
    for (const body of [{}, { threads: [] }, { threads: 't-city-0' }, { threads: THREADS, limit: 2 }, { filters: {}, limit: 0 }, { filters: { status: 'completed' }, limit: 201 }, { filters: { head: 3 } }, { filters: { status: 'nonsense' } }]) {
      const answer = await post(acting, body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.body.error.code).toBe('ERR_INVALID_OPTION');
    }
  });
});

describe('POST /api/evaluate: the report', () => {
  it('evaluates the named threads with the loaded app: one same, one whose answer differs, one that asks a tool the record lacks, one that does not exist; writes nothing', async () => {
    const before = await footprint();
    const answer = await post(acting, { threads: [...THREADS, 'missing'] });
    expect(answer.status, JSON.stringify(answer.body)).toBe(200);
    const report = answer.body;
    expect(report.summary).toMatchObject({ threads: 4, same: 1, diverged: 2, failed: 1, recorded: { calls: 6, usage: { inputTokens: 150, outputTokens: 36 } }, evaluated: { calls: 5, usage: { inputTokens: 120, outputTokens: 28 } } });
    expect(report.threads.map((t: any) => [t.threadId, t.outcome])).toEqual([
      ['t-city-0', 'same'],
      ['t-city-1', 'diverged'],
      ['t-city-2', 'diverged'],
      ['missing', 'failed'],
    ]);
    const [same, answerDiffers, otherTool, missing] = report.threads;
    expect(same.firstDivergence).toBeNull();
    expect(answerDiffers.firstDivergence).toMatchObject({ seq: 1, nodes: ['agent'], differences: ['reply'], calls: [] });
    expect(answerDiffers.firstDivergence.diff.fields).toEqual([{ field: 'reply', kind: 'changed', before: 'Sunny in city-1.', after: 'Clear skies over city-1.' }]);
    expect(answerDiffers.models.map((m: any) => [m.seq, m.name, m.recorded.model, m.evaluated.model, m.evaluated.usage.inputTokens])).toEqual([
      [1, 'ai.generate', 'model-a', 'model-b', 20],
      [1, 'ai.generate', 'model-a', 'model-b', 30],
    ]);
    expect(otherTool.firstDivergence.calls).toEqual([{ node: 'agent', call: 1, name: 'tool:forecast', kind: 'other-call', reason: 'recorded as "tool:weather"' }]);
    expect(missing.error.code).toBe('ERR_THREAD_NOT_FOUND');
    expect(await footprint()).toEqual(before);
  });

  it("takes the thread list's filters and a limit: the same threads the list shows, in its order", async () => {
    const first = await post(acting, { filters: { q: 't-city-', status: 'completed', order: 'id' }, limit: 2 });
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body.threads.map((t: any) => t.threadId)).toEqual(['t-city-0', 't-city-1']);
    const none = await post(acting, { filters: { status: 'failed' } });
    expect(none.body.summary).toMatchObject({ threads: 0, same: 0, diverged: 0, failed: 0 });
    // The stored version of the agent evaluates every thread as the same.
    const sameApp = await startInspector({ engine, uiDir: dir, allowActions: true, app: stored });
    try {
      expect((await post(sameApp, { filters: { q: 't-city-' } })).body.summary).toMatchObject({ threads: 3, same: 3, diverged: 0, failed: 0 });
    } finally {
      await sameApp.close();
    }
  });

  it('reads the selection as the thread list does: ids first, then the listed threads up to the limit', () => {
    expect(evaluationSelection({ filters: { status: 'completed', meta: ['queue=support'] }, limit: 10 })).toEqual({ query: { order: 'id', status: ['completed'], metadata: { queue: 'support' }, limit: 10 } });
    expect(evaluationSelection({ threads: ['a', 'a', 'b'], filters: { q: 't-' }, limit: 5 })).toEqual({ threads: ['a', 'b'], query: { order: 'id', idPrefix: 't-', limit: 3 } });
    expect(evaluationSelection({ threads: ['a', 'b'], filters: { q: 't-' }, limit: 2 })).toEqual({ threads: ['a', 'b'] });
  });
});

describe('GET /api/evaluation-report', () => {
  it('serves a report cairn eval --json saved, read back from its tagged JSON; null when none was loaded', async () => {
    const report = await candidate.evaluate({ threads: THREADS });
    const saved = await startInspector({ engine, uiDir: dir, evaluationReport: parseEvaluationReport(jsonText(report), 'eval.json') });
    try {
      const answer = (await (await fetch(`${base(saved)}/api/evaluation-report?token=${saved.token}`)).json()) as any;
      expect(answer.report.summary).toMatchObject({ threads: 3, same: 1, diverged: 2, failed: 0 });
      expect(answer.report.threads[1].firstDivergence.diff.fields[0]).toMatchObject({ field: 'reply', after: 'Clear skies over city-1.' });
    } finally {
      await saved.close();
    }
    expect(await (await fetch(`${base(readOnly)}/api/evaluation-report?token=${readOnly.token}`)).json()).toEqual({ report: null });
    expect(() => parseEvaluationReport('{"threads":1}', 'x.json')).toThrow(/x.json: not a report of cairn eval --json/);
    expect(() => parseEvaluationReport('nope', 'x.json')).toThrow(/x.json: not a report/);
  });
});
