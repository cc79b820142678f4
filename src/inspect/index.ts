/**
 * @module cairn/inspect
 * Reading and maintaining what engines store, for tools and scripts (the CLI and
 * the web inspector use the same functions): verify a thread's integrity, tell its
 * attempts, load a position's state as stored, diff two positions' states, settle an
 * effect in doubt, signal or cancel a thread, check which threads a schema can
 * still read, export and import threads, collect and verify artifacts, rewrite
 * snapshots. Every function works on any engine through its contracts.
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
export { threadHistory, threadInterrupts } from './history.js';
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
export type { SignalThreadOptions } from './signal.js';
export { exportThreads, importThreads } from './transfer.js';
export type { TransferRecord, ImportReport, ExportOptions, ImportOptions } from './transfer.js';
export { collectArtifacts, pinArtifact, unpinArtifact, parseRetentionRule, PIN_NAMESPACE } from './gc.js';
export type { GcOptions, GcReport, GcVictim, GcProgress, PinOptions, RetentionPolicy, ThreadRetentionRule, ArtifactRetentionRule } from './gc.js';
export { verifyArtifacts } from './artifact-verify.js';
export type { ArtifactVerifyOptions, ArtifactVerifyReport, CorruptArtifact, DanglingRef } from './artifact-verify.js';
export { findArtifactRefs } from '../artifacts/refs.js';
export { materialize, materializeHead } from '../runtime/materialize.js';
export type { LoadedPosition, LoadOptions } from '../runtime/materialize.js';
export { rewriteSnapshots } from '../runtime/rewrite-snapshots.js';
export type { RewriteReport } from '../runtime/rewrite-snapshots.js';
