/**
 * An encrypted engine's sealed item packs (crypto/item-packs): every 64 positions the
 * commit of the last one seals each field's items of the span into one envelope, beside
 * the rows. Loads read the packs (a few AES-GCM opens with tags checked, not thousands of
 * rows) and fall back to the rows for a pack that does not open; the rows stay the
 * record, which `verify` checks. On SQLite (packs stored as sealed bytes), memory and
 * PostgreSQL (packs stored right after their commit, fenced by its lease).
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Engine } from '../../src/contracts/engine.js';
import { encrypted, keyFile } from '../../src/crypto/index.js';
import { PACK_SPAN, packAad, packText } from '../../src/crypto/item-packs.js';
import { sealText } from '../../src/crypto/envelope.js';
import { sealedToBytes } from '../../src/crypto/sealed-bytes.js';
import { threadScope } from '../../src/crypto/scopes.js';
import { memory } from '../../src/engines/memory/index.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { END, START, defineState, field, graph } from '../../src/index.js';
import { verifyThread } from '../../src/inspect/verify.js';
import { usePostgresSchema } from '../helpers/postgres.js';

const pg = usePostgresSchema();
let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'cairn-packs-'));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

const CANARY = 'PackCanary';

const State = defineState({
  fields: {
    messages: field.model(z.array(z.object({ i: z.number(), text: z.string() })), { reduce: 'append', default: [] }),
    notes: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
    until: field.model(z.number(), { default: 0 }),
  },
});

/** Appends a message every step, and a note every third step, until `until` messages. */
function appOf(engine: Engine) {
  return graph(State)
    .node('step', (s) => ({
      messages: [{ i: s.messages.length, text: `${CANARY}-${s.messages.length} ${'x'.repeat(s.messages.length % 50)}` }],
      ...(s.messages.length % 3 === 0 ? { notes: [`note ${s.messages.length} é`] } : {}),
    }))
    .edge(START, 'step')
    .conditionalEdge('step', (s) => (s.messages.length < s.until ? 'step' : END))
    .compile({ engine, recursionLimit: 10_000 });
}

const expected = (n: number) => Array.from({ length: n }, (_, i) => ({ i, text: `${CANARY}-${i} ${'x'.repeat(i % 50)}` }));

function sealedSqlite(): { engine: Engine; file: string } {
  const file = join(dir, 'cairn.db');
  return { engine: encrypted(sqlite(file), { keys: keyFile(join(dir, 'keys.json')) }), file };
}

