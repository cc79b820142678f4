/**
 * @module crypto/encrypted-checkpointer
 * The thread log of an encrypted engine: every opaque text is sealed before the inner
 * checkpointer sees it and opened when it comes back. Sealed: position bodies, item
 * texts, snapshot texts, pending writes, signal payloads, the outcomes of the effects a
 * commit carries (sealed as the encrypted ledger seals an outcome) and the messages of
 * thread errors (a failure's message can quote what a node was given). In the clear, because
 * engines index, filter or order by them: ids, namespaces, seqs, steps, times,
 * statuses, kinds, tenants, metadata, signal names, error codes, lease holders and
 * chain hashes (hashes of the plaintext: see `docs/architecture.md`).
 *
 * Reads check each row's tag, bound to its identity, except {@link getItems}: the bulk
 * of a load, opened without tags in one AES call per data key, and proven, as a
 * plaintext load is, by the snapshot's item checksum below the snapshot (the items
 * above it come through `getRangeItems`, checked, and the chain hash). `verifyThread`
 * reads through {@link VERIFYING_READS}, which checks every tag.
 */
import type {
  AcquireRequest,
  AttemptFailure,
  Checkpointer,
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
} from '../contracts/checkpointer.js';
import type {
  DeleteThreadOptions,
  DeleteThreadResult,
  LeaseOwner,
  SignalConsume,
  SignalQuery,
  SignalSend,
  StoredSignal,
  ThreadError,
  ThreadLease,
  ThreadQuery,
  ThreadRecord,
} from '../contracts/threads.js';
import { UNSTORABLE } from '../checkpointer/base-checkpointer.js';
import { MAX_SIGNAL_PAYLOAD_BYTES } from '../defaults.js';
import { NotSupportedError } from '../errors.js';
import { comparePositionItems } from '../contracts/checkpointer.js';
import { outcomeAad } from './encrypted-ledger.js';
import { sealText, type DataKey } from './envelope.js';
import { endsPackSpan, mergeRanges, openPack, packAad, packText, packTexts, packValues, PackSpans, PACK_SPAN, type BufferedSpan, type OpenedPack } from './item-packs.js';
import { DECODED_ITEMS, type DecodedItemList } from '../internal/decoded-items.js';
import { CHECK_PACKS, type PackProblem } from '../internal/pack-checks.js';
import { ItemChecksum } from '../codec/hash.js';
import { decode } from '../codec/tagged-json.js';
import { ITEMS_AS_STORED, PACKS_AS_STORED, type ItemsAsStored, type PacksAsStored, type StoredItemPack } from './sealed-bytes.js';
import { VERIFYING_READS } from './scopes.js';
import { rowAad, type Sealer } from './sealer.js';
import type { ThreadScopes } from './thread-scopes.js';

/** One part of a read in seq order: the rows of a range, or a pack opened (its range's rows read instead when its texts are not framed by its lengths). */
type PlanPart = { range: SeqRange } | { pack: OpenedPack; range: SeqRange };

function where(threadId: string, ns: string, seq: number, what: string): string {
  return `thread ${threadId}${ns ? ` ns ${ns}` : ''} seq ${seq} (${what})`;
}

const aad = {
  position: (t: string, ns: string, seq: number) => rowAad('position', t, ns, seq),
  item: (t: string, ns: string, seq: number, field: string, index: number) => rowAad('item', t, ns, seq, field, index),
  snapshot: (t: string, ns: string, seq: number) => rowAad('snapshot', t, ns, seq),
  pending: (t: string, ns: string, baseSeq: number, task: string) => rowAad('pending', t, ns, baseSeq, task),
  signal: (t: string, name: string, sentAt: number) => rowAad('signal', t, name, sentAt),
  error: (t: string, code: string, at: number) => rowAad('error', t, code, at),
};

/**
 * Every member of the contract. A member added to {@link Checkpointer} later fails the
 * build here until the wrapper handles it, so nothing new can reach storage unsealed
 * by passing around this class (test/crypto/encrypted.test.ts checks each is wrapped).
 */
