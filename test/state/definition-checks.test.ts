/**
 * `field.model`, `field.runtime` and `defineState` refuse, when they are called, a key
 * they do not take or a value of the wrong kind, with SchemaDefinitionError naming it:
 * a misspelt reducer, default, conflict rule or upcaster map would otherwise fail at
 * the first write, fail every new thread, or leave stored threads unreadable.
 * `schemaVersion` is taken as the other name of `version`.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { SchemaDefinitionError } from '../../src/errors.js';
import { defineState } from '../../src/state/schema.js';
import { field } from '../../src/state/fields.js';
import { memory } from '../../src/engines/memory/index.js';
import { END, START, graph } from '../../src/runtime/builder.js';

function refusal(make: () => unknown): string {
  try {
    make();
  } catch (error) {
    expect(SchemaDefinitionError.is(error), String(error)).toBe(true);
    return (error as Error).message;
  }
  throw new Error('expected a SchemaDefinitionError, nothing was thrown');
}

const loose = field as unknown as Record<'model' | 'runtime', (schema: unknown, options?: unknown) => unknown>;
const define = defineState as unknown as (definition: unknown) => unknown;

describe('state definitions are checked when declared', () => {
  it('field.model refuses an unknown option, a reducer, conflict rule or redact flag of the wrong kind, and a first argument that is not a schema', () => {
    expect(refusal(() => loose.model(z.array(z.string()), { reduce: 'apend' }))).toMatch(/reduce must be 'replace', 'append' or a function/);
    expect(refusal(() => loose.model(z.string(), { defualt: 'x' }))).toMatch(/unknown option "defualt"/);
    expect(refusal(() => loose.model(z.string(), { onConflict: 'merge' }))).toMatch(/onConflict must be 'reject' or 'lastWins'/);
    expect(refusal(() => loose.model(z.string(), { redact: 'yes' }))).toMatch(/redact must be true or false/);
    expect(refusal(() => loose.model(z.string(), null))).toMatch(/takes an options object/);
    expect(refusal(() => loose.model({ type: 'string' }))).toMatch(/Standard Schema/);
  });

  it('field.runtime refuses an unknown option and a compute that is not a function', () => {
    expect(refusal(() => loose.runtime(z.number(), { compute: 5 }))).toMatch(/compute must be a function/);
    expect(refusal(() => loose.runtime(z.number(), { reduce: 'append' }))).toMatch(/unknown option "reduce"/);
  });

  it('defineState refuses unknown keys, fields that are not declared fields, and upcasters, derived values and limits of the wrong kind', () => {
    const fields = { a: field.model(z.string(), { default: '' }) };
    expect(refusal(() => define({ fields, upcats: { 1: (s: unknown) => s } }))).toMatch(/unknown option "upcats"/);
    expect(refusal(() => define({ fields: { a: z.string() } }))).toMatch(/field "a" must be declared with field.model.*bare schema.*field.model\(schema\)/);
    expect(refusal(() => define({ fields: { a: 'string' } }))).toMatch(/field "a" must be declared/);
    expect(refusal(() => define({ fields: [] }))).toMatch(/fields must be an object/);
    expect(refusal(() => define({ fields, version: 2, upcast: { one: (s: unknown) => s } }))).toMatch(/upcast keys are the versions/);
    expect(refusal(() => define({ fields, version: 2, upcast: { 1: 'rename a to b' } }))).toMatch(/upcast\[1\] must be a function/);
    expect(refusal(() => define({ fields, derived: { b: 'a + 1' } }))).toMatch(/derived "b" must be a function/);
    expect(refusal(() => define({ fields, onConflict: 'merge' }))).toMatch(/onConflict must be/);
    expect(refusal(() => define({ fields, maxFieldBytes: 0 }))).toMatch(/maxFieldBytes must be a whole number/);
    expect(refusal(() => define({ fields, version: 2, schemaVersion: 3 }))).toMatch(/name one thing/);
    expect(refusal(() => define(null))).toMatch(/takes a definition object/);
  });

  it('schemaVersion is the other name of version: it is stored with every checkpoint and steers the upcasters', async () => {
    const engine = memory();
    const V1 = defineState({ fields: { note: field.model(z.string(), { default: '' }) } });
    const write = graph(V1).node('n', async () => ({ note: 'old' })).edge(START, 'n').edge('n', END).compile({ engine, name: 'g' });
    await write.run({ thread: 't' });
    const V2 = defineState({
      schemaVersion: 2,
      fields: { text: field.model(z.string(), { default: '' }) },
      upcast: { 1: ({ note, ...rest }) => ({ ...rest, text: note }) },
    });
    expect(V2.version).toBe(2);
    const read = graph(V2).node('n', async () => ({})).edge(START, 'n').edge('n', END).compile({ engine, name: 'g' });
    expect((await read.getState({ thread: 't' })).text).toBe('old');
    await engine.close();
  });
});
