/**
 * @module testing/checkpointer/workers
 * Checkpointer conformance. Capabilities and what workers use: the declared flags,
 * refusal of an undeclared optional method, and the tests of each optional method.
 * Where its capability is not declared, each of those checks the refusal instead
 * (the method is absent, or it throws NotSupportedError): an engine may leave a
 * capability out, never half-implement it.
 * Registered by {@link checkpointerSuite}, inside its describe block.
 */
import { hostname } from 'node:os';
import { beforeEach, describe, expect, it } from 'vitest';
import type { Checkpointer, CheckpointerCapabilities } from '../../contracts/checkpointer.js';
import type { ThreadLease } from '../../contracts/threads.js';
import { LeaseLostError, NotSupportedError } from '../../errors.js';
import { commitOf, deadPid, expectError, linearPosition, LONG_LEASE, remoteOwner, SHORT_LEASE, sleep } from './fixtures.js';
import type { CheckpointerSuiteContext } from './context.js';

/** Each capability and a call of the optional method it declares. */
const OPTIONAL: Record<keyof CheckpointerCapabilities, { method: string; call: (cp: Checkpointer) => Promise<unknown> }> = {
  claims: { method: 'claimThreads', call: (cp) => cp.claimThreads!({ owner: remoteOwner('worker'), leaseMs: LONG_LEASE, limit: 1 }) },
  wakeUps: { method: 'subscribeRunnable', call: (cp) => cp.subscribeRunnable!(() => undefined) },
  leaseExpiry: { method: 'nextLeaseExpiry', call: (cp) => cp.nextLeaseExpiry!() },
  leaseHolders: { method: 'leaseHolders', call: (cp) => cp.leaseHolders!({ host: hostname() }) },
  itemPacks: { method: 'getItemPacks', call: (cp) => cp.getItemPacks!('t1', '', 'm', [{ from: 0, to: 1 }]) },
};

