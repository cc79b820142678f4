/**
 * @module engines/postgres/postgres-checkpointer
 * The thread log on PostgreSQL, safe at READ COMMITTED across any number of
 * processes. Every write under a lease is fenced in the statement itself
 * (`run_id` + `epoch` in its WHERE clause, the thread row locked so that a
 * takeover waits for it or it sees the takeover), and a step commit is one
 * statement: one round trip, one implicit transaction.
 */
import { createHash } from 'node:crypto';
import { BaseCheckpointer, judgeCompaction, noneCompacted, noRowsRemoved, type CommitRefusal, type CompactionRefusal, type ConsumptionToStore, type HeldThread, type SignalToStore } from '../../checkpointer/base-checkpointer.js';
import type {
  AcquireRequest,
  AttemptFailure,
  CheckpointerCapabilities,
  ClaimRequest,
  CompactionRequest,
  CompactionResult,
  HeadAnchor,
  ItemPack,
  LeaseHolderQuery,
  PendingWrite,
  PositionItem,
  RangeItem,
  SeqRange,
  StepCommit,
  StoredPosition,
  ThreadPatch,
} from '../../contracts/checkpointer.js';
import type { DeleteThreadResult, LeaseOwner, SignalQuery, StoredSignal, ThreadLease, ThreadRecord, ThreadStatus } from '../../contracts/threads.js';
import { TenantMismatchError, ThreadBusyError } from '../../errors.js';
import { crashPoint } from '../../internal/crash-points.js';
import { holderIsDead, leaseHost } from '../../internal/lease.js';
import { PIN_NAMESPACE_STORED, threadPinSuffix } from '../../internal/pins.js';
import { heldOf, positionOf, rangeClause, secondOf, signalOf, threadOf, type HolderRow, type PositionRow, type SignalRow, type ThreadRow } from '../../internal/sql-rows.js';
import { filtersOnTimeOnly, type NormalizedThreadQuery } from '../../internal/thread-query.js';
import { constraintOf, isConnectionLoss, sqlState, type PostgresConnection } from './connection.js';
import { quoteIdent } from './migrations.js';
import { committedEffectsCte, committedEffectValues } from './postgres-ledger.js';

/** A thread row as read: `bigint` columns arrive as strings. */
interface PgThreadRow extends ThreadRow, HolderRow {
  tid: string;
  lease_until: string | null;
  epoch: string;
  /** The database's clock (ms) when the row was read: leases are judged by one clock, whatever the workers' clocks say. */
  db_now?: string;
}

const num = (value: string | number | null): number | null => (value === null ? null : Number(value));

/** `(seq BETWEEN $n AND $n+1) OR ...` for the ranges (never empty), numbering parameters from `first`. */
const seqRanges = (ranges: SeqRange[], first: number) => rangeClause(ranges, 'seq', (i) => `$${first + i}::bigint`);

/** True when `CAIRN_CRASH_AT` may stop a commit inside its snapshot write (crash tests only). */
function crashInsideSnapshotArmed(): boolean {
  return process.env.CAIRN_CRASH_AT?.startsWith('inside-snapshot') === true;
}

/** Fewer threads updated in the seconds since a time than this are listed from their ids in cairn_threads_by_second (see `pageOfRecent`). */
const FEW_SINCE = 50_000;

/**
 * The thread log contract on PostgreSQL. `postgres(...)` builds one; construct it yourself
 * only to put it on a {@link PostgresConnection} shared with other parts.
 *
 * @example `const cp = new PostgresCheckpointer(new PostgresConnection(pool, { schema: 'cairn' }));`
 */
export class PostgresCheckpointer extends BaseCheckpointer {
  readonly engine = 'postgres';
  readonly capabilities: CheckpointerCapabilities = { claims: true, wakeUps: true, leaseExpiry: true, leaseHolders: true, itemPacks: true };
  private readonly sql: ReturnType<typeof statements>;
  /**
   * The root status and the second of updatedAt each lease last left its thread row
   * with (patched or committed; before either, as granted): whether a commit changes
   * the row, which picks the commit's statement. Only a guess, never trusted: the lean
   * statement checks the row itself.
   */
  private readonly rootRow = new WeakMap<ThreadLease, { status: ThreadStatus; second: number }>();

  constructor(private readonly conn: PostgresConnection) {
    super(conn.lifecycle);
    this.sql = statements(conn);
  }

  private async threadRow(threadId: string, what: string): Promise<PgThreadRow | undefined> {
    return (await this.conn.query<PgThreadRow>(what, this.sql.threadById, [threadId]))[0];
  }

  protected async readThread(threadId: string): Promise<ThreadRecord | null> {
    const row = await this.threadRow(threadId, 'getThread');
    return row ? threadOf(row) : null;
  }

  protected async queryThreads(q: NormalizedThreadQuery): Promise<ThreadRecord[]> {
    const params: unknown[] = [];
    const param = (value: unknown) => `$${params.push(value)}`;
    const { threads: T, heads: H } = this.conn.tables;
    const updatedAt = 'greatest(t.updated_at, h.created_at)';
    const where: string[] = [];
    if (q.statuses) where.push(`t.status = ANY(${param(q.statuses)}::text[])`);
    if (q.kinds) where.push(`t.kind = ANY(${param(q.kinds)}::text[])`);
    if (q.tenant === null) where.push('t.tenant IS NULL');
    else if (q.tenant !== undefined) where.push(`t.tenant = ${param(q.tenant)}::text`);
    // One containment test for every key: with scalar values, containment is equality (and the GIN index serves it).
    if (q.metadata.length) where.push(`${this.sql.json}(t.metadata) @> ${param(JSON.stringify(Object.fromEntries(q.metadata)))}::jsonb`);
    // A range, not LIKE: the id index (COLLATE "C", code point order) finds the first match and stops past the last.
    if (q.ids) where.push(`t.id >= ${param(q.ids.from)}::text`);
    if (q.ids?.to) where.push(`t.id < ${param(q.ids.to)}::text`);
    if (q.created.from !== null) where.push(`t.created_at >= ${param(q.created.from)}::bigint`);
    if (q.created.to !== null) where.push(`t.created_at < ${param(q.created.to)}::bigint`);
    // The row's second of updatedAt bounds it on both sides from the row alone; the exact time decides within the second.
    if (q.updated.from !== null) where.push(`t.updated_second >= ${param(secondOf(q.updated.from))}::bigint AND ${updatedAt} >= ${param(q.updated.from)}::bigint`);
    if (q.updated.to !== null) where.push(`t.updated_second <= ${param(secondOf(q.updated.to))}::bigint AND ${updatedAt} < ${param(q.updated.to)}::bigint`);
    if (q.order === 'id') {
      if (q.after) where.push(`t.id > ${param(q.after.id)}::text`);
      const filter = where.length ? `WHERE ${where.join(' AND ')}` : '';
      // Not prepared: the filters make many shapes of this text, and each is planned for its values.
      const recent = q.updated.from === null ? null : await this.pageOfRecent(q, secondOf(q.updated.from), where, params);
      if (recent) return recent;
      const text = `${this.sql.threadSelect} ${filter} ORDER BY t.id LIMIT ${param(q.limit)}::bigint`;
      return (await this.conn.query<PgThreadRow>('listThreads', text, params, false)).map(threadOf);
    }
    // updatedAt is the later of the row's time and the root head's; the row keeps its
    // second (updated_second), so the walk goes down cairn_threads_by_second and sorts
    // each second's threads by their exact updatedAt (an incremental sort, which stops
    // with the page).
    if (q.after) {
      const at = param(q.after.updatedAt);
      // The second bounds the index range; the rest picks within its first time.
      where.push(`t.updated_second <= ${param(secondOf(q.after.updatedAt!))}::bigint AND ${updatedAt} <= ${at}::bigint AND (${updatedAt} < ${at}::bigint OR t.id > ${param(q.after.id)}::text)`);
    }
    const text = `${this.sql.threadSelect} ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY t.updated_second DESC, ${updatedAt} DESC, t.id LIMIT ${param(q.limit)}::bigint`;
    return (await this.conn.query<PgThreadRow>('listThreads', text, params, false)).map(threadOf);
  }

