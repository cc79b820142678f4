/**
 * The codec (DESIGN §10): JSON with tagged types round-trips every value cairn
 * stores; the output is canonical (key order never matters), so the hash chain is
 * stable; decoding malformed text or an unknown tag raises CorruptRecordError and
 * never executes code nor pollutes prototypes; values that cannot be stored are
 * rejected with the path to the offending part.
 */
import { describe, expect, it } from 'vitest';
import { decode, encode } from '../../src/codec/tagged-json.js';
import { CorruptRecordError, UnencodableValueError } from '../../src/errors.js';

const roundTrip = <T>(value: T): T => decode<T>(encode(value));

function thrown(fn: () => unknown): Error & { code?: string } {
  try {
    fn();
  } catch (error) {
    return error as Error & { code?: string };
  }
  throw new Error('expected the call to throw, it returned');
}

describe('tagged JSON round-trips', () => {
  it.each([
    ['a string', 'hello "quoted" \\ \n ünïcödé 🎉'],
    ['an integer', 42],
    ['a float', -3.25],
    ['true', true],
    ['false', false],
    ['null', null],
    ['an empty object', {}],
    ['an empty array', []],
    ['a plain nested structure', { a: [1, { b: 'c' }], d: { e: null } }],
  ])('%s', (_what, value) => {
    expect(roundTrip(value)).toStrictEqual(value);
  });

  it('Date', () => {
    const date = new Date('2024-02-29T12:34:56.789Z');
    const back = roundTrip(date);
    expect(back).toBeInstanceOf(Date);
    expect(back.getTime()).toBe(date.getTime());
  });

  it('an invalid Date stays an invalid Date', () => {
    const back = roundTrip(new Date(NaN));
    expect(back).toBeInstanceOf(Date);
    expect(Number.isNaN(back.getTime())).toBe(true);
  });

  it('BigInt, including negative and beyond 2^64', () => {
    for (const n of [0n, 10n, -12345678901234567890n, 2n ** 100n]) expect(roundTrip(n)).toBe(n);
  });

  it('Uint8Array and Buffer decode as the same bytes', () => {
    const bytes = new Uint8Array([0, 1, 2, 250, 255]);
    const back = roundTrip(bytes);
    expect(back).toBeInstanceOf(Uint8Array);
    expect(Array.from(back)).toEqual([0, 1, 2, 250, 255]);

    const buffer = Buffer.from('héllo');
    const backBuffer = roundTrip(buffer);
    expect(backBuffer).toBeInstanceOf(Uint8Array);
    expect(Buffer.from(backBuffer).toString()).toBe('héllo');
  });

  it('a Uint8Array view into a larger buffer encodes only its own bytes', () => {
    const big = new Uint8Array([9, 9, 1, 2, 3, 9, 9]);
    expect(Array.from(roundTrip(big.subarray(2, 5)))).toEqual([1, 2, 3]);
  });

  it('Map with object keys and tagged values', () => {
    const map = new Map<unknown, unknown>([
      [{ id: 1 }, 'object key'],
      ['s', new Date(0)],
      [7n, new Set([1, 2])],
    ]);
    const back = roundTrip(map);
    expect(back).toBeInstanceOf(Map);
    expect([...back.entries()]).toStrictEqual([...map.entries()]);
  });

  it('Set keeps its members and their order', () => {
    const set = new Set<unknown>(['b', 'a', 3, { x: 1 }]);
    const back = roundTrip(set);
    expect(back).toBeInstanceOf(Set);
    expect([...back]).toStrictEqual([...set]);
  });

  it('NaN, Infinity, -Infinity and -0', () => {
    const back = roundTrip([NaN, Infinity, -Infinity, -0, 0]);
    expect(Number.isNaN(back[0])).toBe(true);
    expect(back[1]).toBe(Infinity);
    expect(back[2]).toBe(-Infinity);
    expect(Object.is(back[3], -0)).toBe(true);
    expect(Object.is(back[4], 0)).toBe(true);
  });

  it('undefined in arrays and as an object property is kept (the key too)', () => {
    const back = roundTrip({ list: [1, undefined, 3], missing: undefined });
    expect(back.list).toHaveLength(3);
    expect(1 in back.list).toBe(true);
    expect(back.list[1]).toBeUndefined();
    expect('missing' in back).toBe(true);
    expect(roundTrip(undefined)).toBeUndefined();
  });

  it('objects that have a "$t" key of their own are not mistaken for tags', () => {
    const tricky = [
      { $t: 'Date', v: 'not a date' },
      { $t: 'Undef' },
      { $t: 'Obj', v: { $t: 'BigInt', v: '1' } },
      { $t: { nested: true }, other: new Date(5) },
      { $t: 'Unknown-tag', v: [1n] },
    ];
    expect(roundTrip(tricky)).toStrictEqual(tricky);
  });

  it('a deeply nested mix of every tagged type', () => {
    const value = {
      when: new Date(1_700_000_000_000),
      big: { n: 99n, list: [NaN, -0, undefined, new Uint8Array([1])] },
      m: new Map([[new Date(1), new Map([[1n, new Set([Infinity])]])]]),
      own: { $t: 'x', v: new Set([{ $t: 'y' }]) },
      nullProto: Object.assign(Object.create(null) as object, { k: 1 }),
    };
    const back = roundTrip(value);
    expect(encode(back)).toBe(encode(value));
    expect(back.when).toEqual(value.when);
    expect(back.big.n).toBe(99n);
    expect(Object.is(back.big.list[1], -0)).toBe(true);
    expect((back.m.get(back.m.keys().next().value!) as Map<bigint, Set<number>>).get(1n)).toEqual(new Set([Infinity]));
    expect(back.own).toStrictEqual({ $t: 'x', v: new Set([{ $t: 'y' }]) });
  });
});

