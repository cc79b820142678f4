/**
 * @module langgraph/cairn-saver
 * `CairnSaver`: a LangGraph.js `BaseCheckpointSaver` over a cairn engine (memory,
 * SQLite, PostgreSQL). Threads it writes are cairn threads: `verifyThread`,
 * `threadHistory`, `exportThreads` and the inspector read them.
 *
 * How a checkpoint maps onto the thread log:
 * - `thread_id` is the cairn thread, `checkpoint_ns` the namespace (a subgraph's
 *   checkpoints are a chain of their own, as a child run's are);
 * - each checkpoint is one position; its parent is the position of the checkpoint it
 *   was put after, so a fork (`updateState` on an old checkpoint, a run from one) is
 *   a branch of the position tree and the old branch stays readable;
 * - a position's changes are the channels in `newVersions` only, so each version of a
 *   channel's value is stored once; a list channel whose new value extends the stored
 *   one (LangGraph's `messages` reducer hands over the whole list every step) stores
 *   only the new items, so storage grows with the payload, not with steps × state;
 * - pending writes are cairn pending writes of the checkpoint's position; when a child
 *   checkpoint lands, cairn folds its parent's writes into it (they are kept in the
 *   child's body, under the chain hash), and reads of the parent still return them.
 *
 * One run per thread: a run's checkpoint must extend the namespace's head. A run that
 * loaded the latest checkpoint and finds, when it puts, that another run moved the head,
 * gets {@link ThreadBusyError} and writes nothing, instead of forking the chain
 * silently. A run started from a checkpoint named by id (time travel) may branch.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { RunnableConfig } from '@langchain/core/runnables';
import {
  BaseCheckpointSaver,
  TASKS,
  WRITES_IDX_MAP,
  compareWritesSortKeys,
  maxChannelVersion,
  type ChannelVersions,
  type Checkpoint,
  type CheckpointListOptions,
  type CheckpointMetadata,
  type CheckpointPendingWrite,
  type CheckpointTuple,
  type PendingWrite as LangGraphWrite,
  type SerializerProtocol,
} from '@langchain/langgraph-checkpoint';
import type { Checkpointer, PendingWrite, PositionItem, StoredPosition } from '../contracts/checkpointer.js';
import { comparePositionItems } from '../contracts/checkpointer.js';
import type { Engine } from '../contracts/engine.js';
import type { ThreadKind, ThreadLease } from '../contracts/threads.js';
import { GENESIS_HASH, ItemChecksum } from '../codec/hash.js';
import { RawJson, decode, encode } from '../codec/tagged-json.js';
import { LEASE_MS, SNAPSHOT_EVERY } from '../defaults.js';
import { crashPoint } from '../internal/crash-points.js';
import { CheckpointNotFoundError, CorruptRecordError, InvalidOptionError, LeaseLostError, PositionNotFoundError, ThreadBusyError, ThreadNotFoundError } from '../errors.js';
import { materialize, type ChainLink, type LoadedPosition, type SnapshotBody } from '../runtime/materialize.js';
import { SNAPSHOT_FORMAT, hashPosition, sealSnapshot, type FieldChange, type PositionBody, type PositionKind } from '../runtime/position.js';
import { CheckpointIndex } from './checkpoint-index.js';
import { ListView, pageStates, type PositionState } from './position-states.js';
import { ChannelValues, EMPTY_TEXT, SCALAR, WRAP_KEY, isWrapped } from './channel-values.js';
import {
  CHECKPOINT_FORMAT,
  derivedTaskId,
  foldedWrites,
  impliedMetadata,
  isFullRecord,
  langGraphRecord,
  metadataRest,
  resolveRecord,
  sameTaskShape,
  seenAsParents,
  seenDelta,
  changedOf,
  versionsDelta,
  type FoldedTask,
  type FoldedWrite,
  type LangGraphRecord,
  type ResolvedRecord,
  type SaverBody,
  type Seen,
  type StoredWrite,
} from './saver-body.js';
import { checkAdapterOptions } from './adapter-options.js';
import { filteredValuesAreJson, metadataContains, metadataFilter } from './metadata-filter.js';

/** Options of {@link CairnSaver}. */
export interface CairnSaverOptions {
  /** The engine whose thread log holds the checkpoints: `memory()`, `sqlite(path)`, `postgres(url)`. */
  engine: Engine;
  /** LangGraph's serializer for values cairn's codec cannot store as plain data. Default: LangGraph's `JsonPlusSerializer`. */
  serde?: SerializerProtocol;
  /** Kind of the threads the saver creates. Default `conversation`. */
  kind?: ThreadKind;
  /** Positions between snapshots along a branch. Default: cairn's `SNAPSHOT_EVERY` (50). */
  snapshotEvery?: number;
  /** How long the thread's lease is taken for (renewed while writes go on). Default: cairn's `LEASE_MS`. */
  leaseMs?: number;
  /** How long the saver keeps a thread's lease after its last write before giving it back. Default 1,000 ms. */
  idleReleaseMs?: number;
  /** How long a write, or `deleteThread`, waits for another process's write on the same thread to finish before ThreadBusyError. Default 5,000 ms. */
  busyWaitMs?: number;
  /**
   * How long `putWrites` waits for the put of a checkpoint it does not find (LangGraph
   * hands a task's writes over while its checkpoint's put is still queued) before
   * CheckpointNotFoundError. Default 30,000 ms.
   */
  writesWaitMs?: number;
}

/** A channel's value at a position, as the next put compares with it. */
type FieldState =
  | { kind: 'set'; text: string }
  | {
      kind: 'list';
      texts: string[];
      since: number | null;
      checksum: ItemChecksum;
      /** A copy of the list the saver was handed when it wrote it (a reducer may push onto its own list): the next put finds the old items by identity, without a lookup per item. */
      values?: readonly unknown[];
    };

/** What the saver keeps of the last position it wrote or read in a namespace: what the next put needs of its parent. */
interface Tip {
  position: StoredPosition;
  id: string;
  fields: Map<string, FieldState>;
  /** The tip's record resolved (versions, versions seen, folded writes): what the next record keeps its difference from. */
  record: ResolvedRecord | undefined;
  sinceSnapshot: number;
  /**
   * The lease this saver committed the tip under (absent for a tip it read). While the
   * saver still holds that lease (same run id and epoch), nothing else can have written
   * the thread since: the tip is the namespace's head, with no pending writes but those
   * `pendingStored` says this saver stored, and the next put reads neither from the engine.
   */
  lease?: { runId: string; epoch: number };
  /** This saver stored a pending write at the tip on its own (see `flushWrites`) since committing it. */
  pendingStored?: boolean;
  /** The writes (see {@link writeKey}) this saver stored at the tip on its own since committing it, while it holds the tip's lease. */
  pendingKeys?: Set<string>;
}

/**
 * One `putWrites` call's writes, encoded, waiting for their commit: the put of the
 * checkpoint after theirs, when it comes in the same turn of the event loop, commits
 * them in its own transaction (folded into the new checkpoint, as the engine folds a
 * parent's pending writes); otherwise they are committed on their own at the next turn.
 * The call resolves only once they are durable either way.
 */
interface DeferredWrite {
  ns: string;
  /** The checkpoint the writes belong to, and its seq once looked up. */
  id: string;
  seq: number | undefined;
  writes: LangGraphWrite[];
  taskId: string;
  taskPath: string;
  interrupt: boolean;
  resolve: () => void;
  reject: (error: unknown) => void;
}

/** What a LangGraph run (known by the `signal` of its config, one per run) did so far. */
interface RunState {
  /** How the run started: it loaded the latest checkpoint, or one named by id. */
  loaded: 'latest' | 'addressed';
  puts: number;
}

const SCHEMA_VERSION = 1;
/** Positions `list` reads (and rolls forward) at once: each page loads the state of its oldest position in full. */
const PAGE = 1000;
const SOURCE_KINDS: Record<string, PositionKind> = { input: 'input', loop: 'step', update: 'fork', fork: 'fork' };

/**
 * A LangGraph.js checkpointer over a cairn engine. Pass it where LangGraph takes a
 * checkpointer; the threads it writes are cairn threads.
 *
 * @example
 * ```ts
 * import { StateGraph, MessagesAnnotation } from '@langchain/langgraph';
 * import { sqlite } from 'cairn/sqlite';
 * import { CairnSaver } from 'cairn/langgraph';
 *
 * const checkpointer = new CairnSaver({ engine: sqlite('./cairn.db') });
 * const app = new StateGraph(MessagesAnnotation).addNode('chat', chat).addEdge('__start__', 'chat').compile({ checkpointer });
 * await app.invoke({ messages: [{ role: 'user', content: 'hi' }] }, { configurable: { thread_id: 'cust_42' } });
 * ```
 */