/** Registers the tests of this feature. */
export function workerTests(suite: CheckpointerSuiteContext): void {
  const { create } = suite;
  let cp: Checkpointer;
  /** True (after checking the refusal) when the engine does not declare `capability`: the caller's test then has nothing more to check. */
  async function undeclared(...capabilities: (keyof CheckpointerCapabilities)[]): Promise<boolean> {
    const missing = capabilities.filter((flag) => !cp.capabilities[flag]);
    for (const flag of missing) {
      const { method, call } = OPTIONAL[flag];
      if (typeof (cp as unknown as Record<string, unknown>)[method] === 'function') await expectError(() => call(cp), NotSupportedError);
    }
    return missing.length > 0;
  }

  describe('capabilities', () => {
    beforeEach(() => {
      cp = suite.cp;
    });

    it('declares its capabilities as booleans (they decide which worker tests apply)', () => {
      for (const flag of Object.keys(OPTIONAL) as (keyof CheckpointerCapabilities)[]) {
        // itemPacks came later: an engine written before it leaves it out, which reads as false.
        if (flag === 'itemPacks' && cp.capabilities[flag] === undefined) continue;
        expect(typeof cp.capabilities[flag], flag).toBe('boolean');
      }
    });

    it("a declared capability's method exists; an undeclared one's is absent or refuses with NotSupportedError", async () => {
      for (const [flag, { method, call }] of Object.entries(OPTIONAL) as [keyof CheckpointerCapabilities, (typeof OPTIONAL)[keyof CheckpointerCapabilities]][]) {
        const present = typeof (cp as unknown as Record<string, unknown>)[method] === 'function';
        if (cp.capabilities[flag]) expect(present, `${method} (capabilities.${flag})`).toBe(true);
        else if (present) await expectError(() => call(cp), NotSupportedError);
      }
    });
  });

  describe('workers: claimThreads (capabilities.claims)', () => {
    beforeEach(() => {
      cp = suite.cp;
    });

    /** Threads created and released in this order (a few ms apart), so their update times differ. */
    async function released(...ids: string[]): Promise<void> {
      for (const id of ids) {
        await cp.releaseThread(await create(id));
        await sleep(3);
      }
    }

    it('claims runnable threads only (running, no live holder), oldest update first, at most limit', async () => {
      if (await undeclared('claims')) return;
      await released('a', 'b', 'c');
      const done = await create('done');
      await cp.updateThread(done, { status: 'completed' });
      await cp.releaseThread(done);
      await create('held');
      const owner = remoteOwner('worker');
      const first = await cp.claimThreads!({ owner, leaseMs: LONG_LEASE, limit: 2 });
      expect(first.map((lease) => lease.threadId)).toEqual(['a', 'b']);
      for (const lease of first) expect(lease).toMatchObject({ runId: owner.runId, thread: { id: lease.threadId, status: 'running' } });
      expect((await cp.claimThreads!({ owner, leaseMs: LONG_LEASE, limit: 10 })).map((lease) => lease.threadId)).toEqual(['c']);
      expect(await cp.claimThreads!({ owner, leaseMs: LONG_LEASE, limit: 10 })).toEqual([]);
    });

    it('a claim is a fresh lease (epoch + 1) that fences the expired holder out', async () => {
      if (await undeclared('claims')) return;
      const stale = await create('t1', { leaseMs: SHORT_LEASE });
      await cp.commitStep(stale, commitOf(linearPosition(0), null));
      await sleep(SHORT_LEASE * 2);
      const [claimed] = await cp.claimThreads!({ owner: remoteOwner('worker'), leaseMs: LONG_LEASE, limit: 1 });
      expect(claimed!.epoch).toBeGreaterThan(stale.epoch);
      expect(claimed!.thread.head).toBe(0);
      await expectError(() => cp.commitStep(stale, commitOf(linearPosition(1), 0)), LeaseLostError);
      await cp.commitStep(claimed!, commitOf(linearPosition(1), 0));
      expect((await cp.getThread('t1'))!.head).toBe(1);
    });

    it('concurrent claimers never get the same thread', async () => {
      if (await undeclared('claims')) return;
      const ids = ['t0', 't1', 't2', 't3', 't4', 't5'];
      await released(...ids);
      const batches = await Promise.all([0, 1, 2].map(() => cp.claimThreads!({ owner: remoteOwner('worker'), leaseMs: LONG_LEASE, limit: ids.length })));
      const claimed = batches.flat().map((lease: ThreadLease) => lease.threadId);
      expect([...claimed].sort()).toEqual(ids);
    });

    it('claims only the threads of the graph asked for', async () => {
      if (await undeclared('claims')) return;
      for (const [id, graph] of [['a', 'g1'], ['b', 'g2'], ['c', undefined], ['d', 'g1']] as const) {
        await cp.releaseThread(await create(id, { metadata: graph ? { graph } : {} }));
      }
      const claimed = await cp.claimThreads!({ owner: remoteOwner('worker'), leaseMs: LONG_LEASE, limit: 10, graph: 'g1' });
      expect(claimed.map((lease) => lease.threadId).sort()).toEqual(['a', 'd']);
    });
  });

  describe('workers: taking over dead holders (claimThreads deadHolders)', () => {
    beforeEach(() => {
      cp = suite.cp;
    });

    it("claims at once the threads of a holder of this host whose process is gone, when named; its late commit is fenced out", async () => {
      if (await undeclared('claims')) return;
      const dead = { runId: 'dead-worker', pid: deadPid(), host: hostname() };
      const stale = await create('orphan', { owner: dead, leaseMs: LONG_LEASE });
      await cp.commitStep(stale, commitOf(linearPosition(0), null));
      const claimed = await cp.claimThreads!({ owner: remoteOwner('worker'), leaseMs: LONG_LEASE, limit: 10, deadHolders: [dead] });
      expect(claimed.map((lease) => lease.threadId)).toEqual(['orphan']);
      expect(claimed[0]!.epoch).toBeGreaterThan(stale.epoch);
      expect(claimed[0]!.thread.head).toBe(0);
      await expectError(() => cp.commitStep(stale, commitOf(linearPosition(1), 0)), LeaseLostError);
    });

    it('never takes a thread named in deadHolders from a live holder: another host, this process, a process that exists', async () => {
      if (await undeclared('claims')) return;
      const remote = remoteOwner('remote');
      const self = { runId: 'this-process', pid: process.pid, host: hostname() };
      const live = { runId: 'live-parent', pid: process.ppid, host: hostname() };
      for (const [id, owner] of [['remote', remote], ['self', self], ['live', live]] as const) await create(id, { owner, leaseMs: LONG_LEASE });
      expect(await cp.claimThreads!({ owner: remoteOwner('worker'), leaseMs: LONG_LEASE, limit: 10, deadHolders: [remote, self, live] })).toEqual([]);
    });

    it('a named dead holder whose thread was taken since by a live run does not reach that run', async () => {
      if (await undeclared('claims')) return;
      const dead = { runId: 'dead-worker', pid: deadPid(), host: hostname() };
      await create('t1', { owner: dead, leaseMs: LONG_LEASE });
      const successor = await cp.acquireThread('t1', { owner: remoteOwner('successor'), leaseMs: LONG_LEASE });
      expect(await cp.claimThreads!({ owner: remoteOwner('worker'), leaseMs: LONG_LEASE, limit: 10, deadHolders: [dead] })).toEqual([]);
      await cp.commitStep(successor, commitOf(linearPosition(0), null));
    });
  });

  describe('workers: leaseHolders (capabilities.leaseHolders)', () => {
    beforeEach(() => {
      cp = suite.cp;
    });

    it("lists each unexpired holder of a running or waiting thread on the host once (of the graph, when given)", async () => {
      if (await undeclared('leaseHolders')) return;
      const host = hostname();
      expect(await cp.leaseHolders!({ host })).toEqual([]);
      const a = { runId: 'holder-a', pid: 1111, host };
      const b = { runId: 'holder-b', pid: 2222, host };
      await create('a1', { owner: a, metadata: { graph: 'g' } });
      await create('a2', { owner: a, metadata: { graph: 'g' } });
      await create('b1', { owner: b });
      await create('remote', { owner: remoteOwner('remote') });
      await cp.releaseThread(await create('released', { owner: { runId: 'holder-c', pid: 3333, host } }));
      await create('expired', { owner: { runId: 'holder-d', pid: 4444, host }, leaseMs: SHORT_LEASE });
      const done = await create('done', { owner: { runId: 'holder-e', pid: 5555, host } });
      await cp.updateThread(done, { status: 'completed' });
      await sleep(SHORT_LEASE * 2);
      const byRun = (list: { runId: string }[]) => [...list].sort((x, y) => x.runId.localeCompare(y.runId));
      expect(byRun(await cp.leaseHolders!({ host }))).toEqual([a, b]);
      expect(await cp.leaseHolders!({ host, graph: 'g' })).toEqual([a]);
      expect(await cp.leaseHolders!({ host: 'elsewhere.invalid' })).toEqual([]);
    });
  });

  describe('workers: nextLeaseExpiry (capabilities.leaseExpiry)', () => {
    beforeEach(() => {
      cp = suite.cp;
    });

    it('is the earliest expiry of a lease held on a running thread (of the graph, when given), or null', async () => {
      if (await undeclared('leaseExpiry')) return;
      expect(await cp.nextLeaseExpiry!()).toBeNull();
      const long = await create('long', { leaseMs: LONG_LEASE * 2, metadata: { graph: 'g' } });
      const short = await create('short', { leaseMs: LONG_LEASE });
      const done = await create('done', { leaseMs: 1_000 });
      await cp.updateThread(done, { status: 'completed' });
      await cp.releaseThread(await create('free', { leaseMs: 1_000 }));
      expect(await cp.nextLeaseExpiry!()).toBe(short.expiresAt);
      expect(await cp.nextLeaseExpiry!('g')).toBe(long.expiresAt);
      expect(await cp.nextLeaseExpiry!('other')).toBeNull();
    });
  });

  describe('workers: subscribeRunnable (capabilities.wakeUps)', () => {
    beforeEach(() => {
      cp = suite.cp;
    });

    /** Waits until `heard` holds `id` (wake-ups may arrive a moment after the release). */
    async function until(heard: string[], id: string): Promise<void> {
      for (let i = 0; i < 200 && !heard.includes(id); i++) await sleep(10);
      expect(heard, `a wake-up for ${id}`).toContain(id);
    }

    it('tells a listener of a running thread whose lease is released, not of a finished one; unsubscribing stops it', async () => {
      if (await undeclared('wakeUps')) return;
      const heard: string[] = [];
      const unsubscribe = await cp.subscribeRunnable!((threadId) => heard.push(threadId));
      try {
        await cp.releaseThread(await create('runnable'));
        await until(heard, 'runnable');
        const done = await create('done');
        await cp.updateThread(done, { status: 'completed' });
        await cp.releaseThread(done);
        // Wake-ups come in the order of the releases: once the next one is heard, the finished one was not.
        await cp.releaseThread(await create('marker'));
        await until(heard, 'marker');
        expect(heard).not.toContain('done');
      } finally {
        await unsubscribe();
      }
      await cp.releaseThread(await create('after'));
      await sleep(100);
      expect(heard).not.toContain('after');
    });
  });
}
