/**
 * @module inspect/transfer
 * Moving threads between engines (SQLite → PostgreSQL, or back) with their whole
 * history: every position as stored (bodies and hashes byte for byte, so the hash
 * chain verifies on the other side), items, snapshots, pending writes, failures,
 * and the ledger (intents, outcomes, recorded outputs), of every namespace (the
 * root graph's and every child run's), with the thread's own times, status and wake
 * time, and its signals (pending and consumed, with their ids). The stream is
 * JSON lines (`cairn export` writes it, `cairn import` reads it).
 *
 * Optionally it also carries store items (store data is not per-thread: the
 * namespaces to take are named by prefix) and the bytes of every artifact the
 * exported threads and store items refer to, in base64 chunks, so a copy into
 * another database and artifact store verifies there (`cairn verify --artifacts`).
 * Store items arrive with their values and expiry; their versions start again at 1
 * and their times are the import's (a store write always makes its own).
 *
 * Format versions: 1 held the root namespace only; 2 holds every namespace, each in
 * seq order, the root's first; 3 adds `store` and `artifact` records (and the header
 * says which it holds); 4 adds `signal` records and the thread's `wakeAt`; 5 adds the
 * `meta` of ledger entries (what a recorded output was: model call, tool result; its
 * model, tokens and latency); 6 may be **sealed**: from an encrypted engine every record
 * but the header and the end travels as a `sealed` record (AES-256-GCM under the data
 * key of the scope it belongs to: the thread's, the store namespace's, the artifact's),
 * after a `data-key` record carrying that key as the key provider wrapped it. An import
 * unwraps it with the same provider (`options.keys`, or the target engine's), so after
 * an erasure that destroyed the scope's keys the export cannot be opened either. Import
 * reads all six: a position or pending write without `ns` belongs to the root, a thread
 * without `wakeAt` has none, a ledger entry without `meta` has none. An importer that knows an older version refuses a newer
 * stream at its header, rather than misreading it and leaving a half-imported thread.
 * Every version ends with an `end` record counting the threads, positions, signals,
 * store items and artifacts before it: import checks the stream against it (and each
 * thread's positions against the head its record declares), so a file cut anywhere,
 * between two threads too, is refused rather than imported as a shorter history.
 */
import type { Checkpointer, StoredPosition } from '../contracts/checkpointer.js';
import type { ArtifactRef, ArtifactStore } from '../contracts/artifact-store.js';
import type { Engine } from '../contracts/engine.js';
import type { ThreadRecord } from '../contracts/threads.js';
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import { decode, encode } from '../codec/tagged-json.js';
import { ArtifactNotFoundError, CairnError, InvalidExportError, InvalidOptionError, KeyUnavailableError, NotSupportedError, RedactedExportError, ThreadExistsError, ThreadNotFoundError, VersionConflictError } from '../errors.js';
import type { Redactor } from '../internal/redaction.js';
import { learnHead, redactArtifactText, redactsAsText, threadRedactor, type RedactionChoice } from './redaction.js';
import { redactTransferRecord } from './transfer-redaction.js';
import type { TransferRecord } from './transfer-records.js';
import { openText, sealText, type DataKey } from '../crypto/envelope.js';
import type { KeyProvider } from '../crypto/key-provider.js';
import { threadScope, tenantScope } from '../crypto/scopes.js';
import { findArtifactRefs, parseRefId } from '../artifacts/refs.js';
import { walkThreadRefs } from './gc.js';
import { appendedFields, type PositionBody } from '../runtime/position.js';
import { describePosition, namespacePositions } from './walk.js';
import { checkOptionKeys } from '../internal/option-keys.js';

/** The format version `exportThreads` writes. */
export const TRANSFER_FORMAT_VERSION = 6;
/** The format versions `importThreads` reads. */
const READABLE_VERSIONS: readonly number[] = [1, 2, 3, 4, 5, TRANSFER_FORMAT_VERSION];
/** The scope of artifacts of the unscoped store (as `encryptedArtifacts` seals them). */
const SHARED_ARTIFACT_SCOPE = 'artifacts';

/** `1 thread`, `2 threads`. */
const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** Bytes of artifact per `artifact-chunk` record (before base64). */
const CHUNK_BYTES = 192 * 1024;

export type { TransferRecord } from './transfer-records.js';

