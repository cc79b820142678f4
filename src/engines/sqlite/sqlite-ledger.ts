/**
 * @module engines/sqlite/sqlite-ledger
 * The effect ledger on SQLite: each write is its own durable transaction, so an
 * intent is on disk before the effect runs and an outcome before the step commits.
 */
import type { Ledger, LedgerEntry, NewLedgerEntry } from '../../contracts/ledger.js';
import { LEDGER_COLUMNS, ledgerEntryOf, ledgerRowValues, type LedgerRow } from '../../internal/ledger-rows.js';
import { ThreadNotFoundError } from '../../errors.js';
import type { SqliteConnection } from './connection.js';


export class SqliteLedger implements Ledger {
  readonly engine = 'sqlite';

  constructor(private readonly conn: SqliteConnection) {}

  private tidOrThrow(threadId: string): number {
    const tid = this.conn.tid(threadId);
    if (tid === undefined) throw new ThreadNotFoundError(threadId, { engine: this.engine });
    return tid;
  }

  async get(threadId: string, key: string): Promise<LedgerEntry | null> {
    const tid = this.conn.tid(threadId);
    if (tid === undefined) return null;
    const row = this.conn.run('ledger.get', () => this.conn.stmt(`SELECT ${LEDGER_COLUMNS} FROM cairn_ledger WHERE tid = ? AND key = ?`).get(tid, key) as LedgerRow | undefined);
    return row ? ledgerEntryOf(threadId, row) : null;
  }

  async listForTask(threadId: string, ns: string, seq: number, task: string): Promise<LedgerEntry[]> {
    const tid = this.conn.tid(threadId);
    if (tid === undefined) return [];
    const rows = this.conn.stmt(`SELECT ${LEDGER_COLUMNS} FROM cairn_ledger WHERE tid = ? AND ns = ? AND seq = ? AND task = ? ORDER BY call`).all(tid, ns, seq, task) as LedgerRow[];
    return rows.map((row) => ledgerEntryOf(threadId, row));
  }

  async list(threadId: string): Promise<LedgerEntry[]> {
    const tid = this.conn.tid(threadId);
    if (tid === undefined) return [];
    const rows = this.conn.stmt(`SELECT ${LEDGER_COLUMNS} FROM cairn_ledger WHERE tid = ? ORDER BY created_at, seq, task, call`).all(tid) as LedgerRow[];
    return rows.map((row) => ledgerEntryOf(threadId, row));
  }

  private insert(entry: NewLedgerEntry, status: 'intent' | 'done', outcome: string | null): LedgerEntry {
    return this.conn.run('ledger.write', () => {
      // The thread is found by id in the inserting statement itself, so a thread deleted
      // meanwhile gets no row (never an orphan under a dead tid).
      this.conn
        .stmt(
          `INSERT INTO cairn_ledger (tid, ${LEDGER_COLUMNS}) SELECT tid, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ? FROM cairn_threads WHERE id = ?
           ON CONFLICT (tid, key) DO NOTHING`,
        )
        .run(...ledgerRowValues(entry, status, outcome), entry.threadId);
      const row = this.conn
        .stmt(`SELECT ${LEDGER_COLUMNS} FROM cairn_ledger WHERE tid = (SELECT tid FROM cairn_threads WHERE id = ?) AND key = ?`)
        .get(entry.threadId, entry.key) as LedgerRow | undefined;
      if (!row) throw new ThreadNotFoundError(entry.threadId, { engine: this.engine });
      return ledgerEntryOf(entry.threadId, row);
    });
  }

  async writeIntent(entry: NewLedgerEntry): Promise<LedgerEntry> {
    return this.insert(entry, 'intent', null);
  }

  async writeRecord(entry: NewLedgerEntry & { outcome: string }): Promise<LedgerEntry> {
    return this.insert(entry, 'done', entry.outcome);
  }

  async writeOutcome(threadId: string, key: string, outcome: string, at: number): Promise<void> {
    const tid = this.tidOrThrow(threadId);
    this.conn.run('ledger.writeOutcome', () =>
      this.conn.stmt(`UPDATE cairn_ledger SET status = 'done', outcome = ?, completed_at = ? WHERE tid = ? AND key = ? AND status = 'intent'`).run(outcome, at, tid, key),
    );
  }

  async discardRecords(threadId: string, keys: string[]): Promise<void> {
    const tid = this.conn.tid(threadId);
    if (tid === undefined || keys.length === 0) return;
    const statement = this.conn.stmt(`DELETE FROM cairn_ledger WHERE tid = ? AND key = ? AND kind = 'record'`);
    this.conn.writeTransaction('ledger.discardRecords', () => keys.forEach((key) => statement.run(tid, key)));
  }
}
