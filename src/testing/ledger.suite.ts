/**
 * @module testing/ledger.suite
 * The conformance suite of the {@link Ledger} contract: first write wins for
 * intents and records, an outcome lands once, records can be discarded but
 * effects never, discards are fenced by the run's lease, entries are per thread,
 * writes for a missing thread store nothing, a record's meta (its kind, model, tokens,
 * latency) reads back as written. Every engine runs it.
 *
 * Each test gets a fresh engine from `create()`; the threads it writes under are
 * created through the engine's checkpointer first (a ledger entry belongs to a thread).
 *
 * @example
 * ```ts
 * import { ledgerSuite } from 'cairn/testing';
 * import { memory } from 'cairn/memory';
 * ledgerSuite({ name: 'memory', create: () => memory() });
 * ```
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { Engine } from '../contracts/engine.js';
import { expectError, freshEnginePerTest, sleep, type EngineSuiteOptions } from './suite-kit.js';
import type { Ledger, LedgerEntry, NewLedgerEntry, RecordMeta } from '../contracts/ledger.js';
import type { ThreadLease } from '../contracts/threads.js';
import { EngineClosedError, InvalidOptionError, LeaseLostError, ThreadNotFoundError } from '../errors.js';
import { callFor, LEDGER_CALLS } from './contract-calls.js';

/** Options of {@link ledgerSuite}. */
export type LedgerSuiteOptions = EngineSuiteOptions;

const T0 = 1_700_000_000_000;
const REMOTE_HOST = 'cairn-suite.remote.invalid';
/** Short enough to wait out in a test, long enough to act within. */
const SHORT_LEASE = 40;

/** A new effect entry; override any field. Defaults: thread t1, root ns, seq 0, task `n:0`, call 0. */
function effect(key: string, extra: Partial<NewLedgerEntry> = {}): NewLedgerEntry {
  return {
    threadId: 't1',
    key,
    kind: 'effect',
    name: 'put_object',
    ns: '',
    seq: 0,
    node: 'n',
    task: 'n:0',
    call: 0,
    argsDigest: 'a'.repeat(64),
    createdAt: T0,
    ...extra,
  };
}

/** A new record entry with its outcome. */
function record(key: string, outcome: string, extra: Partial<NewLedgerEntry> = {}): NewLedgerEntry & { outcome: string } {
  return { ...effect(key, { kind: 'record', name: 'model', argsDigest: null, ...extra }), outcome };
}

/**
 * Registers the Ledger conformance tests for one engine.
 *
 * @example `ledgerSuite({ name: 'sqlite', create: () => sqlite(tempFile()) })`
 */
