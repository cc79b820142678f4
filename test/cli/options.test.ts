/**
 * The CLI's flag value parsers: a bad value is commander's InvalidArgumentError
 * (exit 2, before anything is opened), a good one the value the API takes.
 */
import { InvalidArgumentError } from 'commander';
import { describe, expect, it } from 'vitest';
import { durationMs, threadOrder } from '../../src/cli/options.js';

describe('durationMs (--lease-ms, --poll-ms)', () => {
  it('takes a duration or a whole number of ms, and gives ms', () => {
    expect(['30000', '30s', '0.5m', '500ms', '2h'].map(durationMs)).toEqual([30_000, 30_000, 30_000, 500, 7_200_000]);
  });

  it('refuses what is not a duration of at least 1 ms', () => {
    for (const value of ['long', '0', '0ms', '-5', '1.5ms', '']) expect(() => durationMs(value), value).toThrow(InvalidArgumentError);
  });
});

describe('threadOrder (--order)', () => {
  it("takes the API's order values, and the old spelling 'updated'", () => {
    expect(['id', 'updatedAt', 'updated'].map(threadOrder)).toEqual(['id', 'updatedAt', 'updatedAt']);
    expect(() => threadOrder('newest')).toThrow('Allowed choices are id, updatedAt.');
  });
});
