/**
 * Encryption at rest on real SQLite files: a run's state, items, snapshots, recorded
 * outputs, effect outcomes, store values, signals, pending writes and error messages
 * leave no plaintext in the database file; require mode refuses plaintext rows (a
 * misconfigured writer's, one set by hand); ciphertext moved to another row or changed
 * is a typed error, never wrong state; the KEK rotates without rewriting a data row;
 * verify passes on an encrypted thread; an interrupted run resumes in a new process's
 * engine; the worked example and LangGraph's CairnSaver run on it unchanged; every
 * member of the contracts is wrapped.
 */
import { readFileSync, existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { END as LG_END, MessagesAnnotation, START as LG_START, StateGraph } from '@langchain/langgraph';
import { AIMessage } from '@langchain/core/messages';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { memoryArtifacts } from '../../src/artifacts/memory/index.js';
import { encode } from '../../src/codec/tagged-json.js';
import type { Engine } from '../../src/contracts/engine.js';
import { CHECKPOINTER_MEMBERS } from '../../src/crypto/encrypted-checkpointer.js';
import { LEDGER_MEMBERS } from '../../src/crypto/encrypted-ledger.js';
import { encrypted, keyFile, threadScope } from '../../src/crypto/index.js';
import { textOfStored } from '../../src/crypto/sealed-bytes.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { CorruptRecordError, DecryptionError, PlaintextRowError } from '../../src/errors.js';
import { END, START, defineState, field, graph } from '../../src/index.js';
import { verifyThread } from '../../src/inspect/index.js';
import { CairnSaver } from '../../src/langgraph/index.js';
import { workedExample } from '../../src/testing/worked-example.js';
import { freshKeys } from './encrypted-engines.js';

const CANARY = 'canary-q7Zx';

const State = defineState({
  fields: {
    secret: field.model(z.string().optional()),
    notes: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
    n: field.model(z.number(), { default: 0 }),
  },
});

/** Four steps, each recording an output, running an effect, writing the store and appending an item; a snapshot every 2 positions. */
function canaryApp(engine: Engine, steps = 4) {
  return graph(State)
    .node('step', async (s, ctx) => {
      const recorded = await ctx.record('lookup', () => `${CANARY}-record-${s.n}`);
      const sent = await ctx.effect('send', { idempotencyKey: `send-${s.n}`, run: () => `${CANARY}-effect-${s.n}` });
      await ctx.store.put(['prefs', 'u1'], `k${s.n}`, { note: `${CANARY}-store-${s.n}` });
      return { secret: `${CANARY}-state-${recorded.length}-${sent.length}`, notes: [`${CANARY}-item-${s.n}`], n: s.n + 1 };
    })
    .edge(START, 'step')
    .conditionalEdge('step', (s) => (s.n < steps ? 'step' : END))
    .compile({ engine, snapshotEvery: 2 });
}

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const fn of cleanup.reverse()) await fn();
  cleanup = [];
});

function fresh() {
  const { dir, keys } = freshKeys();
  const file = join(dir, 'cairn.db');
  const engine = encrypted(sqlite(file), { keys });
  cleanup.push(() => engine.close());
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  return { engine, file, dir, keys };
}

function freshKeysIn(dir: string) {
  return { keys: keyFile(join(dir, 'keys.json')) };
}

/** Every byte of the database (main file and WAL) as latin1 text, and every cell of every table. */
function rawContents(file: string): { bytes: string; cells: string } {
  const bytes = [file, `${file}-wal`].filter(existsSync).map((f) => readFileSync(f).toString('latin1')).join('');
  const db = new Database(file, { readonly: true });
  try {
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[];
    const cells = tables.map((t) => JSON.stringify(db.prepare(`SELECT * FROM "${t}"`).all(), (_k, v) => (Buffer.isBuffer(v) ? v.toString('latin1') : v))).join('\n');
    return { bytes, cells };
  } finally {
    db.close();
  }
}

