/**
 * The storage-fault layer (`withFaults` in cairn/testing) and what the contracts promise
 * under it, on memory, SQLite and PostgreSQL:
 * - it routes every method of the three contracts (the list is the contracts', see
 *   src/testing/contract-calls.ts), passes capabilities through, and hits what a rule names;
 * - a run hit by a fault at ANY storage call of a clean run (each one in turn: failed,
 *   or completed and then timed out) stops with a typed error or goes on, and running
 *   the thread again completes it with every step once and every keyed effect applied
 *   once (counted per key by the external system);
 * - a fault that lasts (every call from the Nth on) fails every run typed while it lasts,
 *   and the thread completes once it is over.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/contracts/engine.js';
import { memory } from '../../src/engines/memory/index.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { EngineError, InvalidOptionError, NotSupportedError } from '../../src/errors.js';
import { callFixture, contractCalls } from '../../src/testing/contract-calls.js';
import { InjectedFault, withFaults, type FaultKind } from '../../src/testing/faults.js';
import { usePostgresSchema } from '../helpers/postgres.js';
import { External, expectEveryStepOnce, expectTypedErrors, keyedApp, runUntilComplete } from './keyed-graph.js';

const pg = usePostgresSchema();
const dir = mkdtempSync(join(tmpdir(), 'cairn-faults-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Kind = 'memory' | 'sqlite' | 'postgres';
let files = 0;
function open(kind: Kind): Engine {
  if (kind === 'memory') return memory();
  if (kind === 'sqlite') return sqlite(join(dir, `f${files++}.db`));
  return pg.engine() as never;
}
async function engineOf(kind: Kind): Promise<Engine> {
  return kind === 'postgres' ? pg.engine() : open(kind);
}

/** The op a contract-calls entry reaches: `commitStep` → `checkpointer.commitStep`; a view's call → the store's method. */
function opOf(name: string): string {
  if (name === 'store.as') return 'store.get';
  return name.includes('.') ? name : `checkpointer.${name}`;
}

