/**
 * An upcaster sees a checkpoint's fields as stored, and a field left at its default is
 * never stored: an upcaster that renames it (`s.to = s.from; delete s.from`) hands on
 * undefined. Such a field, undefined after upcasting and not stored, reads as its
 * current default (a literal or a factory's value), while a stored value, undefined
 * included, is carried over as it was. Threads are written by an app compiled at
 * schema version 1 on a SQLite file and read by an app at version 2 on the same file.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Engine } from '../../src/contracts/engine.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { END, START, defineState, field, graph } from '../../src/index.js';

const dir = mkdtempSync(join(tmpdir(), 'cairn-upcast-unstored-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let engines: Engine[] = [];
afterEach(async () => {
  await Promise.all(engines.map((e) => e.close()));
  engines = [];
});
const open = (file: string): Engine => {
  const engine = sqlite(file);
  engines.push(engine);
  return engine;
};

const V1 = defineState({
  fields: {
    n: field.model(z.number(), { default: 0 }),
    title: field.model(z.string(), { default: '' }),
    tags: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
    note: field.model(z.string().optional()),
  },
});

/** Version 1's graph: one step that writes `n` and, when the input asks, `title` and a tag. */
const v1App = (engine: Engine) =>
  graph(V1)
    .node('step', (s) => ({ n: s.n + 1 }))
    .edge(START, 'step')
    .edge('step', END)
    .compile({ engine });

type Upcast = (s: Record<string, unknown>) => Record<string, unknown>;
let made = 0;
/** Version 2: `title` renamed `heading` and `tags` renamed `labels`, with new defaults; `stamp` a factory default. */
const V2 = (upcast: Upcast) =>
  defineState({
    version: 2,
    fields: {
      n: field.model(z.number(), { default: 0 }),
      heading: field.model(z.string(), { default: 'untitled' }),
      labels: field.model(z.array(z.string()), { reduce: 'append', default: () => ['fresh'] }),
      note: field.model(z.string().optional()),
      stamp: field.model(z.string(), { default: () => `made-${++made}` }),
    },
    upcast: { 1: upcast },
  });
const v2App = (engine: Engine, upcast: Upcast) =>
  graph(V2(upcast))
    .node('step', (s) => ({ n: s.n + 1 }))
    .edge(START, 'step')
    .edge('step', END)
    .compile({ engine });

/** Renames in place, as the upcasters of a real migration are often written. */
const rename: Upcast = (s) => {
  s.heading = s.title;
  delete s.title;
  s.labels = s.tags;
  delete s.tags;
  return s;
};

/** A thread written at version 1 on a fresh file; `input` is what the run starts with. */
async function writtenAtV1(input: Record<string, unknown> = {}): Promise<string> {
  const file = join(dir, `${Math.random()}.db`);
  const engine = sqlite(file);
  await v1App(engine).run({ thread: 't', input: input as never });
  await engine.close();
  return file;
}

describe('an upcaster that renames a field never stored', () => {
  it('a renamed field left at its default reads as its current default, not undefined', async () => {
    const app = v2App(open(await writtenAtV1()), rename);
    const state = await app.getState({ thread: 't' });
    expect(state.heading).toBe('untitled');
    expect(state.labels).toEqual(['fresh']);
    expect(state.n).toBe(1);
    expect(state).not.toHaveProperty('title');
  });

  it('a renamed field that was stored carries its value over', async () => {
    const app = v2App(open(await writtenAtV1({ title: 'Quarterly report', tags: ['q3', 'finance'] })), rename);
    const state = await app.getState({ thread: 't' });
    expect(state.heading).toBe('Quarterly report');
    expect(state.labels).toEqual(['q3', 'finance']);
  });

  it('an upcaster that sets an unstored field to undefined explicitly gets the default', async () => {
    const app = v2App(open(await writtenAtV1()), (s) => ({ ...rename(s), heading: undefined, stamp: undefined }));
    const state = await app.getState({ thread: 't' });
    expect(state.heading).toBe('untitled');
    expect(state.stamp).toMatch(/^made-\d+$/);
  });

  it('an upcaster that sets a stored field to undefined keeps undefined: that is its value now', async () => {
    const app = v2App(open(await writtenAtV1({ note: 'keep me?' })), (s) => ({ ...rename(s), note: undefined }));
    const state = await app.getState({ thread: 't' });
    expect(state.note).toBeUndefined();
    expect(Object.hasOwn(state, 'note')).toBe(true);
  });

  it('a factory default is called for each read, not shared, and the append default is a fresh list', async () => {
    const app = v2App(open(await writtenAtV1()), rename);
    const first = await app.getState({ thread: 't' });
    const second = await app.getState({ thread: 't' });
    expect(first.stamp).toMatch(/^made-\d+$/);
    expect(second.stamp).not.toBe(first.stamp);
    expect(first.labels).not.toBe(second.labels);
  });

  it('a run at version 2 goes on from the default and stores it in the rebase', async () => {
    const file = await writtenAtV1();
    const app = v2App(open(file), rename);
    const result = await app.run({ thread: 't', input: { n: 10 } });
    expect(result.state).toMatchObject({ n: 11, heading: 'untitled', labels: ['fresh'] });
    // Read back through the rebase (stored at version 2), not through the upcaster any more.
    const never: Upcast = () => {
      throw new Error('the rebase is read at version 2: no upcaster runs');
    };
    const later = v2App(open(file), never);
    expect(await later.getState({ thread: 't' })).toMatchObject({ n: 11, heading: 'untitled', labels: ['fresh'] });
    // Every version-1 position still reads through the upcaster, each as its own default.
    for (const seq of [0, 1]) expect((await app.stateAt({ thread: 't', seq })).heading).toBe('untitled');
  });

  it('StateSchema.upcast: the same rule without an engine, and a state at the current version is left as stored', () => {
    const schema = V2(rename);
    const upcast = schema.upcast({ n: 3 }, 1);
    expect(upcast).toMatchObject({ n: 3, heading: 'untitled', labels: ['fresh'] });
    expect(schema.upcast({ n: 3, title: 'kept', note: undefined }, 1)).toMatchObject({ heading: 'kept', note: undefined });
    // No upcaster ran: a stored undefined stays undefined, a missing field gets its default.
    const current = schema.upcast({ n: 3, heading: undefined }, 2);
    expect(current.heading).toBeUndefined();
    expect(current.labels).toEqual(['fresh']);
  });
});