export const CHECKPOINTER_MEMBERS: Record<keyof Checkpointer, 'wrapped' | 'value'> = {
  engine: 'value',
  capabilities: 'value',
  getThread: 'wrapped',
  listThreads: 'wrapped',
  listFailures: 'wrapped',
  acquireThread: 'wrapped',
  renewLease: 'wrapped',
  releaseThread: 'wrapped',
  updateThread: 'wrapped',
  commitStep: 'wrapped',
  getHead: 'wrapped',
  putSnapshot: 'wrapped',
  putPendingWrite: 'wrapped',
  getPendingWrites: 'wrapped',
  getPendingWritesIn: 'wrapped',
  getPosition: 'wrapped',
  getPositions: 'wrapped',
  listNamespaces: 'wrapped',
  listPositions: 'wrapped',
  getSnapshot: 'wrapped',
  getSnapshots: 'wrapped',
  getItems: 'wrapped',
  getPositionItems: 'wrapped',
  getRangeItems: 'wrapped',
  getItemPacks: 'wrapped',
  claimThreads: 'wrapped',
  subscribeRunnable: 'wrapped',
  nextLeaseExpiry: 'wrapped',
  leaseHolders: 'wrapped',
  sendSignal: 'wrapped',
  listSignals: 'wrapped',
  consumeSignal: 'wrapped',
  deleteThread: 'wrapped',
  compactThread: 'wrapped',
  close: 'wrapped',
};

export class EncryptedCheckpointer implements Checkpointer {
  readonly engine: string;
  readonly capabilities: CheckpointerCapabilities;
  /** The same log with every row's tag checked, items included (what `verifyThread` reads). */
  readonly [VERIFYING_READS]: Checkpointer;
  /** Whether the inner engine keeps item packs: then this one seals a pack of each field every PACK_SPAN positions (crypto/item-packs). */
  private readonly packs: boolean;
  /** The items of the current spans, so that the commit ending one seals its packs without reading them back. */
  private readonly spans = new PackSpans();

  constructor(
    private readonly inner: Checkpointer,
    private readonly sealer: Sealer,
    private readonly scopes: ThreadScopes,
    private readonly checkEveryItem = false,
  ) {
    this.engine = inner.engine;
    // The packs it keeps in the inner engine are its own, not offered on: itemPacks is false.
    this.capabilities = { ...inner.capabilities, itemPacks: false };
    this.packs = inner.capabilities.itemPacks === true && typeof inner.getItemPacks === 'function';
    this[VERIFYING_READS] = checkEveryItem ? this : new EncryptedCheckpointer(inner, sealer, scopes, true);
    // Optional in the contract, and probed for (retention skips compaction without it).
    if (!inner.compactThread) (this as { compactThread?: unknown }).compactThread = undefined;
  }

  // ---------------------------------------------------------------- threads and leases

  async getThread(threadId: string): Promise<ThreadRecord | null> {
    const thread = await this.inner.getThread(threadId);
    return thread && this.openThread(thread);
  }

  async listThreads(query?: ThreadQuery): Promise<ThreadRecord[]> {
    return Promise.all((await this.inner.listThreads(query)).map((thread) => this.openThread(thread)));
  }

  async listFailures(threadId: string): Promise<AttemptFailure[]> {
    return Promise.all((await this.inner.listFailures(threadId)).map((failure) => this.openError(threadId, failure)));
  }

  async acquireThread(threadId: string, request: AcquireRequest): Promise<ThreadLease> {
    return this.openLease(await this.inner.acquireThread(threadId, request));
  }

  async renewLease(lease: ThreadLease, leaseMs: number): Promise<ThreadLease> {
    return this.openLease(await this.inner.renewLease(lease, leaseMs));
  }

  releaseThread(lease: ThreadLease): Promise<void> {
    this.spans.forget(lease.threadId);
    return this.inner.releaseThread(lease);
  }

  async updateThread(lease: ThreadLease, patch: ThreadPatch): Promise<ThreadRecord> {
    const scope = this.scopes.ofLease(lease);
    const sealed: ThreadPatch = { ...patch };
    if (patch.lastError) sealed.lastError = await this.sealError(scope, lease.threadId, patch.lastError);
    if (patch.failure) sealed.failure = await this.sealError(scope, lease.threadId, patch.failure);
    return this.openThread(await this.inner.updateThread(lease, sealed));
  }

  // ---------------------------------------------------------------- the log: writes