  /**
   * An id-ordered page of threads updated in `second` or later, when fewer than
   * FEW_SINCE are (the reasoning and the batches are the SQLite engine's, in its
   * pageOfRecent): their ids from cairn_threads_by_second, sorted, a batch at a time,
   * each batch's threads looked up and filtered until the page is full. Null when there
   * are more: walking the id index finds a page sooner. The count and the first batch
   * come in one round trip (two index-only scans, cheaper than one materialized).
   */
  private async pageOfRecent(q: NormalizedThreadQuery, second: number, where: string[], params: unknown[]): Promise<ThreadRecord[] | null> {
    const { threads: T, heads: H } = this.conn.tables;
    const { limit } = q;
    let after = q.after?.id ?? ''; // every id sorts after ''
    const count = `SELECT count(*) FROM (SELECT 1 FROM ${T} WHERE updated_second >= $1::bigint AND id > $2::text LIMIT $3::bigint) s`;
    if (!filtersOnTimeOnly(q) || limit === null) {
      // Other filters may keep few of the recent threads, and the ids alone cannot tell:
      // the threads of those seconds are read through the index (OFFSET 0 keeps the
      // planner to it), filtered and sorted in one statement.
      const [few] = await this.conn.query<{ n: string }>('listThreads', `SELECT (${count}) AS n`, [second, after, FEW_SINCE], false);
      if (Number(few!.n) >= FEW_SINCE) return null;
      const text = `SELECT ${this.sql.threadColumns}, h.seq AS head, h.created_at AS head_at
        FROM (SELECT * FROM ${T} WHERE updated_second >= $${params.length + 1}::bigint OFFSET 0) t LEFT JOIN ${H} h ON h.tid = t.tid AND h.ns = ''
        ${where.length ? `WHERE ${where.join(' AND ')}` : ''} ORDER BY t.id LIMIT $${params.length + 2}::bigint`;
      return (await this.conn.query<PgThreadRow>('listThreads', text, [...params, second, limit], false)).map(threadOf);
    }
    const lookup = `${this.sql.threadSelect} WHERE t.id = ANY($${params.length + 1}::text[]) ${where.map((w) => `AND ${w}`).join(' ')} ORDER BY t.id`;
    let batch = 2 * limit + 16;
    const page: PgThreadRow[] = [];
    const [first] = await this.conn.query<{ n: string; ids: string[] }>(
      'listThreads',
      `SELECT (${count}) AS n, ARRAY(SELECT id FROM ${T} WHERE updated_second >= $1::bigint AND id > $2::text ORDER BY id LIMIT $4::bigint) AS ids`,
      [second, after, FEW_SINCE, batch],
      false, // planned for its values: a generic plan would scan the table for a time no thread reached
    );
    if (Number(first!.n) >= FEW_SINCE) return null;
    let ids = first!.ids;
    for (;;) {
      if (ids.length) page.push(...(await this.conn.query<PgThreadRow>('listThreads', lookup, [...params, ids], false)));
      if (ids.length < batch || page.length >= limit) break;
      after = ids.at(-1)!;
      batch *= 4;
      ids = (
        await this.conn.query<{ id: string }>('listThreads', `SELECT id FROM ${T} WHERE updated_second >= $1::bigint AND id > $2::text ORDER BY id LIMIT $3::bigint`, [second, after, batch], false)
      ).map((row) => row.id);
    }
    return page.slice(0, limit).map(threadOf);
  }

  protected async removeThread(threadId: string, judge: (held: HeldThread | null) => DeleteThreadResult | null): Promise<DeleteThreadResult> {
    // The thread row is locked first, in a statement of its own; every write of the
    // thread (commits, pending writes, snapshots, thread updates, ledger inserts) locks
    // that row too, so it waits and then finds no thread. The deletes come in a later
    // statement, whose snapshot (READ COMMITTED) holds every write that came before the lock.
    return this.conn.transaction('deleteThread', async (query) => {
      const [row] = (await query(this.sql.lockForDelete, [threadId])) as (HolderRow & { tid: string; tenant: string | null; db_now: string })[];
      this.checkTenant(threadId, row);
      const now = row ? Number(row.db_now) : Date.now();
      const verdict = judge(row ? heldOf(row, now) : null);
      if (verdict || !row) return verdict ?? { deleted: false, threadId, reason: 'missing' };
      const [counts] = (await query(this.sql.deleteThread, [row.tid, PIN_NAMESPACE_STORED, threadPinSuffix(threadId), now])) as Record<string, string>[];
      const removed = noRowsRemoved();
      for (const key of Object.keys(removed) as (keyof typeof removed)[]) removed[key] = Number(counts![key.toLowerCase()]);
      return { deleted: true, threadId, removed };
    });
  }

  protected async readFailures(threadId: string): Promise<AttemptFailure[]> {
    const rows = await this.conn.query<{ body: string }>('listFailures', this.sql.failures, [threadId]);
    return rows.map((row) => JSON.parse(row.body) as AttemptFailure);
  }

  /**
   * An engine scoped to a tenant touches only that tenant's threads: a row it can see
   * of another tenant (no row-level security on the tables) is refused here.
   */
  private checkTenant(threadId: string, row: { tenant: string | null } | undefined): void {
    const scoped = this.conn.tenant;
    if (scoped !== null && row && row.tenant !== scoped) throw new TenantMismatchError(threadId, scoped, row.tenant, { engine: this.engine });
  }

  protected async acquire(threadId: string, request: AcquireRequest, admit: (held: HeldThread | null) => 'create' | 'take'): Promise<ThreadLease> {
    const { owner, leaseMs } = request;
    // A tenant's engine creates its tenant's threads: one asked for without a tenant gets it.
    const scoped = this.conn.tenant;
    const tenant = request.create ? (request.create.tenant ?? scoped) : null;
    if (scoped !== null && request.create && tenant !== scoped) throw new TenantMismatchError(threadId, scoped, tenant, { engine: this.engine });
    let unseen = 0;
    // Lock-free: read the holder, decide in JS (a same-host holder's liveness needs a
    // process check the database cannot make), then take the thread with a
    // compare-and-set on exactly what was read. At READ COMMITTED an UPDATE re-checks its
    // WHERE against the latest committed row (and waits for an in-flight writer), so of
    // two racing acquirers one matches and the other updates nothing and reads again. A
    // renewal, a release or a commit's share lock in between also fails the CAS or makes
    // it wait: nothing slips between the check and the take.
    for (let round = 0; round < 50; round++) {
      const row = await this.threadRow(threadId, 'acquireThread');
      this.checkTenant(threadId, row);
      // Leases live on the database's clock: one clock for every machine.
      const now = row ? Number(row.db_now) : Date.now();
      // Our own take, whose reply a dropped connection swallowed: it is ours.
      if (row && row.run_id === owner.runId) {
        return { threadId, runId: owner.runId, epoch: Number(row.epoch), expiresAt: num(row.lease_until) ?? now + leaseMs, thread: threadOf(row) };
      }
      if (admit(row ? heldOf(row, now) : null) === 'create') {
        const { kind, metadata, createdAt = now, updatedAt = createdAt } = request.create!;
        const [created] = await this.conn.query<PgThreadRow>('acquireThread (create)', this.sql.createThread, [
          threadId,
          kind,
          tenant,
          JSON.stringify(metadata),
          owner.runId,
          owner.pid,
          owner.host,
          leaseMs,
          createdAt,
          updatedAt,
        ]);
        if (created) return { threadId, runId: owner.runId, epoch: Number(created.epoch), expiresAt: Number(created.lease_until), thread: threadOf(created) };
        // The id is taken, yet no row was read: under row-level security, by a thread of
        // another tenant (twice in a row, so that a thread deleted in between is not one).
        if (scoped !== null && !row && ++unseen >= 2) throw new TenantMismatchError(threadId, scoped, undefined, { engine: this.engine });
        continue; // created by a concurrent acquirer: judge its holder
      }
      const [taken] = await this.conn.query<{ epoch: string; lease_until: string }>('acquireThread (take)', this.sql.takeThread, [
        row!.tid,
        row!.epoch,
        row!.run_id,
        row!.lease_until,
        owner.runId,
        owner.pid,
        owner.host,
        leaseMs,
      ]);
      if (!taken) continue; // the row changed since it was read: judge it again
      // Read the record after the take: a commit by the previous holder that finished
      // while the take waited for its lock is visible only to a new statement.
      const granted = (await this.threadRow(threadId, 'acquireThread (read)'))!;
      return { threadId, runId: owner.runId, epoch: Number(taken.epoch), expiresAt: Number(taken.lease_until), thread: threadOf(granted) };
    }
    throw new ThreadBusyError(threadId, 'other runs keep changing its lease', { engine: this.engine });
  }

