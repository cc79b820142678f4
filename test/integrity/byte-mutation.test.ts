/**
 * Byte-mutation fuzz of a stored thread, on SQLite and PostgreSQL: a 10-step thread
 * with appended items, replaced fields, snapshots and recorded outputs; every byte
 * of every stored row it owns (positions, items, snapshots, the anchored heads, the
 * ledger) is changed in turn, and after each change the head and every position are
 * loaded, the thread is replayed (for ledger rows, which only replay reads) and
 * verified. Every read must end in a typed error or the exact original result
 * (never a silently different state, never a crash), and `verify` must flag every
 * change that alters what a read returns.
 *
 * A byte of text is changed by flipping its lowest bit (`0` ↔ `1`, `a` ↔ `` ` ``,
 * `"` ↔ `#`: valid JSON stays valid as often as not); an integer column by one; a
 * blob byte by its lowest bit. A change the database itself refuses (a key that
 * would collide) is counted apart.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import pg from 'pg';
import type Database from 'better-sqlite3';
import { CairnError } from '../../src/errors.js';
import { encode } from '../../src/codec/tagged-json.js';
import { defineState } from '../../src/state/schema.js';
import { field } from '../../src/state/fields.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import type { Engine } from '../../src/contracts/engine.js';
import { openRaw, tidOf, useEngine, type EngineName } from '../runtime/engines.js';

const THREAD = 'fuzz';
/**
 * `npm test` changes every sixth byte on SQLite and every twelfth on PostgreSQL (whose
 * reads cost more round trips), from a phase chosen at random and printed, so that
 * runs together cover every byte; `CAIRN_FUZZ=full` changes every one,
 * `CAIRN_FUZZ_PHASE=<n>` repeats a run's choice.
 */
const STRIDES: Record<'sqlite' | 'postgres', number> = process.env.CAIRN_FUZZ === 'full' ? { sqlite: 1, postgres: 1 } : { sqlite: 6, postgres: 12 };
const phaseOf = (stride: number) => (process.env.CAIRN_FUZZ_PHASE !== undefined ? Number(process.env.CAIRN_FUZZ_PHASE) % stride : Math.floor(Math.random() * stride));
const STEPS = 10;

const State = defineState({
  fields: {
    n: field.model(z.number(), { default: 0 }),
    log: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
    answer: field.model(z.string().optional()),
  },
});

function fuzzApp(engine: Engine) {
  return graph(State)
    .node('step', async (s, ctx) => ({ n: s.n + 1, log: [`e${s.n + 1}`], answer: await ctx.record('m', () => `a${s.n + 1}`) }))
    .edge(START, 'step')
    .conditionalEdge('step', (s) => (s.n < STEPS ? 'step' : END))
    .compile({ engine, retry: { maxAttempts: 1 }, snapshotEvery: 4 });
}

type Kind = 'text' | 'blob' | 'int';
interface TableSpec {
  table: string;
  /** Columns that address one row of the thread (besides its tid). */
  key: string[];
  columns: Record<string, Kind>;
}

/** Every table a thread owns, and the columns a read depends on. */
function tables(engine: EngineName): TableSpec[] {
  const positions: Record<string, Kind> = { body: 'text', hash: 'blob', seq: 'int', parent: 'int', segment: 'int', step: 'int', schema_version: 'int', created_at: 'int' };
  return [
    { table: 'cairn_positions', key: ['ns', 'seq'], columns: engine === 'sqlite' ? { ...positions, items_from: 'int', items_count: 'int' } : positions },
    { table: 'cairn_items', key: engine === 'sqlite' ? ['rowid'] : ['ns', 'field', 'seq', 'idx'], columns: { body: 'text', field: 'text', seq: 'int', idx: 'int' } },
    { table: 'cairn_snapshots', key: ['ns', 'seq'], columns: { body: 'text', seq: 'int' } },
    { table: 'cairn_heads', key: ['ns'], columns: { seq: 'int', hash: 'blob' } },
    { table: 'cairn_ledger', key: ['key'], columns: { key: 'text', kind: 'text', name: 'text', seq: 'int', task: 'text', call: 'int', status: 'text', outcome: 'text' } },
  ];
}

type Row = Record<string, unknown>;

/** Raw access to one engine's rows of the thread. */
interface RawRows {
  rows(spec: TableSpec): Promise<Row[]>;
  /** Sets `column` of the row `key` addresses; false when the database refuses the value. */
  set(spec: TableSpec, key: Row, column: string, value: unknown): Promise<boolean>;
  close(): Promise<void>;
}