  async commitStep(lease: ThreadLease, commit: StepCommit): Promise<void> {
    const key = await this.sealer.keyFor(this.scopes.ofLease(lease));
    const t = lease.threadId;
    const { ns, seq } = commit.position;
    // Packs a caller hands in would reach the engine in the clear: this engine writes its own.
    const { packs: _theirs, ...asked } = commit;
    const sealed: StepCommit = {
      ...asked,
      position: { ...commit.position, body: sealText(key, commit.position.body, aad.position(t, ns, seq)) },
      items: commit.items.map((item) => ({ ...item, text: sealText(key, item.text, aad.item(t, ns, seq, item.field, item.index)) })),
    };
    if (commit.snapshot !== undefined) sealed.snapshot = sealText(key, commit.snapshot, aad.snapshot(t, ns, seq));
    // Each effect's outcome as the encrypted ledger seals one (the thread's scope, bound to
    // (thread, key)), so that ledger.get opens it. An outcome the engine would refuse in the
    // clear (not a string, U+0000, a lone surrogate) is handed over as it is, to be refused.
    if (Array.isArray(commit.effects)) {
      sealed.effects = commit.effects.map((effect) =>
        typeof effect?.outcome === 'string' && !UNSTORABLE.test(effect.outcome) && typeof effect.threadId === 'string'
          ? { ...effect, outcome: sealText(key, effect.outcome, outcomeAad(effect.threadId, effect.key)) }
          : effect,
      );
    }
    const holder = `${lease.runId}\u0000${lease.epoch}`;
    if (this.packs && endsPackSpan(seq)) {
      const packs = await this.packsCompletedBy(lease, key, commit, this.spans.take(t, ns, holder, seq));
      if (packs.length) sealed.packs = packs;
    }
    await this.inner.commitStep(lease, sealed);
    if (this.packs) this.spans.record(t, ns, holder, seq, commit.items);
  }

  /**
   * The sealed packs the commit of the last position of a span completes, one per field
   * the span's positions appended to: the earlier positions' items read back and opened
   * with their tags checked, then the commit's own. None when the span reaches below the
   * namespace's compaction base (those positions are gone).
   */
  private async packsCompletedBy(lease: ThreadLease, key: DataKey, commit: StepCommit, buffered: BufferedSpan | null): Promise<ItemPack[]> {
    const t = lease.threadId;
    const { ns, seq } = commit.position;
    const fromSeq = seq + 1 - PACK_SPAN;
    const texts = new Map<string, string[]>();
    const add = (field: string, text: string) => {
      const list = texts.get(field);
      if (list) list.push(text);
      else texts.set(field, [text]);
    };
    // What this lease did not commit itself is read back, unless compaction took it.
    const readTo = buffered ? buffered.fromSeq - 1 : seq - 1;
    if (readTo >= fromSeq) {
      const head = await this.inner.getHead(t, ns);
      if (head?.base && head.base.seq > fromSeq) return [];
      for (const item of await this.inner.getRangeItems(t, ns, { from: fromSeq, to: readTo })) add(item.field, (await this.openItem(t, ns, item.seq, item)).text);
    }
    for (const [field, list] of buffered?.texts ?? []) for (const text of list) add(field, text);
    for (const item of [...commit.items].sort(comparePositionItems)) add(item.field, item.text);
    return [...texts].map(([field, list]) => ({
      field,
      fromSeq,
      toSeq: seq,
      count: list.length,
      text: sealText(key, packText(list), packAad(t, ns, field, fromSeq, seq, list.length)),
    }));
  }

  async putSnapshot(lease: ThreadLease, snapshot: { ns: string; seq: number; text: string }): Promise<void> {
    const text = await this.sealer.seal(this.scopes.ofLease(lease), snapshot.text, aad.snapshot(lease.threadId, snapshot.ns, snapshot.seq));
    return this.inner.putSnapshot(lease, { ...snapshot, text });
  }

  async putPendingWrite(lease: ThreadLease, write: PendingWrite): Promise<void> {
    const body = await this.sealer.seal(this.scopes.ofLease(lease), write.body, aad.pending(lease.threadId, write.ns, write.baseSeq, write.task));
    return this.inner.putPendingWrite(lease, { ...write, body });
  }

  // ---------------------------------------------------------------- the log: reads

  getHead(threadId: string, ns: string): Promise<HeadAnchor | null> {
    return this.inner.getHead(threadId, ns);
  }