  protected async renew(lease: ThreadLease, leaseMs: number): Promise<number | null> {
    const rows = await this.conn.query<{ lease_until: string }>('renewLease', this.sql.renew, [lease.threadId, lease.runId, lease.epoch, leaseMs]);
    return rows.length === 1 ? Number(rows[0]!.lease_until) : null;
  }

  protected async release(lease: ThreadLease): Promise<void> {
    // Releasing a thread that still has work wakes the workers (NOTIFY, sent at commit).
    await this.conn.query('releaseThread', this.sql.release, [lease.threadId, lease.runId, lease.epoch, this.channel]);
  }

  /** The NOTIFY channel of this schema's runnable threads. */
  private get channel(): string {
    return `cairn_runnable_${createHash('sha1').update(this.conn.schema).digest('hex').slice(0, 20)}`;
  }

  protected override async claim(request: ClaimRequest): Promise<ThreadLease[]> {
    const { owner, leaseMs, limit, graph } = request;
    // The database cannot see whether a process lives: the named holders are judged
    // here, and the statement takes only threads still held by exactly those (run id,
    // pid) pairs. A run id is never reused, so a thread taken since by a live run
    // (whatever its pid) does not match.
    const dead = (request.deadHolders ?? []).filter((holder) => holderIsDead(holder));
    const claimed = await this.conn.query<PgThreadRow>('claimThreads', this.sql.claim, [
      owner.runId,
      owner.pid,
      owner.host,
      leaseMs,
      limit,
      graph ?? null,
      dead.map((holder) => holder.runId),
      dead.map((holder) => holder.pid),
      leaseHost(),
    ]);
    return claimed.map((row) => {
      const thread = threadOf(row);
      return { threadId: thread.id, runId: owner.runId, epoch: Number(row.epoch), expiresAt: Number(row.lease_until), thread };
    });
  }

  protected override async earliestLeaseExpiry(graph: string | undefined): Promise<number | null> {
    const [row] = await this.conn.query<{ at: string | null }>('nextLeaseExpiry', this.sql.nextExpiry, [graph ?? null]);
    return row?.at === null || row?.at === undefined ? null : Number(row.at);
  }

  protected override async listHolders(query: LeaseHolderQuery): Promise<LeaseOwner[]> {
    const rows = await this.conn.query<{ run_id: string; owner_pid: number }>('leaseHolders', this.sql.holders, [query.host, query.graph ?? null]);
    return rows.map((row) => ({ runId: row.run_id, pid: row.owner_pid, host: query.host }));
  }

  protected override async watchRunnable(listener: (threadId: string) => void): Promise<() => Promise<void>> {
    return this.conn.listen(this.channel, listener);
  }

  protected async update(lease: ThreadLease, patch: ThreadPatch): Promise<ThreadRecord | null> {
    const [row] = await this.conn.query<PgThreadRow>('updateThread', this.sql.update, [
      lease.threadId,
      lease.runId,
      lease.epoch,
      patch.status ?? null,
      patch.attempts ?? 0,
      patch.lastError !== undefined,
      patch.lastError ? JSON.stringify(patch.lastError) : null,
      patch.updatedAt ?? Date.now(),
      patch.failure ? JSON.stringify(patch.failure) : null,
      patch.wakeAt !== undefined,
      patch.wakeAt ?? null,
      patch.signalsSeen ?? null,
    ]);
    if (!row) return null;
    const record = threadOf(row);
    this.rootRow.set(lease, { status: record.status, second: secondOf(record.updatedAt) });
    return record;
  }

  protected async commit(lease: ThreadLease, commit: StepCommit): Promise<CommitRefusal | undefined> {
    const { position } = commit;
    const known = this.rootRow.get(lease) ?? (lease.thread ? { status: lease.thread.status, second: secondOf(lease.thread.updatedAt) } : undefined);
    const second = secondOf(position.createdAt);
    // The common step goes on the lean statement, which refuses (writing nothing) a
    // root commit that would change the thread row after all (its status, wake time or
    // second of updatedAt); the full one follows then.
    const lean = commit.expectedHead !== null && (position.ns !== '' || (commit.status === known?.status && commit.status !== 'waiting' && second <= known.second));
    // Not lean: as if the lean statement had found a status to write.
    const sent = lean ? await this.sendCommit(lease, commit, 'lean') : 'status';
    if (sent === 'lease') return { reason: 'lease' };
    if (sent === 'landed' || (sent === 'status' && (await this.sendCommit(lease, commit, 'full')) === 'landed')) {
      if (position.ns === '') this.rootRow.set(lease, { status: commit.status, second: Math.max(second, known?.second ?? second) });
      if (commit.packs?.length) await this.storePacks(lease, commit);
      return undefined;
    }
    // Nothing was written. Only now, a second cheap query says why.
    const [state] = await this.conn.query<{ held: boolean | null; head: string | null }>('commitStep (diagnose)', this.sql.diagnose, [
      lease.threadId,
      lease.runId,
      lease.epoch,
      position.ns,
    ]);
    return state?.held ? { reason: 'head', head: num(state.head) } : { reason: 'lease' };
  }

  /**
   * A landed commit's packs, in a statement of their own, fenced as a commit is (a lease
   * taken over since, by a takeover or an erasure, writes none). Not in the commit's
   * statement, which stays one round trip for the steps that carry none: a pack is a
   * copy of rows already committed, so one lost to a crash or a failed statement costs
   * only the speed of the loads that would have read it, and its error is not the step's.
   */
  private async storePacks(lease: ThreadLease, commit: StepCommit): Promise<void> {
    const packs = commit.packs!;
    try {
      await this.conn.query('commitStep (packs)', this.sql.insertPacks, [
        lease.threadId,
        lease.runId,
        lease.epoch,
        commit.position.ns,
        commit.position.seq,
        packs.map((p) => p.field),
        packs.map((p) => p.fromSeq),
        packs.map((p) => p.count),
        packs.map((p) => p.text),
      ]);
    } catch {
      // See above: the rows are the record.
    }
  }