/** Options of {@link exportThreads}. */
export interface ExportOptions {
  /** Store items under these namespace prefixes (`[]`: every namespace) travel too. */
  store?: string[][];
  /** The artifact store the threads wrote to: every artifact they (and the exported store items) refer to travels too. */
  artifacts?: ArtifactStore;
  /**
   * `true`: every value as stored, importable (the chain verifies on the other side).
   * Default false: when the threads' graphs declare redaction rules (or `redactPatterns`
   * are given), the export is redacted: values hidden as `cairn show` hides them,
   * snapshots left out, format `cairn-threads-redacted`, which import refuses
   * (RedactedExportError). Text and JSON artifact bytes go through the same rules;
   * images and other binary artifacts are written as stored.
   */
  raw?: boolean;
  /** More patterns to hide (regular expression sources), beside the stored rules. */
  redactPatterns?: readonly string[];
  /**
   * Seal the records (format 6) under the engine's data keys. Default: true on an
   * encrypted engine (an export is a copy an erasure must reach), false otherwise. An
   * in-process copy that never writes the stream down may pass false.
   */
  seal?: boolean;
}

/** Every option {@link exportThreads} takes: another key (a misspelt `redactPattern`) is refused, not ignored. */
const EXPORT_KEYS = ['store', 'artifacts', 'raw', 'redactPatterns', 'seal'];
/** Every option {@link importThreads} takes: another key (a misspelt `artifact`) is refused, not ignored (the artifacts would be skipped). */
const IMPORT_KEYS = ['artifacts', 'keys'];

/** What was passed, for a message: `"cust_42"`, `null`, `a number`, `an object`; an array by its first element that is not a string. */
function describeValue(value: unknown): string {
  if (Array.isArray(value)) {
    const at = value.findIndex((v) => typeof v !== 'string');
    return at < 0 ? 'an array of strings' : `an array with ${describeValue(value[at])} at index ${at}`;
  }
  if (value === null || value === undefined) return String(value);
  if (typeof value === 'string') return JSON.stringify(value);
  return typeof value === 'object' ? 'an object' : `a ${typeof value}`;
}

/** Seals export records under the data keys of their scopes, announcing each key once before its first use. */
class ExportSealer {
  private readonly sent = new Set<string>();
  constructor(private readonly engine: Engine) {}

  async *seal(scope: string, record: TransferRecord): AsyncGenerator<TransferRecord> {
    const keyring = this.engine.encryption!.keyring;
    const key = await keyring.keyForWrite(scope);
    if (!this.sent.has(key.id)) {
      const row = (await keyring.listKeys(scope)).find((k) => k.id === key.id);
      if (!row) throw new KeyUnavailableError(key.id, `the keyring holds no wrapped form of the current data key of scope ${JSON.stringify(scope)}.`);
      yield { type: 'data-key', scope, id: key.id, kekId: row.kekId, wrapped: row.wrapped };
      this.sent.add(key.id);
    }
    yield { type: 'sealed', scope, key: key.id, data: sealText(key, encode(record, 'export record'), exportAad(scope)) };
  }
}

function exportAad(scope: string): string {
  return `cairn-export|${scope}`;
}

/**
 * Every record of the given threads (with `options`, store items and artifacts), in an
 * order `importThreads` can replay. Throws ThreadNotFoundError, before the first
 * record, if one of them does not exist; with `options.artifacts`, ArtifactNotFoundError
 * if one they refer to is not stored there.
 *
 * @example
 * ```ts
 * for await (const record of exportThreads(engine, ['cust_42'], { store: [['user', '42']], artifacts })) out.write(encode(record) + '\n');
 * ```
 */
export async function* exportThreads(engine: Engine, threadIds: string[], options: ExportOptions = {}): AsyncGenerator<TransferRecord> {
  if (!Array.isArray(threadIds) || !threadIds.every((id) => typeof id === 'string')) {
    throw new InvalidOptionError(`exportThreads(engine, threadIds, options?) takes the ids of the threads to export as an array of strings, got ${describeValue(threadIds)}.`);
  }
  checkOptionKeys('exportThreads', options, EXPORT_KEYS);
  const seal = options.seal ?? engine.encryption !== undefined;
  if (seal && !engine.encryption) throw new CairnError('exportThreads({ seal: true }) needs an encrypted engine: its data keys seal the records.');
  if (!seal) {
    yield* plainExport(engine, threadIds, options, false);
    return;
  }
  const sealer = new ExportSealer(engine);
  /** The scope of the records that follow, as the plain export announces them. */
  let scope = '';
  for await (const record of plainExport(engine, threadIds, options, true)) {
    if (record.type === 'header' || record.type === 'end') yield record;
    else if (record.type === 'thread') {
      scope = threadScope(record.thread.tenant, record.thread.id);
      yield* sealer.seal(scope, record);
    } else if (record.type === 'store') yield* sealer.seal(engine.encryption!.storeScope(record.namespace), record);
    else if (record.type === 'artifact') {
      const tenant = parseRefId(record.ref.id).tenant;
      scope = tenant === null ? SHARED_ARTIFACT_SCOPE : tenantScope(tenant);
      yield* sealer.seal(scope, record);
    } else yield* sealer.seal(scope, record);
  }
}

