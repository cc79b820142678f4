/**
 * `cairn migrate --check` counts what is stored per schema version and names the
 * threads outside the window (child runs' positions counted too, and said to be
 * theirs); `--rewrite-snapshots` gives active old threads a
 * snapshot at the current version, after which they load without the upcasters,
 * and their stored positions are untouched.
 */
import { execFileSync } from 'node:child_process';
import { copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { SchemaTooOldError, type Engine } from '../../src/index.js';
import { migrateCheck, rewriteSnapshots } from '../../src/inspect/index.js';
import { orderV3, ordersV3 } from '../fixtures/schema-evolution/orders.js';
import { chain, storeThread } from '../helpers/positions.js';
import { tempDir } from '../helpers/temp-dirs.js';

const root = new URL('../..', import.meta.url).pathname;
let engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.map((e) => e.close()));
  engines = [];
});

function copyOf(name: string): string {
  const file = join(tempDir('cairn-migrate-'), name);
  copyFileSync(join(root, 'test/fixtures/schema-evolution', name), file);
  return file;
}

function open(file: string): Engine {
  const engine = sqlite(file);
  engines.push(engine);
  return engine;
}

describe('migrate --check', () => {
  it('counts threads and positions per version and names the threads outside the window', async () => {
    const engine = open(copyOf('v1.db'));
    const report = await migrateCheck(engine.checkpointer, { currentVersion: 3, oldestReadableVersion: 2 });
    expect(report.threads).toBe(3);
    expect(report.versions).toEqual([{ version: 1, threads: 3, positions: report.positions, readable: false }]);
    expect(report.outside.map((o) => o.threadId).sort()).toEqual(['v1-done', 'v1-failed', 'v1-waiting']);
    const inside = await migrateCheck(engine.checkpointer, { currentVersion: 3, oldestReadableVersion: 1 });
    expect(inside.outside).toEqual([]);
  });

  it('counts positions of both versions once a v1 thread has gone on under v3', async () => {
    const file = copyOf('v1.db');
    const engine = open(file);
    await ordersV3(engine).resume({ thread: 'v1-waiting', input: { comments: ['ok'] } });
    const report = await migrateCheck(engine.checkpointer, { currentVersion: 3, oldestReadableVersion: 1 });
    expect(report.versions.map((v) => [v.version, v.threads])).toEqual([
      [1, 2],
      [3, 1],
    ]);
  });

  it('is a CLI command that loads the schema from the application module and exits 1 when a thread is unreadable (after migrate --apply upgraded the file)', () => {
    const file = copyOf('v1.db');
    const run = (args: string[]) =>
      execFileSync(process.execPath, ['--import', join(root, 'node_modules/tsx/dist/esm/index.mjs'), join(root, 'dist/cli/main.js'), 'migrate', '--db', file, ...args], {
        encoding: 'utf8',
      });
    // The file was written by an older cairn: a check reads only, so it says how to upgrade the storage first.
    const outdated = (() => {
      try {
        run(['--check', '--json', '--state', join(root, 'test/fixtures/schema-evolution/orders.ts#OrderV3')]);
        return undefined;
      } catch (error) {
        return error as { status: number; stderr: string };
      }
    })();
    expect(outdated?.status).toBe(1);
    expect(outdated?.stderr).toContain('cairn migrate --apply');
    run(['--apply']);
    const report = JSON.parse(run(['--check', '--json', '--state', join(root, 'test/fixtures/schema-evolution/orders.ts#OrderV3')]));
    expect(report.window).toEqual({ currentVersion: 3, oldestReadableVersion: 1 });
    expect(report.outside).toEqual([]);
    const failed = (() => {
      try {
        run(['--check', '--current-version', '3', '--oldest-readable-version', '2']);
        return undefined;
      } catch (error) {
        return error as { status: number; stdout: string };
      }
    })();
    expect(failed?.status).toBe(1);
    expect(failed?.stdout).toMatch(/v1-waiting \(interrupted\) head at v1: too-old/);
  });
});