describe('withFaults routes every contract method', () => {
  for (const [name, entry] of contractCalls()) {
    const local = typeof entry !== 'function' && 'local' in entry;
    it(`${name}: ${local ? 'reaches no storage, works under any fault' : 'a fault on it is the EngineError the caller gets'}`, async () => {
      const plain = memory();
      const engine = withFaults(plain);
      const fixture = await callFixture(engine);
      const call = typeof entry === 'function' ? entry : entry.call;
      if (local) {
        engine.faults.add({ op: '*', times: 'forever' });
        await expect(call(fixture)).resolves.not.toThrow();
        return;
      }
      if ('capability' in entry && !engine.checkpointer.capabilities[entry.capability]) {
        await expect(call(fixture)).rejects.toMatchObject({ code: NotSupportedError.code });
        return;
      }
      engine.faults.add({ op: opOf(name) });
      const error = await call(fixture).then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      expect(EngineError.is(error), `${name}: ${String(error)}`).toBe(true);
      expect(error!.cause).toBeInstanceOf(InjectedFault);
      expect(error!.message).toMatch(/^\[cairn\] \[memory\] \S+ failed \(EFAULT_INJECTED\)/);
      expect(engine.faults.fired).toEqual([{ op: opOf(name), n: engine.faults.count(opOf(name)), kind: 'fail' }]);
      // The fault hit once: the same call works now, as it does on the engine itself.
      if (name !== 'subscribeRunnable') await call(fixture).catch((e: unknown) => expect(EngineError.is(e), String(e)).toBe(false));
      await plain.close();
    });
  }

  it('passes the engine through: name, capabilities, a view of the store, closing', async () => {
    const plain = sqlite(join(dir, 'pass.db'));
    const engine = withFaults(plain);
    expect(engine.name).toBe('sqlite');
    expect(engine.checkpointer.capabilities).toEqual(plain.checkpointer.capabilities);
    expect(engine.store.capabilities).toEqual(plain.store.capabilities);
    expect(engine.ledger.engine).toBe('sqlite');
    await engine.store.as('tenant').put(['ns'], 'k', 1);
    expect(engine.faults.calls).toEqual(['store.as', 'store.put']);
    await engine.close();
    await expect(plain.store.get(['ns'], 'k')).rejects.toMatchObject({ code: 'ERR_ENGINE_CLOSED' });
  });

  it("a run whose release failed leaves no lease behind for this process's next run of the thread", async () => {
    const engine = withFaults(memory(), [{ op: 'checkpointer.commitStep', nth: 2 }, { op: 'checkpointer.releaseThread' }]);
    const external = new External();
    await expect(keyedApp(engine, external, { leaseMs: 60_000 }).run({ thread: 'held' })).rejects.toMatchObject({ code: EngineError.code, retryable: true });
    // Without waiting (onBusy: 'throw'): the lease the failed release left is released first.
    expect((await keyedApp(engine, external, { leaseMs: 60_000 }).run({ thread: 'held' })).status).toBe('completed');
    await expectEveryStepOnce(engine, 'held', external, 'release failed');
  });

  it.each(['memory', 'sqlite'] as const)("an acquire that took the thread and then timed out does not hold it from this process's next run (%s)", async (kind) => {
    const engine = withFaults(open(kind), [{ op: 'checkpointer.acquireThread', kind: 'commitThenTimeout' }]);
    const external = new External();
    await expect(keyedApp(engine, external, { leaseMs: 60_000 }).run({ thread: 'taken' })).rejects.toMatchObject({ code: EngineError.code, retryable: true });
    // Without waiting (onBusy: 'throw') for a 60 s lease: the run asks as the owner the lost answer granted.
    expect((await keyedApp(engine, external, { leaseMs: 60_000 }).run({ thread: 'taken' })).status).toBe('completed');
    await expectEveryStepOnce(engine, 'taken', external, 'acquire timed out');
    await engine.close();
  });

  it('refuses a rule that can hit nothing', () => {
    const engine = withFaults(memory());
    expect(() => engine.faults.add({ op: 'checkpointer.comitStep' })).toThrow(InvalidOptionError);
    expect(() => engine.faults.add({ op: 'commitStep' })).toThrow(InvalidOptionError);
    expect(() => engine.faults.add({ op: 'store.declare' })).toThrow(InvalidOptionError);
  });

  it('commitThenTimeout performs the call, then fails it; forever hits every call from the nth', async () => {
    const engine = withFaults(memory(), [
      { op: 'store.put', nth: 2, kind: 'commitThenTimeout' },
      { op: 'store.get', nth: 2, times: 'forever' },
    ]);
    await engine.store.put(['ns'], 'k', 1);
    const timedOut = await engine.store.put(['ns'], 'k', 2).catch((e: Error) => e);
    expect((timedOut as Error).cause).toMatchObject({ code: 'ETIMEDOUT' });
    expect((await engine.store.get(['ns'], 'k'))?.value).toBe(2);
    for (let i = 0; i < 3; i++) await expect(engine.store.get(['ns'], 'k')).rejects.toMatchObject({ code: 'ERR_ENGINE' });
    engine.faults.clear();
    expect((await engine.store.get(['ns'], 'k'))?.version).toBe(2);
  });
});

/** The (op, n) of every storage call a clean run of the keyed graph makes, in order. */
async function cleanRunCalls(kind: Kind): Promise<{ op: string; n: number }[]> {
  const engine = withFaults(await engineOf(kind));
  const external = new External();
  try {
    const result = await keyedApp(engine, external).run({ thread: 'clean' });
    expect(result.status).toBe('completed');
    await expectEveryStepOnce(engine, 'clean', external, `${kind} clean run`);
    const seen = new Map<string, number>();
    const calls: { op: string; n: number }[] = [];
    // Calls the checks above made are not the run's: the run ended with its release.
    const end = engine.faults.calls.lastIndexOf('checkpointer.releaseThread') + 1;
    for (const op of engine.faults.calls.slice(0, end)) {
      const n = (seen.get(op) ?? 0) + 1;
      seen.set(op, n);
      // Renewals come from a timer, not from the run's sequence; declarations and views reach nothing.
      if (!['checkpointer.renewLease', 'store.as', 'store.declare'].includes(op)) calls.push({ op, n });
    }
    return calls;
  } finally {
    await engine.close();
  }
}

