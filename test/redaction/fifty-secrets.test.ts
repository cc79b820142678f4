/**
 * Fifty distinct secrets planted across a thread: a field declared `redact: true`,
 * nested paths, list items, a record of values (`profile.*`), appended notes caught
 * by a pattern, recorded outputs (by path, whole, by pattern), effect arguments and
 * outcomes, a node's error message, a validation error that quotes its input, an
 * interrupt's payload and answer, and data a node emits; a second thread fails on
 * a node whose error quotes two path-redacted values. The run goes on as if
 * nothing were redacted; then every face that shows the thread is captured and
 * searched for each secret: the CLI (`show`, `history`, `effects`, `diff`,
 * `attempts`, `threads`, `export`, human and JSON), the inspector's API (every route,
 * started in-process), the run's events and its stream, the OpenTelemetry spans, and
 * the errors the run threw. None holds any secret; `--raw` and `getState` show them
 * intact, and import refuses the redacted export. On SQLite, and on PostgreSQL for
 * the faces that read storage (CLI, inspector, export).
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { trace } from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { decode } from '../../src/codec/tagged-json.js';
import type { Engine } from '../../src/contracts/engine.js';
import { memory } from '../../src/engines/memory/index.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { RedactedExportError } from '../../src/errors.js';
import { exportThreads, importThreads } from '../../src/inspect/transfer.js';
import type { TransferRecord } from '../../src/inspect/transfer-records.js';
import { verifyThread } from '../../src/inspect/verify.js';
import { startInspector } from '../../src/inspector/index.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import type { RunEvent } from '../../src/runtime/events.js';
import { field } from '../../src/state/fields.js';
import { defineState } from '../../src/state/schema.js';
import { cairn } from '../cli/run-cli.js';
import { usePostgresSchema } from '../helpers/postgres.js';

const exporter = new InMemorySpanExporter();
const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
beforeAll(() => void trace.setGlobalTracerProvider(provider));
afterAll(async () => {
  trace.disable();
  await provider.shutdown();
});

const pg = usePostgresSchema();
const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

/** A secret no pattern matches: only a path rule (or what a path rule hid) can hide it. */
const plain = (n: number) => `pv${n}q${randomBytes(6).toString('hex')}`;
/** A secret the pattern matches wherever it is. */
const keyed = () => `sk-live-${randomBytes(8).toString('hex')}`;

/** The fifty secrets of one run, by where they are planted. */
function plant() {
  return {
    apiKey: plain(1), // a field declared redact: true
    email: plain(2), // customer.email
    card: plain(3), // customer.card (an object, hidden whole)
    messages: Array.from({ length: 10 }, (_, i) => plain(10 + i)), // messages[*].content, appended over two steps
    profile: Array.from({ length: 5 }, (_, i) => plain(20 + i)), // profile.*
    notes: Array.from({ length: 5 }, keyed), // appended notes: the pattern
    crmToken: plain(30), // record 'crm', path token
    model: Array.from({ length: 5 }, (_, i) => plain(31 + i)), // record 'model', hidden whole
    search: Array.from({ length: 3 }, keyed), // record 'search': the pattern
    chargeArgs: [plain(40), plain(41)], // effect 'charge' arguments (kept as a digest only)
    receipt: plain(42), // effect 'charge' outcome, path receipt
    notify: [plain(43), plain(44)], // effect 'notify' outcome, hidden whole
    effectKeys: Array.from({ length: 2 }, keyed), // effect 'audit' outcome: the pattern
    error: keyed(), // a node's error message (its first attempt fails)
    pin: plain(50), // a redact: true field whose validation error quotes the input
    refused: keyed(), // a validation error quoting a pattern secret
    interrupt: [keyed(), keyed()], // an interrupt's payload
    answer: keyed(), // the interrupt's answer
    emitted: [keyed(), keyed()], // ctx.emit data
    password: plain(60), // config.db.password
    configKeys: [plain(61), plain(62)], // config.keys[*]
  };
}
type Secrets = ReturnType<typeof plant>;
const all = (s: Secrets): string[] => Object.values(s).flatMap((v) => (Array.isArray(v) ? v : [v]));

