/**
 * @module engines/sqlite/migrations
 * The SQLite schema as an ordered list of migrations, applied in one IMMEDIATE
 * transaction (SQLite's write lock serialises concurrent openers) and recorded in
 * `cairn_migrations`. Append new migrations; never edit an applied one.
 */
import { DatabaseFromFutureError } from '../../errors.js';
import type { SqliteDatabase } from './driver.js';

export interface Migration {
  id: number;
  name: string;
  sql: string;
}

/** Every migration of the SQLite file, in order; each runs once, in a transaction. */
export const SQLITE_MIGRATIONS: readonly Migration[] = [
  {
    id: 1,
    name: 'thread log, ledger and store',
    sql: `
      CREATE TABLE cairn_threads (
        tid         INTEGER PRIMARY KEY,
        id          TEXT NOT NULL UNIQUE,
        kind        TEXT NOT NULL,
        status      TEXT NOT NULL,
        attempts    INTEGER NOT NULL DEFAULT 0,
        tenant      TEXT,
        metadata    TEXT NOT NULL,
        last_error  TEXT,
        run_id      TEXT,
        owner_pid   INTEGER,
        owner_host  TEXT,
        lease_until INTEGER,
        epoch       INTEGER NOT NULL DEFAULT 0,
        created_at  INTEGER NOT NULL,
        updated_at  INTEGER NOT NULL
      );
      CREATE INDEX cairn_threads_by_status ON cairn_threads (status, id);

      -- One row per position. Small rows, clustered by (thread, namespace, seq).
      -- A namespace's head is its highest seq, so a step commit never rewrites the
      -- thread row: it adds a position and its items, and nothing else.
      CREATE TABLE cairn_positions (
        tid            INTEGER NOT NULL,
        ns             TEXT NOT NULL,
        seq            INTEGER NOT NULL,
        parent         INTEGER,
        segment        INTEGER NOT NULL,
        step           INTEGER NOT NULL,
        schema_version INTEGER NOT NULL,
        created_at     INTEGER NOT NULL,
        body           TEXT NOT NULL,
        hash           BLOB NOT NULL,
        PRIMARY KEY (tid, ns, seq)
      ) WITHOUT ROWID;

      -- Items appended to append-reducer fields, stored once by the position that
      -- wrote them. A rowid table: items are often ~1 KB, too big for a WITHOUT ROWID
      -- b-tree cell without spilling to overflow pages.
      CREATE TABLE cairn_items (
        tid   INTEGER NOT NULL,
        ns    TEXT NOT NULL,
        field TEXT NOT NULL,
        seq   INTEGER NOT NULL,
        idx   INTEGER NOT NULL,
        body  TEXT NOT NULL
      );
      CREATE UNIQUE INDEX cairn_items_by_field ON cairn_items (tid, ns, field, seq, idx);

      CREATE TABLE cairn_snapshots (
        tid  INTEGER NOT NULL,
        ns   TEXT NOT NULL,
        seq  INTEGER NOT NULL,
        body TEXT NOT NULL
      );
      CREATE UNIQUE INDEX cairn_snapshots_by_seq ON cairn_snapshots (tid, ns, seq);

      CREATE TABLE cairn_pending (
        tid      INTEGER NOT NULL,
        ns       TEXT NOT NULL,
        base_seq INTEGER NOT NULL,
        task     TEXT NOT NULL,
        body     TEXT NOT NULL,
        PRIMARY KEY (tid, ns, base_seq, task)
      );

      CREATE TABLE cairn_failures (
        id   INTEGER PRIMARY KEY,
        tid  INTEGER NOT NULL,
        body TEXT NOT NULL
      );
      CREATE INDEX cairn_failures_by_thread ON cairn_failures (tid, id);

      CREATE TABLE cairn_ledger (
        tid          INTEGER NOT NULL,
        key          TEXT NOT NULL,
        kind         TEXT NOT NULL,
        name         TEXT NOT NULL,
        ns           TEXT NOT NULL,
        seq          INTEGER NOT NULL,
        node         TEXT NOT NULL,
        task         TEXT NOT NULL,
        call         INTEGER NOT NULL,
        args_digest  TEXT,
        status       TEXT NOT NULL,
        outcome      TEXT,
        created_at   INTEGER NOT NULL,
        completed_at INTEGER,
        PRIMARY KEY (tid, key)
      );
      CREATE INDEX cairn_ledger_by_task ON cairn_ledger (tid, ns, seq, task, call);

      CREATE TABLE cairn_store (
        ns             TEXT NOT NULL,
        key            TEXT NOT NULL,
        value          TEXT NOT NULL,
        version        INTEGER NOT NULL,
        deleted        INTEGER NOT NULL DEFAULT 0,
        last_write_key TEXT,
        created_at     INTEGER NOT NULL,
        updated_at     INTEGER NOT NULL,
        PRIMARY KEY (ns, key)
      );
    `,
  },
  {
    id: 2,
    name: 'store expiry and lastWins overwrite records',
    sql: `
      -- When an item starts reading as absent (ms since the epoch); NULL: never.
      ALTER TABLE cairn_store ADD COLUMN expires_at INTEGER;
      CREATE INDEX cairn_store_by_expiry ON cairn_store (expires_at) WHERE expires_at IS NOT NULL;

      -- What a write in a lastWins namespace replaced, kept so that no overwrite is silent.
      CREATE TABLE cairn_store_overwrites (
        id                     INTEGER PRIMARY KEY AUTOINCREMENT,
        ns                     TEXT NOT NULL,
        key                    TEXT NOT NULL,
        operation              TEXT NOT NULL,
        expected_version       INTEGER NOT NULL,
        overwritten_version    INTEGER,
        overwritten_value      TEXT,
        overwritten_updated_at INTEGER,
        version                INTEGER NOT NULL,
        at                     INTEGER NOT NULL
      );
      CREATE INDEX cairn_store_overwrites_by_ns ON cairn_store_overwrites (ns, id);
    `,
  },
  {
    id: 3,
    name: 'thread listing indexes and never-reused thread keys',
    sql: `
      -- listThreads by tenant and by creation time, in id order; retention by update time.
      CREATE INDEX cairn_threads_by_tenant ON cairn_threads (tenant, id);
      CREATE INDEX cairn_threads_by_created ON cairn_threads (created_at, id);
      CREATE INDEX cairn_threads_by_updated ON cairn_threads (updated_at);

      -- The highest tid ever deleted. A rowid table hands out max(tid) + 1, so deleting
      -- the newest thread would give its tid to the next one, and a reader that looked a
      -- thread's tid up just before the delete could read another thread's rows. New
      -- threads take a tid above both this and every live one.
      CREATE TABLE cairn_thread_tids (
        id   INTEGER PRIMARY KEY CHECK (id = 0),
        last INTEGER NOT NULL
      );
    `,
  },
  {
    id: 4,
    name: 'positions point at their items',
    sql: `
      -- A position's items are consecutive rows of cairn_items (one commit inserts them
      -- together): the position keeps the first rowid and the count, and readers find
      -- the items through it. The (tid, ns, field, seq, idx) index goes: it was a third
      -- b-tree page written by every step commit, for a lookup the position now gives.
      ALTER TABLE cairn_positions ADD COLUMN items_from INTEGER;
      ALTER TABLE cairn_positions ADD COLUMN items_count INTEGER NOT NULL DEFAULT 0;
      UPDATE cairn_positions SET
        items_from = (SELECT min(rowid) FROM cairn_items i WHERE i.tid = cairn_positions.tid AND i.ns = cairn_positions.ns AND i.seq = cairn_positions.seq),
        items_count = (SELECT count(*) FROM cairn_items i WHERE i.tid = cairn_positions.tid AND i.ns = cairn_positions.ns AND i.seq = cairn_positions.seq);
      DROP INDEX cairn_items_by_field;
    `,
  },
  {
    id: 5,
    name: 'anchored namespace heads',
    sql: `
      -- Each namespace's head (seq, chain hash, time), written by the commit that moves
      -- it. A head that is only "the highest seq" cannot tell a truncated log from an
      -- older one; the anchor can. Existing threads are anchored at their newest position.
      -- (A row of cairn_positions beside the newest one would share its page, but every
      -- insert would then land before the last row, which costs SQLite a full page
      -- balance at each split instead of its append fast path: measured slower.)
      CREATE TABLE cairn_heads (
        tid        INTEGER NOT NULL,
        ns         TEXT NOT NULL,
        seq        INTEGER NOT NULL,
        hash       BLOB NOT NULL,
        created_at INTEGER NOT NULL,
        PRIMARY KEY (tid, ns)
      ) WITHOUT ROWID;
      INSERT INTO cairn_heads (tid, ns, seq, hash, created_at)
        SELECT p.tid, p.ns, p.seq, p.hash, p.created_at FROM cairn_positions p
        WHERE p.seq = (SELECT max(q.seq) FROM cairn_positions q WHERE q.tid = p.tid AND q.ns = p.ns);
    `,
  },
  {
    id: 6,
    name: 'durable waits: wake times and signals',
    sql: `
      -- When a waiting thread becomes due (ms since the epoch); NULL: not waiting, or
      -- waiting for a signal only. Claims look for due waiting threads through the
      -- partial index, which holds waiting threads only (few, beside every finished one).
      ALTER TABLE cairn_threads ADD COLUMN wake_at INTEGER;
      CREATE INDEX cairn_threads_due ON cairn_threads (wake_at) WHERE status = 'waiting';

      -- The id of the thread's newest signal: a send counts it up, and a commit that
      -- starts a wait compares it with the newest the wait saw, in the row it reads anyway.
      ALTER TABLE cairn_threads ADD COLUMN last_signal INTEGER NOT NULL DEFAULT 0;

      -- Signals queued for a thread, 1, 2, 3... per thread, kept once consumed (by which
      -- wait, when). A rowid table: a payload may be far bigger than a b-tree cell.
      CREATE TABLE cairn_signals (
        tid         INTEGER NOT NULL,
        id          INTEGER NOT NULL,
        name        TEXT NOT NULL,
        payload     TEXT NOT NULL,
        sent_at     INTEGER NOT NULL,
        consumed_by TEXT,
        consumed_at INTEGER,
        PRIMARY KEY (tid, id)
      );
    `,
  },
  {
    id: 7,
    name: 'threads listed by update time',
    sql: `
      -- A thread's updatedAt is the later of its row's updated_at and its root head's
      -- time. Listing by it walks two indexes, one per side (see queryThreads): the row's
      -- (cairn_threads_by_updated) and this one. Root heads only, so a child run's commit
      -- leaves it alone.
      CREATE INDEX cairn_heads_by_time ON cairn_heads (created_at) WHERE ns = '';
    `,
  },
  {
    id: 8,
    name: 'what a recorded output was',
    sql: `
      -- JSON of a record's RecordMeta (kind, model, usage, latency); NULL: nothing said,
      -- as for every entry written before this column.
      ALTER TABLE cairn_ledger ADD COLUMN meta TEXT;
    `,
  },
  {
    id: 9,
    name: 'threads found by a metadata value',
    sql: `
      -- One row per top-level scalar of a thread's metadata (json_each's key, type and
      -- atom), kept by triggers so that every way a thread row is written (a run, an
      -- import, a direct INSERT) keeps it true. A value few threads have is then an index
      -- range (the threads listed from it) instead of a scan of every thread's JSON.
      CREATE TABLE cairn_thread_metadata (
        tid  INTEGER NOT NULL,
        key  TEXT NOT NULL,
        type TEXT NOT NULL,
        atom
      );
      CREATE INDEX cairn_thread_metadata_by_value ON cairn_thread_metadata (key, atom, tid);
      CREATE INDEX cairn_thread_metadata_by_tid ON cairn_thread_metadata (tid);
      CREATE TRIGGER cairn_threads_metadata_insert AFTER INSERT ON cairn_threads BEGIN
        INSERT INTO cairn_thread_metadata (tid, key, type, atom)
          SELECT NEW.tid, j.key, j.type, j.atom FROM json_each(NEW.metadata) j WHERE j.type NOT IN ('object', 'array');
      END;
      CREATE TRIGGER cairn_threads_metadata_update AFTER UPDATE OF metadata ON cairn_threads BEGIN
        DELETE FROM cairn_thread_metadata WHERE tid = OLD.tid;
        INSERT INTO cairn_thread_metadata (tid, key, type, atom)
          SELECT NEW.tid, j.key, j.type, j.atom FROM json_each(NEW.metadata) j WHERE j.type NOT IN ('object', 'array');
      END;
      CREATE TRIGGER cairn_threads_metadata_delete AFTER DELETE ON cairn_threads BEGIN
        DELETE FROM cairn_thread_metadata WHERE tid = OLD.tid;
      END;
      INSERT INTO cairn_thread_metadata (tid, key, type, atom)
        SELECT t.tid, j.key, j.type, j.atom FROM cairn_threads t, json_each(t.metadata) j WHERE j.type NOT IN ('object', 'array');
    `,
  },
  {
    id: 10,
    name: 'compaction anchors',
    sql: `
      -- A compacted namespace's base: the seq and chain hash of the oldest position it
      -- keeps (retention removed those below). NULL: never compacted. Beside the head, in
      -- the row every read of the namespace looks at anyway.
      ALTER TABLE cairn_heads ADD COLUMN base_seq INTEGER;
      ALTER TABLE cairn_heads ADD COLUMN base_hash BLOB;
    `,
  },
  {
    id: 11,
    name: 'item rowids survive VACUUM',
    sql: `
      -- Positions point at their items by rowid range (migration 4), and VACUUM (or
      -- VACUUM INTO, a common way to take a backup) may renumber the rowids of a table
      -- without an INTEGER PRIMARY KEY: a vacuumed database read wrong items, found by
      -- the chain as CorruptRecordError. An explicit INTEGER PRIMARY KEY is the rowid
      -- under its own name, which VACUUM keeps. The rows are copied with their rowids.
      CREATE TABLE cairn_items_keyed (
        id    INTEGER PRIMARY KEY,
        tid   INTEGER NOT NULL,
        ns    TEXT NOT NULL,
        field TEXT NOT NULL,
        seq   INTEGER NOT NULL,
        idx   INTEGER NOT NULL,
        body  TEXT NOT NULL
      );
      INSERT INTO cairn_items_keyed (id, tid, ns, field, seq, idx, body) SELECT rowid, tid, ns, field, seq, idx, body FROM cairn_items;
      DROP TABLE cairn_items;
      ALTER TABLE cairn_items_keyed RENAME TO cairn_items;
    `,
  },
  {
    id: 12,
    name: 'threads listed by the second of their update',
    sql: `
      -- A thread's updatedAt is the later of its row's updated_at and its root head's
      -- time (a step commit moves the head, not the row). Listing by it walked the row's
      -- time index and one of root heads' times (migration 7), whose entry every step
      -- commit rewrote. The row now keeps updatedAt's whole second, written only when it
      -- changes (at most once a second per thread), indexed with the id: listing by
      -- update time walks it and sorts each second's threads by their time, and
      -- updatedAt: { from } in id order reads the ids of the seconds since from it alone.
      ALTER TABLE cairn_threads ADD COLUMN updated_second INTEGER NOT NULL DEFAULT 0;
      UPDATE cairn_threads SET updated_second = CAST(max(updated_at, coalesce((SELECT h.created_at FROM cairn_heads h WHERE h.tid = cairn_threads.tid AND h.ns = ''), 0)) AS INTEGER) / 1000;
      CREATE INDEX cairn_threads_by_second ON cairn_threads (updated_second, id);
      DROP INDEX cairn_heads_by_time;
    `,
  },
  {
    id: 13,
    name: 'item packs',
    sql: `
      -- A second copy of a field's items over a span of positions, as one text (an
      -- encrypted engine's sealed packs, stored as bytes like sealed items): a load reads
      -- a few packs, not thousands of rows. The item rows stay the record; a pack goes
      -- with any position it spans (deleteThread, compaction).
      CREATE TABLE cairn_item_packs (
        id       INTEGER PRIMARY KEY,
        tid      INTEGER NOT NULL,
        ns       TEXT NOT NULL,
        field    TEXT NOT NULL,
        from_seq INTEGER NOT NULL,
        to_seq   INTEGER NOT NULL,
        count    INTEGER NOT NULL,
        body     TEXT NOT NULL
      );
      CREATE UNIQUE INDEX cairn_item_packs_by_span ON cairn_item_packs (tid, ns, field, from_seq);
    `,
  },
];