  async getPendingWrites(threadId: string, ns: string, baseSeq: number): Promise<PendingWrite[]> {
    const writes = await this.inner.getPendingWrites(threadId, ns, baseSeq);
    return Promise.all(
      writes.map(async (w) => ({ ...w, body: await this.sealer.open(w.body, aad.pending(threadId, w.ns, w.baseSeq, w.task), where(threadId, w.ns, w.baseSeq, `pending write of ${w.task}`)) })),
    );
  }

  async getPendingWritesIn(threadId: string, ns: string, range: SeqRange): Promise<PendingWrite[]> {
    // An inner checkpointer without the range read is read position by position.
    const writes = this.inner.getPendingWritesIn
      ? await this.inner.getPendingWritesIn(threadId, ns, range)
      : (await Promise.all(Array.from({ length: Math.max(0, range.to - range.from + 1) }, (_, i) => this.inner.getPendingWrites(threadId, ns, range.from + i)))).flat();
    return Promise.all(
      writes.map(async (w) => ({ ...w, body: await this.sealer.open(w.body, aad.pending(threadId, w.ns, w.baseSeq, w.task), where(threadId, w.ns, w.baseSeq, `pending write of ${w.task}`)) })),
    );
  }

  async getPosition(threadId: string, ns: string, seq: number): Promise<StoredPosition | null> {
    const position = await this.inner.getPosition(threadId, ns, seq);
    return position && this.openPosition(threadId, position);
  }

  async getPositions(threadId: string, ns: string, range: SeqRange): Promise<StoredPosition[]> {
    return Promise.all((await this.inner.getPositions(threadId, ns, range)).map((p) => this.openPosition(threadId, p)));
  }

  listNamespaces(threadId: string): Promise<string[]> {
    return this.inner.listNamespaces(threadId);
  }

  async listPositions(threadId: string, ns: string, page?: { beforeSeq?: number; limit?: number }): Promise<StoredPosition[]> {
    return Promise.all((await this.inner.listPositions(threadId, ns, page)).map((p) => this.openPosition(threadId, p)));
  }

  async getSnapshot(threadId: string, ns: string, ranges: SeqRange[]): Promise<{ seq: number; text: string } | null> {
    const snapshot = await this.inner.getSnapshot(threadId, ns, ranges);
    return snapshot && this.openSnapshot(threadId, ns, snapshot);
  }

  async getSnapshots(threadId: string, ns: string, range: SeqRange): Promise<{ seq: number; text: string }[]> {
    return Promise.all((await this.inner.getSnapshots(threadId, ns, range)).map((s) => this.openSnapshot(threadId, ns, s)));
  }

  async getItems(threadId: string, ns: string, field: string, ranges: SeqRange[]): Promise<string[]> {
    if (this.checkEveryItem) {
      // Each item with its seq and index, so that its tag is checked against its identity.
      const items: string[] = [];
      for (const range of ranges) {
        for (const item of await this.getRangeItems(threadId, ns, range)) if (item.field === field) items.push(item.text);
      }
      return items;
    }
    const plan = await this.readPlan(threadId, ns, field, ranges);
    if (!plan) return this.openRows(threadId, ns, field, ranges);
    const texts: string[] = [];
    for (const part of plan) {
      const list = ('pack' in part ? packTexts(part.pack) : null) ?? (await this.openRows(threadId, ns, field, [part.range]));
      for (const text of list) texts.push(text);
    }
    return texts;
  }

  /**
   * A field's items inside `ranges` decoded, with their checksum, for a load
   * (internal/decoded-items): each pack decoded in one parse of its array, the rows
   * between packs as texts; the rows alone when the packs' checksum is not `expected`.
   * Null without packs, or when something does not decode: the load then reads the
   * texts, and reports what is wrong with them.
   */
  async [DECODED_ITEMS](threadId: string, ns: string, field: string, ranges: SeqRange[], expected?: string): Promise<DecodedItemList | null> {
    if (this.checkEveryItem) return null;
    const plan = await this.readPlan(threadId, ns, field, ranges);
    if (!plan) return null;
    const decoded = await this.decodePlan(threadId, ns, field, plan);
    if (!decoded || expected === undefined || decoded.checksum.value() === expected) return decoded;
    // The packs do not hold what the snapshot says (verify names them): the rows are the record.
    return this.decodePlan(threadId, ns, field, mergeRanges(ranges).map((range) => ({ range })));
  }

