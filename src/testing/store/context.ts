/**
 * @module testing/store/context
 * What every feature file of the Store conformance suite is handed: the engine of
 * the test under way (a fresh one per test) and the suite's options.
 */
import { afterEach, beforeEach } from 'vitest';
import type { Engine } from '../../contracts/engine.js';
import type { Store } from '../../contracts/store.js';

/** Options of `storeSuite`. */
export interface StoreSuiteOptions {
  /** Engine name shown in the test titles. */
  name: string;
  /** A fresh, empty engine for one test. */
  create: () => Engine | Promise<Engine>;
  /** Disposes of an engine after its test (default: `engine.close()`). Called even if the test closed it. */
  destroy?: (engine: Engine) => void | Promise<void>;
}

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
  let engine: Engine | undefined;

  beforeEach(async () => {
    engine = await options.create();
  });

  afterEach(async () => {
    if (options.destroy) await options.destroy(engine!);
    else await engine!.close();
  });

  const context: StoreSuiteContext = {
    options,
    ns: ['user', '42'],
    get engine() {
      if (!engine) throw new Error('storeSuite: the engine exists only inside a test');
      return engine;
    },
    get store() {
      return context.engine.store;
    },
  };
  return context;
}