describe('migrate --check with child runs', () => {
  it("counts every namespace's positions by their own version and says how many are child runs'; the head is the root's", async () => {
    const file = join(tempDir('cairn-migrate-'), 'children.db');
    const engine = open(file);
    // The root at v3; a child run whose graph is still at v1; a grandchild at v3.
    await storeThread(engine.checkpointer, 'parent', [
      chain('', [{ schemaVersion: 3 }, { schemaVersion: 3 }]),
      chain('sub:0@1', [{ schemaVersion: 1 }, { schemaVersion: 1 }, { schemaVersion: 1 }]),
      chain('sub:0@1|deep:0@2', [{ schemaVersion: 3 }]),
    ]);
    await storeThread(engine.checkpointer, 'plain', [chain('', [{ schemaVersion: 3 }])]);

    const report = await migrateCheck(engine.checkpointer, { currentVersion: 3, oldestReadableVersion: 2 });
    expect(report).toMatchObject({ threads: 2, positions: 7, childPositions: 4, outside: [] });
    expect(report.versions).toEqual([
      { version: 1, threads: 0, positions: 3, readable: false },
      { version: 3, threads: 2, positions: 4, readable: true },
    ]);

    await engine.close();
    const printed = execFileSync(
      process.execPath,
      [join(root, 'dist/cli/main.js'), 'migrate', '--db', file, '--check', '--current-version', '3', '--oldest-readable-version', '2'],
      { encoding: 'utf8' },
    );
    expect(printed).toContain("2 threads, 7 positions (4 of them in child runs' namespaces");
    expect(printed).toMatch(/v1: 0 thread heads, 3 positions {2}OUTSIDE THE WINDOW/);
  });
});

describe('migrate --rewrite-snapshots', () => {
  it('rewrites active old threads only, leaves their positions untouched, and they then load without the upcasters', async () => {
    const engine = open(copyOf('v1.db'));
    const positionsBefore = await engine.checkpointer.getPositions('v1-waiting', '', { from: 0, to: 100 });
    const stateBefore = await ordersV3(engine).getState({ thread: 'v1-waiting' });
    // Outside a v3-only window the old head cannot be read...
    await expect(ordersV3(engine, { oldestReadableVersion: 3 }).getState({ thread: 'v1-waiting' })).rejects.toSatisfy((e: unknown) => SchemaTooOldError.is(e));

    const report = await rewriteSnapshots(engine, orderV3());
    expect(report.rewritten.map((r) => [r.threadId, r.fromVersion, r.toVersion]).sort()).toEqual([
      ['v1-failed', 1, 3],
      ['v1-waiting', 1, 3],
    ]);
    expect(report.skipped.map((s) => s.threadId)).toEqual(['v1-done']);

    // ...and after the rewrite it can: the snapshot holds the upcast state, items included.
    const strict = ordersV3(engine, { oldestReadableVersion: 3 });
    expect(await strict.getState({ thread: 'v1-waiting' })).toEqual(stateBefore);
    expect(await engine.checkpointer.getPositions('v1-waiting', '', { from: 0, to: 100 })).toEqual(positionsBefore);

    // The thread goes on at v3 from the snapshot: no rebase position is needed.
    const resumed = await strict.resume({ thread: 'v1-waiting', input: { comments: ['ok'] } });
    expect(resumed.state).toMatchObject({ status: 'shipped', comments: ['picked blue/L', 'ok', 'reviewed'], items: [{ color: 'blue', size: 'L' }] });
    const after = await engine.checkpointer.getPositions('v1-waiting', '', { from: positionsBefore.length, to: 100 });
    expect(after.every((p) => p.schemaVersion === 3 && !JSON.parse(p.body).rebase)).toBe(true);
    expect((await strict.verify({ thread: 'v1-waiting' })).ok).toBe(true);
    expect(await strict.getState({ thread: 'v1-waiting' })).toEqual(resumed.state);

    // A second rewrite has nothing left to do.
    const again = await rewriteSnapshots(engine, orderV3());
    expect(again.rewritten).toEqual([]);
  });
});
