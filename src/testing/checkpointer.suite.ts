/**
 * @module testing/checkpointer.suite
 * The conformance suite of the {@link Checkpointer} contract: every rule its JSDoc
 * states (leases and fencing, head checks, atomic commits, pending writes, range
 * reads, namespace listing, thread listing with its filters and paging, deleting a thread with all it
 * owns, id validation, lifecycle), as vitest tests. Every engine
 * runs it; a third-party engine proves itself with the same ten lines.
 *
 * Each test gets a fresh engine from `create()` and hands it to `destroy()` (or
 * `close()`) afterwards. Tests that wait for a lease to expire use leases of a
 * few tens of milliseconds.
 *
 * @example
 * ```ts
 * import { checkpointerSuite } from 'cairn/testing';
 * import { memory } from 'cairn/memory';
 * checkpointerSuite({ name: 'memory', create: () => memory() });
 * ```
 */
import { spawnSync } from 'node:child_process';
import { hostname } from 'node:os';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Checkpointer, PositionItem, StepCommit, StoredPosition } from '../contracts/checkpointer.js';
import type { Engine } from '../contracts/engine.js';
import type { LeaseOwner, ThreadKind, ThreadLease, ThreadQuery, ThreadStatus } from '../contracts/threads.js';
import {
  EngineClosedError,
  HeadMovedError,
  InvalidKeyError,
  InvalidOptionError,
  LeaseLostError,
  PositionNotFoundError,
  ThreadBusyError,
  ThreadNotFoundError,
} from '../errors.js';
import { PIN_NAMESPACE, threadPinKey } from '../internal/pins.js';

/** Options of {@link checkpointerSuite}. */
export interface CheckpointerSuiteOptions {
  /** Engine name shown in the test titles. */
  name: string;
  /** A fresh, empty engine for one test. */
  create: () => Engine | Promise<Engine>;
  /** Disposes of an engine after its test (default: `engine.close()`). Called even if the test closed it. */
  destroy?: (engine: Engine) => void | Promise<void>;
}

/** A host no process of this machine runs on: its holders are judged by lease expiry alone. */
const REMOTE_HOST = 'cairn-suite.remote.invalid';
const LONG_LEASE = 60_000;
/** Short enough to wait out in a test, long enough to acquire and act within. */
const SHORT_LEASE = 40;

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

let runCounter = 0;
/** A lease owner on a remote host (liveness by lease expiry only), with a fresh runId. */
function remoteOwner(label = 'run'): LeaseOwner {
  return { runId: `${label}-${++runCounter}`, pid: 4242, host: REMOTE_HOST };
}

/** 64 lowercase hex characters derived from a number: a stand-in chain hash. */
function fakeHash(n: number): string {
  return n.toString(16).padStart(64, '0');
}

/**
 * A stand-in position for engine tests: root namespace, continuing seq - 1 (or starting
 * the thread at 0), a body that names its seq and a 64-hex hash derived from it.
 */
export function linearPosition(seq: number, extra: Partial<StoredPosition> = {}): StoredPosition {
  return {
    ns: '',
    seq,
    parent: seq === 0 ? null : seq - 1,
    segment: 0,
    step: seq,
    schemaVersion: 1,
    createdAt: 1_700_000_000_000 + seq,
    body: `{"kind":"step","seq":${seq}}`,
    hash: fakeHash(seq + 1),
    ...extra,
  };
}

/** A position that forks from an older `parent`: it starts a new segment at its own seq. */
function forked(seq: number, parent: number, extra: Partial<StoredPosition> = {}): StoredPosition {
  return linearPosition(seq, { parent, segment: seq, step: parent + 1, body: `{"kind":"fork","seq":${seq}}`, ...extra });
}

function item(field: string, index: number, text: string): PositionItem {
  return { field, index, text };
}

function commitOf(position: StoredPosition, expectedHead: number | null, extra: Partial<StepCommit> = {}): StepCommit {
  return { position, items: [], status: 'running', expectedHead, ...extra };
}

/** Awaits `run()` and checks it rejects with an error of `type` (matched by its stable code). */
async function expectError<T>(run: () => Promise<unknown>, type: { readonly code: string; prototype: T }): Promise<T> {
  let outcome: unknown;
  try {
    outcome = await run();
  } catch (error) {
    expect((error as { code?: unknown }).code, `expected ${type.code}, got: ${String(error)}`).toBe(type.code);
    return error as T;
  }
  return expect.fail(`expected ${type.code}, but the call resolved with ${JSON.stringify(outcome)}`);
}

/** Pid of a process of this host that has exited (and been reaped). */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', ''], { stdio: 'ignore' });
  if (typeof child.pid !== 'number') throw new Error('could not spawn a short-lived process to get a dead pid');
  return child.pid;
}

/**
 * Registers the Checkpointer conformance tests for one engine.
 *
 * @example `checkpointerSuite({ name: 'sqlite', create: () => sqlite(tempFile()), destroy: (e) => e.close() })`
 */