/** The records of an export in the clear, in order (the header says whether they will be sealed). */
async function* plainExport(engine: Engine, threadIds: string[], options: ExportOptions, sealed: boolean): AsyncGenerator<TransferRecord> {
  const cp = engine.checkpointer;
  for (const threadId of threadIds) {
    if (!(await cp.getThread(threadId))) throw new ThreadNotFoundError(threadId, { engine: engine.name });
    // An import replays a thread from its first position, which a compacted thread no longer has.
    if ((await cp.getHead(threadId, ''))?.base) {
      throw new NotSupportedError(`thread ${threadId} was compacted by retention: exporting a compacted thread is not supported (an import replays a thread from its first position). Nothing was written.`, { place: { engine: engine.name, thread: threadId } });
    }
  }
  // Each thread's rules are its graph's; store items are shown under every graph's.
  const choice: RedactionChoice = { ...(options.raw ? { raw: true } : {}), ...(options.redactPatterns ? { patterns: options.redactPatterns } : {}) };
  const redactors = new Map<string, Redactor>();
  for (const threadId of threadIds) redactors.set(threadId, await threadRedactor(engine, threadId, choice));
  const storeRedactor = await threadRedactor(engine, undefined, choice);
  const redacted = [...redactors.values()].some((r) => r.active) || (options.store !== undefined && storeRedactor.active);
  yield {
    type: 'header',
    format: redacted ? 'cairn-threads-redacted' : 'cairn-threads',
    version: TRANSFER_FORMAT_VERSION,
    exportedAt: Date.now(),
    engine: engine.name,
    ...(options.store ? { store: options.store } : {}),
    artifacts: options.artifacts !== undefined,
    ...(redacted ? { redacted: true as const } : {}),
    ...(sealed ? { sealed: true } : {}),
  };
  let r: Redactor | undefined;
  const shown = (record: TransferRecord): TransferRecord => (redacted && r?.active ? redactTransferRecord(r, record) : record);
  /** Refs to send with where one was found (and, in a redacted export, the rules of that thread), by id, in the order first found. */
  const refs = new Map<string, { ref: ArtifactRef; where: string; redactor: Redactor | undefined }>();
  const collect = (value: unknown, where: string) => {
    for (const ref of findArtifactRefs(value)) if (!refs.has(ref.id)) refs.set(ref.id, { ref, where, redactor: redacted && r?.active ? r : undefined });
  };
  let positions = 0;
  let signals = 0;
  for (const threadId of threadIds) {
    const thread = await cp.getThread(threadId);
    if (!thread) throw new ThreadNotFoundError(threadId, { engine: engine.name });
    r = redactors.get(threadId)!;
    // What the rules hide in the head state is hidden wherever the thread repeats it, earlier positions included.
    if (redacted) await learnHead(r, engine, threadId);
    yield shown({ type: 'thread', thread });
    // The root first ('' sorts first), then each child run's namespace, each in seq order: import replays them in this order.
    for (const ns of await cp.listNamespaces(threadId)) {
      for await (const position of namespacePositions(cp, threadId, ns)) {
        for await (const record of positionRecords(cp, threadId, position)) {
          // A finished task's writes wait in a pending write, outside the positions GC walks.
          if (options.artifacts && record.type === 'pending') collect(decode(record.write.body, `pending write ${record.write.task} of thread ${threadId}`), `thread ${threadId} pending write ${record.write.task}`);
          yield shown(record);
        }
        positions++;
      }
    }
    for (const failure of await cp.listFailures(threadId)) yield shown({ type: 'failure', threadId, failure });
    for (const entry of await engine.ledger.list(threadId)) yield shown({ type: 'ledger', threadId, entry });
    for (const signal of await cp.listSignals(threadId)) {
      yield shown({ type: 'signal', threadId, signal });
      signals++;
    }
    if (options.artifacts) {
      const thread = (await cp.getThread(threadId))!;
      await walkThreadRefs(cp, engine.ledger, thread, (value, at) => collect(value, `thread ${threadId}${at.ns ? ` ns ${at.ns}` : ''} seq ${at.seq}`));
    }
  }
  let storeItems = 0;
  r = storeRedactor;
  for (const prefix of options.store ?? []) {
    for (let cursor: string | null | undefined; ; ) {
      const page = await engine.store.search(prefix, { limit: 500, ...(cursor ? { cursor } : {}) });
      for (const item of page.items) {
        yield shown({ type: 'store', namespace: item.namespace, key: item.key, value: item.value, expiresAt: item.expiresAt });
        storeItems++;
        collect(item.value, `store ${item.namespace.join('/')}/${item.key}`);
      }
      if (!page.cursor) break;
      cursor = page.cursor;
    }
  }
  let artifacts = 0;
  if (options.artifacts) {
    for (const { ref, where, redactor } of refs.values()) {
      yield* artifactRecords(options.artifacts, ref, where, redactor);
      artifacts++;
    }
  }
  yield { type: 'end', threads: threadIds.length, positions, ...(signals ? { signals } : {}), ...(options.store ? { storeItems } : {}), ...(options.artifacts ? { artifacts } : {}) };
}