  /**
   * Sends a step commit on the lean statement or the full one (see statements): whether
   * it landed, or why it wrote nothing when it can tell (the lean one: the lease is
   * lost, or the root status changes, which is the full one's to write); `refused` when
   * it cannot (the head moved, or the full one's refusals).
   */
  private async sendCommit(lease: ThreadLease, commit: StepCommit, shape: 'lean' | 'full'): Promise<'landed' | 'refused' | 'lease' | 'status'> {
    const { position, items } = commit;
    const values: unknown[] = [
      lease.threadId,
      lease.runId,
      lease.epoch,
      position.ns,
      position.seq,
      position.parent,
      position.segment,
      position.step,
      position.schemaVersion,
      position.createdAt,
      position.body,
      position.hash,
      commit.expectedHead,
    ];
    // Only a commit with effects pays for the ledger upsert; the others run the statement without it.
    const withEffects = commit.effects !== undefined && commit.effects.length > 0;
    let statement: string;
    if (shape === 'lean') {
      const oneItem = items.length === 1;
      if (oneItem) values.push(items[0]!.field, items[0]!.index, items[0]!.text);
      else values.push(items.map((i) => i.field), items.map((i) => i.index), items.map((i) => i.text));
      values.push(commit.status);
      if (commit.snapshot !== undefined) values.push(commit.snapshot);
      statement = this.sql.leanCommit({ oneItem, snapshot: commit.snapshot !== undefined, effects: withEffects });
    } else {
      values.push(items.map((i) => i.field), items.map((i) => i.index), items.map((i) => i.text), commit.snapshot ?? null, commit.status, Date.now(), commit.wakeAt ?? null, commit.signalsSeen ?? null);
      statement = withEffects ? this.sql.commitWithEffects : this.sql.commit;
    }
    if (withEffects) values.push(...committedEffectValues(commit.effects!));
    let rows: unknown[];
    try {
      if (commit.snapshot !== undefined && crashInsideSnapshotArmed()) {
        // Crash tests only: the same statement in an explicit transaction, so the process
        // can die after the snapshot is written and before it is durable.
        rows = await this.conn.transaction('commitStep', async (query) => {
          const written = await query(statement, values);
          crashPoint('inside-snapshot');
          return written;
        });
      } else {
        rows = await this.conn.query('commitStep', statement, values);
      }
    } catch (error) {
      // Two commits that both passed the head check: the key refused the second.
      if (sqlState(error) === '23505' && constraintOf(error) === 'cairn_positions_pkey') return 'refused';
      else if (isConnectionLoss(error)) {
        // The connection died with the commit in flight: it landed or it did not. Our
        // position at that seq, with our hash, means it did; otherwise sending it again
        // is safe (it is fenced and head-checked like the first).
        if ((await this.readPosition(lease.threadId, position.ns, position.seq))?.hash === position.hash) return 'landed';
        rows = await this.conn.query('commitStep', statement, values);
      } else throw error;
    }
    if (shape === 'full') return rows.length === 1 ? 'landed' : 'refused';
    const [row] = rows as { tid: string | null; kept: boolean }[];
    if (!row) return 'lease';
    return row.tid !== null ? 'landed' : row.kept ? 'refused' : 'status';
  }

  protected async insertSignal(threadId: string, signal: SignalToStore): Promise<StoredSignal | null> {
    const [row] = await this.conn.query<{ id: string }>('sendSignal', this.sql.sendSignal, [threadId, signal.name, signal.payload, signal.sentAt, this.channel]);
    return row ? { threadId, id: Number(row.id), name: signal.name, payload: signal.payload, sentAt: signal.sentAt, consumedBy: null, consumedAt: null } : null;
  }

  protected async readSignals(threadId: string, query: SignalQuery): Promise<StoredSignal[]> {
    const rows = await this.conn.query<SignalRow>('listSignals', this.sql.signals, [threadId, query.name ?? null, query.pending ?? null, query.consumedBy ?? null]);
    return rows.map((row) => signalOf(threadId, row));
  }

  protected async markConsumed(lease: ThreadLease, consumption: ConsumptionToStore): Promise<StoredSignal | 'lease' | 'missing'> {
    const values = [lease.threadId, lease.runId, lease.epoch, consumption.id, consumption.by, consumption.consumedAt];
    const [row] = await this.conn.query<{ found: boolean; marked: boolean } & SignalRow>('consumeSignal', this.sql.consumeSignal, values);
    if (!row) return 'lease';
    if (!row.found) return 'missing';
    if (row.marked || row.consumed_by !== null) return signalOf(lease.threadId, row);
    // Another call of this lease consumed it while this one waited for the row: its
    // snapshot shows the signal pending, so read what it is now.
    const [now] = await this.conn.query<SignalRow>('consumeSignal (read)', this.sql.signal, [lease.threadId, consumption.id]);
    return now ? signalOf(lease.threadId, now) : 'missing';
  }

  protected async writeSnapshot(lease: ThreadLease, snapshot: { ns: string; seq: number; text: string }): Promise<'stored' | 'lease' | 'position'> {
    const rows = await this.conn.query<{ position: boolean }>('putSnapshot', this.sql.putSnapshot, [lease.threadId, lease.runId, lease.epoch, snapshot.ns, snapshot.seq, snapshot.text]);
    if (rows.length !== 1) return 'lease';
    return rows[0]!.position ? 'stored' : 'position';
  }

  protected async writePending(lease: ThreadLease, write: PendingWrite): Promise<boolean> {
    const rows = await this.conn.query('putPendingWrite', this.sql.putPending, [lease.threadId, lease.runId, lease.epoch, write.ns, write.baseSeq, write.task, write.body]);
    return rows.length === 1;
  }

  protected async readPendingWrites(threadId: string, ns: string, baseSeq: number): Promise<PendingWrite[]> {
    const rows = await this.conn.query<{ task: string; body: string }>('getPendingWrites', this.sql.pending, [threadId, ns, baseSeq]);
    return rows.map((r) => ({ ns, baseSeq, task: r.task, body: r.body }));
  }

  protected override async readPendingWritesIn(threadId: string, ns: string, range: SeqRange): Promise<PendingWrite[]> {
    const rows = await this.conn.query<{ base_seq: string | number; task: string; body: string }>('getPendingWritesIn', this.sql.pendingIn, [threadId, ns, range.from, range.to]);
    return rows.map((r) => ({ ns, baseSeq: Number(r.base_seq), task: r.task, body: r.body }));
  }

  protected async readPosition(threadId: string, ns: string, seq: number): Promise<StoredPosition | null> {
    const [row] = await this.conn.query<PositionRow>('getPosition', this.sql.position, [threadId, ns, seq]);
    return row ? positionOf(ns, row) : null;
  }

  protected async readPositions(threadId: string, ns: string, range: SeqRange): Promise<StoredPosition[]> {
    const rows = await this.conn.query<PositionRow>('getPositions', this.sql.positions, [threadId, ns, range.from, range.to]);
    return rows.map((row) => positionOf(ns, row));
  }

  protected async readHead(threadId: string, ns: string): Promise<HeadAnchor | null> {
    const [row] = await this.conn.query<{ seq: string; hash: string; base_seq: string | null; base_hash: string | null }>('getHead', this.sql.head, [threadId, ns]);
    if (!row) return null;
    const head: HeadAnchor = { seq: Number(row.seq), hash: row.hash };
    if (row.base_seq !== null && row.base_hash !== null) head.base = { seq: Number(row.base_seq), hash: row.base_hash };
    return head;
  }