describe('sealed item packs', () => {
  it('SQLite: a pack of each field every 64 positions, sealed bytes beside the rows; the file holds no plaintext of them', async () => {
    const { engine, file } = sealedSqlite();
    const app = appOf(engine);
    await app.run({ thread: 't', input: { until: 200 } });
    expect((await app.getState({ thread: 't' })).messages).toEqual(expected(200));
    await engine.close();
    const db = new Database(file, { readonly: true });
    const packs = db.prepare('SELECT field, from_seq AS fromSeq, to_seq AS toSeq, count, typeof(body) AS type FROM cairn_item_packs ORDER BY field, from_seq').all();
    db.close();
    // Position 0 is the input's; step k appends message k-1 at position k.
    expect(packs).toEqual([
      ...[0, 1, 2].map((k) => ({ field: 'messages', fromSeq: k * PACK_SPAN, toSeq: (k + 1) * PACK_SPAN - 1, count: k === 0 ? PACK_SPAN - 1 : PACK_SPAN, type: 'blob' })),
      ...[0, 1, 2].map((k) => ({ field: 'notes', fromSeq: k * PACK_SPAN, toSeq: (k + 1) * PACK_SPAN - 1, count: expect.any(Number), type: 'blob' })),
    ]);
    const bytes = Buffer.concat([await readFile(file), await readFile(`${file}-wal`).catch(() => Buffer.alloc(0))]);
    expect(bytes.includes(CANARY)).toBe(false);
  });

  it('a load reads the packs: item rows the packs cover can be damaged and the state still loads, while verify reports the rows', async () => {
    const { engine, file } = sealedSqlite();
    const app = appOf(engine);
    await app.run({ thread: 't', input: { until: 150 } });
    await engine.close();
    // Seal a row of position 10 for another position: its tag no longer checks, and the bulk
    // opener (which does not check tags) would hand back another item's text.
    const db = new Database(file);
    const body = db.prepare("SELECT body FROM cairn_items WHERE field = 'messages' AND seq = 20").pluck().get() as Buffer;
    db.prepare("UPDATE cairn_items SET body = ? WHERE field = 'messages' AND seq = 10").run(body);
    db.close();
    const again = sealedSqlite().engine;
    const reopened = appOf(again);
    expect((await reopened.getState({ thread: 't' })).messages).toEqual(expected(150));
    // verify opens every row with its tag checked.
    await expect(verifyThread(again, 't')).rejects.toThrow(/thread t seq 10 \(item 0 of field "messages"\): the sealed row does not open/);
    await again.close();
  });

  it('a pack that does not open (damaged, or moved to another span) is passed over for its rows', async () => {
    const { engine, file } = sealedSqlite();
    const app = appOf(engine);
    await app.run({ thread: 't', input: { until: 200 } });
    await engine.close();
    const db = new Database(file);
    const first = db.prepare("SELECT id, body FROM cairn_item_packs WHERE field = 'messages' ORDER BY from_seq").all() as { id: number; body: Buffer }[];
    const damaged = Buffer.from(first[0]!.body);
    damaged[damaged.length - 20] = damaged[damaged.length - 20]! ^ 0xff;
    db.prepare('UPDATE cairn_item_packs SET body = ? WHERE id = ?').run(damaged, first[0]!.id);
    // The second pack's bytes put in the third's place: its tag is bound to its own span.
    db.prepare('UPDATE cairn_item_packs SET body = ? WHERE id = ?').run(first[1]!.body, first[2]!.id);
    db.close();
    const again = sealedSqlite().engine;
    const state = await appOf(again).getState({ thread: 't' });
    expect(state.messages).toEqual(expected(200));
    expect(state.notes).toHaveLength(67);
    // verify names both: the rows are whole, the packs are not.
    const report = await verifyThread(again, 't');
    expect(report.problems.map((p) => [p.kind, p.seq])).toEqual([
      ['pack', 63],
      ['pack', 191],
    ]);
    await again.close();
  });

  it('states at old positions and on a fork read only their own items: a pack serves only a span wholly inside their ranges', async () => {
    for (const make of [() => sealedSqlite().engine, () => encrypted(memory(), { keys: keyFile(join(dir, 'mem-keys.json')) })]) {
      const engine = make();
      const app = appOf(engine);
      await app.run({ thread: 't', input: { until: 150 } });
      for (const seq of [1, 63, 64, 100, 128, 150]) expect((await app.stateAt({ thread: 't', seq })).messages).toEqual(expected(seq));
      // A fork from position 70 (69 messages), run on to 200 messages: its branch's positions
      // take seqs from 151, so the packs ending at 191 and 255 mix both branches' positions.
      await app.fork({ thread: 't', seq: 70, patch: { until: 200 } });
      await app.run({ thread: 't' });
      const forkedState = await app.getState({ thread: 't' });
      expect(forkedState.messages).toEqual(expected(200));
      expect((await app.stateAt({ thread: 't', seq: 150 })).messages).toEqual(expected(150));
      expect((await verifyThread(engine, 't')).ok).toBe(true);
      await engine.close();
    }
  });

  it('packs a caller hands to the encrypted engine are not stored: it writes its own, sealed', async () => {
    const { engine, file } = sealedSqlite();
    const lease = await engine.checkpointer.acquireThread('t', { owner: { runId: 'r', pid: process.pid, host: 'h' }, leaseMs: 60_000, create: { kind: 'task', tenant: null, metadata: {} } });
    const position = { ns: '', seq: 0, parent: null, segment: 0, step: 0, schemaVersion: 1, createdAt: 1, body: '{}', hash: 'a'.repeat(64) };
    await engine.checkpointer.commitStep(lease, { position, items: [], status: 'running', expectedHead: null, packs: [{ field: 'm', fromSeq: 0, toSeq: 0, count: 1, text: `"${CANARY}"` }] });
    expect(engine.checkpointer.capabilities.itemPacks).toBe(false);
    await engine.close();
    const db = new Database(file, { readonly: true });
    expect(db.prepare('SELECT count(*) FROM cairn_item_packs').pluck().get()).toBe(0);
    db.close();
    expect((await readFile(file)).includes(CANARY)).toBe(false);
  });

  it('PostgreSQL: packs stored after their commit, fenced, with the thread\'s tenant; loads read them, and damaged item rows under them do not matter', async () => {
    const engine = encrypted(await pg.engine(), { keys: keyFile(join(dir, 'pg-keys.json')) });
    const app = appOf(engine);
    await app.run({ thread: 't', tenant: 'acme', input: { until: 130 } });
    const { rows } = await pg.pool.query(`SELECT field, from_seq::int AS "fromSeq", to_seq::int AS "toSeq", tenant, left(body, 4) AS mark FROM "${pg.schema}".cairn_item_packs ORDER BY field, from_seq`);
    expect(rows).toEqual([
      { field: 'messages', fromSeq: 0, toSeq: 63, tenant: 'acme', mark: '~c1:' },
      { field: 'messages', fromSeq: 64, toSeq: 127, tenant: 'acme', mark: '~c1:' },
      { field: 'notes', fromSeq: 0, toSeq: 63, tenant: 'acme', mark: '~c1:' },
      { field: 'notes', fromSeq: 64, toSeq: 127, tenant: 'acme', mark: '~c1:' },
    ]);
    // An item row under a pack sealed for another position: the load does not read it, verify does.
    await pg.pool.query(`UPDATE "${pg.schema}".cairn_items SET body = (SELECT body FROM "${pg.schema}".cairn_items WHERE field = 'messages' AND seq = 20) WHERE field = 'messages' AND seq = 10`);
    expect((await app.getState({ thread: 't' })).messages).toEqual(expected(130));
    await expect(verifyThread(engine, 't')).rejects.toThrow(/seq 10/);
    // Erasing the tenant takes its packs with its rows.
    await app.erase({ tenant: 'acme' });
    expect((await pg.pool.query(`SELECT count(*)::int AS n FROM "${pg.schema}".cairn_item_packs`)).rows[0].n).toBe(0);
    await engine.close();
  });
});