const State = defineState({
  fields: {
    apiKey: field.model(z.string(), { redact: true, default: '' }),
    pin: field.model(
      z.string().refine((v) => v.length < 8, { error: (issue) => `pin too long: ${String(issue.input)}` }),
      { redact: true, default: '' },
    ),
    token: field.model(z.string().refine((v) => !v.startsWith('sk-'), { error: (issue) => `refused token ${String(issue.input)}` }).optional()),
    customer: field.model(z.object({ name: z.string(), email: z.string(), card: z.object({ number: z.string(), brand: z.string() }) }).optional()),
    messages: field.model(z.array(z.object({ role: z.string(), content: z.string() })), { reduce: 'append', default: [] }),
    profile: field.model(z.record(z.string(), z.string()), { default: {} }),
    notes: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
    config: field.model(z.object({ db: z.object({ host: z.string(), password: z.string() }), keys: z.array(z.string()) }).optional()),
    summary: field.model(z.string(), { default: '' }),
  },
});

function build(engine: Engine, s: Secrets, events: RunEvent[]) {
  let payFailures = 0;
  return graph(State)
    .node('intake', async (state, ctx) => {
      // Another customer's thread fails here, its error quoting two path-redacted values.
      if (state.customer?.name === 'Bo') throw new Error(`cannot reach ${state.customer.email} with ${state.apiKey}`);
      const crm = await ctx.record('crm', async () => ({ plan: 'gold', token: s.crmToken }));
      const model = await ctx.record('model', async () => ({ text: `summary for ${crm.plan}`, parts: s.model }), { kind: 'model', model: 'test-model' });
      const hits = await ctx.record('search', async () => s.search.map((k) => `found ${k} in the vault`));
      for (const data of s.emitted) ctx.emit({ token: data });
      return {
        summary: `${model.text}, ${hits.length} hits`,
        messages: s.messages.slice(0, 5).map((content) => ({ role: 'user', content })),
        notes: s.notes.slice(0, 2).map((k) => `note with ${k}`),
        profile: Object.fromEntries(s.profile.map((v, i) => [`p${i}`, v])),
        config: { db: { host: 'db.local', password: s.password }, keys: s.configKeys },
        customer: { ...state.customer!, card: { number: s.card, brand: 'visa' } },
      };
    }, { retry: { maxAttempts: 1 } })
    .node('pay', async (_state, ctx) => {
      await ctx.effect('charge', { args: { card: s.chargeArgs[0], cvv: s.chargeArgs[1] }, run: async () => ({ receipt: s.receipt, ok: true }) });
      await ctx.effect('notify', { run: async () => ({ sent: s.notify }) });
      await ctx.effect('audit', { run: async () => ({ logged: s.effectKeys.join(' and ') }) });
      if (payFailures++ === 0) throw new Error(`the gateway refused key ${s.error}`);
      return {};
    }, { retry: { maxAttempts: 2, initialDelayMs: 1 } })
    .node('review', async (state, ctx) => {
      const answer = await ctx.interrupt({ question: 'publish?', hint: s.interrupt[0], detail: `also ${s.interrupt[1]}`, key: state.apiKey }, { answer: z.object({ ok: z.boolean(), note: z.string() }) });
      return {
        messages: s.messages.slice(5).map((content) => ({ role: 'bot', content })),
        notes: [...s.notes.slice(2).map((k) => `later ${k}`), `answered ${answer.note}`],
      };
    })
    .edge(START, 'intake')
    .edge('intake', 'pay')
    .edge('pay', 'review')
    .edge('review', END)
    .compile({
      engine,
      onEvent: (event) => events.push(event),
      redact: {
        paths: ['customer.email', 'customer.card', 'messages[*].content', 'profile.*', 'config.db.password', 'config.keys[*]'],
        records: { crm: ['token'], model: true },
        effects: { charge: ['receipt'], notify: true },
        patterns: [/sk-live-[0-9a-f]{16}/],
      },
    });
}

