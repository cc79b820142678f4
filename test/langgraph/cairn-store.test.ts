/**
 * CairnStore, LangGraph's BaseStore over cairn's store, on every engine: items round
 * trip with their times; a prefix search is bounded at label edges (["user","1"] never
 * returns ["user","10"]: langgraphjs #2721); filters the engine runs and those matched in
 * memory give LangGraph's answers; namespaces list by prefix, suffix, wildcard and
 * depth; and a graph's nodes share memory across threads through `config.store`.
 */
import { AIMessage } from '@langchain/core/messages';
import { END, MessagesAnnotation, START, StateGraph, type LangGraphRunnableConfig } from '@langchain/langgraph';
import { InMemoryStore, type BaseStore } from '@langchain/langgraph-checkpoint';
import { afterEach, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/contracts/engine.js';
import { InvalidOptionError } from '../../src/errors.js';
import { CairnSaver, CairnStore } from '../../src/langgraph/index.js';
import { langGraphEngines } from './engines.js';

const engines = langGraphEngines();

describe.each(engines)('CairnStore ($name)', (kit) => {
  let engine: Engine | undefined;
  const store = async () => new CairnStore({ engine: (engine = await kit.create()) });
  afterEach(async () => {
    if (engine) await kit.destroy(engine);
    engine = undefined;
  });

  it('puts, gets and deletes items, with their times', async () => {
    const s = await store();
    const before = Date.now();
    await s.put(['user', '42', 'prefs'], 'theme', { mode: 'dark', size: 14 });
    const item = await s.get(['user', '42', 'prefs'], 'theme');
    expect(item).toMatchObject({ namespace: ['user', '42', 'prefs'], key: 'theme', value: { mode: 'dark', size: 14 } });
    expect(item!.createdAt).toBeInstanceOf(Date);
    expect(item!.createdAt.getTime()).toBeGreaterThanOrEqual(before - 1000);
    await s.put(['user', '42', 'prefs'], 'theme', { mode: 'light' });
    expect((await s.get(['user', '42', 'prefs'], 'theme'))?.value).toEqual({ mode: 'light' });
    expect((await engine!.store.get(['user', '42', 'prefs'], 'theme'))?.version).toBe(2);
    await s.delete(['user', '42', 'prefs'], 'theme');
    expect(await s.get(['user', '42', 'prefs'], 'theme')).toBeNull();
    await expect(s.put(['langgraph', 'x'], 'k', {})).rejects.toThrow(/langgraph/);
  });

  it('a prefix search is bounded at label edges: ["user","1"] never returns ["user","10"] (langgraphjs #2721)', async () => {
    const s = await store();
    await s.put(['user', '1'], 'a', { n: 1 });
    await s.put(['user', '1', 'notes'], 'b', { n: 2 });
    await s.put(['user', '10'], 'c', { n: 3 });
    await s.put(['user', '1-old'], 'd', { n: 4 });
    const found = await s.search(['user', '1']);
    expect(found.map((i) => [i.namespace.join('/'), i.key])).toEqual([
      ['user/1', 'a'],
      ['user/1/notes', 'b'],
    ]);
    expect((await s.search(['user'])).length).toBe(4);
  });

  it('filters: scalars and operators run by the engine, $nin and object values matched in memory, with limit and offset', async () => {
    const s = await store();
    for (let i = 0; i < 12; i++) await s.put(['docs'], `d${String(i).padStart(2, '0')}`, { rank: i, kind: i % 2 ? 'odd' : 'even', tags: { lang: i < 6 ? 'en' : 'fr' } });
    const keys = async (filter: Record<string, unknown>, options: { limit?: number; offset?: number } = {}) => (await s.search(['docs'], { filter, limit: 100, ...options })).map((i) => i.key);
    expect(await keys({ kind: 'odd', rank: { $gte: 7 } })).toEqual(['d07', 'd09', 'd11']);
    expect(await keys({ rank: { $in: [1, 2, 3] } })).toEqual(['d01', 'd02', 'd03']);
    expect(await keys({ rank: { $nin: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9] } })).toEqual(['d10', 'd11']);
    expect(await keys({ tags: { lang: 'fr' }, kind: 'even' })).toEqual(['d06', 'd08', 'd10']);
    expect(await keys({ kind: 'even' }, { limit: 2, offset: 1 })).toEqual(['d02', 'd04']);
    expect(await keys({ rank: { $nin: [0] } }, { limit: 2, offset: 1 })).toEqual(['d02', 'd03']);
    expect((await s.search(['docs'])).length).toBe(10);
  });

  it('range operators with a string operand give LangGraph\'s answers (compared as numbers), with or without another operator', async () => {
    const s = await store();
    await s.put(['people'], 'alice', { name: 'alice', age: 30 });
    await s.put(['people'], 'bob', { name: 'bob', age: 40 });
    const keys = async (filter: Record<string, unknown>) => (await s.search(['people'], { filter })).map((i) => i.key);
    // LangGraph's InMemoryStore: Number('bob') > Number('b') is false; Number(40) > Number('35') is true.
    expect(await keys({ name: { $gt: 'b' } })).toEqual([]);
    expect(await keys({ name: { $gt: 'b', $nin: ['zed'] } })).toEqual([]);
    expect(await keys({ age: { $gt: '35' } })).toEqual(['bob']);
    expect(await keys({ age: { $lte: 30 } })).toEqual(['alice']);
  });

  it('lists namespaces by prefix, suffix, wildcard and depth', async () => {
    const s = await store();
    await s.put(['user', '1', 'prefs'], 'k', { v: 1 });
    await s.put(['user', '1', 'memories'], 'k', { v: 1 });
    await s.put(['user', '10', 'prefs'], 'k', { v: 1 });
    await s.put(['team', 'a', 'prefs'], 'k', { v: 1 });
    expect(await s.listNamespaces({ prefix: ['user', '1'] })).toEqual([
      ['user', '1', 'memories'],
      ['user', '1', 'prefs'],
    ]);
    expect(await s.listNamespaces({ suffix: ['prefs'] })).toEqual([
      ['team', 'a', 'prefs'],
      ['user', '1', 'prefs'],
      ['user', '10', 'prefs'],
    ]);
    expect(await s.listNamespaces({ prefix: ['user', '*', 'prefs'] })).toEqual([
      ['user', '1', 'prefs'],
      ['user', '10', 'prefs'],
    ]);
    expect(await s.listNamespaces({ maxDepth: 1 })).toEqual([['team'], ['user']]);
    expect(await s.listNamespaces({ prefix: ['user'], maxDepth: 2, limit: 1, offset: 1 })).toEqual([['user', '10']]);
  });

  it("limit 0 is an empty page, as LangGraph's InMemoryStore answers, whichever path serves the search or the listing", async () => {
    const s = await store();
    const reference = new InMemoryStore();
    for (const target of [s, reference] as BaseStore[]) {
      for (let i = 0; i < 3; i++) await target.put(['docs', `n${i}`, 'prefs'], `d${i}`, { rank: i, tags: { lang: 'en' } });
    }
    for (const target of [s, reference] as BaseStore[]) {
      // The engine serves these...
      expect(await target.search(['docs'], { limit: 0 })).toEqual([]);
      expect(await target.search(['docs'], { limit: 0, offset: 2, filter: { rank: 1 } })).toEqual([]);
      expect(await target.listNamespaces({ limit: 0 })).toEqual([]);
      expect(await target.listNamespaces({ prefix: ['docs'], limit: 0, offset: 1 })).toEqual([]);
      // ...and these are matched in memory (an object value, a suffix).
      expect(await target.search(['docs'], { limit: 0, filter: { tags: { lang: 'en' } } })).toEqual([]);
      expect(await target.listNamespaces({ suffix: ['prefs'], limit: 0 })).toEqual([]);
    }
    // Past limit 0, the same store pages again.
    expect((await s.search(['docs'], { limit: 2, offset: 1 })).map((i) => i.key)).toEqual((await reference.search(['docs'], { limit: 2, offset: 1 })).map((i) => i.key));
  });

  it('a negative or fractional limit or offset is InvalidOptionError on every path, as LangGraph\'s PostgresStore refuses it', async () => {
    const s = await store();
    await s.put(['docs'], 'd', { rank: 1, tags: { lang: 'en' } });
    const windows = [{ limit: -1 }, { limit: 2.5 }, { offset: -1 }, { offset: 1.5 }, { limit: Number.NaN }];
    for (const window of windows) {
      for (const call of [
        () => s.search(['docs'], window),
        () => s.search(['docs'], { ...window, filter: { tags: { lang: 'en' } } }),
        () => s.listNamespaces(window),
        () => s.listNamespaces({ ...window, suffix: ['docs'] }),
      ]) {
        const error = await call().then(() => null, (e: unknown) => e);
        expect(InvalidOptionError.is(error), `${JSON.stringify(window)}: ${String(error)}`).toBe(true);
      }
    }
  });

  it("a graph's nodes share memory across threads through config.store", async () => {
    const s = await store();
    const app = new StateGraph(MessagesAnnotation)
      .addNode('remember', async (state, config: LangGraphRunnableConfig) => {
        const user = config.configurable?.user as string;
        const seen = await config.store!.get(['user', user], 'visits');
        const visits = ((seen?.value.count as number | undefined) ?? 0) + 1;
        await config.store!.put(['user', user], 'visits', { count: visits });
        return { messages: [new AIMessage(`visit ${visits}`)] };
      })
      .addEdge(START, 'remember')
      .addEdge('remember', END)
      .compile({ checkpointer: new CairnSaver({ engine: engine! }), store: s });
    await app.invoke({ messages: [] }, { configurable: { thread_id: 't1', user: 'ana' } });
    const second = await app.invoke({ messages: [] }, { configurable: { thread_id: 't2', user: 'ana' } });
    expect(second.messages.at(-1)?.content).toBe('visit 2');
    expect((await engine!.store.get(['user', 'ana'], 'visits'))?.value).toEqual({ count: 2 });
  });
});
