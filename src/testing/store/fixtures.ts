/**
 * @module testing/store/fixtures
 * What the Store conformance tests share: the error check and the way they name items.
 */
import { expect } from 'vitest';
import type { StoreItem } from '../../contracts/store.js';

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

/** Each item as `namespace/labels/key`. */
export const where = (items: StoreItem[]) => items.map((i) => [...i.namespace, i.key].join('/'));
