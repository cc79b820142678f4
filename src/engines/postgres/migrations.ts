/**
 * @module engines/postgres/migrations
 * The PostgreSQL schema as an ordered list of migrations, applied in one
 * transaction under a transaction-scoped advisory lock (so workers starting
 * together apply each migration once, and the others wait and then see it done)
 * and recorded in `cairn_migrations`. Append new migrations; never edit an applied one.
 *
 * The logical schema is SQLite's: a namespace's head is its highest seq (a step
 * commit never rewrites the thread row), append items are stored once by the
 * position that wrote them, snapshots beside the log. Bodies stay `text`: the
 * chain hashes their exact bytes, and `jsonb` would reorder and reformat them.
 * Text that is ordered or range-scanned (`id`, `ns`, `key`, `task`, `field`) is
 * `COLLATE "C"`: byte order, the same as SQLite's and independent of the
 * database's locale, which the store's label-bounded prefix scan depends on.
 */
import { DatabaseFromFutureError } from '../../errors.js';
import type { PoolClientLike, PoolLike } from './driver.js';

/** One step of the PostgreSQL schema: its id, its name and its statements. */
export interface PostgresMigration {
  id: number;
  name: string;
  /** The statements, given the quoted schema name to qualify every table with. */
  sql: (schema: string) => string;
}

