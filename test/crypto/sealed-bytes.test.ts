/**
 * Sealed rows stored as bytes: the SQLite engine keeps a sealed item, position body or
 * snapshot as a BLOB of what its base64 encodes, and gives every text read back exactly
 * the text that was written. Rows written as text before (an earlier version) still
 * read beside them; a changed byte is still caught; an export moves them as texts to
 * an engine that stores texts.
 */
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Engine } from '../../src/contracts/engine.js';
import { sealText } from '../../src/crypto/envelope.js';
import { encrypted, threadScope } from '../../src/crypto/index.js';
import { sealedBytesKeyId, sealedFromBytes, sealedToBytes } from '../../src/crypto/sealed-bytes.js';
import { memory } from '../../src/engines/memory/index.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { CorruptRecordError } from '../../src/errors.js';
import { END, START, defineState, field, graph } from '../../src/index.js';
import { exportThreads, importThreads, verifyThread } from '../../src/inspect/index.js';
import { freshKeys } from './encrypted-engines.js';

const key = { id: 'dk-test', key: randomBytes(32) };

describe('sealed bytes', () => {
  it('a sealed text becomes bytes a third smaller and comes back exactly', () => {
    for (const plain of ['', 'x', '{"a":1}', 'é😀'.repeat(300), 'y'.repeat(10_000)]) {
      const text = sealText(key, plain, 'aad');
      const bytes = sealedToBytes(text)!;
      expect(bytes).not.toBeNull();
      expect(sealedBytesKeyId(bytes)).toBe('dk-test');
      expect(sealedFromBytes(bytes)).toBe(text);
      expect(bytes.length).toBeLessThan(text.length * 0.8 + 8);
    }
  });

  it('what bytes would not give back exactly stays a text: plaintext, non-canonical base64, an unusable key id', () => {
    const text = sealText(key, 'secret', 'aad');
    expect(sealedToBytes('{"a":1}')).toBeNull();
    expect(sealedToBytes('~not-an-envelope')).toBeNull();
    expect(sealedToBytes(`${text.slice(0, -2)}\n${text.slice(-2)}`)).toBeNull();
    expect(sealedToBytes(text.replace(/=+$/, ''))).toBeNull();
    expect(sealedToBytes(`~c1:${'k'.repeat(300)}:${text.split(':')[2]}`)).toBeNull();
    expect(sealedToBytes(`~c1:clé:${text.split(':')[2]}`)).toBeNull();
    expect(sealedToBytes('~c1::AAAA')).toBeNull();
  });

  it('bytes that are not sealed bytes read as a text no reader takes for an envelope or JSON', () => {
    const text = sealedFromBytes(Buffer.from([1, 2, 3]));
    expect(text.startsWith('~c1:')).toBe(false);
    expect(() => JSON.parse(text)).toThrow();
  });
});

const State = defineState({
  fields: {
    notes: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
    n: field.model(z.number(), { default: 0 }),
  },
});

function appendApp(engine: Engine, steps: number) {
  return graph(State)
    .node('step', async (s) => ({ notes: [`note ${s.n} ${'é'.repeat(s.n % 3)}`], n: s.n + 1 }))
    .edge(START, 'step')
    .conditionalEdge('step', (s) => (s.n < steps ? 'step' : END))
    .compile({ engine, snapshotEvery: 3 });
}

const expected = (steps: number) => Array.from({ length: steps }, (_, n) => `note ${n} ${'é'.repeat(n % 3)}`);

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const fn of cleanup.reverse()) await fn();
  cleanup = [];
});

function freshFile() {
  const { dir, keys } = freshKeys();
  cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'cairn.db');
  const open = () => {
    const engine = encrypted(sqlite(file), { keys });
    cleanup.push(() => engine.close());
    return engine;
  };
  return { file, open };
}

function bodyTypes(file: string, table = 'cairn_items'): string[] {
  const db = new Database(file, { readonly: true });
  try {
    return db.prepare(`SELECT DISTINCT typeof(body) FROM ${table}`).pluck().all() as string[];
  } finally {
    db.close();
  }
}