  /** The items `plan` reads, decoded, with their checksum; null when a text does not decode. */
  private async decodePlan(threadId: string, ns: string, field: string, plan: PlanPart[]): Promise<DecodedItemList | null> {
    const values: unknown[] = [];
    let checksum = ItemChecksum.of([]);
    for (const part of plan) {
      const packed = 'pack' in part ? packValues(part.pack, checksum) : null;
      if (packed) {
        for (const value of packed.values) values.push(value);
        checksum = packed.checksum;
        continue;
      }
      const texts = ('pack' in part ? packTexts(part.pack) : null) ?? (await this.openRows(threadId, ns, field, [part.range]));
      checksum = checksum.extend(texts);
      try {
        for (const text of texts) values.push(decode(text));
      } catch {
        return null;
      }
    }
    return { values, checksum };
  }

  /**
   * How to read `field` inside `ranges` in (seq, index) order, or null when no pack
   * serves them: each merged range as the packs wholly inside it that open, and the spans
   * between them as rows.
   */
  private async readPlan(threadId: string, ns: string, field: string, ranges: SeqRange[]): Promise<PlanPart[] | null> {
    const merged = mergeRanges(ranges);
    const packs = this.packs && merged.length ? await this.storedPacks(threadId, ns, field, merged) : [];
    if (packs.length === 0) return null;
    const opened = await Promise.all(
      packs.map((pack) => openPack(pack.text, packAad(threadId, ns, pack.field, pack.fromSeq, pack.toSeq, pack.count), pack.count, (id) => this.sealer.keyring.keyById(id))),
    );
    const plan: PlanPart[] = [];
    let used = 0;
    let next = 0;
    for (const range of merged) {
      let at = range.from;
      for (; next < packs.length && packs[next]!.toSeq <= range.to; next++) {
        const pack = packs[next]!;
        const open = opened[next];
        if (pack.fromSeq < at || !open) continue;
        if (pack.fromSeq > at) plan.push({ range: { from: at, to: pack.fromSeq - 1 } });
        plan.push({ pack: open, range: { from: pack.fromSeq, to: pack.toSeq } });
        used++;
        at = pack.toSeq + 1;
      }
      if (at <= range.to) plan.push({ range: { from: at, to: range.to } });
    }
    return used ? plan : null;
  }

  /** The sealed rows of `field` inside `ranges`, opened without their tags (crypto/bulk-open). */
  private async openRows(threadId: string, ns: string, field: string, ranges: SeqRange[]): Promise<string[]> {
    // Sealed items as the bytes the engine keeps them as, where it offers them (SQLite).
    const asStored = (this.inner as Partial<ItemsAsStored>)[ITEMS_AS_STORED];
    const rows = asStored ? await asStored.call(this.inner, threadId, ns, field, ranges) : await this.inner.getItems(threadId, ns, field, ranges);
    return this.sealer.openAllUnchecked(rows, `thread ${threadId}${ns ? ` ns ${ns}` : ''} (items of field "${field}")`);
  }

  /** The inner engine's packs of `field` inside `ranges`, as stored (bytes where it keeps sealed texts as bytes). */
  private storedPacks(threadId: string, ns: string, field: string, ranges: SeqRange[]): Promise<StoredItemPack[]> {
    const asStored = (this.inner as Partial<PacksAsStored>)[PACKS_AS_STORED];
    return asStored ? asStored.call(this.inner, threadId, ns, field, ranges) : this.inner.getItemPacks!(threadId, ns, field, ranges);
  }