/**
 * One artifact as records: its ref and metadata, then its verified bytes in base64 chunks
 * of CHUNK_BYTES. With `redactor` (a redacted export) a text artifact's bytes go through
 * its rules first, as the inspector shows them (`redacted: true` when that changed them).
 */
async function* artifactRecords(store: ArtifactStore, ref: ArtifactRef, where: string, redactor?: Redactor): AsyncGenerator<TransferRecord> {
  const info = await store.stat(ref);
  if (!info || info.ref.sha256 !== ref.sha256 || info.ref.size_bytes !== ref.size_bytes) {
    throw new ArtifactNotFoundError(
      `${where} refers to artifact ${ref.id}, which the ${store.engine} artifact store ${info ? 'holds with other bytes' : 'does not hold'}. ` +
        'Export without artifacts, or from the artifact store the threads wrote to.',
      { place: { engine: store.engine } },
    );
  }
  if (redactor && redactsAsText(ref.media_type)) {
    const { bytes, changed } = await redactArtifactText(redactor, ref, await store.stream(ref, { verify: 'during' }));
    yield { type: 'artifact', ref, metadata: info.metadata, chunks: Math.ceil(bytes.byteLength / CHUNK_BYTES), ...(changed ? { redacted: true as const } : {}) };
    for (let at = 0; at < bytes.byteLength; at += CHUNK_BYTES) yield { type: 'artifact-chunk', id: ref.id, data: bytes.subarray(at, at + CHUNK_BYTES).toString('base64') };
    return;
  }
  yield { type: 'artifact', ref, metadata: info.metadata, chunks: Math.ceil(ref.size_bytes / CHUNK_BYTES) };
  let pending = new Uint8Array(0);
  // 'during': one pass, and a damaged blob errors at its end instead of completing the export.
  for await (const chunk of await store.stream(ref, { verify: 'during' })) {
    const joined = new Uint8Array(pending.byteLength + chunk.byteLength);
    joined.set(pending);
    joined.set(chunk, pending.byteLength);
    let at = 0;
    for (; joined.byteLength - at >= CHUNK_BYTES; at += CHUNK_BYTES) {
      yield { type: 'artifact-chunk', id: ref.id, data: Buffer.from(joined.subarray(at, at + CHUNK_BYTES)).toString('base64') };
    }
    pending = joined.slice(at);
  }
  if (pending.byteLength) yield { type: 'artifact-chunk', id: ref.id, data: Buffer.from(pending).toString('base64') };
}

/** A position as exported (with its items and snapshot), then the pending writes of the superstep that starts from it. */
async function* positionRecords(cp: Checkpointer, threadId: string, position: StoredPosition): AsyncGenerator<TransferRecord> {
  const { ns, seq } = position;
  const body = decode<PositionBody>(position.body, describePosition(ns, seq));
  const fields = appendedFields(body);
  const items = fields.length ? await cp.getPositionItems(threadId, ns, seq, fields) : [];
  const snapshot = await cp.getSnapshot(threadId, ns, [{ from: seq, to: seq }]);
  yield { type: 'position', threadId, position, items, snapshot: snapshot?.text ?? null };
  for (const write of await cp.getPendingWrites(threadId, ns, seq)) yield { type: 'pending', threadId, write };
}