export class CairnSaver extends BaseCheckpointSaver {
  /** The engine the checkpoints live in. */
  readonly engine: Engine;
  private readonly cp: Checkpointer;
  private readonly values: ChannelValues;
  private readonly index: CheckpointIndex;
  private readonly tips = new Map<string, Tip>();
  private readonly locks = new Map<string, Promise<unknown>>();
  private readonly runs = new WeakMap<object, RunState>();
  /** Leases kept between writes, by thread (see `withLease`). */
  private readonly held = new Map<string, { lease: ThreadLease; timer: NodeJS.Timeout }>();
  private readonly awaitedPuts = new Map<string, { landed: Promise<void>; resolve: () => void; waiting: number }>();
  /** Writes accepted by `putWrites` and not committed yet, by thread, in call order. */
  private readonly deferred = new Map<string, DeferredWrite[]>();
  /** Threads whose deferred writes have a flush scheduled. */
  private readonly flushScheduled = new Set<string>();
  private readonly kind: ThreadKind;
  private readonly snapshotEvery: number;
  private readonly leaseMs: number;
  private readonly busyWaitMs: number;
  private readonly writesWaitMs: number;
  private readonly idleReleaseMs: number;

  constructor(options: CairnSaverOptions) {
    super(options?.serde);
    checkAdapterOptions('CairnSaver', options, ['engine', 'serde', 'kind', 'snapshotEvery', 'leaseMs', 'idleReleaseMs', 'busyWaitMs', 'writesWaitMs']);
    this.engine = options.engine;
    this.cp = options.engine.checkpointer;
    this.values = new ChannelValues(this.serde);
    this.index = new CheckpointIndex(this.cp);
    this.kind = options.kind ?? 'conversation';
    this.snapshotEvery = options.snapshotEvery ?? SNAPSHOT_EVERY;
    this.leaseMs = options.leaseMs ?? LEASE_MS;
    this.busyWaitMs = options.busyWaitMs ?? 5_000;
    this.writesWaitMs = options.writesWaitMs ?? 30_000;
    this.idleReleaseMs = options.idleReleaseMs ?? 1_000;
  }

  /** The checkpoint named by `config` (its `checkpoint_id`, or the namespace's latest), or undefined. */
  async getTuple(config: RunnableConfig): Promise<CheckpointTuple | undefined> {
    const threadId = config.configurable?.thread_id as string | undefined;
    if (threadId === undefined || threadId === null) return undefined;
    const thread = String(threadId);
    const ns = (config.configurable?.checkpoint_ns as string | undefined) ?? '';
    const id = config.configurable?.checkpoint_id as string | undefined;
    this.noteLoad(config, id);
    let seq: number | null;
    let head: { seq: number; hash: string } | null = null;
    if (id) seq = await this.index.seqOf(thread, ns, id);
    else {
      head = await this.cp.getHead(thread, ns);
      seq = head?.seq ?? null;
    }
    if (seq === null) return undefined;
    const loaded = await materialize(this.cp, undefined, thread, ns, seq, head ? { head } : {}).catch((error: unknown) => {
      // Another process deleted the thread under this index: the checkpoint is gone, or elsewhere if the thread was written again.
      if (id && PositionNotFoundError.is(error)) return null;
      throw error;
    });
    if (!loaded) {
      this.index.forget(thread);
      return (await this.index.seqOf(thread, ns, id!)) === null ? undefined : this.getTuple(config);
    }
    const record = langGraphRecord(loaded.body);
    if (!record) return undefined;
    if (id && record.id !== id) {
      // Another process deleted and rewrote the thread under this index: read it afresh.
      this.index.forget(thread);
      return this.getTuple(config);
    }
    const resolving: Resolving = { links: linksOf(loaded.chain), cache: new Map() };
    const resolved = await this.resolvedAt(thread, ns, loaded.position.seq, resolving.links, resolving.cache);
    if (head) this.tips.set(tipKey(thread, ns), this.tipOf(loaded, record, resolved));
    // The head has no children (a position takes the head's seq + 1), so no folded writes to look up through the id index.
    const known: KnownPositions | undefined = head ? { bodies: new Map(), items: new Map(), children: new Map([[seq, []]]), pending: new Map() } : undefined;
    return this.tuple(thread, ns, loaded, record, resolved, resolving, undefined, known);
  }

  /**
   * Checkpoints newest first: of one thread (or every thread), of one namespace (or
   * every namespace), whose metadata contains `filter` as PostgresSaver matches it
   * (`metadata @> filter`, jsonb containment: nested objects and arrays contain what the
   * filter names, see langgraph/metadata-filter), with an id below `before`'s, at most
   * `limit`. A `config` that names a checkpoint (`checkpoint_id`) lists that checkpoint
   * alone, as LangGraph's MemorySaver and PostgresSaver do (`getStateHistory` passes the
   * config it is given).
   */
  async *list(config: RunnableConfig, options: CheckpointListOptions = {}): AsyncGenerator<CheckpointTuple> {
    const { before, limit } = options;
    // As PostgresSaver sends it: a filter that is not JSON data is refused before anything is read.
    const filter = metadataFilter(options.filter);
    const beforeId = before?.configurable?.checkpoint_id as string | undefined;
    const threadId = config.configurable?.thread_id as string | undefined;
    const nsWanted = config.configurable?.checkpoint_ns as string | undefined;
    const idWanted = config.configurable?.checkpoint_id as string | undefined;
    let left = limit ?? Infinity;
    if (left <= 0) return;
    const threads = threadId !== undefined && threadId !== null ? [String(threadId)] : (await this.cp.listThreads()).map((t) => t.id);
    for (const thread of threads) {
      const namespaces = nsWanted !== undefined ? [nsWanted] : await this.cp.listNamespaces(thread);
      for (const ns of namespaces) {
        if (idWanted) {
          // One checkpoint, read as getTuple reads it; kept only if it passes `before` and `filter` too.
          const tuple = await this.getTuple({ configurable: { thread_id: thread, checkpoint_ns: ns, checkpoint_id: idWanted } });
          if (!tuple || (beforeId !== undefined && !(idWanted < beforeId)) || (filter && !(await this.metadataHas(tuple.metadata as Record<string, unknown>, filter)))) continue;
          yield tuple;
          if (--left <= 0) return;
          continue;
        }
        let beforeSeq: number | undefined;
        // Decoded items, shared by the tuples of this namespace: each is decoded once.
        const decoded = new WeakMap<object, unknown>();
        // What was read so far (a position's child, which holds its folded writes, is read
        // before it): the positions, and the items of those read with their page.
        const known: KnownPositions = { bodies: new Map(), items: new Map(), children: new Map(), pending: new Map() };
        // The decoded items of each list a page shares between its positions (see ListView): each decoded once.
        const lists = new WeakMap<readonly unknown[], unknown[]>();
        // Each position's record resolved (see resolvedAt), and what records resolve from: the pages, and the chains their loads read.
        const resolving: Resolving = { links: new Map(), cache: new Map() };
        // The first page no longer than what is left to yield: a `limit: 1` listing reads one position.
        let size = Math.min(PAGE, left);
        for (;;) {
          const page = await this.cp.listPositions(thread, ns, { limit: size, ...(beforeSeq !== undefined ? { beforeSeq } : {}) });
          const wanted: StoredPosition[] = [];
          const records = new Map<number, LangGraphRecord>();
          const bodies = new Map<number, PositionBody>();
          for (const position of page) {
            const body = decode<PositionBody>(position.body);
            bodies.set(position.seq, body);
            const record = langGraphRecord(body);
            if (!record) continue;
            if (beforeId !== undefined && !(record.id < beforeId)) continue;
            if (filter && !(await this.metadataMatches(record, position, body.kind, filter))) continue;
            wanted.push(position);
            records.set(position.seq, record);
          }
          // A page larger than what is left (see below) loads only the states it yields.
          if (wanted.length > left) wanted.length = left;
          // A filter that keeps few positions loads each alone; otherwise the page rolls forward from its oldest.
          const states = wanted.length === page.length ? await pageStates(this.cp, thread, ns, page, bodies) : await Promise.all(wanted.map((p) => materialize(this.cp, undefined, thread, ns, p.seq)));
          // Every listing reads the namespace from its head down, so a position's children are read by the time it is yielded.
          for (const position of page) {
            known.bodies.set(position.seq, bodies.get(position.seq)!);
            if (position.parent !== null) known.children.set(position.parent, [position.seq, ...(known.children.get(position.parent) ?? [])]);
          }
          for (const state of states) if ('items' in state && state.items) known.items.set(state.position.seq, state.items);
          // The page's pending writes in one read, where the engine has it (a read per checkpoint otherwise).
          if (this.cp.getPendingWritesIn && page.length) {
            const writes = await this.cp.getPendingWritesIn(thread, ns, { from: page[page.length - 1]!.seq, to: page[0]!.seq });
            for (const position of page) known.pending.set(position.seq, []);
            for (const write of writes) known.pending.get(write.baseSeq)?.push(write);
          }
          for (const state of states) for (const link of state.chain ?? []) resolving.links.set(link.position.seq, link);
          for (const position of page) resolving.links.set(position.seq, { position, body: bodies.get(position.seq)! });
          for (const state of states) {
            const resolved = resolving.cache.get(state.position.seq) ?? (await this.resolvedAt(thread, ns, state.position.seq, resolving.links, resolving.cache));
            yield await this.tuple(thread, ns, state, records.get(state.position.seq)!, resolved, resolving, decoded, known, lists);
            if (--left <= 0) return;
          }
          if (page.length < size) break;
          beforeSeq = page[page.length - 1]!.seq;
          // Positions `before` or `filter` passed over: the next page is twice as long, so a
          // `limit: 1` listing that skips n positions (LangGraph's replay of a subgraph asks
          // for the one before a checkpoint) reads about log2(n) pages, not n.
          size = Math.min(PAGE, Math.max(size * 2, left));
        }
      }
    }
  }

