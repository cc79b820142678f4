/**
 * @module testing/store/search
 * Store conformance. Search filters: every operator, type strictness, code point order, filter
 * injection, and values with lone surrogates.
 * Registered by {@link storeSuite}, inside its describe block.
 */
import { beforeEach, describe, expect, it } from 'vitest';
import type { Store, StoreFilter, StoreItem } from '../../contracts/store.js';
import { InvalidFilterError } from '../../errors.js';
import { expectError, where } from './fixtures.js';
import type { StoreSuiteContext } from './context.js';

/** Registers the tests of this feature. */
export function searchTests(suite: StoreSuiteContext): void {
  const { options } = suite;
  let store: Store;

  describe('search with filters', () => {
    beforeEach(() => {
      store = suite.store;
    });

    const people: [string, unknown][] = [
      ['a', { name: 'Ada', age: 36, city: 'London', active: true, score: null, profile: { level: 3, lang: 'en' }, tags: ['x'] }],
      ['b', { name: 'Björn', age: 17, city: 'Oslo', active: false, profile: { level: 1, lang: 'no' } }],
      ['c', { name: 'Chen', age: 64, city: 'Zürich', active: true, score: 7.5, profile: { level: 5 } }],
      ['d', { name: 'Dana', age: '36', city: 'oslo', active: 'true', score: 0 }],
      ['e', { name: 'Émile', age: 36.0, city: '🧭', active: 1, born: new Date('2000-01-01T00:00:00Z') }],
      ['f', 'just a string'],
      ['g', 42],
      ['h', { name: "x' OR '1'='1", age: -3, city: "'); DROP TABLE cairn_store; --" }],
      ['i', { name: 'Ivy', nested: { deep: { deeper: { value: 'bottom' } } } }],
      ['j', { name: 'nul\u0000byte', age: 5 }],
    ];
    const keys = (items: StoreItem[]) => items.map((i) => i.key);

    beforeEach(async () => {
      for (const [key, value] of people) await store.put(['people'], key, value);
      await store.put(['people', 'sub'], 'k', { name: 'Ada', age: 36 });
      await store.put(['peoplex'], 'k', { name: 'Ada', age: 36 });
    });

    const cases: [string, StoreFilter, string[]][] = [
      ['a bare scalar means $eq (case-sensitive)', { city: 'Oslo' }, ['b']],
      ['numbers equal numbers only (not "36")', { age: 36 }, ['a', 'e']],
      ['a string equals strings only', { age: { $eq: '36' } }, ['d']],
      ['true equals true only (not "true", not 1)', { active: true }, ['a', 'c']],
      ['1 equals 1 only (not true)', { active: { $eq: 1 } }, ['e']],
      ['null equals JSON null only (not a missing path, not 0)', { score: null }, ['a']],
      ['$exists true: present, null included', { score: { $exists: true } }, ['a', 'c', 'd']],
      ['$exists false: absent, non-objects included', { score: { $exists: false } }, ['b', 'e', 'f', 'g', 'h', 'i', 'j']],
      ['$ne: a missing path is not equal', { city: { $ne: 'Oslo' } }, ['a', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j']],
      ['$gt on numbers ignores strings', { age: { $gt: 17 } }, ['a', 'c', 'e']],
      ['two operators on one path', { age: { $gte: 17, $lt: 64 } }, ['a', 'b', 'e']],
      ['$lte with a negative number', { age: { $lte: -3 } }, ['h']],
      ['$gt on strings, code point order', { name: { $gt: 'Chen' } }, ['d', 'e', 'h', 'i', 'j']],
      ['$lt on strings', { name: { $lt: 'B' } }, ['a']],
      ['$gte on strings', { city: { $gte: 'Z' } }, ['c', 'd', 'e']],
      ['code points above U+FFFF sort after U+FFFF', { city: { $gt: '\uffff' } }, ['e']],
      ['$in over strings', { city: { $in: ['Oslo', 'oslo', 'Paris'] } }, ['b', 'd']],
      ['$in keeps types apart', { age: { $in: [36, '17'] } }, ['a', 'e']],
      ['a nested path', { 'profile.level': { $gte: 3 } }, ['a', 'c']],
      ['conditions on two paths all hold', { 'profile.lang': { $exists: false }, 'profile.level': { $exists: true } }, ['c']],
      ['a deep path', { 'nested.deep.deeper.value': 'bottom' }, ['i']],
      ['a tagged value (Date) is present but matches no scalar', { born: { $exists: true } }, ['e']],
      ['an array is not a scalar', { tags: 'x' }, []],
      ['several fields', { active: true, age: { $gt: 40 } }, ['c']],
      ['a value holding U+0000 is still searchable', { age: 5 }, ['j']],
      ['an SQL-looking value matches only itself', { name: "x' OR '1'='1" }, ['h']],
      ['another SQL-looking value matches only itself', { city: "'); DROP TABLE cairn_store; --" }, ['h']],
      ['SQL-looking values in $in', { name: { $in: ["' OR 1=1 --", 'Ada', '"; --'] } }, ['a']],
      ['an SQL-looking bound compares as a plain string', { name: { $gt: "' OR 1=1 --" } }, ['a', 'b', 'c', 'd', 'e', 'h', 'i', 'j']],
      ['an empty filter matches everything', {}, ['a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j']],
    ];
    for (const [label, filter, expected] of cases) {
      it(`${label}: ${JSON.stringify(filter)}`, async (t) => {
        t.skip(!store.capabilities.filters, `the ${options.name} engine declares no filters capability`);
        const found = await store.search(['people'], { filter });
        expect(keys(found.items.filter((i) => i.namespace.length === 1))).toEqual(expected);
        expect(found.cursor).toBeNull();
      });
    }

    it('filters within the prefix only, bounded at label boundaries', async (t) => {
      t.skip(!store.capabilities.filters, `the ${options.name} engine declares no filters capability`);
      const found = await store.list(['people'], { filter: { name: 'Ada' } });
      expect(found.map((i) => [...i.namespace, i.key].join('/'))).toEqual(['people/a', 'people/sub/k']);
      expect((await store.list([], { filter: { name: 'Ada' } })).length).toBe(3);
    });

    const badFilters: [string, unknown][] = [
      ['a path with a quote and a statement', { "name'; DROP TABLE cairn_store; --": 'x' }],
      ['a path closing a parenthesis', { 'name) OR (1=1': 'x' }],
      ['a path with a comment', { 'name--': 'x' }],
      ['a JSON path', { '$.name': 'x' }],
      ['a jsonb path', { '{name}': 'x' }],
      ['an array index', { 'tags[0]': 'x' }],
      ['an empty label', { 'profile..level': 1 }],
      ['an empty path', { '': 1 }],
      ['a label starting with a digit', { '0': 1 }],
      ['a space', { 'first name': 'x' }],
      ['a non-ASCII label', { naïve: 1 }],
      ['17 labels', { [Array(17).fill('a').join('.')]: 1 }],
      ['an unknown operator', { name: { $regex: '.*' } }],
      ['$where', { name: { $where: '1=1' } }],
      ['an operator object with no operator', { name: {} }],
      ['an object operand', { name: { $eq: { $gt: '' } } }],
      ['an array operand', { name: ['Ada'] }],
      ['a Date operand', { born: new Date(0) }],
      ['NaN', { age: Number.NaN }],
      ['Infinity in a range', { age: { $gt: Number.POSITIVE_INFINITY } }],
      ['a boolean range', { active: { $gt: false } }],
      ['a null range', { score: { $lt: null } }],
      ['$in that is not an array', { age: { $in: 36 } }],
      ['an empty $in', { age: { $in: [] } }],
      ['$in with an object', { age: { $in: [{}] } }],
      ['$exists that is not a boolean', { age: { $exists: 'yes' } }],
      ['a bigint', { age: 1n }],
      ['U+0000 in a string', { name: 'a\u0000' }],
      ['a lone surrogate', { name: '\ud800' }],
      ['a string instead of an object', "name = 'x' OR 1=1"],
      ['an array instead of an object', [['name', 'x']]],
    ];
    for (const [label, filter] of badFilters) {
      it(`rejects ${label} with InvalidFilterError before any query, and the store is intact`, async (t) => {
        t.skip(!store.capabilities.filters, `the ${options.name} engine declares no filters capability`);
        await expectError(() => store.search(['people'], { filter: filter as StoreFilter }), InvalidFilterError);
        await expectError(() => store.list([], { filter: filter as StoreFilter }), InvalidFilterError);
        expect(await store.list([])).toHaveLength(people.length + 2);
      });
    }
  });

  describe('values with lone surrogates', () => {
    beforeEach(() => {
      store = suite.store;
    });

    // Text escapes a lone surrogate (\ud800), which PostgreSQL's jsonb refuses: no such
    // value may break a search over its namespace, nor differ from what was put.
    const odd: [string, unknown][] = [
      ['high', { name: '\uD800', age: 36, tag: 'odd' }],
      ['low', { name: 'x\uDC00y', age: 17, tag: 'odd' }],
      ['reversed', { name: '\uDC00\uD800', age: 64, tag: 'odd' }],
      ['escape-lookalike', { name: '\\ud800\uDC00', age: 5, tag: 'odd' }],
      ['in-a-key', { '\uD83D': 1, name: 'Key', age: 40, tag: 'odd' }],
      ['with-nul', { name: '\u0000\uDBFF', nested: { list: ['\uDFFF'] }, age: 50, tag: 'odd' }],
      ['scalar', '\uDFFF'],
    ];
    const clean: [string, unknown][] = [
      ['ada', { name: 'Ada', age: 36, tag: 'clean' }],
      ['bjorn', { name: 'Björn', age: 17, tag: 'clean' }],
      ['chen', { name: 'Chen 🧭', age: 64, tag: 'clean' }],
      ['text', 'just a string'],
    ];
    const cleanKeys = new Set(clean.map(([key]) => key));
    const objects = ['escape-lookalike', 'high', 'in-a-key', 'low', 'reversed', 'with-nul'];

    beforeEach(async () => {
      for (const [key, value] of [...odd, ...clean]) await store.put(['mixed'], key, value);
    });

    it('get returns each value exactly as it was put', async () => {
      for (const [key, value] of odd) expect((await store.get(['mixed'], key))!.value, key).toEqual(value);
      expect(where(await store.list(['mixed']))).toHaveLength(odd.length + clean.length);
    });

    // [filter, the clean values it finds, the odd ones it finds or null where engines may differ (a range over their own strings)]
    const cases: [StoreFilter, string[], string[] | null][] = [
      [{ tag: 'clean' }, ['ada', 'bjorn', 'chen'], []],
      [{ tag: { $eq: 'odd' } }, [], objects],
      [{ tag: { $ne: 'odd' } }, ['ada', 'bjorn', 'chen', 'text'], ['scalar']],
      [{ age: { $gt: 36 } }, ['chen'], ['in-a-key', 'reversed', 'with-nul']],
      [{ age: { $gte: 36 } }, ['ada', 'chen'], ['high', 'in-a-key', 'reversed', 'with-nul']],
      [{ age: { $lt: 36 } }, ['bjorn'], ['escape-lookalike', 'low']],
      [{ age: { $lte: 17 } }, ['bjorn'], ['escape-lookalike', 'low']],
      [{ name: { $in: ['Ada', 'Chen 🧭', 'Key'] } }, ['ada', 'chen'], ['in-a-key']],
      [{ name: { $exists: true } }, ['ada', 'bjorn', 'chen'], objects],
      [{ 'nested.list': { $exists: true } }, [], ['with-nul']],
      [{ name: { $gt: 'B' } }, ['bjorn', 'chen'], null],
      [{ name: { $lte: 'Björn' } }, ['ada', 'bjorn'], null],
    ];
    for (const [filter, found, foundOdd] of cases) {
      it(`a search over their namespace finds the other values, and them by their other fields: ${JSON.stringify(filter)}`, async (t) => {
        t.skip(!store.capabilities.filters, `the ${options.name} engine declares no filters capability`);
        const keys = (await store.search(['mixed'], { filter })).items.map((i) => i.key);
        expect(keys.filter((key) => cleanKeys.has(key))).toEqual(found);
        if (foundOdd) expect(keys.filter((key) => !cleanKeys.has(key))).toEqual(foundOdd);
      });
    }

    it('a filter operand holding a lone surrogate is InvalidFilterError under every operator, before any query', async (t) => {
      t.skip(!store.capabilities.filters, `the ${options.name} engine declares no filters capability`);
      const bad: StoreFilter[] = [
        { name: '\uD800' },
        { name: { $eq: 'x\uDC00' } },
        { name: { $ne: '\uDC00\uD800' } },
        { name: { $gt: '\uDBFF' } },
        { name: { $gte: '\uDBFF' } },
        { name: { $lt: '\uDFFF' } },
        { name: { $lte: '\uDFFF' } },
        { name: { $in: ['Ada', '\uD83D'] } },
      ];
      for (const filter of bad) await expectError(() => store.search(['mixed'], { filter }), InvalidFilterError);
      // A whole pair is a character like any other.
      expect((await store.search(['mixed'], { filter: { name: 'Chen 🧭' } })).items.map((i) => i.key)).toEqual(['chen']);
    });
  });
}