/** Writes only: on PostgreSQL a case costs a few round trips each, and writes are where an ambiguous answer matters. */
const WRITES = /acquireThread|updateThread|commitStep|putPendingWrite|releaseThread|write|store\.(put|batch|delete)|discardRecords|consumeSignal/;

/**
 * Where each kind of fault is tried: memory at every call, both ways; SQLite and
 * PostgreSQL at every write completed then timed out (the ambiguous answer, where what
 * the database really holds matters; a write that fails outright leaves it as it was,
 * which memory shows, and the live faults in postgres-faults.test.ts cause for real),
 * to keep the file's time down. Then faults that last, on the ops given.
 */
const AT_ONCE = 5;

const LASTING = [['checkpointer.commitStep', 2], ['ledger.writeOutcome', 2], ['store.batch', 1]] as const;
const PLANS: [Kind, FaultKind[], RegExp | undefined, readonly (typeof LASTING)[number][]][] = [
  ['memory', ['fail', 'commitThenTimeout'], undefined, LASTING],
  ['sqlite', ['commitThenTimeout'], WRITES, LASTING],
  ['postgres', ['commitThenTimeout'], WRITES, LASTING.slice(0, 2)],
];

describe.each(PLANS)('a fault at any storage call of a run, on %s', (kind, faults, only, lasting) => {
  let calls: { op: string; n: number }[] = [];
  beforeAll(async () => {
    calls = await cleanRunCalls(kind);
    if (only) calls = calls.filter((c) => only.test(c.op));
  });

  it.each(faults)('%s: the run stops typed or goes on; a rerun completes with every step once, every keyed effect applied once', async (fault: FaultKind) => {
    expect(calls.length).toBeGreaterThan(10);
    console.log(`[${kind}] ${fault} at each of ${calls.length} calls`);
    const base = await engineOf(kind);
    const external = new External();
    let recovered = 0;
    try {
      // Each case on a thread of its own through a fault layer of its own, a few at once:
      // the cases share nothing but the engine (and the external system, keyed by thread).
      const one = async ({ op, n }: { op: string; n: number }, i: number) => {
        const label = `${kind}: ${fault} at ${op} #${n}`;
        const thread = `t${i}`;
        const engine = withFaults(base, [{ op, nth: n, kind: fault }]);
        const recovery = await runUntilComplete(() => keyedApp(engine, external, { leaseMs: 300 }), thread);
        expect(recovery.status, `${label}: ${recovery.errors.map(String).join('; ')}`).toBe('completed');
        expect(engine.faults.fired, label).toHaveLength(1);
        expectTypedErrors(recovery.errors, label);
        if (recovery.runs > 1) recovered++;
        await expectEveryStepOnce(base, thread, external, label);
      };
      for (let i = 0; i < calls.length; i += AT_ONCE) await Promise.all(calls.slice(i, i + AT_ONCE).map((call, j) => one(call, i + j)));
    } finally {
      await base.close();
    }
    // Most faults stop the run (the rest hit calls whose failure a run absorbs: a release, a graph description).
    expect(recovered).toBeGreaterThan(calls.length / 2);
  });

  it('a fault that lasts fails every run typed; the thread completes once it is over', async () => {
    const base = await engineOf(kind);
    const external = new External();
    try {
      for (const [op, nth] of lasting) {
        const thread = `lasting-${op}`;
        const engine = withFaults(base, [{ op, nth, times: 'forever' }]);
        const recovery = await runUntilComplete(() => keyedApp(engine, external), thread, 6, (run) => {
          if (run === 3) engine.faults.clear();
        });
        expect(recovery.status, `${op}: ${recovery.errors.map(String).join('; ')}`).toBe('completed');
        expect(recovery.runs, op).toBe(4);
        expectTypedErrors(recovery.errors, op);
        await expectEveryStepOnce(base, thread, external, `lasting fault at ${op}`);
      }
    } finally {
      await base.close();
    }
  });
});
