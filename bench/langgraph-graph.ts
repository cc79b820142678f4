/**
 * @module bench/langgraph-graph
 *
 * The LangGraph.js graph the `langgraph` contender runs, shared by the bench
 * (which runs it) and its child processes (which compile the same graph to load
 * state from the same file: `getState` needs the graph's channel definitions,
 * in particular to rebuild a `DeltaChannel` from its stored writes).
 *
 * Both modes keep the workload's plain message objects as they are, so the
 * payload is byte-identical to the other contenders':
 *
 * - `default`: `messages` is a `ReducedValue` with a concat reducer, i.e. a
 *   `BinaryOperatorAggregate` channel: LangGraph's standard append reducer. It
 *   is what `MessagesValue` / `MessagesAnnotation` are built on, minus their
 *   coercion of plain objects into `BaseMessage` class instances (which would
 *   add ids and change the stored bytes). The saver stores the full accumulated
 *   list in every checkpoint, so storage grows quadratically.
 * - `delta`: `messages` is a `DeltaValue` (beta) with the same concat as a
 *   batch reducer, i.e. a `DeltaChannel`: what `MessagesDeltaValue` is built
 *   on, again minus the `BaseMessage` coercion of `messagesDeltaReducer`.
 *   Checkpoints carry only a sentinel; the list is rebuilt on read by replaying
 *   the per-step writes back to the nearest `DeltaSnapshot` (a full copy stored
 *   every `snapshotFrequency` = 100 updates by default).
 */
import { z } from 'zod';
import { DeltaValue, END, ReducedValue, START, StateGraph, StateSchema } from '@langchain/langgraph';
import type { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';
import { makeMessage, type BenchMessage } from './workload.js';

export type LangGraphMode = 'default' | 'delta';

/** The one thread every run writes to. */
export const LANGGRAPH_THREAD_ID = 'bench-thread';

// `z.custom` with no check: no validation cost on either side, like the
// prebuilt `MessagesValue` / `MessagesDeltaValue`, which use the same schemas.
const messagesValue = z.custom<BenchMessage[]>().default(() => []);
const messagesInput = z.custom<BenchMessage[]>();

/** Concat is associative, hence batching-invariant as `DeltaChannel` requires. */
const concatBatch = (state: BenchMessage[], writes: BenchMessage[][]): BenchMessage[] => state.concat(...writes);
const concatPair = (left: BenchMessage[], right: BenchMessage[]): BenchMessage[] => left.concat(right);

function stateSchema(mode: LangGraphMode) {
  const messages =
    mode === 'delta'
      ? new DeltaValue(messagesValue, { inputSchema: messagesInput, reducer: concatBatch })
      : new ReducedValue(messagesValue, { inputSchema: messagesInput, reducer: concatPair });
  return new StateSchema({ messages });
}

/**
 * A graph with one node, `append`, that appends `makeMessage(k)` (k = current
 * length) and loops back to itself until the list holds `n` messages. One run
 * of it with `{ messages: [] }` as input takes n + 1 supersteps (START, then n
 * appends), each saving exactly one checkpoint. `n` only steers the loop; a
 * graph compiled just to read state can pass 0.
 */
export function buildAppendGraph({ mode, n, saver }: { mode: LangGraphMode; n: number; saver: SqliteSaver }) {
  return new StateGraph(stateSchema(mode))
    .addNode('append', (state) => ({ messages: [makeMessage(state.messages.length)] }))
    .addEdge(START, 'append')
    .addConditionalEdges('append', (state) => (state.messages.length < n ? 'append' : END))
    .compile({ checkpointer: saver });
}

/** Run the graph once to n messages, returning the wall clock of each step. */
export async function runTimed(graph: ReturnType<typeof buildAppendGraph>, n: number): Promise<number[]> {
  const config = {
    configurable: { thread_id: LANGGRAPH_THREAD_ID },
    recursionLimit: n + 10, // n appends + the START superstep, with headroom
    durability: 'sync' as const,
    streamMode: 'updates' as const,
  };
  const stepMs: number[] = [];
  let last = performance.now();
  for await (const _update of await graph.stream({ messages: [] }, config)) {
    const now = performance.now();
    stepMs.push(now - last);
    last = now;
  }
  // The final checkpoint is saved after the last update is emitted: charge the
  // tail to the last step so the steps add up to the run.
  const tail = performance.now() - last;
  if (stepMs.length !== n) throw new Error(`expected ${n} node updates, got ${stepMs.length}`);
  stepMs[n - 1]! += tail;
  return stepMs;
}
