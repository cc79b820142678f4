/**
 * @module runtime/cursor
 * Where a run stands in one namespace of the thread log, and the only way it moves
 * on. The cursor owns the head (the position the next commit builds on), the state
 * there, the attempt, and the snapshot policy's bookkeeping; nobody else assigns
 * them. A step's merge is staged on the cursor's state (what routing sees), and
 * `commit(draft)` turns it into the next position (body, items, chain hash, a
 * snapshot when one is due), writes it in one transaction, and moves the cursor
 * only once that has landed; a failed commit unstages the merge. The cursor also
 * knows each append list's committed (and staged) length: code that changed a list
 * in place is refused (`checkLists`, and every commit) and the list put back.
 */
import type { ArtifactRef } from '../contracts/artifact-store.js';
import { comparePositionItems, type Checkpointer, type CommittedEffect, type PositionItem, type StoredPosition } from '../contracts/checkpointer.js';
import type { ThreadLease, ThreadStatus } from '../contracts/threads.js';
import { findArtifactRefs } from '../artifacts/refs.js';
import { GENESIS_HASH, ItemChecksum } from '../codec/hash.js';
import { RawJson, encode } from '../codec/tagged-json.js';
import type { ErrorPlace, StateMutationError } from '../errors.js';
import { crashPoint } from '../internal/crash-points.js';
import { own } from '../internal/own.js';
import type { StateSchema } from '../state/schema.js';
import type { EventSink } from './events.js';
import { AppendLengths, refuseListChanges } from './list-lengths.js';
import { checkUnanchored, materialize, type AppendCursor, type LoadedPosition, type SnapshotBody } from './materialize.js';
import { noChanges, type EncodedChange, type MergeResult } from './merge.js';
import {
  SNAPSHOT_FORMAT,
  hashPosition,
  sealSnapshot,
  type CallRef,
  type FieldChange,
  type PendingInterrupt,
  type PendingWait,
  type PositionBody,
  type PositionKind,
  type SuspendedStep,
} from './position.js';

/** A position a run stands on, decoded. */
export interface Head {
  position: StoredPosition;
  body: PositionBody;
}

/** What one position adds besides the staged merge, before it is encoded. */
export interface Draft {
  kind: PositionKind;
  nodes: string[];
  next: string[];
  records?: CallRef[];
  effects?: CallRef[];
  /** The ledger entries of the step's `commit: 'with-step'` effects, written by its commit. */
  committedEffects?: CommittedEffect[];
  input?: string;
  interrupts?: PendingInterrupt[];
  waits?: PendingWait[];
  answered?: string;
  cleared?: string[];
  actor?: string;
  children?: string[];
  suspended?: SuspendedStep;
}

/** What a commit wrote: the new position's seq, whether a snapshot went with it, and the thread's status there. */
export interface Landed {
  seq: number;
  snapshot: boolean;
  status: ThreadStatus;
}

/** What the cursor needs of the run's settings. */
export interface CursorSettings {
  schema: StateSchema;
  snapshotEvery: number;
  emit: EventSink | undefined;
  /**
   * Sees the state the cursor holds at each load and commit: the app's redaction
   * learns the values its path rules hide there, to hide them where events repeat them.
   */
  observeState?: ((state: Readonly<Record<string, unknown>>) => void) | undefined;
}

/** Where a cursor works: its thread's lease, namespace and tenant, and the attempt it starts at. */
export interface CursorScope {
  lease: ThreadLease;
  ns: string;
  tenant: string | null;
  attempt: number;
  /** The newest signal id the run's waits looked at: a waiting commit hands it to the engine. */
  signalsSeen?: () => number;
}

/** A merge applied to the cursor's state, not yet committed (unstaging cuts the lists back to their committed lengths). */
interface Staged {
  merged: MergeResult;
  state: Record<string, unknown>;
  /** The lengths the lists have with the merge's items appended. */
  lengths: AppendLengths;
}

type State = Record<string, unknown>;

export class ThreadCursor {
  private current: Head | null = null;
  /** The namespace's anchored head seq: a new position takes the next one. */
  private lastSeq: number | null = null;
  /** Seq of the last position this cursor wrote itself (null: none yet, or the head was loaded since). */
  private wroteSeq: number | null = null;
  private committed: State = {};
  /** Each append list of `committed` and its committed length. */
  private lengths: AppendLengths;
  private attemptNo: number;
  private staged: Staged | undefined;
  private appends: Record<string, AppendCursor> = {};
  /** Each append field's item checksum, kept up to the snapshot that records it. */
  private checksums = new Map<string, FieldChecksum>();
  /** Encoded texts of non-append fields, filled when a snapshot or the snapshot policy needs them. */
  private texts = new Map<string, string>();
  private sinceSnapshot = { positions: 0, bytes: 0 };
  private rebasePending = false;