/** Every migration of the PostgreSQL schema, in order; each runs once, in a transaction, under an advisory lock. */
export const POSTGRES_MIGRATIONS: readonly PostgresMigration[] = [
  {
    id: 1,
    name: 'thread log, ledger and store',
    sql: (s) => `
      CREATE TABLE ${s}.cairn_threads (
        tid         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        id          text COLLATE "C" NOT NULL UNIQUE,
        kind        text NOT NULL,
        status      text NOT NULL,
        attempts    integer NOT NULL DEFAULT 0,
        tenant      text,
        metadata    text NOT NULL,
        last_error  text,
        run_id      text,
        owner_pid   integer,
        owner_host  text,
        lease_until bigint,
        epoch       bigint NOT NULL DEFAULT 0,
        created_at  bigint NOT NULL,
        updated_at  bigint NOT NULL
      );
      CREATE INDEX cairn_threads_by_status ON ${s}.cairn_threads (status, id);

      -- The (tid, ns, seq) key is the last line of defence against a fork: two commits
      -- that both passed the head check cannot both insert the same seq.
      CREATE TABLE ${s}.cairn_positions (
        tid            bigint NOT NULL,
        ns             text COLLATE "C" NOT NULL,
        seq            bigint NOT NULL,
        parent         bigint,
        segment        bigint NOT NULL,
        step           bigint NOT NULL,
        schema_version integer NOT NULL,
        created_at     bigint NOT NULL,
        body           text NOT NULL,
        hash           bytea NOT NULL,
        CONSTRAINT cairn_positions_pkey PRIMARY KEY (tid, ns, seq)
      );

      CREATE TABLE ${s}.cairn_items (
        tid   bigint NOT NULL,
        ns    text COLLATE "C" NOT NULL,
        field text COLLATE "C" NOT NULL,
        seq   bigint NOT NULL,
        idx   integer NOT NULL,
        body  text NOT NULL,
        PRIMARY KEY (tid, ns, field, seq, idx)
      );

      CREATE TABLE ${s}.cairn_snapshots (
        tid  bigint NOT NULL,
        ns   text COLLATE "C" NOT NULL,
        seq  bigint NOT NULL,
        body text NOT NULL,
        PRIMARY KEY (tid, ns, seq)
      );

      CREATE TABLE ${s}.cairn_pending (
        tid      bigint NOT NULL,
        ns       text COLLATE "C" NOT NULL,
        base_seq bigint NOT NULL,
        task     text COLLATE "C" NOT NULL,
        body     text NOT NULL,
        PRIMARY KEY (tid, ns, base_seq, task)
      );

      CREATE TABLE ${s}.cairn_failures (
        id   bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        tid  bigint NOT NULL,
        body text NOT NULL
      );
      CREATE INDEX cairn_failures_by_thread ON ${s}.cairn_failures (tid, id);

      CREATE TABLE ${s}.cairn_ledger (
        tid          bigint NOT NULL,
        key          text COLLATE "C" NOT NULL,
        kind         text NOT NULL,
        name         text NOT NULL,
        ns           text COLLATE "C" NOT NULL,
        seq          bigint NOT NULL,
        node         text NOT NULL,
        task         text COLLATE "C" NOT NULL,
        call         integer NOT NULL,
        args_digest  text,
        status       text NOT NULL,
        outcome      text,
        created_at   bigint NOT NULL,
        completed_at bigint,
        PRIMARY KEY (tid, key)
      );
      CREATE INDEX cairn_ledger_by_task ON ${s}.cairn_ledger (tid, ns, seq, task, call);

      -- A deleted item keeps its row (flagged) so that its version never goes backwards.
      CREATE TABLE ${s}.cairn_store (
        ns             text COLLATE "C" NOT NULL,
        key            text COLLATE "C" NOT NULL,
        value          text NOT NULL,
        version        bigint NOT NULL,
        deleted        boolean NOT NULL DEFAULT false,
        last_write_key text,
        created_at     bigint NOT NULL,
        updated_at     bigint NOT NULL,
        PRIMARY KEY (ns, key)
      );
    `,
  },
  {
    id: 2,
    name: 'store expiry, lastWins overwrite records and the JSON view of values',
    sql: (s) => `
      -- When an item starts reading as absent (ms since the epoch); NULL: never.
      ALTER TABLE ${s}.cairn_store ADD COLUMN expires_at bigint;
      CREATE INDEX cairn_store_by_expiry ON ${s}.cairn_store (expires_at) WHERE expires_at IS NOT NULL;

      -- What a write in a lastWins namespace replaced, kept so that no overwrite is silent.
      CREATE TABLE ${s}.cairn_store_overwrites (
        id                     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
        ns                     text COLLATE "C" NOT NULL,
        key                    text COLLATE "C" NOT NULL,
        operation              text NOT NULL,
        expected_version       bigint NOT NULL,
        overwritten_version    bigint,
        overwritten_value      text,
        overwritten_updated_at bigint,
        version                bigint NOT NULL,
        at                     bigint NOT NULL
      );
      CREATE INDEX cairn_store_overwrites_by_ns ON ${s}.cairn_store_overwrites (ns, id);

      -- A stored value as jsonb, for search filters. Values stay text (see above); jsonb
      -- refuses the escape \\u0000, so an escaped NUL (one preceded by an even number of
      -- backslashes) becomes U+FFFD here: a search never fails on a value it cannot cast.
      -- Filters cannot name U+0000 (they are validated), so nothing can match the difference.
      CREATE FUNCTION ${s}.cairn_json(v text) RETURNS jsonb LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $fn$
        SELECT CASE WHEN strpos(v, '\\u0000') = 0 THEN v::jsonb
                    ELSE regexp_replace(v, '(?<!\\\\)((?:\\\\\\\\)*)\\\\u0000', '\\1\\\\ufffd', 'g')::jsonb END
      $fn$;
    `,
  },
  {
    id: 3,
    name: 'thread listing indexes',
    sql: (s) => `
      -- listThreads by tenant and by creation time, in id order; retention by update time.
      CREATE INDEX cairn_threads_by_tenant ON ${s}.cairn_threads (tenant, id);
      CREATE INDEX cairn_threads_by_created ON ${s}.cairn_threads (created_at, id);
      CREATE INDEX cairn_threads_by_updated ON ${s}.cairn_threads (updated_at);
      -- Metadata filters are one containment test (scalar values only, so it is equality).
      CREATE INDEX cairn_threads_by_metadata ON ${s}.cairn_threads USING gin ((${s}.cairn_json(metadata)) jsonb_path_ops);
    `,
  },
  {
    id: 4,
    name: 'the JSON view of values maps lone surrogates to U+FFFD',
    sql: (s) => `
      -- cairn_json again, now also for lone surrogates. JSON text escapes them (\\ud800),
      -- which jsonb refuses: one such value made every filtered search of its namespace,
      -- and any thread with one in its metadata, fail. A real escape (one preceded by an
      -- even number of backslashes) of U+0000, of a high surrogate not followed by a low
      -- one, or of a low surrogate not preceded by a high one becomes U+FFFD here. Filters
      -- cannot name either (they are validated), so nothing can match the difference.
      -- The first test keeps the common rows (no escape, or only other ones) off the
      -- regexes; plpgsql rather than sql, whose per-call start-up cost more than the cast.
      -- Every row the old function accepted maps to the same jsonb, so the metadata index
      -- needs no rebuild: rows it refused could not be written to that table at all.
      CREATE OR REPLACE FUNCTION ${s}.cairn_json(v text) RETURNS jsonb LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $fn$
      BEGIN
        IF strpos(v, '\\u') = 0 OR (strpos(v, '\\u0000') = 0 AND strpos(v, '\\ud') = 0 AND strpos(v, '\\uD') = 0) THEN
          RETURN v::jsonb;
        END IF;
        RETURN regexp_replace(
          regexp_replace(v, '(?<!\\\\)((?:\\\\\\\\)*)\\\\u(?:0000|[dD][89abAB][0-9a-fA-F]{2}(?!\\\\u[dD][c-fC-F][0-9a-fA-F]{2}))', '\\1\\\\ufffd', 'g'),
          '(?<!\\\\)((?:\\\\\\\\)*)(?<!(?:^|[^\\\\])(?:\\\\\\\\)*\\\\u[dD][89abAB][0-9a-fA-F]{2})\\\\u[dD][c-fC-F][0-9a-fA-F]{2}', '\\1\\\\ufffd', 'g')::jsonb;
      END
      $fn$;
    `,
  },
  {
    id: 5,
    name: 'anchored namespace heads',
    sql: (s) => `
      -- Each namespace's head (seq, chain hash, time), written by the commit that moves
      -- it, so that a truncated log is an error rather than an older head. Its key is
      -- not updated by a commit, so the row is rewritten in place (a HOT update).
      CREATE TABLE ${s}.cairn_heads (
        tid        bigint NOT NULL,
        ns         text COLLATE "C" NOT NULL,
        seq        bigint NOT NULL,
        hash       bytea NOT NULL,
        created_at bigint NOT NULL,
        PRIMARY KEY (tid, ns)
      ) WITH (fillfactor = 50);
      INSERT INTO ${s}.cairn_heads (tid, ns, seq, hash, created_at)
        SELECT DISTINCT ON (tid, ns) tid, ns, seq, hash, created_at FROM ${s}.cairn_positions ORDER BY tid, ns, seq DESC;
    `,
  },
  {
    id: 6,
    name: 'durable waits: wake times and signals',
    sql: (s) => `
      -- When a waiting thread becomes due (ms since the epoch); NULL: not waiting, or
      -- waiting for a signal only. Claims find due waiting threads through the partial
      -- index, which holds waiting threads only.
      ALTER TABLE ${s}.cairn_threads ADD COLUMN wake_at bigint;
      CREATE INDEX cairn_threads_due ON ${s}.cairn_threads (wake_at) WHERE status = 'waiting';

      -- The id of the thread's newest signal. A send counts it up in an UPDATE of the
      -- thread row, so ids are handed out under the row lock, and a commit that starts a
      -- wait reads it in its locking fence: at READ COMMITTED the fence sees the newest
      -- row version, where a count of the signals table would read the statement's older snapshot.
      ALTER TABLE ${s}.cairn_threads ADD COLUMN last_signal bigint NOT NULL DEFAULT 0;

      -- Signals queued for a thread, 1, 2, 3... per thread, kept once consumed (by which wait, when).
      CREATE TABLE ${s}.cairn_signals (
        tid         bigint NOT NULL,
        id          bigint NOT NULL,
        name        text COLLATE "C" NOT NULL,
        payload     text NOT NULL,
        sent_at     bigint NOT NULL,
        consumed_by text COLLATE "C",
        consumed_at bigint,
        PRIMARY KEY (tid, id)
      );
    `,
  },
  {
    id: 7,
    name: 'threads listed by update time',
    sql: (s) => `
      -- A thread's updatedAt is the later of its row's updated_at and its root head's
      -- time. Listing by it walks two indexes, one per side (see queryThreads): the row's
      -- (cairn_threads_by_updated) and this one. Root heads only, so a child run's commit
      -- leaves it alone.
      CREATE INDEX cairn_heads_by_time ON ${s}.cairn_heads (created_at) WHERE ns = '';
    `,
  },
  {
    id: 8,
    name: 'what a recorded output was',
    sql: (s) => `
      -- JSON of a record's RecordMeta (kind, model, usage, latency); NULL: nothing said,
      -- as for every entry written before this column. Text, like the bodies: read back
      -- as written, never queried by its fields.
      ALTER TABLE ${s}.cairn_ledger ADD COLUMN meta text;
    `,
  },
  {
    id: 9,
    name: 'the tenant of every row a thread owns',
    sql: (s) => `
      -- The tenant of the thread a row belongs to, copied from the thread row by every
      -- statement that inserts one (each reads that row anyway, to fence or to find
      -- the tid), so that a row-level security policy (enableRowLevelSecurity) is one
      -- comparison per row rather than a look-up of the thread. NULL: a thread without a
      -- tenant, or a row written before this migration (enableRowLevelSecurity fills
      -- those in). Adding a NULL column rewrites nothing.
      ALTER TABLE ${s}.cairn_heads ADD COLUMN tenant text;
      ALTER TABLE ${s}.cairn_positions ADD COLUMN tenant text;
      ALTER TABLE ${s}.cairn_items ADD COLUMN tenant text;
      ALTER TABLE ${s}.cairn_snapshots ADD COLUMN tenant text;
      ALTER TABLE ${s}.cairn_pending ADD COLUMN tenant text;
      ALTER TABLE ${s}.cairn_failures ADD COLUMN tenant text;
      ALTER TABLE ${s}.cairn_ledger ADD COLUMN tenant text;
      ALTER TABLE ${s}.cairn_signals ADD COLUMN tenant text;

      -- The tenant a store row belongs to, from its namespace and key: ['tenant', <t>, ...]
      -- (tenantPrefixPolicy's default root) is <t>'s; so is a row of cairn's own
      -- namespaces (['cairn', ...]) keyed 'tenant:<t, URI-encoded>/...', as the artifact
      -- pins of a tenant's artifacts are; everything else is shared (NULL).
      -- Plain SQL and not STRICT, so a policy inlines it; only a pin's tenant is decoded (in plpgsql, so
      -- that a key that is not valid percent-encoded UTF-8 gives NULL, never an error
      -- that would fail every scan of the namespace).
      CREATE FUNCTION ${s}.cairn_uri_decode(v text) RETURNS text LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $fn$
      BEGIN
        RETURN convert_from(coalesce((
          SELECT string_agg(CASE WHEN m[1] IS NOT NULL THEN decode(substr(m[1], 2), 'hex') ELSE convert_to(m[2], 'UTF8') END, ''::bytea ORDER BY n)
          FROM regexp_matches(v, '(%[0-9A-Fa-f]{2})|([^%]+)', 'g') WITH ORDINALITY AS r (m, n)), ''::bytea), 'UTF8');
      EXCEPTION WHEN others THEN
        RETURN NULL;
      END
      $fn$;
      CREATE FUNCTION ${s}.cairn_store_tenant(ns text, key text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $fn$
        SELECT CASE
          WHEN starts_with(ns, E'tenant\\x1f') THEN split_part(ns, E'\\x1f', 2)
          WHEN starts_with(ns, E'cairn\\x1f') AND starts_with(key, 'tenant:') AND strpos(key, '/') > 0
            THEN ${s}.cairn_uri_decode(substr(key, 8, strpos(key, '/') - 8))
        END
      $fn$;
    `,
  },
  {
    id: 10,
    name: 'compaction anchors',
    sql: (s) => `
      -- A compacted namespace's base: the seq and chain hash of the oldest position it
      -- keeps (retention removed those below). NULL: never compacted. Beside the head, in
      -- the row every read of the namespace looks at anyway.
      ALTER TABLE ${s}.cairn_heads ADD COLUMN base_seq bigint, ADD COLUMN base_hash bytea;
    `,
  },
  {
    id: 11,
    name: 'threads listed by the second of their update',
    sql: (s) => `
      -- A thread's updatedAt is the later of its row's updated_at and its root head's
      -- time (a step commit moves the head, not the row). Listing by it walked the row's
      -- time index and one of root heads' times (migration 7), which changed with every
      -- step commit, so no head update could be HOT. The row now keeps updatedAt's whole
      -- second, written only when it changes (at most once a second per thread), indexed
      -- with the id: listing by update time walks it and sorts each second's threads by
      -- their time, and updatedAt: { from } in id order reads the ids of the seconds
      -- since from it; a step commit within the second changes no indexed value of the
      -- head, whose update is HOT.
      ALTER TABLE ${s}.cairn_threads ADD COLUMN updated_second bigint NOT NULL DEFAULT 0;
      UPDATE ${s}.cairn_threads t SET updated_second = greatest(t.updated_at, coalesce(h.created_at, 0)) / 1000
        FROM ${s}.cairn_threads t2 LEFT JOIN ${s}.cairn_heads h ON h.tid = t2.tid AND h.ns = '' WHERE t2.tid = t.tid;
      CREATE INDEX cairn_threads_by_second ON ${s}.cairn_threads (updated_second, id);
      DROP INDEX ${s}.cairn_heads_by_time;
    `,
  },
  {
    id: 12,
    name: 'item packs',
    sql: (s) => `
      -- A second copy of a field's items over a span of positions, as one text: an
      -- encrypted engine's sealed packs, which a load opens instead of thousands of rows.
      -- The item rows stay the record; a pack goes with any position it spans.
      CREATE TABLE ${s}.cairn_item_packs (
        tid      bigint NOT NULL,
        tenant   text,
        ns       text COLLATE "C" NOT NULL,
        field    text COLLATE "C" NOT NULL,
        from_seq bigint NOT NULL,
        to_seq   bigint NOT NULL,
        count    integer NOT NULL,
        body     text NOT NULL,
        PRIMARY KEY (tid, ns, field, from_seq)
      );
      -- A schema under row-level security (enableRowLevelSecurity) gets the new table's
      -- policy now, as that function gives every table a thread owns.
      DO $do$ BEGIN
        IF (SELECT relrowsecurity FROM pg_class WHERE oid = '${s}.cairn_threads'::regclass) THEN
          CREATE POLICY cairn_tenant_isolation ON ${s}.cairn_item_packs AS PERMISSIVE FOR ALL TO PUBLIC
            USING (tenant = nullif(current_setting('cairn.tenant', true), ''))
            WITH CHECK (tenant = nullif(current_setting('cairn.tenant', true), '') AND EXISTS (SELECT 1 FROM ${s}.cairn_threads t WHERE t.tid = cairn_item_packs.tid));
          ALTER TABLE ${s}.cairn_item_packs ENABLE ROW LEVEL SECURITY;
          ALTER TABLE ${s}.cairn_item_packs FORCE ROW LEVEL SECURITY;
        END IF;
      END $do$;
    `,
  },
];