  /**
   * Stores a checkpoint as a position of its thread namespace, after the checkpoint
   * `config` names (none: a new root). Only the channels in `newVersions` are written.
   * ThreadBusyError, and nothing written, when another run moved the head under this one.
   */
  async put(config: RunnableConfig, checkpoint: Checkpoint, metadata: CheckpointMetadata, newVersions: ChannelVersions): Promise<RunnableConfig> {
    const thread = requireThread(config, 'put');
    const ns = (config.configurable?.checkpoint_ns as string | undefined) ?? '';
    const parentId = config.configurable?.checkpoint_id as string | undefined;
    const run = runKey(config);
    return this.locked(thread, async () => {
      await this.withLease(thread, async (lease) => {
        const cached = this.tips.get(tipKey(thread, ns));
        // The tip this saver committed under the lease it still holds is the head: no read needed.
        const own = cached?.lease && cached.lease.runId === lease.runId && cached.lease.epoch === lease.epoch ? cached : undefined;
        const head = own ? { seq: own.position.seq, hash: own.position.hash } : await this.cp.getHead(thread, ns);
        const parentSeq = parentId ? await this.parentSeqOf(thread, ns, parentId, own, head) : null;
        this.checkRun(thread, ns, run, parentSeq, head?.seq ?? null, metadata);
        // The parent's writes still waiting for their commit land in this one; any others first, on their own.
        const folded: DeferredWrite[] = [];
        const foldedPending: PendingWrite[] = [];
        const taken = parentSeq === null || parentId === undefined ? [] : this.takeDeferred(thread, ns, parentId, parentSeq);
        // A copy: should the checkpoint not land, these writes are stored on their own, and must not count as held.
        const held = new Set(taken.length ? await this.heldWrites(thread, ns, parentSeq!, lease) : []);
        for (const write of taken) {
          try {
            const pending = await this.encodePending(write, parentSeq!, true, held);
            // Every write of the call was the parent's already: nothing to fold, the call is done.
            if (!pending) {
              write.resolve();
              continue;
            }
            for (const key of pending.keys) held.add(key);
            foldedPending.push(pending.write);
            folded.push(write);
          } catch (error) {
            // A write that cannot be stored fails its own call, not the checkpoint.
            write.reject(error);
          }
        }
        await this.storeDeferred(thread, lease);
        const parent = parentSeq === null ? null : await this.parentTip(thread, ns, parentSeq, head);
        // Pending writes of the parent in the engine: none but those this saver stored itself, when the parent is its own tip.
        const stored = parent && parent === own && !own.pendingStored ? [] : undefined;
        try {
          await this.commit(lease, { thread, ns, checkpoint, metadata, newVersions, parentId, parent, expectedHead: head?.seq ?? null, folded: foldedPending, stored });
        } catch (error) {
          // The checkpoint did not land: its parent's writes are still owed, on their own.
          if (folded.length) this.requeue(thread, folded);
          throw error;
        }
        for (const write of folded) write.resolve();
      });
      if (run) {
        const state = this.runs.get(run);
        if (state) state.puts++;
        else this.runs.set(run, { loaded: 'latest', puts: 1 });
      }
      return { configurable: { thread_id: thread, checkpoint_ns: ns, checkpoint_id: checkpoint.id } };
    });
  }

  /**
   * The seq of checkpoint `id`, the parent a put names (null: not in the namespace). The
   * id index is this process's: a thread another process deleted (and perhaps wrote
   * again) leaves it stale, so a seq it gives is trusted only where the head or the
   * position says the same (the saver's own tip, or the tip it read at the head, needs no read).
   */
  private async parentSeqOf(thread: string, ns: string, id: string, own: Tip | undefined, head: { seq: number; hash: string } | null): Promise<number | null> {
    if (own && own.id === id) return own.position.seq;
    // The tip this saver read at the head (a run resumed in a new process): no index to build.
    const tip = this.tips.get(tipKey(thread, ns));
    if (head !== null && tip !== undefined && tip.id === id && tip.position.seq === head.seq && tip.position.hash === head.hash) return head.seq;
    const seq = await this.index.seqOf(thread, ns, id);
    if (seq === null) return null;
    if (head !== null && seq <= head.seq && (await this.idAt(thread, ns, seq)) === id) return seq;
    this.index.forget(thread);
    return this.index.seqOf(thread, ns, id);
  }

  /**
   * Stores writes of task `taskId` against the checkpoint `config` names, kept until (and
   * after) its child checkpoint lands. CheckpointNotFoundError when that checkpoint does
   * not land within `writesWaitMs`, or is gone (another process deleted the thread): the
   * writes are stored on the checkpoint named, wherever it is now, or not at all.
   */
  async putWrites(config: RunnableConfig, writes: LangGraphWrite[], taskId: string, taskPath = ''): Promise<void> {
    const thread = requireThread(config, 'putWrites');
    const ns = (config.configurable?.checkpoint_ns as string | undefined) ?? '';
    const id = config.configurable?.checkpoint_id as string | undefined;
    if (!id) throw new InvalidOptionError('putWrites needs config.configurable.checkpoint_id: writes belong to a checkpoint.', { place: LANGGRAPH });
    // Queued at once, so that a put called after this call (LangGraph's next checkpoint) finds them.
    const landed = new Promise<void>((resolve, reject) => {
      const queue = this.deferred.get(thread) ?? [];
      queue.push({ ns, id, seq: undefined, writes, taskId, taskPath, interrupt: ns === '' && writes.some(([channel]) => channel === '__interrupt__'), resolve, reject });
      this.deferred.set(thread, queue);
    });
    this.scheduleFlush(thread);
    return landed;
  }

  /**
   * A deferred call's writes as one cairn pending write. They are encoded when they are
   * stored, not when handed over: LangGraph's messages reducer gives a written message
   * its id when it applies the write, so a put (which comes after that) stores the
   * message as the channel holds it, and the folded write can point at the channel's
   * item. Writes stored on their own are encoded without being remembered, as they may
   * still change so.
   */
  private async encodePending(write: DeferredWrite, seq: number, remember: boolean, held: ReadonlySet<string>): Promise<{ write: PendingWrite; keys: string[] } | null> {
    const stored: StoredWrite[] = [];
    // LangGraph's savers store a call of special writes only (an error, an interrupt, a
    // resume value) over what the task wrote to those channels before, and any other call
    // only where the task has no write at that index yet: a task's writes handed over
    // again (a retried call) never replace the first ones.
    const replaces = write.writes.every(([channel]) => channel in WRITES_IDX_MAP);
    for (let i = 0; i < write.writes.length; i++) {
      const [channel, value] = write.writes[i]!;
      const entry: StoredWrite = { task: write.taskId, path: write.taskPath, idx: WRITES_IDX_MAP[channel] ?? i, channel };
      if (!replaces && held.has(writeKey(entry))) continue;
      // A list is kept as its items' texts: when the checkpoint after this one appends
      // them to the channel, the folded write points at those items instead of copying them.
      if (Array.isArray(value)) entry.items = await this.values.encodeItems(value, remember);
      else entry.value = await this.values.encode(value, remember);
      stored.push(entry);
    }
    if (stored.length === 0 && write.writes.length > 0) return null;
    // One call's writes are one pending write, so one transaction: a task whose writes
    // landed only in part would pass for done, and its missing writes (the edge to the
    // next node, say) would be lost on resume.
    return {
      write: { ns: write.ns, baseSeq: seq, task: `${write.taskId}#${stored.map((w) => w.idx).join(',')}`, body: encode({ writes: stored }) },
      keys: stored.map(writeKey),
    };
  }