/** What {@link importThreads} wrote: the threads, and how many positions, ledger entries, store items and artifacts. */
export interface ImportReport {
  threads: string[];
  positions: number;
  /** Signals queued again, pending and consumed. */
  signals: number;
  ledgerEntries: number;
  storeItems: number;
  /** Artifacts stored in `options.artifacts` (already there with the same bytes counts too). */
  artifacts: number;
  /** Artifacts in the stream left out because no artifact store was given. */
  artifactsSkipped: number;
}

/** Options of {@link importThreads}. */
export interface ImportOptions {
  /** Where the stream's artifacts go; without it they are skipped (and counted). */
  artifacts?: ArtifactStore;
  /** Unwraps a sealed export's data keys: the exporting engine's key provider. Default: the target engine's. */
  keys?: KeyProvider;
}

/** The records of a sealed export opened: `data-key` records unwrapped, `sealed` ones opened; the rest as they are. */
async function* unsealed(records: AsyncIterable<TransferRecord> | Iterable<TransferRecord>, provider: KeyProvider | undefined): AsyncGenerator<TransferRecord> {
  const keys = new Map<string, DataKey>();
  for await (const record of records) {
    // `?.`: a line that is not a record (null) is left for importThreads to refuse as such.
    if (record?.type === 'data-key') {
      if (!provider) throw new KeyUnavailableError(record.id, 'the export is sealed: import it into an encrypted engine, or pass the key provider it was exported with (options.keys, --keys).');
      keys.set(record.id, { id: record.id, key: await provider.unwrapKey(record.scope, { kekId: record.kekId, wrapped: record.wrapped }) });
    } else if (record?.type === 'sealed') {
      const key = keys.get(record.key);
      if (!key) throw new KeyUnavailableError(record.key, 'the export names a data key it does not carry before this record: it is damaged.');
      yield decode<TransferRecord>(openText(key, record.data, exportAad(record.scope), `sealed export record of scope ${record.scope}`), 'export record');
    } else yield record;
  }
}

/** A record's type, as the stream says it: undefined for a line that is not a record (`{}`, `42`, `null`). */
function recordType(record: unknown): unknown {
  return typeof record === 'object' && record !== null ? (record as { type?: unknown }).type : undefined;
}

/** `"thread" record`, or what a line that is not a record is: `JSON object without a type`, `JSON null`. */
function describeRecord(record: unknown): string {
  const type = recordType(record);
  if (typeof type === 'string') return `${JSON.stringify(type)} record`;
  if (typeof record === 'object' && record !== null && !Array.isArray(record)) return 'JSON object without a type';
  return `JSON ${record === null ? 'null' : Array.isArray(record) ? 'array' : typeof record}`;
}

/** Refuses a header this version cannot import: a redacted export (RedactedExportError), another format, a version it does not read. */
function checkHeader(record: Extract<TransferRecord, { type: 'header' }>): void {
  if (record.format === 'cairn-threads-redacted' || record.redacted) throw new RedactedExportError();
  if (record.format !== 'cairn-threads' || !READABLE_VERSIONS.includes(record.version)) {
    throw new InvalidExportError(`not a cairn thread export this version reads (format ${record.format} v${record.version}; reads v${READABLE_VERSIONS.join(', v')}).`);
  }
}

/**
 * Refuses a stream whose first record (`undefined`: it has none) does not start an
 * export {@link importThreads} reads, as importThreads refuses it: InvalidExportError
 * for an empty stream or one that starts with anything but a header, RedactedExportError,
 * InvalidExportError for a header of another format or version. `cairn import` checks
 * the first line with it before it creates the target database.
 */
export function checkExportStart(first: unknown): void {
  if (first === undefined) throw new InvalidExportError('not a cairn export: the stream is empty (no header record). Nothing was imported.');
  if (recordType(first) !== 'header') throw new InvalidExportError(`not a cairn export: it starts with a ${describeRecord(first)}, not a header. Nothing was imported.`);
  checkHeader(first as Extract<TransferRecord, { type: 'header' }>);
}

/**
 * Writes exported threads into `engine` (store items too, and artifacts into
 * `options.artifacts`). A thread that already exists there is refused
 * (ThreadExistsError), and so is a store item that exists. The stream must be a whole
 * export: a header first, each thread's positions up to the head its record declares,
 * and the end record with counts that match (InvalidExportError for an empty, cut or
 * damaged stream). An import is whole or nothing: when it fails, the threads and store
 * items it wrote are deleted again (artifacts it stored are left for GC). Positions are committed in seq
 * order with their stored bodies and hashes, so `verify` passes on the target as on
 * the source; the thread keeps its createdAt and updatedAt. An artifact is stored
 * under its own id and checked against its ref.
 *
 * @example
 * ```ts
 * const report = await importThreads(target, exportThreads(source, ['cust_42'], { artifacts: from }), { artifacts: to });
 * ```
 */
