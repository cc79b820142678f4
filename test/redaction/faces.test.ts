/**
 * The choices around redaction, on the memory engine: the stored description carries
 * the rules (a graph without any keeps the digest it had), a child graph's redacted
 * field is hidden in its namespace, `rawEvents` gives one call's consumer the values
 * while compile-level sinks stay redacted, the inspector adds patterns and shows
 * stored values with `raw`, and refuses an action whose write holds the marker (it
 * would replace a stored value with it), while a raw inspector takes it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Engine } from '../../src/contracts/engine.js';
import { memory } from '../../src/engines/memory/index.js';
import { storedRedaction } from '../../src/inspect/redaction.js';
import { TOKEN_HEADER } from '../../src/inspector/actions.js';
import { startInspector, type Inspector } from '../../src/inspector/index.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import type { RunEvent } from '../../src/runtime/events.js';
import { describeGraph, graphDigest } from '../../src/runtime/graph-description.js';
import { field } from '../../src/state/fields.js';
import { defineState } from '../../src/state/schema.js';

const Child = defineState({ fields: { childSecret: field.model(z.string(), { redact: true, default: '' }), out: field.model(z.string(), { default: '' }) } });
const Parent = defineState({
  fields: {
    secret: field.model(z.string(), { redact: true, default: '' }),
    note: field.model(z.string(), { default: '' }),
    result: field.model(z.string(), { default: '' }),
  },
});

const child = graph(Child)
  .node('inner', (s) => ({ childSecret: 'child-hidden-4242', out: `done ${s.childSecret.length}` }))
  .edge(START, 'inner')
  .edge('inner', END);

let engine: Engine;
const compiledEvents: RunEvent[] = [];
function build() {
  return graph(Parent)
    .node('ask', async (s, ctx) => {
      const ok = await ctx.interrupt({ quoting: s.secret }, { answer: z.boolean() });
      return { note: ok ? 'yes' : 'no' };
    })
    .subgraph('sub', child, { input: () => ({}), output: (r) => ({ result: r.out }) })
    .edge(START, 'ask')
    .edge('ask', 'sub')
    .edge('sub', END)
    .compile({ engine, onEvent: (e) => compiledEvents.push(e), redact: { patterns: [/acct-[0-9]{6}/] } });
}
let app: ReturnType<typeof build>;
let redacted: Inspector;
let raw: Inspector;

beforeAll(async () => {
  engine = memory();
  app = build();
  redacted = await startInspector({ engine, allowActions: true, app, redaction: { patterns: ['note-[a-z]+'] } });
  raw = await startInspector({ engine, allowActions: true, app, redaction: { raw: true } });
});
afterAll(async () => {
  await redacted.close();
  await raw.close();
});

const base = (i: Inspector) => i.url.slice(0, i.url.indexOf('/?token='));
const get = async (i: Inspector, path: string) => (await fetch(`${base(i)}${path}${path.includes('?') ? '&' : '?'}token=${i.token}`)).json() as Promise<any>; // eslint-disable-line @typescript-eslint/no-explicit-any
async function post(i: Inspector, path: string, body: unknown) {
  const response = await fetch(`${base(i)}${path}?token=${i.token}`, { method: 'POST', headers: { 'content-type': 'application/json', [TOKEN_HEADER]: i.token }, body: JSON.stringify(body) });
  return { status: response.status, body: (await response.json()) as any }; // eslint-disable-line @typescript-eslint/no-explicit-any
}

describe('redaction choices', () => {
  it('the stored description carries the rules; a graph without any keeps its digest', async () => {
    const plain = graph(defineState({ fields: { n: field.model(z.number(), { default: 0 }) } })).node('a', () => ({})).edge(START, 'a').edge('a', END);
    expect(describeGraph(plain.check()).redact).toBeUndefined();
    expect(graphDigest(describeGraph(plain.check()))).toBe(graphDigest(describeGraph(plain.check(), 'default', { paths: [], records: {}, effects: {}, patterns: [] })));
    expect(app.redaction).toEqual({ paths: ['secret', 'childSecret'], records: {}, effects: {}, patterns: [{ source: 'acct-[0-9]{6}', flags: '' }] });
  });

  it('rawEvents: this call sees the values, compile-level onEvent stays redacted', async () => {
    const own: RunEvent[] = [];
    const paused = await app.run({ thread: 't1', input: { secret: 'top-secret-value', note: 'acct-123456 note-abc' }, rawEvents: true, onEvent: (e) => own.push(e) });
    expect(paused.status).toBe('interrupted');
    const payload = (events: RunEvent[]) => (events.find((e) => e.type === 'interrupt') as Extract<RunEvent, { type: 'interrupt' }>).payload;
    expect(payload(own)).toEqual({ quoting: 'top-secret-value' });
    expect(payload(compiledEvents)).toEqual({ quoting: '[redacted]' });
    expect(JSON.stringify(compiledEvents)).not.toContain('top-secret-value');
    expect(await storedRedaction(engine.store, 'default')).toEqual(app.redaction);
  });

  it('the inspector adds its patterns, hides a child graph field in its namespace, and shows stored values with raw', async () => {
    const state = await get(redacted, '/api/threads/t1/state');
    expect(state.state).toMatchObject({ secret: '[redacted]', note: '[redacted] [redacted]' });
    expect((await get(raw, '/api/threads/t1/state')).state).toMatchObject({ secret: 'top-secret-value', note: 'acct-123456 note-abc' });
    const overview = await get(redacted, '/api/threads/t1');
    expect(JSON.stringify(overview)).not.toContain('top-secret-value');
    expect(overview.interrupts.pending[0].payload).toEqual({ quoting: '[redacted]' });

    const done = await app.resume({ thread: 't1', answer: true });
    expect(done.status).toBe('completed');
    const [step] = (await app.history({ thread: 't1' })).filter((p) => p.children.length);
    const ns = step!.children[0]!;
    expect((await get(redacted, `/api/threads/t1/state?ns=${encodeURIComponent(ns)}`)).state).toMatchObject({ childSecret: '[redacted]', out: 'done 0' });
    expect(((await app.stateAt({ thread: 't1', ns, seq: 1 })) as unknown as { childSecret: string }).childSecret).toBe('child-hidden-4242');
  });

  it('refuses a fork patch that holds the marker (400, nothing changed); an edit without it goes through, and so does any on a raw inspector', async () => {
    const before = (await app.history({ thread: 't1' })).length;
    const shown = (await get(redacted, '/api/threads/t1/state?seq=0')).state;
    const refused = await post(redacted, '/api/threads/t1/fork', { seq: 0, patch: { ...shown, note: 'edited' } });
    expect(refused.status).toBe(400);
    expect(refused.body.error.code).toBe('ERR_INVALID_OPTION');
    expect(refused.body.error.message).toContain('--raw');
    expect((await app.history({ thread: 't1' })).length).toBe(before);
    expect((await app.getState({ thread: 't1' })).secret).toBe('top-secret-value');
    // Only the field edited: nothing redacted in the patch, so the redacting inspector takes it.
    const forked = await post(redacted, '/api/threads/t1/fork', { seq: 0, patch: { note: 'edited' } });
    expect(forked.status, JSON.stringify(forked.body)).toBe(200);
    expect((await app.getState({ thread: 't1' })).secret).toBe('top-secret-value');
    // A raw inspector shows stored values: a marker it is sent is the person's own text.
    const literal = await post(raw, '/api/threads/t1/fork', { seq: 0, patch: { note: 'the word [redacted]' } });
    expect(literal.status, JSON.stringify(literal.body)).toBe(200);
  });
});
