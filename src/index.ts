/**
 * @module cairn
 * Durable runs for AI agents. Declare a typed state and a graph of nodes, run it
 * on a thread, kill the process at any moment, run it again: it continues from
 * the last step boundary without re-running a recorded call or repeating a side
 * effect that already landed.
 *
 * This entry loads no storage driver: engines live in `cairn/sqlite`,
 * `cairn/memory`; artifact stores in `cairn/fs`.
 *
 * @example
 * ```ts
 * import { z } from 'zod';
 * import { defineState, field, graph, START, END } from 'cairn';
 * import { sqlite } from 'cairn/sqlite';
 *
 * const State = defineState({ fields: { n: field.model(z.number(), { default: 0 }) } });
 * const app = graph(State)
 *   .node('inc', (s) => ({ n: s.n + 1 }))
 *   .edge(START, 'inc').edge('inc', END)
 *   .compile({ engine: sqlite('./cairn.db') });
 * await app.run({ thread: 't1' });
 * ```
 */
export * from './errors.js';
export { field } from './state/fields.js';
export type { ModelField, RuntimeField, RuntimeInfo, ReducerFn, ConflictPolicy, ValueOf, WriteOf } from './state/fields.js';
export { defineState, StateSchema, DEFAULT_MAX_FIELD_BYTES } from './state/schema.js';
export type { StateDefinition, StateOf, UpdateOf, BaseState } from './state/schema.js';
export { graph, GraphBuilder, START, END } from './runtime/graph.js';
export type { NodeFn, NodeOptions, RouteFn } from './runtime/graph.js';
export type { SubgraphOptions } from './runtime/subgraph.js';
export { App } from './runtime/app.js';
export { Worker } from './runtime/worker.js';
export type { WorkerOptions, WorkerRunReport } from './runtime/worker.js';
export type { CompileOptions, RunOptions, RunResult, PositionInfo, ResumeOptions, ForkOptions, NamespaceOption } from './runtime/app.js';
export type { NodeContext, EffectSpec, NodeStore, NodeWriteOptions, ValidatedRead } from './runtime/context.js';
export { MAX_STALE_RERUNS } from './runtime/context.js';
export { tenantPrefixPolicy } from './store/policy.js';
export type { TenantPrefixPolicyOptions } from './store/policy.js';
// For store engines outside cairn: extend BaseStore, decide() every write.
export { BaseStore } from './store/base-store.js';
export type { ScanQuery } from './store/base-store.js';
export { decide, isLive } from './store/rows.js';
export type { StoredRow, PreparedOp, OverwriteDraft, OverwriteRow, Step as StoreStep } from './store/rows.js';
export { parseFilter, matches } from './store/filter.js';
export type { Condition as FilterCondition } from './store/filter.js';
export type { RunEvent, EventSink, EffectMode } from './runtime/events.js';
export type { RetryPolicy } from './runtime/retry.js';
export { DEFAULT_RETRY } from './runtime/retry.js';
export type { PositionBody, FieldChange, PendingInterrupt, PositionKind, SuspendedStep } from './runtime/position.js';
export { materialize } from './runtime/materialize.js';
export type { ReplayReport, ReplayStep, ReplayDivergenceInfo } from './runtime/replay.js';
export { verifyThread } from './inspect/verify.js';
export { threadAttempts } from './inspect/attempts.js';
export type { ThreadAttempts, AttemptInfo, AttemptOutcome, CommittedPosition } from './inspect/attempts.js';
export { migrateCheck } from './inspect/migrate-check.js';
export { exportThreads, importThreads } from './inspect/transfer.js';
export type { TransferRecord, ImportReport, ExportOptions, ImportOptions } from './inspect/transfer.js';
export type { MigrateCheckReport, SchemaWindow, VersionCount } from './inspect/migrate-check.js';
export { rewriteSnapshots } from './runtime/rewrite-snapshots.js';
export type { RewriteReport } from './runtime/rewrite-snapshots.js';
export type { VerifyReport, VerifyProblem } from './inspect/verify.js';
export { encode, decode, MAX_VALUE_DEPTH } from './codec/tagged-json.js';
export { MAX_SET_VALUE_DEPTH } from './runtime/merge.js';
export { CRASH_POINTS } from './internal/crash-points.js';
export type { CrashPoint } from './internal/crash-points.js';
export type * from './contracts/checkpointer.js';
export type * from './contracts/ledger.js';
export type * from './contracts/store.js';
export type * from './contracts/artifact-store.js';
// Artifacts: helpers over any ArtifactStore, retention and collection, verification.
export { listArtifacts, storeValue, loadValue, VALUE_MEDIA_TYPE } from './artifacts/helpers.js';
export type { StoreValueOptions } from './artifacts/helpers.js';
export { findArtifactRefs, isArtifactRef } from './artifacts/refs.js';
export { collectArtifacts, pinArtifact, unpinArtifact, parseRetentionRule, PIN_NAMESPACE } from './inspect/gc.js';
export type { GcOptions, GcReport, GcVictim, GcProgress, PinOptions, RetentionPolicy, ThreadRetentionRule, ArtifactRetentionRule } from './inspect/gc.js';
export { verifyArtifacts } from './inspect/artifact-verify.js';
export type { ArtifactVerifyOptions, ArtifactVerifyReport, CorruptArtifact, DanglingRef } from './inspect/artifact-verify.js';
export type * from './contracts/engine.js';
export type * from './contracts/threads.js';
