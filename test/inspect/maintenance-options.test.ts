/**
 * The maintenance calls of cairn/inspect refuse what they cannot run on before they
 * read or write anything, with InvalidOptionError saying what they take: exportThreads
 * given thread ids that are not an array of strings (a TypeError, "threadIds is not
 * iterable"), collectArtifacts without its checkpointer or artifact store (a TypeError
 * from deep inside), and an option key any of exportThreads, importThreads,
 * collectArtifacts or applyRetention does not take (ignored: a misspelt `dryrun` ran
 * for real). importThreads says what a first line that is not a record is.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fsArtifacts } from '../../src/artifacts/fs/index.js';
import type { ArtifactStore } from '../../src/contracts/artifact-store.js';
import type { Engine } from '../../src/contracts/engine.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { InvalidExportError, InvalidOptionError } from '../../src/errors.js';
import { collectArtifacts } from '../../src/inspect/gc.js';
import { applyRetention } from '../../src/inspect/retention.js';
import { exportThreads, importThreads, type TransferRecord } from '../../src/inspect/transfer.js';
import { workedExample } from '../../src/testing/worked-example.js';

let dir: string;
let engine: Engine;
let artifacts: ArtifactStore;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-maintenance-options-'));
  engine = sqlite(join(dir, 'cairn.db'));
  artifacts = fsArtifacts(join(dir, 'artifacts'));
  await workedExample({ engine, artifacts }).run({ thread: 'cust_42', input: { customerId: 'cust_42' } });
});
afterAll(async () => {
  await engine.close();
  rmSync(dir, { recursive: true, force: true });
});

/** The error `run` rejects (or throws) with. */
async function failure(run: () => Promise<unknown>): Promise<Error> {
  const error = await run().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error, 'it did not fail').toBeInstanceOf(Error);
  return error as Error;
}

/** Every record of an export of `ids`, pulled: where an async generator's checks run. */
async function exported(ids: unknown, options?: unknown): Promise<TransferRecord[]> {
  const records: TransferRecord[] = [];
  for await (const record of exportThreads(engine, ids as string[], options as never)) records.push(record);
  return records;
}

const untyped = (value: unknown) => value as never;

describe('exportThreads', () => {
  it('refuses thread ids that are not an array of strings, saying what it takes', async () => {
    for (const [ids, got] of [
      ['cust_42', 'got "cust_42"'],
      [undefined, 'got undefined'],
      [null, 'got null'],
      [{ threads: ['cust_42'] }, 'got an object'],
      [['cust_42', 7], 'got an array with a number at index 1'],
    ] as const) {
      const error = await failure(() => exported(ids));
      expect(error, String(ids)).toBeInstanceOf(InvalidOptionError);
      expect(error.message).toContain(`exportThreads(engine, threadIds, options?) takes the ids of the threads to export as an array of strings, ${got}.`);
    }
  });

  it('refuses an option it does not take, and options that are not an object', async () => {
    const error = await failure(() => exported(['cust_42'], { raw: true, redactPattern: ['secret'] }));
    expect(error).toBeInstanceOf(InvalidOptionError);
    expect(error.message).toContain('exportThreads: unknown option "redactPattern" (options: store, artifacts, raw, redactPatterns, seal).');
    expect(await failure(() => exported(['cust_42'], null))).toBeInstanceOf(InvalidOptionError);
    expect((await exported(['cust_42'], { raw: true })).at(-1)).toMatchObject({ type: 'end', threads: 1 });
  });
});

describe('importThreads', () => {
  it('refuses an option it does not take before importing anything', async () => {
    const records = await exported(['cust_42'], { raw: true, artifacts });
    const target = sqlite(join(dir, 'target.db'));
    try {
      const error = await failure(() => importThreads(target, records, untyped({ artifact: artifacts })));
      expect(error).toBeInstanceOf(InvalidOptionError);
      expect(error.message).toContain('importThreads: unknown option "artifact" (options: artifacts, keys).');
      expect(await failure(() => importThreads(target, records, untyped(null)))).toBeInstanceOf(InvalidOptionError);
      expect(await target.checkpointer.listThreads()).toEqual([]);
    } finally {
      await target.close();
    }
  });

  it('says what a first line that is not a record is, and refuses a null line inside an export', async () => {
    const target = sqlite(join(dir, 'lines.db'));
    try {
      await expect(importThreads(target, untyped([{}]))).rejects.toThrow('not a cairn export: it starts with a JSON object without a type, not a header.');
      await expect(importThreads(target, untyped([null]))).rejects.toThrow('not a cairn export: it starts with a JSON null, not a header.');
      const [header, ...rest] = await exported(['cust_42'], { raw: true });
      const error = await failure(() => importThreads(target, untyped([header, null, ...rest])));
      expect(error).toBeInstanceOf(InvalidExportError);
      expect(error.message).toContain('a JSON null inside the export: it is damaged.');
      expect(await target.checkpointer.listThreads()).toEqual([]);
    } finally {
      await target.close();
    }
  });

  it('refuses a record of a type no export has, instead of passing over what it holds', async () => {
    const target = sqlite(join(dir, 'unknown-type.db'));
    try {
      const [header, thread, ...rest] = await exported(['cust_42'], { raw: true });
      const error = await failure(() => importThreads(target, untyped([header, thread, { type: 'checkpoint', data: 'x' }, ...rest])));
      expect(error).toBeInstanceOf(InvalidExportError);
      expect(error.message).toContain('a "checkpoint" record, which no export version this cairn reads has: the export is damaged. Nothing of it was imported.');
      expect(await target.checkpointer.listThreads()).toEqual([]);
    } finally {
      await target.close();
    }
  });
});

