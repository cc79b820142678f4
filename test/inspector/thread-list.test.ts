/**
 * `GET /api/threads` over a real server and real fetch, on memory, a SQLite file and
 * PostgreSQL: every filter alone and together, both orders, keyset paging that neither
 * repeats nor misses a thread, and malformed parameters refused with 400
 * `ERR_INVALID_OPTION`. The expected pages are computed here from every thread's record,
 * not by the engine under test.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/contracts/engine.js';
import type { ThreadKind, ThreadRecord, ThreadStatus } from '../../src/contracts/threads.js';
import { memory } from '../../src/engines/memory/index.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { startInspector, type Inspector } from '../../src/inspector/index.js';
import { usePostgresSchema } from '../helpers/postgres.js';

const pg = usePostgresSchema();

const KINDS: ThreadKind[] = ['conversation', 'task', 'session', 'workflow'];
const STATUSES: ThreadStatus[] = ['running', 'interrupted', 'completed', 'failed', 'needs_attention', 'waiting'];
const TENANTS = ['acme', 'globex', null];
const OWNER = { runId: 'seed', pid: 1, host: 'test' };
const T0 = Date.UTC(2026, 0, 1);

/** 67 threads: ids with shared prefixes (and one that is a prefix of others), every status, kind and tenant, metadata of each scalar type. */
async function seed(engine: Engine): Promise<void> {
  const cp = engine.checkpointer;
  for (let i = 0; i < 67; i++) {
    const id = i === 0 ? 'job' : i % 5 === 0 ? `job/${String(i).padStart(3, '0')}` : i % 7 === 0 ? `chat:${i}` : `t-${String(i).padStart(3, '0')}`;
    const lease = await cp.acquireThread(id, {
      owner: { ...OWNER, runId: `seed-${i}` },
      leaseMs: 60_000,
      // Times a minute apart, a few equal (i % 12 === 0 share one, and keep it): ties are broken by id.
      create: { kind: KINDS[i % 4]!, tenant: TENANTS[i % 3]!, metadata: { queue: i % 2 ? 'support' : 'sales', n: i % 3, vip: i % 4 === 0, note: i % 6 === 0 ? null : 'x' }, createdAt: T0 + (i % 12 === 0 ? 1 : i) * 60_000 },
    });
    const status = STATUSES[i % 6]!;
    // A status update moves updatedAt to now: the running threads keep their seeded time.
    if (status !== 'running') await cp.updateThread(lease, { status, ...(status === 'waiting' ? { wakeAt: null } : {}) });
    await cp.releaseThread(lease);
  }
}

interface Page {
  threads: ThreadRecord[];
  next: string | null;
}

const compare = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

