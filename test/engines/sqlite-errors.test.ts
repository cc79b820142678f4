/**
 * No driver error leaves the SQLite engine unwrapped: every method of the
 * checkpointer, the ledger and the store (with the tables gone under it, and, for
 * writes, with another connection holding the write lock past the busy timeout),
 * and the engine's lazy open, fails with EngineError (ERR_ENGINE) that names what
 * failed and keeps the driver's error as `cause`.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/contracts/engine.js';
import type { ThreadLease } from '../../src/contracts/threads.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { openDatabase, type SqliteDatabase } from '../../src/engines/sqlite/driver.js';
import { EngineError } from '../../src/errors.js';

const owner = { runId: 'r1', pid: process.pid, host: hostname() };
const position = (seq: number) => ({
  ns: '',
  seq,
  parent: seq === 0 ? null : seq - 1,
  segment: 0,
  step: seq,
  schemaVersion: 1,
  createdAt: 1_700_000_000_000 + seq,
  body: `{"kind":"step","seq":${seq}}`,
  hash: (seq + 1).toString(16).padStart(64, '0'),
});
const entry = (key: string) => ({ threadId: 't1', key, kind: 'effect' as const, name: 'e', ns: '', seq: 0, node: 'n', task: 'n:0', call: 0, argsDigest: null, createdAt: 1 });

async function failure(call: () => Promise<unknown>): Promise<unknown> {
  try {
    await call();
  } catch (error) {
    return error;
  }
  return undefined;
}

/** Every method of the engine, with arguments that reach the database. */
function everyCall(engine: Engine, lease: ThreadLease): [string, () => Promise<unknown>][] {
  const cp = engine.checkpointer;
  return [
    ['getThread', () => cp.getThread('t1')],
    ['listThreads', () => cp.listThreads({ status: 'running' })],
    ['listFailures', () => cp.listFailures('t1')],
    ['acquireThread', () => cp.acquireThread('t2', { owner, leaseMs: 1000, create: { kind: 'task', tenant: null, metadata: {} } })],
    ['renewLease', () => cp.renewLease(lease, 1000)],
    ['releaseThread', () => cp.releaseThread(lease)],
    ['updateThread', () => cp.updateThread(lease, { attempts: 1 })],
    ['commitStep', () => cp.commitStep(lease, { position: position(1), items: [], status: 'running', expectedHead: 0 })],
    ['putSnapshot', () => cp.putSnapshot(lease, { ns: '', seq: 0, text: '{}' })],
    ['putPendingWrite', () => cp.putPendingWrite(lease, { ns: '', baseSeq: 0, task: 'n:0', body: '{}' })],
    ['getPendingWrites', () => cp.getPendingWrites('t1', '', 0)],
    ['getPosition', () => cp.getPosition('t1', '', 0)],
    ['getPositions', () => cp.getPositions('t1', '', { from: 0, to: 1 })],
    ['listNamespaces', () => cp.listNamespaces('t1')],
    ['listPositions', () => cp.listPositions('t1', '')],
    ['getSnapshot', () => cp.getSnapshot('t1', '', [{ from: 0, to: 1 }])],
    ['getItems', () => cp.getItems('t1', '', 'm', [{ from: 0, to: 1 }])],
    ['getPositionItems', () => cp.getPositionItems('t1', '', 0, ['m'])],
    ['claimThreads', () => cp.claimThreads!({ owner, leaseMs: 1000, limit: 1 })],
    ['nextLeaseExpiry', () => cp.nextLeaseExpiry!()],
    ['deleteThread', () => cp.deleteThread('t1')],
    ['ledger.get', () => engine.ledger.get('t1', 'k1')],
    ['ledger.listForTask', () => engine.ledger.listForTask('t1', '', 0, 'n:0')],
    ['ledger.list', () => engine.ledger.list('t1')],
    ['ledger.writeIntent', () => engine.ledger.writeIntent(entry('k2'))],
    ['ledger.writeRecord', () => engine.ledger.writeRecord({ ...entry('k3'), kind: 'record', outcome: '1' })],
    ['ledger.writeOutcome', () => engine.ledger.writeOutcome('t1', 'k1', '1', 2)],
    ['ledger.discardRecords', () => engine.ledger.discardRecords(lease, ['k3'])],
    ['store.get', () => engine.store.get(['ns'], 'k')],
    ['store.put', () => engine.store.put(['ns'], 'k', { a: 2 })],
    ['store.delete', () => engine.store.delete(['ns'], 'k')],
    ['store.search', () => engine.store.search(['ns'])],
    ['store.search (filtered)', () => engine.store.search(['ns'], { filter: { a: 1 } })],
    ['store.listNamespaces', () => engine.store.listNamespaces()],
    ['store.batch', () => engine.store.batch([{ op: 'put', namespace: ['ns'], key: 'b', value: 1 }])],
    ['store.sweepExpired', () => engine.store.sweepExpired()],
    ['store.listOverwrites', () => engine.store.listOverwrites(['ns'])],
  ];
}

