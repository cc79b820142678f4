/**
 * One test of "a plain object" for every reader that takes one key by key: an object
 * literal or a null-prototype object, never an array, a Map, a Date or a class
 * instance. Store filters, thread metadata and the redaction walk all answer the same.
 */
import { describe, expect, it } from 'vitest';
import { InvalidFilterError, InvalidOptionError } from '../../src/errors.js';
import { isPlainObject } from '../../src/internal/plain-object.js';
import { checkNewThread } from '../../src/internal/thread-query.js';
import { Redactor, redactionRules } from '../../src/internal/redaction.js';
import { parseFilter } from '../../src/store/filter.js';

class Point {
  constructor(readonly x = 1) {}
}
const nullProto = () => Object.assign(Object.create(null) as Record<string, unknown>, { a: 'v' });
const plain: [string, () => unknown][] = [
  ['an object literal', () => ({ a: 'v' })],
  ['a null-prototype object', nullProto],
];
const notPlain: [string, () => unknown][] = [
  ['an array', () => ['v']],
  ['a Map', () => new Map([['a', 'v']])],
  ['a Date', () => new Date(0)],
  ['a class instance', () => new Point()],
  ['null', () => null],
  ['a string', () => 'a'],
];

describe('isPlainObject', () => {
  it.each(plain)('%s is plain', (_name, make) => expect(isPlainObject(make())).toBe(true));
  it.each(notPlain)('%s is not', (_name, make) => expect(isPlainObject(make())).toBe(false));
});

describe('every reader takes the same objects for plain', () => {
  it('a store filter: plain and null-prototype objects are filters, the rest InvalidFilterError', () => {
    for (const [, make] of plain) expect(parseFilter(make() as never)).toHaveLength(1);
    for (const [name, make] of notPlain.filter(([n]) => n !== 'null')) expect(() => parseFilter(make() as never), name).toThrow(InvalidFilterError);
  });

  it('thread metadata: plain and null-prototype objects are metadata, the rest InvalidOptionError', () => {
    for (const [, make] of plain) expect(() => checkNewThread({ metadata: make() })).not.toThrow();
    for (const [name, make] of notPlain) expect(() => checkNewThread({ metadata: make() }), name).toThrow(InvalidOptionError);
  });

  it('the redaction walk copies plain and null-prototype objects (keeping the prototype) and leaves class instances whole', () => {
    const redactor = new Redactor(redactionRules({ patterns: [/secret/] }));
    const literal = redactor.value({ a: 'secret' }) as Record<string, unknown>;
    expect(literal.a).not.toBe('secret');
    const bare = redactor.value(Object.assign(Object.create(null) as object, { a: 'secret' })) as Record<string, unknown>;
    expect(Object.getPrototypeOf(bare)).toBeNull();
    expect(bare.a).not.toBe('secret');
    const point = Object.assign(new Point(), { note: 'secret' });
    expect(redactor.value(point)).toBe(point);
  });
});