function suite(name: string, open: () => Promise<Engine>, done: () => void = () => {}) {
  describe(`GET /api/threads on ${name}`, () => {
    let engine: Engine;
    let inspector: Inspector;
    let all: ThreadRecord[];
    beforeAll(async () => {
      engine = await open();
      await seed(engine);
      all = await engine.checkpointer.listThreads();
      inspector = await startInspector({ engine });
    });
    afterAll(async () => {
      await inspector?.close();
      await engine?.close();
      done();
    });

    const base = () => inspector.url.slice(0, inspector.url.indexOf('/?token='));
    const get = async (query: string) => fetch(`${base()}/api/threads?${query}${query ? '&' : ''}token=${inspector.token}`);
    const page = async (query: string): Promise<Page> => {
      const response = await get(query);
      expect(response.status, query).toBe(200);
      return (await response.json()) as Page;
    };
    /** Every page of `query`, `limit` at a time, following `next`. */
    const walk = async (query: string, limit: number): Promise<string[]> => {
      const ids: string[] = [];
      let after: string | null = null;
      for (let pages = 0; pages < 100; pages++) {
        const p = await page(`${query}&limit=${limit}${after ? `&after=${after}` : ''}`);
        expect(p.threads.length).toBeLessThanOrEqual(limit);
        ids.push(...p.threads.map((t) => t.id));
        if (p.next === null) return ids;
        expect(p.threads.length, 'a page with a next is full').toBe(limit);
        after = p.next;
      }
      throw new Error('more than 100 pages');
    };
    const byId = (keep: (t: ThreadRecord) => boolean) => all.filter(keep).map((t) => t.id).sort(compare);
    const byUpdate = (keep: (t: ThreadRecord) => boolean) =>
      all.filter(keep).sort((a, b) => b.updatedAt - a.updatedAt || compare(a.id, b.id)).map((t) => t.id);

    it('pages every thread in id order, 7 at a time, without a repeat or a miss', async () => {
      expect(all).toHaveLength(67);
      expect(await walk('', 7)).toEqual(byId(() => true));
      const first = await page('');
      expect(first.threads).toHaveLength(50);
      expect(first.next).toEqual(expect.any(String));
    });

    it('filters by status, kind, tenant (one value or several) and pages the result', async () => {
      const cases: [string, (t: ThreadRecord) => boolean][] = [
        ['status=failed', (t) => t.status === 'failed'],
        ['status=failed,needs_attention', (t) => t.status === 'failed' || t.status === 'needs_attention'],
        ['kind=task', (t) => t.kind === 'task'],
        ['kind=session,workflow', (t) => t.kind === 'session' || t.kind === 'workflow'],
        ['tenant=acme', (t) => t.tenant === 'acme'],
        ['tenant=acme&kind=conversation&status=running,completed', (t) => t.tenant === 'acme' && t.kind === 'conversation' && (t.status === 'running' || t.status === 'completed')],
      ];
      for (const [query, keep] of cases) {
        const expected = byId(keep);
        expect(expected.length, query).toBeGreaterThan(0);
        expect(await walk(query, 3), query).toEqual(expected);
      }
    });

    it('filters by metadata key=value pairs, JSON scalars typed and other text as a string', async () => {
      const cases: [string, (t: ThreadRecord) => boolean][] = [
        ['meta=queue%3Dsupport', (t) => t.metadata.queue === 'support'],
        ['meta=n%3D2', (t) => t.metadata.n === 2],
        ['meta=vip%3Dtrue&meta=queue%3Dsales', (t) => t.metadata.vip === true && t.metadata.queue === 'sales'],
        ['meta=note%3Dnull', (t) => t.metadata.note === null],
        ['meta=queue%3D%22support%22', (t) => t.metadata.queue === 'support'],
        ['meta=n%3D%222%22', () => false],
        ['meta=missing%3Dx', () => false],
        ['meta=queue%3Dsupport&status=interrupted&order=updatedAt', (t) => t.metadata.queue === 'support' && t.status === 'interrupted'],
      ];
      for (const [query, keep] of cases) {
        const expected = query.includes('order=updatedAt') ? byUpdate(keep) : byId(keep);
        expect(await walk(query, 4), query).toEqual(expected);
      }
    });

    it('searches by id prefix as a range: the id equal to the prefix, its extensions, nothing past them', async () => {
      for (const q of ['job', 'job/', 'job/01', 'chat:', 't-0', 't-06', 'zzz', 'JOB']) {
        expect(await walk(`q=${encodeURIComponent(q)}`, 2), q).toEqual(byId((t) => t.id.startsWith(q)));
      }
      expect(await walk('q=job/&status=running,failed', 1)).toEqual(byId((t) => t.id.startsWith('job/') && (t.status === 'running' || t.status === 'failed')));
    });

    it('orders by most recent update, ties by id, and pages that order with its own cursor', async () => {
      expect(await walk('order=updatedAt', 5)).toEqual(byUpdate(() => true));
      expect(await walk('order=updatedAt&kind=conversation', 2)).toEqual(byUpdate((t) => t.kind === 'conversation'));
      expect(await walk('order=updatedAt&q=t-', 9)).toEqual(byUpdate((t) => t.id.startsWith('t-')));
      // Equal updatedAt on several threads: the cursor carries the id too.
      const tied = all.filter((t) => all.some((u) => u !== t && u.updatedAt === t.updatedAt));
      expect(tied.length).toBeGreaterThan(1);
    });

    it('filters by updatedSince, in ms or as an ISO time', async () => {
      const since = T0 + 30 * 60_000;
      expect(await walk(`updatedSince=${since}`, 6)).toEqual(byId((t) => t.updatedAt >= since));
      expect(await walk(`updatedSince=${encodeURIComponent(new Date(since).toISOString())}&order=updatedAt`, 6)).toEqual(byUpdate((t) => t.updatedAt >= since));
    });

    it('refuses malformed parameters with 400 ERR_INVALID_OPTION, and runs no query for them', async () => {
      const idCursor = (await page('limit=1')).next!;
      const bad = [
        'status=sleeping',
        'status=failed,paused',
        'kind=chat',
        'limit=0',
        'limit=501',
        'limit=ten',
        'limit=-1',
        'order=createdAt',
        'order=updatedAt%3B%20DROP%20TABLE%20cairn_threads',
        'after=not-a-cursor!',
        `after=${Buffer.from('["id",5]').toString('base64url')}`,
        `after=${Buffer.from('["updatedAt","x","a"]').toString('base64url')}`,
        `after=${Buffer.from('{"id":"a"}').toString('base64url')}`,
        `after=${Buffer.from('["id"').toString('base64url')}`,
        `order=updatedAt&after=${idCursor}`,
        'meta=queue',
        'meta=%3Dsupport',
        'meta=a%3D%7B%7D&meta=' + Array.from({ length: 16 }, (_, i) => `k${i}%3D1`).join('&meta='),
        'updatedSince=yesterday',
        'updatedSince=2026-13-45',
        'q=a%00b',
      ];
      for (const query of bad) {
        const response = await get(query);
        expect(response.status, query).toBe(400);
        expect(((await response.json()) as { error: { code: string } }).error.code, query).toBe('ERR_INVALID_OPTION');
      }
      // A metadata value that only looks like an object is text, not a filter error.
      expect((await get('meta=a%3D%7B')).status).toBe(200);
      expect((await page(`q=${'x'.repeat(5000)}`)).threads).toEqual([]);
    });
  });
}

suite('memory', async () => memory());

let dir: string | undefined;
suite(
  'SQLite',
  async () => {
    dir = mkdtempSync(join(tmpdir(), 'cairn-thread-list-'));
    return sqlite(join(dir, 'cairn.db'));
  },
  () => dir && rmSync(dir, { recursive: true, force: true }),
);

suite('PostgreSQL', () => pg.engine());
