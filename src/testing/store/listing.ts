/**
 * @module testing/store/listing
 * Store conformance. Listing: prefixes bounded at label boundaries, code point order, paging by
 * cursor and offset, namespaces cut to a depth.
 * Registered by {@link storeSuite}, inside its describe block.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { Store, StoreItem, StorePage } from '../../contracts/store.js';
import { InvalidOptionError } from '../../errors.js';
import { expectError, where } from './fixtures.js';
import type { StoreSuiteContext } from './context.js';

/** Registers the tests of this feature. */
export function listingTests(suite: StoreSuiteContext): void {
  const { options } = suite;
  let store: Store;

  describe('list', () => {
    beforeEach(() => {
      store = suite.store;
    });

    it('lists items under a prefix, ordered by namespace then key, bounded at label boundaries', async () => {
      const puts: [string[], string][] = [
        [['tenant', 'acme-corp'], 'x'],
        [['tenant', 'acme', 'users'], 'b'],
        [['tenant', 'acme'], 'z'],
        [['tenant', 'acme'], 'a'],
        [['tenant', 'acmeX'], 'y'],
        [['tenant', 'acme', 'users'], 'a'],
        [['tenant'], 'root'],
        [['tenantx'], 'k'],
        [['other'], 'k'],
      ];
      for (const [namespace, key] of puts) await store.put(namespace, key, key);

      expect(where(await store.list(['tenant', 'acme']))).toEqual(['tenant/acme/a', 'tenant/acme/z', 'tenant/acme/users/a', 'tenant/acme/users/b']);
      expect(where(await store.list(['tenant', 'acme', 'users']))).toEqual(['tenant/acme/users/a', 'tenant/acme/users/b']);
      expect(where(await store.list(['tenant', 'acm']))).toEqual([]);
      expect(where(await store.list(['tenant']))).toEqual([
        'tenant/root',
        'tenant/acme/a',
        'tenant/acme/z',
        'tenant/acme/users/a',
        'tenant/acme/users/b',
        'tenant/acme-corp/x',
        'tenant/acmeX/y',
      ]);
      expect(await store.list(['tenant', 'acme'], { limit: 2 })).toHaveLength(2);
      expect(where(await store.list(['tenant', 'acme'], { limit: 3 }))).toEqual(['tenant/acme/a', 'tenant/acme/z', 'tenant/acme/users/a']);
      expect(await store.list([])).toHaveLength(puts.length);
      expect(await store.list(['nothing'])).toEqual([]);
    });

    it('returns whole items with decoded values', async () => {
      await store.put(['p'], 'k', { at: new Date(7), n: 1n });
      await store.put(['p'], 'k', { at: new Date(8), n: 2n });
      const [listed] = await store.list(['p']);
      expect(listed).toEqual(await store.get(['p'], 'k'));
      expect(listed).toMatchObject({ namespace: ['p'], key: 'k', version: 2, value: { at: new Date(8), n: 2n } });
    });

    // Known failure (sqlite): SqliteStore.list scans [prefix, prefix + U+FFFF), but SQLite compares UTF-8 bytes, so a
    // label starting with U+FFFF or any character above it (emoji: F0 ..) sorts past the bound and is never listed.
    it('lists labels with any Unicode, including characters outside the BMP', async () => {
      await store.put(['tenant', '🧭'], 'k', 1);
      await store.put(['tenant', '\uffff'], 'k', 2);
      await store.put(['tenant', 'ünïcode'], 'k', 3);
      await store.put(['🧭'], 'k', 4);
      expect(await store.list(['tenant'])).toHaveLength(3);
      expect(where(await store.list(['tenant', '🧭']))).toEqual(['tenant/🧭/k']);
      expect(await store.list([])).toHaveLength(4);
    });
  });

  describe('paging', () => {
    beforeEach(() => {
      store = suite.store;
    });

    const all: [string[], string][] = [];
    for (const namespace of [['p'], ['p', 'a'], ['p', 'b', 'c'], ['p', 'é'], ['p', '🧭'], ['p', '\uffff']]) {
      for (const key of ['k1', 'k2', 'K', 'ä', '🧭', '\ue000']) all.push([namespace, key]);
    }
    const id = (i: StoreItem) => [...i.namespace, i.key].join('/');
    /** Code point order of (namespace labels joined by U+001F + U+001F, key): the order every engine returns. */
    const codePointOrder = (items: [string[], string][]) =>
      items
        .map(([n, k]) => ({ sortNs: [...Array.from(n.join('\u001f') + '\u001f')].map((c) => c.codePointAt(0)!), sortKey: [...k].map((c) => c.codePointAt(0)!), id: [...n, k].join('/') }))
        .sort((x, y) => cmp(x.sortNs, y.sortNs) || cmp(x.sortKey, y.sortKey))
        .map((x) => x.id);
    const cmp = (a: number[], b: number[]) => {
      for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! - b[i]!;
      return a.length - b.length;
    };

    beforeEach(async () => {
      await store.batch(all.map(([namespace, key]) => ({ op: 'put' as const, namespace, key, value: { n: key } })));
    });

    it('orders by namespace then key in code point order (U+FFFF and U+E000 before emoji), the same on every engine', async () => {
      expect((await store.list(['p'])).map(id)).toEqual(codePointOrder(all));
    });

    it('a cursor walks every item once, for any page size', async () => {
      const expected = codePointOrder(all);
      for (const limit of [1, 5, 7, 36, 100]) {
        const seen: string[] = [];
        let cursor: string | null = null;
        let pages = 0;
        do {
          const page: StorePage = await store.search(['p'], { limit, cursor });
          expect(page.items.length).toBeLessThanOrEqual(limit);
          seen.push(...page.items.map(id));
          cursor = page.cursor;
          pages++;
        } while (cursor !== null);
        expect(seen, `limit ${limit}`).toEqual(expected);
        expect(pages).toBe(Math.max(1, Math.ceil(expected.length / limit)));
      }
    });

    it('offset pages agree with cursor pages', async () => {
      const expected = codePointOrder(all);
      expect((await store.list(['p'], { offset: 10, limit: 5 })).map(id)).toEqual(expected.slice(10, 15));
      expect((await store.list(['p'], { offset: 30 })).map(id)).toEqual(expected.slice(30));
      const first = await store.search(['p'], { limit: 4 });
      expect((await store.list(['p'], { cursor: first.cursor, offset: 2, limit: 3 })).map(id)).toEqual(expected.slice(6, 9));
    });

    it('a cursor stays valid when items are added or removed before it', async () => {
      const page = await store.search(['p'], { limit: 10 });
      const last = page.items[9]!;
      await store.put(['p'], '0000', 'new, sorts first');
      await store.delete(page.items[0]!.namespace, page.items[0]!.key);
      const next = await store.search(['p'], { limit: 3, cursor: page.cursor });
      expect(next.items.map(id)).toEqual(codePointOrder(all).slice(10, 13));
      expect(next.items.map(id)).not.toContain(id(last));
    });

    it('pages a filtered search', async (t) => {
      t.skip(!store.capabilities.filters, `the ${options.name} engine declares no filters capability`);
      const wanted = codePointOrder(all.filter(([, k]) => k === 'k1' || k === 'K'));
      const seen: string[] = [];
      let cursor: string | null = null;
      do {
        const page: StorePage = await store.search(['p'], { filter: { n: { $in: ['k1', 'K'] } }, limit: 5, cursor });
        seen.push(...page.items.map(id));
        cursor = page.cursor;
      } while (cursor);
      expect(seen).toEqual(wanted);
    });

    it('rejects a forged cursor and bad limits with InvalidOptionError', async () => {
      await expectError(() => store.search(['p'], { cursor: 'not-a-cursor' }), InvalidOptionError);
      await expectError(() => store.search(['p'], { cursor: Buffer.from('{"a":1}').toString('base64url') }), InvalidOptionError);
      for (const limit of [0, -1, 1.5, Number.NaN]) await expectError(() => store.search(['p'], { limit }), InvalidOptionError);
      await expectError(() => store.search(['p'], { offset: -1 }), InvalidOptionError);
    });
  });

  describe('listNamespaces', () => {
    beforeEach(() => {
      store = suite.store;
    });

    beforeEach(async () => {
      for (const namespace of [['tenant', 'acme', 'users', 'u1'], ['tenant', 'acme', 'users', 'u2'], ['tenant', 'acme'], ['tenant', 'acme-corp', 'x'], ['tenant', 'globex', 'prefs'], ['other'], ['zeta', 'deep', 'er']]) {
        await store.put(namespace, 'k', 1);
      }
    });

    it('lists every namespace holding an item, in order', async () => {
      expect(await store.listNamespaces()).toEqual([
        ['other'],
        ['tenant', 'acme'],
        ['tenant', 'acme', 'users', 'u1'],
        ['tenant', 'acme', 'users', 'u2'],
        ['tenant', 'acme-corp', 'x'],
        ['tenant', 'globex', 'prefs'],
        ['zeta', 'deep', 'er'],
      ]);
    });

    it('under a prefix bounded at label boundaries', async () => {
      expect(await store.listNamespaces({ prefix: ['tenant', 'acme'] })).toEqual([
        ['tenant', 'acme'],
        ['tenant', 'acme', 'users', 'u1'],
        ['tenant', 'acme', 'users', 'u2'],
      ]);
      expect(await store.listNamespaces({ prefix: ['tenant', 'acm'] })).toEqual([]);
    });

    it('cut to maxDepth labels, without duplicates', async () => {
      expect(await store.listNamespaces({ maxDepth: 1 })).toEqual([['other'], ['tenant'], ['zeta']]);
      expect(await store.listNamespaces({ prefix: ['tenant'], maxDepth: 2 })).toEqual([
        ['tenant', 'acme'],
        ['tenant', 'acme-corp'],
        ['tenant', 'globex'],
      ]);
      expect(await store.listNamespaces({ prefix: ['tenant', 'acme'], maxDepth: 3 })).toEqual([
        ['tenant', 'acme'],
        ['tenant', 'acme', 'users'],
      ]);
    });

    it('pages with limit and offset', async () => {
      const everything = await store.listNamespaces();
      expect(await store.listNamespaces({ limit: 3 })).toEqual(everything.slice(0, 3));
      expect(await store.listNamespaces({ offset: 3, limit: 3 })).toEqual(everything.slice(3, 6));
      expect(await store.listNamespaces({ offset: 6, limit: 3 })).toEqual(everything.slice(6));
      expect(await store.listNamespaces({ maxDepth: 1, offset: 1, limit: 1 })).toEqual([['tenant']]);
    });

    it('leaves out namespaces whose items were all deleted', async () => {
      await store.delete(['other'], 'k');
      await store.delete(['zeta', 'deep', 'er'], 'k');
      expect(await store.listNamespaces({ maxDepth: 1 })).toEqual([['tenant']]);
    });
  });
}
