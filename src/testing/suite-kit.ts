/**
 * @module testing/suite-kit
 * What every conformance suite that runs on an engine shares: its options (a name, a
 * fresh engine per test, how to dispose of it), the hooks that give each test that
 * engine, and the small helpers its tests use (a typed-error check, a pause).
 */
import { afterEach, beforeEach, expect } from 'vitest';
import type { Engine } from '../contracts/engine.js';

/** Options of a suite run on an engine (`checkpointerSuite`, `ledgerSuite`, `storeSuite`). */
export interface EngineSuiteOptions {
  /** Engine name shown in the test titles. */
  name: string;
  /** A fresh, empty engine for one test. */
  create: () => Engine | Promise<Engine>;
  /** Disposes of an engine after its test (default: `engine.close()`). Called even if the test closed it. */
  destroy?: (engine: Engine) => void | Promise<void>;
}

/**
 * Registers the hooks that give every test a fresh engine from `options.create` and
 * dispose of it afterwards; returns the getter of the test's engine, which throws
 * outside a test (a suite reads it inside tests and hooks, never at registration).
 */
export function freshEnginePerTest(options: EngineSuiteOptions, suite: string): () => Engine {
  let engine: Engine | undefined;
  beforeEach(async () => {
    engine = await options.create();
  });
  afterEach(async () => {
    if (options.destroy) await options.destroy(engine!);
    else await engine!.close();
  });
  return () => {
    if (!engine) throw new Error(`${suite}: the engine exists only inside a test`);
    return engine;
  };
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Awaits `run()` and checks it rejects with an error of `type` (matched by its stable code). */
export async function expectError<T>(run: () => Promise<unknown>, type: { readonly code: string; prototype: T }): Promise<T> {
  let outcome: unknown;
  try {
    outcome = await run();
  } catch (error) {
    expect((error as { code?: unknown }).code, `expected ${type.code}, got: ${String(error)}`).toBe(type.code);
    return error as T;
  }
  return expect.fail(`expected ${type.code}, but the call resolved with ${JSON.stringify(outcome, (_, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v))}`);
}