describe('verify and the sealed packs', () => {
  it('verify opens every pack and compares it with its rows: a damaged one is a problem of kind pack, which loads pass over', async () => {
    const { engine, file } = sealedSqlite();
    await appOf(engine).run({ thread: 't', input: { until: 200 } });
    expect((await verifyThread(engine, 't')).ok).toBe(true);
    await engine.close();
    // The first messages pack damaged: one bit of its ciphertext flipped.
    const db = new Database(file);
    const packs = db.prepare("SELECT id, body FROM cairn_item_packs WHERE field = 'messages' ORDER BY from_seq").all() as { id: number; body: Buffer }[];
    const damaged = Buffer.from(packs[0]!.body);
    damaged[40] = damaged[40]! ^ 0x01;
    db.prepare('UPDATE cairn_item_packs SET body = ? WHERE id = ?').run(damaged, packs[0]!.id);
    db.close();
    const again = sealedSqlite().engine;
    const report = await verifyThread(again, 't');
    expect(report.ok).toBe(false);
    expect(report.problems).toEqual([
      expect.objectContaining({ kind: 'pack', ns: '', seq: 63, code: 'ERR_CORRUPT_RECORD', message: expect.stringMatching(/the sealed pack of field "messages" over seqs 0-63 does not open/) }),
    ]);
    // The load passes it over for its rows.
    expect((await appOf(again).getState({ thread: 't' })).messages).toEqual(expected(200));
    await again.close();
  });

  it('a pack that opens but holds other texts than its rows (sealed with the right key and place) is a problem verify names', async () => {
    const { engine, file } = sealedSqlite();
    await appOf(engine).run({ thread: 't', input: { until: 100 } });
    // Sealed as the engine seals the pack of 0-63, over 63 other texts.
    const key = await engine.encryption!.keyring.keyForWrite(threadScope(null, 't'));
    const forged = sealedToBytes(sealText(key, packText(Array.from({ length: 63 }, (_, i) => `"other ${i}"`)), packAad('t', '', 'messages', 0, 63, 63)))!;
    await engine.close();
    const db = new Database(file);
    db.prepare("UPDATE cairn_item_packs SET body = ? WHERE field = 'messages' AND from_seq = 0").run(forged);
    db.close();
    const again = sealedSqlite().engine;
    const report = await verifyThread(again, 't');
    expect(report.problems).toEqual([expect.objectContaining({ kind: 'pack', seq: 63, message: expect.stringMatching(/holds 63 items that are not the 63 of its rows/) })]);
    // A load reads it, finds the snapshot's checksum fails, and reads the rows instead.
    expect((await appOf(again).getState({ thread: 't' })).messages).toEqual(expected(100));
    await again.close();
  });
});
