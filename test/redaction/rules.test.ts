/**
 * The redaction module alone: path rules replace the value at a path whole (strings,
 * numbers, objects, list items through `[*]` and indexes), patterns replace matches
 * inside every string (keys, Map and Set members too), a value a path hid is hidden
 * where the same output repeats it, nothing is mutated, and bad rules are typed errors.
 */
import { describe, expect, it } from 'vitest';
import { InvalidOptionError } from '../../src/errors.js';
import { mergeRules, REDACTED, Redactor, redactionRules, redactValue } from '../../src/internal/redaction.js';
import { z } from 'zod';
import { defineState } from '../../src/state/schema.js';
import { field } from '../../src/state/fields.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import { memory } from '../../src/engines/memory/index.js';

describe('path rules', () => {
  const rules = redactionRules({ paths: ['customer.email', 'messages[*].content', 'cards[1]', 'profile.*'] }, ['apiKey']);

  it('replace the value at each path whole, keeping the rest and the input untouched', () => {
    const state = {
      apiKey: { id: 'k1', secret: 'abcd' },
      customer: { email: 'ana@example.com', name: 'Ana' },
      messages: [{ role: 'user', content: 'hello there' }, { role: 'bot', content: 'hi back' }],
      cards: ['1111', '2222', '3333'],
      profile: { phone: 555_1234, city: 'Oslo' },
      other: 'visible',
    };
    const copy = structuredClone(state);
    const shown = new Redactor(rules).state(state);
    expect(shown).toEqual({
      apiKey: REDACTED,
      customer: { email: REDACTED, name: 'Ana' },
      messages: [{ role: 'user', content: REDACTED }, { role: 'bot', content: REDACTED }],
      cards: ['1111', REDACTED, '3333'],
      profile: { phone: REDACTED, city: REDACTED },
      other: 'visible',
    });
    expect(state).toEqual(copy);
  });

  it('hide what a path hid where the same output repeats it', () => {
    const r = new Redactor(rules);
    r.state({ customer: { email: 'ana@example.com' } });
    expect(r.value({ payload: 'mail ana@example.com now', list: ['ana@example.com'] })).toEqual({ payload: `mail ${REDACTED} now`, list: [REDACTED] });
  });

  it('keep list items by index (a diff of appended items)', () => {
    const r = new Redactor(redactionRules({ paths: ['log[2]'] }));
    expect(r.items('log', 1, ['b', 'c', 'd'])).toEqual(['b', REDACTED, 'd']);
  });
});

describe('patterns', () => {
  it('replace matches in strings, keys, Map and Set members, not other values', () => {
    const r = new Redactor(redactionRules({ patterns: [/sk-[a-z0-9]{8,}/i, 'tok_[0-9]+'] }));
    const when = new Date(0);
    const shown = r.value({ a: 'use sk-abcdefgh12 and tok_123', ['sk-aaaaaaaaaa']: 1, m: new Map([['tok_9', 'x']]), s: new Set(['sk-bbbbbbbbbb']), when, n: 42 }) as Record<string, unknown>;
    expect(shown.a).toBe(`use ${REDACTED} and ${REDACTED}`);
    expect(shown[REDACTED]).toBe(1);
    expect([...(shown.m as Map<string, string>).keys()]).toEqual([REDACTED]);
    expect([...(shown.s as Set<string>)]).toEqual([REDACTED]);
    expect(shown.when).toBe(when);
    expect(shown.n).toBe(42);
  });

  it('recorded outputs and effect outcomes by name: whole, or paths inside', () => {
    const rules = redactionRules({ records: { crm: true, lookup: ['email'] }, effects: { charge: ['card.number'] } });
    expect(redactValue({ a: 1 }, rules, { as: 'record', name: 'crm' })).toBe(REDACTED);
    expect(redactValue({ email: 'x@y.z', ok: true }, rules, { as: 'record', name: 'lookup' })).toEqual({ email: REDACTED, ok: true });
    expect(redactValue({ card: { number: '4111' } }, rules, { as: 'effect', name: 'charge' })).toEqual({ card: { number: REDACTED } });
    expect(redactValue({ card: { number: '4111' } }, rules, { as: 'effect', name: 'other' })).toEqual({ card: { number: '4111' } });
  });
});

describe('rules', () => {
  it('merge (more hidden wins) and survive JSON', () => {
    const a = redactionRules({ paths: ['a'], records: { r: ['x'] }, patterns: [/p1/] });
    const b = redactionRules({ paths: ['b'], records: { r: true }, patterns: [/p1/, /p2/g] });
    const merged = mergeRules(JSON.parse(JSON.stringify(a)), b);
    expect(merged).toEqual({ paths: ['a', 'b'], records: { r: true }, effects: {}, patterns: [{ source: 'p1', flags: '' }, { source: 'p2', flags: '' }] });
  });

  it('refuse a path that does not parse and a pattern that does not compile or matches nothing but ""', () => {
    expect(() => redactionRules({ paths: ['a..b'] })).toThrow(InvalidOptionError);
    expect(() => redactionRules({ patterns: ['(unclosed'] })).toThrow(InvalidOptionError);
    expect(() => redactionRules({ patterns: [/x*/] })).toThrow(/empty string/);
  });
});

describe('compile({ redact: { paths } })', () => {
  const Child = defineState({ fields: { answer: field.model(z.string(), { default: '' }) } });
  const State = defineState({
    fields: { customer: field.model(z.object({ email: z.string() }), { default: { email: '' } }), notes: field.model(z.array(z.string()), { default: [] }) },
    derived: { count: (s: { notes: string[] }) => s.notes.length },
  });
  const child = graph(Child).node('c', () => ({})).edge(START, 'c').edge('c', END);
  const compile = (paths: string[]) =>
    graph(State)
      .node('a', () => ({}))
      .subgraph('research', child)
      .edge(START, 'a')
      .edge('a', 'research')
      .edge('research', END)
      .compile({ engine: memory(), redact: { paths } });

  it('refuses a path whose first segment is no field, naming the path and the fields', () => {
    for (const path of ['custmer.email', 'Customer', '[0].email']) {
      let error: unknown;
      try {
        compile([path]);
      } catch (e) {
        error = e;
      }
      expect(InvalidOptionError.is(error), path).toBe(true);
      expect((error as Error).message).toContain(JSON.stringify(path));
      expect((error as Error).message).toContain('customer, notes, count, answer');
    }
  });

  it("takes paths that start at a field, a derived value, a child graph's field, or *", () => {
    expect(() => compile(['customer.email', 'customer.typo', 'notes[*]', 'count', 'answer', '*.email'])).not.toThrow();
  });
});