export function checkpointerSuite(options: CheckpointerSuiteOptions): void {
  describe(`Checkpointer conformance: ${options.name}`, () => {
    let engine: Engine;
    let cp: Checkpointer;

    beforeEach(async () => {
      engine = await options.create();
      cp = engine.checkpointer;
    });

    afterEach(async () => {
      if (options.destroy) await options.destroy(engine);
      else await engine.close();
    });

    /** Creates a thread and returns the creating lease. */
    async function create(
      threadId: string,
      attrs: { kind?: ThreadKind; tenant?: string | null; metadata?: Record<string, unknown>; leaseMs?: number; owner?: LeaseOwner } = {},
    ): Promise<ThreadLease> {
      return cp.acquireThread(threadId, {
        owner: attrs.owner ?? remoteOwner(),
        leaseMs: attrs.leaseMs ?? LONG_LEASE,
        create: { kind: attrs.kind ?? 'task', tenant: attrs.tenant ?? null, metadata: attrs.metadata ?? {} },
      });
    }

    /** A thread whose first holder's lease expired and was taken over: `stale` is the lost lease, `fresh` the live one. */
    async function takenOver(threadId: string): Promise<{ stale: ThreadLease; fresh: ThreadLease }> {
      const stale = await create(threadId, { leaseMs: SHORT_LEASE });
      await sleep(SHORT_LEASE * 2);
      const fresh = await cp.acquireThread(threadId, { owner: remoteOwner('successor'), leaseMs: LONG_LEASE });
      return { stale, fresh };
    }

    /** Commits positions 0..last in a line under `lease`. */
    async function commitLine(lease: ThreadLease, last: number, from = 0): Promise<void> {
      for (let seq = from; seq <= last; seq++) await cp.commitStep(lease, commitOf(linearPosition(seq), seq === 0 ? null : seq - 1));
    }

    describe('threads and leases', () => {
      it('creates a thread on acquire with create, with the given attributes and empty log', async () => {
        const owner = remoteOwner();
        const lease = await cp.acquireThread('t1', {
          owner,
          leaseMs: LONG_LEASE,
          create: { kind: 'conversation', tenant: 'acme', metadata: { user: 'u1', tags: ['a'] } },
        });
        expect(lease.threadId).toBe('t1');
        expect(lease.runId).toBe(owner.runId);
        expect(lease.epoch).toBeGreaterThan(0);
        expect(lease.expiresAt).toBeGreaterThan(Date.now());
        const expected = {
          id: 't1',
          kind: 'conversation',
          status: 'running',
          head: null,
          attempts: 0,
          tenant: 'acme',
          metadata: { user: 'u1', tags: ['a'] },
          lastError: null,
        };
        expect(lease.thread).toMatchObject(expected);
        const stored = await cp.getThread('t1');
        expect(stored).toMatchObject(expected);
        expect(typeof stored!.createdAt).toBe('number');
        expect(stored!.updatedAt).toBeGreaterThanOrEqual(stored!.createdAt);
      });

      it('returns null from getThread for a missing thread', async () => {
        expect(await cp.getThread('missing')).toBeNull();
      });

      it('throws ThreadNotFoundError on acquire of a missing thread without create, and creates nothing', async () => {
        const error = await expectError(() => cp.acquireThread('missing', { owner: remoteOwner(), leaseMs: LONG_LEASE }), ThreadNotFoundError);
        expect(error.threadId).toBe('missing');
        expect(await cp.getThread('missing')).toBeNull();
      });

      it('keeps an existing thread as it is when acquired with create', async () => {
        const first = await create('t1', { kind: 'task', tenant: 'acme', metadata: { a: 1 } });
        await cp.releaseThread(first);
        const again = await cp.acquireThread('t1', {
          owner: remoteOwner(),
          leaseMs: LONG_LEASE,
          create: { kind: 'session', tenant: 'other', metadata: { b: 2 } },
        });
        expect(again.thread).toMatchObject({ kind: 'task', tenant: 'acme', metadata: { a: 1 } });
        expect(await cp.getThread('t1')).toMatchObject({ kind: 'task', tenant: 'acme', metadata: { a: 1 } });
      });

      it('throws ThreadBusyError for a second acquire while the lease is live', async () => {
        await create('t1');
        const error = await expectError(() => cp.acquireThread('t1', { owner: remoteOwner(), leaseMs: LONG_LEASE }), ThreadBusyError);
        expect(error.threadId).toBe('t1');
      });

      it('throws ThreadBusyError to another run of the same process (same host and pid, other runId)', async () => {
        const me = { pid: process.pid, host: hostname() };
        await create('t1', { owner: { runId: 'first', ...me } });
        await expectError(() => cp.acquireThread('t1', { owner: { runId: 'second', ...me }, leaseMs: LONG_LEASE }), ThreadBusyError);
      });

      it('lets exactly one of two concurrent acquires win', async () => {
        await cp.releaseThread(await create('t1'));
        const results = await Promise.allSettled([
          cp.acquireThread('t1', { owner: remoteOwner('a'), leaseMs: LONG_LEASE }),
          cp.acquireThread('t1', { owner: remoteOwner('b'), leaseMs: LONG_LEASE }),
        ]);
        expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
        const rejected = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
        expect(rejected).toHaveLength(1);
        expect((rejected[0]!.reason as { code?: string }).code).toBe(ThreadBusyError.code);
      });

      it('lets another owner take the thread over once the lease expired', async () => {
        const { stale, fresh } = await takenOver('t1');
        expect(fresh.runId).not.toBe(stale.runId);
        expect(fresh.epoch).toBeGreaterThan(stale.epoch);
      });

      it('treats a holder on this host whose process no longer exists as dead, before its lease expires', async () => {
        const dead = { runId: 'dead-run', pid: deadPid(), host: hostname() };
        const first = await create('t1', { owner: dead, leaseMs: LONG_LEASE });
        const next = await cp.acquireThread('t1', { owner: remoteOwner(), leaseMs: LONG_LEASE });
        expect(next.epoch).toBeGreaterThan(first.epoch);
      });

      it('increases the epoch on every grant: create, re-acquire after release, takeover after expiry', async () => {
        const a = await create('t1');
        await cp.releaseThread(a);
        const b = await cp.acquireThread('t1', { owner: remoteOwner(), leaseMs: SHORT_LEASE });
        expect(b.epoch).toBeGreaterThan(a.epoch);
        await sleep(SHORT_LEASE * 2);
        const c = await cp.acquireThread('t1', { owner: remoteOwner(), leaseMs: LONG_LEASE });
        expect(c.epoch).toBeGreaterThan(b.epoch);
        await cp.releaseThread(c);
        const d = await cp.acquireThread('t1', { owner: { ...remoteOwner(), runId: a.runId }, leaseMs: LONG_LEASE });
        expect(d.epoch).toBeGreaterThan(c.epoch);
      });

      it('renewLease extends the lease so it outlives its first expiry', async () => {
        const lease = await create('t1', { leaseMs: SHORT_LEASE });
        const renewed = await cp.renewLease(lease, LONG_LEASE);
        expect(renewed.runId).toBe(lease.runId);
        expect(renewed.epoch).toBe(lease.epoch);
        expect(renewed.expiresAt).toBeGreaterThan(lease.expiresAt);
        await sleep(SHORT_LEASE * 2);
        await expectError(() => cp.acquireThread('t1', { owner: remoteOwner(), leaseMs: LONG_LEASE }), ThreadBusyError);
        await cp.commitStep(renewed, commitOf(linearPosition(0), null));
        expect((await cp.getThread('t1'))!.head).toBe(0);
      });

      it('releaseThread frees the thread for another owner at once', async () => {
        const lease = await create('t1');
        await cp.releaseThread(lease);
        const next = await cp.acquireThread('t1', { owner: remoteOwner(), leaseMs: LONG_LEASE });
        expect(next.epoch).toBeGreaterThan(lease.epoch);
      });

      it('a released lease can no longer write', async () => {
        const lease = await create('t1');
        await cp.releaseThread(lease);
        await expectError(() => cp.commitStep(lease, commitOf(linearPosition(0), null)), LeaseLostError);
        await expectError(() => cp.updateThread(lease, { status: 'failed' }), LeaseLostError);
        expect(await cp.getPosition('t1', '', 0)).toBeNull();
        expect((await cp.getThread('t1'))!.status).toBe('running');
      });

      it('releasing a lost lease is a no-op: the successor keeps the thread', async () => {
        const { stale, fresh } = await takenOver('t1');
        await cp.releaseThread(stale);
        await expectError(() => cp.acquireThread('t1', { owner: remoteOwner(), leaseMs: LONG_LEASE }), ThreadBusyError);
        await cp.commitStep(fresh, commitOf(linearPosition(0), null));
        expect((await cp.getThread('t1'))!.head).toBe(0);
      });

      it('releasing twice is a no-op', async () => {
        const lease = await create('t1');
        await cp.releaseThread(lease);
        await cp.releaseThread(lease);
        await cp.acquireThread('t1', { owner: remoteOwner(), leaseMs: LONG_LEASE });
      });
    });

    describe('fencing: a lease lost to a takeover writes nothing', () => {
      it('renewLease throws LeaseLostError and does not extend the successor', async () => {
        const { stale, fresh } = await takenOver('t1');
        const error = await expectError(() => cp.renewLease(stale, LONG_LEASE), LeaseLostError);
        expect(error.threadId).toBe('t1');
        // The successor still holds and can still write.
        await cp.updateThread(fresh, { attempts: 1 });
      });

      it('updateThread throws LeaseLostError and changes nothing', async () => {
        const { stale } = await takenOver('t1');
        const before = await cp.getThread('t1');
        await expectError(
          () =>
            cp.updateThread(stale, {
              status: 'failed',
              attempts: 3,
              lastError: { code: 'ERR_X', message: 'boom', at: 1 },
              failure: { ns: '', code: 'ERR_X', message: 'boom', at: 1 },
            }),
          LeaseLostError,
        );
        expect(await cp.getThread('t1')).toEqual(before);
        expect(await cp.listFailures('t1')).toEqual([]);
      });

      it('putSnapshot throws LeaseLostError and stores nothing', async () => {
        const { stale, fresh } = await takenOver('t1');
        await cp.commitStep(fresh, commitOf(linearPosition(0), null));
        await expectError(() => cp.putSnapshot(stale, { ns: '', seq: 0, text: '{"s":0}' }), LeaseLostError);
        expect(await cp.getSnapshot('t1', '', [{ from: 0, to: 10 }])).toBeNull();
      });

      it('putPendingWrite throws LeaseLostError and stores nothing', async () => {
        const { stale } = await takenOver('t1');
        await expectError(() => cp.putPendingWrite(stale, { ns: '', baseSeq: 0, task: 'a:0', body: '{"x":1}' }), LeaseLostError);
        expect(await cp.getPendingWrites('t1', '', 0)).toEqual([]);
      });

      it('commitStep throws LeaseLostError and writes no position, item, snapshot or head', async () => {
        const stale = await create('t1', { leaseMs: SHORT_LEASE });
        await cp.commitStep(stale, commitOf(linearPosition(0), null));
        await sleep(SHORT_LEASE * 2);
        const fresh = await cp.acquireThread('t1', { owner: remoteOwner(), leaseMs: LONG_LEASE });
        await cp.putPendingWrite(fresh, { ns: '', baseSeq: 0, task: 'a:0', body: '{}' });
        await expectError(
          () => cp.commitStep(stale, commitOf(linearPosition(1), 0, { items: [item('messages', 0, '"hi"')], snapshot: '{"s":1}', status: 'completed' })),
          LeaseLostError,
        );
        expect(await cp.getPosition('t1', '', 1)).toBeNull();
        expect(await cp.getItems('t1', '', 'messages', [{ from: 0, to: 10 }])).toEqual([]);
        expect(await cp.getSnapshot('t1', '', [{ from: 0, to: 10 }])).toBeNull();
        expect(await cp.getThread('t1')).toMatchObject({ head: 0, status: 'running' });
        expect(await cp.getPendingWrites('t1', '', 0)).toHaveLength(1);
        // The successor extends the same head.
        await cp.commitStep(fresh, commitOf(linearPosition(1), 0));
      });
    });

    describe('commitStep', () => {
      it('writes position, items and snapshot and advances head and status', async () => {
        const lease = await create('t1');
        const p0 = linearPosition(0);
        await cp.commitStep(lease, commitOf(p0, null, { items: [item('messages', 0, '"a"'), item('messages', 1, '"b"')], snapshot: '{"snap":0}' }));
        expect(await cp.getPosition('t1', '', 0)).toEqual(p0);
        expect(await cp.getThread('t1')).toMatchObject({ head: 0, status: 'running' });

        const p1 = linearPosition(1, { body: '{"changes":{"x":{"set":1}},"kind":"step"}' });
        await cp.commitStep(lease, commitOf(p1, 0, { items: [item('log', 0, '{"n":1}')], status: 'interrupted' }));
        expect(await cp.getPosition('t1', '', 1)).toEqual(p1);
        expect(await cp.getPositionItems('t1', '', 1, ['log'])).toEqual([item('log', 0, '{"n":1}')]);
        expect(await cp.getPositionItems('t1', '', 0, ['messages'])).toEqual([item('messages', 0, '"a"'), item('messages', 1, '"b"')]);
        expect(await cp.getSnapshot('t1', '', [{ from: 0, to: 1 }])).toEqual({ seq: 0, text: '{"snap":0}' });
        expect(await cp.getThread('t1')).toMatchObject({ head: 1, status: 'interrupted' });
      });

      it('stores every position field and the hash exactly (64 lowercase hex)', async () => {
        const lease = await create('t1');
        const hash = 'ab'.repeat(32);
        const p = linearPosition(0, { step: 7, schemaVersion: 3, createdAt: 1_234_567_890_123, body: '{"kind":"input","nested":{"a":[1,2,"ü"]}}', hash });
        await cp.commitStep(lease, commitOf(p, null));
        const stored = await cp.getPosition('t1', '', 0);
        expect(stored).toEqual(p);
        expect(stored!.hash).toMatch(/^[0-9a-f]{64}$/);
      });

      it('throws HeadMovedError on a wrong expectedHead and writes nothing', async () => {
        const lease = await create('t1');
        await commitLine(lease, 1);
        const before = await cp.getThread('t1');
        for (const wrong of [null, 0, 5]) {
          const error = await expectError(
            () => cp.commitStep(lease, commitOf(linearPosition(2), wrong, { items: [item('m', 0, '1')], snapshot: '{}', status: 'completed' })),
            HeadMovedError,
          );
          expect(error.expected).toBe(wrong);
          expect(error.actual).toBe(1);
        }
        expect(await cp.getPosition('t1', '', 2)).toBeNull();
        expect(await cp.getItems('t1', '', 'm', [{ from: 0, to: 9 }])).toEqual([]);
        expect(await cp.getSnapshot('t1', '', [{ from: 0, to: 9 }])).toBeNull();
        expect(await cp.getThread('t1')).toMatchObject({ head: before!.head, status: before!.status });
      });

      it('throws HeadMovedError for a non-null expectedHead on a thread with no position yet', async () => {
        const lease = await create('t1');
        await expectError(() => cp.commitStep(lease, commitOf(linearPosition(1), 0)), HeadMovedError);
        expect(await cp.getPosition('t1', '', 1)).toBeNull();
        expect((await cp.getThread('t1'))!.head).toBeNull();
      });

      it('throws HeadMovedError unless the position takes seq expectedHead + 1: no overwrite, no gap', async () => {
        const lease = await create('t1');
        await commitLine(lease, 1);
        const before = await cp.getThread('t1');
        const original = await cp.getPosition('t1', '', 1);
        const extra = { status: 'completed' as const, snapshot: '{}', items: [item('m', 0, '1')] };
        // expectedHead is the head, but the seq reuses the head's (an overwrite) or skips one (a gap).
        await expectError(() => cp.commitStep(lease, commitOf(linearPosition(1, { body: '{"kind":"other"}', hash: fakeHash(999) }), 1, extra)), HeadMovedError);
        await expectError(() => cp.commitStep(lease, commitOf(linearPosition(3, { parent: 1 }), 1, extra)), HeadMovedError);
        await expectError(() => cp.commitStep(lease, commitOf(linearPosition(0, { hash: fakeHash(998) }), null, extra)), HeadMovedError);
        expect(await cp.getPosition('t1', '', 1)).toEqual(original);
        expect(await cp.getPosition('t1', '', 3)).toBeNull();
        expect(await cp.getPosition('t1', '', 0)).toEqual(linearPosition(0));
        expect(await cp.getThread('t1')).toMatchObject({ head: before!.head, status: before!.status });
        expect(await cp.getSnapshot('t1', '', [{ from: 0, to: 9 }])).toBeNull();
        expect(await cp.getItems('t1', '', 'm', [{ from: 0, to: 9 }])).toEqual([]);
      });

      it('a fork (parent older than the head) takes seq head + 1 and becomes the head', async () => {
        const lease = await create('t1');
        await commitLine(lease, 2);
        await cp.commitStep(lease, commitOf(forked(3, 1), 2));
        expect((await cp.getThread('t1'))!.head).toBe(3);
        expect(await cp.getPosition('t1', '', 2)).toEqual(linearPosition(2));
        expect(await cp.getPosition('t1', '', 3)).toEqual(forked(3, 1));
        // The next step continues the new branch.
        await cp.commitStep(lease, commitOf(linearPosition(4, { segment: 3, step: 3 }), 3));
        expect((await cp.getThread('t1'))!.head).toBe(4);
      });

      it('each namespace has its own head: a child commit neither checks nor moves the root head', async () => {
        const lease = await create('t1');
        await commitLine(lease, 1);
        const child = 'parent|node:0';
        const c0 = linearPosition(0, { ns: child, hash: fakeHash(100) });
        const c1 = linearPosition(1, { ns: child, hash: fakeHash(101) });
        const c2 = linearPosition(2, { ns: child, hash: fakeHash(102) });
        // The child namespace starts empty: its first position extends null, whatever the root head.
        await cp.commitStep(lease, commitOf(c0, null));
        await cp.commitStep(lease, commitOf(c1, 0, { items: [item('m', 0, '"child"')] }));
        await cp.commitStep(lease, commitOf(c2, 1));
        expect((await cp.getThread('t1'))!.head).toBe(1);
        // The child's head moved to 2; the root's is still 1.
        await expectError(() => cp.commitStep(lease, commitOf(linearPosition(3, { ns: child, hash: fakeHash(103) }), 1)), HeadMovedError);
        expect(await cp.getPosition('t1', child, 1)).toEqual(c1);
        expect(await cp.getPositions('t1', '', { from: 0, to: 9 })).toEqual([linearPosition(0), linearPosition(1)]);
        expect(await cp.getPositions('t1', child, { from: 0, to: 9 })).toEqual([c0, c1, c2]);
        expect(await cp.getItems('t1', '', 'm', [{ from: 0, to: 9 }])).toEqual([]);
        expect(await cp.getItems('t1', child, 'm', [{ from: 0, to: 9 }])).toEqual(['"child"']);
        // The root chain continues from its own head.
        await cp.commitStep(lease, commitOf(linearPosition(2), 1));
        expect((await cp.getThread('t1'))!.head).toBe(2);
      });
    });

    describe('listNamespaces', () => {
      /** Commits positions 0..last of `ns` in a line, with hashes no other namespace uses. */
      async function commitChild(lease: ThreadLease, ns: string, last: number, salt: number): Promise<void> {
        for (let seq = 0; seq <= last; seq++) {
          await cp.commitStep(lease, commitOf(linearPosition(seq, { ns, hash: fakeHash(salt + seq) }), seq === 0 ? null : seq - 1));
        }
      }

      it('lists every namespace that has a position, each once, root first, whatever the commit order', async () => {
        const lease = await create('t1');
        // A child first: the listing is ordered by name, not by when a namespace appeared.
        await commitChild(lease, 'research:0@4|deep:1@2', 0, 200);
        await commitLine(lease, 1);
        await commitChild(lease, 'research:0@4', 2, 100);
        // A pending write alone does not make a namespace: it has no position yet.
        await cp.putPendingWrite(lease, { ns: 'waiting:2@1', baseSeq: 0, task: 'a:0', body: '{}' });
        const other = await create('t2');
        await commitChild(other, 'elsewhere:0@0', 0, 300);

        expect(await cp.listNamespaces('t1')).toEqual(['', 'research:0@4', 'research:0@4|deep:1@2']);
        expect(await cp.listNamespaces('t2')).toEqual(['elsewhere:0@0']);
      });

      it('orders namespaces by code point (as UTF-8 bytes), the same on every engine', async () => {
        const lease = await create('t1');
        const inOrder = ['', 'A:0@1', 'a:0@1', 'a:0@1|b:0@0', 'é:0@1', '\uE000:0@1', '😀:0@1'];
        let salt = 100;
        for (const ns of [...inOrder].reverse()) await commitChild(lease, ns, 0, (salt += 10));
        expect(await cp.listNamespaces('t1')).toEqual(inOrder);
      });

      it('gives [] for a missing thread and for a thread with no position', async () => {
        expect(await cp.listNamespaces('missing')).toEqual([]);
        await create('empty');
        expect(await cp.listNamespaces('empty')).toEqual([]);
      });
    });

    describe('pending writes', () => {
      it('stores writes per (ns, baseSeq, task), lists them in task order, and replaces a rewrite', async () => {
        const lease = await create('t1');
        await cp.putPendingWrite(lease, { ns: '', baseSeq: 0, task: 'b:0', body: '{"v":"b"}' });
        await cp.putPendingWrite(lease, { ns: '', baseSeq: 0, task: 'a:1', body: '{"v":"a1"}' });
        await cp.putPendingWrite(lease, { ns: '', baseSeq: 0, task: 'a:0', body: '{"v":"a0"}' });
        await cp.putPendingWrite(lease, { ns: '', baseSeq: 1, task: 'a:0', body: '{"v":"other base"}' });
        await cp.putPendingWrite(lease, { ns: 'child|n:0', baseSeq: 0, task: 'a:0', body: '{"v":"other ns"}' });
        // Idempotent per task: the rewrite replaces, never duplicates.
        await cp.putPendingWrite(lease, { ns: '', baseSeq: 0, task: 'b:0', body: '{"v":"b2"}' });

        expect(await cp.getPendingWrites('t1', '', 0)).toEqual([
          { ns: '', baseSeq: 0, task: 'a:0', body: '{"v":"a0"}' },
          { ns: '', baseSeq: 0, task: 'a:1', body: '{"v":"a1"}' },
          { ns: '', baseSeq: 0, task: 'b:0', body: '{"v":"b2"}' },
        ]);
        expect(await cp.getPendingWrites('t1', '', 1)).toEqual([{ ns: '', baseSeq: 1, task: 'a:0', body: '{"v":"other base"}' }]);
        expect(await cp.getPendingWrites('t1', 'child|n:0', 0)).toEqual([{ ns: 'child|n:0', baseSeq: 0, task: 'a:0', body: '{"v":"other ns"}' }]);
        expect(await cp.getPendingWrites('t1', '', 2)).toEqual([]);
        expect(await cp.getPendingWrites('missing', '', 0)).toEqual([]);
      });

      it('are deleted by the commit whose parent is their baseSeq, and only those', async () => {
        const lease = await create('t1');
        await commitLine(lease, 0);
        await cp.putPendingWrite(lease, { ns: '', baseSeq: 0, task: 'a:0', body: '{}' });
        await cp.putPendingWrite(lease, { ns: '', baseSeq: 0, task: 'b:0', body: '{}' });
        await cp.putPendingWrite(lease, { ns: '', baseSeq: 1, task: 'a:0', body: '{"later":true}' });
        await cp.putPendingWrite(lease, { ns: 'child|n:0', baseSeq: 0, task: 'a:0', body: '{"child":true}' });
        await cp.commitStep(lease, commitOf(linearPosition(1), 0));
        expect(await cp.getPendingWrites('t1', '', 0)).toEqual([]);
        expect(await cp.getPendingWrites('t1', '', 1)).toEqual([{ ns: '', baseSeq: 1, task: 'a:0', body: '{"later":true}' }]);
        expect(await cp.getPendingWrites('t1', 'child|n:0', 0)).toEqual([{ ns: 'child|n:0', baseSeq: 0, task: 'a:0', body: '{"child":true}' }]);
      });

      it('survive a commit that fails the head check', async () => {
        const lease = await create('t1');
        await commitLine(lease, 1);
        await cp.putPendingWrite(lease, { ns: '', baseSeq: 0, task: 'a:0', body: '{}' });
        await expectError(() => cp.commitStep(lease, commitOf(linearPosition(5, { parent: 0 }), 0)), HeadMovedError);
        expect(await cp.getPendingWrites('t1', '', 0)).toHaveLength(1);
      });

      it('are per thread', async () => {
        const a = await create('a');
        await create('b');
        await cp.putPendingWrite(a, { ns: '', baseSeq: 0, task: 'x:0', body: '{}' });
        expect(await cp.getPendingWrites('b', '', 0)).toEqual([]);
      });
    });

    describe('reading positions', () => {
      it('getPosition returns null for a missing seq, namespace or thread', async () => {
        const lease = await create('t1');
        await commitLine(lease, 0);
        expect(await cp.getPosition('t1', '', 1)).toBeNull();
        expect(await cp.getPosition('t1', 'other|n:0', 0)).toBeNull();
        expect(await cp.getPosition('missing', '', 0)).toBeNull();
      });

      it('getPositions returns an inclusive range, ascending', async () => {
        const lease = await create('t1');
        await commitLine(lease, 5);
        expect((await cp.getPositions('t1', '', { from: 1, to: 3 })).map((p) => p.seq)).toEqual([1, 2, 3]);
        expect(await cp.getPositions('t1', '', { from: 4, to: 100 })).toEqual([linearPosition(4), linearPosition(5)]);
        expect(await cp.getPositions('t1', '', { from: 2, to: 2 })).toEqual([linearPosition(2)]);
        expect(await cp.getPositions('t1', '', { from: 3, to: 2 })).toEqual([]);
        expect(await cp.getPositions('t1', '', { from: 6, to: 9 })).toEqual([]);
        expect(await cp.getPositions('missing', '', { from: 0, to: 9 })).toEqual([]);
      });

      it('listPositions lists newest first and pages backwards with beforeSeq and limit', async () => {
        const lease = await create('t1');
        await commitLine(lease, 6);
        expect((await cp.listPositions('t1', '')).map((p) => p.seq)).toEqual([6, 5, 4, 3, 2, 1, 0]);
        expect((await cp.listPositions('t1', '', { limit: 3 })).map((p) => p.seq)).toEqual([6, 5, 4]);
        expect((await cp.listPositions('t1', '', { beforeSeq: 4, limit: 3 })).map((p) => p.seq)).toEqual([3, 2, 1]);
        expect((await cp.listPositions('t1', '', { beforeSeq: 1, limit: 3 })).map((p) => p.seq)).toEqual([0]);
        expect(await cp.listPositions('t1', '', { beforeSeq: 0 })).toEqual([]);
        expect((await cp.listPositions('t1', '', { beforeSeq: 3 })).map((p) => p.seq)).toEqual([2, 1, 0]);
        expect(await cp.listPositions('t1', '', { limit: 1 })).toEqual([linearPosition(6)]);

        // Paging through the whole history visits every position once.
        const seen: number[] = [];
        let page = await cp.listPositions('t1', '', { limit: 2 });
        while (page.length) {
          seen.push(...page.map((p) => p.seq));
          page = await cp.listPositions('t1', '', { beforeSeq: page[page.length - 1]!.seq, limit: 2 });
        }
        expect(seen).toEqual([6, 5, 4, 3, 2, 1, 0]);
        expect(await cp.listPositions('missing', '')).toEqual([]);
      });
    });

    describe('snapshots and items on a branching log', () => {
      /**
       * 0 ─ 1 ─ 2          snapshots at 0 and 2, items on 0, 1, 2
       *      └─ 3 ─ 4      a fork from 1 (segment 3), items on 3, snapshot at 4 only if asked
       * Position 4's ancestry is the ranges [0..1] and [3..4].
       */
      async function branching(lease: ThreadLease, snapshotAt4: boolean): Promise<void> {
        await cp.commitStep(lease, commitOf(linearPosition(0), null, { snapshot: '{"at":0}', items: [item('m', 0, '"m0"'), item('other', 0, '"o0"')] }));
        await cp.commitStep(lease, commitOf(linearPosition(1), 0, { items: [item('m', 0, '"m1a"'), item('m', 1, '"m1b"')] }));
        await cp.commitStep(lease, commitOf(linearPosition(2), 1, { snapshot: '{"at":2}', items: [item('m', 0, '"m2"')] }));
        await cp.commitStep(lease, commitOf(forked(3, 1), 2, { items: [item('m', 0, '{"b":3}'), item('other', 0, '"o3"')] }));
        await cp.commitStep(lease, commitOf(linearPosition(4, { segment: 3, step: 3 }), 3, snapshotAt4 ? { snapshot: '{"at":4}' } : {}));
      }
      const branchOf4 = [
        { from: 0, to: 1 },
        { from: 3, to: 4 },
      ];

      it('getSnapshot picks the highest seq inside the ranges, ignoring a newer one on another branch', async () => {
        const lease = await create('t1');
        await branching(lease, false);
        expect(await cp.getSnapshot('t1', '', branchOf4)).toEqual({ seq: 0, text: '{"at":0}' });
        expect(await cp.getSnapshot('t1', '', [{ from: 0, to: 2 }])).toEqual({ seq: 2, text: '{"at":2}' });
        expect(await cp.getSnapshot('t1', '', [{ from: 0, to: 1 }])).toEqual({ seq: 0, text: '{"at":0}' });
        expect(await cp.getSnapshot('t1', '', [{ from: 1, to: 1 }, { from: 3, to: 4 }])).toBeNull();
        expect(await cp.getSnapshot('t1', '', [])).toBeNull();
        expect(await cp.getSnapshot('t1', 'other|n:0', [{ from: 0, to: 9 }])).toBeNull();
        expect(await cp.getSnapshot('missing', '', [{ from: 0, to: 9 }])).toBeNull();
      });

      it('putSnapshot stores a snapshot for a stored position, replaces an existing one, and refuses a missing position', async () => {
        const lease = await create('t1');
        await branching(lease, false);
        await cp.putSnapshot(lease, { ns: '', seq: 4, text: '{"at":"4 rewritten"}' });
        expect(await cp.getSnapshot('t1', '', branchOf4)).toEqual({ seq: 4, text: '{"at":"4 rewritten"}' });
        await cp.putSnapshot(lease, { ns: '', seq: 2, text: '{"at":"2 again"}' });
        expect(await cp.getSnapshot('t1', '', [{ from: 0, to: 2 }])).toEqual({ seq: 2, text: '{"at":"2 again"}' });
        await expectError(() => cp.putSnapshot(lease, { ns: '', seq: 9, text: '{}' }), PositionNotFoundError);
        expect(await cp.getSnapshot('t1', '', [{ from: 9, to: 9 }])).toBeNull();
      });

      it('getSnapshot prefers the branch\'s own newest snapshot', async () => {
        const lease = await create('t1');
        await branching(lease, true);
        expect(await cp.getSnapshot('t1', '', branchOf4)).toEqual({ seq: 4, text: '{"at":4}' });
        expect(await cp.getSnapshot('t1', '', [{ from: 0, to: 2 }])).toEqual({ seq: 2, text: '{"at":2}' });
      });

      it('getItems returns the texts of the field\'s items inside the ranges, ordered by (seq, index)', async () => {
        const lease = await create('t1');
        await branching(lease, false);
        expect(await cp.getItems('t1', '', 'm', branchOf4)).toEqual(['"m0"', '"m1a"', '"m1b"', '{"b":3}']);
        expect(await cp.getItems('t1', '', 'm', [{ from: 0, to: 2 }])).toEqual(['"m0"', '"m1a"', '"m1b"', '"m2"']);
        expect(await cp.getItems('t1', '', 'other', branchOf4)).toEqual(['"o0"', '"o3"']);
        expect(await cp.getItems('t1', '', 'm', [{ from: 1, to: 1 }])).toEqual(['"m1a"', '"m1b"']);
        // Ranges given newest first still read in seq order.
        expect(await cp.getItems('t1', '', 'm', [...branchOf4].reverse())).toEqual(['"m0"', '"m1a"', '"m1b"', '{"b":3}']);
      });

      it('getItems returns [] when nothing matches', async () => {
        const lease = await create('t1');
        await branching(lease, false);
        expect(await cp.getItems('t1', '', 'none', branchOf4)).toEqual([]);
        expect(await cp.getItems('t1', '', 'm', [])).toEqual([]);
        expect(await cp.getItems('t1', '', 'm', [{ from: 4, to: 4 }])).toEqual([]);
        expect(await cp.getItems('t1', 'other|n:0', 'm', branchOf4)).toEqual([]);
        expect(await cp.getItems('missing', '', 'm', branchOf4)).toEqual([]);
      });

      // Known failure (memory): MemoryCheckpointer.getItems returns a position's items in the
      // order the commit listed them, not by index. The runtime happens to sort them; the contract orders by (seq, index).
      it('getItems orders by index even when a commit lists items out of order', async () => {
        const lease = await create('t1');
        await cp.commitStep(lease, commitOf(linearPosition(0), null, { items: [item('m', 1, '"second"'), item('m', 0, '"first"'), item('m', 2, '"third"')] }));
        await cp.commitStep(lease, commitOf(linearPosition(1), 0, { items: [item('m', 0, '"fourth"')] }));
        expect(await cp.getItems('t1', '', 'm', [{ from: 0, to: 1 }])).toEqual(['"first"', '"second"', '"third"', '"fourth"']);
      });

      it('getItems returns every item text exactly, many at a time', async () => {
        const lease = await create('t1');
        const texts = Array.from({ length: 300 }, (_, i) => JSON.stringify({ i, text: `message ${i} ,[]" ü 🧭` }));
        await cp.commitStep(lease, commitOf(linearPosition(0), null, { items: texts.slice(0, 150).map((t, i) => item('m', i, t)) }));
        await cp.commitStep(lease, commitOf(linearPosition(1), 0, { items: texts.slice(150).map((t, i) => item('m', i, t)) }));
        expect(await cp.getItems('t1', '', 'm', [{ from: 0, to: 1 }])).toEqual(texts);
      });

      // Known failure (memory): MemoryCheckpointer.getPositionItems keeps commit order within a field, not index order.
      it('getPositionItems returns one position\'s items for the given fields, in field order then index', async () => {
        const lease = await create('t1');
        await cp.commitStep(
          lease,
          commitOf(linearPosition(0), null, { items: [item('b', 1, '"b1"'), item('a', 0, '"a0"'), item('b', 0, '"b0"'), item('c', 0, '"c0"')] }),
        );
        await cp.commitStep(lease, commitOf(linearPosition(1), 0, { items: [item('a', 0, '"later"')] }));
        expect(await cp.getPositionItems('t1', '', 0, ['b', 'a'])).toEqual([item('b', 0, '"b0"'), item('b', 1, '"b1"'), item('a', 0, '"a0"')]);
        expect(await cp.getPositionItems('t1', '', 0, ['a'])).toEqual([item('a', 0, '"a0"')]);
        expect(await cp.getPositionItems('t1', '', 0, ['none'])).toEqual([]);
        expect(await cp.getPositionItems('t1', '', 0, [])).toEqual([]);
        expect(await cp.getPositionItems('t1', '', 1, ['a', 'b'])).toEqual([item('a', 0, '"later"')]);
        expect(await cp.getPositionItems('t1', '', 2, ['a'])).toEqual([]);
        expect(await cp.getPositionItems('missing', '', 0, ['a'])).toEqual([]);
      });
    });

    describe('anchored heads', () => {
      it('commitStep anchors the namespace head (seq and hash); getHead reads it, per namespace, null before the first commit', async () => {
        const lease = await create('t1');
        expect(await cp.getHead('t1', '')).toBeNull();
        await commitLine(lease, 2);
        expect(await cp.getHead('t1', '')).toEqual({ seq: 2, hash: linearPosition(2).hash });
        expect((await cp.getThread('t1'))!.head).toBe(2);
        const child = linearPosition(0, { ns: 'sub:0@2', hash: fakeHash(99) });
        await cp.commitStep(lease, commitOf(child, null));
        expect(await cp.getHead('t1', 'sub:0@2')).toEqual({ seq: 0, hash: fakeHash(99) });
        expect(await cp.getHead('t1', '')).toEqual({ seq: 2, hash: linearPosition(2).hash });
        expect(await cp.getHead('t1', 'other:0@1')).toBeNull();
        expect(await cp.getHead('missing', '')).toBeNull();
      });

      it('a fork moves the anchor to the new position; a refused commit leaves it where it was', async () => {
        const lease = await create('t1');
        await commitLine(lease, 2);
        const fork = forked(3, 1, { hash: fakeHash(77) });
        await cp.commitStep(lease, commitOf(fork, 2));
        expect(await cp.getHead('t1', '')).toEqual({ seq: 3, hash: fakeHash(77) });
        await expectError(() => cp.commitStep(lease, commitOf(linearPosition(5), 4)), HeadMovedError);
        const { stale } = await takenOver('t2');
        await expectError(() => cp.commitStep(stale, commitOf(linearPosition(0), null)), LeaseLostError);
        expect(await cp.getHead('t1', '')).toEqual({ seq: 3, hash: fakeHash(77) });
        expect(await cp.getHead('t2', '')).toBeNull();
      });

      it('deleteThread removes every anchor: a thread created again under the id has none', async () => {
        const lease = await create('t1');
        await commitLine(lease, 1);
        await cp.commitStep(lease, commitOf(linearPosition(0, { ns: 'sub:0@1' }), null));
        await cp.releaseThread(lease);
        expect((await cp.deleteThread('t1')).deleted).toBe(true);
        await create('t1');
        expect(await cp.getHead('t1', '')).toBeNull();
        expect(await cp.getHead('t1', 'sub:0@1')).toBeNull();
        expect(await cp.listNamespaces('t1')).toEqual([]);
      });
    });

    describe('range reads for checks', () => {
      it('getRangeItems returns every item of the positions in the range, all fields, by seq then field then index', async () => {
        const lease = await create('t1');
        await cp.commitStep(lease, commitOf(linearPosition(0), null, { items: [item('b', 1, '"b1"'), item('a', 0, '"a0"'), item('b', 0, '"b0"')] }));
        await cp.commitStep(lease, commitOf(linearPosition(1), 0));
        await cp.commitStep(lease, commitOf(linearPosition(2), 1, { items: [item('a', 0, '"a2"')] }));
        await cp.commitStep(lease, commitOf(linearPosition(0, { ns: 'sub:0@1' }), null, { items: [item('a', 0, '"sub"')] }));
        const at = (seq: number, field: string, index: number, text: string) => ({ seq, field, index, text });
        expect(await cp.getRangeItems('t1', '', { from: 0, to: 2 })).toEqual([at(0, 'a', 0, '"a0"'), at(0, 'b', 0, '"b0"'), at(0, 'b', 1, '"b1"'), at(2, 'a', 0, '"a2"')]);
        expect(await cp.getRangeItems('t1', '', { from: 1, to: 2 })).toEqual([at(2, 'a', 0, '"a2"')]);
        expect(await cp.getRangeItems('t1', '', { from: 1, to: 1 })).toEqual([]);
        expect(await cp.getRangeItems('t1', 'sub:0@1', { from: 0, to: 9 })).toEqual([at(0, 'a', 0, '"sub"')]);
        expect(await cp.getRangeItems('missing', '', { from: 0, to: 9 })).toEqual([]);
      });

      it('getSnapshots returns every snapshot of the namespace in the range, ascending, as last written', async () => {
        const lease = await create('t1');
        await cp.commitStep(lease, commitOf(linearPosition(0), null, { snapshot: '{"at":0}' }));
        await cp.commitStep(lease, commitOf(linearPosition(1), 0));
        await cp.commitStep(lease, commitOf(linearPosition(2), 1, { snapshot: '{"at":2}' }));
        await cp.putSnapshot(lease, { ns: '', seq: 1, text: '{"at":"1 later"}' });
        expect(await cp.getSnapshots('t1', '', { from: 0, to: 9 })).toEqual([
          { seq: 0, text: '{"at":0}' },
          { seq: 1, text: '{"at":"1 later"}' },
          { seq: 2, text: '{"at":2}' },
        ]);
        expect(await cp.getSnapshots('t1', '', { from: 1, to: 1 })).toEqual([{ seq: 1, text: '{"at":"1 later"}' }]);
        expect(await cp.getSnapshots('t1', 'sub:0@1', { from: 0, to: 9 })).toEqual([]);
        expect(await cp.getSnapshots('missing', '', { from: 0, to: 9 })).toEqual([]);
      });
    });

    describe("deleteThread under the caller's lease", () => {
      it('deletes a thread the caller holds (its own live hold does not refuse it)', async () => {
        const lease = await create('t1');
        await commitLine(lease, 1);
        expect(await cp.deleteThread('t1', { lease })).toMatchObject({ deleted: true });
        expect(await cp.getThread('t1')).toBeNull();
      });

      it('refuses a lease that no longer holds the thread with LeaseLostError, and deletes nothing', async () => {
        const { stale } = await takenOver('t1');
        await expectError(() => cp.deleteThread('t1', { lease: stale }), LeaseLostError);
        expect(await cp.getThread('t1')).not.toBeNull();
      });
    });

    describe('thread records', () => {
      it('listThreads filters by status, kind, tenant, after and limit, ordered by id', async () => {
        const specs: [string, ThreadKind, string | null, ThreadStatus][] = [
          ['d', 'task', 'acme', 'running'],
          ['b', 'conversation', 'acme', 'completed'],
          ['a', 'task', null, 'completed'],
          ['e', 'session', 'globex', 'failed'],
          ['c', 'task', 'globex', 'running'],
        ];
        for (const [id, kind, tenant, status] of specs) {
          const lease = await create(id, { kind, tenant });
          if (status !== 'running') await cp.updateThread(lease, { status });
        }
        const ids = async (query?: Parameters<Checkpointer['listThreads']>[0]) => (await cp.listThreads(query)).map((t) => t.id);
        expect(await ids()).toEqual(['a', 'b', 'c', 'd', 'e']);
        expect(await ids({ status: 'completed' })).toEqual(['a', 'b']);
        expect(await ids({ status: 'interrupted' })).toEqual([]);
        expect(await ids({ kind: 'task' })).toEqual(['a', 'c', 'd']);
        expect(await ids({ tenant: 'acme' })).toEqual(['b', 'd']);
        expect(await ids({ tenant: 'globex', kind: 'task' })).toEqual(['c']);
        expect(await ids({ after: 'b' })).toEqual(['c', 'd', 'e']);
        expect(await ids({ limit: 2 })).toEqual(['a', 'b']);
        expect(await ids({ after: 'a', limit: 2 })).toEqual(['b', 'c']);
        expect(await ids({ after: 'c', status: 'running' })).toEqual(['d']);
        expect(await ids({ after: 'e' })).toEqual([]);
        const [b] = await cp.listThreads({ tenant: 'acme', limit: 1 });
        expect(b).toMatchObject({ id: 'b', kind: 'conversation', tenant: 'acme', status: 'completed' });
      });

      it('updateThread applies a patch: status, attempts increment, lastError set and cleared, failure appended', async () => {
        const lease = await create('t1');
        const error1 = { code: 'ERR_ONE', message: 'first', node: 'n', seq: 0, attempt: 1, at: 10 };
        const error2 = { code: 'ERR_TWO', message: 'second', at: 20 };

        let record = await cp.updateThread(lease, { status: 'failed', attempts: 1, lastError: error1, failure: { ns: '', ...error1 } });
        expect(record).toMatchObject({ status: 'failed', attempts: 1, lastError: error1 });
        expect(await cp.getThread('t1')).toEqual(record);

        record = await cp.updateThread(lease, { attempts: 2 });
        expect(record).toMatchObject({ status: 'failed', attempts: 3, lastError: error1 });

        record = await cp.updateThread(lease, { failure: { ns: 'child|n:0', ...error2 } });
        expect(record).toMatchObject({ status: 'failed', attempts: 3, lastError: error1 });

        record = await cp.updateThread(lease, { status: 'needs_attention', lastError: error2 });
        expect(record).toMatchObject({ status: 'needs_attention', lastError: error2 });

        record = await cp.updateThread(lease, { status: 'running', lastError: null });
        expect(record).toMatchObject({ status: 'running', attempts: 3, lastError: null });

        const unchanged = await cp.updateThread(lease, {});
        expect(unchanged).toMatchObject({ status: 'running', attempts: 3, lastError: null, head: null });
        expect(await cp.getThread('t1')).toEqual(unchanged);

        expect(await cp.listFailures('t1')).toEqual([
          { ns: '', ...error1 },
          { ns: 'child|n:0', ...error2 },
        ]);
      });

      it('updateThread keeps the head, metadata and other attributes', async () => {
        const lease = await create('t1', { kind: 'workflow', tenant: 't', metadata: { k: 'v' } });
        await commitLine(lease, 1);
        const record = await cp.updateThread(lease, { status: 'completed' });
        expect(record).toMatchObject({ id: 't1', kind: 'workflow', tenant: 't', metadata: { k: 'v' }, head: 1, status: 'completed' });
      });

      it('listFailures lists a thread\'s failures oldest first, per thread', async () => {
        const a = await create('a');
        const b = await create('b');
        for (let i = 0; i < 5; i++) await cp.updateThread(a, { failure: { ns: '', code: `ERR_${i}`, message: `m${i}`, at: 100 - i } });
        await cp.updateThread(b, { failure: { ns: '', code: 'ERR_B', message: 'b', at: 1 } });
        expect((await cp.listFailures('a')).map((f) => f.code)).toEqual(['ERR_0', 'ERR_1', 'ERR_2', 'ERR_3', 'ERR_4']);
        expect((await cp.listFailures('b')).map((f) => f.code)).toEqual(['ERR_B']);
        expect(await cp.listFailures('missing')).toEqual([]);
      });

      it('records returned to the caller are copies', async () => {
        const lease = await create('t1', { metadata: { list: [1] } });
        const got = await cp.getThread('t1');
        (got!.metadata.list as number[]).push(2);
        (lease.thread.metadata.list as number[]).push(3);
        expect((await cp.getThread('t1'))!.metadata).toEqual({ list: [1] });
      });
    });

    describe('listThreads: filters and paging', () => {
      const ids = async (query?: ThreadQuery) => (await cp.listThreads(query)).map((t) => t.id);

      /** Threads with these attributes, created in order (a few ms apart, so their times differ). */
      async function threads(specs: { id: string; kind?: ThreadKind; tenant?: string | null; status?: ThreadStatus; metadata?: Record<string, unknown> }[]) {
        for (const spec of specs) {
          const lease = await create(spec.id, { kind: spec.kind ?? 'task', tenant: spec.tenant ?? null, metadata: spec.metadata ?? {} });
          if (spec.status && spec.status !== 'running') await cp.updateThread(lease, { status: spec.status });
          await cp.releaseThread(lease);
          await sleep(3);
        }
      }

      it('matches any of several statuses and kinds, all filters together', async () => {
        await threads([
          { id: 'a', kind: 'task', status: 'completed', tenant: 'acme' },
          { id: 'b', kind: 'conversation', status: 'failed', tenant: 'acme' },
          { id: 'c', kind: 'session', status: 'needs_attention', tenant: 'globex' },
          { id: 'd', kind: 'workflow', status: 'interrupted', tenant: 'acme' },
          { id: 'e', kind: 'conversation', status: 'running', tenant: 'acme' },
        ]);
        expect(await ids({ status: ['failed', 'needs_attention'] })).toEqual(['b', 'c']);
        expect(await ids({ status: ['completed'] })).toEqual(['a']);
        expect(await ids({ kind: ['conversation', 'workflow'] })).toEqual(['b', 'd', 'e']);
        expect(await ids({ kind: ['conversation', 'workflow'], status: ['running', 'failed', 'completed'], tenant: 'acme' })).toEqual(['b', 'e']);
        // A repeated value is harmless.
        expect(await ids({ status: ['failed', 'failed'] })).toEqual(['b']);
      });

      it('tenant null matches the threads without a tenant', async () => {
        await threads([{ id: 'a', tenant: 'acme' }, { id: 'b', tenant: null }, { id: 'c', tenant: '' }, { id: 'd', tenant: null }]);
        expect(await ids({ tenant: null })).toEqual(['b', 'd']);
        expect(await ids({ tenant: '' })).toEqual(['c']);
        expect(await ids({ tenant: 'acme' })).toEqual(['a']);
      });

      it('metadata: equality on top-level keys, every key given must match, a missing key never does', async () => {
        await threads([
          { id: 'a', metadata: { queue: 'support', priority: 1, vip: true, owner: null, nested: { queue: 'support' } } },
          { id: 'b', metadata: { queue: 'support', priority: 2, vip: false } },
          { id: 'c', metadata: { queue: 'sales', priority: 1.5, tags: ['support'] } },
          { id: 'd', metadata: { queue: 'Support', priority: '1', vip: 'true', owner: 'null' } },
          { id: 'e', metadata: {} },
        ]);
        expect(await ids({ metadata: { queue: 'support' } })).toEqual(['a', 'b']);
        expect(await ids({ metadata: { queue: 'support', priority: 2 } })).toEqual(['b']);
        expect(await ids({ metadata: { priority: 1 } })).toEqual(['a']);
        expect(await ids({ metadata: { priority: 1.5 } })).toEqual(['c']);
        expect(await ids({ metadata: { priority: '1' } })).toEqual(['d']);
        expect(await ids({ metadata: { vip: true } })).toEqual(['a']);
        expect(await ids({ metadata: { vip: false } })).toEqual(['b']);
        expect(await ids({ metadata: { vip: 'true' } })).toEqual(['d']);
        expect(await ids({ metadata: { owner: null } })).toEqual(['a']);
        expect(await ids({ metadata: { owner: 'null' } })).toEqual(['d']);
        // Only top-level keys; a list or an object never equals a scalar.
        expect(await ids({ metadata: { tags: 'support' } })).toEqual([]);
        expect(await ids({ metadata: { nested: 'support' } })).toEqual([]);
        expect(await ids({ metadata: { missing: null } })).toEqual([]);
        expect(await ids({ metadata: { queue: 'support', missing: 'x' } })).toEqual([]);
        expect(await ids({ metadata: {} })).toEqual(['a', 'b', 'c', 'd', 'e']);
      });

      it('metadata keys and values are parameters: hostile ones match literally and change nothing', async () => {
        const hostile = [
          "x' OR '1'='1",
          '$.queue',
          '") OR 1=1 --',
          "'; DROP TABLE cairn_threads; --",
          '%',
          '_',
          '\\',
          'a"b',
          '[0]',
          'ü🧭',
        ];
        await threads([
          { id: 'plain', metadata: { queue: 'support' } },
          ...hostile.map((text, i) => ({ id: `h${String(i).padStart(2, '0')}`, metadata: { [text]: text, queue: text } })),
        ]);
        for (const [i, text] of hostile.entries()) {
          const id = `h${String(i).padStart(2, '0')}`;
          expect(await ids({ metadata: { [text]: text } }), `key and value ${JSON.stringify(text)}`).toEqual([id]);
          expect(await ids({ metadata: { queue: text } }), `value ${JSON.stringify(text)}`).toEqual([id]);
          expect(await ids({ metadata: { [text]: 'support' } }), `key ${JSON.stringify(text)}`).toEqual([]);
        }
        expect(await ids({ metadata: { queue: "support' OR '1'='1" } })).toEqual([]);
        expect(await ids({ tenant: "x' OR '1'='1" })).toEqual([]);
        expect(await ids()).toHaveLength(hostile.length + 1);
      });

      it('createdAt and updatedAt ranges: from inclusive, to exclusive', async () => {
        await threads([{ id: 'a' }, { id: 'b' }, { id: 'c' }, { id: 'd' }]);
        const all = await cp.listThreads();
        const created = Object.fromEntries(all.map((t) => [t.id, t.createdAt]));
        expect(created.a).toBeLessThan(created.b!);
        expect(created.c).toBeLessThan(created.d!);
        expect(await ids({ createdAt: { from: created.b } })).toEqual(['b', 'c', 'd']);
        expect(await ids({ createdAt: { to: created.c } })).toEqual(['a', 'b']);
        expect(await ids({ createdAt: { from: created.b, to: created.d } })).toEqual(['b', 'c']);
        expect(await ids({ createdAt: { from: created.d! + 1 } })).toEqual([]);

        // Touch b, then d: their updatedAt moves past everything created.
        await sleep(3);
        for (const id of ['b', 'd']) {
          const lease = await cp.acquireThread(id, { owner: remoteOwner(), leaseMs: LONG_LEASE });
          await cp.updateThread(lease, { attempts: 1 });
          await cp.releaseThread(lease);
          await sleep(3);
        }
        const b = (await cp.getThread('b'))!;
        const d = (await cp.getThread('d'))!;
        expect(b.updatedAt).toBeGreaterThan(created.d!);
        expect(await ids({ updatedAt: { from: b.updatedAt } })).toEqual(['b', 'd']);
        expect(await ids({ updatedAt: { from: d.updatedAt } })).toEqual(['d']);
        expect(await ids({ updatedAt: { to: b.updatedAt } })).toEqual(['a', 'c']);
        expect(await ids({ updatedAt: { from: b.updatedAt, to: d.updatedAt } })).toEqual(['b']);
        expect(await ids({ updatedAt: { from: b.updatedAt }, createdAt: { to: created.c } })).toEqual(['b']);
      });

      it('a step commit counts as an update', async () => {
        await threads([{ id: 'a' }, { id: 'b' }]);
        await sleep(3);
        const since = Date.now();
        const lease = await cp.acquireThread('a', { owner: remoteOwner(), leaseMs: LONG_LEASE });
        await cp.commitStep(lease, commitOf(linearPosition(0, { createdAt: Date.now() }), null));
        expect((await cp.getThread('a'))!.updatedAt).toBeGreaterThanOrEqual(since);
        expect(await ids({ updatedAt: { from: since } })).toEqual(['a']);
      });

      it('pages by id: every matching thread exactly once, in order, whatever the page size', async () => {
        const statuses: ThreadStatus[] = ['running', 'completed', 'failed'];
        for (let i = 0; i < 23; i++) {
          const lease = await create(`t${String(i).padStart(2, '0')}`, { tenant: i % 2 ? 'acme' : 'globex' });
          if (statuses[i % 3] !== 'running') await cp.updateThread(lease, { status: statuses[i % 3]! });
        }
        const query: ThreadQuery = { tenant: 'acme', status: ['running', 'failed'] };
        const expected = await ids(query);
        expect(expected.length).toBeGreaterThan(5);
        expect(expected).toEqual([...expected].sort());
        for (const size of [1, 2, 5, 100]) {
          const seen: string[] = [];
          let page = await cp.listThreads({ ...query, limit: size });
          while (page.length) {
            expect(page.length).toBeLessThanOrEqual(size);
            seen.push(...page.map((t) => t.id));
            page = await cp.listThreads({ ...query, limit: size, after: page[page.length - 1]! });
          }
          expect(seen, `page size ${size}`).toEqual(expected);
        }
        expect(await ids({ limit: 0 })).toEqual([]);
      });

      it('orders ids by code point (as UTF-8 bytes), the same on every engine', async () => {
        const idsInOrder = ['A', 'Z', 'a', 'z', 'é', '\uE000', '😀'];
        for (const id of [...idsInOrder].reverse()) await create(id);
        expect(await ids()).toEqual(idsInOrder);
        expect(await ids({ after: 'é' })).toEqual(['\uE000', '😀']);
        expect(await ids({ after: '\uE000' })).toEqual(['😀']);
      });

      it("order 'updatedAt': most recently updated first, ties by id, paged with the last record", async () => {
        await threads([{ id: 'a' }, { id: 'b' }, { id: 'c' }, { id: 'd' }, { id: 'e' }]);
        // Touch c, then a: they come first, a before c.
        for (const id of ['c', 'a']) {
          const lease = await cp.acquireThread(id, { owner: remoteOwner(), leaseMs: LONG_LEASE });
          await cp.updateThread(lease, { status: 'completed' });
          await cp.releaseThread(lease);
          await sleep(3);
        }
        const all = await cp.listThreads({ order: 'updatedAt' });
        expect(all.map((t) => t.id).slice(0, 2)).toEqual(['a', 'c']);
        for (let i = 1; i < all.length; i++) {
          const [prev, next] = [all[i - 1]!, all[i]!];
          expect(prev.updatedAt > next.updatedAt || (prev.updatedAt === next.updatedAt && prev.id < next.id)).toBe(true);
        }
        const seen: string[] = [];
        let page = await cp.listThreads({ order: 'updatedAt', limit: 2 });
        while (page.length) {
          seen.push(...page.map((t) => t.id));
          page = await cp.listThreads({ order: 'updatedAt', limit: 2, after: page[page.length - 1]! });
        }
        expect(seen).toEqual(all.map((t) => t.id));
        expect(await ids({ order: 'updatedAt', status: 'completed' })).toEqual(['a', 'c']);
        expect(await ids({ order: 'updatedAt', status: 'running' })).toEqual(['e', 'd', 'b']);
      });

      it("order 'updatedAt' pages through threads updated in the same millisecond (ties by id)", async () => {
        // Created back to back: several share a clock reading; the cursor (updatedAt, id) still visits each once.
        for (const id of ['f', 'b', 'd', 'a', 'e', 'c']) await create(id);
        const all = await cp.listThreads({ order: 'updatedAt' });
        const seen: string[] = [];
        for (let page = await cp.listThreads({ order: 'updatedAt', limit: 1 }); page.length; ) {
          seen.push(page[0]!.id);
          page = await cp.listThreads({ order: 'updatedAt', limit: 1, after: { id: page[0]!.id, updatedAt: page[0]!.updatedAt } });
        }
        expect(seen).toEqual(all.map((t) => t.id));
        expect([...seen].sort()).toEqual(['a', 'b', 'c', 'd', 'e', 'f']);
      });

      it('rejects a malformed query with InvalidOptionError', async () => {
        await create('t1');
        const bad: unknown[] = [
          { status: 'paused' },
          { status: [] },
          { kind: 'chat' },
          { kind: ['task', 'job'] },
          { metadata: { a: { b: 1 } } },
          { metadata: { a: [1] } },
          { metadata: { a: Number.NaN } },
          { metadata: { a: undefined } },
          { metadata: [['a', 1]] },
          { tenant: 42 },
          { limit: -1 },
          { limit: 1.5 },
          { order: 'createdAt' },
          { order: 'updatedAt', after: 't1' },
          { after: 42 },
          { createdAt: { from: 'yesterday' } },
          { updatedAt: { to: Number.POSITIVE_INFINITY } },
        ];
        for (const query of bad) {
          await expectError(() => cp.listThreads(query as ThreadQuery), InvalidOptionError);
        }
      });
    });

    describe('deleteThread', () => {
      const ids = async (query?: ThreadQuery) => (await cp.listThreads(query)).map((t) => t.id);
      const ref = (n: number) => ({ id: `sha256:${fakeHash(n)}`, sha256: fakeHash(n), media_type: 'text/plain', size_bytes: n });

      /**
       * A thread with something in every place a thread owns: root and child positions,
       * items, snapshots, a pending write, failures, ledger effects and records, a pin
       * (and an unpinned one). Released (or left held with `keep`).
       */
      async function populated(threadId: string, options: { keep?: boolean; leaseMs?: number; status?: ThreadStatus } = {}) {
        const lease = await create(threadId, { leaseMs: options.leaseMs ?? LONG_LEASE, tenant: 'acme', metadata: { n: threadId } });
        await cp.commitStep(lease, commitOf(linearPosition(0), null, { items: [item('m', 0, '"m0"'), item('m', 1, '"m1"')], snapshot: '{"s":0}' }));
        await cp.commitStep(lease, commitOf(linearPosition(1), 0, { items: [item('m', 0, '"m2"')] }));
        await cp.commitStep(lease, commitOf(linearPosition(0, { ns: 'parent|child:0', hash: fakeHash(50) }), null, { items: [item('c', 0, '"c0"')], snapshot: '{"c":0}' }));
        await cp.putPendingWrite(lease, { ns: '', baseSeq: 1, task: 'a:0', body: '{"w":1}' });
        await cp.updateThread(lease, { attempts: 2, failure: { ns: '', code: 'ERR_A', message: 'a', node: 'n', seq: 1, attempt: 1, at: 1 } });
        await cp.updateThread(lease, { failure: { ns: '', code: 'ERR_B', message: 'b', node: 'n', seq: 1, attempt: 2, at: 2 }, ...(options.status ? { status: options.status } : {}) });
        const entry = { threadId, kind: 'effect' as const, name: 'put', ns: '', seq: 1, node: 'n', task: 'n:0', call: 0, argsDigest: null, createdAt: 5 };
        await engine.ledger.writeIntent({ ...entry, key: 'effect-1' });
        await engine.ledger.writeOutcome(threadId, 'effect-1', '{"ok":true}', 6);
        await engine.ledger.writeRecord({ ...entry, kind: 'record', key: 'record-1', call: 1, outcome: '"answer"' });
        await engine.store.put([...PIN_NAMESPACE], threadPinKey(ref(1).id, threadId), { ref: ref(1), note: 'thread pin', thread: threadId });
        await engine.store.put([...PIN_NAMESPACE], threadPinKey(ref(2).id, threadId), { ref: ref(2), note: 'unpinned later', thread: threadId });
        await engine.store.delete([...PIN_NAMESPACE], threadPinKey(ref(2).id, threadId));
        if (!options.keep) await cp.releaseThread(lease);
        return lease;
      }

      /** Everything readable about a thread through the contracts. */
      async function everything(threadId: string) {
        const ranges = [{ from: 0, to: 100 }];
        return {
          thread: await cp.getThread(threadId),
          positions: await cp.getPositions(threadId, '', { from: 0, to: 100 }),
          child: await cp.getPositions(threadId, 'parent|child:0', { from: 0, to: 100 }),
          items: await cp.getItems(threadId, '', 'm', ranges),
          childItems: await cp.getItems(threadId, 'parent|child:0', 'c', ranges),
          snapshot: await cp.getSnapshot(threadId, '', ranges),
          childSnapshot: await cp.getSnapshot(threadId, 'parent|child:0', ranges),
          pending: await cp.getPendingWrites(threadId, '', 1),
          failures: await cp.listFailures(threadId),
          ledger: await engine.ledger.list(threadId),
          pin: await engine.store.get([...PIN_NAMESPACE], threadPinKey(ref(1).id, threadId)),
        };
      }

      it('removes the thread and every position, item, snapshot, pending write, failure, ledger entry and pin it owns', async () => {
        await populated('doomed');
        await populated('other');
        await engine.store.put([...PIN_NAMESPACE], ref(1).id, { ref: ref(1), note: 'global pin' });
        const otherBefore = await everything('other');
        expect(otherBefore.positions).toHaveLength(2);
        expect(otherBefore.ledger).toHaveLength(2);

        const result = await cp.deleteThread('doomed');
        expect(result).toEqual({
          deleted: true,
          threadId: 'doomed',
          removed: { positions: 3, items: 4, snapshots: 2, pendingWrites: 1, failures: 2, ledgerEntries: 2, pins: 1 },
        });

        expect(await everything('doomed')).toEqual({
          thread: null,
          positions: [],
          child: [],
          items: [],
          childItems: [],
          snapshot: null,
          childSnapshot: null,
          pending: [],
          failures: [],
          ledger: [],
          pin: null,
        });
        expect(await engine.ledger.get('doomed', 'effect-1')).toBeNull();
        expect(await ids()).toEqual(['other']);
        // The unpinned pin's row is gone too: nothing under the pins namespace names the thread.
        const pins = await engine.store.search([...PIN_NAMESPACE]);
        expect(pins.items.map((i) => i.key).sort()).toEqual([ref(1).id, threadPinKey(ref(1).id, 'other')].sort());
        // Another thread, and a global pin of the same artifact, are untouched.
        expect(await everything('other')).toEqual(otherBefore);
        expect((await engine.store.get([...PIN_NAMESPACE], ref(1).id))?.value).toMatchObject({ note: 'global pin' });
      });

      it('a thread created again under a deleted id starts empty', async () => {
        await populated('t1');
        await cp.deleteThread('t1');
        const lease = await create('t1', { kind: 'session' });
        expect(lease.thread).toMatchObject({ id: 't1', kind: 'session', head: null, attempts: 0, tenant: null, metadata: {}, lastError: null });
        expect(await cp.getPositions('t1', '', { from: 0, to: 100 })).toEqual([]);
        expect(await cp.getItems('t1', '', 'm', [{ from: 0, to: 100 }])).toEqual([]);
        expect(await cp.getSnapshot('t1', '', [{ from: 0, to: 100 }])).toBeNull();
        expect(await cp.getPendingWrites('t1', '', 1)).toEqual([]);
        expect(await cp.listFailures('t1')).toEqual([]);
        expect(await engine.ledger.list('t1')).toEqual([]);
        await commitLine(lease, 1);
        expect((await cp.getThread('t1'))!.head).toBe(1);
      });

      it('removes every namespace: none is listed after, and a thread created again under the id has no child positions', async () => {
        await populated('t1');
        const grandchild = 'parent|child:0|deeper:1@0';
        const lease = await cp.acquireThread('t1', { owner: remoteOwner(), leaseMs: LONG_LEASE });
        await cp.commitStep(lease, commitOf(linearPosition(0, { ns: grandchild, hash: fakeHash(60) }), null));
        await cp.commitStep(lease, commitOf(linearPosition(1, { ns: grandchild, hash: fakeHash(61) }), 0));
        await cp.releaseThread(lease);
        expect(await cp.listNamespaces('t1')).toEqual(['', 'parent|child:0', grandchild]);

        expect(await cp.deleteThread('t1')).toMatchObject({ deleted: true, removed: { positions: 5 } });
        expect(await cp.listNamespaces('t1')).toEqual([]);

        const again = await create('t1');
        expect(await cp.listNamespaces('t1')).toEqual([]);
        expect(await cp.getPositions('t1', 'parent|child:0', { from: 0, to: 100 })).toEqual([]);
        expect(await cp.getPositions('t1', grandchild, { from: 0, to: 100 })).toEqual([]);
        expect(await cp.getSnapshot('t1', 'parent|child:0', [{ from: 0, to: 100 }])).toBeNull();
        expect(await cp.getItems('t1', 'parent|child:0', 'c', [{ from: 0, to: 100 }])).toEqual([]);
        // No head survives either: the child namespace starts again at seq 0 from null.
        await expectError(() => cp.commitStep(again, commitOf(linearPosition(2, { ns: grandchild, hash: fakeHash(62) }), 1)), HeadMovedError);
        await cp.commitStep(again, commitOf(linearPosition(0, { ns: grandchild, hash: fakeHash(70) }), null));
        expect(await cp.listNamespaces('t1')).toEqual([grandchild]);
      });

      it('deletes the newest thread, then creates threads: none sees the deleted one\'s rows', async () => {
        await populated('a');
        await populated('z');
        await cp.deleteThread('z');
        const lease = await create('fresh');
        expect(await cp.getPositions('fresh', '', { from: 0, to: 100 })).toEqual([]);
        expect(await cp.listFailures('fresh')).toEqual([]);
        expect(await engine.ledger.list('fresh')).toEqual([]);
        await commitLine(lease, 0);
        expect(await cp.getPositions('a', '', { from: 0, to: 100 })).toHaveLength(2);
      });

      it('refuses a thread whose lease is live with ThreadBusyError and deletes nothing', async () => {
        await populated('t1', { keep: true });
        const before = await everything('t1');
        const error = await expectError(() => cp.deleteThread('t1'), ThreadBusyError);
        expect(error.threadId).toBe('t1');
        expect(await everything('t1')).toEqual(before);
      });

      it('refuses a thread held by another live run of this process', async () => {
        await create('t1', { owner: { runId: 'mine', pid: process.pid, host: hostname() } });
        await expectError(() => cp.deleteThread('t1'), ThreadBusyError);
        expect(await cp.getThread('t1')).not.toBeNull();
      });

      it('deletes a thread whose holder is dead; the dead holder\'s late writes then fail and write nothing', async () => {
        const stale = await populated('t1', { keep: true, leaseMs: SHORT_LEASE });
        await sleep(SHORT_LEASE * 2);
        expect((await cp.deleteThread('t1')).deleted).toBe(true);
        await expectError(() => cp.commitStep(stale, commitOf(linearPosition(2), 1)), LeaseLostError);
        await expectError(() => cp.updateThread(stale, { status: 'failed', failure: { ns: '', code: 'ERR_LATE', message: 'late', at: 3 } }), LeaseLostError);
        await expectError(() => cp.putPendingWrite(stale, { ns: '', baseSeq: 1, task: 'b:0', body: '{}' }), LeaseLostError);
        await expectError(() => cp.putSnapshot(stale, { ns: '', seq: 1, text: '{}' }), LeaseLostError);
        await expectError(() => cp.renewLease(stale, LONG_LEASE), LeaseLostError);
        const late = { threadId: 't1', key: 'late', kind: 'effect' as const, name: 'x', ns: '', seq: 1, node: 'n', task: 'n:0', call: 2, argsDigest: null, createdAt: 9 };
        await expectError(() => engine.ledger.writeIntent(late), ThreadNotFoundError);
        await expectError(() => engine.ledger.writeRecord({ ...late, kind: 'record', outcome: '1' }), ThreadNotFoundError);
        await cp.releaseThread(stale);
        expect(await cp.getThread('t1')).toBeNull();
        expect(await engine.ledger.list('t1')).toEqual([]);
        expect(await cp.listFailures('t1')).toEqual([]);
        expect(await cp.getPendingWrites('t1', '', 1)).toEqual([]);
      });

      it('ifStatus: deletes only a thread in one of the given statuses', async () => {
        await populated('done', { status: 'completed' });
        await populated('broken', { status: 'failed' });
        expect(await cp.deleteThread('done', { ifStatus: 'failed' })).toEqual({ deleted: false, threadId: 'done', reason: 'status', status: 'completed' });
        expect(await cp.deleteThread('done', { ifStatus: ['failed', 'needs_attention'] })).toMatchObject({ deleted: false, reason: 'status' });
        expect((await everything('done')).positions).toHaveLength(2);
        expect(await cp.deleteThread('done', { ifStatus: ['failed', 'completed'] })).toMatchObject({ deleted: true });
        expect(await cp.deleteThread('broken', { ifStatus: 'failed' })).toMatchObject({ deleted: true, removed: { positions: 3 } });
        expect(await ids()).toEqual([]);
      });

      it('a missing thread is reported, not thrown; deleting twice is harmless', async () => {
        await populated('other');
        const before = await everything('other');
        expect(await cp.deleteThread('missing')).toEqual({ deleted: false, threadId: 'missing', reason: 'missing' });
        await populated('t1');
        expect((await cp.deleteThread('t1')).deleted).toBe(true);
        expect(await cp.deleteThread('t1')).toEqual({ deleted: false, threadId: 't1', reason: 'missing' });
        expect(await everything('other')).toEqual(before);
      });

      it('rejects an unknown ifStatus with InvalidOptionError and deletes nothing', async () => {
        await populated('t1');
        await expectError(() => cp.deleteThread('t1', { ifStatus: 'done' as ThreadStatus }), InvalidOptionError);
        expect(await cp.getThread('t1')).not.toBeNull();
      });
    });

    describe('thread ids', () => {
      const hostile: [string, string][] = [
        ['empty', ''],
        ['NUL', 'a\u0000b'],
        ['newline', 'a\nb'],
        ['unit separator', 'a\u001fb'],
        ['DEL', 'a\u007fb'],
        ['513 characters', 'x'.repeat(513)],
      ];
      for (const [label, id] of hostile) {
        it(`rejects a thread id that is ${label} with InvalidKeyError and creates nothing`, async () => {
          await expectError(
            () => cp.acquireThread(id, { owner: remoteOwner(), leaseMs: LONG_LEASE, create: { kind: 'task', tenant: null, metadata: {} } }),
            InvalidKeyError,
          );
          expect(await cp.listThreads()).toEqual([]);
        });
      }

      it('accepts ids up to 512 characters, with spaces, punctuation and any Unicode', async () => {
        for (const id of ['x'.repeat(512), 'cust 42/../%00', 'ünïcödé-🧭', "quote'\"`;--"]) {
          await create(id);
          expect((await cp.getThread(id))!.id).toBe(id);
        }
      });
    });

    describe('lifecycle', () => {
      // Known failure (sqlite, connection.ts): once SqliteConnection.writeTransaction has built its
      // cached transaction wrapper, later writes skip the lifecycle check and fail with EngineError
      // ("The database connection is not open") instead of EngineClosedError.
      it('throws EngineClosedError from every method after engine.close()', async () => {
        const lease = await create('t1');
        await commitLine(lease, 0);
        await engine.close();
        const calls: [string, () => Promise<unknown>][] = [
          ['getThread', () => cp.getThread('t1')],
          ['listThreads', () => cp.listThreads()],
          ['listFailures', () => cp.listFailures('t1')],
          ['acquireThread', () => cp.acquireThread('t2', { owner: remoteOwner(), leaseMs: LONG_LEASE, create: { kind: 'task', tenant: null, metadata: {} } })],
          ['renewLease', () => cp.renewLease(lease, LONG_LEASE)],
          ['updateThread', () => cp.updateThread(lease, { attempts: 1 })],
          ['commitStep', () => cp.commitStep(lease, commitOf(linearPosition(1), 0))],
          ['putPendingWrite', () => cp.putPendingWrite(lease, { ns: '', baseSeq: 0, task: 'a:0', body: '{}' })],
          ['getPendingWrites', () => cp.getPendingWrites('t1', '', 0)],
          ['getPosition', () => cp.getPosition('t1', '', 0)],
          ['getPositions', () => cp.getPositions('t1', '', { from: 0, to: 1 })],
          ['listPositions', () => cp.listPositions('t1', '')],
          ['listNamespaces', () => cp.listNamespaces('t1')],
          ['getSnapshot', () => cp.getSnapshot('t1', '', [{ from: 0, to: 1 }])],
          ['getItems', () => cp.getItems('t1', '', 'm', [{ from: 0, to: 1 }])],
          ['getPositionItems', () => cp.getPositionItems('t1', '', 0, ['m'])],
          ['deleteThread', () => cp.deleteThread('t1')],
          ['releaseThread', () => cp.releaseThread(lease)],
        ];
        for (const [method, call] of calls) {
          let caught: unknown;
          try {
            await call();
          } catch (error) {
            caught = error;
          }
          expect((caught as { code?: string } | undefined)?.code, `${method} after close`).toBe(EngineClosedError.code);
        }
      });

      // Known failures: memory (MemoryCheckpointer.close() only clears its map; reads then return null/[] instead of
      // throwing) and sqlite (the cached transaction wrapper, as above: commitStep throws EngineError).
      it('throws EngineClosedError after checkpointer.close()', async () => {
        const lease = await create('t1');
        await cp.close();
        await expectError(() => cp.getThread('t1'), EngineClosedError);
        await expectError(() => cp.listThreads(), EngineClosedError);
        await expectError(() => cp.commitStep(lease, commitOf(linearPosition(0), null)), EngineClosedError);
      });

      it('close() twice is harmless', async () => {
        await engine.close();
        await engine.close();
      });
    });

    describe('thread metadata with lone surrogates', () => {
      // JSON text escapes a lone surrogate (\ud800); PostgreSQL's jsonb view of the text
      // used to refuse it, so such metadata could not be written there at all.
      const odd = { note: '\uD800', 'k\uDC00': 'v', nested: { list: ['\uDBFF', 'x\uDFFFy'] }, nul: '\u0000', queue: 'support' };

      it('acquire with create stores it, and getThread and the lease return it exactly', async () => {
        const lease = await create('odd', { metadata: odd });
        expect(lease.thread.metadata).toEqual(odd);
        expect((await cp.getThread('odd'))!.metadata).toEqual(odd);
      });

      it('listThreads with other metadata filters finds it and the other threads', async () => {
        for (const [id, metadata] of [['odd', odd], ['plain', { note: 'fine', queue: 'support' }], ['other', { queue: 'sales' }]] as const) {
          await cp.releaseThread(await create(id, { metadata }));
        }
        const ids = async (query?: ThreadQuery) => (await cp.listThreads(query)).map((t) => t.id);
        expect(await ids({ metadata: { queue: 'support' } })).toEqual(['odd', 'plain']);
        expect(await ids({ metadata: { note: 'fine' } })).toEqual(['plain']);
        expect(await ids({ metadata: { queue: 'sales' } })).toEqual(['other']);
        expect(await ids({ metadata: { queue: 'support', note: 'fine' } })).toEqual(['plain']);
        expect(await ids()).toEqual(['odd', 'other', 'plain']);
        expect((await cp.listThreads({ metadata: { queue: 'support' } }))[0]!.metadata).toEqual(odd);
      });

      it('workers claim running threads of a graph beside one whose metadata holds them (claimThreads, nextLeaseExpiry)', async () => {
        if (!cp.claimThreads || !cp.nextLeaseExpiry) return;
        await cp.releaseThread(await create('odd', { metadata: { ...odd, graph: 'g' } }));
        await cp.releaseThread(await create('plain', { metadata: { graph: 'g' } }));
        const claimed = await cp.claimThreads({ owner: remoteOwner('worker'), leaseMs: LONG_LEASE, limit: 10, graph: 'g' });
        expect(claimed.map((lease) => lease.threadId).sort()).toEqual(['odd', 'plain']);
        expect(await cp.nextLeaseExpiry('g')).toBeGreaterThan(Date.now());
      });

      it('a metadata filter naming a lone surrogate or U+0000 is InvalidOptionError, before any query', async () => {
        await cp.releaseThread(await create('odd', { metadata: odd }));
        const filters: Record<string, string>[] = [{ note: '\uD800' }, { 'k\uDC00': 'v' }, { nul: '\u0000' }, { note: 'a\uDFFF' }];
        for (const metadata of filters) {
          await expectError(() => cp.listThreads({ metadata }), InvalidOptionError);
        }
      });
    });

    describe('thread times given by the caller (import)', () => {
      const CREATED = 1_600_000_000_000;
      const UPDATED = 1_700_000_500_000;

      it('acquireThread create keeps the given createdAt and updatedAt, and listThreads filters by them', async () => {
        const lease = await cp.acquireThread('old', {
          owner: remoteOwner(),
          leaseMs: LONG_LEASE,
          create: { kind: 'task', tenant: null, metadata: {}, createdAt: CREATED, updatedAt: UPDATED },
        });
        expect(lease.thread).toMatchObject({ createdAt: CREATED, updatedAt: UPDATED });
        expect(await cp.getThread('old')).toMatchObject({ createdAt: CREATED, updatedAt: UPDATED });
        await create('new');
        expect((await cp.listThreads({ createdAt: { to: CREATED + 1 } })).map((t) => t.id)).toEqual(['old']);
        expect((await cp.listThreads({ updatedAt: { to: UPDATED + 1 } })).map((t) => t.id)).toEqual(['old']);
      });

      it('updatedAt defaults to the given createdAt; without either, both are now', async () => {
        await cp.acquireThread('a', { owner: remoteOwner(), leaseMs: LONG_LEASE, create: { kind: 'task', tenant: null, metadata: {}, createdAt: CREATED } });
        expect(await cp.getThread('a')).toMatchObject({ createdAt: CREATED, updatedAt: CREATED });
        const before = Date.now();
        await create('b');
        const b = (await cp.getThread('b'))!;
        expect(b.createdAt).toBeGreaterThanOrEqual(before);
        expect(b.updatedAt).toBe(b.createdAt);
      });

      it('the times are ignored when the thread exists', async () => {
        const first = await create('t', { leaseMs: SHORT_LEASE });
        await sleep(SHORT_LEASE * 2);
        await cp.acquireThread('t', { owner: remoteOwner(), leaseMs: LONG_LEASE, create: { kind: 'task', tenant: null, metadata: {}, createdAt: CREATED, updatedAt: CREATED } });
        expect((await cp.getThread('t'))!.createdAt).toBe(first.thread.createdAt);
      });

      it('updateThread with updatedAt records it, after commits (which set their own times)', async () => {
        const lease = await cp.acquireThread('t', { owner: remoteOwner(), leaseMs: LONG_LEASE, create: { kind: 'task', tenant: null, metadata: {}, createdAt: CREATED } });
        await commitLine(lease, 2);
        await cp.commitStep(lease, commitOf(linearPosition(3), 2, { status: 'completed' }));
        const updated = await cp.updateThread(lease, { status: 'completed', updatedAt: UPDATED });
        expect(updated).toMatchObject({ status: 'completed', createdAt: CREATED, updatedAt: UPDATED });
        expect(await cp.getThread('t')).toMatchObject({ status: 'completed', head: 3, createdAt: CREATED, updatedAt: UPDATED });
        // Without it, now.
        const before = Date.now();
        expect((await cp.updateThread(lease, { attempts: 1 })).updatedAt).toBeGreaterThanOrEqual(before);
      });
    });
  });
}