describe('encrypted(sqlite(...)) keeps sealed items as bytes', () => {
  it('items, position bodies and snapshots are BLOBs; loads, history, text reads and verify see the texts that were written', async () => {
    const { file, open } = freshFile();
    const engine = open();
    const app = appendApp(engine, 10);
    await app.run({ thread: 't' });
    for (const table of ['cairn_items', 'cairn_positions', 'cairn_snapshots']) expect(bodyTypes(file, table)).toEqual(['blob']);
    expect((await app.history({ thread: 't' })).map((p) => p.seq)).toEqual(Array.from({ length: 11 }, (_, i) => 10 - i));
    expect((await app.getState({ thread: 't' })).notes).toEqual(expected(10));
    expect((await app.stateAt({ thread: 't', seq: 4 })).notes).toEqual(expected(4));
    expect((await verifyThread(engine, 't')).ok).toBe(true);
    // The inner engine's text reads give back the sealed envelopes themselves.
    const inner = sqlite(file);
    cleanup.push(() => inner.close());
    const texts = await inner.checkpointer.getItems('t', '', 'notes', [{ from: 0, to: 100 }]);
    expect(texts).toHaveLength(10);
    for (const text of texts) expect(text).toMatch(/^~c1:[^:]+:[A-Za-z0-9+/]+=*$/);
    const range = await inner.checkpointer.getRangeItems('t', '', { from: 0, to: 100 });
    expect(range.map((i) => i.text)).toEqual(texts);
    for (const position of await inner.checkpointer.getPositions('t', '', { from: 0, to: 100 })) expect(position.body).toMatch(/^~c1:/);
    expect((await inner.checkpointer.getSnapshot('t', '', [{ from: 0, to: 100 }]))!.text).toMatch(/^~c1:/);
  });

  it('a plaintext engine keeps its items as text', async () => {
    const { dir } = freshKeys();
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    const file = join(dir, 'plain.db');
    const engine = sqlite(file);
    cleanup.push(() => engine.close());
    await appendApp(engine, 3).run({ thread: 't' });
    for (const table of ['cairn_items', 'cairn_positions', 'cairn_snapshots']) expect(bodyTypes(file, table)).toEqual(['text']);
  });

  it('items, bodies and snapshots an earlier version stored as text read beside bytes in one thread', async () => {
    const { file, open } = freshFile();
    let engine = open();
    await appendApp(engine, 8).run({ thread: 't' });
    await engine.close();
    const db = new Database(file);
    db.function('as_text', (body: unknown) => (Buffer.isBuffer(body) ? sealedFromBytes(body) : body));
    for (const table of ['cairn_items', 'cairn_positions', 'cairn_snapshots']) db.prepare(`UPDATE ${table} SET body = as_text(body) WHERE seq % 2 = 0`).run();
    db.close();
    expect(bodyTypes(file).sort()).toEqual(['blob', 'text']);
    engine = open();
    const app = appendApp(engine, 8);
    expect((await app.getState({ thread: 't' })).notes).toEqual(expected(8));
    expect((await verifyThread(engine, 't')).ok).toBe(true);
  });

  it('a thread whose items span a data key rotation loads from bytes under both keys', async () => {
    const { open } = freshFile();
    let engine = open();
    await appendApp(engine, 5).run({ thread: 't' });
    await engine.encryption!.keyring.rotateDataKey(threadScope(null, 't'));
    await appendApp(engine, 12).run({ thread: 't', input: {} });
    await engine.close();
    engine = open();
    const app = appendApp(engine, 12);
    expect((await app.getState({ thread: 't' })).notes).toEqual(expected(12));
    expect((await verifyThread(engine, 't')).ok).toBe(true);
  });

  it('a flipped byte in a stored item is caught by the load (below the snapshot) and named by verify', async () => {
    const { file, open } = freshFile();
    let engine = open();
    await appendApp(engine, 8).run({ thread: 't' });
    await engine.close();
    const db = new Database(file);
    const row = db.prepare('SELECT id, body FROM cairn_items WHERE seq = 2').get() as { id: number; body: Buffer };
    row.body[row.body.length - 20]! ^= 0x01;
    db.prepare('UPDATE cairn_items SET body = ? WHERE id = ?').run(row.body, row.id);
    db.close();
    engine = open();
    await expect(appendApp(engine, 8).getState({ thread: 't' })).rejects.toThrow(CorruptRecordError);
    await expect(verifyThread(engine, 't')).rejects.toThrow(/thread t seq 2 \(item 0 of field "notes"\)/);
  });

  it('an export carries the items as texts: an encrypted memory engine with the same keys loads them', async () => {
    const { dir, keys } = freshKeys();
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    const source = encrypted(sqlite(join(dir, 'cairn.db')), { keys });
    cleanup.push(() => source.close());
    await appendApp(source, 6).run({ thread: 't' });
    const target = encrypted(memory(), { keys, require: false });
    cleanup.push(() => target.close());
    const records = [];
    for await (const record of exportThreads(source, ['t'], { raw: true })) records.push(record);
    await importThreads(target, records);
    expect((await appendApp(target, 6).getState({ thread: 't' })).notes).toEqual(expected(6));
  });
});