  /**
   * The writes checkpoint `seq` holds already, as {@link writeKey}s: those this saver
   * stored at its own tip, known without a read (the set is the tip's, extended as writes
   * land); otherwise every write stored at the checkpoint or folded into its children.
   */
  private async heldWrites(thread: string, ns: string, seq: number, lease: ThreadLease): Promise<Set<string>> {
    const tip = this.tips.get(tipKey(thread, ns));
    if (tip && tip.position.seq === seq && tip.lease?.runId === lease.runId && tip.lease.epoch === lease.epoch) return (tip.pendingKeys ??= new Set());
    // The head has no children (a position takes the head's seq + 1): its writes are its pending ones, read without the id index.
    const head = await this.cp.getHead(thread, ns);
    const writes = head?.seq === seq ? (await this.cp.getPendingWrites(thread, ns, seq)).flatMap(pendingWrites) : await this.writesOf(thread, ns, seq);
    return new Set(writes.map(writeKey));
  }

  /**
   * Commits the thread's deferred writes on their own at the next turn of the event
   * loop: a put that follows its task's writes at once (LangGraph puts the next
   * checkpoint as soon as a superstep's tasks are done) has taken them by then, and a
   * task whose superstep goes on (a parallel task still running) has its writes durable
   * one turn after it finished.
   */
  private scheduleFlush(thread: string): void {
    if (this.flushScheduled.has(thread)) return;
    this.flushScheduled.add(thread);
    setImmediate(() => {
      this.flushScheduled.delete(thread);
      void this.flush(thread);
    });
  }

  /**
   * Stores the thread's deferred writes on their own. Each one's checkpoint is found
   * first, outside the thread's lock: writes can arrive before their checkpoint's put
   * (LangGraph hands a task's writes over while that put is still queued), which needs
   * the lock to land; writes of a checkpoint that never lands fail their call.
   */
  private async flush(thread: string): Promise<void> {
    for (const write of [...(this.deferred.get(thread) ?? [])]) {
      if (write.seq !== undefined) continue;
      try {
        write.seq = await this.seqOncePut(thread, write.ns, write.id);
      } catch (error) {
        this.dropDeferred(thread, [write]);
        write.reject(error);
      }
    }
    await this.locked(thread, async () => {
      if (!this.deferred.get(thread)?.some((w) => w.seq !== undefined)) return;
      // A write that fails rejects its own putWrites call; the flush itself has no caller to tell.
      await this.storeOnTheirOwn(thread).catch(() => undefined);
    });
    // Writes handed over meanwhile, whose checkpoint was not looked up yet.
    if (this.deferred.get(thread)?.length) this.scheduleFlush(thread);
  }

  /** The deferred writes of checkpoint `id` of `ns` (the checkpoint at `seq`), taken out of the queue. */
  private takeDeferred(thread: string, ns: string, id: string, seq: number): DeferredWrite[] {
    const taken = (this.deferred.get(thread) ?? []).filter((w) => w.ns === ns && w.id === id);
    this.dropDeferred(thread, taken);
    for (const write of taken) write.seq = seq;
    return taken;
  }

  private dropDeferred(thread: string, writes: readonly DeferredWrite[]): void {
    if (writes.length === 0) return;
    const rest = (this.deferred.get(thread) ?? []).filter((w) => !writes.includes(w));
    if (rest.length) this.deferred.set(thread, rest);
    else this.deferred.delete(thread);
  }

  /**
   * Stores the thread's deferred writes whose checkpoint is known on their own, under a
   * lease taken for them (called under the thread's lock). A thread that is gone (another
   * process deleted it) is not created again to hold them: they have no checkpoint, and
   * their calls fail with CheckpointNotFoundError.
   */
  private async storeOnTheirOwn(thread: string): Promise<void> {
    try {
      await this.withLease(thread, (lease) => this.storeDeferred(thread, lease), { create: false });
    } catch (error) {
      if (!ThreadNotFoundError.is(error)) throw error;
      const ready = (this.deferred.get(thread) ?? []).filter((w) => w.seq !== undefined);
      this.dropDeferred(thread, ready);
      this.forgetThread(thread);
      for (const write of ready) write.reject(checkpointNotFound(thread, write.ns, write.id));
    }
  }

  /**
   * The seq of the checkpoint a deferred write names, checked under the lease (so that
   * nothing moves it before the write is stored). The seq its lookup gave (the saver's
   * tip, its id index) is this process's view: stale once another process deleted the
   * thread, and perhaps wrote it again; stored there, the writes would belong to whatever
   * checkpoint took that seq, or to none until the next one takes it. Only the tip this
   * saver committed under the lease it holds needs no read. Null: the checkpoint is not
   * in the namespace.
   */
  private async checkedSeq(thread: string, write: DeferredWrite, lease: ThreadLease): Promise<number | null> {
    const seq = write.seq!;
    const tip = this.tips.get(tipKey(thread, write.ns));
    if (tip && tip.id === write.id && tip.position.seq === seq && tip.lease?.runId === lease.runId && tip.lease.epoch === lease.epoch) return seq;
    if ((await this.idAt(thread, write.ns, seq)) === write.id) return seq;
    // Under the lease the thread holds still: the index read afresh is what is stored.
    this.forgetThread(thread);
    return this.index.seqOf(thread, write.ns, write.id);
  }

  /** Forgets what this saver knew of a thread another process changed under it: its id index and its tips. */
  private forgetThread(thread: string): void {
    this.index.forget(thread);
    for (const key of [...this.tips.keys()]) if (key.startsWith(`${thread}\u0000`)) this.tips.delete(key);
  }

  /** Puts writes back in front of the queue (their put failed) and schedules their flush. */
  private requeue(thread: string, writes: DeferredWrite[]): void {
    this.deferred.set(thread, [...writes, ...(this.deferred.get(thread) ?? [])]);
    this.scheduleFlush(thread);
  }

  /**
   * Stores the thread's deferred writes whose checkpoint is known, each as its own
   * pending write, in call order (called under the thread's lock and lease). The others
   * stay queued for the flush, which waits for their checkpoint.
   */
  private async storeDeferred(thread: string, lease: ThreadLease): Promise<void> {
    const ready = (this.deferred.get(thread) ?? []).filter((w) => w.seq !== undefined);
    this.dropDeferred(thread, ready);
    // What each checkpoint holds already, read once per checkpoint and extended as writes land.
    const heldAt = new Map<string, Set<string>>();
    for (let i = 0; i < ready.length; i++) {
      const write = ready[i]!;
      try {
        const seq = await this.checkedSeq(thread, write, lease);
        if (seq === null) {
          // The checkpoint is gone (another process deleted the thread): the writes have nothing to belong to.
          write.reject(checkpointNotFound(thread, write.ns, write.id));
          continue;
        }
        write.seq = seq;
        const at = tipKey(write.ns, String(seq));
        let held = heldAt.get(at);
        if (!held) heldAt.set(at, (held = await this.heldWrites(thread, write.ns, seq, lease)));
        const pending = await this.encodePending(write, seq, false, held);
        if (!pending) {
          // Every write of the call is stored already: the call is done, as LangGraph's savers ignore it.
          write.resolve();
          continue;
        }
        await this.cp.putPendingWrite(lease, pending.write);
        for (const key of pending.keys) held.add(key);
        crashPoint('after-pending-write');
        const tip = this.tips.get(tipKey(thread, write.ns));
        if (tip && tip.position.seq === seq) tip.pendingStored = true;
        // A pending interrupt at the root head is the thread's status, as a cairn run's is.
        if (write.interrupt) {
          const head = await this.cp.getHead(thread, write.ns);
          if (head?.seq === seq) await this.cp.updateThread(lease, { status: 'interrupted' });
        }
      } catch (error) {
        // Lost lease, closed engine, a value that cannot be stored: neither this write nor the ones after it landed.
        for (const rest of ready.slice(i)) rest.reject(error);
        throw error;
      }
      write.resolve();
    }
  }