/** The methods that take SQLite's write lock. */
const WRITES = new Set([
  'acquireThread', 'renewLease', 'releaseThread', 'updateThread', 'commitStep', 'putSnapshot', 'putPendingWrite', 'claimThreads', 'deleteThread',
  'ledger.writeIntent', 'ledger.writeRecord', 'ledger.writeOutcome', 'ledger.discardRecords', 'store.put', 'store.delete', 'store.batch', 'store.sweepExpired',
]);

describe('SQLite engine: driver errors are EngineError', () => {
  let dir: string;
  let file: string;
  let engine: Engine;
  let lease: ThreadLease;
  let other: SqliteDatabase | undefined;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'cairn-errors-'));
    file = join(dir, 'cairn.db');
    engine = sqlite(file, { busyTimeoutMs: 30 });
    lease = await engine.checkpointer.acquireThread('t1', { owner, leaseMs: 60_000, create: { kind: 'task', tenant: null, metadata: {} } });
    await engine.checkpointer.commitStep(lease, { position: position(0), items: [{ field: 'm', index: 0, text: '"a"' }], status: 'running', expectedHead: null });
    await engine.ledger.writeIntent(entry('k1'));
    await engine.store.put(['ns'], 'k', { a: 1 });
  });

  afterEach(async () => {
    other?.close();
    other = undefined;
    await engine.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function expectWrapped(calls: [string, () => Promise<unknown>][], code: string, message: RegExp): Promise<void> {
    for (const [method, call] of calls) {
      const error = await failure(call);
      expect(EngineError.is(error), `${method}: ${String(error)}`).toBe(true);
      expect((error as EngineError).message, method).toMatch(message);
      expect(((error as Error).cause as { code?: string }).code, method).toBe(code);
    }
  }

  it('from every method when the tables are gone under it, naming the operation or its statement, with the driver error as cause', async () => {
    other = openDatabase(file, 5000);
    const tables = other.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'cairn_%'`).pluck().all() as string[];
    for (const table of tables) other.exec(`ALTER TABLE ${table} RENAME TO gone_${table}`);
    await expectWrapped(everyCall(engine, lease), 'SQLITE_ERROR', /^\[cairn\] \[sqlite\] .+ failed \(SQLITE_ERROR\): no such table/);
    // Named by the engine where it names the operation, by the statement otherwise.
    expect(String(await failure(() => engine.checkpointer.deleteThread('t1')))).toContain('deleteThread failed');
    expect(String(await failure(() => engine.checkpointer.getItems('t1', '', 'm', [{ from: 0, to: 1 }])))).toMatch(/statement "SELECT .*cairn_/);
  });

  it('from every write while another connection holds the write lock past the busy timeout, and works again once it is released', async () => {
    other = openDatabase(file, 5000);
    other.exec('BEGIN IMMEDIATE');
    const writes = everyCall(engine, lease).filter(([method]) => WRITES.has(method));
    expect(writes).toHaveLength(WRITES.size);
    await expectWrapped(writes, 'SQLITE_BUSY', /^\[cairn\] \[sqlite\] .+ failed \(SQLITE_BUSY\): database is locked\..*raise busyTimeoutMs/);
    other.exec('ROLLBACK');
    await engine.checkpointer.renewLease(lease, 60_000);
    expect(await engine.store.put(['ns'], 'k', { a: 3 })).toMatchObject({ version: 2 });
  });

  it('from the lazy open, naming the file, and the next call opens again', async () => {
    await engine.close();
    other = openDatabase(file, 5000);
    other.pragma('locking_mode = EXCLUSIVE');
    other.exec('BEGIN EXCLUSIVE; UPDATE cairn_threads SET kind = kind; COMMIT');
    engine = sqlite(file, { busyTimeoutMs: 30 });
    const error = await failure(() => engine.checkpointer.getThread('t1'));
    expect(EngineError.is(error), String(error)).toBe(true);
    expect((error as Error).message).toContain(`opening ${file} failed (SQLITE_BUSY)`);
    expect(((error as Error).cause as { code?: string }).code).toBe('SQLITE_BUSY');
    other.close();
    other = undefined;
    expect(await engine.checkpointer.getThread('t1')).toMatchObject({ id: 't1', head: 0 });
  });
});