/**
 * Applies every migration not yet recorded. Safe to call from many processes at once:
 * everything, the creation of `cairn_migrations` included, happens under the write
 * lock, so a second opener waits (busy timeout) and then finds the work done.
 * DatabaseFromFutureError, with nothing applied, when the database records a migration
 * not in `migrations` (a newer cairn migrated it); `location` names the database in it.
 */
export function migrate(db: SqliteDatabase, migrations: readonly Migration[] = SQLITE_MIGRATIONS, location = 'this SQLite database'): number[] {
  const apply = db.transaction(() => {
    db.exec('CREATE TABLE IF NOT EXISTS cairn_migrations (id INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)');
    const rows = db.prepare('SELECT id, name FROM cairn_migrations ORDER BY id').all() as { id: number; name: string }[];
    const known = new Set(migrations.map((m) => m.id));
    const unknown = rows.filter((row) => !known.has(row.id));
    if (unknown.length) throw new DatabaseFromFutureError(location, unknown.map((row) => row.id), Math.max(0, ...known), { engine: 'sqlite' }, unknown.at(-1)!.name);
    const applied = new Set(rows.map((row) => row.id));
    const done: number[] = [];
    for (const migration of migrations) {
      if (applied.has(migration.id)) continue;
      db.exec(migration.sql);
      db.prepare('INSERT INTO cairn_migrations (id, name, applied_at) VALUES (?, ?, ?)').run(migration.id, migration.name, Date.now());
      done.push(migration.id);
    }
    return done;
  });
  return apply.immediate();
}