/** First key of cairn's advisory locks (the second is the schema name's hash): "cairn" in ASCII. */
export const LOCK_CLASS = 0x63616972;

/** `"name"` with inner quotes doubled: a safe identifier whatever the name holds. */
export function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}

/**
 * Applies every migration not yet recorded in `schema`, creating the schema if needed.
 * Safe to call from many processes at once. Returns the ids it applied.
 *
 * A schema that is already current (every open but the first of each cairn version)
 * is seen so in two reads on the pool, without a transaction or the lock: a
 * migration's row is committed with the migration, so a listing that holds every
 * known id and no other needs nothing done. Anything else (no table yet, a migration
 * missing, one this code does not know) is looked at again under the lock, which
 * decides and reports as before.
 *
 * DatabaseFromFutureError, with nothing applied, when the schema records a migration
 * not in `migrations` (a newer cairn migrated it); `location` names the schema in it.
 */
export async function migrate(pool: PoolLike, schema: string, migrations: readonly PostgresMigration[] = POSTGRES_MIGRATIONS, location = `schema ${schema}`): Promise<number[]> {
  const s = quoteIdent(schema);
  if (await isCurrent(pool, s, migrations)) return [];
  return underSchemaLock(pool, schema, async (client) => {
    // Under the lock, so two first-time openers do not race CREATE SCHEMA. Checked first
    // because an existing schema must not need the CREATE privilege on the database.
    const exists = await client.query({ text: 'SELECT 1 FROM pg_namespace WHERE nspname = $1', values: [schema] });
    if (exists.rowCount === 0) await client.query({ text: `CREATE SCHEMA ${s}` });
    // Looked up first for the same reason: CREATE TABLE IF NOT EXISTS needs CREATE on the
    // schema even when the table is there, and a role that may only read and write
    // cairn's rows (a tenant's, under row-level security) must still open a current schema.
    const table = await client.query({ text: 'SELECT to_regclass($1::text) IS NOT NULL AS present', values: [`${s}.cairn_migrations`] });
    if (!(table.rows[0] as { present: boolean }).present) {
      await client.query({ text: `CREATE TABLE IF NOT EXISTS ${s}.cairn_migrations (id integer PRIMARY KEY, name text NOT NULL, applied_at bigint NOT NULL)` });
    }
    const rows = (await client.query({ text: `SELECT id, name FROM ${s}.cairn_migrations ORDER BY id` })).rows as { id: number; name: string }[];
    const known = new Set(migrations.map((m) => m.id));
    const unknown = rows.filter((row) => !known.has(row.id));
    if (unknown.length) throw new DatabaseFromFutureError(location, unknown.map((row) => row.id), Math.max(0, ...known), { engine: 'postgres' }, unknown.at(-1)!.name);
    const applied = new Set(rows.map((row) => row.id));
    const done: number[] = [];
    for (const migration of migrations) {
      if (applied.has(migration.id)) continue;
      await client.query({ text: migration.sql(s) });
      await client.query({
        text: `INSERT INTO ${s}.cairn_migrations (id, name, applied_at) VALUES ($1, $2, $3)`,
        values: [migration.id, migration.name, Date.now()],
      });
      done.push(migration.id);
    }
    return done;
  });
}

