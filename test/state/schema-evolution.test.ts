/**
 * Threads written by older code (v1.db by the v1 workflow, v2.db by v2; committed
 * fixtures from test/fixtures/schema-evolution/generate.ts) are resumed, inspected,
 * replayed and forked by today's v3 code through the upcaster chain, and the stored
 * rows are never rewritten.
 */
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { SchemaTooOldError, type Engine } from '../../src/index.js';
import type { StoredPosition } from '../../src/engine-kit/index.js';
import { ordersV3 } from '../fixtures/schema-evolution/orders.js';
import { tempDir } from '../helpers/temp-dirs.js';

const fixture = (name: string) => new URL(`../fixtures/schema-evolution/${name}`, import.meta.url).pathname;
let engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.map((e) => e.close()));
  engines = [];
});

/** A private copy of a fixture file: the committed ones are never opened for writing. */
function open(name: 'v1.db' | 'v2.db'): Engine {
  const file = join(tempDir('cairn-evolution-'), name);
  copyFileSync(fixture(name), file);
  const engine = sqlite(file);
  engines.push(engine);
  return engine;
}

async function rows(engine: Engine, thread: string): Promise<StoredPosition[]> {
  return engine.checkpointer.getPositions(thread, '', { from: 0, to: 1000 });
}

describe('threads written by v1 and v2 code, read by v3 code', () => {
  it('reads every v1 thread at v3: two fields became a list, notes became comments, priority defaults', async () => {
    const app = ordersV3(open('v1.db'));
    const done = await app.getState({ thread: 'v1-done' });
    expect(done).toMatchObject({ order: 'order-1', items: [{ color: 'red', size: 'M' }], status: 'shipped', priority: 'normal' });
    expect(done.comments).toEqual(['picked red/M', 'ok by alice', 'reviewed']);
    expect(done).not.toHaveProperty('notes');
    expect(done).not.toHaveProperty('item_color');
  });

  it('reads v2 threads at v3 through the second upcaster only', async () => {
    const app = ordersV3(open('v2.db'));
    expect(await app.getState({ thread: 'v2-done' })).toMatchObject({ items: [{ color: 'blue', size: 'M' }], comments: ['picked blue/M', 'ok by carol', 'reviewed'], priority: 'normal' });
  });

  it('inspects every position of an old thread: history and stateAt through the upcasters', async () => {
    const app = ordersV3(open('v1.db'));
    const history = await app.history({ thread: 'v1-done' });
    expect(history.map((h) => h.schemaVersion)).toEqual(history.map(() => 1));
    for (const position of history) {
      const state = await app.stateAt({ thread: 'v1-done', seq: position.seq });
      expect(state.priority).toBe('normal');
      expect(Array.isArray(state.comments)).toBe(true);
    }
    expect((await app.stateAt({ thread: 'v1-done', seq: 1 })).items).toEqual([{ color: 'red', size: 'M' }]);
  });

  it('resumes a v1 thread paused before review: the answer is merged at v3 and the stored v1 rows stay as they were', async () => {
    const engine = open('v1.db');
    const app = ordersV3(engine);
    const before = await rows(engine, 'v1-waiting');
    const result = await app.resume({ thread: 'v1-waiting', input: { comments: ['ok by today'], priority: 'high' } });
    expect(result.status).toBe('completed');
    expect(result.state).toMatchObject({ status: 'shipped', priority: 'high', comments: ['picked blue/L', 'ok by today', 'reviewed'] });
    const after = await rows(engine, 'v1-waiting');
    expect(after.slice(0, before.length)).toEqual(before);
    const rebase = after[before.length]!;
    expect(rebase.schemaVersion).toBe(3);
    expect(JSON.parse(rebase.body).rebase).toBe(true);
    expect((await app.verify({ thread: 'v1-waiting' })).ok).toBe(true);
    expect(await app.getState({ thread: 'v1-waiting' })).toEqual(result.state);
  });

  it('runs a failed v1 thread again: it retries the failed step under v3 and completes', async () => {
    const app = ordersV3(open('v1.db'));
    const result = await app.run({ thread: 'v1-failed' });
    expect(result.status).toBe('completed');
    expect(result.state).toMatchObject({ status: 'shipped', comments: ['picked blue/M', 'ok by bob', 'reviewed'] });
  });

  it('replays a v1 thread with v3 code: recorded outputs are served and every recomputed state matches the stored one', async () => {
    const app = ordersV3(open('v1.db'));
    const report = await app.replay({ thread: 'v1-done', from: 0 });
    expect(report.steps.length).toBeGreaterThan(3);
    expect(report.steps.filter((s) => s.replayed).map((s) => s.nodes.join())).toEqual(['pick', 'note', 'review', 'ship']);
    expect(report.sameStates).toBe(true);
  });

  it('forks a v1 position with a v3 patch: the fork is written at v3, the old branch is untouched', async () => {
    const engine = open('v1.db');
    const app = ordersV3(engine);
    const before = await rows(engine, 'v1-done');
    const fork = await app.fork({ thread: 'v1-done', seq: 2, patch: { priority: 'low', comments: ['forked'] }, actor: 'dana' });
    expect(fork.state).toMatchObject({ priority: 'low', comments: ['picked red/M', 'forked'], items: [{ color: 'red', size: 'M' }] });
    expect((await rows(engine, 'v1-done')).slice(0, before.length)).toEqual(before);
    const continued = await app.run({ thread: 'v1-done' });
    expect(continued.status).toBe('interrupted');
    expect(continued.interrupts.map((i) => i.node)).toEqual(['review']);
    expect((await app.stateAt({ thread: 'v1-done', seq: before.at(-1)!.seq })).status).toBe('shipped');
  });

  it('refuses versions outside the compatibility window, naming both versions', async () => {
    const app = ordersV3(open('v1.db'), { oldestReadableVersion: 2 });
    const error = await app.getState({ thread: 'v1-done' }).catch((e: unknown) => e);
    expect(SchemaTooOldError.is(error)).toBe(true);
    expect((error as SchemaTooOldError).storedVersion).toBe(1);
    expect((error as SchemaTooOldError).oldestReadableVersion).toBe(2);
    expect((error as Error).message).toMatch(/version 1.*oldest readable version 2/);
    expect(await ordersV3(open('v2.db'), { oldestReadableVersion: 2 }).getState({ thread: 'v2-done' })).toMatchObject({ priority: 'normal' });
  });
});