  constructor(
    private readonly cp: Checkpointer,
    private readonly settings: CursorSettings,
    private readonly scope: CursorScope,
  ) {
    this.attemptNo = scope.attempt;
    this.lengths = AppendLengths.of(settings.schema, this.committed);
  }

  /** The position the next commit builds on (the head, or a fork's origin); null before a namespace's first. */
  get head(): Head | null {
    return this.current;
  }

  /** The state at the head (stored fields, current schema version). Lists are the cursor's: read them, never change them. */
  get state(): Readonly<State> {
    return this.committed;
  }

  /** The thread's attempt, recorded in every position this cursor writes. */
  get attempt(): number {
    return this.attemptNo;
  }

  /** A new attempt of the thread began (the thread record counted it): later positions record it. */
  beginAttempt(attempt: number): void {
    this.attemptNo = attempt;
  }

  /** A namespace with no position yet: its first commit starts from `state` (which the cursor then owns). */
  start(state: State): void {
    this.committed = state;
    this.lengths = AppendLengths.of(this.settings.schema, state);
    this.lastSeq = null;
    this.current = null;
    this.appends = {};
    this.checksums = new Map();
    this.texts.clear();
    this.sinceSnapshot = { positions: 0, bytes: 0 };
    this.rebasePending = false;
  }

  /**
   * Moves to the namespace's anchored head. Null when the namespace has no position
   * yet; CorruptRecordError when it has positions but no anchor.
   */
  async loadHead(): Promise<Head | null> {
    const { lease, ns } = this.scope;
    const anchor = await this.cp.getHead(lease.threadId, ns);
    if (!anchor) {
      await checkUnanchored(this.cp, lease.threadId, ns);
      return null;
    }
    this.adopt(await materialize(this.cp, this.settings.schema, lease.threadId, ns, anchor.seq, { head: anchor }), anchor.seq);
    return this.current;
  }

  /** Moves to position `seq` (a fork's origin): the next position branches from it and takes the seq after the anchored head. */
  async loadAt(seq: number): Promise<LoadedPosition> {
    const { lease, ns } = this.scope;
    const anchor = await this.cp.getHead(lease.threadId, ns);
    const loaded = await materialize(this.cp, this.settings.schema, lease.threadId, ns, seq);
    this.adopt(loaded, anchor?.seq ?? loaded.position.seq);
    return loaded;
  }

  /**
   * True when `seq` is the position this cursor wrote last, in this process, under its
   * lease: no other execution can have started a superstep from it, so the ledger holds
   * nothing of such a superstep's first execution (a successor that took the thread
   * over since could, but then this run's commits are refused anyway).
   */
  wroteLast(seq: number): boolean {
    return this.wroteSeq === seq;
  }

  private adopt(loaded: LoadedPosition, lastSeq: number): void {
    this.wroteSeq = null;
    this.current = { position: loaded.position, body: loaded.body };
    this.lastSeq = lastSeq;
    this.committed = loaded.state;
    this.lengths = AppendLengths.of(this.settings.schema, loaded.state);
    this.appends = loaded.appends;
    this.checksums = new Map([...loaded.checksums].map(([name, checksum]) => [name, FieldChecksum.of(checksum)]));
    this.texts.clear();
    this.sinceSnapshot = loaded.sinceSnapshot;
    this.rebasePending = loaded.storedVersion !== this.settings.schema.version;
    this.settings.observeState?.(loaded.state);
    this.settings.emit?.({
      type: 'run.loaded',
      threadId: this.scope.lease.threadId,
      at: Date.now(),
      seq: loaded.position.seq,
      next: loaded.body.next,
      storedVersion: loaded.storedVersion,
    });
  }

  /**
   * Applies `merged` to the cursor's state, to be committed next: the returned state is
   * what routing, runtime fields and interrupts see. Lists are extended in place (copying
   * a long list at every step would make a run quadratic) and cut back by `unstage()`
   * or a failed commit.
   */
  stage(merged: MergeResult): Readonly<State> {
    this.unstage();
    const state = { ...this.committed };
    for (const [name, value] of merged.values) state[name] = value;
    for (const [name, items] of merged.appended) {
      const list = state[name] as unknown[];
      for (const item of items) list.push(item);
    }
    this.staged = { merged, state, lengths: this.lengths.extended(merged.appended) };
    return state;
  }

  /** Undoes a staged merge that will not be committed. */
  unstage(): void {
    if (this.staged) this.lengths.restore();
    this.staged = undefined;
  }

