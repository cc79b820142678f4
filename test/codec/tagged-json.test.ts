/**
 * The codec: JSON with tagged types round-trips every value cairn
 * stores; the output is canonical (key order never matters), so the hash chain is
 * stable; decoding malformed text or an unknown tag raises CorruptRecordError and
 * never executes code nor pollutes prototypes; values that cannot be stored are
 * rejected with the path to the offending part. No text nests deeper than
 * MAX_VALUE_DEPTH: deeper values are ValueTooDeepError, deeper text is corrupt, and
 * what was written at the limit reads back in a fresh process (the cold-read test
 * runs the BUILT codec, dist/: `npm test` builds first).
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { MAX_VALUE_DEPTH, RawJson, decode, encode } from '../../src/codec/tagged-json.js';
import { CorruptRecordError, UnencodableValueError, ValueTooDeepError } from '../../src/errors.js';
import * as cairn from '../../src/index.js';
import { tempDir } from '../helpers/temp-dirs.js';

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
    ['an Error', { e: new Error('x') }, '$.e', /Error/],
    ['a RegExp', { r: [/x/] }, '$.r[0]', /RegExp/],
    ['a boxed string', { s: new String('x') }, '$.s', /String/],
    ['a boxed number', { n: new Number(1) }, '$.n', /Number/],
    ['a WeakMap', { w: new WeakMap() }, '$.w', /WeakMap/],
    ['a function inside a null-prototype object', { o: Object.assign(Object.create(null) as object, { f: () => 0 }) }, '$.o.f', /function/],
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

describe('types that round-trip faithfully', () => {
  it('a Buffer reads back as a Buffer with memory of its own; a Uint8Array as a plain Uint8Array', () => {
    const buffer = Buffer.from('héllo');
    const back = roundTrip({ buffer }).buffer;
    expect(Buffer.isBuffer(back)).toBe(true);
    expect(back.toString()).toBe('héllo');
    // Not a view into Buffer's shared pool: the decoded bytes are all its memory holds.
    expect(back.byteOffset).toBe(0);
    expect(back.buffer.byteLength).toBe(back.length);
    expect(Buffer.isBuffer(roundTrip(Buffer.alloc(0)))).toBe(true);

    const bytes = roundTrip(new Uint8Array([1, 2, 3]));
    expect(Object.getPrototypeOf(bytes)).toBe(Uint8Array.prototype);
    expect(Buffer.isBuffer(bytes)).toBe(false);
    expect(Array.from(bytes)).toEqual([1, 2, 3]);
  });

  it('a null-prototype object reads back without a prototype, nested, with "$t" and "__proto__" keys of its own', () => {
    const inner = Object.assign(Object.create(null) as Record<string, unknown>, { $t: 'Date', v: 'not a tag' });
    const outer = Object.create(null) as Record<string, unknown>;
    outer.z = 1;
    outer.inner = inner;
    outer.list = [Object.create(null)];
    Object.defineProperty(outer, '__proto__', { value: { polluted: 1 }, enumerable: true, writable: true, configurable: true });
    const back = roundTrip({ outer }).outer;
    expect(Object.getPrototypeOf(back)).toBeNull();
    expect(Object.getPrototypeOf(back.inner)).toBeNull();
    expect(Object.getPrototypeOf((back.list as object[])[0])).toBeNull();
    expect({ ...(back.inner as object) }).toEqual({ $t: 'Date', v: 'not a tag' });
    expect(Object.keys(back).sort()).toEqual(['__proto__', 'inner', 'list', 'z']);
    expect(Object.getOwnPropertyDescriptor(back, '__proto__')!.value).toEqual({ polluted: 1 });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    // Different values, different texts: a plain object with the same fields is not the same value.
    expect(encode(Object.assign(Object.create(null) as object, { a: 1 }))).not.toBe(encode({ a: 1 }));
  });

  it('array holes stay holes, apart from undefined elements, at any position', () => {
    // eslint-disable-next-line no-sparse-arrays
    const sparse = [1, , 3, undefined, ,];
    const back = roundTrip(sparse);
    expect(back).toHaveLength(5);
    expect([0, 1, 2, 3, 4].map((i) => i in back)).toEqual([true, false, true, true, false]);
    expect(back[3]).toBeUndefined();
    const empty = roundTrip(new Array(3));
    expect(empty).toHaveLength(3);
    expect(0 in empty || 1 in empty || 2 in empty).toBe(false);
    // eslint-disable-next-line no-sparse-arrays
    const inMap = roundTrip({ m: new Map([['k', [, 1]]]) }).m.get('k')!;
    expect(inMap).toHaveLength(2);
    expect(0 in inMap).toBe(false);
  });

  it('each new tag has one canonical text', () => {
    expect(encode(Buffer.from([1, 2]))).toBe('{"$t":"Buffer","v":"AQI="}');
    expect(encode(new Uint8Array([1, 2]))).toBe('{"$t":"Bytes","v":"AQI="}');
    expect(encode(Object.assign(Object.create(null) as object, { b: 1, a: [] }))).toBe('{"$t":"NullProto","v":{"a":[],"b":1}}');
    // eslint-disable-next-line no-sparse-arrays
    expect(encode([, 1, undefined])).toBe('[{"$t":"Hole"},1,{"$t":"Undef"}]');
    const text = encode({ b: Buffer.from('x'), n: Object.create(null), h: new Array(2) });
    expect(encode(decode(text))).toBe(text);
  });

  it('texts written before these tags decode exactly as before', () => {
    // Bytes (what a Buffer used to be stored as) stay a Uint8Array; Undef in an array stays undefined.
    const bytes = decode<Uint8Array>('{"$t":"Bytes","v":"aMOpbGxv"}');
    expect(Object.getPrototypeOf(bytes)).toBe(Uint8Array.prototype);
    expect(Buffer.from(bytes).toString()).toBe('héllo');
    const list = decode<unknown[]>('[1,{"$t":"Undef"},3]');
    expect(list).toHaveLength(3);
    expect(1 in list).toBe(true);
    const plain = decode<object>('{"k":1,"o":{"$t":"Obj","v":{"$t":"x"}}}');
    expect(Object.getPrototypeOf(plain)).toBe(Object.prototype);
    expect(plain).toStrictEqual({ k: 1, o: { $t: 'x' } });
    for (const text of ['{"$t":"Bytes","v":"aMOpbGxv"}', '[1,{"$t":"Undef"},3]', '{"k":1,"o":{"$t":"Obj","v":{"$t":"x"}}}']) expect(encode(decode(text))).toBe(text);
  });

  it.each([
    ['a Hole at the root', '{"$t":"Hole"}'],
    ['a Hole as an object field', '{"a":{"$t":"Hole"}}'],
    ['a Buffer whose payload is not base64', '{"$t":"Buffer","v":"***="}'],
    ['a NullProto whose payload is a list', '{"$t":"NullProto","v":[1]}'],
  ])('a forged new tag (%s) raises CorruptRecordError', (_what, text) => {
    expect(thrown(() => decode(text, 'a damaged row')).code).toBe('ERR_CORRUPT_RECORD');
  });
});

describe('what is not stored: symbol keys and non-enumerable properties', () => {
  it('are left out, as JSON.stringify and structuredClone leave them out', () => {
    const value: Record<string | symbol, unknown> = { a: 1, [Symbol('s')]: () => 0 };
    Object.defineProperty(value, 'hidden', { value: () => 0, enumerable: false });
    const list = Object.assign([1, 2], { extra: 'x' });
    expect(encode(value)).toBe('{"a":1}');
    expect(encode(list)).toBe('[1,2]');
    expect(roundTrip(value)).toStrictEqual({ a: 1 });
  });
});

/** Nesting depth of JSON text (`[]` is 1), counted here independently of the codec. */
function jsonDepth(text: string): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '[' || c === '{') max = Math.max(max, ++depth);
    else if (c === ']' || c === '}') depth--;
  }
  return max;
}

