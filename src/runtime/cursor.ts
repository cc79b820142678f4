/**
 * @module runtime/cursor
 * Where a run stands in one namespace of the thread log, and the only way it moves
 * on: the head position it builds on, the state there, and the snapshot policy's
 * bookkeeping. `commit(draft)` turns what a step, an input, an answer or a fork adds
 * into the next position (body, items, chain hash, a snapshot when one is due),
 * writes it in one transaction, and moves the cursor only once that has landed.
 */
import { own } from '../internal/own.js';
import type { ArtifactRef } from '../contracts/artifact-store.js';
import { comparePositionItems, type Checkpointer, type PositionItem, type StoredPosition } from '../contracts/checkpointer.js';
import type { ThreadLease, ThreadStatus } from '../contracts/threads.js';
import { findArtifactRefs } from '../artifacts/refs.js';
import { GENESIS_HASH, ItemChecksum } from '../codec/hash.js';
import { RawJson, encode } from '../codec/tagged-json.js';
import { crashPoint } from '../internal/crash-points.js';
import type { StateSchema } from '../state/schema.js';
import type { EventSink } from './events.js';
import type { AppendCursor, LoadedPosition, SnapshotBody } from './materialize.js';
import type { EncodedChange, MergeResult } from './merge.js';
import { SNAPSHOT_FORMAT, hashPosition, sealSnapshot, type CallRef, type FieldChange, type PendingInterrupt, type PositionBody, type PositionKind, type SuspendedStep } from './position.js';

/** A position a run stands on, decoded. */
export interface Head {
  position: StoredPosition;
  body: PositionBody;
}

/** What one position adds, before it is encoded. */
export interface Draft {
  kind: PositionKind;
  nodes: string[];
  merged: MergeResult;
  next: string[];
  records?: CallRef[];
  effects?: CallRef[];
  input?: string;
  interrupts?: PendingInterrupt[];
  answered?: string;
  cleared?: string[];
  actor?: string;
  children?: string[];
  suspended?: SuspendedStep;
}

/** What the cursor needs of the run's settings. */
export interface CursorSettings {
  schema: StateSchema;
  snapshotEvery: number;
  emit: EventSink | undefined;
}

export class ThreadCursor {
  /** The position the next commit builds on (the head, or a fork's origin); null before a namespace's first. */
  head: Head | null = null;
  /** The namespace's highest seq: a new position takes the next one and becomes the head. */
  lastSeq: number | null;
  state: Record<string, unknown> = {};
  /** The thread's attempt, recorded in every position. */
  attempt: number;
  private appends: Record<string, AppendCursor> = {};
  /** Each append field's item checksum, kept up to the snapshot that records it. */
  private checksums = new Map<string, FieldChecksum>();
  /** Last encoded text of every non-append field: snapshot material and the "state size". */
  private fieldTexts = new Map<string, string>();
  private sinceSnapshot = { positions: 0, bytes: 0 };
  private rebasePending = false;

  constructor(
    private readonly cp: Checkpointer,
    private readonly settings: CursorSettings,
    private readonly lease: ThreadLease,
    private readonly ns: string,
    private readonly tenant: string | null,
    position: { lastSeq: number | null; attempt: number },
  ) {
    this.lastSeq = position.lastSeq;
    this.attempt = position.attempt;
  }

  /** A namespace with no position yet: its first commit starts from `state`. */
  start(state: Record<string, unknown>): void {
    this.state = state;
    this.checksums = new Map();
    this.primeFieldTexts();
  }

  /** Moves the cursor to a loaded position (a head, or a fork's origin). */
  adopt(loaded: LoadedPosition): void {
    this.head = { position: loaded.position, body: loaded.body };
    this.state = loaded.state;
    this.appends = loaded.appends;
    this.checksums = new Map([...loaded.checksums].map(([name, checksum]) => [name, FieldChecksum.of(checksum)]));
    this.sinceSnapshot = loaded.sinceSnapshot;
    this.rebasePending = loaded.storedVersion !== this.settings.schema.version;
    this.primeFieldTexts();
  }

  private primeFieldTexts(): void {
    this.fieldTexts.clear();
    for (const name of this.settings.schema.fieldNames) {
      if (!this.settings.schema.appendFields.has(name)) this.fieldTexts.set(name, encode(this.state[name], name));
    }
  }