  /**
   * Whether code handed the state (`nodes`' functions, routing, interrupt payloads,
   * derived fields) changed an append list in place: each list's length against the
   * staged one (the committed one when nothing is staged), one read a field. On a
   * difference the lists are put back to their committed lengths, the staged merge is
   * dropped, and the error to refuse the step with is returned (`cause`: what the code
   * threw besides). Every commit checks too, as the last line.
   */
  checkLists(nodes: () => readonly string[], cause?: unknown): StateMutationError | undefined {
    const place: ErrorPlace = { engine: this.cp.engine, thread: this.scope.lease.threadId, ns: this.scope.ns, ...(this.current ? { seq: this.current.position.seq } : {}) };
    const refused = refuseListChanges(this.staged?.lengths ?? this.lengths, this.lengths, nodes, place, cause);
    if (refused) this.staged = undefined;
    return refused;
  }

  /**
   * Writes the next position of this namespace from `draft` and the staged merge (none:
   * no changes); the cursor moves there once it has landed. A failed commit unstages.
   */
  async commit(draft: Draft): Promise<Landed> {
    const refused = this.checkLists(() => draft.nodes);
    if (refused) throw refused;
    const staged = this.staged ?? { merged: noChanges(), state: { ...this.committed }, lengths: this.lengths };
    let landed: Landed;
    try {
      landed = await this.write(draft, staged);
    } catch (error) {
      this.unstage();
      throw error;
    }
    this.staged = undefined;
    return landed;
  }

