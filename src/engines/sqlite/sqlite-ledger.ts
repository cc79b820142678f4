/**
 * @module engines/sqlite/sqlite-ledger
 * The effect ledger on SQLite: each write is its own durable transaction, so an
 * intent is on disk before the effect runs and an outcome before the step commits.
 */
import type { CommittedEffect, StepCommit } from '../../contracts/checkpointer.js';
import type { LedgerEntry, NewLedgerEntry } from '../../contracts/ledger.js';
import type { ThreadLease } from '../../contracts/threads.js';
import { LEDGER_COLUMNS, ledgerEntryOf, ledgerRowValues, type LedgerRow } from '../../internal/ledger-rows.js';
import { BaseLedger } from '../../ledger/base-ledger.js';
import type { SqliteConnection, SqliteQueries } from './connection.js';

/**
 * The upsert of an effect a step commit carries (see {@link StepCommit.effects}): a done
 * entry, or, where the key exists, an intent made done with this outcome (a done entry is
 * kept). Parameters: tid, then {@link ledgerRowValues}.
 */
const COMMITTED_EFFECT = `INSERT INTO cairn_ledger (tid, ${LEDGER_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
  ON CONFLICT (tid, key) DO UPDATE SET status = 'done', outcome = excluded.outcome, completed_at = excluded.completed_at WHERE cairn_ledger.status = 'intent'`;

/** Writes the effects of a step commit, inside the commit's transaction (`q`), under the thread's `tid`. */
export function writeCommittedEffects(q: SqliteQueries, tid: number, effects: readonly CommittedEffect[]): void {
  const upsert = q.stmt(COMMITTED_EFFECT);
  for (const effect of effects) upsert.run(tid, ...ledgerRowValues(effect, 'done', effect.outcome, effect.completedAt));
}

/**
 * The effect ledger contract on SQLite. `sqlite(...)` builds one.
 *
 * @example `const ledger = new SqliteLedger(new SqliteConnection('./cairn.db'));`
 */
export class SqliteLedger extends BaseLedger {
  readonly engine = 'sqlite';

  constructor(private readonly conn: SqliteConnection) {
    super(conn.lifecycle);
  }

  protected async readEntry(threadId: string, key: string): Promise<LedgerEntry | null> {
    const row = this.conn.read('ledger.get', (q) => {
      const tid = q.tid(threadId);
      return tid === undefined ? undefined : (q.stmt(`SELECT ${LEDGER_COLUMNS} FROM cairn_ledger WHERE tid = ? AND key = ?`).get(tid, key) as LedgerRow | undefined);
    });
    return row ? ledgerEntryOf(threadId, row) : null;
  }

  protected async readTask(threadId: string, ns: string, seq: number, task: string): Promise<LedgerEntry[]> {
    const rows = this.conn.read('ledger.listForTask', (q) => {
      const tid = q.tid(threadId);
      if (tid === undefined) return [];
      return q.stmt(`SELECT ${LEDGER_COLUMNS} FROM cairn_ledger WHERE tid = ? AND ns = ? AND seq = ? AND task = ? ORDER BY call`).all(tid, ns, seq, task) as LedgerRow[];
    });
    return rows.map((row) => ledgerEntryOf(threadId, row));
  }

  protected async readThreadEntries(threadId: string): Promise<LedgerEntry[]> {
    const rows = this.conn.read('ledger.list', (q) => {
      const tid = q.tid(threadId);
      return tid === undefined ? [] : (q.stmt(`SELECT ${LEDGER_COLUMNS} FROM cairn_ledger WHERE tid = ? ORDER BY created_at, seq, task, call`).all(tid) as LedgerRow[]);
    });
    return rows.map((row) => ledgerEntryOf(threadId, row));
  }

  protected async insert(entry: NewLedgerEntry, status: 'intent' | 'done', outcome: string | null): Promise<LedgerEntry | null> {
    const row = this.conn.write('ledger.write', (q) => {
      // The thread is found by id in the inserting statement itself, so a thread deleted
      // meanwhile gets no row (never an orphan under a dead tid).
      q.stmt(
        `INSERT INTO cairn_ledger (tid, ${LEDGER_COLUMNS}) SELECT tid, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? FROM cairn_threads WHERE id = ?
         ON CONFLICT (tid, key) DO NOTHING`,
      ).run(...ledgerRowValues(entry, status, outcome), entry.threadId);
      return q.stmt(`SELECT ${LEDGER_COLUMNS} FROM cairn_ledger WHERE tid = (SELECT tid FROM cairn_threads WHERE id = ?) AND key = ?`).get(entry.threadId, entry.key) as
        | LedgerRow
        | undefined;
    });
    return row ? ledgerEntryOf(entry.threadId, row) : null;
  }

  protected async complete(threadId: string, key: string, outcome: string, at: number): Promise<boolean> {
    return this.conn.write('ledger.writeOutcome', (q) => {
      const tid = q.tid(threadId);
      if (tid === undefined) return false;
      q.stmt(`UPDATE cairn_ledger SET status = 'done', outcome = ?, completed_at = ? WHERE tid = ? AND key = ? AND status = 'intent'`).run(outcome, at, tid, key);
      return true;
    });
  }

  protected async dropRecords(lease: ThreadLease, keys: string[]): Promise<boolean> {
    // The IMMEDIATE transaction holds the write lock from the fence to the last delete:
    // no takeover can land in between.
    return this.conn.write('ledger.discardRecords', (q) => {
      const tid = q.stmt('SELECT tid FROM cairn_threads WHERE id = ? AND run_id = ? AND epoch = ?').pluck().get(lease.threadId, lease.runId, lease.epoch) as number | undefined;
      if (tid === undefined) return false;
      const statement = q.stmt(`DELETE FROM cairn_ledger WHERE tid = ? AND key = ? AND kind = 'record'`);
      for (const key of keys) statement.run(tid, key);
      return true;
    });
  }
}