describe('canonical encoding', () => {
  it('the same object with different key insertion order encodes to identical text', () => {
    const a = { b: 1, a: { y: [1, { q: 1, p: 2 }], x: new Map([['k', { z: 1, w: 2 }]]) }, c: new Date(0) };
    const b = { c: new Date(0), a: { x: new Map([['k', { w: 2, z: 1 }]]), y: [1, { p: 2, q: 1 }] }, b: 1 };
    expect(encode(a)).toBe(encode(b));
  });

  it('keys come out sorted and there is no whitespace', () => {
    expect(encode({ z: 1, a: [true, null], m: 'x' })).toBe('{"a":[true,null],"m":"x","z":1}');
  });

  it('decode(encode(x)) re-encodes to the same text', () => {
    const text = encode({ d: new Date(3), s: new Set([2, 1]), n: -0, u: undefined, b: 5n });
    expect(encode(decode(text))).toBe(text);
  });
});

describe('decoding damaged or hostile text', () => {
  it.each([
    ['truncated JSON', '{"a":1'],
    ['not JSON at all', 'hello'],
    ['an empty string', ''],
    ['trailing garbage', '{"a":1} x'],
  ])('%s raises CorruptRecordError naming the record', (_what, text) => {
    const error = thrown(() => decode(text, 'position 7 of thread demo'));
    expect(CorruptRecordError.is(error)).toBe(true);
    expect(error.code).toBe('ERR_CORRUPT_RECORD');
    expect(error.message).toContain('position 7 of thread demo');
  });

  it('an unknown tag raises CorruptRecordError', () => {
    const error = thrown(() => decode('{"a":{"$t":"Function","v":"return 1"}}', 'item 3'));
    expect(CorruptRecordError.is(error)).toBe(true);
    expect(error.message).toContain('item 3');
    expect(error.message).toContain('Function');
  });

  it.each([
    ['a Date whose payload is an object', '{"$t":"Date","v":{"toString":"x","valueOf":"y"}}'],
    ['a Date whose payload is an empty object', '{"$t":"Date","v":{}}'],
    ['a BigInt that is not a number', '{"$t":"BigInt","v":"12abc"}'],
    ['Bytes whose payload is a number', '{"$t":"Bytes","v":5}'],
    ['a Map whose payload is not a list of pairs', '{"$t":"Map","v":5}'],
    ['a Set whose payload is not a list', '{"$t":"Set","v":{"a":1}}'],
    ['an Obj whose payload is null', '{"$t":"Obj","v":null}'],
  ])('a known tag with a malformed payload (%s) raises CorruptRecordError', (_what, text) => {
    const error = thrown(() => decode(text, 'a damaged row'));
    expect(error.code).toBe('ERR_CORRUPT_RECORD');
  });

  it('decoding never calls code from the input: no getter, toString or valueOf of the payload is invoked', () => {
    const calls: string[] = [];
    const originals = { toString: Object.prototype.toString, valueOf: Object.prototype.valueOf };
    // Spy on the only functions a payload object could reach through coercion.
    Object.prototype.toString = function (this: unknown) {
      calls.push('toString');
      return originals.toString.call(this);
    };
    Object.prototype.valueOf = function (this: unknown) {
      calls.push('valueOf');
      return originals.valueOf.call(this);
    };
    try {
      for (const text of ['{"$t":"Date","v":{"a":1}}', '{"x":{"$t":"BigInt","v":{"a":1}}}', '{"$t":"Set","v":{"length":2,"0":"a"}}']) {
        try {
          decode(text);
        } catch {
          // Rejecting the payload is fine; coercing it is not.
        }
      }
    } finally {
      Object.prototype.toString = originals.toString;
      Object.prototype.valueOf = originals.valueOf;
    }
    expect(calls).toEqual([]);
  });

  it('"__proto__" keys do not pollute prototypes, with or without tags in the text', () => {
    const texts = [
      '{"__proto__":{"polluted":1},"a":1}',
      '{"__proto__":{"polluted":1},"a":{"$t":"Undef"}}',
      '{"$t":"Obj","v":{"$t":"x","__proto__":{"polluted":1}}}',
      '{"$t":"Map","v":[["k",{"__proto__":{"polluted":1},"d":{"$t":"Date","v":null}}]]}',
      '[{"constructor":{"prototype":{"polluted":1}},"b":{"$t":"BigInt","v":"1"}}]',
    ];
    for (const text of texts) {
      const value = decode<Record<string, unknown>>(text);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
      expect((Object.prototype as unknown as Record<string, unknown>).polluted).toBeUndefined();
      const objects: unknown[] = [value];
      if (value instanceof Map) objects.push(...value.values());
      if (Array.isArray(value)) objects.push(...value);
      for (const o of objects) {
        if (typeof o !== 'object' || o === null || o instanceof Map || Array.isArray(o)) continue;
        // The decoded object is a plain object whose prototype was not replaced.
        expect(Object.getPrototypeOf(o)).toBe(Object.prototype);
        expect((o as Record<string, unknown>).polluted).toBeUndefined();
      }
    }
  });
});