/** True when `s`.cairn_migrations lists exactly the ids of `migrations` (read without the lock; see {@link migrate}). */
async function isCurrent(pool: PoolLike, s: string, migrations: readonly PostgresMigration[]): Promise<boolean> {
  // Asked first so that a schema not made yet costs no failed statement (nor an error in the server's log).
  const table = await pool.query({ text: 'SELECT to_regclass($1::text) IS NOT NULL AS present', values: [`${s}.cairn_migrations`] });
  if (!(table.rows[0] as { present: boolean }).present) return false;
  const rows = (await pool.query({ text: `SELECT id FROM ${s}.cairn_migrations` })).rows as { id: number }[];
  const applied = new Set(rows.map((row) => Number(row.id)));
  return applied.size === migrations.length && migrations.every((m) => applied.has(m.id));
}

/**
 * `work` in one transaction on one connection, holding the schema's migration lock
 * (an advisory transaction lock keyed by {@link LOCK_CLASS} and the schema's name):
 * committed when it returns, rolled back when it throws.
 */
export async function underSchemaLock<T>(pool: PoolLike, schema: string, work: (client: PoolClientLike) => Promise<T>): Promise<T> {
  const client = await pool.connect();
  // A connection that dies while held reports it as an 'error' event too: the failed
  // query already says so, the event must not become an uncaught exception.
  const ignore = () => undefined;
  client.on?.('error', ignore);
  let failed = true;
  try {
    await client.query({ text: 'BEGIN' });
    await client.query({ text: `SELECT pg_advisory_xact_lock(${LOCK_CLASS}, hashtext($1))`, values: [schema] });
    const result = await work(client);
    await client.query({ text: 'COMMIT' });
    failed = false;
    return result;
  } finally {
    // A connection that cannot even roll back is broken: destroy it rather than pool it.
    const broken = failed ? await client.query({ text: 'ROLLBACK' }).then(() => false, () => true) : false;
    client.off?.('error', ignore);
    client.release(broken);
  }
}
