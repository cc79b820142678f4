/**
 * Real LangGraph.js graphs on CairnSaver, on every engine: a chat whose messages are
 * stored as appended items only; interrupt() answered by Command({ resume });
 * getStateHistory; updateState forks (the old branch stays readable, the fork is the
 * latest); a subgraph in its own namespace. The threads are cairn threads:
 * verifyThread, threadHistory, exportThreads read them. LangGraph's known persistence
 * failures have their own file (known-failures.test.ts).
 */
import { AIMessage, HumanMessage } from '@langchain/core/messages';
import { Annotation, Command, END, MessagesAnnotation, START, StateGraph, interrupt } from '@langchain/langgraph';
import { afterEach, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/contracts/engine.js';
import { exportThreads, threadHistory, verifyThread } from '../../src/inspect/index.js';
import { CairnSaver } from '../../src/langgraph/index.js';
import { langGraphEngines } from './engines.js';

const engines = langGraphEngines();

/** A chat: each turn the model answers with one ~1 KB message. */
function chatGraph(checkpointer: CairnSaver) {
  return new StateGraph(MessagesAnnotation)
    .addNode('model', async (state) => ({ messages: [new AIMessage(`answer ${state.messages.length}: ${'x'.repeat(1000)}`)] }))
    .addEdge(START, 'model')
    .addEdge('model', END)
    .compile({ checkpointer });
}

const Approval = Annotation.Root({
  request: Annotation<string>(),
  decision: Annotation<string | undefined>(),
  log: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }),
});

function approvalGraph(checkpointer: CairnSaver) {
  return new StateGraph(Approval)
    .addNode('draft', async (s) => ({ log: [`draft ${s.request}`] }))
    .addNode('approve', async (s) => {
      const decision = interrupt<{ question: string }, string>({ question: `approve ${s.request}?` });
      return { decision, log: [`decided ${decision}`] };
    })
    .addNode('send', async (s) => ({ log: [`sent (${s.decision})`] }))
    .addEdge(START, 'draft')
    .addEdge('draft', 'approve')
    .addEdge('approve', 'send')
    .addEdge('send', END)
    .compile({ checkpointer });
}