/** A value of each shape whose text nests exactly `levels` deep (each shape costs what it is stored as). */
const shapes: [string, (levels: number) => unknown][] = [
  ['arrays', (n) => wrap(1, n, (v) => [v])],
  ['objects', (n) => wrap('bottom', n, (v) => ({ a: v }))],
  ['objects with a Date at the bottom', (n) => wrap(new Date(0), n - 1, (v) => ({ a: v }))],
  ['arrays with undefined, a bigint and -0 at the bottom', (n) => wrap([undefined, 1n, -0], n - 2, (v) => [v])],
  ['arrays with a hole at the bottom', (n) => wrap(new Array(1), n - 2, (v) => [v])],
  ['Maps (three levels each)', (n) => pad(n % 3, wrap('bottom', Math.floor(n / 3), (v) => new Map([['k', v]])))],
  ['Sets (two levels each)', (n) => pad(n % 2, wrap('bottom', Math.floor(n / 2), (v) => new Set([v])))],
  ['objects with a "$t" key (two levels each)', (n) => pad(n % 2, wrap('bottom', Math.floor(n / 2), (v) => ({ $t: v })))],
  ['null-prototype objects (two levels each)', (n) => pad(n % 2, wrap('bottom', Math.floor(n / 2), (v) => Object.assign(Object.create(null) as object, { a: v })))],
];