  /** Writes the next position of this namespace from `draft`; the cursor moves there once it has landed. */
  async commit(draft: Draft): Promise<void> {
    const { kind, nodes, merged, next, input } = draft;
    const records = draft.records ?? [];
    const effects = draft.effects ?? [];
    const interrupts = draft.interrupts ?? [];
    const { schema } = this.settings;
    const parent = this.head?.position ?? null;
    // The head is always the highest seq of the thread: a new position (a fork too) takes the next one.
    const seq = (this.lastSeq ?? -1) + 1;
    const step = parent ? parent.step + 1 : 0;
    const state = merged.state;
    const changes = merged.changes;
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
    // The chain hashes items in field-name order (the order a decoded body lists them).
    items.sort(comparePositionItems);
    const body: PositionBody = { kind, nodes, attempt: this.attempt, lease: this.lease.epoch, changes: bodyChanges as Record<string, FieldChange>, next };
    if (input !== undefined) body.input = input;
    if (records.length) body.records = records;
    if (effects.length) body.effects = effects;
    if (merged.conflicts.length) body.conflicts = merged.conflicts;
    if (rebase) body.rebase = true;
    if (interrupts.length) body.interrupts = interrupts;
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
      ns: this.ns,
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
    const fieldTexts = new Map(this.fieldTexts);
    for (const [name, change] of changes) if (change.kind === 'set') fieldTexts.set(name, change.text);
    const since = { positions: this.sinceSnapshot.positions + 1, bytes: this.sinceSnapshot.bytes + setBytes };
    let stateBytes = 0;
    for (const text of fieldTexts.values()) stateBytes += text.length;
    const takeSnapshot =
      rebase || since.positions >= this.settings.snapshotEvery || (since.positions >= 2 && since.bytes > stateBytes);
    // A snapshot records each field's checksum: the texts appended since the last one are checksummed now.
    const settled = takeSnapshot ? new Map([...checksums].map(([name, checksum]) => [name, checksum.settled()])) : checksums;
    const snapshot = takeSnapshot
      ? snapshotText({ schema, position: position.hash, parent: parent?.hash ?? GENESIS_HASH, fieldTexts, appends, checksums: settled })
      : undefined;

    const status: ThreadStatus = interrupts.length ? 'interrupted' : next.length ? 'running' : 'completed';
    crashPoint('before-commit', nodes);
    await this.cp.commitStep(this.lease, { position, items, ...(snapshot ? { snapshot } : {}), status, expectedHead: this.lastSeq });
    crashPoint('after-commit', nodes);

    this.head = { position, body };
    this.lastSeq = seq;
    this.state = state;
    this.appends = appends;
    this.checksums = settled;
    this.fieldTexts = fieldTexts;
    this.sinceSnapshot = takeSnapshot ? { positions: 0, bytes: 0 } : since;
    this.rebasePending = false;
    this.settings.emit?.({
      type: 'step.commit',
      threadId: this.lease.threadId,
      at: Date.now(),
      seq,
      step,
      nodes,
      next,
      hash: position.hash,
      snapshot: takeSnapshot,
      status,
    });
  }

  /** Runtime fields with a `compute` are set by the runtime at every commit (only stored when they change). */
  private applyRuntimeFields(state: Record<string, unknown>, changes: Map<string, EncodedChange>, at: { seq: number; step: number; nodes: string[] }): void {
    const info = { threadId: this.lease.threadId, ns: this.ns, ...at, attempt: this.attempt, tenant: this.tenant };
    for (const [name, value] of this.settings.schema.runtimeValues(info)) {
      const text = encode(value, name);
      if (text === this.fieldTexts.get(name)) continue;
      state[name] = value;
      changes.set(name, { kind: 'set', text });
    }
  }

  /**
   * The first position of a thread stores non-empty append defaults; a rebase (the
   * first position under a new schema version) stores every field in full, so that
   * nothing written at the older version is needed to read what follows.
   */
  private addFullWrites(state: Record<string, unknown>, changes: Map<string, EncodedChange>, rebase: boolean): void {
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
function writtenArtifactRefs(state: Record<string, unknown>, changes: Map<string, EncodedChange>): ArtifactRef[] {
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
  fieldTexts: Map<string, string>;
  appends: Record<string, AppendCursor>;
  checksums: Map<string, FieldChecksum>;
}): string {
  const values: Record<string, RawJson> = {};
  for (const [name, text] of at.fieldTexts) values[name] = new RawJson(text);
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