export async function importThreads(
  engine: Engine,
  records: AsyncIterable<TransferRecord> | Iterable<TransferRecord>,
  options: ImportOptions = {},
): Promise<ImportReport> {
  checkOptionKeys('importThreads', options, IMPORT_KEYS);
  const cp = engine.checkpointer;
  const report: ImportReport = { threads: [], positions: 0, signals: 0, ledgerEntries: 0, storeItems: 0, artifacts: 0, artifactsSkipped: 0 };
  /** The thread being imported, and the seq last imported into each of its namespaces (each namespace is a chain with its own head). */
  let current: { thread: ThreadRecord; lease: Awaited<ReturnType<Checkpointer['acquireThread']>>; heads: Map<string, number> } | undefined;

  const finish = async () => {
    if (!current) return;
    const { thread, lease } = current;
    // The thread record names its root head: a stream cut inside the thread stops short of it.
    const reached = current.heads.get('') ?? null;
    if (reached !== thread.head) {
      throw new InvalidExportError(`thread ${thread.id} declares head ${thread.head}, but its positions ${reached === null ? 'are missing' : `stop at ${reached}`}: the export is truncated or damaged. Nothing of it was imported.`);
    }
    // Last: every commit and update before it stamped its own time.
    // The wake time too: a signal imported into a waiting thread made it due.
    await cp.updateThread(lease, {
      status: thread.status,
      wakeAt: thread.wakeAt ?? null,
      attempts: thread.attempts - lease.thread.attempts,
      lastError: thread.lastError,
      updatedAt: thread.updatedAt,
    });
    await cp.releaseThread(lease);
    current = undefined;
  };

  const iterator = unsealed(records, options.keys ?? engine.encryption?.provider)[Symbol.asyncIterator]();
  const next = async (): Promise<TransferRecord | undefined> => {
    const step = await iterator.next();
    return step.done ? undefined : step.value;
  };
  /** Store items this import created, to take back when it fails. */
  const putItems: { namespace: string[]; key: string }[] = [];
  /**
   * What the stream held since its header, to check against its end record (every
   * exporter, from version 1 on, ends with one). `undefined` before the first header
   * and after an end: another header may start another export there (files concatenated).
   */
  let seen: { threads: number; positions: number; signals: number; storeItems: number; artifacts: number } | undefined;
  let headers = 0;
  try {
    for (let record = await next(); record !== undefined; record = await next()) {
      if (headers === 0) checkExportStart(record);
      else if (!seen && recordType(record) !== 'header') throw new InvalidExportError(`a ${describeRecord(record)} after the end record: the export is damaged. Nothing of it was imported.`);
      else if (typeof recordType(record) !== 'string') throw new InvalidExportError(`a ${describeRecord(record)} inside the export: it is damaged. Nothing of it was imported.`);
      await importRecord(record);
    }
    if (headers === 0) checkExportStart(undefined);
    if (seen) {
      await finish();
      throw new InvalidExportError(
        `the export ends before its end record, after ${plural(seen.threads, 'thread')} and ${plural(seen.positions, 'position')}: it is truncated (the rest of the file is missing). Nothing of it was imported.`,
      );
    }
  } catch (error) {
    await undo(error);
    throw error;
  }
  return report;

  /** Takes back what this import wrote (threads and store items; artifacts are left to GC): an export is imported whole or not at all. */
  async function undo(error: unknown): Promise<void> {
    const failures: unknown[] = [];
    const attempt = async (step: () => Promise<unknown>) => {
      try {
        await step();
      } catch (e) {
        failures.push(e);
      }
    };
    const lease = current?.lease;
    current = undefined;
    for (const id of report.threads) await attempt(() => cp.deleteThread(id, lease && lease.thread.id === id ? { lease } : {}));
    if (lease) await attempt(() => cp.releaseThread(lease));
    for (const item of putItems) await attempt(() => engine.store.delete(item.namespace, item.key));
    if (failures.length && error instanceof Error) {
      error.message += ` Taking back what the import wrote failed too (${failures.map((f) => (f as Error).message ?? String(f)).join('; ')}): threads ${report.threads.join(', ')} may be left partly imported; delete them.`;
    }
  }

  async function importRecord(record: TransferRecord): Promise<void> {
    switch (record.type) {
      case 'header':
        if (seen) throw new InvalidExportError('a second header before the end record: the export is damaged. Nothing of it was imported.');
        checkHeader(record);
        headers++;
        seen = { threads: 0, positions: 0, signals: 0, storeItems: 0, artifacts: 0 };
        break;
      case 'thread': {
        await finish();
        const { thread } = record;
        seen!.threads++;
        if (await cp.getThread(thread.id)) throw new ThreadExistsError([thread.id], engine.name);
        const lease = await cp.acquireThread(thread.id, {
          owner: { runId: randomUUID(), pid: process.pid, host: hostname() },
          leaseMs: 5 * 60_000,
          create: { kind: thread.kind, tenant: thread.tenant, metadata: thread.metadata, createdAt: thread.createdAt, updatedAt: thread.updatedAt },
        });
        current = { thread, lease, heads: new Map() };
        report.threads.push(thread.id);
        break;
      }
      case 'position': {
        const current = held(record.threadId, 'position');
        // A version 1 export may carry no ns: its positions are the root's.
        const position = { ...record.position, ns: record.position.ns ?? '' };
        // Only root commits set the thread's status; the root head's carries the exported one.
        const isHead = position.ns === '' && position.seq === current.thread.head;
        await cp.commitStep(current.lease, {
          position,
          items: record.items,
          ...(record.snapshot !== null ? { snapshot: record.snapshot } : {}),
          status: isHead ? current.thread.status : 'running',
          ...(isHead ? { wakeAt: current.thread.wakeAt ?? null } : {}),
          expectedHead: current.heads.get(position.ns) ?? null,
        });
        current.heads.set(position.ns, position.seq);
        report.positions++;
        seen!.positions++;
        break;
      }
      case 'pending':
        await cp.putPendingWrite(held(record.threadId, 'pending write').lease, { ...record.write, ns: record.write.ns ?? '' });
        break;
      case 'failure':
        await cp.updateThread(held(record.threadId, 'failure').lease, { failure: record.failure });
        break;
      case 'ledger': {
        const { entry } = record;
        held(entry.threadId, 'ledger entry');
        const base = { threadId: entry.threadId, key: entry.key, kind: entry.kind, name: entry.name, ns: entry.ns, seq: entry.seq, node: entry.node, task: entry.task, call: entry.call, argsDigest: entry.argsDigest, createdAt: entry.createdAt, ...(entry.meta ? { meta: entry.meta } : {}) };
        if (entry.kind === 'record') await engine.ledger.writeRecord({ ...base, outcome: entry.outcome ?? 'null' });
        else {
          await engine.ledger.writeIntent(base);
          if (entry.status === 'done' && entry.outcome !== null) await engine.ledger.writeOutcome(entry.threadId, entry.key, entry.outcome, entry.completedAt ?? entry.createdAt);
        }
        report.ledgerEntries++;
        break;
      }
      case 'signal': {
        const current = held(record.threadId, 'signal');
        const { signal } = record;
        if (signal.threadId !== record.threadId) throw new InvalidExportError(`a signal record of thread ${record.threadId} holds a signal of thread ${signal.threadId}: the export is damaged. Nothing of it was imported.`);
        // Ids are handed out 1, 2, 3… and the export lists them all in order: sent again in that order, each gets its own.
        const sent = await cp.sendSignal(signal.threadId, { name: signal.name, payload: signal.payload, sentAt: signal.sentAt });
        if (sent.id !== signal.id) throw new InvalidExportError(`signal ${signal.id} of thread ${signal.threadId} arrived as signal ${sent.id}: the export is damaged or out of order. Nothing of it was imported.`);
        if (signal.consumedBy !== null) await cp.consumeSignal(current.lease, { id: sent.id, by: signal.consumedBy, consumedAt: signal.consumedAt ?? signal.sentAt });
        report.signals++;
        seen!.signals++;
        break;
      }
      case 'store': {
        await finish();
        seen!.storeItems++;
        const ttlMs = record.expiresAt === null ? undefined : record.expiresAt - Date.now();
        // Expired since the export: it would read as absent there too.
        if (ttlMs !== undefined && ttlMs <= 0) break;
        try {
          await engine.store.put(record.namespace, record.key, record.value, { ifVersion: 0, ...(ttlMs !== undefined ? { ttlMs } : {}) });
        } catch (error) {
          if (!VersionConflictError.is(error)) throw error;
          throw new CairnError(`store item ${record.namespace.join('/')}/${record.key} already exists in the ${engine.name} engine: import refuses to overwrite it. Nothing was imported.`, { cause: error });
        }
        putItems.push({ namespace: record.namespace, key: record.key });
        report.storeItems++;
        break;
      }
      case 'artifact': {
        await finish();
        seen!.artifacts++;
        const chunks = chunksOf(record, next);
        if (!options.artifacts) {
          await chunks.drain();
          report.artifactsSkipped++;
          break;
        }
        await importArtifact(options.artifacts, record, chunks);
        report.artifacts++;
        break;
      }
      case 'artifact-chunk':
        throw new InvalidExportError(`a chunk of artifact ${record.id} outside its artifact: the export is damaged. Nothing of it was imported.`);
      case 'end': {
        await finish();
        const counted = seen!;
        // What the exporter counted, against what arrived (signals since version 4, store items and artifacts when it sent them).
        const expected: [string, number, number | undefined][] = [
          ['threads', counted.threads, record.threads],
          ['positions', counted.positions, record.positions],
          ['signals', counted.signals, record.signals ?? 0],
          ['store items', counted.storeItems, record.storeItems],
          ['artifacts', counted.artifacts, record.artifacts],
        ];
        const wrong = expected.filter(([, got, want]) => want !== undefined && got !== want);
        if (wrong.length) {
          throw new InvalidExportError(`the export's end record counts ${wrong.map(([what, got, want]) => `${want} ${what} (it holds ${got})`).join(', ')}: records are missing or were added. Nothing of it was imported.`);
        }
        seen = undefined;
        break;
      }
      case 'data-key':
      case 'sealed':
        break;
      default:
        // The header's version is one this cairn reads, and every record type of those versions is handled above.
        throw new InvalidExportError(`a ${describeRecord(record)}, which no export version this cairn reads has: the export is damaged. Nothing of it was imported.`);
    }
  }

  /** The thread being imported, which a record of thread `threadId` must belong to (its thread record comes first). */
  function held(threadId: string, what: string): NonNullable<typeof current> {
    if (!current || current.thread.id !== threadId) {
      throw new InvalidExportError(`a ${what} of thread ${threadId} ${current ? `among the records of thread ${current.thread.id}` : 'before its thread record'}: the export is damaged or out of order. Nothing of it was imported.`);
    }
    return current;
  }
}