describe('unencodable values', () => {
  class Point {
    constructor(readonly x: number) {}
  }

  it.each([
    ['a function', { a: [1, { f: () => 1 }] }, '$.a[1].f', /function/],
    ['a symbol', { s: Symbol('x') }, '$.s', /symbol/],
    ['a class instance', { p: new Point(1) }, '$.p', /Point/],
    ['a typed array other than Uint8Array', { f: new Float64Array(2) }, '$.f', /Float64Array/],
    ['a function inside a Map value', { m: new Map([['k', () => 0]]) }, '$.m<map>', /function/],
    ['a function inside a Set', { s: new Set([() => 0]) }, '$.s<set>', /function/],
  ])('%s is rejected with its path', (_what, value, path, reason) => {
    const error = thrown(() => encode(value)) as UnencodableValueError;
    expect(UnencodableValueError.is(error)).toBe(true);
    expect(error.code).toBe('ERR_UNENCODABLE');
    expect(error.path.startsWith(path)).toBe(true);
    expect(error.reason).toMatch(reason);
    expect(error.message).toContain(error.path);
  });

  it('a cycle is rejected with the path where it closes', () => {
    const node: Record<string, unknown> = { name: 'root', children: [] };
    (node.children as unknown[]).push({ parent: node });
    const error = thrown(() => encode({ tree: node })) as UnencodableValueError;
    expect(error.code).toBe('ERR_UNENCODABLE');
    expect(error.path).toBe('$.tree.children[0].parent');
    expect(error.reason).toMatch(/cycle/);
  });

  it('a value shared twice without a cycle is not a cycle', () => {
    const shared = { k: 1 };
    expect(roundTrip({ a: shared, b: [shared] })).toStrictEqual({ a: { k: 1 }, b: [{ k: 1 }] });
  });

  it('the root path can be named by the caller', () => {
    const error = thrown(() => encode({ f: () => 1 }, 'summary')) as UnencodableValueError;
    expect(error.path).toBe('summary.f');
  });
});