/** Runs the thread: a stream to its interrupt, a resume with the answer, and two runs refused by validation. */
async function runThread(engine: Engine, s: Secrets) {
  const events: RunEvent[] = [];
  const app = build(engine, s, events);
  const streamed: unknown[] = [];
  const stream = app.stream({ thread: 'cust-1', input: { apiKey: s.apiKey, customer: { name: 'Ana', email: s.email, card: { number: 'none', brand: '-' } } } });
  for await (const event of stream) streamed.push(event);
  expect((await stream.result).status).toBe('interrupted');
  const done = await app.resume({ thread: 'cust-1', answer: { ok: true, note: s.answer } });
  expect(done.status).toBe('completed');
  const errors: string[] = [];
  for (const input of [{ pin: s.pin }, { token: s.refused }]) {
    const error = await app.run({ thread: `bad-${errors.length}`, input }).then(() => new Error('no error'), (e: Error) => e);
    expect(error.message).toMatch(/ERR_STATE_VALIDATION|failed validation/);
    errors.push(`${error.message}\n${error.stack}`);
  }
  // A failed thread: the thread lists show its error, with no state beside it.
  const failed = await app.run({ thread: 'fail-1', input: { apiKey: s.apiKey, customer: { name: 'Bo', email: s.email, card: { number: 'none', brand: '-' } } } }).then(() => new Error('no error'), (e: Error) => e);
  expect(failed.message).toContain('cannot reach');
  errors.push(`${failed.message}\n${failed.stack}`);
  expect((await app.getThread({ thread: 'fail-1' }))?.lastError?.message).toContain(s.email);
  return { app, events, streamed, errors };
}

/** The secrets found in `text`, by face. */
function leaks(faces: Record<string, string>, secrets: string[]): string[] {
  return Object.entries(faces).flatMap(([face, text]) => secrets.filter((secret) => text.includes(secret)).map((secret) => `${face}: ${secret}`));
}

/** Every stored value still there, as the nodes wrote it. */
async function expectIntact(app: ReturnType<typeof build>, s: Secrets) {
  const state = await app.getState({ thread: 'cust-1' });
  expect(state.apiKey).toBe(s.apiKey);
  expect(state.customer).toEqual({ name: 'Ana', email: s.email, card: { number: s.card, brand: 'visa' } });
  expect(state.messages.map((m) => m.content)).toEqual(s.messages);
  expect(Object.values(state.profile)).toEqual(s.profile);
  expect(state.notes).toEqual([...s.notes.slice(0, 2).map((k) => `note with ${k}`), ...s.notes.slice(2).map((k) => `later ${k}`), `answered ${s.answer}`]);
  expect(state.config).toEqual({ db: { host: 'db.local', password: s.password }, keys: s.configKeys });
  const outcomes = (await app.engine.ledger.list('cust-1')).map((e) => e.outcome ?? '').join('\n');
  for (const secret of [s.crmToken, ...s.model, ...s.search, s.receipt, ...s.notify, ...s.effectKeys]) expect(outcomes).toContain(secret);
}

/**
 * The storage-reading faces of thread cust-1 on `db` (a CLI --db), and the inspector's
 * API over `engine`. Each CLI call is a process (half a second of CPU): `all` runs
 * every command, in both forms where the human one differs; otherwise the four that
 * read the most of it.
 */
async function storageFaces(db: string, engine: Engine, dir: string, all: boolean): Promise<Record<string, string>> {
  const faces: Record<string, string> = {};
  const commands: [string, string[]][] = [
    ['show --json', ['show', 'cust-1', '--json']],
    ['history --json', ['history', 'cust-1', '--json']],
    ['effects --json', ['effects', 'cust-1', '--json']],
    ['export', ['export', 'cust-1', '--out', join(dir, 'redacted.jsonl')]],
    ['threads --json', ['threads', '--json']],
    ...(all
      ? ([
          ['show', ['show', 'cust-1']],
          ['effects', ['effects', 'cust-1']],
          ['diff --json', ['diff', 'cust-1', '0', '5', '--json']],
          ['attempts', ['attempts', 'cust-1', '--json']],
          ['threads', ['threads']],
        ] as [string, string[]][])
      : []),
  ];
  const results = await Promise.all(commands.map(([, args]) => cairn([...args, '--db', db])));
  commands.forEach(([name], i) => {
    const result = results[i]!;
    expect(result.code, `${name}: ${result.stderr}`).toBe(0);
    faces[`cli ${name}`] = result.stdout + result.stderr;
  });
  faces['cli export file'] = readFileSync(join(dir, 'redacted.jsonl'), 'utf8');

  const inspector = await startInspector({ engine });
  try {
    const base = inspector.url.slice(0, inspector.url.indexOf('/?token='));
    const get = async (path: string) => {
      const response = await fetch(`${base}${path}${path.includes('?') ? '&' : '?'}token=${inspector.token}`);
      expect(response.status, path).toBe(200);
      return response.text();
    };
    const routes = ['/api/threads', '/api/threads/cust-1', '/api/threads/cust-1/history', '/api/threads/cust-1/diff?from=0&to=5', '/api/threads/cust-1/effects', '/api/threads/cust-1/verify', '/api/threads/cust-1/timeline', '/api/threads/cust-1/graph'];
    for (let seq = 0; seq <= 5; seq++) routes.push(`/api/threads/cust-1/state?seq=${seq}`, `/api/threads/cust-1/ledger?seq=${seq}`);
    for (const route of routes) faces[`inspector ${route}`] = await get(route);
  } finally {
    await inspector.close();
  }
  return faces;
}