  private async write(draft: Draft, staged: Staged): Promise<Landed> {
    const { kind, nodes, next, input } = draft;
    const records = draft.records ?? [];
    const effects = draft.effects ?? [];
    const interrupts = draft.interrupts ?? [];
    const { schema } = this.settings;
    const parent = this.current?.position ?? null;
    // The head is always the highest seq of the namespace: a new position (a fork too) takes the next one.
    const seq = (this.lastSeq ?? -1) + 1;
    const step = parent ? parent.step + 1 : 0;
    const state = staged.state;
    // The cursor's own copy: the merge it was handed stays as it is.
    const changes = new Map(staged.merged.changes);
    this.applyRuntimeFields(state, changes, { seq, step, nodes });
    const rebase = this.rebasePending;
    if (rebase || parent === null) this.addFullWrites(state, changes, rebase);

    const bodyChanges: Record<string, FieldChange | { set: RawJson }> = {};
    const items: PositionItem[] = [];
    let setBytes = 0;
    for (const name of schema.fieldNames) {
      const change = changes.get(name);
      if (!change) continue;
      if (change.kind === 'set') {
        bodyChanges[name] = { set: new RawJson(change.text) };
        setBytes += change.text.length;
      } else {
        bodyChanges[name] = change.reset ? { reset: change.items.length } : { append: change.items.length };
        change.items.forEach((text, index) => items.push({ field: name, index, text }));
      }
    }
    // The chain hashes items, and engines store them, in (field, index) order: sorted once, here.
    items.sort(comparePositionItems);
    const body: PositionBody = { kind, nodes, attempt: this.attemptNo, lease: this.scope.lease.epoch, changes: bodyChanges as Record<string, FieldChange>, next };
    if (input !== undefined) body.input = input;
    if (records.length) body.records = records;
    if (effects.length) body.effects = effects;
    if (staged.merged.conflicts.length) body.conflicts = staged.merged.conflicts;
    if (rebase) body.rebase = true;
    if (interrupts.length) body.interrupts = interrupts;
    if (draft.waits?.length) body.waits = draft.waits;
    if (draft.answered !== undefined) body.answered = draft.answered;
    if (draft.cleared?.length) body.cleared = draft.cleared;
    if (draft.actor !== undefined) body.actor = draft.actor;
    if (draft.children?.length) body.children = draft.children;
    if (draft.suspended) body.suspended = draft.suspended;
    const refs = writtenArtifactRefs(state, changes);
    if (refs.length) body.artifacts = refs;
    // A branch's first position and every rebase say what each field is at this version.
    if (parent === null || rebase) body.fields = schema.fieldTable();
    if (setBytes > 0) body.setBytes = setBytes;

    const unsigned = {
      ns: this.scope.ns,
      seq,
      parent: parent?.seq ?? null,
      segment: parent && parent.seq === seq - 1 ? parent.segment : seq,
      step,
      schemaVersion: schema.version,
      createdAt: Date.now(),
      body: encode(body, 'position body'),
    };
    const position: StoredPosition = { ...unsigned, hash: hashPosition(unsigned, items, parent?.hash ?? GENESIS_HASH) };

    // Bookkeeping for the snapshot policy, applied only once the commit lands.
    // A rebase resets every field: cursors of the older version (maybe of fields that no longer exist) are dropped.
    const appends = rebase ? {} : { ...this.appends };
    const checksums = rebase ? new Map<string, FieldChecksum>() : new Map(this.checksums);
    for (const [name, change] of changes) {
      if (change.kind !== 'append') continue;
      const previous = own(appends, name) ?? { since: null, count: 0 };
      appends[name] = change.reset ? { since: seq, count: change.items.length } : { ...previous, count: previous.count + change.items.length };
      checksums.set(name, (change.reset ? FieldChecksum.EMPTY : (checksums.get(name) ?? FieldChecksum.EMPTY)).append(change.items));
    }
    const texts = rebase ? new Map<string, string>() : new Map(this.texts);
    for (const [name, change] of changes) if (change.kind === 'set') texts.set(name, change.text);
    const since = { positions: this.sinceSnapshot.positions + 1, bytes: this.sinceSnapshot.bytes + setBytes };
    const takeSnapshot =
      rebase ||
      since.positions >= this.settings.snapshotEvery ||
      // Only replaced values make a load replay work: a thread that only appends never needs the state's size.
      (since.positions >= 2 && since.bytes > 0 && since.bytes > this.stateBytes(state, texts));
    // A snapshot records each field's checksum: the texts appended since the last one are checksummed now.
    const settled = takeSnapshot ? new Map([...checksums].map(([name, checksum]) => [name, checksum.settled()])) : checksums;
    const snapshot = takeSnapshot
      ? snapshotText({ schema, position: position.hash, parent: parent?.hash ?? GENESIS_HASH, texts: this.allTexts(state, texts), appends, checksums: settled })
      : undefined;

    const status = positionStatus(body);
    crashPoint('before-commit', nodes);
    const waiting = status === 'waiting' ? { wakeAt: wakeTime(body.waits), ...(this.scope.signalsSeen && body.waits!.some((w) => w.kind === 'signal') ? { signalsSeen: this.scope.signalsSeen() } : {}) } : {};
    const committedEffects = draft.committedEffects?.length ? { effects: draft.committedEffects } : {};
    await this.cp.commitStep(this.scope.lease, { position, items, ...(snapshot ? { snapshot } : {}), status, ...waiting, ...committedEffects, expectedHead: this.lastSeq });
    crashPoint('after-commit', nodes);

    this.current = { position, body };
    this.lastSeq = seq;
    this.wroteSeq = seq;
    this.committed = state;
    this.lengths = staged.lengths;
    this.appends = appends;
    this.checksums = settled;
    this.texts = texts;
    this.sinceSnapshot = takeSnapshot ? { positions: 0, bytes: 0 } : since;
    this.rebasePending = false;
    this.settings.observeState?.(state);
    this.settings.emit?.({
      type: 'step.commit',
      threadId: this.scope.lease.threadId,
      at: Date.now(),
      seq,
      step,
      nodes,
      next,
      hash: position.hash,
      snapshot: takeSnapshot,
      status,
      ...(this.scope.ns ? { ns: this.scope.ns } : {}),
    });
    return { seq, snapshot: takeSnapshot, status };
  }

  /** The text of a non-append field of `state`, encoded once and kept. */
  private textOf(state: State, texts: Map<string, string>, name: string): string {
    let text = texts.get(name);
    if (text === undefined) texts.set(name, (text = encode(state[name], name)));
    return text;
  }

  /** Characters of the state's non-append fields encoded: the snapshot policy's "state size". */
  private stateBytes(state: State, texts: Map<string, string>): number {
    let bytes = 0;
    for (const name of this.settings.schema.fieldNames) if (!this.settings.schema.appendFields.has(name)) bytes += this.textOf(state, texts, name).length;
    return bytes;
  }

  private allTexts(state: State, texts: Map<string, string>): Map<string, string> {
    for (const name of this.settings.schema.fieldNames) if (!this.settings.schema.appendFields.has(name)) this.textOf(state, texts, name);
    return texts;
  }

  /** Runtime fields with a `compute` are set by the runtime at every commit (only stored when they change). */
  private applyRuntimeFields(state: State, changes: Map<string, EncodedChange>, at: { seq: number; step: number; nodes: string[] }): void {
    const info = { threadId: this.scope.lease.threadId, ns: this.scope.ns, ...at, attempt: this.attemptNo, tenant: this.scope.tenant };
    for (const [name, value] of this.settings.schema.runtimeValues(info)) {
      const text = encode(value, name);
      if (text === this.textOf(this.committed, this.texts, name)) continue;
      state[name] = value;
      changes.set(name, { kind: 'set', text });
    }
  }