function wrap(bottom: unknown, times: number, around: (v: unknown) => unknown): unknown {
  let value = bottom;
  for (let i = 0; i < times; i++) value = around(value);
  return value;
}

function pad(arrays: number, value: unknown): unknown {
  return wrap(value, arrays, (v) => [v]);
}

/** Runs `body` in a fresh node process that has the built codec's exports in scope and prints its result. */
function codecChild(body: string, args: string[], nodeFlags: string[] = []): string {
  const codec = pathToFileURL(join(dirname(fileURLToPath(import.meta.url)), '../../dist/codec/tagged-json.js')).href;
  const script = `import { readFileSync } from 'node:fs';
    const { MAX_VALUE_DEPTH, decode, encode } = await import(${JSON.stringify(codec)});
    ${body}`;
  return execFileSync(process.execPath, [...nodeFlags, '--input-type=module', '-e', script, ...args], { encoding: 'utf8' });
}

describe('depth limit (MAX_VALUE_DEPTH)', () => {
  it('is 256 levels, exported from the package entry', () => {
    expect(MAX_VALUE_DEPTH).toBe(256);
    expect(cairn.MAX_VALUE_DEPTH).toBe(MAX_VALUE_DEPTH);
    expect(cairn.ValueTooDeepError).toBe(ValueTooDeepError);
  });

  it.each(shapes)('%s: MAX_VALUE_DEPTH levels round-trip; one more is ValueTooDeepError naming the path and the limit', (_shape, build) => {
    const text = encode(build(MAX_VALUE_DEPTH));
    expect(jsonDepth(text)).toBe(MAX_VALUE_DEPTH);
    expect(encode(decode(text))).toBe(text);

    const error = thrown(() => encode({ deep: build(MAX_VALUE_DEPTH) }, 'store x/k')) as ValueTooDeepError;
    expect(error).toBeInstanceOf(ValueTooDeepError);
    expect(error.code).toBe('ERR_VALUE_TOO_DEEP');
    expect(error.limit).toBe(MAX_VALUE_DEPTH);
    expect(error.path.startsWith('store x/k.deep')).toBe(true);
    expect(error.message).toContain(String(MAX_VALUE_DEPTH));
    expect(error.message).toContain('MAX_VALUE_DEPTH');
    expect(error.message).toContain(error.path.slice(0, 40));
  });

  it('names the path where the limit is crossed', () => {
    // The root object and the list are two levels: the 255th object down the list is one too many.
    expect(jsonDepth(encode({ list: [0, 1, 2, wrap(1, MAX_VALUE_DEPTH - 2, (v) => ({ b: v }))] }))).toBe(MAX_VALUE_DEPTH);
    const error = thrown(() => encode({ list: [0, 1, 2, wrap(1, MAX_VALUE_DEPTH - 1, (v) => ({ b: v }))] })) as ValueTooDeepError;
    expect(error.path).toBe('$.list[3]' + '.b'.repeat(MAX_VALUE_DEPTH - 2));
  });

  it('10,000 levels are ValueTooDeepError, not a RangeError', () => {
    for (const [, build] of shapes) {
      const error = thrown(() => encode(build(10_000)));
      expect(error).not.toBeInstanceOf(RangeError);
      expect(error.code).toBe('ERR_VALUE_TOO_DEEP');
    }
  });

  it('a spliced RawJson text counts with its own depth', () => {
    const inner = encode(wrap(1, MAX_VALUE_DEPTH - 1, (v) => [v]));
    expect(jsonDepth(encode({ a: new RawJson(inner) }))).toBe(MAX_VALUE_DEPTH);
    expect(thrown(() => encode({ a: [new RawJson(inner)] })).code).toBe('ERR_VALUE_TOO_DEEP');
    // A bracket inside a string is not a level.
    expect(encode([[new RawJson(`["${'['.repeat(600)}\\"["]`)]])).toContain('[[[');
  });

  it('a stack overflow inside encode is ValueTooDeepError naming the path, never a RangeError', () => {
    // Here a getter recursing without end; what matters is that the encoder's call ran out of stack.
    const runaway = (n: number): number => runaway(n + 1) + 1;
    const value = { list: [{ get total() { return runaway(0); } }] };
    const error = thrown(() => encode(value)) as ValueTooDeepError;
    expect(error).not.toBeInstanceOf(RangeError);
    expect(error.code).toBe('ERR_VALUE_TOO_DEEP');
    expect(error.path).toBe('$.list[0].total');
    expect(error.message).toMatch(/call stack ran out/);
    expect(error.cause).toBeInstanceOf(RangeError);
  });

  it('in a fresh process, encoding at the limit from a stack too deep for it is ValueTooDeepError; decoding works from there', () => {
    // The caller's stack grows ten frames per attempt: the first attempt that does not
    // fit runs out deep inside the encoder, which must report it as ValueTooDeepError.
    const out = codecChild(
      `const value = Array.from({ length: MAX_VALUE_DEPTH - 1 }).reduce((v) => ({ a: v }), 'bottom');
       const text = encode(value);
       const atDepth = (frames, fn) => (frames === 0 ? fn() : atDepth(frames - 1, fn));
       let frames = 0;
       let failure;
       for (; frames < 1_000_000 && !failure; frames += 10) {
         try { atDepth(frames, () => encode(value)); } catch (error) { failure = [error.constructor.name, error.code, /call stack ran out/.test(error.message)]; }
       }
       // The decoder does not recurse per level: it still has room where the encoder ran out.
       const decoded = encode(atDepth(frames, () => decode(text))) === text;
       console.log(JSON.stringify([failure, decoded]));`,
      [],
    );
    expect(JSON.parse(out)).toEqual([['ValueTooDeepError', 'ERR_VALUE_TOO_DEEP', true], true]);
  });

  it.each(shapes)('%s: tagged text one level over the limit decodes to CorruptRecordError naming the record; untagged text is parsed, never a RangeError', (_shape, build) => {
    const forged = `[${encode(build(MAX_VALUE_DEPTH))}]`;
    expect(jsonDepth(forged)).toBe(MAX_VALUE_DEPTH + 1);
    if (!forged.includes('"$t"')) {
      expect(decode(forged, 'store item k')).toEqual(JSON.parse(forged));
      return;
    }
    const error = thrown(() => decode(forged, 'store item k'));
    expect(error).toBeInstanceOf(CorruptRecordError);
    expect(error.message).toContain('store item k');
    expect(error.message).toContain(String(MAX_VALUE_DEPTH));
  });

  it('forged text 100,000 levels deep: tagged is CorruptRecordError, untagged is parsed without recursion; never a RangeError', () => {
    const n = 100_000;
    for (const text of ['{"a":'.repeat(n) + '{"$t":"Undef"}' + '}'.repeat(n), '{"$t":"Set","v":['.repeat(n) + ']}'.repeat(n)]) {
      const error = thrown(() => decode(text));
      expect(error).not.toBeInstanceOf(RangeError);
      expect(error.code).toBe('ERR_CORRUPT_RECORD');
    }
    for (const text of ['['.repeat(n) + ']'.repeat(n), '{"a":'.repeat(n) + '1' + '}'.repeat(n)]) {
      let value = decode<unknown>(text);
      let depth = 0;
      while (typeof value === 'object' && value !== null) {
        value = Array.isArray(value) ? value[0] : (value as { a: unknown }).a;
        depth++;
      }
      expect(depth).toBe(n);
    }
  });

  it('a fresh process decodes what a warm writer encoded at the limit, even from a deep stack', () => {
    // Warm: the writer's frames are the small ones of optimised code.
    for (let i = 0; i < 2000; i++) for (const [, build] of shapes) encode(build(20));
    const texts = shapes.map(([, build]) => encode(build(MAX_VALUE_DEPTH)));
    const file = join(tempDir('cairn-depth-'), 'texts.json');
    writeFileSync(file, JSON.stringify(texts));
    const out = codecChild(
      `const texts = JSON.parse(readFileSync(process.argv[1], 'utf8'));
       // Most of the stack is already used when the decoder is called.
       const atDepth = (frames, fn) => (frames === 0 ? fn() : atDepth(frames - 1, fn));
       const values = texts.map((text) => atDepth(8000, () => decode(text)));
       console.log(JSON.stringify(values.map((value, i) => encode(value) === texts[i])));`,
      [file],
    );
    expect(JSON.parse(out)).toEqual(shapes.map(() => true));
  });
});