describe.each(engines)('LangGraph StateGraph on CairnSaver ($name)', (kit) => {
  let engine: Engine | undefined;
  const saver = async () => new CairnSaver({ engine: (engine = await kit.create()) });
  afterEach(async () => {
    if (engine) await kit.destroy(engine);
    engine = undefined;
  });

  it('stores a growing message list as its new items only, and the thread is a cairn thread', async () => {
    const app = chatGraph(await saver());
    const config = { configurable: { thread_id: 'chat' } };
    for (let turn = 0; turn < 5; turn++) await app.invoke({ messages: [new HumanMessage(`question ${turn}`)] }, config);
    const state = await app.getState(config);
    expect(state.values.messages).toHaveLength(10);
    expect(state.values.messages[9]).toBeInstanceOf(AIMessage);
    expect(state.values.messages[8]).toBeInstanceOf(HumanMessage);
    expect(state.values.messages[9].content).toMatch(/^answer 9: x{1000}$/);

    const history = await threadHistory(engine!.checkpointer, 'chat', { limit: 1000 });
    expect(history).toHaveLength(15);
    const messageChanges = history.map((p) => p.changes.messages).filter((c) => c !== undefined);
    // The list is written once from empty (reset:1), then every step appends what it added.
    expect(messageChanges.filter((c) => c.startsWith('reset'))).toEqual(['reset:1']);
    expect(messageChanges.filter((c) => c.startsWith('append')).every((c) => c === 'append:1')).toBe(true);
    const items = await engine!.checkpointer.getRangeItems('chat', '', { from: 0, to: 100 });
    expect(items.filter((i) => i.field === 'messages')).toHaveLength(10);

    const report = await verifyThread(engine!, 'chat');
    expect(report.ok).toBe(true);
    expect(report.positions).toBe(15);
    const exported = [];
    for await (const record of exportThreads(engine!, ['chat'])) exported.push(record);
    expect(exported.length).toBeGreaterThan(15);
  });

  it('interrupt() pauses the thread durably and Command({ resume }) goes on where it stopped, in a new saver', async () => {
    const config = { configurable: { thread_id: 'order_7' } };
    const first = approvalGraph(await saver());
    const paused = await first.invoke({ request: 'refund' }, config);
    expect((paused as { __interrupt__?: { value: unknown }[] }).__interrupt__?.[0]?.value).toEqual({ question: 'approve refund?' });
    expect((await engine!.checkpointer.getThread('order_7'))?.status).toBe('interrupted');

    // A fresh saver on the same engine: nothing is held in memory across the pause.
    const second = approvalGraph(new CairnSaver({ engine: engine! }));
    const done = await second.invoke(new Command({ resume: 'yes' }), config);
    expect(done.log).toEqual(['draft refund', 'decided yes', 'sent (yes)']);
    expect((await engine!.checkpointer.getThread('order_7'))?.status).toBe('completed');
    expect((await verifyThread(engine!, 'order_7')).ok).toBe(true);
  });

  it('getStateHistory walks every checkpoint newest first; updateState forks an old one and the fork is what reads see', async () => {
    const app = approvalGraph(await saver());
    const config = { configurable: { thread_id: 'fork' } };
    await app.invoke({ request: 'a' }, config);
    await app.invoke(new Command({ resume: 'no' }), config);
    const history = [];
    for await (const snapshot of app.getStateHistory(config)) history.push(snapshot);
    expect(history.map((s) => s.metadata?.step)).toEqual([3, 2, 1, 0, -1]);
    expect(history[0]!.values.log).toEqual(['draft a', 'decided no', 'sent (no)']);

    // Fork from the checkpoint before `approve` ran: answer differently there.
    const beforeApprove = history.find((s) => s.next.includes('approve'))!;
    const forked = await app.updateState(beforeApprove.config, { request: 'b' });
    expect(forked.configurable?.checkpoint_id).not.toBe(history[0]!.config.configurable?.checkpoint_id);
    // The latest state is the fork's, not the abandoned branch's.
    const latest = await app.getState(config);
    expect(latest.values.request).toBe('b');
    expect(latest.next).toEqual(['approve']);
    await app.invoke(null, forked);
    const resumed = await app.invoke(new Command({ resume: 'yes' }), config);
    expect(resumed.log).toEqual(['draft a', 'decided yes', 'sent (yes)']);
    // The old branch is still there, untouched.
    const old = await app.getState(history[0]!.config);
    expect(old.values.log).toEqual(['draft a', 'decided no', 'sent (no)']);
    // The fork is a branch of the position tree: its position's parent is an old one.
    const positions = await engine!.checkpointer.listPositions('fork', '', { limit: 100 });
    expect(positions.some((p) => p.parent !== null && p.parent !== p.seq - 1)).toBe(true);
    expect((await verifyThread(engine!, 'fork')).ok).toBe(true);
  });

  it('a subgraph checkpoints in its own namespace, and its interrupt resumes through the parent', async () => {
    const Inner = Annotation.Root({ topic: Annotation<string>(), notes: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }) });
    const inner = new StateGraph(Inner)
      .addNode('search', async (s) => ({ notes: [`found ${s.topic}`] }))
      .addNode('check', async () => ({ notes: [`checked ${interrupt<string, string>('ok?')}`] }))
      .addEdge(START, 'search')
      .addEdge('search', 'check')
      .addEdge('check', END)
      .compile();
    const Outer = Annotation.Root({ topic: Annotation<string>(), notes: Annotation<string[]>({ reducer: (a, b) => a.concat(b), default: () => [] }) });
    const checkpointer = await saver();
    const app = new StateGraph(Outer).addNode('research', inner).addEdge(START, 'research').addEdge('research', END).compile({ checkpointer });
    const config = { configurable: { thread_id: 'sub' } };
    await app.invoke({ topic: 'tides' }, config);
    const paused = await app.getState(config, { subgraphs: true });
    expect(paused.tasks[0]?.interrupts[0]?.value).toBe('ok?');
    const namespaces = await engine!.checkpointer.listNamespaces('sub');
    expect(namespaces[0]).toBe('');
    expect(namespaces.some((ns) => ns.startsWith('research:'))).toBe(true);

    const done = await app.invoke(new Command({ resume: 'yes' }), config);
    expect(done.notes).toEqual(['found tides', 'checked yes']);
    const report = await verifyThread(engine!, 'sub');
    expect(report.ok).toBe(true);
  });
});