describe('encrypted(sqlite(...))', () => {
  it('leaves no plaintext of a run in the database: state, items, snapshots, outputs, outcomes, store values, overwrites, signals, pending writes, error messages', async () => {
    const { engine, file } = fresh();
    const app = canaryApp(engine);
    const result = await app.run({ thread: 't1' });
    expect(result.status).toBe('completed');
    expect(result.state.notes).toEqual([0, 1, 2, 3].map((i) => `${CANARY}-item-${i}`));
    const cp = engine.checkpointer;
    await cp.sendSignal('t1', { name: 'go', payload: encode(`${CANARY}-signal`) });
    const lease = await cp.acquireThread('t2', { owner: { runId: 'r', pid: process.pid, host: 'h' }, leaseMs: 60_000, create: { kind: 'task', tenant: 'acme', metadata: {} } });
    await cp.putPendingWrite(lease, { ns: '', baseSeq: 0, task: 'x:0', body: JSON.stringify(`${CANARY}-pending`) });
    const error = { code: 'ERR_X', message: `${CANARY}-error`, at: Date.now() };
    await cp.updateThread(lease, { status: 'failed', lastError: error, failure: { ...error, ns: '' } });
    engine.store.declare(['lw'], { merge: 'lastWins' });
    await engine.store.put(['lw'], 'k', `${CANARY}-overwritten`);
    await engine.store.put(['lw'], 'k', 'newer', { ifVersion: 0 });

    // Everything reads back in the clear through the engine...
    expect((await app.getState({ thread: 't1' })).secret).toContain(CANARY);
    expect((await cp.listSignals('t1'))[0]!.payload).toBe(encode(`${CANARY}-signal`));
    expect((await cp.getPendingWrites('t2', '', 0))[0]!.body).toContain(CANARY);
    expect((await cp.getThread('t2'))!.lastError!.message).toBe(`${CANARY}-error`);
    expect((await cp.listFailures('t2'))[0]!.message).toBe(`${CANARY}-error`);
    expect((await engine.store.listOverwrites(['lw']))[0]!.overwritten!.value).toBe(`${CANARY}-overwritten`);
    expect((await engine.ledger.list('t1')).map((e) => e.outcome).join()).toContain(`${CANARY}-effect-3`);
    expect((await engine.store.list(['prefs'], { filter: { note: `${CANARY}-store-2` } })).map((i) => i.key)).toEqual(['k2']);
    expect((await verifyThread(engine, 't1')).ok).toBe(true);
    await engine.close();

    // ...and nothing of it is in the file, neither in a cell nor in any byte.
    const raw = rawContents(file);
    expect(raw.cells).toContain('~c1:');
    expect(raw.cells).not.toContain(CANARY);
    expect(raw.bytes).not.toContain(CANARY);
    // What stays in the clear, by design: ids, tenants, names, codes.
    expect(raw.cells).toContain('acme');
    expect(raw.cells).toContain('ERR_X');
  });

  it('require mode refuses a plaintext row (a writer without encryption, a value set by hand) with PlaintextRowError; require: false reads it and seals new writes', async () => {
    const { engine, file, keys } = fresh();
    await canaryApp(engine, 2).run({ thread: 'sealed' });
    await engine.store.put(['p'], 'k', { a: 1 });
    // A misconfigured writer: the same file without encryption.
    const plain = sqlite(file);
    await canaryApp(plain, 2).run({ thread: 'clear' });
    await plain.close();
    const db = new Database(file);
    db.prepare("UPDATE cairn_store SET value = '{\"a\":2}' WHERE key = 'k'").run();
    db.close();

    const app = canaryApp(engine, 2);
    await expect(app.getState({ thread: 'clear' })).rejects.toThrow(PlaintextRowError);
    await expect(engine.ledger.list('clear')).rejects.toThrow(PlaintextRowError);
    await expect(engine.store.get(['p'], 'k')).rejects.toThrow(PlaintextRowError);
    expect((await app.getState({ thread: 'sealed' })).n).toBe(2);

    const migrating = encrypted(sqlite(file), { keys, require: false });
    cleanup.push(() => migrating.close());
    expect((await canaryApp(migrating, 3).getState({ thread: 'clear' })).notes).toHaveLength(2);
    expect((await migrating.store.get(['p'], 'k'))!.value).toEqual({ a: 2 });
    await canaryApp(migrating, 3).run({ thread: 'clear', input: { secret: 'again' } });
    // The new step was sealed; the old rows stay as they were until rewritten.
    const bodies = new Database(file, { readonly: true });
    const rows = bodies.prepare("SELECT p.seq, p.body FROM cairn_positions p JOIN cairn_threads t ON t.tid = p.tid WHERE t.id = 'clear' ORDER BY p.seq").all() as { seq: number; body: string | Buffer }[];
    bodies.close();
    // SQLite keeps a sealed body as its bytes (crypto/sealed-bytes), a plaintext one as text.
    expect(Buffer.isBuffer(rows.at(-1)!.body) && textOfStored(rows.at(-1)!.body).startsWith('~c1:')).toBe(true);
    expect(rows[0]!.body).toMatch(/^\{/);
  });

  it("seals the outcomes of a commit's effects as the ledger seals an outcome: ledger.get reads them, the file holds none, require mode refuses a plaintext writer's", async () => {
    const { engine, file, keys } = fresh();
    const cp = engine.checkpointer;
    const owner = { runId: 'r', pid: process.pid, host: 'h' };
    const lease = await cp.acquireThread('t1', { owner, leaseMs: 60_000, create: { kind: 'task', tenant: 'acme', metadata: {} } });
    const effect = (threadId: string, key: string, outcome: string) =>
      ({ threadId, key, kind: 'effect', name: 'send', ns: '', seq: 0, node: 'n', task: 'n:0', call: 0, argsDigest: null, createdAt: 1, outcome, completedAt: 2 }) as const;
    const { outcome: _o, completedAt: _c, ...intent } = effect('t1', 'intended', '');
    await engine.ledger.writeIntent(intent);
    const position = { ns: '', seq: 0, parent: null, segment: 0, step: 0, schemaVersion: 1, createdAt: 1, body: '{"kind":"input"}', hash: 'ab'.repeat(32) };
    const effects = [effect('t1', 'fresh', encode(`${CANARY}-fresh`)), effect('t1', 'intended', encode(`${CANARY}-intended`))];
    await cp.commitStep(lease, { position, items: [], status: 'running', expectedHead: null, effects });
    expect((await engine.ledger.get('t1', 'fresh'))!).toMatchObject({ status: 'done', outcome: encode(`${CANARY}-fresh`), completedAt: 2 });
    expect((await engine.ledger.get('t1', 'intended'))!).toMatchObject({ status: 'done', outcome: encode(`${CANARY}-intended`) });
    await engine.close();
    const raw = rawContents(file);
    expect(raw.cells).not.toContain(CANARY);
    expect(raw.bytes).not.toContain(CANARY);

    // A writer without encryption commits an effect in the clear: require mode refuses to read it.
    const plain = sqlite(file);
    const clear = await plain.checkpointer.acquireThread('t2', { owner, leaseMs: 60_000, create: { kind: 'task', tenant: null, metadata: {} } });
    await plain.checkpointer.commitStep(clear, { position, items: [], status: 'running', expectedHead: null, effects: [effect('t2', 'clear', encode('in the clear'))] });
    await plain.close();
    const again = encrypted(sqlite(file), { keys });
    cleanup.push(() => again.close());
    await expect(again.ledger.get('t2', 'clear')).rejects.toThrow(PlaintextRowError);
    expect((await again.ledger.get('t1', 'fresh'))!.outcome).toBe(encode(`${CANARY}-fresh`));
  });

  it('a ciphertext copied into another row, or a flipped byte, is DecryptionError or CorruptRecordError, never wrong state', async () => {
    const { engine, file } = fresh();
    const app = canaryApp(engine, 4);
    await app.run({ thread: 't' });
    await app.run({ thread: 'u' });
    await engine.close();
    const tamper = (sql: string) => {
      const db = new Database(file);
      db.prepare(sql).run();
      db.close();
    };
    const reopen = () => {
      const { keys } = freshKeysIn(join(file, '..'));
      const e = encrypted(sqlite(file), { keys });
      cleanup.push(() => e.close());
      return e;
    };
    const tid = (id: string) => `(SELECT tid FROM cairn_threads WHERE id = '${id}')`;
    // A position body moved to the next seq of the same thread.
    tamper(`UPDATE cairn_positions SET body = (SELECT body FROM cairn_positions WHERE tid = ${tid('t')} AND seq = 3) WHERE tid = ${tid('t')} AND seq = 4`);
    let e = reopen();
    await expect(canaryApp(e).getState({ thread: 't' })).rejects.toThrow(DecryptionError);
    await expect(e.checkpointer.getPosition('t', '', 4)).rejects.toThrow(DecryptionError);
    // An item of thread u (below its snapshot, opened in bulk) replaced by another thread's.
    tamper(`UPDATE cairn_items SET body = (SELECT body FROM cairn_items WHERE tid = ${tid('t')} AND seq = 1) WHERE tid = ${tid('u')} AND seq = 2`);
    e = reopen();
    await expect(canaryApp(e).getState({ thread: 'u' })).rejects.toThrow(CorruptRecordError);
    // verify opens every row with its tag: the moved item is named exactly.
    await expect(verifyThread(e, 'u')).rejects.toThrow(/thread u seq 2 \(item 0 of field "notes"\)/);
    // A store value moved to another key, and a flipped byte in a ledger outcome.
    tamper("UPDATE cairn_store SET value = (SELECT value FROM cairn_store WHERE key = 'k0') WHERE key = 'k1'");
    tamper(`UPDATE cairn_ledger SET outcome = substr(outcome, 1, 30) || (CASE substr(outcome, 31, 1) WHEN 'A' THEN 'B' ELSE 'A' END) || substr(outcome, 32) WHERE tid = ${tid('t')} AND seq = 0 AND kind = 'record'`);
    e = reopen();
    await expect(e.store.get(['prefs', 'u1'], 'k1')).rejects.toThrow(DecryptionError);
    expect((await e.store.get(['prefs', 'u1'], 'k0'))!.value).toEqual({ note: `${CANARY}-store-0` });
    await expect(e.ledger.list('t')).rejects.toThrow(DecryptionError);
  });

  it('rotating the KEK re-wraps data keys and rewrites no data row; the old KEK is then not needed; a new data key seals new writes', async () => {
    const { engine, file, dir } = fresh();
    await canaryApp(engine, 2).run({ thread: 't' });
    const dataRows = () => {
      const db = new Database(file, { readonly: true });
      try {
        return ['cairn_positions', 'cairn_items', 'cairn_snapshots', 'cairn_ledger'].map((t) => JSON.stringify(db.prepare(`SELECT * FROM ${t}`).all()));
      } finally {
        db.close();
      }
    };
    const before = dataRows();
    const { provider, keyring } = engine.encryption!;
    const scope = threadScope(null, 't');
    const oldKek = JSON.parse(readFileSync(join(dir, 'keys.json'), 'utf8')).scopes[scope][0].id as string;
    await provider.rotate(scope);
    expect(await keyring.rewrap(scope)).toBe(1);
    expect(dataRows()).toEqual(before);
    // Drop the old KEK from the key file: everything still opens, in a new process's engine.
    const path = join(dir, 'keys.json');
    const contents = JSON.parse(readFileSync(path, 'utf8'));
    contents.scopes[scope] = contents.scopes[scope].filter((k: { id: string }) => k.id !== oldKek);
    const { writeFileSync } = await import('node:fs');
    writeFileSync(path, JSON.stringify(contents));
    await engine.close();
    const again = encrypted(sqlite(file), { keys: keyFile(path) });
    cleanup.push(() => again.close());
    expect((await canaryApp(again, 2).getState({ thread: 't' })).n).toBe(2);
    const firstKey = (await again.encryption.keyring.listKeys(scope))[0]!.id;
    const rotated = await again.encryption.keyring.rotateDataKey(scope);
    await canaryApp(again, 3).run({ thread: 't', input: { secret: 'again' } });
    const db = new Database(file, { readonly: true });
    const bodies = (db.prepare('SELECT body FROM cairn_positions ORDER BY seq').pluck().all() as (string | Buffer)[]).map(textOfStored);
    db.close();
    expect(bodies.at(-1)!.startsWith(`~c1:${rotated.id}:`)).toBe(true);
    expect(bodies[0]!.startsWith(`~c1:${firstKey}:`)).toBe(true);
    expect((await verifyThread(again, 't')).ok).toBe(true);
  });

  it('an interrupted run resumes on a new engine over the same encrypted file; the worked example runs and verifies', async () => {
    const { engine, file, dir } = fresh();
    const build = (e: Engine) =>
      graph(State)
        .node('ask', async (_s, ctx) => {
          const ok = await ctx.interrupt({ question: `${CANARY}-question` }, { answer: z.boolean() });
          return { secret: ok ? `${CANARY}-approved` : 'no', n: 1 };
        })
        .edge(START, 'ask')
        .edge('ask', END)
        .compile({ engine: e });
    expect((await build(engine).run({ thread: 'i' })).status).toBe('interrupted');
    await engine.close();
    const next = encrypted(sqlite(file), { keys: keyFile(join(dir, 'keys.json')) });
    cleanup.push(() => next.close());
    const resumed = await build(next).resume({ thread: 'i', answer: true });
    expect(resumed.status).toBe('completed');
    expect(resumed.state.secret).toBe(`${CANARY}-approved`);

    const worked = workedExample({ engine: next, artifacts: memoryArtifacts() });
    const done = await worked.run({ thread: 'cust_42' });
    expect(done.status).toBe('completed');
    expect((await verifyThread(next, 'cust_42')).ok).toBe(true);
    await next.close();
    const raw = rawContents(file);
    expect(raw.bytes).not.toContain(CANARY);
    expect(raw.bytes).not.toContain('Customer 42');
  });

  it("LangGraph's CairnSaver runs a graph on an encrypted engine", async () => {
    const { engine, file } = fresh();
    const app = new StateGraph(MessagesAnnotation)
      .addNode('reply', async () => ({ messages: [new AIMessage(`${CANARY}-reply`)] }))
      .addEdge(LG_START, 'reply')
      .addEdge('reply', LG_END)
      .compile({ checkpointer: new CairnSaver({ engine }) });
    await app.invoke({ messages: [] }, { configurable: { thread_id: 'lg' } });
    const second = await app.invoke({ messages: [] }, { configurable: { thread_id: 'lg' } });
    expect(second.messages.map((m) => m.content)).toEqual([`${CANARY}-reply`, `${CANARY}-reply`]);
    await engine.close();
    expect(rawContents(file).bytes).not.toContain(CANARY);
  });

  it('wraps every member of the checkpointer and ledger contracts (a member added to them fails the build until it is)', () => {
    const { engine } = fresh();
    for (const [name, kind] of Object.entries(CHECKPOINTER_MEMBERS)) {
      const member = (engine.checkpointer as unknown as Record<string, unknown>)[name];
      expect(kind === 'value' ? member !== undefined : typeof member === 'function', `checkpointer.${name}`).toBe(true);
      if (kind === 'wrapped') expect(Object.prototype.hasOwnProperty.call(Object.getPrototypeOf(engine.checkpointer), name), `checkpointer.${name} is the wrapper's own`).toBe(true);
    }
    for (const [name, kind] of Object.entries(LEDGER_MEMBERS)) {
      const member = (engine.ledger as unknown as Record<string, unknown>)[name];
      expect(kind === 'value' ? member !== undefined : typeof member === 'function', `ledger.${name}`).toBe(true);
      if (kind === 'wrapped') expect(Object.prototype.hasOwnProperty.call(Object.getPrototypeOf(engine.ledger), name), `ledger.${name} is the wrapper's own`).toBe(true);
    }
    expect(engine.encryption.required).toBe(true);
  });
});
