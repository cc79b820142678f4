/**
 * LangGraph's known persistence failures, each as a test that CairnSaver passes on
 * every engine:
 * - two runs on one thread at once fork the checkpoint chain silently (langgraph
 *   #8796): here one run gets ThreadBusyError and the chain stays linear;
 * - a fork from an old checkpoint on PostgreSQL reads the abandoned branch
 *   (langgraphjs #1812): here the fork is what the thread's latest state is;
 * - a value LangGraph's serializer cannot read back (a BigInt) makes a thread
 *   unreadable: here a BigInt in state is stored as one, and one the serializer
 *   would garble (inside a message) is refused at the write, the thread intact.
 */
import { AIMessage, HumanMessage } from '@langchain/core/messages';
import { Annotation, END, MessagesAnnotation, START, StateGraph } from '@langchain/langgraph';
import { afterEach, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/contracts/engine.js';
import { ThreadBusyError, UnencodableValueError } from '../../src/errors.js';
import { verifyThread } from '../../src/inspect/index.js';
import { CairnSaver } from '../../src/langgraph/index.js';
import { langGraphEngines } from './engines.js';

const engines = langGraphEngines();

function chat(checkpointer: CairnSaver, delayMs = 0) {
  return new StateGraph(MessagesAnnotation)
    .addNode('model', async (s) => {
      if (delayMs) await new Promise((resolve) => setTimeout(resolve, delayMs));
      return { messages: [new AIMessage(`answer to ${String(s.messages.at(-1)?.content)}`)] };
    })
    .addEdge(START, 'model')
    .addEdge('model', END)
    .compile({ checkpointer });
}

describe.each(engines)('LangGraph known failures, fixed through CairnSaver ($name)', (kit) => {
  let engine: Engine | undefined;
  const saver = async () => new CairnSaver({ engine: (engine = await kit.create()) });
  afterEach(async () => {
    if (engine) await kit.destroy(engine);
    engine = undefined;
  });

  it('two runs on one thread at once: one gets ThreadBusyError, the chain stays linear (langgraph #8796)', async () => {
    const app = chat(await saver(), 100);
    const config = { configurable: { thread_id: 'race' } };
    await app.invoke({ messages: [new HumanMessage('seed')] }, config);
    const results = await Promise.allSettled([
      app.invoke({ messages: [new HumanMessage('one')] }, config),
      app.invoke({ messages: [new HumanMessage('two')] }, config),
    ]);
    const rejected = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(rejected).toHaveLength(1);
    expect(ThreadBusyError.is(rejected[0]!.reason)).toBe(true);
    // Every position's parent is the one before it: no silent fork.
    const positions = await engine!.checkpointer.listPositions('race', '', { limit: 100 });
    for (const p of positions) expect(p.parent).toBe(p.seq === 0 ? null : p.seq - 1);
    expect((await verifyThread(engine!, 'race')).ok).toBe(true);
    // The winner's turn is the thread's, and the thread goes on.
    const winner = (results.find((r) => r.status === 'fulfilled') as PromiseFulfilledResult<{ messages: { content: unknown }[] }>).value;
    const state = await app.getState(config);
    expect(state.values.messages.map((m: { content: unknown }) => m.content)).toEqual(winner.messages.map((m) => m.content));
    const after = await app.invoke({ messages: [new HumanMessage('three')] }, config);
    expect(after.messages.at(-1)?.content).toBe('answer to three');
  });

  it('two savers (two processes) on one thread: the second run gets ThreadBusyError', async () => {
    const first = chat(await saver(), 100);
    const second = chat(new CairnSaver({ engine: engine! }), 100);
    const config = { configurable: { thread_id: 'race2' } };
    await first.invoke({ messages: [new HumanMessage('seed')] }, config);
    const results = await Promise.allSettled([
      first.invoke({ messages: [new HumanMessage('one')] }, config),
      second.invoke({ messages: [new HumanMessage('two')] }, config),
    ]);
    const rejected = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(rejected).toHaveLength(1);
    expect(ThreadBusyError.is(rejected[0]!.reason)).toBe(true);
    const positions = await engine!.checkpointer.listPositions('race2', '', { limit: 100 });
    for (const p of positions) expect(p.parent).toBe(p.seq === 0 ? null : p.seq - 1);
  });

  it('a run from an old checkpoint forks it, and the fork is the latest state, not the abandoned branch (langgraphjs #1812)', async () => {
    const app = chat(await saver());
    const config = { configurable: { thread_id: 'travel' } };
    for (const question of ['q1', 'q2', 'q3']) await app.invoke({ messages: [new HumanMessage(question)] }, config);
    const history = [];
    for await (const snapshot of app.getStateHistory(config)) history.push(snapshot);
    // The checkpoint at the end of the first turn.
    const firstTurn = history.find((s) => s.values.messages?.length === 2 && s.next.length === 0)!;
    await app.invoke({ messages: [new HumanMessage('q2 again')] }, firstTurn.config);
    const latest = await app.getState(config);
    expect(latest.values.messages.map((m: { content: unknown }) => m.content)).toEqual(['q1', 'answer to q1', 'q2 again', 'answer to q2 again']);
    // The next run goes on from the fork.
    const next = await app.invoke({ messages: [new HumanMessage('q4')] }, config);
    expect(next.messages).toHaveLength(6);
    // The abandoned branch stays readable where it was.
    const abandoned = await app.getState(history[0]!.config);
    expect(abandoned.values.messages).toHaveLength(6);
    expect(abandoned.values.messages.at(-1)?.content).toBe('answer to q3');
    expect((await verifyThread(engine!, 'travel')).ok).toBe(true);
  });

  it('a BigInt in state is stored as one and read back as one, in every checkpoint', async () => {
    const Ledger = Annotation.Root({ total: Annotation<bigint>(), entries: Annotation<bigint[]>({ reducer: (a, b) => a.concat(b), default: () => [] }) });
    const app = new StateGraph(Ledger)
      .addNode('add', async (s) => ({ total: (s.total ?? 0n) + 2n ** 70n, entries: [2n ** 70n] }))
      .addEdge(START, 'add')
      .addEdge('add', END)
      .compile({ checkpointer: await saver() });
    const config = { configurable: { thread_id: 'big' } };
    await app.invoke({ total: 1n }, config);
    await app.invoke({ total: 5n }, config);
    const state = await app.getState(config);
    expect(state.values.total).toBe(5n + 2n ** 70n);
    expect(state.values.entries).toEqual([2n ** 70n, 2n ** 70n]);
    for await (const snapshot of app.getStateHistory(config)) {
      if (snapshot.values.total !== undefined) expect(typeof snapshot.values.total).toBe('bigint');
    }
    expect((await verifyThread(engine!, 'big')).ok).toBe(true);
  });

  it("a BigInt LangGraph's serializer would garble (inside a message) is refused at the write; the thread stays readable and goes on", async () => {
    let poison = true;
    const app = new StateGraph(MessagesAnnotation)
      .addNode('model', async () => ({ messages: [new AIMessage({ content: 'paid', additional_kwargs: poison ? { amount: 10n ** 30n } : {} })] }))
      .addEdge(START, 'model')
      .addEdge('model', END)
      .compile({ checkpointer: await saver() });
    const config = { configurable: { thread_id: 'garble' } };
    await app.invoke({ messages: [new HumanMessage('pay')] }, config).then(
      () => expect.unreachable('the write should be refused'),
      (error: unknown) => expect(UnencodableValueError.is(error)).toBe(true),
    );
    const state = await app.getState(config);
    expect(state.values.messages.map((m: { content: unknown }) => m.content)).toEqual(['pay']);
    expect((await verifyThread(engine!, 'garble')).ok).toBe(true);
    poison = false;
    const done = await app.invoke(null, config);
    expect(done.messages.map((m) => m.content)).toEqual(['pay', 'paid']);
  });
});