  /**
   * The seq of checkpoint `id`, waiting for its put when it has not landed yet: LangGraph
   * chains its puts behind one another but hands a task's writes over at once, so the
   * writes of a checkpoint can arrive before the checkpoint does. They are written once
   * it lands (writes of a checkpoint that never lands have nothing to belong to).
   */
  private async seqOncePut(thread: string, ns: string, id: string): Promise<number> {
    const key = `${tipKey(thread, ns)}\u0000${id}`;
    let waiter = this.awaitedPuts.get(key);
    if (!waiter) {
      let resolve!: () => void;
      const landed = new Promise<void>((r) => (resolve = r));
      this.awaitedPuts.set(key, (waiter = { landed, resolve, waiting: 0 }));
    }
    waiter.waiting++;
    try {
      // The tip this saver wrote or read (a run's writes go to the checkpoint it just put or loaded): no index to build.
      const tip = this.tips.get(tipKey(thread, ns));
      const known = tip?.id === id ? tip.position.seq : await this.index.seqOf(thread, ns, id);
      if (known !== null) return known;
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), this.writesWaitMs)));
      const outcome = await Promise.race([waiter.landed, timeout]);
      clearTimeout(timer);
      const seq = outcome === 'timeout' ? null : await this.index.seqOf(thread, ns, id);
      if (seq === null) throw checkpointNotFound(thread, ns, id);
      return seq;
    } finally {
      if (--waiter.waiting === 0 && this.awaitedPuts.get(key) === waiter) this.awaitedPuts.delete(key);
    }
  }

  /**
   * Deletes the thread: every namespace's checkpoints and writes (cairn's `deleteThread`).
   * A thread another saver is writing (its lease live past `busyWaitMs`) is refused with
   * ThreadBusyError, nothing deleted.
   */
  async deleteThread(threadId: string): Promise<void> {
    const thread = String(threadId);
    await this.locked(thread, async () => {
      // Writes accepted before the delete land first, and go with the thread.
      if (this.deferred.get(thread)?.length) await this.storeOnTheirOwn(thread).catch(() => undefined);
      const held = this.held.get(thread);
      if (held) {
        clearTimeout(held.timer);
        this.held.delete(thread);
      }
      // Another saver's kept lease (a run that just wrote) is waited for, as a write waits for it.
      await this.whileBusy(() => this.cp.deleteThread(thread, held ? { lease: held.lease } : {})).catch(async (error: unknown) => {
        // The kept lease was lost meanwhile: delete as anyone would.
        if (held && LeaseLostError.is(error)) return this.whileBusy(() => this.cp.deleteThread(thread));
        throw error;
      });
      this.index.forget(thread);
      for (const key of [...this.tips.keys()]) if (key.startsWith(`${thread}\u0000`)) this.tips.delete(key);
    });
  }

  // ------------------------------------------------------------------ reading

  private async tuple(
    thread: string,
    ns: string,
    loaded: PositionState,
    record: LangGraphRecord,
    versions: ResolvedRecord,
    resolving: Resolving,
    cache?: WeakMap<object, unknown>,
    known?: KnownPositions,
    lists?: WeakMap<readonly unknown[], unknown[]>,
  ): Promise<CheckpointTuple> {
    const channelValues: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(loaded.state)) {
      if (!Object.hasOwn(versions.versions, name)) continue;
      const decoded = value instanceof ListView ? await this.viewValue(value, lists, cache) : await this.fieldValue(value, Object.hasOwn(loaded.appends, name), cache);
      if (decoded !== ABSENT) channelValues[name] = decoded;
    }
    const checkpoint: Checkpoint = {
      ...(record.extra ?? {}),
      v: record.v ?? CHECKPOINT_FORMAT,
      id: record.id,
      ts: record.ts ?? new Date(loaded.position.createdAt).toISOString(),
      channel_values: channelValues,
      channel_versions: { ...versions.versions },
      versions_seen: copySeen(versions.seen),
    } as Checkpoint;
    const writes = await this.writesOf(thread, ns, loaded.position.seq, known, resolving);
    const tuple: CheckpointTuple = {
      config: { configurable: { thread_id: thread, checkpoint_ns: ns, checkpoint_id: record.id } },
      checkpoint,
      metadata: (await this.metadataOf(record, loaded.position, loaded.body.kind)) as CheckpointMetadata,
      pendingWrites: await this.pendingTuples(writes),
    };
    const parentId = record.parentId ?? (loaded.position.parent === null ? undefined : await this.idAt(thread, ns, loaded.position.parent, known));
    if (parentId !== undefined) {
      tuple.parentConfig = { configurable: { thread_id: thread, checkpoint_ns: ns, checkpoint_id: parentId } };
      // Checkpoints before format 4 kept pending sends as the parent's writes.
      if ((record.v ?? CHECKPOINT_FORMAT) < 4 && loaded.position.parent !== null) {
        const sends = (await this.writesOf(thread, ns, loaded.position.parent)).filter((w) => w.channel === TASKS);
        checkpoint.channel_values[TASKS] = await Promise.all(sends.map((w) => this.writeValue(w)));
        const versions = Object.values(checkpoint.channel_versions);
        checkpoint.channel_versions[TASKS] = versions.length > 0 ? maxChannelVersion(...versions) : this.getNextVersion(undefined);
      }
    }
    return tuple;
  }

  /** A list channel's value from a view of a page's shared items: those not decoded yet are, once for the page. */
  private async viewValue(view: ListView, lists: WeakMap<readonly unknown[], unknown[]> | undefined, cache?: WeakMap<object, unknown>): Promise<unknown> {
    const first = view.items.slice(0, Math.min(view.length, 1));
    if (view.length === 1 && isSingleWrapper(first)) return this.fieldValue(first, true, cache);
    let decoded = lists?.get(view.items);
    if (!decoded) {
      decoded = [];
      lists?.set(view.items, decoded);
    }
    if (decoded.length < view.length) decoded.push(...(await this.decodeItems(view.items.slice(decoded.length, view.length), cache)));
    return decoded.slice(0, view.length);
  }

  /** A channel's value from its stored field (a list field's items, or a set value), or ABSENT for an emptied channel. */
  private async fieldValue(value: unknown, isList: boolean, cache?: WeakMap<object, unknown>): Promise<unknown> {
    if (isList) {
      const items = value as unknown[];
      if (isSingleWrapper(items) && isWrapper(items[0], SCALAR)) return this.values.decode(items[0]);
      if (items.length === 1 && isWrapper(items[0], 'empty')) return ABSENT;
      return this.decodeItems(items, cache);
    }
    if (isWrapper(value, 'empty')) return ABSENT;
    return this.values.decode(value);
  }

  /** A list's items from their stored forms: plain items are their own value, wrapped ones (messages...) are decoded, once each with a cache. */
  private async decodeItems(items: readonly unknown[], cache?: WeakMap<object, unknown>): Promise<unknown[]> {
    const out = new Array<unknown>(items.length);
    for (let i = 0; i < items.length; i++) {
      const item = items[i];
      if (!isWrapped(item)) out[i] = item;
      else if (cache?.has(item)) out[i] = cache.get(item);
      else {
        out[i] = await this.values.decode(item);
        cache?.set(item, out[i]);
      }
    }
    return out;
  }

  /** Writes as LangGraph's pending writes; a plain value folded in a body is its own value, with no await (a history has thousands). */
  private async pendingTuples(writes: readonly StoredWrite[]): Promise<CheckpointPendingWrite[]> {
    const out: CheckpointPendingWrite[] = [];
    for (const w of writes) {
      const plain = w.value === undefined && !w.items && !w.storedItems && 'storedValue' in w && !isWrapped(w.storedValue);
      out.push([w.task, w.channel, plain ? w.storedValue : await this.writeValue(w)]);
    }
    return out;
  }

  /** A write's value, from its stored form. */
  private async writeValue(write: StoredWrite): Promise<unknown> {
    if (write.items) return Promise.all(write.items.map((text) => this.values.decodeText(text)));
    if (write.storedItems) return Promise.all(write.storedItems.map((item) => this.values.decode(item)));
    if (write.value === undefined && 'storedValue' in write) return this.values.decode(write.storedValue);
    return this.values.decodeText(write.value ?? 'null');
  }

  /** A record's metadata, whichever form it was stored in (`position` and `kind`: its position's, which say what `m` leaves out). */
  private async metadataOf(record: LangGraphRecord, position: StoredPosition, kind: string): Promise<unknown> {
    if (record.meta !== undefined) return isWrapped(record.meta) ? this.values.decode(record.meta) : record.meta;
    if (record.metadata !== undefined) return this.values.decodeText(record.metadata);
    const rest = record.m === undefined ? {} : isWrapped(record.m) ? await this.values.decode(record.m) : record.m;
    return { ...impliedMetadata(kind, position.step), ...(rest as Record<string, unknown>) };
  }

  /**
   * The versions and versions seen of the checkpoint at `seq`, in full: its record's, or
   * its parent's (and so on back to a full record) rolled forward. `links`: positions
   * read already (a load's chain, a listing's page), by seq; `cache`: versions found so
   * far, by seq. A load's chain starts at a full record (a snapshot's position, or the
   * namespace's first), so a parent neither gives is read only for a chain that starts
   * at a snapshot the saver did not write.
   */
  private async resolvedAt(thread: string, ns: string, seq: number, links: ReadonlyMap<number, ChainLink>, cache?: Map<number, ResolvedRecord>): Promise<ResolvedRecord> {
    const walked: { seq: number; step: number; record: LangGraphRecord; changed: string[] }[] = [];
    let found: ResolvedRecord | undefined;
    for (let at: number | null = seq; at !== null; ) {
      found = cache?.get(at);
      if (found) break;
      const link: ChainLink | undefined = links.get(at) ?? (await this.linkAt(thread, ns, at));
      const record = link ? langGraphRecord(link.body) : null;
      if (!link || !record) throw new CorruptRecordError(`the checkpoint at position ${seq} keeps its versions as a difference from its ancestors' versions, but position ${at} ${link ? 'holds no checkpoint' : 'is missing'}.`, { place: { engine: this.cp.engine, thread, ns, seq } });
      walked.push({ seq: at, step: link.position.step, record, changed: Object.keys(link.body.changes) });
      if (isFullRecord(record)) break;
      at = link.position.parent;
    }
    for (let i = walked.length - 1; i >= 0; i--) {
      const { seq: at, step, record, changed } = walked[i]!;
      found = resolveRecord(record, changed, found, { ns, step });
      if (!found) throw new CorruptRecordError(`the checkpoint at position ${at} keeps its versions as a difference from its parent's, but it has no parent.`, { place: { engine: this.cp.engine, thread, ns, seq: at } });
      cache?.set(at, found);
    }
    return found!;
  }

  /** A position and its decoded body, read on its own. */
  private async linkAt(thread: string, ns: string, seq: number): Promise<ChainLink | undefined> {
    const position = await this.cp.getPosition(thread, ns, seq);
    return position ? { position, body: decode<PositionBody>(position.body, `position ${seq} of thread ${thread}`) } : undefined;
  }

  /** The checkpoint id of the position at `seq` (a parent, whose id the child's record leaves out). */
  private async idAt(thread: string, ns: string, seq: number, known?: KnownPositions): Promise<string | undefined> {
    const body = known?.bodies.get(seq) ?? (await this.cp.getPosition(thread, ns, seq).then((p) => (p ? decode<PositionBody>(p.body) : null)));
    return body ? langGraphRecord(body)?.id : undefined;
  }

  /**
   * A checkpoint's writes: those still pending at it, and those its children folded in;
   * in LangGraph's order. `resolving`: what a child's record that keeps its folded writes
   * as the parent's shape (`tl`) resolves from.
   */
  private async writesOf(thread: string, ns: string, seq: number, known?: KnownPositions, resolving: Resolving = { links: new Map(), cache: new Map() }): Promise<StoredWrite[]> {
    const byKey = new Map<string, StoredWrite>();
    // A listing holds the positions it read, the newer ones first, and so each one's children.
    const children = known ? (known.children.get(seq) ?? []) : await this.index.childrenOf(thread, ns, seq);
    for (const child of children) {
      let body = known?.bodies.get(child) ?? resolving.links.get(child)?.body;
      if (!body) {
        const link = await this.linkAt(thread, ns, child);
        if (link) resolving.links.set(child, link);
        body = link?.body;
      }
      const record = body ? langGraphRecord(body) : null;
      const tasks = record?.tl ? (resolving.cache.get(child) ?? (await this.resolvedAt(thread, ns, child, resolving.links, resolving.cache))).tasks : undefined;
      const folded = record ? foldedWrites(record, tasks) : undefined;
      if (!folded) continue;
      const fields = [...new Set(folded.filter((w) => w.ref).map((w) => w.channel))].sort();
      const read = fields.length ? known?.items.get(child) : undefined;
      const items = !fields.length ? [] : read ? read.filter((item) => fields.includes(item.field)) : await this.cp.getPositionItems(thread, ns, child, fields);
      for (const write of folded) {
        if (write.ref) {
          const [from, count] = write.ref;
          const texts = items.filter((item) => item.field === write.channel && item.index >= from && item.index < from + count).map((item) => item.text);
          const { ref: _ref, ...rest } = write;
          byKey.set(writeKey(write), { ...rest, items: texts });
        } else byKey.set(writeKey(write), write);
      }
    }
    for (const pending of known?.pending.get(seq) ?? (await this.cp.getPendingWrites(thread, ns, seq))) {
      for (const write of pendingWrites(pending)) byKey.set(writeKey(write), write);
    }
    return [...byKey.values()].sort((a, b) => compareWritesSortKeys([a.path, a.task, a.idx], [b.path, b.task, b.idx]));
  }

  private async metadataMatches(record: LangGraphRecord, position: StoredPosition, kind: string, filter: Record<string, unknown>): Promise<boolean> {
    return this.metadataHas((await this.metadataOf(record, position, kind)) as Record<string, unknown>, filter);
  }

  /**
   * True when `metadata` contains `filter` (see langgraph/metadata-filter). Metadata
   * whose filtered values are not JSON data as they stand (a Date, a Map) is matched in
   * the form PostgresSaver stores: the serializer's JSON of it.
   */
  private async metadataHas(metadata: Record<string, unknown>, filter: Record<string, unknown>): Promise<boolean> {
    if (filteredValuesAreJson(metadata, filter)) return metadataContains(metadata, filter);
    try {
      const [, bytes] = await this.serde.dumpsTyped(metadata);
      const json = JSON.parse(typeof bytes === 'string' ? bytes : new TextDecoder().decode(bytes).replace(/\0/g, '')) as unknown;
      return typeof json === 'object' && json !== null && metadataContains(json as Record<string, unknown>, filter);
    } catch {
      // Metadata the serializer does not write as JSON matches no filter, as it could not be stored by PostgresSaver.
      return false;
    }
  }

  // ------------------------------------------------------------------ writing

  /** The parent's state as the put compares with it: the tip this saver keeps, or the position loaded. */
  private async parentTip(thread: string, ns: string, seq: number, head: { seq: number; hash: string } | null): Promise<Tip> {
    const cached = this.tips.get(tipKey(thread, ns));
    if (cached && cached.position.seq === seq && (head?.seq !== seq || cached.position.hash === head.hash)) return cached;
    const loaded = await materialize(this.cp, undefined, thread, ns, seq, head?.seq === seq ? { head } : {});
    const record = langGraphRecord(loaded.body);
    return this.tipOf(loaded, record, record ? await this.resolvedAt(thread, ns, seq, linksOf(loaded.chain)) : undefined);
  }

  private tipOf(loaded: LoadedPosition, record: LangGraphRecord | null, versions: ResolvedRecord | undefined): Tip {
    const fields = new Map<string, FieldState>();
    for (const [name, value] of Object.entries(loaded.state)) {
      const cursor = loaded.appends[name];
      if (cursor) {
        const texts = (value as unknown[]).map((item) => encode(item));
        fields.set(name, { kind: 'list', texts, since: cursor.since, checksum: loaded.checksums.get(name) ?? ItemChecksum.of(texts) });
      } else fields.set(name, { kind: 'set', text: encode(value) });
    }
    return { position: loaded.position, id: record?.id ?? '', fields, record: versions, sinceSnapshot: loaded.sinceSnapshot.positions };
  }

  private async commit(
    lease: ThreadLease,
    put: {
      thread: string;
      ns: string;
      checkpoint: Checkpoint;
      metadata: CheckpointMetadata;
      newVersions: ChannelVersions;
      parentId: string | undefined;
      parent: Tip | null;
      expectedHead: number | null;
      /** The parent's deferred writes this commit lands. */
      folded: readonly PendingWrite[];
      /** The parent's pending writes in the engine, when known without reading them. */
      stored: PendingWrite[] | undefined;
    },
  ): Promise<void> {
    const { thread, ns, checkpoint, metadata, parent } = put;
    const seq = put.expectedHead === null ? 0 : put.expectedHead + 1;
    const fields = new Map(parent?.fields ?? []);
    const changes: Record<string, FieldChange> = {};
    const items: PositionItem[] = [];
    const values = checkpoint.channel_values as Record<string, unknown>;
    for (const name of Object.keys(put.newVersions).sort()) {
      const previous = fields.get(name);
      const present = Object.hasOwn(values, name) && values[name] !== undefined;
      const value = present ? values[name] : undefined;
      if (Array.isArray(value)) {
        // LangGraph's reducers hand over a new list of the same item objects plus the new
        // ones: only those are encoded, and the step costs the same at any length.
        const kept = previous?.kind === 'list' && previous.values && startsWith(value, previous.values) ? previous : undefined;
        const texts = kept ? kept.texts.concat(await this.values.encodeItems(value.slice(kept.values!.length))) : await this.values.encodeItems(value);
        if (previous?.kind === 'list' && (kept || extendsList(previous.texts, texts))) {
          const added = texts.slice(previous.texts.length);
          changes[name] = { append: added.length };
          added.forEach((text, i) => items.push({ field: name, index: i, text }));
          fields.set(name, { kind: 'list', texts, since: previous.since, checksum: previous.checksum.extend(added), values: value.slice() });
        } else {
          changes[name] = { reset: texts.length };
          texts.forEach((text, i) => items.push({ field: name, index: i, text }));
          fields.set(name, { kind: 'list', texts, since: seq, checksum: ItemChecksum.of(texts), values: value.slice() });
        }
        continue;
      }
      const text = present ? await this.values.encode(value) : EMPTY_TEXT;
      if (previous?.kind === 'list') {
        // A field with items reads as its items: a value that is not a list replaces them with one wrapped item.
        const item = present ? await this.values.encodeScalarItem(value) : EMPTY_TEXT;
        changes[name] = { reset: 1 };
        items.push({ field: name, index: 0, text: item });
        fields.set(name, { kind: 'list', texts: [item], since: seq, checksum: ItemChecksum.of([item]) });
        continue;
      }
      changes[name] = { set: new RawJson(text) };
      fields.set(name, { kind: 'set', text });
    }

    const { v, id, ts, channel_values: _values, channel_versions, versions_seen, ...extra } = checkpoint;
    const created = Date.parse(ts);
    const createdAt = Number.isFinite(created) ? created : Date.now();
    const kind = SOURCE_KINDS[metadata.source] ?? 'step';
    const step = Math.max(0, (typeof metadata.step === 'number' ? metadata.step : 0) + 1);
    const sinceSnapshot = (parent?.sinceSnapshot ?? 0) + 1;
    const snapshotHere = sinceSnapshot >= this.snapshotEvery;
    const full: ResolvedRecord = { id, versions: { ...channel_versions }, seen: copySeen(versions_seen), tasks: [] };
    const record: LangGraphRecord = { id };
    if (v !== CHECKPOINT_FORMAT) record.v = v;
    // Versions as their difference from the parent's, but at a snapshot (where loads and
    // compaction bases start) and at a namespace's first position: there, in full.
    const from = snapshotHere ? undefined : parent?.record;
    if (from) Object.assign(record, versionsDelta(from.versions, Object.keys(changes), full.versions));
    else record.versions = full.versions;
    const seen = from ? seenDelta(from.seen, full.seen) : null;
    if (!seen) record.seen = full.seen;
    else {
      // The same node again on the same trigger (a loop's steps): said by `dl` alone.
      if (seenAsParents(seen, from!)) record.dl = 1;
      else if (Object.keys(seen).length) record.ds = seen;
      full.seenChanged = changedOf(seen);
    }
    // Metadata without what the position says (its step, its source, no parents).
    const rest = Object.getPrototypeOf(metadata) === Object.prototype ? metadataRest(metadata as Record<string, unknown>, kind, step) : null;
    if (!rest) record.meta = new RawJson(await this.values.encode(metadata));
    else if (Object.keys(rest).length) record.m = new RawJson(await this.values.encode(rest));
    // What the position says already is not repeated: its time (LangGraph's ts is an ISO
    // string of it), and its parent's id.
    if (new Date(createdAt).toISOString() !== ts) record.ts = ts;
    if (put.parentId !== undefined && parent?.id !== put.parentId) record.parentId = put.parentId;
    if (Object.keys(extra).length) record.extra = extra;
    if (parent) {
      const pending = put.stored ?? (await this.cp.getPendingWrites(thread, ns, parent.position.seq));
      // A deferred write replaces a stored one of the same key, as storing it would have.
      const byTask = new Map(pending.map((p) => [p.task, p]));
      for (const write of put.folded) byTask.set(write.task, write);
      const all = [...byTask.values()].sort((a, b) => (a.task < b.task ? -1 : a.task > b.task ? 1 : 0));
      if (all.length) full.tasks = foldWrites(all.flatMap(pendingWrites), items);
    }
    // Writes folded as the parent's were (the same node's, to the same channels, with the same values or refs): their task ids only.
    if (full.tasks?.length) {
      if (from?.tasks && sameTaskShape(full.tasks, from.tasks, encode)) {
        // Each id LangGraph derives (a pull task's, from the parent's id) is 0: derived again on read.
        const context = { ns, step: step - 1, parentId: parent!.id, seenChanged: full.seenChanged };
        record.tl = full.tasks.map((task) => (derivedTaskId(task.path, context) === task.task ? 0 : task.task));
      }
      else record.parentTasks = full.tasks;
    }
    const body: SaverBody = {
      kind,
      nodes: [],
      attempt: 1,
      lease: lease.epoch,
      changes,
      next: [],
      langgraph: record,
    };
    items.sort(comparePositionItems);
    const unsigned = {
      ns,
      seq,
      parent: parent?.position.seq ?? null,
      segment: parent && parent.position.seq === seq - 1 ? parent.position.segment : seq,
      step,
      schemaVersion: SCHEMA_VERSION,
      createdAt,
      body: encode(body, 'position body'),
    };
    const position: StoredPosition = { ...unsigned, hash: hashPosition(unsigned, items, parent?.position.hash ?? GENESIS_HASH) };
    const snapshot = snapshotHere ? snapshotText(position, parent?.position.hash ?? GENESIS_HASH, fields) : undefined;
    crashPoint('before-commit');
    if (snapshot) crashPoint('inside-snapshot');
    await this.cp.commitStep(lease, { position, items, ...(snapshot ? { snapshot } : {}), status: 'completed', expectedHead: put.expectedHead });
    // The parent's deferred writes landed with the checkpoint, in its body.
    for (const _write of put.folded) crashPoint('after-pending-write');
    crashPoint('after-commit');
    this.index.add(thread, ns, id, seq, unsigned.parent);
    this.awaitedPuts.get(`${tipKey(thread, ns)}\u0000${id}`)?.resolve();
    this.tips.set(tipKey(thread, ns), { position, id, fields, record: full, sinceSnapshot: snapshot ? 0 : sinceSnapshot, lease: { runId: lease.runId, epoch: lease.epoch } });
  }

  // ------------------------------------------------------------------ runs, leases

  /** Remembers how a run started (LangGraph reads the checkpoint it starts from with the run's config). */
  private noteLoad(config: RunnableConfig, id: string | undefined): void {
    const run = runKey(config);
    if (run && !this.runs.has(run)) this.runs.set(run, { loaded: id ? 'addressed' : 'latest', puts: 0 });
  }

  /**
   * One run per thread. A run's checkpoint extends the head it read: when the head is
   * elsewhere, another run committed in between, and putting this one would fork the
   * chain silently. Exceptions: the first checkpoint of a run started from a named
   * checkpoint (time travel branches on purpose), a manual update (`updateState`), and
   * calls made outside a run (no `signal` in the config: the caller addresses positions itself).
   */
  private checkRun(thread: string, ns: string, run: object | undefined, parentSeq: number | null, headSeq: number | null, metadata: CheckpointMetadata): void {
    if (parentSeq === headSeq) return;
    if (!run) return;
    const state = this.runs.get(run);
    if (!state) return;
    if (state.puts === 0 && (state.loaded === 'addressed' || metadata.source === 'update' || metadata.source === 'fork')) return;
    throw new ThreadBusyError(
      thread,
      `it committed seq ${headSeq} of namespace "${ns}" after this run read seq ${parentSeq}`,
      { engine: 'langgraph', ...(ns ? { ns } : {}) },
      'This run wrote nothing; invoke again to go on from the other run\'s checkpoint.',
    );
  }

  /**
   * Runs `fn` under the thread's lease. The lease is kept between writes (a run's
   * puts and writes follow one another closely) and given back once the thread has
   * been idle for `idleReleaseMs`; another process's write meanwhile waits for it (up
   * to `busyWaitMs`). A kept lease near its expiry is renewed first; one taken over
   * (LeaseLostError) is dropped, so the next write acquires afresh. Called under the
   * thread's lock, so one lease is never used by two writes at once.
   */
  private async withLease<T>(thread: string, fn: (lease: ThreadLease) => Promise<T>, options: { create?: boolean } = {}): Promise<T> {
    let held = this.held.get(thread);
    if (held) {
      clearTimeout(held.timer);
      if (held.lease.expiresAt - Date.now() < this.leaseMs / 2) {
        try {
          held.lease = await this.cp.renewLease(held.lease, this.leaseMs);
        } catch (error) {
          if (!LeaseLostError.is(error)) throw error;
          this.held.delete(thread);
          held = undefined;
        }
      }
    }
    const lease = held?.lease ?? (await this.acquire(thread, options.create ?? true));
    try {
      return await fn(lease);
    } catch (error) {
      if (LeaseLostError.is(error)) this.held.delete(thread);
      throw error;
    } finally {
      if (this.held.has(thread) || !held) this.keep(thread, lease);
    }
  }

  /** Takes the thread's lease; `create`: creating the thread when it is missing (else ThreadNotFoundError). */
  private async acquire(thread: string, create: boolean): Promise<ThreadLease> {
    const owner = { runId: randomUUID(), pid: process.pid, host: HOST };
    return this.whileBusy(() =>
      this.cp.acquireThread(thread, { owner, leaseMs: this.leaseMs, ...(create ? { create: { kind: this.kind, tenant: null, metadata: { langgraph: true } } } : {}) }),
    );
  }

  /**
   * Runs `fn` again while another saver holds the thread (ThreadBusyError), up to
   * `busyWaitMs`: a saver keeps its lease for `idleReleaseMs` after its last write, so a
   * thread a run just finished with is free a moment later.
   */
  private async whileBusy<T>(fn: () => Promise<T>): Promise<T> {
    const deadline = Date.now() + this.busyWaitMs;
    for (let wait = 5; ; wait = Math.min(wait * 2, 100)) {
      try {
        return await fn();
      } catch (error) {
        if (!ThreadBusyError.is(error) || Date.now() + wait > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
  }

  /** Keeps `lease` for the next write, to be given back after `idleReleaseMs` without one. */
  private keep(thread: string, lease: ThreadLease): void {
    const timer = setTimeout(() => {
      void this.locked(thread, async () => {
        const held = this.held.get(thread);
        if (held?.timer !== timer) return;
        this.held.delete(thread);
        await this.cp.releaseThread(held.lease).catch(() => undefined);
      });
    }, this.idleReleaseMs);
    // A kept lease never keeps the process alive: a dead holder's lease is taken over at once on its host.
    timer.unref();
    this.held.set(thread, { lease, timer });
  }

  /** Gives back every lease this saver keeps (the engine stays open). Further calls take them again. */
  async release(): Promise<void> {
    for (const thread of [...this.deferred.keys()]) {
      await this.locked(thread, () => this.storeOnTheirOwn(thread).catch(() => undefined));
    }
    for (const thread of [...this.held.keys()]) {
      await this.locked(thread, async () => {
        const held = this.held.get(thread);
        if (!held) return;
        clearTimeout(held.timer);
        this.held.delete(thread);
        await this.cp.releaseThread(held.lease).catch(() => undefined);
      });
    }
  }

  /** Serialises this saver's calls on one thread (LangGraph writes a superstep's tasks' writes concurrently). */
  private locked<T>(thread: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.locks.get(thread) ?? Promise.resolve();
    const next = previous.then(fn, fn);
    const settled = next.then(
      () => undefined,
      () => undefined,
    );
    this.locks.set(thread, settled);
    void settled.then(() => {
      if (this.locks.get(thread) === settled) this.locks.delete(thread);
    });
    return next;
  }
}

/** What records resolve from (see `resolvedAt`): positions read, by seq, and the records resolved so far, by seq. */
interface Resolving {
  links: Map<number, ChainLink>;
  cache: Map<number, ResolvedRecord>;
}

/** A load's chain by seq. */
function linksOf(chain: readonly ChainLink[] | undefined): Map<number, ChainLink> {
  return new Map((chain ?? []).map((link) => [link.position.seq, link]));
}

/** What a listing read so far: positions' bodies by seq, and the items of those read with their page (checked against the chain). */
interface KnownPositions {
  bodies: Map<number, PositionBody>;
  items: Map<number, PositionItem[]>;
  /** Seqs of each position's children read so far, oldest first. */
  children: Map<number, number[]>;
  /** The pending writes of each position read so far, when the engine reads a page's at once. */
  pending: Map<number, PendingWrite[]>;
}

const HOST = hostname();
/** Where the adapter's own errors say they come from: `[cairn] [langgraph] …`. */
const LANGGRAPH = { engine: 'langgraph' } as const;
const ABSENT = Symbol('absent');

function tipKey(thread: string, ns: string): string {
  return `${thread}\u0000${ns}`;
}

function checkpointNotFound(thread: string, ns: string, id: string): CheckpointNotFoundError {
  return new CheckpointNotFoundError(thread, id, { engine: 'langgraph', ...(ns ? { ns } : {}) });
}

function requireThread(config: RunnableConfig, call: string): string {
  if (!config.configurable) throw new InvalidOptionError(`${call} needs config.configurable with a thread_id.`, { place: LANGGRAPH });
  const thread = config.configurable.thread_id as unknown;
  if (thread === undefined || thread === null || thread === '') throw new InvalidOptionError(`${call} needs config.configurable.thread_id.`, { place: LANGGRAPH });
  return String(thread);
}

/** The run a config belongs to: LangGraph gives each run its own AbortSignal, passed to every checkpointer call. */
function runKey(config: RunnableConfig): object | undefined {
  const signal = (config as { signal?: unknown }).signal;
  return typeof signal === 'object' && signal !== null ? signal : undefined;
}

/** A copy of `versions_seen` (two levels of plain numbers and strings): what structuredClone does, for less. */
function copySeen(seen: Seen): Seen {
  const copy: Seen = {};
  // for...in, not Object.entries: no array per call (a history copies a thousand).
  for (const node in seen) copy[node] = { ...seen[node] };
  return copy;
}

/** True when `list` begins with the very objects (or equal primitives) of `prefix`. */
function startsWith(list: readonly unknown[], prefix: readonly unknown[]): boolean {
  if (list.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (list[i] !== prefix[i]) return false;
  return true;
}

function extendsList(stored: readonly string[], next: readonly string[]): boolean {
  if (next.length < stored.length) return false;
  for (let i = 0; i < stored.length; i++) if (stored[i] !== next[i]) return false;
  return true;
}

/** A list field holding one wrapped item that stands for a value that is not a list (or for an emptied channel). */
function isSingleWrapper(items: readonly unknown[]): boolean {
  return items.length === 1 && (isWrapper(items[0], SCALAR) || isWrapper(items[0], 'empty'));
}

function isWrapper(value: unknown, kind: string): boolean {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && (value as Record<string, unknown>)[WRAP_KEY] === kind;
}

/**
 * The parent's writes as the child keeps them, by task: a list write whose items the
 * child appended to (or reset) the same channel points at them (`ref`) rather than
 * copying; other values are kept in place, as the body's own JSON.
 */
function foldWrites(writes: StoredWrite[], items: readonly PositionItem[]): FoldedTask[] {
  const byField = new Map<string, string[]>();
  for (const item of items) {
    let texts = byField.get(item.field);
    if (!texts) byField.set(item.field, (texts = []));
    texts[item.index] = item.text;
  }
  const tasks: FoldedTask[] = [];
  for (const write of writes) {
    let task = tasks[tasks.length - 1];
    if (!task || task.task !== write.task || task.path !== write.path) tasks.push((task = { task: write.task, path: write.path, writes: [] }));
    const folded: FoldedWrite = { channel: write.channel };
    if (write.idx !== task.writes.length) folded.idx = write.idx;
    const texts = write.items && byField.get(write.channel);
    const from = write.items && texts && write.items.length > 0 ? findRun(texts, write.items) : -1;
    if (from >= 0) folded.ref = [from, write.items!.length];
    else if (write.items) folded.items = write.items.map((text) => new RawJson(text));
    else folded.value = new RawJson(write.value ?? 'null');
    task.writes.push(folded);
  }
  return tasks;
}

/** Where `run` occurs in `texts` as a contiguous run, or -1. */
function findRun(texts: readonly string[], run: readonly string[]): number {
  for (let start = texts.indexOf(run[0]!); start >= 0 && start + run.length <= texts.length; start = texts.indexOf(run[0]!, start + 1)) {
    let i = 1;
    while (i < run.length && texts[start + i] === run[i]) i++;
    if (i === run.length) return start;
  }
  return -1;
}

/** A write's identity as LangGraph's savers key it (their writes table's primary key, within a checkpoint): its task and index. */
function writeKey(write: { task: string; idx: number }): string {
  return `${write.task}#${write.idx}`;
}

/** The LangGraph writes one cairn pending write holds (one `putWrites` call's). */
function pendingWrites(pending: PendingWrite): StoredWrite[] {
  return decode<{ writes: StoredWrite[] }>(pending.body).writes;
}

function snapshotText(position: StoredPosition, parentHash: string, fields: Map<string, FieldState>): string {
  const values: Record<string, unknown> = {};
  const appends: SnapshotBody['appends'] = {};
  for (const [name, field] of fields) {
    if (field.kind === 'set') values[name] = new RawJson(field.text);
    else appends[name] = { since: field.since, count: field.texts.length, checksum: field.checksum.value() };
  }
  const body: SnapshotBody = { format: SNAPSHOT_FORMAT, schemaVersion: SCHEMA_VERSION, position: position.hash, parent: parentHash, values, appends };
  return sealSnapshot(encode(body, 'snapshot'));
}