function sqliteRaw(path: string): RawRows {
  const db: Database.Database = openRaw(path);
  // The tampering connection needs no durability: an fsync per change would be most of the run.
  db.pragma('synchronous = OFF');
  const tid = tidOf(db, THREAD);
  const where = (spec: TableSpec) => ['tid = ?', ...spec.key.map((k) => `${k} IS ?`)].join(' AND ');
  return {
    async rows(spec) {
      const cols = [...new Set([...spec.key, ...Object.keys(spec.columns)])].join(', ');
      return db.prepare(`SELECT ${cols} FROM ${spec.table} WHERE tid = ?`).all(tid) as Row[];
    },
    async set(spec, key, column, value) {
      try {
        return db.prepare(`UPDATE ${spec.table} SET ${column} = ? WHERE ${where(spec)}`).run(value, tid, ...spec.key.map((k) => key[k])).changes === 1;
      } catch {
        return false;
      }
    },
    async close() {
      db.close();
    },
  };
}

function postgresRaw(pool: pg.Pool, schema: string): RawRows {
  const s = `"${schema}"`;
  const tid = `(SELECT tid FROM ${s}.cairn_threads WHERE id = '${THREAD}')`;
  const numeric = (spec: TableSpec, column: string) => spec.columns[column] === 'int';
  const fix = (spec: TableSpec, row: Row) => {
    for (const column of Object.keys(row)) if (numeric(spec, column) && row[column] !== null) row[column] = Number(row[column]);
    return row;
  };
  return {
    async rows(spec) {
      const cols = [...new Set([...spec.key, ...Object.keys(spec.columns)])].join(', ');
      return (await pool.query(`SELECT ${cols} FROM ${s}.${spec.table} WHERE tid = ${tid}`)).rows.map((row: Row) => fix(spec, row));
    },
    async set(spec, key, column, value) {
      const where = spec.key.map((k, i) => `${k} IS NOT DISTINCT FROM $${i + 2}`).join(' AND ');
      try {
        const result = await pool.query(`UPDATE ${s}.${spec.table} SET ${column} = $1 WHERE tid = ${tid} AND ${where}`, [value, ...spec.key.map((k) => key[k])]);
        return result.rowCount === 1;
      } catch {
        return false;
      }
    },
    async close() {},
  };
}

/** Every single-byte change of one value, as the value to store. */
function* mutations(kind: Kind, value: unknown): Generator<unknown> {
  if (value === null || value === undefined) return;
  if (kind === 'int') {
    yield Number(value) + 1;
  } else if (kind === 'blob') {
    const bytes = value as Buffer;
    for (let i = 0; i < bytes.length; i++) {
      const changed = Buffer.from(bytes);
      changed[i] = changed[i]! ^ 0x01;
      yield changed;
    }
  } else {
    const text = value as string;
    for (let i = 0; i < text.length; i++) yield text.slice(0, i) + String.fromCharCode(text.charCodeAt(i) ^ 0x01) + text.slice(i + 1);
  }
}

/** A replay report that says a step diverged: counted like a typed error. */
class ReplayFlagged extends CairnError {}

/** What one read returned: the state's canonical text, or the error's code; `crash` for anything not a CairnError. */
async function outcome(read: () => Promise<unknown>): Promise<string> {
  try {
    return `ok ${encode(await read())}`;
  } catch (error) {
    return CairnError.is(error) ? `error ${(error as CairnError).code}` : `crash ${String(error)}`;
  }
}

interface Tally {
  mutations: number;
  refusedByDatabase: number;
  /** Every read returned exactly what it did before. */
  unchanged: number;
  /** At least one read ended in a typed error, none returned anything else. */
  typedError: number;
  silentWrongState: string[];
  crashes: string[];
  /** Changes that altered a read but passed verify. */
  verifyMissed: string[];
}

