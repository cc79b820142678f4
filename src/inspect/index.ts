/**
 * @module cairn/inspect
 * Reading and maintaining what engines store, for tools and scripts (the CLI and
 * the web inspector use the same functions): verify a thread's integrity, tell its
 * attempts, load a position's state as stored, read a thread's timeline as a tree, its
 * graph and where the run is in it, a position's recorded outputs and effects, open
 * an artifact its state refers to, diff two positions' states, settle an
 * effect in doubt, signal or cancel a thread, check which threads a schema can
 * still read, export and import threads, collect and verify artifacts, rewrite
 * snapshots, apply retention (delete old threads, compact long ones, expire store rows
 * and artifacts). Every function works on any engine through its contracts.
 *
 * @example
 * ```ts
 * import { verifyThread, exportThreads } from 'cairn/inspect';
 * const report = await verifyThread(engine, 'cust_42');
 * if (!report.ok) for (const p of report.problems) console.log(p.kind, p.seq, p.message);
 * ```
 */
export { verifyThread } from './verify.js';
export type { VerifyReport, VerifyProblem, VerifyProblemKind } from './verify.js';
export { threadHistory, threadInterrupts, positionInfo } from './history.js';
export { threadTimeline } from './timeline.js';
export type { TimelinePage, TimelineEntry, TimelineBranch, TimelineFailure } from './timeline.js';
export { threadGraph } from './graph.js';
export type { ThreadGraph, CurrentNode, NodeActivity } from './graph.js';
export { describeGraph, graphDigest, publishGraph, graphNamespace } from '../runtime/graph-description.js';
export type { GraphDescription, DescribedGraph, DescribedNode, DescribedEdge } from '../runtime/graph-description.js';
export { GRAPH_NAMESPACE } from '../internal/graphs.js';
export { positionLedger, ledgerEntryView } from './position-ledger.js';
export type { PositionLedger, LedgerEntryView, EffectView, EffectRecovery } from './position-ledger.js';
export { openThreadArtifact } from './thread-artifact.js';
export type { ThreadArtifactOptions, OpenedArtifact } from './thread-artifact.js';
export type { EffectRecoveryDecision } from '../runtime/position.js';
export type { HistoryPage, PositionInfo, WaitInfo, ThreadInterrupts, AnsweredInterrupt } from './history.js';
export { storedState } from './stored-state.js';
export type { StoredState, StoredStateOptions } from './stored-state.js';
export { threadEffects, resolveEffect, failEffect } from './effects.js';
export type { ResolveEffectOptions, FailEffectOptions } from './effects.js';
export { diffStates, threadDiff } from './diff.js';
export type { FieldDiff, StateDiff, ThreadDiff, ThreadDiffOptions } from './diff.js';
export { threadAttempts } from './attempts.js';
export type { ThreadAttempts, AttemptInfo, AttemptOutcome, CommittedPosition } from './attempts.js';
export { migrateCheck } from './migrate-check.js';
export type { MigrateCheckReport, SchemaWindow, VersionCount } from './migrate-check.js';
export { cancelThread } from './cancel.js';
export type { CancelThreadOptions, CancelThreadResult } from './cancel.js';
export { signalThread } from './signal.js';
export type { SentSignal, SignalThreadOptions } from './signal.js';
export { exportThreads, importThreads } from './transfer.js';
export { threadRedactor, storedRedaction, redactStoredState, redactDiff, redactLedgerEntry, redactPositionLedger, redactEvaluationReport, learnHead } from './redaction.js';
export type { RedactionChoice } from './redaction.js';
export { eraseTenant } from './erase.js';
export type { EraseOptions, ErasureReport } from './erase.js';
export type { TransferRecord, ImportReport, ExportOptions, ImportOptions } from './transfer.js';
export { checkRetentionPolicy, collectArtifacts, pinArtifact, unpinArtifact, parseRetentionRule, PIN_NAMESPACE } from './gc.js';
export type { GcOptions, GcReport, GcVictim, GcProgress, PinOptions, RetentionPolicy, ThreadRetentionRule, ArtifactRetentionRule, PositionRetentionRule, LedgerRetentionRule, StoreRetentionRule } from './gc.js';
export { applyRetention } from './retention.js';
export type { RetentionOptions, RetentionReport, RetentionRows, RetentionSkip, RetentionCompaction, RetentionProgress } from './retention.js';
export { planCompaction, compactNamespace } from './compact.js';
export type { CompactionPlan, NoCompaction } from './compact.js';
export { verifyArtifacts } from './artifact-verify.js';
export type { ArtifactVerifyOptions, ArtifactVerifyReport, CorruptArtifact, DanglingRef } from './artifact-verify.js';
export { findArtifactRefs } from '../artifacts/refs.js';
export { materialize, materializeHead } from '../runtime/materialize.js';
export type { LoadedPosition, LoadOptions } from '../runtime/materialize.js';
export { rewriteSnapshots } from '../runtime/rewrite-snapshots.js';
export type { RewriteReport } from '../runtime/rewrite-snapshots.js';