  /**
   * The packs of a namespace checked for `verify` (internal/pack-checks): each opened with
   * its tag and compared with the rows of its span, opened with theirs.
   */
  async [CHECK_PACKS](threadId: string, ns: string): Promise<{ checked: number; problems: PackProblem[] }> {
    const head = this.packs ? await this.inner.getHead(threadId, ns) : null;
    if (!head) return { checked: 0, problems: [] };
    const span = { from: head.base?.seq ?? 0, to: head.seq };
    const rows = new Map<string, { seq: number; text: string }[]>();
    for (const item of await this.inner.getRangeItems(threadId, ns, span)) {
      const { text } = await this.openItem(threadId, ns, item.seq, item);
      const list = rows.get(item.field);
      if (list) list.push({ seq: item.seq, text });
      else rows.set(item.field, [{ seq: item.seq, text }]);
    }
    const problems: PackProblem[] = [];
    let checked = 0;
    for (const [field, list] of rows) {
      for (const pack of await this.storedPacks(threadId, ns, field, [span])) {
        checked++;
        const problem = (message: string) => problems.push({ seq: pack.toSeq, field, message: `the sealed pack of field "${field}" over seqs ${pack.fromSeq}-${pack.toSeq} ${message}` });
        const opened = await openPack(pack.text, packAad(threadId, ns, field, pack.fromSeq, pack.toSeq, pack.count), pack.count, (id) => this.sealer.keyring.keyById(id));
        const texts = opened && packTexts(opened);
        if (!texts) {
          problem('does not open (changed, moved from another span, or sealed under a key that is gone): loads read its rows instead.');
          continue;
        }
        const expected = list.filter((row) => row.seq >= pack.fromSeq && row.seq <= pack.toSeq).map((row) => row.text);
        const differs = expected.length !== texts.length || expected.some((text, i) => text !== texts[i]);
        if (differs) problem(`holds ${texts.length} items that are not the ${expected.length} of its rows: a load that read it would not read what the rows say.`);
      }
    }
    return { checked, problems };
  }

  /** The packs this engine keeps are its own (see crypto/item-packs): it offers none. */
  getItemPacks(): Promise<ItemPack[]> {
    return Promise.reject(new NotSupportedError('getItemPacks is not supported by an encrypted engine (capabilities.itemPacks is false): its packs are sealed, and read by its own loads.', { place: { engine: this.engine } }));
  }

  async getPositionItems(threadId: string, ns: string, seq: number, fields: readonly string[]): Promise<PositionItem[]> {
    const items = await this.inner.getPositionItems(threadId, ns, seq, fields);
    return Promise.all(items.map((item) => this.openItem(threadId, ns, seq, item)));
  }

  async getRangeItems(threadId: string, ns: string, range: SeqRange): Promise<RangeItem[]> {
    const items = await this.inner.getRangeItems(threadId, ns, range);
    return Promise.all(items.map((item) => this.openItem(threadId, ns, item.seq, item)));
  }

  // ---------------------------------------------------------------- workers (by capability)

  async claimThreads(request: ClaimRequest): Promise<ThreadLease[]> {
    if (!this.inner.claimThreads) throw this.unsupported('claimThreads', 'claims');
    return Promise.all((await this.inner.claimThreads(request)).map((lease) => this.openLease(lease)));
  }

  subscribeRunnable(listener: (threadId: string) => void): Promise<() => Promise<void>> {
    if (!this.inner.subscribeRunnable) return Promise.reject(this.unsupported('subscribeRunnable', 'wakeUps'));
    return this.inner.subscribeRunnable(listener);
  }

  nextLeaseExpiry(graph?: string): Promise<number | null> {
    if (!this.inner.nextLeaseExpiry) return Promise.reject(this.unsupported('nextLeaseExpiry', 'leaseExpiry'));
    return this.inner.nextLeaseExpiry(graph);
  }

  leaseHolders(query: LeaseHolderQuery): Promise<LeaseOwner[]> {
    if (!this.inner.leaseHolders) return Promise.reject(this.unsupported('leaseHolders', 'leaseHolders'));
    return this.inner.leaseHolders(query);
  }

  // ---------------------------------------------------------------- signals

  async sendSignal(threadId: string, signal: SignalSend): Promise<StoredSignal> {
    // What the inner engine would refuse in the plaintext (a bad name, payload or time)
    // goes to it as it is, to be refused there: a sealed payload would hide a bad one.
    const payload = (signal as { payload?: unknown } | null)?.payload;
    const sentAt = (signal as { sentAt?: unknown } | null)?.sentAt ?? Date.now();
    if (typeof payload !== 'string' || typeof (signal as { name?: unknown }).name !== 'string' || typeof sentAt !== 'number' || !Number.isFinite(sentAt) || UNSTORABLE.test(payload) || Buffer.byteLength(payload, 'utf8') > MAX_SIGNAL_PAYLOAD_BYTES) {
      return this.inner.sendSignal(threadId, signal);
    }
    const scope = await this.scopes.of(threadId);
    const sealed = await this.sealer.seal(scope, payload, aad.signal(threadId, signal.name, sentAt));
    return this.openSignal(await this.inner.sendSignal(threadId, { ...signal, payload: sealed, sentAt }));
  }