export function ledgerSuite(options: LedgerSuiteOptions): void {
  describe(`Ledger conformance: ${options.name}`, () => {
    const testEngine = freshEnginePerTest(options, 'ledgerSuite');
    let engine: Engine;
    let ledger: Ledger;
    /** The live lease of each thread the tests write under. */
    let leases: Record<'t1' | 't2', ThreadLease>;

    /** Creates a thread held by a run on a remote host (its liveness judged by lease expiry alone). */
    const createThread = (id: string, leaseMs = 60_000) =>
      engine.checkpointer.acquireThread(id, {
        owner: { runId: `ledger-suite-${id}-${Math.random().toString(36).slice(2)}`, pid: 4242, host: REMOTE_HOST },
        leaseMs,
        create: { kind: 'task', tenant: null, metadata: {} },
      });

    beforeEach(async () => {
      engine = testEngine();
      ledger = engine.ledger;
      leases = { t1: await createThread('t1'), t2: await createThread('t2') };
    });

    describe('intents and outcomes', () => {
      it('writeIntent stores an intent and returns the stored entry', async () => {
        const entry = effect('k1');
        const stored = await ledger.writeIntent(entry);
        const expected: LedgerEntry = { ...entry, status: 'intent', outcome: null, completedAt: null };
        expect(stored).toEqual(expected);
        expect(await ledger.get('t1', 'k1')).toEqual(expected);
      });

      it('writeIntent is insert-if-absent: a second write returns the first entry unchanged', async () => {
        const first = await ledger.writeIntent(effect('k1'));
        const second = await ledger.writeIntent(effect('k1', { name: 'other', argsDigest: 'b'.repeat(64), call: 9, createdAt: T0 + 5 }));
        expect(second).toEqual(first);
        expect(await ledger.get('t1', 'k1')).toEqual(first);
        expect(await ledger.list('t1')).toHaveLength(1);
      });

      it('writeIntent on a done entry returns the done entry', async () => {
        await ledger.writeIntent(effect('k1'));
        await ledger.writeOutcome('t1', 'k1', '{"ok":true}', T0 + 10);
        const again = await ledger.writeIntent(effect('k1'));
        expect(again).toMatchObject({ status: 'done', outcome: '{"ok":true}', completedAt: T0 + 10 });
      });

      it('writeOutcome turns an intent into done, with its outcome and time', async () => {
        await ledger.writeIntent(effect('k1'));
        await ledger.writeOutcome('t1', 'k1', '{"ref":"x"}', T0 + 10);
        expect(await ledger.get('t1', 'k1')).toEqual({ ...effect('k1'), status: 'done', outcome: '{"ref":"x"}', completedAt: T0 + 10 });
      });

      it('a second writeOutcome is ignored: the first observation stands', async () => {
        await ledger.writeIntent(effect('k1'));
        await ledger.writeOutcome('t1', 'k1', '"first"', T0 + 10);
        await ledger.writeOutcome('t1', 'k1', '"second"', T0 + 20);
        expect(await ledger.get('t1', 'k1')).toMatchObject({ status: 'done', outcome: '"first"', completedAt: T0 + 10 });
      });

      it('writeOutcome for a key with no entry creates nothing', async () => {
        await ledger.writeOutcome('t1', 'nothing', '"x"', T0);
        expect(await ledger.get('t1', 'nothing')).toBeNull();
        expect(await ledger.list('t1')).toEqual([]);
      });
    });

    describe('records', () => {
      it('writeRecord stores a done record with its outcome', async () => {
        const stored = await ledger.writeRecord(record('r1', '{"text":"hello"}'));
        expect(stored).toMatchObject({ ...record('r1', '{"text":"hello"}'), status: 'done' });
        expect(typeof stored.completedAt).toBe('number');
        expect(await ledger.get('t1', 'r1')).toEqual(stored);
      });

      it('writeRecord is insert-if-absent: a second write returns the first entry unchanged', async () => {
        const first = await ledger.writeRecord(record('r1', '"first"'));
        const second = await ledger.writeRecord(record('r1', '"second"', { name: 'clock', createdAt: T0 + 9 }));
        expect(second).toEqual(first);
        expect(await ledger.get('t1', 'r1')).toEqual(first);
      });

      it('the first write of a key wins across kinds', async () => {
        const intent = await ledger.writeIntent(effect('k'));
        expect(await ledger.writeRecord(record('k', '"r"'))).toEqual(intent);
        const rec = await ledger.writeRecord(record('r', '"r"'));
        expect(await ledger.writeIntent(effect('r'))).toEqual(rec);
      });

      it('writeOutcome on a record is ignored', async () => {
        const stored = await ledger.writeRecord(record('r1', '"kept"'));
        await ledger.writeOutcome('t1', 'r1', '"replaced"', T0 + 50);
        expect(await ledger.get('t1', 'r1')).toEqual(stored);
      });
    });

    describe('record meta', () => {
      const modelCall: RecordMeta = { kind: 'model', model: 'gpt-5-mini', provider: 'openai', usage: { inputTokens: 812, outputTokens: 64, totalTokens: 876 }, latencyMs: 930 };

      it('a record written with meta reads back with it, from get, list and listForTask', async () => {
        const stored = await ledger.writeRecord({ ...record('r1', '{"text":"hi"}'), meta: modelCall });
        expect(stored.meta).toEqual(modelCall);
        expect((await ledger.get('t1', 'r1'))?.meta).toEqual(modelCall);
        expect((await ledger.list('t1'))[0]?.meta).toEqual(modelCall);
        expect((await ledger.listForTask('t1', '', 0, 'n:0'))[0]?.meta).toEqual(modelCall);
      });

      it('each kind is kept, with only the fields given; an entry written without meta reads without one', async () => {
        await ledger.writeRecord({ ...record('tool', '1'), meta: { kind: 'tool', tool: 'weather', latencyMs: 0 } });
        await ledger.writeRecord({ ...record('clock', '2', { call: 1 }), meta: { kind: 'other' } });
        await ledger.writeRecord(record('plain', '3', { call: 2 }));
        await ledger.writeIntent(effect('eff', { call: 3 }));
        expect((await ledger.get('t1', 'tool'))?.meta).toEqual({ kind: 'tool', tool: 'weather', latencyMs: 0 });
        expect((await ledger.get('t1', 'clock'))?.meta).toEqual({ kind: 'other' });
        expect(await ledger.get('t1', 'plain')).not.toHaveProperty('meta');
        expect(await ledger.get('t1', 'eff')).not.toHaveProperty('meta');
      });

      it('meta is part of the first write: a second write of the key does not change it', async () => {
        await ledger.writeRecord({ ...record('r1', '"first"'), meta: modelCall });
        const again = await ledger.writeRecord({ ...record('r1', '"second"'), meta: { kind: 'other', latencyMs: 1 } });
        expect(again.meta).toEqual(modelCall);
        await ledger.writeRecord(record('r2', '"bare"', { call: 1 }));
        expect(await ledger.writeRecord({ ...record('r2', '"again"', { call: 1 }), meta: modelCall })).not.toHaveProperty('meta');
      });

      it('the stored meta is a copy: changing the object written, or one read, changes nothing stored', async () => {
        const meta: RecordMeta = { kind: 'model', usage: { inputTokens: 1 } };
        const stored = await ledger.writeRecord({ ...record('r1', '1'), meta });
        meta.usage!.inputTokens = 999;
        stored.meta!.usage!.inputTokens = 998;
        expect((await ledger.get('t1', 'r1'))?.meta).toEqual({ kind: 'model', usage: { inputTokens: 1 } });
      });

      it('a meta with an unknown kind, a non-numeric count or a tool name that is not a string is InvalidOptionError and stores nothing', async () => {
        await expectError(() => ledger.writeRecord({ ...record('r1', '1'), meta: { kind: 'llm' } as unknown as RecordMeta }), InvalidOptionError);
        await expectError(() => ledger.writeRecord({ ...record('r2', '1'), meta: { kind: 'model', usage: { inputTokens: '12' } } as unknown as RecordMeta }), InvalidOptionError);
        await expectError(() => ledger.writeRecord({ ...record('r3', '1'), meta: { kind: 'model', latencyMs: Number.NaN } }), InvalidOptionError);
        await expectError(() => ledger.writeRecord({ ...record('r4', '1'), meta: { kind: 'tool', tool: 7 } as unknown as RecordMeta }), InvalidOptionError);
        expect(await ledger.list('t1')).toEqual([]);
      });
    });

    describe('reading', () => {
      it('get returns null for a missing key or thread', async () => {
        await ledger.writeIntent(effect('k1'));
        expect(await ledger.get('t1', 'k2')).toBeNull();
        expect(await ledger.get('missing', 'k1')).toBeNull();
      });

      it('listForTask returns one task\'s entries of one step, ordered by call', async () => {
        await ledger.writeIntent(effect('c2', { call: 2, createdAt: T0 }));
        await ledger.writeRecord(record('c0', '"zero"', { call: 0, createdAt: T0 + 1 }));
        await ledger.writeIntent(effect('c1', { call: 1, createdAt: T0 + 2 }));
        // Same task at another step, another task, another namespace, another thread.
        await ledger.writeIntent(effect('other-seq', { seq: 1 }));
        await ledger.writeIntent(effect('other-task', { task: 'n:1' }));
        await ledger.writeIntent(effect('other-ns', { ns: 'child|n:0' }));
        await ledger.writeIntent(effect('other-thread', { threadId: 't2' }));

        expect((await ledger.listForTask('t1', '', 0, 'n:0')).map((e) => [e.key, e.call])).toEqual([
          ['c0', 0],
          ['c1', 1],
          ['c2', 2],
        ]);
        expect((await ledger.listForTask('t1', '', 1, 'n:0')).map((e) => e.key)).toEqual(['other-seq']);
        expect((await ledger.listForTask('t1', 'child|n:0', 0, 'n:0')).map((e) => e.key)).toEqual(['other-ns']);
        expect(await ledger.listForTask('t1', '', 0, 'none:0')).toEqual([]);
        expect(await ledger.listForTask('missing', '', 0, 'n:0')).toEqual([]);
      });

      it('list returns a thread\'s entries oldest first', async () => {
        const keys = ['e0', 'r1', 'e2', 'r3', 'e4'];
        for (const [i, key] of keys.entries()) {
          if (key.startsWith('e')) await ledger.writeIntent(effect(key, { createdAt: T0 + i, seq: i, call: 0 }));
          else await ledger.writeRecord(record(key, `${i}`, { createdAt: T0 + i, seq: i, call: 0 }));
        }
        await ledger.writeIntent(effect('elsewhere', { threadId: 't2' }));
        expect((await ledger.list('t1')).map((e) => e.key)).toEqual(keys);
        expect(await ledger.list('missing')).toEqual([]);
      });
    });

    describe('discardRecords', () => {
      it('deletes the named records and never an effect', async () => {
        await ledger.writeRecord(record('r1', '1'));
        await ledger.writeRecord(record('r2', '2', { call: 1 }));
        await ledger.writeRecord(record('r3', '3', { call: 2 }));
        await ledger.writeIntent(effect('e1', { call: 3 }));
        await ledger.writeIntent(effect('e2', { call: 4 }));
        await ledger.writeOutcome('t1', 'e2', '"done"', T0 + 1);

        await ledger.discardRecords(leases.t1, ['r1', 'r3', 'e1', 'e2', 'no-such-key']);
        expect(await ledger.get('t1', 'r1')).toBeNull();
        expect(await ledger.get('t1', 'r3')).toBeNull();
        expect(await ledger.get('t1', 'r2')).toMatchObject({ outcome: '2' });
        expect(await ledger.get('t1', 'e1')).toMatchObject({ status: 'intent' });
        expect(await ledger.get('t1', 'e2')).toMatchObject({ status: 'done', outcome: '"done"' });
        expect((await ledger.list('t1')).map((e) => e.key).sort()).toEqual(['e1', 'e2', 'r2']);
      });

      it('lets a discarded record be written again with a new outcome', async () => {
        await ledger.writeRecord(record('r1', '"old"'));
        await ledger.discardRecords(leases.t1, ['r1']);
        expect(await ledger.writeRecord(record('r1', '"new"'))).toMatchObject({ outcome: '"new"' });
      });

      it('accepts an empty key list', async () => {
        await ledger.writeRecord(record('r1', '1'));
        await ledger.discardRecords(leases.t1, []);
        expect(await ledger.get('t1', 'r1')).not.toBeNull();
      });
    });

    describe('discardRecords is fenced by the lease', () => {
      it('a lease lost to a takeover throws LeaseLostError and deletes nothing; the successor discards', async () => {
        const stale = await createThread('t3', SHORT_LEASE);
        await ledger.writeRecord(record('r1', '"kept"', { threadId: 't3' }));
        await ledger.writeRecord(record('r2', '"kept too"', { threadId: 't3', call: 1 }));
        await sleep(SHORT_LEASE * 2);
        const fresh = await engine.checkpointer.acquireThread('t3', { owner: { runId: 'successor', pid: 4242, host: REMOTE_HOST }, leaseMs: 60_000 });
        const error = await expectError(() => ledger.discardRecords(stale, ['r1', 'r2']), LeaseLostError);
        expect(error.threadId).toBe('t3');
        expect((await ledger.list('t3')).map((e) => e.key)).toEqual(['r1', 'r2']);
        // Even an empty list is checked.
        await expectError(() => ledger.discardRecords(stale, []), LeaseLostError);
        await ledger.discardRecords(fresh, ['r1']);
        expect((await ledger.list('t3')).map((e) => e.key)).toEqual(['r2']);
      });

      it('a released lease throws LeaseLostError and deletes nothing', async () => {
        await ledger.writeRecord(record('r1', '"kept"'));
        await engine.checkpointer.releaseThread(leases.t1);
        await expectError(() => ledger.discardRecords(leases.t1, ['r1']), LeaseLostError);
        expect(await ledger.get('t1', 'r1')).toMatchObject({ outcome: '"kept"' });
      });

      it("the lease of a deleted thread throws LeaseLostError; another thread's lease deletes nothing of this one", async () => {
        await ledger.writeRecord(record('r', '"t2"', { threadId: 't2' }));
        // A lease names its thread: t1's lease discards t1's records only.
        await ledger.discardRecords(leases.t1, ['r']);
        expect(await ledger.get('t2', 'r')).toMatchObject({ outcome: '"t2"' });
        await engine.checkpointer.deleteThread('t1', { lease: leases.t1 });
        await expectError(() => ledger.discardRecords(leases.t1, ['r']), LeaseLostError);
        expect(await ledger.get('t2', 'r')).toMatchObject({ outcome: '"t2"' });
      });
    });

    describe('a missing thread', () => {
      it('writeIntent, writeRecord and writeOutcome for a thread that does not exist throw ThreadNotFoundError and store nothing', async () => {
        await expectError(() => ledger.writeIntent(effect('k', { threadId: 'missing' })), ThreadNotFoundError);
        await expectError(() => ledger.writeRecord(record('r', '1', { threadId: 'missing' })), ThreadNotFoundError);
        await expectError(() => ledger.writeOutcome('missing', 'k', '1', T0), ThreadNotFoundError);
        expect(await ledger.list('missing')).toEqual([]);
        expect(await ledger.get('missing', 'k')).toBeNull();
      });
    });

    describe('threads', () => {
      it('keeps entries per thread: the same key in two threads is independent', async () => {
        await ledger.writeIntent(effect('k', { threadId: 't1', name: 'one' }));
        const second = await ledger.writeIntent(effect('k', { threadId: 't2', name: 'two' }));
        expect(second).toMatchObject({ threadId: 't2', name: 'two', status: 'intent' });

        await ledger.writeOutcome('t1', 'k', '"t1 outcome"', T0 + 1);
        expect(await ledger.get('t1', 'k')).toMatchObject({ name: 'one', status: 'done', outcome: '"t1 outcome"' });
        expect(await ledger.get('t2', 'k')).toMatchObject({ name: 'two', status: 'intent', outcome: null });

        await ledger.writeRecord(record('r', '"t1"', { threadId: 't1' }));
        await ledger.writeRecord(record('r', '"t2"', { threadId: 't2' }));
        await ledger.discardRecords(leases.t1, ['r']);
        expect(await ledger.get('t1', 'r')).toBeNull();
        expect(await ledger.get('t2', 'r')).toMatchObject({ outcome: '"t2"' });
        expect((await ledger.list('t2')).map((e) => e.threadId)).toEqual(['t2', 't2']);
      });
    });

    describe('lifecycle', () => {
      it('throws EngineClosedError after engine.close()', async () => {
        await ledger.writeIntent(effect('k1'));
        await engine.close();
        const calls: [string, () => Promise<unknown>][] = [
          ['get', () => ledger.get('t1', 'k1')],
          ['list', () => ledger.list('t1')],
          ['listForTask', () => ledger.listForTask('t1', '', 0, 'n:0')],
          ['writeIntent', () => ledger.writeIntent(effect('k2'))],
          ['writeOutcome', () => ledger.writeOutcome('t1', 'k1', '1', T0)],
          ['writeRecord', () => ledger.writeRecord(record('r', '1'))],
          ['discardRecords', () => ledger.discardRecords(leases.t1, ['k1'])],
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

      it('every method the contract names (the list is derived from it) throws EngineClosedError after close()', async () => {
        await engine.close();
        for (const [method, entry] of Object.entries(LEDGER_CALLS)) {
          const call = callFor(entry, engine);
          if (typeof call === 'string') continue;
          const caught = await call({ engine, lease: leases.t1 }).then(
            () => undefined,
            (error: unknown) => error,
          );
          expect((caught as { code?: string } | undefined)?.code, `${method} after close`).toBe(EngineClosedError.code);
        }
      });
    });
  });
}
