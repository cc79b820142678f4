/**
 * ItemChecksum: what a snapshot keeps of the items it points at. It must change
 * with any text and any boundary between texts, be the same however the list was
 * built (at once, or extended step by step, as a cursor does), and never change a
 * digest already handed out.
 */
import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import zlib from 'node:zlib';
import { ItemChecksum, crc32Js } from '../../src/codec/hash.js';

describe('ItemChecksum', () => {
  it('is the same whether the list is digested at once or extended item by item', () => {
    const texts = ['"a"', '{"b":1}', '"ü"', '"🧭 wide"', 'x'.repeat(70_000), '"z"'];
    let stepwise = ItemChecksum.of([]);
    for (const text of texts) stepwise = stepwise.extend([text]);
    expect(stepwise.value()).toBe(ItemChecksum.of(texts).value());
    expect(stepwise.count).toBe(texts.length);
    expect(ItemChecksum.of(texts.slice(0, 2)).extend(texts.slice(2)).value()).toBe(ItemChecksum.of(texts).value());
  });

  it('changes with any character, any boundary and the order of the items', () => {
    const base = ItemChecksum.of(['12', '3']).value();
    expect(ItemChecksum.of(['1', '23']).value()).not.toBe(base);
    expect(ItemChecksum.of(['123']).value()).not.toBe(base);
    expect(ItemChecksum.of(['3', '12']).value()).not.toBe(base);
    expect(ItemChecksum.of(['12', '4']).value()).not.toBe(base);
    expect(ItemChecksum.of(['12', '3', '']).value()).not.toBe(base);
    // Latin-1 and wider characters are told apart exactly.
    expect(ItemChecksum.of(['\u00e9']).value()).not.toBe(ItemChecksum.of(['\u01e9']).value());
    expect(ItemChecksum.of(['\u00e9\u0000']).value()).not.toBe(ItemChecksum.of(['\u00e9']).value());
    expect(ItemChecksum.of(['\u4e00']).value()).not.toBe(ItemChecksum.of(['\u5e00']).value());
    expect(ItemChecksum.of(['\u0100']).value()).not.toBe(ItemChecksum.of(['\u0000\u0001']).value());
  });

  it('leaves a digest as it was when it is extended, and two extensions of one digest apart', () => {
    const root = ItemChecksum.of(['"a"']);
    const before = root.value();
    const left = root.extend(['"b"']);
    const right = root.extend(['"c"', '"d"']);
    expect(root.value()).toBe(before);
    expect(root.count).toBe(1);
    expect(left.value()).toBe(ItemChecksum.of(['"a"', '"b"']).value());
    expect(right.value()).toBe(ItemChecksum.of(['"a"', '"c"', '"d"']).value());
    expect(left.extend(['"e"']).value()).toBe(ItemChecksum.of(['"a"', '"b"', '"e"']).value());
  });

  it("is zlib's CRC-32, whichever implementation the runtime has (the JavaScript one matches the native one)", () => {
    const bytes = randomBytes(100_000);
    expect(crc32Js(bytes)).toBe(zlib.crc32(bytes));
    expect(crc32Js(bytes.subarray(5000), crc32Js(bytes.subarray(0, 5000)))).toBe(zlib.crc32(bytes));
    expect(ItemChecksum.of(['"a"']).value()).toMatch(/^crc32:[0-9a-f]{16}$/);
  });

  it('extendBytes over ASCII texts given as their bytes equals extend over the texts: adjacent ones, ones apart, over a thousand lengths', () => {
    const texts = Array.from({ length: 1_500 }, (_, i) => JSON.stringify({ i, text: 'x'.repeat(i % 97) }));
    // As a pack holds them: one JSON array, texts between its brackets and commas.
    const array = Buffer.from(`[${texts.join(',')}]`, 'latin1');
    const starts: number[] = [];
    let at = 1;
    for (const text of texts) {
      starts.push(at);
      at += text.length + 1;
    }
    const base = ItemChecksum.of(['"before"']);
    const lengths = texts.map((t) => t.length);
    expect(base.extendBytes(array, starts, lengths).value()).toBe(base.extend(texts).value());
    expect(base.extendBytes(array, starts, lengths).count).toBe(1 + texts.length);
    // Texts that follow one another with nothing between them are checksummed as one run.
    const joined = Buffer.from(texts.join(''), 'latin1');
    const adjacent: number[] = [];
    at = 0;
    for (const text of texts) {
      adjacent.push(at);
      at += text.length;
    }
    expect(ItemChecksum.of([]).extendBytes(joined, adjacent, lengths).value()).toBe(ItemChecksum.of(texts).value());
    expect(base.extendBytes(array, [], []).value()).toBe(base.value());
  });
});
