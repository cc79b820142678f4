/**
 * @module cairn/engine-kit
 * What an engine author builds on: the storage contracts (a checkpointer, a ledger,
 * a store, an artifact store) and their base classes, which hold every rule of the
 * contract once (`BaseCheckpointer`, `BaseLedger`, `BaseStore`, `BaseArtifactStore`
 * over an `ArtifactBackend`), so an engine implements storage primitives only; the
 * engine's `Lifecycle` (lazy open, closed once); the filter parser and matcher, the codec
 * every stored value goes through, and the stored shapes of the thread log. Prove
 * an engine with the conformance suites in `cairn/testing`.
 *
 * @example
 * ```ts
 * import { BaseStore, decide, type StoredRow } from 'cairn/engine-kit';
 * class MyStore extends BaseStore { ... }   // implement reads and the atomic apply of prepared ops
 * ```
 */
export type * from '../contracts/checkpointer.js';
export type * from '../contracts/ledger.js';
export type * from '../contracts/store.js';
export type * from '../contracts/artifact-store.js';
export type * from '../contracts/engine.js';
export type * from '../contracts/threads.js';
export { comparePositionItems } from '../contracts/checkpointer.js';
export { BaseCheckpointer, extendsHead, noRowsRemoved, wakeAtFor } from '../checkpointer/base-checkpointer.js';
export type { CommitRefusal, ConsumptionToStore, HeldThread, SignalToStore } from '../checkpointer/base-checkpointer.js';
export type { NormalizedThreadQuery, MetadataValue } from '../internal/thread-query.js';
export { threadMatches, compareThreads, isAfterCursor } from '../internal/thread-query.js';
export { BaseLedger } from '../ledger/base-ledger.js';
export { Lifecycle } from '../internal/lifecycle.js';
export type { LifecycleHooks } from '../internal/lifecycle.js';
export { BaseArtifactStore } from '../artifacts/base-artifact-store.js';
export type { ArtifactBackend, ArtifactRecord, StoredRecord, RecordAddress, Staged, BlobReader } from '../artifacts/backend.js';
export { BaseStore } from '../store/base-store.js';
export type { ScanQuery } from '../store/base-store.js';
export { decide, isLive } from '../store/rows.js';
export type { StoredRow, PreparedOp, OverwriteDraft, OverwriteRow, Step as StoreStep } from '../store/rows.js';
export { parseFilter, matches } from '../store/filter.js';
export type { Condition as FilterCondition } from '../store/filter.js';
export { encode, decode, MAX_VALUE_DEPTH } from '../codec/tagged-json.js';
export { sha256Hex, ItemChecksum, GENESIS_HASH } from '../codec/hash.js';
export type { PositionBody, FieldChange, FieldTable, PendingInterrupt, PositionKind, SuspendedStep, StoredTaskResult, CallRef } from '../runtime/position.js';
export { hashPosition, sealSnapshot, openSnapshot, SNAPSHOT_FORMAT } from '../runtime/position.js';
export type { SnapshotBody, SnapshotAppend, AppendCursor } from '../runtime/materialize.js';