  protected override async compact(lease: ThreadLease, request: CompactionRequest): Promise<CompactionResult | CompactionRefusal> {
    const { ns, base } = request;
    const { heads: H, positions: P, items: I, packs: IP, snapshots: S, pending: W, ledger: L, threads: T } = this.conn.tables;
    // The thread row locked first (FOR UPDATE): a commit's fence takes it FOR SHARE, so
    // none lands between the checks and the deletes, and a takeover waits for the end.
    return this.conn.transaction('compactThread', async (query) => {
      const [held] = (await query(`SELECT tid FROM ${T} WHERE id = $1::text AND run_id = $2::text AND epoch = $3::bigint FOR UPDATE`, [lease.threadId, lease.runId, lease.epoch])) as { tid: string }[];
      if (!held) return { refused: 'lease' } as const;
      const tid = held.tid;
      const [anchor] = (await query(`SELECT seq, base_seq FROM ${H} WHERE tid = $1::bigint AND ns = $2::text`, [tid, ns])) as { seq: string; base_seq: string | null }[];
      const [stored] = (await query(`SELECT encode(hash, 'hex') AS hash FROM ${P} WHERE tid = $1::bigint AND ns = $2::text AND seq = $3::bigint`, [tid, ns, base.seq])) as { hash: string }[];
      const refusal = judgeCompaction(request, anchor ? Number(anchor.seq) : null, anchor?.base_seq != null ? Number(anchor.base_seq) : null, stored?.hash ?? null);
      if (refusal) return refusal;
      const goes = (column: string) => `(${column} < $3::bigint OR ${column} = ANY($4::bigint[]))`;
      const children = request.dropNamespaces ?? [];
      const [counts] = (await query(
        `WITH p AS (DELETE FROM ${P} WHERE tid = $1::bigint AND ((ns = $2::text AND ${goes('seq')}) OR ns = ANY($5::text[])) RETURNING 1),
          i AS (DELETE FROM ${I} WHERE tid = $1::bigint AND ((ns = $2::text AND ${goes('seq')}) OR ns = ANY($5::text[])) RETURNING 1),
          -- A pack goes with any position it spans.
          ip AS (DELETE FROM ${IP} WHERE tid = $1::bigint AND ((ns = $2::text AND (from_seq < $3::bigint OR EXISTS (SELECT 1 FROM unnest($4::bigint[]) d(seq) WHERE d.seq BETWEEN from_seq AND to_seq))) OR ns = ANY($5::text[]))),
          s AS (DELETE FROM ${S} WHERE tid = $1::bigint AND ((ns = $2::text AND ${goes('seq')}) OR ns = ANY($5::text[])) RETURNING 1),
          w AS (DELETE FROM ${W} WHERE tid = $1::bigint AND ((ns = $2::text AND ${goes('base_seq')}) OR ns = ANY($5::text[])) RETURNING 1),
          l AS (DELETE FROM ${L} WHERE $6::boolean AND tid = $1::bigint AND ((ns = $2::text AND ${goes('seq')}) OR ns = ANY($5::text[])) RETURNING 1),
          h AS (DELETE FROM ${H} WHERE tid = $1::bigint AND ns = ANY($5::text[]) RETURNING ns),
          named AS (SELECT DISTINCT ns FROM ${P} WHERE tid = $1::bigint AND ns = ANY($5::text[]) UNION SELECT ns FROM h)
        SELECT (SELECT count(*) FROM p) AS positions, (SELECT count(*) FROM i) AS items, (SELECT count(*) FROM s) AS snapshots,
          (SELECT count(*) FROM w) AS pendingwrites, (SELECT count(*) FROM l) AS ledgerentries, (SELECT count(*) FROM named) AS namespaces`,
        [tid, ns, base.seq, request.drop ?? [], children, request.ledger === true],
      )) as Record<string, string>[];
      const snapshots = [{ seq: base.seq, text: request.snapshot }, ...(request.snapshots ?? [])];
      await query(
        // With the position's tenant, as every snapshot insert: under row-level security a
        // row without it is invisible to the tenant (see migration 9).
        `INSERT INTO ${S} (tid, tenant, ns, seq, body)
          SELECT $1::bigint, p.tenant, $2::text, x.seq, x.body FROM unnest($3::bigint[], $4::text[]) AS x(seq, body)
          JOIN ${P} p ON p.tid = $1::bigint AND p.ns = $2::text AND p.seq = x.seq
          ON CONFLICT (tid, ns, seq) DO UPDATE SET body = excluded.body`,
        [tid, ns, snapshots.map((x) => x.seq), snapshots.map((x) => x.text)],
      );
      await query(`UPDATE ${H} SET base_seq = $3::bigint, base_hash = decode($4::text, 'hex') WHERE tid = $1::bigint AND ns = $2::text`, [tid, ns, base.seq, base.hash]);
      const result = noneCompacted();
      result.positions = Number(counts!.positions);
      result.items = Number(counts!.items);
      result.snapshots = Number(counts!.snapshots);
      result.pendingWrites = Number(counts!.pendingwrites);
      result.ledgerEntries = Number(counts!.ledgerentries);
      result.namespaces = Number(counts!.namespaces);
      return result;
    });
  }

  protected async readNamespaces(threadId: string): Promise<string[]> {
    const rows = await this.conn.query<{ ns: string }>('listNamespaces', this.sql.namespaces, [threadId]);
    return rows.map((row) => row.ns);
  }

  protected async readPositionPage(threadId: string, ns: string, page: { beforeSeq?: number; limit?: number }): Promise<StoredPosition[]> {
    const rows = await this.conn.query<PositionRow>('listPositions', this.sql.listPositions, [threadId, ns, page.beforeSeq ?? null, page.limit ?? null]);
    return rows.map((row) => positionOf(ns, row));
  }

  protected async readSnapshot(threadId: string, ns: string, ranges: SeqRange[]): Promise<{ seq: number; text: string } | null> {
    const where = seqRanges(ranges, 3);
    const text = `SELECT seq, body FROM ${this.conn.tables.snapshots}
      WHERE tid = (SELECT tid FROM ${this.conn.tables.threads} WHERE id = $1::text) AND ns = $2::text AND (${where.sql})
      ORDER BY seq DESC LIMIT 1`;
    const [row] = await this.conn.query<{ seq: string; body: string }>('getSnapshot', text, [threadId, ns, ...where.params], false);
    return row ? { seq: Number(row.seq), text: row.body } : null;
  }

  protected async readSnapshots(threadId: string, ns: string, range: SeqRange): Promise<{ seq: number; text: string }[]> {
    const rows = await this.conn.query<{ seq: string; body: string }>('getSnapshots', this.sql.snapshots, [threadId, ns, range.from, range.to]);
    return rows.map((row) => ({ seq: Number(row.seq), text: row.body }));
  }

  protected async readItems(threadId: string, ns: string, field: string, ranges: SeqRange[]): Promise<string[]> {
    const where = seqRanges(ranges, 4);
    // Walks the (tid, ns, field, seq, idx) key in order: no sort, texts only.
    const text = `SELECT body FROM ${this.conn.tables.items}
      WHERE tid = (SELECT tid FROM ${this.conn.tables.threads} WHERE id = $1::text) AND ns = $2::text AND field = $3::text AND (${where.sql})
      ORDER BY seq, idx`;
    const rows = await this.conn.query<{ body: string }>('getItems', text, [threadId, ns, field, ...where.params], false);
    return rows.map((row) => row.body);
  }

  protected override async readItemPacks(threadId: string, ns: string, field: string, ranges: SeqRange[]): Promise<ItemPack[]> {
    const inside = ranges.map((_, i) => `(from_seq >= $${4 + 2 * i}::bigint AND to_seq <= $${5 + 2 * i}::bigint)`).join(' OR ');
    const text = `SELECT field, from_seq, to_seq, count, body FROM ${this.conn.tables.packs}
      WHERE tid = (SELECT tid FROM ${this.conn.tables.threads} WHERE id = $1::text) AND ns = $2::text AND field = $3::text AND (${inside})
      ORDER BY from_seq`;
    const rows = await this.conn.query<{ field: string; from_seq: string; to_seq: string; count: number; body: string }>(
      'getItemPacks',
      text,
      [threadId, ns, field, ...ranges.flatMap((r) => [r.from, r.to])],
      false,
    );
    return rows.map((row) => ({ field: row.field, fromSeq: Number(row.from_seq), toSeq: Number(row.to_seq), count: Number(row.count), text: row.body }));
  }

  protected async readPositionItems(threadId: string, ns: string, seq: number, fields: readonly string[]): Promise<PositionItem[]> {
    const rows = await this.conn.query<{ field: string; idx: number; body: string }>('getPositionItems', this.sql.positionItems, [threadId, ns, seq, [...fields]]);
    const byField = new Map<string, PositionItem[]>();
    for (const row of rows) {
      let list = byField.get(row.field);
      if (!list) byField.set(row.field, (list = []));
      list.push({ field: row.field, index: row.idx, text: row.body });
    }
    return [...new Set(fields)].flatMap((field) => byField.get(field) ?? []);
  }

  protected async readRangeItems(threadId: string, ns: string, range: SeqRange): Promise<RangeItem[]> {
    const rows = await this.conn.query<{ seq: string; field: string; idx: number; body: string }>('getRangeItems', this.sql.rangeItems, [threadId, ns, range.from, range.to]);
    return rows.map((row) => ({ seq: Number(row.seq), field: row.field, index: row.idx, text: row.body }));
  }
}

/** What a lean step commit's text is written for (see leanCommitSteps). */
interface LeanShape {
  oneItem: boolean;
  snapshot: boolean;
  effects: boolean;
}