  async listSignals(threadId: string, query?: SignalQuery): Promise<StoredSignal[]> {
    return Promise.all((await this.inner.listSignals(threadId, query)).map((s) => this.openSignal(s)));
  }

  async consumeSignal(lease: ThreadLease, request: SignalConsume): Promise<StoredSignal> {
    return this.openSignal(await this.inner.consumeSignal(lease, request));
  }

  // ---------------------------------------------------------------- deletion, lifecycle

  async deleteThread(threadId: string, options?: DeleteThreadOptions): Promise<DeleteThreadResult> {
    const result = await this.inner.deleteThread(threadId, options);
    this.spans.forget(threadId);
    if (result.deleted) this.scopes.forget(threadId);
    return result;
  }

  async compactThread(lease: ThreadLease, request: CompactionRequest): Promise<CompactionResult> {
    if (!this.inner.compactThread) throw new NotSupportedError('compactThread is not supported by this engine.', { place: { engine: this.engine } });
    this.spans.forget(lease.threadId);
    const key = await this.sealer.keyFor(this.scopes.ofLease(lease));
    const t = lease.threadId;
    const { ns } = request;
    // The base's new snapshot and the rewritten ones are sealed as every snapshot is.
    const sealed: CompactionRequest = {
      ...request,
      snapshot: typeof request.snapshot === 'string' ? sealText(key, request.snapshot, aad.snapshot(t, ns, request.base?.seq)) : request.snapshot,
      ...(request.snapshots ? { snapshots: request.snapshots.map((s) => ({ ...s, text: sealText(key, s.text, aad.snapshot(t, ns, s.seq)) })) } : {}),
    };
    return this.inner.compactThread(lease, sealed);
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  // ---------------------------------------------------------------- opening

  private async openPosition(threadId: string, position: StoredPosition): Promise<StoredPosition> {
    const body = await this.sealer.open(position.body, aad.position(threadId, position.ns, position.seq), where(threadId, position.ns, position.seq, 'position body'));
    return { ...position, body };
  }

  private async openItem<I extends PositionItem>(threadId: string, ns: string, seq: number, item: I): Promise<I> {
    const text = await this.sealer.open(item.text, aad.item(threadId, ns, seq, item.field, item.index), where(threadId, ns, seq, `item ${item.index} of field "${item.field}"`));
    return { ...item, text };
  }

  private async openSnapshot(threadId: string, ns: string, snapshot: { seq: number; text: string }): Promise<{ seq: number; text: string }> {
    return { ...snapshot, text: await this.sealer.open(snapshot.text, aad.snapshot(threadId, ns, snapshot.seq), where(threadId, ns, snapshot.seq, 'snapshot')) };
  }

  private async openSignal(signal: StoredSignal): Promise<StoredSignal> {
    const payload = await this.sealer.open(signal.payload, aad.signal(signal.threadId, signal.name, signal.sentAt), `thread ${signal.threadId} (payload of signal ${signal.id})`);
    return { ...signal, payload };
  }

  private async openThread(thread: ThreadRecord): Promise<ThreadRecord> {
    this.scopes.learn(thread.id, thread.tenant);
    return thread.lastError ? { ...thread, lastError: await this.openError(thread.id, thread.lastError) } : thread;
  }

  private async openLease(lease: ThreadLease): Promise<ThreadLease> {
    return { ...lease, thread: await this.openThread(lease.thread) };
  }

  private async sealError<E extends ThreadError>(scope: string, threadId: string, error: E): Promise<E> {
    if (typeof error !== 'object' || typeof error.message !== 'string') return error;
    return { ...error, message: await this.sealer.seal(scope, error.message, aad.error(threadId, error.code, error.at)) };
  }

  private async openError<E extends ThreadError>(threadId: string, error: E): Promise<E> {
    return { ...error, message: await this.sealer.open(error.message, aad.error(threadId, error.code, error.at), `thread ${threadId} (message of error ${error.code})`) };
  }

  private unsupported(method: string, capability: keyof CheckpointerCapabilities): NotSupportedError {
    return new NotSupportedError(`${method} is not supported by this engine (capabilities.${capability} is false). Check checkpointer.capabilities before calling it.`, { place: { engine: this.engine } });
  }
}
