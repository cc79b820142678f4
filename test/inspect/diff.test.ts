/**
 * diffStates tells, field by field, how one state differs from another: a list grown
 * at its end as the items appended, a list that lost its tail as the items removed,
 * a field only in one state as added or removed, anything else as changed; equal
 * fields (compared by their encoding, so Dates and undefined compare as values) are
 * left out.
 */
import { describe, expect, it } from 'vitest';
import { diffStates } from '../../src/inspect/diff.js';

describe('diffStates', () => {
  it('leaves equal fields out, comparing values by their encoding', () => {
    expect(diffStates({ a: 1, at: new Date(0), u: undefined, m: new Map([['k', 1]]) }, { a: 1, at: new Date(0), u: undefined, m: new Map([['k', 1]]) }).fields).toEqual([]);
  });

  it('tells a list grown at its end as the appended items, with their indexes', () => {
    expect(diffStates({ messages: ['hi'] }, { messages: ['hi', 'ho', { role: 'ai' }] }).fields).toEqual([{ field: 'messages', kind: 'appended', from: 1, items: ['ho', { role: 'ai' }] }]);
  });

  it('tells a list that lost its tail as the removed items', () => {
    expect(diffStates({ messages: ['a', 'b', 'c'] }, { messages: ['a'] }).fields).toEqual([{ field: 'messages', kind: 'removed', from: 1, items: ['b', 'c'] }]);
  });

  it('tells a list changed in the middle, and any other value, as changed with both values', () => {
    expect(diffStates({ l: ['a', 'b'], topic: 'x', n: new Date(0) }, { l: ['z', 'b'], topic: 'y', n: new Date(1) }).fields).toEqual([
      { field: 'l', kind: 'changed', before: ['a', 'b'], after: ['z', 'b'] },
      { field: 'topic', kind: 'changed', before: 'x', after: 'y' },
      { field: 'n', kind: 'changed', before: new Date(0), after: new Date(1) },
    ]);
  });

  it('tells fields in one state only as added or removed, after the fields of the first state', () => {
    expect(diffStates({ old: 1, same: 2 }, { same: 2, fresh: undefined }).fields).toEqual([
      { field: 'old', kind: 'removed', before: 1 },
      { field: 'fresh', kind: 'added', after: undefined },
    ]);
  });

  it('tells undefined becoming a value as changed (a field that holds undefined is there)', () => {
    expect(diffStates({ at: undefined }, { at: '2026-01-01' }).fields).toEqual([{ field: 'at', kind: 'changed', before: undefined, after: '2026-01-01' }]);
  });
});
