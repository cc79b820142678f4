/**
 * ItemDigest: the digest a snapshot keeps of the items it points at. It must change
 * with any text and any boundary between texts, be the same however the list was
 * built (at once, or extended step by step, as a cursor does), and never change a
 * digest already handed out.
 */
import { describe, expect, it } from 'vitest';
import { ItemDigest } from '../../src/codec/hash.js';

describe('ItemDigest', () => {
  it('is the same whether the list is digested at once or extended item by item', () => {
    const texts = ['"a"', '{"b":1}', '"ü"', '"🧭 wide"', 'x'.repeat(70_000), '"z"'];
    let stepwise = ItemDigest.of([]);
    for (const text of texts) stepwise = stepwise.extend([text]);
    expect(stepwise.value()).toBe(ItemDigest.of(texts).value());
    expect(stepwise.count).toBe(texts.length);
    expect(ItemDigest.of(texts.slice(0, 2)).extend(texts.slice(2)).value()).toBe(ItemDigest.of(texts).value());
  });

  it('changes with any character, any boundary and the order of the items', () => {
    const base = ItemDigest.of(['12', '3']).value();
    expect(ItemDigest.of(['1', '23']).value()).not.toBe(base);
    expect(ItemDigest.of(['123']).value()).not.toBe(base);
    expect(ItemDigest.of(['3', '12']).value()).not.toBe(base);
    expect(ItemDigest.of(['12', '4']).value()).not.toBe(base);
    expect(ItemDigest.of(['12', '3', '']).value()).not.toBe(base);
    // Latin-1 and wider characters are told apart exactly.
    expect(ItemDigest.of(['\u00e9']).value()).not.toBe(ItemDigest.of(['\u01e9']).value());
    expect(ItemDigest.of(['\u00e9\u0000']).value()).not.toBe(ItemDigest.of(['\u00e9']).value());
    expect(ItemDigest.of(['\u4e00']).value()).not.toBe(ItemDigest.of(['\u5e00']).value());
    expect(ItemDigest.of(['\u0100']).value()).not.toBe(ItemDigest.of(['\u0000\u0001']).value());
  });

  it('leaves a digest as it was when it is extended, and two extensions of one digest apart', () => {
    const root = ItemDigest.of(['"a"']);
    const before = root.value();
    const left = root.extend(['"b"']);
    const right = root.extend(['"c"', '"d"']);
    expect(root.value()).toBe(before);
    expect(root.count).toBe(1);
    expect(left.value()).toBe(ItemDigest.of(['"a"', '"b"']).value());
    expect(right.value()).toBe(ItemDigest.of(['"a"', '"c"', '"d"']).value());
    expect(left.extend(['"e"']).value()).toBe(ItemDigest.of(['"a"', '"b"', '"e"']).value());
  });
});
