/**
 * @module testing/store/context
 * What every feature file of the Store conformance suite is handed: the engine of
 * the test under way (a fresh one per test) and the suite's options.
 */
import { freshEnginePerTest, type EngineSuiteOptions } from '../suite-kit.js';
import type { Engine } from '../../contracts/engine.js';
import type { Store } from '../../contracts/store.js';

/** Options of `storeSuite`. */
export type StoreSuiteOptions = EngineSuiteOptions;

/** The test's engine and store (read them inside a test or a hook, never at registration). */
export interface StoreSuiteContext {
  readonly options: StoreSuiteOptions;
  readonly engine: Engine;
  readonly store: Store;
  /** The namespace most tests write under. */
  readonly ns: string[];
}

/** Registers the hooks that give every test a fresh engine (and dispose of it), and returns the context. */
export function storeContext(options: StoreSuiteOptions): StoreSuiteContext {
  const engine = freshEnginePerTest(options, 'storeSuite');

  const context: StoreSuiteContext = {
    options,
    ns: ['user', '42'],
    get engine() {
      return engine();
    },
    get store() {
      return context.engine.store;
    },
  };
  return context;
}