for (const name of ['sqlite', 'postgres'] as EngineName[]) {
  describe(`byte-mutation fuzz on ${name}`, () => {
    const ctx = useEngine(name);
    const STRIDE = STRIDES[name as 'sqlite' | 'postgres'];
    const PHASE = phaseOf(STRIDE);

    it('every byte of every row (a stride of them in npm test, a random phase): typed errors or the exact original reads, verify flags every change a read sees', { timeout: 600_000 }, async () => {
      const app = fuzzApp(ctx.engine);
      await app.run({ thread: THREAD });
      expect((await app.verify({ thread: THREAD })).ok).toBe(true);
      const raw = name === 'sqlite' ? sqliteRaw(ctx.path!) : postgresRaw(ctx.pg!.pool, ctx.pg!.schema);
      const reads: [string, () => Promise<unknown>, boolean][] = [
        ['head', () => app.getState({ thread: THREAD }), false],
        ...Array.from({ length: STEPS + 1 }, (_, seq) => [`seq ${seq}`, () => app.stateAt({ thread: THREAD, seq }), false] as [string, () => Promise<unknown>, boolean]),
        // Replay reports what it could not reproduce: a report that flags a step is its typed answer.
        ['replay', async () => {
          const report = await app.replay({ thread: THREAD, from: 0 });
          if (!report.sameStates) throw new ReplayFlagged('replay flagged a step');
          return report.steps.map((s) => s.seq);
        }, true],
      ];
      const readAll = async (withReplay: boolean) => Promise.all(reads.filter(([, , replay]) => withReplay || !replay).map(([, read]) => outcome(read)));
      const baseline = await readAll(true);
      expect(baseline.every((o) => o.startsWith('ok '))).toBe(true);
      let candidate = 0;
      const tally: Tally = { mutations: 0, refusedByDatabase: 0, unchanged: 0, typedError: 0, silentWrongState: [], crashes: [], verifyMissed: [] };
      try {
        for (const spec of tables(name)) {
          // The ledger is read by replay only; the other tables by the loads (replay too, but slowly).
          const withReplay = spec.table === 'cairn_ledger';
          const expected = withReplay ? baseline : baseline.slice(0, -1);
          for (const row of await raw.rows(spec)) {
            for (const [column, kind] of Object.entries(spec.columns)) {
              for (const changed of mutations(kind, row[column])) {
                if (candidate++ % STRIDE !== PHASE) continue;
                const where = `${spec.table}.${column} of ${JSON.stringify(spec.key.map((k) => row[k]))}`;
                tally.mutations++;
                // A key column changed moves the row: it is restored through its new key.
                const movedKey = spec.key.includes(column) ? { ...row, [column]: changed } : row;
                if (!(await raw.set(spec, row, column, changed))) {
                  tally.refusedByDatabase++;
                  continue;
                }
                try {
                  const results = await readAll(withReplay);
                  const verify = await outcome(async () => (await app.verify({ thread: THREAD })).ok);
                  let altered = false;
                  results.forEach((result, i) => {
                    if (result === expected[i]) return;
                    altered = true;
                    if (result.startsWith('crash')) tally.crashes.push(`${where}: ${reads[i]![0]}: ${result}`);
                    else if (result.startsWith('ok')) tally.silentWrongState.push(`${where}: ${reads[i]![0]}`);
                  });
                  if (verify.startsWith('crash')) tally.crashes.push(`${where}: verify: ${verify}`);
                  if (!altered) tally.unchanged++;
                  else tally.typedError++;
                  if (altered && verify === 'ok true') tally.verifyMissed.push(where);
                } finally {
                  expect(await raw.set(spec, movedKey, column, row[column])).toBe(true);
                }
              }
            }
          }
        }
      } finally {
        await raw.close();
      }
      // Everything is as it was.
      expect(await readAll(true)).toEqual(baseline);
      expect((await app.verify({ thread: THREAD })).ok).toBe(true);
      const summary = { ...tally, silentWrongState: tally.silentWrongState.length, crashes: tally.crashes.length, verifyMissed: tally.verifyMissed.length };
      process.stdout.write(`byte-mutation fuzz on ${name} (every ${STRIDE === 1 ? '' : `${STRIDE}th `}byte, phase ${PHASE}; CAIRN_FUZZ=full for all): ${JSON.stringify(summary)}\n`);
      if (process.env.FUZZ_DEBUG) process.stdout.write(JSON.stringify({ silent: tally.silentWrongState, missed: tally.verifyMissed, crashes: tally.crashes }, null, 1) + "\n");
      expect(tally.silentWrongState).toEqual([]);
      expect(tally.crashes).toEqual([]);
      expect(tally.verifyMissed).toEqual([]);
      expect(tally.mutations).toBeGreaterThan(3000 / STRIDE);
      expect(tally.unchanged + tally.typedError + tally.refusedByDatabase).toBe(tally.mutations);
    });
  });
}
