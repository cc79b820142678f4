/**
 * @module engines/postgres/postgres-ledger
 * The effect ledger on PostgreSQL: each write is one autocommitted statement, so an
 * intent is durable before the effect runs and an outcome before the step commits.
 */
import type { CommittedEffect, StepCommit } from '../../contracts/checkpointer.js';
import type { LedgerEntry, NewLedgerEntry } from '../../contracts/ledger.js';
import type { ThreadLease } from '../../contracts/threads.js';
import { EngineError } from '../../errors.js';
import { LEDGER_COLUMNS, ledgerEntryOf, ledgerRowValues, type LedgerRow } from '../../internal/ledger-rows.js';
import { BaseLedger } from '../../ledger/base-ledger.js';
import type { PostgresConnection } from './connection.js';

/** The SQL type of each of {@link LEDGER_COLUMNS} (as `insert` casts its parameters). */
const LEDGER_TYPES: Record<string, string> = {
  key: 'text', kind: 'text', name: 'text', ns: 'text', seq: 'bigint', node: 'text', task: 'text', call: 'integer',
  args_digest: 'text', status: 'text', outcome: 'text', created_at: 'bigint', completed_at: 'bigint', meta: 'text',
};
const COLUMNS = LEDGER_COLUMNS.split(', ');

/**
 * The CTE (`effects AS (...)`) of a step commit that upserts the effects it carries (see
 * {@link StepCommit.effects}) into the ledger table `L`: one row per effect, from the
 * columns' arrays at parameters `first`.. ({@link committedEffectValues}), under the tid
 * and tenant of each row of `from` (the commit's inserted position: none when the commit
 * is refused, so then no entry is written). A new key is a done entry; an intent of the
 * key becomes done with the effect's outcome; a done entry is kept.
 */
export function committedEffectsCte(L: string, from: string, first: number): string {
  const arrays = COLUMNS.map((column, i) => `$${first + i}::${LEDGER_TYPES[column]}[]`).join(', ');
  return `effects AS (
        INSERT INTO ${L} AS l (tid, tenant, ${LEDGER_COLUMNS})
        SELECT ${from}.tid, ${from}.tenant, ${COLUMNS.map((c) => `e.${c}`).join(', ')}
        FROM ${from}, unnest(${arrays}) AS e (${LEDGER_COLUMNS})
        ON CONFLICT (tid, key) DO UPDATE SET status = 'done', outcome = excluded.outcome, completed_at = excluded.completed_at WHERE l.status = 'intent'
      )`;
}

/** The parameters of {@link committedEffectsCte}: one array per ledger column, the effects' values in order. */
export function committedEffectValues(effects: readonly CommittedEffect[]): unknown[][] {
  const rows = effects.map((effect) => ledgerRowValues(effect, 'done', effect.outcome, effect.completedAt));
  return COLUMNS.map((_, i) => rows.map((row) => row[i]));
}

/**
 * The effect ledger contract on PostgreSQL. `postgres(...)` builds one.
 *
 * @example `const ledger = new PostgresLedger(new PostgresConnection(pool, { schema: 'cairn' }));`
 */
export class PostgresLedger extends BaseLedger {
  readonly engine = 'postgres';
  private readonly sql: ReturnType<typeof statements>;

  constructor(private readonly conn: PostgresConnection) {
    super(conn.lifecycle);
    this.sql = statements(conn);
  }

  protected async readEntry(threadId: string, key: string): Promise<LedgerEntry | null> {
    const [row] = await this.conn.query<LedgerRow>('ledger.get', this.sql.get, [threadId, key]);
    return row ? ledgerEntryOf(threadId, row) : null;
  }

  protected async readTask(threadId: string, ns: string, seq: number, task: string): Promise<LedgerEntry[]> {
    const rows = await this.conn.query<LedgerRow>('ledger.listForTask', this.sql.listForTask, [threadId, ns, seq, task]);
    return rows.map((row) => ledgerEntryOf(threadId, row));
  }

  protected async readThreadEntries(threadId: string): Promise<LedgerEntry[]> {
    const rows = await this.conn.query<LedgerRow>('ledger.list', this.sql.list, [threadId]);
    return rows.map((row) => ledgerEntryOf(threadId, row));
  }

