/**
 * A worker's sleep is cut short by every wake-up, including one that arrives while
 * it is still claiming or asking for the earliest lease expiry (the window in which
 * a wake-up used to be lost until the next slow poll), and a claim that fails is
 * reported and tried again rather than swallowed; a process of this host that holds
 * a thread and dies wakes it too, and one already dead when the worker starts is named
 * in its first claim.
 */
import { spawn } from 'node:child_process';
import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineState, field, graph, START, END, Worker } from '../../src/index.js';
import { memory } from '../../src/engines/memory/index.js';
import type { Engine } from '../../src/contracts/engine.js';
import type { Checkpointer } from '../../src/contracts/checkpointer.js';

const State = defineState({ fields: { n: field.model(z.number(), { default: 0 }) } });

function appOn(engine: Engine) {
  return graph(State)
    .node('step', (s) => ({ n: s.n + 1 }))
    .edge(START, 'step')
    .edge('step', END)
    .compile({ engine, name: 'wakeups' });
}

/** The engine with some checkpointer methods replaced (the rest still the real memory engine). */
function withCheckpointer(engine: Engine, overrides: Partial<Checkpointer>): Engine {
  const checkpointer = new Proxy(engine.checkpointer, {
    get: (target, key, receiver) => {
      if (key in overrides) return overrides[key as keyof Checkpointer];
      const value: unknown = Reflect.get(target, key, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return Object.assign(Object.create(Object.getPrototypeOf(engine)), engine, { checkpointer });
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

const HOUR = 3_600_000;

describe('worker wake-ups', () => {
  it('a run submitted while the worker asks for the lease expiry starts at once, not after the poll', async () => {
    const engine = memory();
    const asked = deferred();
    const answer = deferred();
    let calls = 0;
    const real = engine.checkpointer;
    const wrapped = withCheckpointer(engine, {
      nextLeaseExpiry: async (graphName?: string) => {
        if (calls++ === 0) {
          asked.resolve();
          await answer.promise;
        }
        return real.nextLeaseExpiry!(graphName);
      },
    });
    const done: string[] = [];
    const worker = new Worker(appOn(wrapped), { pollMs: HOUR, onRun: (r) => done.push(`${r.threadId}:${r.status}`) });
    const running = worker.run();
    await asked.promise;
    // The wake-up lands now, while the worker waits for the expiry.
    await appOn(engine).submit({ thread: 'late', input: {} });
    answer.resolve();
    for (let i = 0; i < 200 && !done.length; i++) await new Promise((r) => setTimeout(r, 10));
    expect(done).toEqual(['late:completed']);
    await worker.stop();
    await running;
  });

  it('stop() in that same window ends the worker at once', async () => {
    const engine = memory();
    const asked = deferred();
    const answer = deferred();
    const real = engine.checkpointer;
    const wrapped = withCheckpointer(engine, {
      nextLeaseExpiry: async (graphName?: string) => {
        asked.resolve();
        await answer.promise;
        return real.nextLeaseExpiry!(graphName);
      },
    });
    const worker = new Worker(appOn(wrapped), { pollMs: HOUR });
    const running = worker.run();
    await asked.promise;
    const stopped = worker.stop();
    answer.resolve();
    let ended = false;
    void running.then(() => (ended = true));
    for (let i = 0; i < 200 && !ended; i++) await new Promise((r) => setTimeout(r, 10));
    expect(ended).toBe(true);
    await stopped;
  });

  it('a failed claim is reported through onError and tried again', async () => {
    const engine = memory();
    const real = engine.checkpointer;
    let failures = 2;
    const wrapped = withCheckpointer(engine, {
      claimThreads: async (request) => {
        if (failures > 0) {
          failures--;
          throw new Error('database unreachable');
        }
        return real.claimThreads!(request);
      },
    });
    await appOn(engine).submit({ thread: 'waiting', input: {} });
    const errors: string[] = [];
    const done: string[] = [];
    const worker = new Worker(appOn(wrapped), { pollMs: 50, onError: (e) => errors.push((e as Error).message), onRun: (r) => done.push(`${r.threadId}:${r.status}`) });
    const running = worker.run();
    for (let i = 0; i < 300 && !done.length; i++) await new Promise((r) => setTimeout(r, 10));
    expect(errors).toEqual(['database unreachable', 'database unreachable']);
    expect(done).toEqual(['waiting:completed']);
    await worker.stop();
    await running;
  });

  it('a thread held by a process of this host is left alone while it lives and taken over as soon as it is SIGKILLed, not when its hour-long lease ends', async () => {
    const engine = memory();
    const app = appOn(engine);
    await app.submit({ thread: 'orphan', input: {} });
    const done: string[] = [];
    const worker = new Worker(appOn(engine), { pollMs: HOUR, onRun: (r) => done.push(`${r.threadId}:${r.status}`) });
    const running = worker.run();
    const holder = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    try {
      const lease = await engine.checkpointer.acquireThread('orphan', { owner: { runId: 'crashing-run', pid: holder.pid!, host: hostname() }, leaseMs: HOUR });
      // Past the worker's next listing of holders: it watches the process, and takes nothing from it.
      await new Promise((r) => setTimeout(r, 1_500));
      expect(done).toEqual([]);
      expect((await engine.checkpointer.renewLease(lease, HOUR)).epoch).toBe(lease.epoch);
      holder.kill('SIGKILL');
      await new Promise((r) => holder.once('exit', r));
      const killedAt = Date.now();
      for (let i = 0; i < 500 && !done.length; i++) await new Promise((r) => setTimeout(r, 10));
      expect(done).toEqual(['orphan:completed']);
      expect(Date.now() - killedAt).toBeLessThan(3_000);
    } finally {
      holder.kill('SIGKILL');
      await worker.stop();
      await running;
    }
  });

  it('a worker started after a holder of this host died takes its thread in its first claim, without a claim that misses it first', async () => {
    const engine = memory();
    await appOn(engine).submit({ thread: 'orphan', input: {} });
    const holder = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    await engine.checkpointer.acquireThread('orphan', { owner: { runId: 'crashed-run', pid: holder.pid!, host: hostname() }, leaseMs: HOUR });
    holder.kill('SIGKILL');
    await new Promise((r) => holder.once('exit', r));
    const real = engine.checkpointer;
    const claims: string[][] = [];
    const wrapped = withCheckpointer(engine, {
      claimThreads: async (request) => {
        claims.push((request.deadHolders ?? []).map((h) => h.runId));
        return real.claimThreads!(request);
      },
    });
    const done: string[] = [];
    const worker = new Worker(appOn(wrapped), { pollMs: HOUR, onRun: (r) => done.push(`${r.threadId}:${r.status}`) });
    const running = worker.run();
    try {
      for (let i = 0; i < 300 && !done.length; i++) await new Promise((r) => setTimeout(r, 10));
      expect(done).toEqual(['orphan:completed']);
      expect(claims[0]).toEqual(['crashed-run']);
    } finally {
      await worker.stop();
      await running;
    }
  });
});