  /**
   * The first position of a thread stores non-empty append defaults; a rebase (the
   * first position under a new schema version) stores every field in full, so that
   * nothing written at the older version is needed to read what follows.
   */
  private addFullWrites(state: State, changes: Map<string, EncodedChange>, rebase: boolean): void {
    const { schema } = this.settings;
    for (const name of schema.fieldNames) {
      const value = state[name];
      if (schema.appendFields.has(name)) {
        const list = value as unknown[];
        const change = changes.get(name);
        const appended = change?.kind === 'append' ? change.items.length : 0;
        // A thread's first position needs a reset only when the default list is not empty.
        if (!rebase && appended === list.length) continue;
        changes.set(name, { kind: 'append', items: list.map((item, i) => encode(item, `${name}[${i}]`)), reset: true });
      } else if (rebase && !changes.has(name)) {
        changes.set(name, { kind: 'set', text: encode(value, name) });
      }
    }
  }
}

/**
 * An append field's item checksum as a cursor keeps it: settled up to the last
 * snapshot, plus the texts appended since, which are checksummed only when the next
 * snapshot needs the value (a few dozen at once rather than one call per step).
 * Immutable like {@link ItemChecksum}: `append` shares the pending list when it can.
 */
class FieldChecksum {
  static readonly EMPTY = new FieldChecksum(ItemChecksum.of([]), [], 0);

  private constructor(
    readonly checksum: ItemChecksum,
    private readonly pending: string[],
    private readonly count: number,
  ) {}

  static of(checksum: ItemChecksum): FieldChecksum {
    return new FieldChecksum(checksum, [], 0);
  }

  append(texts: readonly string[]): FieldChecksum {
    const pending = this.pending.length === this.count ? this.pending : this.pending.slice(0, this.count);
    for (const text of texts) pending.push(text);
    return new FieldChecksum(this.checksum, pending, this.count + texts.length);
  }

  /** The same items, all checksummed. */
  settled(): FieldChecksum {
    return this.count === 0 ? this : new FieldChecksum(this.checksum.extend(this.pending.slice(0, this.count)), [], 0);
  }
}

/** Artifact refs in what a commit writes: new set values, and the items just appended. */
function writtenArtifactRefs(state: State, changes: Map<string, EncodedChange>): ArtifactRef[] {
  const written: unknown[] = [];
  for (const [name, change] of changes) {
    written.push(change.kind === 'set' ? state[name] : (state[name] as unknown[]).slice(-change.items.length));
  }
  return findArtifactRefs(written);
}

/**
 * A sealed snapshot of the state at `position`: non-append values in full, append
 * fields as cursors with the checksum of their items, and the chain hashes that tie it
 * to this one position (see `runtime/materialize`).
 */
function snapshotText(at: {
  schema: StateSchema;
  position: string;
  parent: string;
  texts: Map<string, string>;
  appends: Record<string, AppendCursor>;
  checksums: Map<string, FieldChecksum>;
}): string {
  const values: Record<string, RawJson> = {};
  for (const [name, text] of at.texts) values[name] = new RawJson(text);
  const appends: SnapshotBody['appends'] = {};
  for (const [name, cursor] of Object.entries(at.appends)) appends[name] = { ...cursor, checksum: (at.checksums.get(name) ?? FieldChecksum.EMPTY).settled().checksum.value() };
  const body: SnapshotBody = {
    format: SNAPSHOT_FORMAT,
    schemaVersion: at.schema.version,
    position: at.position,
    parent: at.parent,
    fields: at.schema.fieldTable(),
    values: values as Record<string, unknown>,
    appends,
  };
  return sealSnapshot(encode(body, 'snapshot'));
}

/**
 * The thread's status once `body` is its head: a person is asked (`interrupted`)
 * before a node waits (`waiting`), which is before work left (`running`).
 */
export function positionStatus(body: Pick<PositionBody, 'interrupts' | 'waits' | 'next'>): ThreadStatus {
  return body.interrupts?.length ? 'interrupted' : body.waits?.length ? 'waiting' : body.next.length ? 'running' : 'completed';
}

/** When a `waiting` thread is due: its earliest wake time or timeout (null: only a signal wakes it). */
export function wakeTime(waits: readonly PendingWait[] | undefined): number | null {
  let earliest: number | null = null;
  for (const w of waits ?? []) if (w.until !== null && (earliest === null || w.until < earliest)) earliest = w.until;
  return earliest;
}
