/**
 * @module testing/checkpointer/threads
 * Checkpointer conformance. Thread records: patches, failures, listing with every filter and both
 * orders, paging, id validation, hostile metadata, and times given by an import.
 * Registered by {@link checkpointerSuite}, inside its describe block.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { Checkpointer } from '../../contracts/checkpointer.js';
import type { ThreadKind, ThreadLease, ThreadQuery, ThreadStatus } from '../../contracts/threads.js';
import { InvalidKeyError, InvalidOptionError } from '../../errors.js';
import { commitOf, expectError, linearPosition, LONG_LEASE, remoteOwner, SHORT_LEASE, sleep } from './fixtures.js';
import type { CheckpointerSuiteContext } from './context.js';

/** Registers the tests of this feature. */
export function threadTests(suite: CheckpointerSuiteContext): void {
  const { create, commitLine } = suite;
  let cp: Checkpointer;

  describe('thread records', () => {
    beforeEach(() => {
      cp = suite.cp;
    });

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
    beforeEach(() => {
      cp = suite.cp;
    });

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
      await threads([{ id: 'a', tenant: 'acme' }, { id: 'b', tenant: null }, { id: 'd', tenant: null }]);
      expect(await ids({ tenant: null })).toEqual(['b', 'd']);
      // '' is no tenant a thread can be created with, and not taken for null either.
      expect(await ids({ tenant: '' })).toEqual([]);
      expect(await ids({ tenant: 'acme' })).toEqual(['a']);
    });

    it('a new thread with an unknown kind, an empty or over-long tenant, or metadata that is not plain JSON is refused, and nothing is created', async () => {
      for (const create of [
        { kind: 'bogus', tenant: null, metadata: {} },
        { kind: 'task', tenant: '', metadata: {} },
        { kind: 'task', tenant: 'x'.repeat(257), metadata: {} },
        { kind: 'task', tenant: null, metadata: { f: 10n } },
        { kind: 'task', tenant: null, metadata: { f: () => 1 } },
      ]) {
        const error = await cp.acquireThread('t', { owner: remoteOwner(), leaseMs: LONG_LEASE, create: create as never }).then(
          () => null,
          (e: unknown) => e,
        );
        expect(InvalidOptionError.is(error) || InvalidKeyError.is(error), JSON.stringify(create, (_k, v: unknown) => (typeof v === 'bigint' ? `${v}n` : v))).toBe(true);
      }
      expect(await cp.getThread('t')).toBeNull();
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

    it("order 'updatedAt' by the root heads' times: within one second and across seconds, paged, bounded, a child's head left out", async () => {
      // Each thread's row is older than its head, so its updatedAt is its head's time.
      const heads: [string, number[]][] = [
        ['h1', [5_999]],
        ['h2', [5_001]],
        ['h3', [6_000]],
        ['h4', [5_500, 7_250]], // moved on to a later second by its second commit
        ['h5', [5_500]],
        ['h6', [4_999]],
      ];
      const leases = new Map<string, ThreadLease>();
      for (const [id, times] of heads) {
        const lease = await cp.acquireThread(id, { owner: remoteOwner(), leaseMs: LONG_LEASE, create: { kind: 'task', tenant: null, metadata: {}, createdAt: 1_000 } });
        leases.set(id, lease);
        for (const [seq, createdAt] of times.entries()) await cp.commitStep(lease, commitOf(linearPosition(seq, { createdAt }), seq === 0 ? null : seq - 1));
        if (id === 'h6') {
          // A child run's head, newer than everything: never the thread's updatedAt.
          await cp.commitStep(lease, commitOf(linearPosition(0, { ns: 'sub:0@1', createdAt: 9_000 }), null));
        }
      }
      const expected = ['h4', 'h3', 'h1', 'h5', 'h2', 'h6'];
      const all = await cp.listThreads({ order: 'updatedAt' });
      expect(all.map((t) => t.id)).toEqual(expected);
      expect(all.map((t) => t.updatedAt)).toEqual([7_250, 6_000, 5_999, 5_500, 5_001, 4_999]);
      for (const size of [1, 2, 4]) {
        const seen: string[] = [];
        for (let page = await cp.listThreads({ order: 'updatedAt', limit: size }); page.length; ) {
          seen.push(...page.map((t) => t.id));
          page = await cp.listThreads({ order: 'updatedAt', limit: size, after: page.at(-1)! });
        }
        expect(seen, `pages of ${size}`).toEqual(expected);
      }
      const ids = async (updatedAt: { from?: number; to?: number }) => (await cp.listThreads({ order: 'updatedAt', updatedAt })).map((t) => t.id);
      expect(await ids({ from: 5_500 })).toEqual(['h4', 'h3', 'h1', 'h5']);
      expect(await ids({ from: 5_501 })).toEqual(['h4', 'h3', 'h1']);
      expect(await ids({ to: 6_000 })).toEqual(['h1', 'h5', 'h2', 'h6']);
      expect(await ids({ from: 5_001, to: 6_000 })).toEqual(['h1', 'h5', 'h2']);
      expect(await ids({ from: 7_251 })).toEqual([]);
      expect((await cp.listThreads({ updatedAt: { from: 5_999 } })).map((t) => t.id)).toEqual(['h1', 'h3', 'h4']);
      // A thread update's time counts when it is the later: h2 moves to the front, h1 stays where its head is.
      await cp.updateThread(leases.get('h2')!, { status: 'completed', updatedAt: 8_000 });
      await cp.updateThread(leases.get('h1')!, { status: 'completed', updatedAt: 2_000 });
      expect((await cp.listThreads({ order: 'updatedAt' })).map((t) => [t.id, t.updatedAt])).toEqual([
        ['h2', 8_000],
        ['h4', 7_250],
        ['h3', 6_000],
        ['h1', 5_999],
        ['h5', 5_500],
        ['h6', 4_999],
      ]);
      expect(await ids({ from: 7_500 })).toEqual(['h2']);
      expect((await cp.listThreads({ updatedAt: { from: 5_999 } })).map((t) => t.id)).toEqual(['h1', 'h2', 'h3', 'h4']);
    });

    it('updatedAt: { from } in id order pages through a second whose earlier threads it skips, with and without other filters', async () => {
      // 30 threads updated within one second (their heads at 5,000-5,029 ms); from 5,025 keeps the last five.
      for (let i = 0; i < 30; i++) {
        const id = `r${String(i).padStart(2, '0')}`;
        const lease = await cp.acquireThread(id, { owner: remoteOwner(), leaseMs: LONG_LEASE, create: { kind: i % 2 ? 'task' : 'session', tenant: null, metadata: {}, createdAt: 1_000 } });
        await cp.commitStep(lease, commitOf(linearPosition(0, { createdAt: 5_000 + i }), null));
      }
      const pages = async (query: ThreadQuery) => {
        const seen: string[][] = [];
        for (let page = await cp.listThreads(query); page.length; page = await cp.listThreads({ ...query, after: page.at(-1)!.id })) seen.push(page.map((t) => t.id));
        return seen;
      };
      expect(await pages({ updatedAt: { from: 5_025 }, limit: 2 })).toEqual([['r25', 'r26'], ['r27', 'r28'], ['r29']]);
      expect(await pages({ updatedAt: { from: 5_025 }, kind: 'task', limit: 2 })).toEqual([['r25', 'r27'], ['r29']]);
      expect((await cp.listThreads({ updatedAt: { from: 5_025, to: 5_028 } })).map((t) => t.id)).toEqual(['r25', 'r26', 'r27']);
      expect((await cp.listThreads({ updatedAt: { from: 5_030 } })).map((t) => t.id)).toEqual([]);
    });

    it('idPrefix keeps the ids that start with it, in code point order, with the other filters and paging', async () => {
      // Neighbours of every prefix below: an id equal to it, one just before, one past its end.
      const all = ['a', 'ab', 'ab\u{10FFFF}', 'ab\u{10FFFF}z', 'abc', 'abd', 'ac', 'b', 'z\u{10FFFF}', 'z\u{10FFFF}\u{10FFFF}', '\u{D7FF}x', '\u{E000}', '\u{10FFFF}', '\u{10FFFF}\u{10FFFF}'];
      await threads(all.map((id, i) => ({ id, status: i % 2 ? 'failed' : 'completed' })));
      const sorted = [...all].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y)));
      for (const prefix of ['a', 'ab', 'ab\u{10FFFF}', 'abc', 'z\u{10FFFF}', '\u{D7FF}', '\u{10FFFF}', 'q', '']) {
        expect(await ids({ idPrefix: prefix }), prefix).toEqual(sorted.filter((id) => id.startsWith(prefix)));
      }
      expect(await ids({ idPrefix: 'ab', status: 'failed' })).toEqual(sorted.filter((id) => id.startsWith('ab') && all.indexOf(id) % 2 === 1));
      expect(await ids({ idPrefix: 'AB' })).toEqual([]);
      const first = await ids({ idPrefix: 'ab', limit: 2 });
      expect([...first, ...(await ids({ idPrefix: 'ab', after: first.at(-1)! }))]).toEqual(sorted.filter((id) => id.startsWith('ab')));
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
        { idPrefix: 42 },
        { idPrefix: 'a\u0000' },
        { idPrefix: '\ud800' },
      ];
      for (const query of bad) {
        await expectError(() => cp.listThreads(query as ThreadQuery), InvalidOptionError);
      }
    });
  });

  describe('thread ids', () => {
    beforeEach(() => {
      cp = suite.cp;
    });

    const hostile: [string, string][] = [
      ['empty', ''],
      ['NUL', 'a\u0000b'],
      ['newline', 'a\nb'],
      ['unit separator', 'a\u001fb'],
      ['DEL', 'a\u007fb'],
      ['a C1 control', 'a\u0085b'],
      ['a right-to-left override', 'invoice\u202Efdp.exe'],
      ['a bidirectional isolate', 'a\u2067b'],
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

    it('a malformed id, query or ifStatus is a rejected promise, never a synchronous throw', async () => {
      const calls: [string, () => Promise<unknown>][] = [
        ['acquireThread', () => cp.acquireThread('', { owner: remoteOwner(), leaseMs: LONG_LEASE, create: { kind: 'task', tenant: null, metadata: {} } })],
        ['listThreads', () => cp.listThreads({ status: 'paused' as ThreadStatus })],
        ['deleteThread', () => cp.deleteThread('t1', { ifStatus: 'done' as ThreadStatus })],
      ];
      for (const [method, call] of calls) {
        let promise: Promise<unknown> | undefined;
        expect(() => (promise = call()), method).not.toThrow();
        await expect(promise, method).rejects.toMatchObject({ code: expect.stringMatching(/^ERR_INVALID_(KEY|OPTION)$/) });
      }
    });

    it('refuses a listThreads or deleteThread option it does not take (a misspelt filter or guard), and deletes nothing', async () => {
      await cp.releaseThread(await cp.acquireThread('t1', { owner: remoteOwner(), leaseMs: LONG_LEASE, create: { kind: 'task', tenant: null, metadata: {} } }));
      await expectError(() => cp.listThreads({ statuss: 'running' } as never), InvalidOptionError);
      await expectError(() => cp.listThreads({ status: 'running', configurable: {} } as never), InvalidOptionError);
      await expectError(() => cp.deleteThread('t1', { ifStatuss: 'completed' } as never), InvalidOptionError);
      await expectError(() => cp.deleteThread('t1', null as never), InvalidOptionError);
      await expectError(() => cp.deleteThread('t1', { ifStatus: [] }), InvalidOptionError);
      expect((await cp.getThread('t1'))?.id).toBe('t1');
    });

    it('accepts ids up to 512 characters, with spaces, punctuation and any Unicode', async () => {
      for (const id of ['x'.repeat(512), 'cust 42/../%00', 'ünïcödé-🧭', "quote'\"`;--"]) {
        await create(id);
        expect((await cp.getThread(id))!.id).toBe(id);
      }
    });
  });

  describe('thread metadata with lone surrogates', () => {
    beforeEach(() => {
      cp = suite.cp;
    });

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
      // An engine without claims or lease expiry has no worker to serve: the capabilities suite checks the refusal.
      if (!cp.capabilities.claims || !cp.capabilities.leaseExpiry) return;
      await cp.releaseThread(await create('odd', { metadata: { ...odd, graph: 'g' } }));
      await cp.releaseThread(await create('plain', { metadata: { graph: 'g' } }));
      const claimed = await cp.claimThreads!({ owner: remoteOwner('worker'), leaseMs: LONG_LEASE, limit: 10, graph: 'g' });
      expect(claimed.map((lease) => lease.threadId).sort()).toEqual(['odd', 'plain']);
      expect(await cp.nextLeaseExpiry!('g')).toBeGreaterThan(Date.now());
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
    beforeEach(() => {
      cp = suite.cp;
    });

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
}