describe('collectArtifacts', () => {
  it('needs a checkpointer and an artifact store, and says so', async () => {
    const cases: [unknown, string][] = [
      [{ checkpointer: engine.checkpointer }, "collectArtifacts needs artifacts: the unscoped artifact store the threads wrote to, got undefined."],
      [{ artifacts }, "collectArtifacts needs checkpointer: the engine's checkpointer (engine.checkpointer), got undefined."],
      [{ checkpointer: engine, artifacts }, 'got an engine (pass its parts: engine.checkpointer, engine.store, engine.ledger).'],
      [undefined, 'collectArtifacts takes one options object with checkpointer and artifacts (checkpointer, artifacts, store, ledger, retention, graceMs, grace, pins, dryRun, now, onProgress), got undefined.'],
    ];
    for (const [options, message] of cases) {
      const error = await failure(() => collectArtifacts(untyped(options)));
      expect(error).toBeInstanceOf(InvalidOptionError);
      expect(error.message).toContain(message);
    }
  });

  it('refuses an option it does not take: a misspelt dryRun collects nothing', async () => {
    const before = (await artifacts.list()).items.length;
    expect(before).toBeGreaterThan(0);
    const error = await failure(() => collectArtifacts(untyped({ checkpointer: engine.checkpointer, artifacts, graceMs: 0, dryrun: true })));
    expect(error).toBeInstanceOf(InvalidOptionError);
    expect(error.message).toContain('collectArtifacts: unknown option "dryrun" (options: checkpointer, artifacts, store, ledger, retention, graceMs, grace, pins, dryRun, now, onProgress).');
    expect((await artifacts.list()).items.length).toBe(before);
  });

  it('refuses a dryRun that is not a boolean (a "true" from a config collects nothing) and a now that is not a finite number', async () => {
    const before = (await artifacts.list()).items.length;
    for (const dryRun of ['true', 1, 'yes', null]) {
      const error = await failure(() => collectArtifacts(untyped({ checkpointer: engine.checkpointer, artifacts, graceMs: 0, dryRun })));
      expect(error, String(dryRun)).toBeInstanceOf(InvalidOptionError);
      expect(error.message).toContain(`collectArtifacts: dryRun must be true or false, got ${JSON.stringify(dryRun)}. Nothing was removed.`);
    }
    for (const [now, shown] of [[Number.NaN, 'NaN'], ['2030-01-01', '"2030-01-01"'], [Infinity, 'Infinity']] as const) {
      const error = await failure(() => collectArtifacts(untyped({ checkpointer: engine.checkpointer, artifacts, graceMs: 0, dryRun: true, now })));
      expect(error, String(now)).toBeInstanceOf(InvalidOptionError);
      expect(error.message).toContain(`collectArtifacts: now must be a finite number of ms since the epoch, got ${shown}.`);
    }
    expect((await artifacts.list()).items.length).toBe(before);
  });
});

describe('applyRetention', () => {
  it('refuses an option it does not take, options that are not an object, and no checkpointer', async () => {
    const policy = { threads: [{ status: 'completed' as const, olderThanMs: 0 }] };
    const error = await failure(() => applyRetention(untyped({ checkpointer: engine.checkpointer, policy, dryrun: true })));
    expect(error).toBeInstanceOf(InvalidOptionError);
    expect(error.message).toContain('applyRetention: unknown option "dryrun" (options: checkpointer, ledger, store, artifacts, policy, dryRun, graceMs, now, onProgress).');
    expect(await engine.checkpointer.getThread('cust_42')).not.toBeNull();
    expect(await failure(() => applyRetention(untyped(undefined)))).toBeInstanceOf(InvalidOptionError);
    expect((await failure(() => applyRetention(untyped({ policy })))).message).toContain("applyRetention needs checkpointer: the engine's checkpointer (engine.checkpointer), got undefined.");
  });

  it('refuses a dryRun that is not a boolean and a now that is not a finite number, removing nothing', async () => {
    await engine.store.put(['cache'], 'page', { html: '<p>' });
    const policy = { threads: [{ status: 'completed' as const, olderThanMs: 0 }], store: [{ namespace: ['cache'], olderThanMs: 0 }] };
    for (const dryRun of ['true', 'false', 1, null]) {
      const error = await failure(() => applyRetention(untyped({ checkpointer: engine.checkpointer, store: engine.store, policy, dryRun, now: Date.now() + 60_000 })));
      expect(error, String(dryRun)).toBeInstanceOf(InvalidOptionError);
      expect(error.message).toContain(`applyRetention: dryRun must be true or false, got ${JSON.stringify(dryRun)}. Nothing was removed.`);
    }
    for (const [now, shown] of [[Number.NaN, 'NaN'], ['2030-01-01', '"2030-01-01"'], [-Infinity, '-Infinity']] as const) {
      const error = await failure(() => applyRetention(untyped({ checkpointer: engine.checkpointer, store: engine.store, policy, dryRun: true, now })));
      expect(error, String(now)).toBeInstanceOf(InvalidOptionError);
      expect(error.message).toContain(`applyRetention: now must be a finite number of ms since the epoch, got ${shown}.`);
    }
    expect(await engine.checkpointer.getThread('cust_42')).not.toBeNull();
    expect(await engine.store.get(['cache'], 'page')).not.toBeNull();
    await engine.store.delete(['cache'], 'page');
  });
});