  protected async insert(entry: NewLedgerEntry, status: 'intent' | 'done', outcome: string | null): Promise<LedgerEntry | null> {
    const values = [entry.threadId, ...ledgerRowValues(entry, status, outcome)];
    for (let round = 0; round < 10; round++) {
      const [row] = await this.conn.query<LedgerRow & { thread_exists: boolean }>('ledger.write', this.sql.insert, values);
      if (row?.key !== undefined && row.key !== null) return ledgerEntryOf(entry.threadId, row);
      if (!row?.thread_exists) return null;
      // The key was inserted by a transaction that committed after this statement's
      // snapshot: the insert did nothing and the read could not see it. Read again.
    }
    throw new EngineError(`ledger.write of key ${entry.key}: the key kept conflicting without becoming visible.`, { place: { engine: this.engine } });
  }

  protected async complete(threadId: string, key: string, outcome: string, at: number): Promise<boolean> {
    const [row] = await this.conn.query<{ thread_exists: boolean }>('ledger.writeOutcome', this.sql.outcome, [threadId, key, outcome, at]);
    return row?.thread_exists === true;
  }

  protected async dropRecords(lease: ThreadLease, keys: string[]): Promise<boolean> {
    const rows = await this.conn.query('ledger.discardRecords', this.sql.discard, [lease.threadId, lease.runId, lease.epoch, keys]);
    return rows.length === 1;
  }
}

function statements(conn: PostgresConnection) {
  const { threads: T, ledger: L } = conn.tables;
  const tidOf = `(SELECT tid FROM ${T} WHERE id = $1::text)`;
  return {
    get: `SELECT ${LEDGER_COLUMNS} FROM ${L} WHERE tid = ${tidOf} AND key = $2::text`,

    listForTask: `SELECT ${LEDGER_COLUMNS} FROM ${L} WHERE tid = ${tidOf} AND ns = $2::text AND seq = $3::bigint AND task = $4::text ORDER BY call`,

    list: `SELECT ${LEDGER_COLUMNS} FROM ${L} WHERE tid = ${tidOf} ORDER BY created_at, seq, task, call`,

    // Insert if absent and return the stored entry, in one statement. The row carries
    // whether the thread exists, so a missing thread is told apart from a lost race.
    // FOR KEY SHARE (which only a delete of the thread conflicts with) makes an insert
    // racing deleteThread wait for it and then find no thread: never an orphan row.
    insert: `
      WITH t AS (SELECT tid, tenant FROM ${T} WHERE id = $1::text FOR KEY SHARE),
      inserted AS (
        INSERT INTO ${L} (tid, tenant, ${LEDGER_COLUMNS})
        SELECT t.tid, t.tenant, $2::text, $3::text, $4::text, $5::text, $6::bigint, $7::text, $8::text, $9::integer, $10::text, $11::text, $12::text, $13::bigint, $14::bigint, $15::text
        FROM t
        ON CONFLICT (tid, key) DO NOTHING
        RETURNING ${LEDGER_COLUMNS}
      ),
      stored AS (
        SELECT ${LEDGER_COLUMNS} FROM inserted
        UNION ALL
        SELECT ${LEDGER_COLUMNS.split(', ').map((c) => `l.${c}`).join(', ')} FROM ${L} l, t WHERE l.tid = t.tid AND l.key = $2::text AND NOT EXISTS (SELECT 1 FROM inserted)
      )
      SELECT stored.*, EXISTS (SELECT 1 FROM t) AS thread_exists FROM (SELECT 1) one LEFT JOIN stored ON true`,

    outcome: `
      WITH t AS (SELECT tid FROM ${T} WHERE id = $1::text),
      done AS (
        UPDATE ${L} l SET status = 'done', outcome = $3::text, completed_at = $4::bigint
        FROM t WHERE l.tid = t.tid AND l.key = $2::text AND l.status = 'intent'
      )
      SELECT EXISTS (SELECT 1 FROM t) AS thread_exists`,

    // Fenced like a commit: the locking read of the thread row makes the delete wait
    // for, or see, a takeover (FOR SHARE conflicts with the takeover's UPDATE), so a run
    // that lost its lease deletes nothing. The row says whether the lease held.
    discard: `
      WITH fence AS (SELECT tid FROM ${T} WHERE id = $1::text AND run_id = $2::text AND epoch = $3::bigint FOR SHARE),
      discarded AS (DELETE FROM ${L} l USING fence WHERE l.tid = fence.tid AND l.key = ANY($4::text[]) AND l.kind = 'record')
      SELECT 1 FROM fence`,
  };
}