/** The bytes of an `artifact` record, from the `artifact-chunk` records after it; read to the last one even if the consumer stops early. */
function chunksOf(record: Extract<TransferRecord, { type: 'artifact' }>, next: () => Promise<TransferRecord | undefined>): AsyncIterable<Uint8Array> & { drain(): Promise<void> } {
  let left = record.chunks;
  const read = async (): Promise<Uint8Array> => {
    const chunk = await next();
    left--;
    if (chunk?.type !== 'artifact-chunk' || chunk.id !== record.ref.id) {
      throw new CairnError(`artifact ${record.ref.id} should have ${record.chunks} chunks; the export ends or goes on without them: it is damaged.`);
    }
    return new Uint8Array(Buffer.from(chunk.data, 'base64'));
  };
  return {
    async *[Symbol.asyncIterator]() {
      while (left > 0) yield await read();
    },
    async drain() {
      while (left > 0) await read();
    },
  };
}

/** Stores one exported artifact under its own id (and tenant) and checks what was stored against its ref. */
async function importArtifact(store: ArtifactStore, record: Extract<TransferRecord, { type: 'artifact' }>, chunks: ReturnType<typeof chunksOf>): Promise<void> {
  const { ref, metadata } = record;
  const parsed = parseRefId(ref.id);
  const target = parsed.tenant === null ? store : store.forTenant(parsed.tenant);
  const put = { mediaType: ref.media_type, ...(Object.keys(metadata).length ? { metadata } : {}) };
  const stored = parsed.kind === 'key' ? await target.putNamed(parsed.key, chunks, put) : await target.put(chunks, put);
  // A key stored there already returns its ref without reading the bytes: skip them.
  await chunks.drain();
  if (stored.id !== ref.id || stored.sha256 !== ref.sha256 || stored.size_bytes !== ref.size_bytes) {
    throw new CairnError(
      `artifact ${ref.id} already exists in the ${store.engine} artifact store with other bytes (sha256 ${stored.sha256}, ${stored.size_bytes} bytes; the export has ${ref.sha256}, ${ref.size_bytes}): import refuses to replace it.`,
    );
  }
}