describe('fifty secrets, on SQLite', () => {
  // Generous: the CLI's processes share the machine with everything else running.
  it('are in none of the faces: CLI, inspector, export, events, stream, spans, errors; stored intact', { timeout: 180_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-redaction-'));
    dirs.push(dir);
    const db = join(dir, 'cairn.db');
    const s = plant();
    const secrets = all(s);
    expect(new Set(secrets).size).toBe(50);
    exporter.reset();
    const engine = sqlite(db);
    const { app, events, streamed, errors } = await runThread(engine, s);
    const spans = exporter.getFinishedSpans().map((span) => JSON.stringify({ name: span.name, attributes: span.attributes, events: span.events, status: span.status }));
    expect(spans.length).toBeGreaterThan(10);
    expect(events.some((e) => e.type === 'task.failed')).toBe(true);
    expect(events.some((e) => e.type === 'interrupt')).toBe(true);
    expect(streamed.some((e) => (e as RunEvent).type === 'custom')).toBe(true);
    await expectIntact(app, s);
    await engine.close();

    const reader = sqlite(db, { readOnly: true });
    try {
      const faces: Record<string, string> = {
        ...(await storageFaces(db, reader, dir, true)),
        events: JSON.stringify(events),
        stream: JSON.stringify(streamed),
        spans: spans.join('\n'),
        errors: errors.join('\n'),
      };
      expect(leaks(faces, secrets)).toEqual([]);
      // The faces did show the thread: the markers are where the secrets were.
      expect(faces['cli show --json']).toContain('[redacted]');
      expect(faces['inspector /api/threads/cust-1/state?seq=5']).toContain('[redacted]');
      for (const face of ['events', 'stream', 'spans', 'errors', 'cli export file', 'cli attempts', 'cli threads --json', 'inspector /api/threads']) expect(faces[face], face).toContain('[redacted]');
      for (const face of ['cli threads --json', 'inspector /api/threads']) expect(faces[face], face).toContain('cannot reach [redacted] with [redacted]');

      // --raw shows them as stored; a raw export imports and verifies, a redacted one is refused.
      const raw = await cairn(['show', 'cust-1', '--json', '--raw', '--db', db]);
      for (const secret of [s.apiKey, s.email, s.card, ...s.messages, ...s.profile, s.password]) expect(raw.stdout).toContain(secret);
      const target = memory();
      await importThreads(target, exportThreads(reader, ['cust-1'], { raw: true }));
      expect((await verifyThread(target, 'cust-1')).ok).toBe(true);
      expect((await target.checkpointer.getThread('cust-1'))?.status).toBe('completed');
      const lines = readFileSync(join(dir, 'redacted.jsonl'), 'utf8').trim().split('\n').map((line) => decode<TransferRecord>(line));
      await expect(importThreads(memory(), lines)).rejects.toThrow(RedactedExportError);
      const refused = await cairn(['import', '--db', join(dir, 'other.db'), '--in', join(dir, 'redacted.jsonl')]);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('this export was written redacted');
      expect(refused.stderr).toContain('--raw');
    } finally {
      await reader.close();
    }
  });
});

describe('fifty secrets, on PostgreSQL', () => {
  it('are in none of the faces that read storage (CLI, inspector, export); stored intact', { timeout: 180_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cairn-redaction-pg-'));
    dirs.push(dir);
    const s = plant();
    const engine = await pg.engine();
    try {
      const { app } = await runThread(engine, s);
      await expectIntact(app, s);
      const faces = await storageFaces(`${pg.url}#${pg.schema}`, engine, dir, false);
      expect(leaks(faces, all(s))).toEqual([]);
      expect(faces['cli effects --json']).toContain('[redacted]');
      for (const face of ['cli threads --json', 'inspector /api/threads']) expect(faces[face], face).toContain('cannot reach [redacted] with [redacted]');
    } finally {
      await engine.close();
    }
  });
});