/** Every fixed statement of the checkpointer, qualified with the connection's schema. */
function statements(conn: PostgresConnection) {
  const { threads: T, heads: H, positions: P, items: I, packs: IP, snapshots: S, pending: W, failures: F, ledger: L, store: ST, signals: SG } = conn.tables;
  const schema = quoteIdent(conn.schema);
  const tidOf = `(SELECT tid FROM ${T} WHERE id = $1::text)`;
  const threadColumns = `t.tid, t.id, t.kind, t.status, t.attempts, t.tenant, t.metadata, t.last_error, t.wake_at, t.run_id, t.owner_pid,
    t.owner_host, t.lease_until, t.epoch, t.created_at, t.updated_at`;
  const signalColumns = 'id, name, payload, sent_at, consumed_by, consumed_at';
  /** The root namespace's anchored head and its time. */
  const headJoin = `LEFT JOIN ${H} h ON h.tid = t.tid AND h.ns = ''`;
  const threadSelect = `SELECT ${threadColumns}, h.seq AS head, h.created_at AS head_at FROM ${T} t ${headJoin}`;
  const positionColumns = `seq, parent, segment, step, schema_version, created_at, body, encode(hash, 'hex') AS hash`;
  const fenced = `id = $1::text AND run_id = $2::text AND epoch = $3::bigint`;
  /** The database's clock in ms: every lease is set and judged on it. */
  const dbNow = `(extract(epoch from clock_timestamp()) * 1000)::bigint`;

  // The whole step boundary in one statement, so one round trip and one implicit transaction.
  //
  // Why a takeover cannot slip between the fence and the insert at READ COMMITTED:
  // `fence` takes a FOR SHARE lock on the thread row, and a takeover is an UPDATE of
  // that row (FOR NO KEY UPDATE, which conflicts with FOR SHARE; FOR KEY SHARE would
  // not). If the takeover committed first, the locking read re-checks run_id and epoch
  // on the newest row version, finds the new epoch, returns nothing, and so nothing
  // below inserts. If it is in flight, the lock waits for it, then the same. If the
  // fence locks first, the takeover waits until this statement's transaction has
  // committed, and its successor reads a head that includes this position.
  //
  // `head` is one backward step on the positions' key (never max() over a join, which
  // scans the whole thread). It reads the statement's snapshot: a concurrent commit of the same lease that
  // it misses loses on the (tid, ns, seq) key instead (mapped to HeadMovedError).
  // The thread row is written only when the root status changes (start and end of a
  // run) or its updatedAt, which the head's time may move, enters another second.
  const commitSteps = `
      WITH fence AS (
        SELECT tid, tenant, status, wake_at, last_signal, updated_at, updated_second FROM ${T} WHERE ${fenced} FOR SHARE
      ), wake AS (
        -- The thread's wake time once this commit lands (see ThreadPatch in update).
        SELECT CASE
          WHEN $18::text <> 'waiting' THEN NULL
          WHEN $21::bigint IS NOT NULL AND fence.last_signal > $21::bigint THEN least($20::bigint, ${dbNow})
          ELSE $20::bigint END AS at
        FROM fence
      ), next_row AS (
        -- The thread row's time once this commit lands (a new status or wake time sets it), and so its second.
        SELECT changed, greatest(CASE WHEN changed THEN $19::bigint ELSE fence.updated_at END, $10::bigint) / 1000 AS second,
          CASE WHEN changed THEN $19::bigint ELSE fence.updated_at END AS updated_at
        FROM fence, wake, LATERAL (SELECT fence.status <> $18::text OR fence.wake_at IS DISTINCT FROM wake.at AS changed) c
      ), head AS (
        SELECT (SELECT h.seq FROM ${H} h WHERE h.tid = fence.tid AND h.ns = $4::text) AS seq FROM fence
      ), pos AS (
        INSERT INTO ${P} (tid, tenant, ns, seq, parent, segment, step, schema_version, created_at, body, hash)
        SELECT fence.tid, fence.tenant, $4::text, $5::bigint, $6::bigint, $7::bigint, $8::bigint, $9::integer, $10::bigint, $11::text, decode($12::text, 'hex')
        FROM fence, head
        WHERE head.seq IS NOT DISTINCT FROM $13::bigint AND $5::bigint = coalesce(head.seq, -1) + 1
        RETURNING tid, tenant
      ), items AS (
        INSERT INTO ${I} (tid, tenant, ns, field, seq, idx, body)
        SELECT pos.tid, pos.tenant, $4::text, u.field, $5::bigint, u.idx, u.body
        FROM pos, unnest($14::text[], $15::integer[], $16::text[]) AS u (field, idx, body)
      ), anchor AS (
        INSERT INTO ${H} (tid, tenant, ns, seq, hash, created_at) SELECT pos.tid, pos.tenant, $4::text, $5::bigint, decode($12::text, 'hex'), $10::bigint FROM pos
        ON CONFLICT (tid, ns) DO UPDATE SET seq = excluded.seq, hash = excluded.hash, created_at = excluded.created_at
      ), snapshot AS (
        INSERT INTO ${S} (tid, tenant, ns, seq, body) SELECT pos.tid, pos.tenant, $4::text, $5::bigint, $17::text FROM pos WHERE $17::text IS NOT NULL
      ), folded AS (
        DELETE FROM ${W} w USING pos WHERE w.tid = pos.tid AND w.ns = $4::text AND w.base_seq = $6::bigint
      ), status AS (
        UPDATE ${T} t SET status = $18::text, wake_at = wake.at, updated_at = next_row.updated_at, updated_second = next_row.second
        FROM pos, fence, wake, next_row WHERE t.tid = pos.tid AND $4::text = '' AND (next_row.changed OR fence.updated_second <> next_row.second)
      )`;

  // The common step (a head to move, the root status unchanged and not waiting)
  // written by fewer plan nodes: the server initialises every node of the plan,
  // run or not, on each execution, and that start-up was most of what the commit cost
  // beyond its rows. No status or wake-time update (an UPDATE of the thread row opens
  // every index of that table), the head checked once, by the UPDATE
  // that moves it, which the position's insert then reads its tid from; one item
  // (the usual step) as plain parameters rather than arrays to unpack; the snapshot
  // insert only in the text for a commit that carries one ($18).
  //
  // Same fence, same rows; parameters $1-$16 as in commitSteps, $17 the status. It also
  // asks that the root status already be $17 with no wake time (`kept`), which is exactly
  // when commitSteps would leave the thread row alone: otherwise nothing is written, and
  // commit sends commitSteps. A concurrent commit that moved the head first makes the
  // UPDATE wait for that row and then find another seq (READ COMMITTED re-checks its
  // WHERE on the newest version): nothing is written either. Its one row, while the
  // lease holds, says which: the position's tid, or NULL and whether the status was kept.
  const leanCommitSteps = ({ oneItem, snapshot }: LeanShape) => `
      WITH fence AS (
        SELECT tid, tenant, ($4::text <> '' OR (status = $17::text AND wake_at IS NULL AND updated_second = greatest(updated_at, $10::bigint) / 1000)) AS kept
        FROM ${T} WHERE ${fenced} FOR SHARE
      ), anchor AS (
        UPDATE ${H} h SET seq = $5::bigint, hash = decode($12::text, 'hex'), created_at = $10::bigint
        FROM fence WHERE h.tid = fence.tid AND h.ns = $4::text AND h.seq = $13::bigint AND $5::bigint = $13::bigint + 1 AND fence.kept
        RETURNING fence.tid, fence.tenant
      ), pos AS (
        INSERT INTO ${P} (tid, tenant, ns, seq, parent, segment, step, schema_version, created_at, body, hash)
        SELECT anchor.tid, anchor.tenant, $4::text, $5::bigint, $6::bigint, $7::bigint, $8::bigint, $9::integer, $10::bigint, $11::text, decode($12::text, 'hex')
        FROM anchor
        RETURNING tid, tenant
      ), items AS (
        INSERT INTO ${I} (tid, tenant, ns, field, seq, idx, body)
        SELECT pos.tid, pos.tenant, $4::text, u.field, $5::bigint, u.idx, u.body
        FROM pos, ${oneItem ? '(VALUES ($14::text, $15::integer, $16::text))' : 'unnest($14::text[], $15::integer[], $16::text[])'} AS u (field, idx, body)
      ), folded AS (
        DELETE FROM ${W} w USING pos WHERE w.tid = pos.tid AND w.ns = $4::text AND w.base_seq = $6::bigint
      )${snapshot ? `, snapshot AS (
        INSERT INTO ${S} (tid, tenant, ns, seq, body) SELECT pos.tid, pos.tenant, $4::text, $5::bigint, $18::text FROM pos
      )` : ''}`;
  const leanTexts = new Map<string, string>();
  const leanOutcome = `SELECT (SELECT tid FROM pos) AS tid, fence.kept FROM fence`;

  return {
    threadSelect,
    threadColumns,
    threadById: `SELECT ${threadColumns}, h.seq AS head, h.created_at AS head_at, ${dbNow} AS db_now FROM ${T} t ${headJoin} WHERE t.id = $1::text`,
    /** The schema's text → jsonb function (see migration 2). */
    json: `${schema}.cairn_json`,

    // With the thread's tenant, as every row a thread owns (row-level security, migration 9).
    insertPacks: `
      INSERT INTO ${IP} (tid, tenant, ns, field, from_seq, to_seq, count, body)
      SELECT t.tid, t.tenant, $4::text, x.field, x.from_seq, $5::bigint, x.count, x.body
      FROM ${T} t, unnest($6::text[], $7::bigint[], $8::integer[], $9::text[]) AS x(field, from_seq, count, body)
      WHERE t.${fenced}
      ON CONFLICT (tid, ns, field, from_seq) DO UPDATE SET to_seq = excluded.to_seq, count = excluded.count, body = excluded.body`,

    lockForDelete: `SELECT tid, tenant, status, run_id, owner_pid, owner_host, lease_until, epoch, ${dbNow} AS db_now FROM ${T} WHERE id = $1::text FOR UPDATE`,

    // Everything the thread owns, by tid, plus its pins (live or unpinned) and their
    // overwrite records; counts per kind. Runs after lockForDelete, in its transaction.
    deleteThread: `
      WITH p AS (DELETE FROM ${P} WHERE tid = $1::bigint RETURNING 1),
      heads AS (DELETE FROM ${H} WHERE tid = $1::bigint),
      i AS (DELETE FROM ${I} WHERE tid = $1::bigint RETURNING 1),
      ip AS (DELETE FROM ${IP} WHERE tid = $1::bigint),
      s AS (DELETE FROM ${S} WHERE tid = $1::bigint RETURNING 1),
      w AS (DELETE FROM ${W} WHERE tid = $1::bigint RETURNING 1),
      f AS (DELETE FROM ${F} WHERE tid = $1::bigint RETURNING 1),
      l AS (DELETE FROM ${L} WHERE tid = $1::bigint RETURNING 1),
      sg AS (DELETE FROM ${SG} WHERE tid = $1::bigint RETURNING 1),
      pins AS (
        DELETE FROM ${ST} WHERE ns = $2::text AND right(key, length($3::text)) = $3::text
        RETURNING deleted, expires_at),
      overwrites AS (DELETE FROM ${schema}.cairn_store_overwrites WHERE ns = $2::text AND right(key, length($3::text)) = $3::text),
      thread AS (DELETE FROM ${T} WHERE tid = $1::bigint)
      SELECT (SELECT count(*) FROM p) AS positions, (SELECT count(*) FROM i) AS items, (SELECT count(*) FROM s) AS snapshots,
        (SELECT count(*) FROM w) AS pendingwrites, (SELECT count(*) FROM f) AS failures, (SELECT count(*) FROM l) AS ledgerentries, (SELECT count(*) FROM sg) AS signals,
        (SELECT count(*) FROM pins WHERE NOT deleted AND (expires_at IS NULL OR expires_at > $4::bigint)) AS pins`,

    createThread: `
      INSERT INTO ${T} AS t (id, kind, status, attempts, tenant, metadata, run_id, owner_pid, owner_host, lease_until, epoch, created_at, updated_at, updated_second)
      VALUES ($1::text, $2::text, 'running', 0, $3::text, $4::text, $5::text, $6::integer, $7::text, ${dbNow} + $8::bigint, 1, $9::bigint, $10::bigint, $10::bigint / 1000)
      ON CONFLICT (id) DO NOTHING
      RETURNING ${threadColumns}, NULL::bigint AS head, NULL::bigint AS head_at`,

    // Compare-and-set on the row as read: epoch (every grant), run_id (releases) and lease_until (renewals).
    takeThread: `
      UPDATE ${T} SET run_id = $5::text, owner_pid = $6::integer, owner_host = $7::text, lease_until = ${dbNow} + $8::bigint, epoch = epoch + 1
      WHERE tid = $1::bigint AND epoch = $2::bigint AND run_id IS NOT DISTINCT FROM $3::text AND lease_until IS NOT DISTINCT FROM $4::bigint
      RETURNING epoch, lease_until`,

    renew: `UPDATE ${T} SET lease_until = ${dbNow} + $4::bigint WHERE ${fenced} RETURNING lease_until`,

    release: `
      WITH released AS (
        UPDATE ${T} SET run_id = NULL, owner_pid = NULL, owner_host = NULL, lease_until = NULL WHERE ${fenced} RETURNING id, status, wake_at)
      SELECT pg_notify($4::text, id) FROM released WHERE status = 'running' OR (status = 'waiting' AND wake_at <= ${dbNow})`,

    // A worker's claim: SKIP LOCKED makes concurrent claimers pass over each other's
    // candidates instead of queueing on them, and the fresh epoch fences the previous
    // holder (whose lease expired, or whose process the caller saw die: $7/$8 are the
    // run ids and pids of dead holders on host $9) out of every later write.
    claim: `
      WITH candidate AS (
        SELECT tid FROM ${T}
        WHERE (status = 'running' OR (status = 'waiting' AND wake_at <= ${dbNow}))
          AND (run_id IS NULL OR lease_until < ${dbNow}
            OR (owner_host = $9::text AND (run_id, owner_pid) IN (SELECT * FROM unnest($7::text[], $8::integer[]))))
          AND ($6::text IS NULL OR (${schema}.cairn_json(metadata) ->> 'graph') = $6::text)
        ORDER BY updated_at, tid
        LIMIT $5::integer
        FOR UPDATE SKIP LOCKED),
      claimed AS (
        UPDATE ${T} t SET run_id = $1::text, owner_pid = $2::integer, owner_host = $3::text, lease_until = ${dbNow} + $4::bigint, epoch = t.epoch + 1
        FROM candidate c WHERE t.tid = c.tid
        RETURNING ${threadColumns})
      -- The candidates' order again: neither UPDATE ... RETURNING nor the join keeps it.
      SELECT t.*, h.seq AS head, h.created_at AS head_at FROM claimed t ${headJoin} ORDER BY t.updated_at, t.tid`,

    // Through the status index: only running and waiting threads can be held, a small
    // part of a database that keeps its finished threads.
    holders: `
      SELECT DISTINCT run_id, owner_pid FROM ${T}
      WHERE status IN ('running', 'waiting') AND run_id IS NOT NULL AND owner_host = $1::text AND owner_pid IS NOT NULL AND lease_until > ${dbNow}
        AND ($2::text IS NULL OR (${schema}.cairn_json(metadata) ->> 'graph') = $2::text)`,

    // A waiting thread held by a lease is claimable once both its time and the lease are up (greatest skips NULL).
    nextExpiry: `
      SELECT min(CASE WHEN status = 'running' THEN lease_until WHEN run_id IS NULL THEN wake_at ELSE greatest(wake_at, lease_until) END)::text AS at FROM ${T}
      WHERE ((status = 'running' AND run_id IS NOT NULL) OR (status = 'waiting' AND wake_at IS NOT NULL))
        AND ($1::text IS NULL OR (${schema}.cairn_json(metadata) ->> 'graph') = $1::text)`,

    update: `
      WITH t AS (
        UPDATE ${T} AS u SET status = coalesce($4::text, status), attempts = attempts + $5::integer,
          last_error = CASE WHEN $6::boolean THEN $7::text ELSE last_error END, updated_at = $8::bigint,
          updated_second = greatest($8::bigint, (SELECT h.created_at FROM ${H} h WHERE h.tid = u.tid AND h.ns = '')) / 1000,
          -- Only a waiting thread keeps a wake time; one made due at once when it holds a signal newer than the patch saw.
          wake_at = CASE
            WHEN coalesce($4::text, status) <> 'waiting' THEN NULL
            WHEN $12::bigint IS NOT NULL AND last_signal > $12::bigint THEN least(CASE WHEN $10::boolean THEN $11::bigint ELSE wake_at END, ${dbNow})
            ELSE CASE WHEN $10::boolean THEN $11::bigint ELSE wake_at END END
        WHERE ${fenced}
        RETURNING *
      ), failure AS (
        INSERT INTO ${F} (tid, tenant, body) SELECT tid, tenant, $9::text FROM t WHERE $9::text IS NOT NULL
      )
      SELECT ${threadColumns}, h.seq AS head, h.created_at AS head_at FROM t ${headJoin}`,

    commit: `${commitSteps}
      SELECT tid FROM pos`,

    /** The common step on a plan of its own (see leanCommitSteps), by what it carries. */
    leanCommit: (shape: LeanShape) => {
      const key = `${+shape.oneItem}${+shape.snapshot}${+shape.effects}`;
      let text = leanTexts.get(key);
      if (text === undefined) {
        const effects = shape.effects ? `, ${committedEffectsCte(L, 'pos', shape.snapshot ? 19 : 18)}` : '';
        leanTexts.set(key, (text = `${leanCommitSteps(shape)}${effects}\n      ${leanOutcome}`));
      }
      return text;
    },

    // The same statement with the ledger upsert of the commit's effects (StepCommit.effects):
    // still one round trip and one transaction, their rows inserted from `pos` (so a refused
    // commit writes none) with the thread's tenant (row-level security). Parameters from $22.
    commitWithEffects: `${commitSteps}, ${committedEffectsCte(L, 'pos', 22)}
      SELECT tid FROM pos`,

    diagnose: `
      SELECT (t.run_id = $2::text AND t.epoch = $3::bigint) AS held,
        (SELECT h.seq FROM ${H} h WHERE h.tid = t.tid AND h.ns = $4::text) AS head
      FROM ${T} t WHERE t.id = $1::text`,

    // Fenced like a pending write; the snapshot is written only for a stored position.
    putSnapshot: `
      WITH fence AS (SELECT tid, tenant FROM ${T} WHERE ${fenced} FOR SHARE),
      target AS (SELECT p.tid, f.tenant FROM ${P} p JOIN fence f ON p.tid = f.tid WHERE p.ns = $4::text AND p.seq = $5::bigint),
      stored AS (
        INSERT INTO ${S} (tid, tenant, ns, seq, body) SELECT tid, tenant, $4::text, $5::bigint, $6::text FROM target
        ON CONFLICT (tid, ns, seq) DO UPDATE SET body = excluded.body
        RETURNING 1)
      SELECT EXISTS (SELECT 1 FROM stored) AS position FROM fence`,

    // The locking read makes a pending write wait for, or see, a takeover (as in commit).
    putPending: `
      WITH fence AS (SELECT tid, tenant FROM ${T} WHERE ${fenced} FOR SHARE)
      INSERT INTO ${W} (tid, tenant, ns, base_seq, task, body)
      SELECT tid, tenant, $4::text, $5::bigint, $6::text, $7::text FROM fence
      ON CONFLICT (tid, ns, base_seq, task) DO UPDATE SET body = excluded.body
      RETURNING 1`,

    pending: `SELECT task, body FROM ${W} WHERE tid = ${tidOf} AND ns = $2::text AND base_seq = $3::bigint ORDER BY task`,
    pendingIn: `SELECT base_seq, task, body FROM ${W} WHERE tid = ${tidOf} AND ns = $2::text AND base_seq BETWEEN $3::bigint AND $4::bigint ORDER BY base_seq, task`,

    failures: `SELECT body FROM ${F} WHERE tid = ${tidOf} ORDER BY id`,

    // Not fenced: any process may send. The UPDATE locks the thread row, counts the id
    // up and makes a waiting thread due; the NOTIFY (sent at commit) wakes idle workers.
    sendSignal: `
      WITH t AS (
        UPDATE ${T} SET last_signal = last_signal + 1,
          wake_at = CASE WHEN status = 'waiting' THEN least(coalesce(wake_at, ${dbNow}), ${dbNow}) ELSE wake_at END
        WHERE id = $1::text
        RETURNING tid, tenant, last_signal, status
      ), stored AS (
        INSERT INTO ${SG} (tid, tenant, id, name, payload, sent_at) SELECT tid, tenant, last_signal, $2::text, $3::text, $4::bigint FROM t RETURNING id
      )
      SELECT stored.id, (SELECT count(*) FROM (SELECT pg_notify($5::text, $1::text) FROM t WHERE t.status = 'waiting') n) AS notified FROM stored`,

    // One text for every filter: an absent one is NULL and matches everything.
    signals: `
      SELECT ${signalColumns} FROM ${SG}
      WHERE tid = ${tidOf} AND ($2::text IS NULL OR name = $2::text) AND ($3::boolean IS NULL OR (consumed_by IS NULL) = $3::boolean)
        AND ($4::text IS NULL OR consumed_by = $4::text)
      ORDER BY id`,

    signal: `SELECT ${signalColumns} FROM ${SG} WHERE tid = ${tidOf} AND id = $2::bigint`,

    // Fenced like a pending write. The outer SELECT reads the statement's snapshot (the
    // signal as it was); `marked` says the UPDATE consumed it, with the row it wrote.
    consumeSignal: `
      WITH fence AS (SELECT tid FROM ${T} WHERE ${fenced} FOR SHARE),
      marked AS (
        UPDATE ${SG} s SET consumed_by = $5::text, consumed_at = $6::bigint FROM fence
        WHERE s.tid = fence.tid AND s.id = $4::bigint AND s.consumed_by IS NULL
        RETURNING s.consumed_by, s.consumed_at)
      SELECT s.id IS NOT NULL AS found, EXISTS (SELECT 1 FROM marked) AS marked, s.id, s.name, s.payload, s.sent_at,
        coalesce((SELECT consumed_by FROM marked), s.consumed_by) AS consumed_by, coalesce((SELECT consumed_at FROM marked), s.consumed_at) AS consumed_at
      FROM fence LEFT JOIN ${SG} s ON s.tid = fence.tid AND s.id = $4::bigint`,

    position: `SELECT ${positionColumns} FROM ${P} WHERE tid = ${tidOf} AND ns = $2::text AND seq = $3::bigint`,

    positions: `SELECT ${positionColumns} FROM ${P} WHERE tid = ${tidOf} AND ns = $2::text AND seq BETWEEN $3::bigint AND $4::bigint ORDER BY seq`,

    // Index walks of the (tid, ns, ...) keys; ns is COLLATE "C", so the order is the code
    // point order the contract asks for. The anchors name a namespace whose positions are gone.
    namespaces: `SELECT ns FROM ${H} WHERE tid = ${tidOf} UNION SELECT DISTINCT ns FROM ${P} WHERE tid = ${tidOf} ORDER BY ns`,

    head: `SELECT seq, encode(hash, 'hex') AS hash, base_seq, encode(base_hash, 'hex') AS base_hash FROM ${H} WHERE tid = ${tidOf} AND ns = $2::text`,

    snapshots: `SELECT seq, body FROM ${S} WHERE tid = ${tidOf} AND ns = $2::text AND seq BETWEEN $3::bigint AND $4::bigint ORDER BY seq`,

    rangeItems: `
      SELECT seq, field, idx, body FROM ${I}
      WHERE tid = ${tidOf} AND ns = $2::text AND seq BETWEEN $3::bigint AND $4::bigint
      ORDER BY seq, field, idx`,

    listPositions: `
      SELECT ${positionColumns} FROM ${P}
      WHERE tid = ${tidOf} AND ns = $2::text AND seq < coalesce($3::bigint, 9223372036854775807)
      ORDER BY seq DESC LIMIT $4::bigint`,

    positionItems: `
      SELECT field, idx, body FROM ${I}
      WHERE tid = ${tidOf} AND ns = $2::text AND seq = $3::bigint AND field = ANY($4::text[])
      ORDER BY field, idx`,
  };
}
