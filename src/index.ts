/**
 * @module cairn
 * Durable runs for AI agents. Declare a typed state and a graph of nodes, run it
 * on a thread, kill the process at any moment, run it again: it continues from
 * the last step boundary without re-running a recorded call or repeating a side
 * effect that already landed.
 *
 * This entry holds what an application needs and loads no storage driver:
 * engines live in `cairn/sqlite`, `cairn/postgres`, `cairn/memory`; artifact
 * stores in `cairn/fs`, `cairn/s3`; inspection and maintenance functions (verify,
 * export, GC, migration checks) in `cairn/inspect`; what engine authors build on
 * in `cairn/engine-kit`; conformance suites in `cairn/testing`.
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

// State
export { field } from './state/fields.js';
export type { ModelField, RuntimeField, RuntimeInfo, ReducerFn, ConflictPolicy, ValueOf, WriteOf } from './state/fields.js';
export { defineState, StateSchema, DEFAULT_MAX_FIELD_BYTES } from './state/schema.js';
export type { StateDefinition, StateOf, UpdateOf, BaseState } from './state/schema.js';
export { MAX_VALUE_DEPTH } from './codec/tagged-json.js';
export { MAX_SET_VALUE_DEPTH } from './runtime/merge.js';

// Graphs and runs
export { graph, GraphBuilder, START, END } from './runtime/builder.js';
export type { NodeFn, NodeOptions, RouteFn, SubgraphSource } from './runtime/builder.js';
export type { SubgraphOptions } from './runtime/subgraph.js';
export { App } from './runtime/app.js';
export type {
  CompileOptions,
  RunOptions,
  RunResult,
  ResumeOptions,
  ForkOptions,
  StateAtOptions,
  HistoryOptions,
  ReplayOptions,
  EvaluateOptions,
  ResolveEffectOptions,
  SignalOptions,
  ThreadOption,
  NamespaceOption,
} from './runtime/app.js';
export type { PositionInfo, HistoryPage } from './inspect/history.js';
export type { PendingInterrupt, PendingWait } from './runtime/position.js';
export type { ReplayReport, ReplayStep, ReplayDivergenceInfo } from './runtime/replay.js';
export type { DivergenceKind } from './runtime/task-scope.js';
export type { EvaluationReport, ThreadEvaluation, EvaluationDivergence, EvaluationCost, EvaluationOutcome, EvaluationSelection } from './runtime/evaluate.js';
export type { EvaluatedModelCall } from './runtime/task-scope.js';
export type { VerifyReport, VerifyProblem, VerifyProblemKind } from './inspect/verify.js';
export type { SentSignal } from './inspect/signal.js';
export type { ThreadAttempts, AttemptInfo, AttemptOutcome, CommittedPosition } from './inspect/attempts.js';
export { Redactor, redactValue, redactionRules, REDACTED } from './internal/redaction.js';
export type { RedactOptions, RedactionRules } from './internal/redaction.js';
export { Worker } from './runtime/worker.js';
export type { WorkerOptions, WorkerRunReport } from './runtime/worker.js';
export type { RunEvent, EventSink } from './runtime/events.js';
export type { RetryPolicy } from './runtime/retry.js';
export { DEFAULT_RETRY } from './runtime/retry.js';

// Inside a node
export type { NodeContext, EffectSpec, EffectMode, EffectCommit, NodeStore, NodeWriteOptions, InterruptOptions, RecordOptions, WaitForOptions, WaitResult } from './runtime/task-scope.js';
export type { RecordKind, RecordMeta, TokenUsage } from './contracts/ledger.js';
export { currentNode } from './runtime/current-node.js';
export type { RunStream, StreamEvent } from './runtime/stream.js';

// Stores and artifacts
export { tenantPrefixPolicy } from './store/policy.js';
export { MAX_STORE_KEY_BYTES } from './internal/keys.js';
export type { TenantPrefixPolicyOptions } from './store/policy.js';
export { storeValue, loadValue, listArtifacts, VALUE_MEDIA_TYPE } from './artifacts/helpers.js';
export type { StoreValueOptions } from './artifacts/helpers.js';
export { isArtifactRef } from './artifacts/refs.js';
export { artifactRefSchema } from './artifacts/artifact-ref-schema.js';
export { pinArtifact, unpinArtifact } from './inspect/gc.js';
export type { PinOptions } from './inspect/gc.js';

// The contracts an application holds (engines, threads, stores, artifacts)
export type { Engine } from './contracts/engine.js';
export type * from './contracts/threads.js';
export type * from './contracts/store.js';
export type * from './contracts/artifact-store.js';
