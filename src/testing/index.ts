/**
 * @module cairn/testing
 * What cairn proves itself with, for you to prove your own engines and apps:
 * one conformance suite per storage contract (run them under vitest against your
 * engine, about ten lines each) and the worked example used by the demo and the
 * crash tests, and a storage-fault layer ({@link withFaults}) that makes chosen engine
 * operations fail once, forever, or land and then time out.
 *
 * @example
 * ```ts
 * // my-engine.conformance.test.ts
 * import { checkpointerSuite, ledgerSuite, storeSuite } from 'cairn/testing';
 * import { myEngine } from './my-engine.js';
 * checkpointerSuite({ name: 'mine', create: () => myEngine() });
 * ledgerSuite({ name: 'mine', create: () => myEngine() });
 * storeSuite({ name: 'mine', create: () => myEngine() });
 * ```
 */
export { artifactStoreSuite, hostileArtifactKeys } from './artifact-store.suite.js';
export { checkpointerSuite } from './checkpointer.suite.js';
export type { CheckpointerSuiteOptions } from './checkpointer.suite.js';
export { ledgerSuite } from './ledger.suite.js';
export type { LedgerSuiteOptions } from './ledger.suite.js';
export { storeSuite } from './store.suite.js';
export type { StoreSuiteOptions } from './store.suite.js';
export { withFaults, InjectedFault } from './faults.js';
export type { EngineCall, FaultController, FaultKind, FaultPart, FaultRule, FaultyEngine, FiredFault } from './faults.js';
export { runExampleProcess, recoveryChecks, EXAMPLE_PROCESS } from './crash-harness.js';
export { CRASH_POINTS } from '../internal/crash-points.js';
export type { ExampleRun, ExampleRunOptions, RecoveryCheck, RecoveryInput } from './crash-harness.js';
export { workedExample, WorkedExampleState, lookupCustomer, summarise, Customer, ArtifactRefSchema } from './worked-example.js';
export type { WorkedExampleOptions } from './worked-example.js';
export { parallelExample, ParallelState, PARALLEL_ROUNDS } from './parallel-example.js';
export type { ParallelExampleOptions } from './parallel-example.js';
