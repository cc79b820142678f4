/**
 * @module bench/children/langgraph-load
 *
 * Child process of `benchLangGraph`: one load from a LangGraph SqliteSaver
 * file, in a fresh process, timing only the load itself. Before the clock
 * starts the connection is opened, the graph compiled and the saver has run its
 * first-use `setup()` (WAL pragma, CREATE TABLE IF NOT EXISTS, its two
 * `getTuple` statements prepared), through a lookup of a thread that does not
 * exist: opening is start-up, the same for every contender (cairn's child opens
 * its engine the same way), not load cost.
 *
 * Usage: node --import tsx bench/children/langgraph-load.ts DB MODE OP [CHECKPOINT_ID]
 *   OP = head | mid | history | history-1000 | state-history
 * Prints `{"ms": ..., "count": ...}`: for head/mid the number of messages in
 * the loaded state, for history/state-history the number of positions listed.
 */
import Database from 'better-sqlite3';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';
import { LANGGRAPH_THREAD_ID, buildAppendGraph, type LangGraphMode } from '../langgraph-graph.js';

const [file, mode, op, checkpointId] = process.argv.slice(2);
if (!file || (mode !== 'default' && mode !== 'delta') || !op) {
  throw new Error('usage: langgraph-load.ts DB default|delta head|mid|history|state-history [CHECKPOINT_ID]');
}

const saver = new SqliteSaver(new Database(file));
const graph = buildAppendGraph({ mode: mode as LangGraphMode, n: 0, saver });
const thread = { configurable: { thread_id: LANGGRAPH_THREAD_ID } };
// Open: runs the saver's setup() before the clock.
await saver.getTuple({ configurable: { thread_id: '__bench_open__' } });

async function load(): Promise<number> {
  switch (op) {
    case 'head':
      return (await graph.getState(thread)).values.messages.length;
    case 'mid': {
      if (!checkpointId) throw new Error('mid needs a CHECKPOINT_ID');
      const config = { configurable: { thread_id: LANGGRAPH_THREAD_ID, checkpoint_id: checkpointId } };
      return (await graph.getState(config)).values.messages.length;
    }
    case 'history': {
      // checkpoint_ns '' as getStateHistory passes it: without it SQLite cannot
      // use the (thread_id, checkpoint_ns, checkpoint_id) key for the ORDER BY
      // and sorts every checkpoint blob in a temp B-tree (~2.5x slower at N=1000).
      let count = 0;
      for await (const _tuple of saver.list({ configurable: { thread_id: LANGGRAPH_THREAD_ID, checkpoint_ns: '' } })) count++;
      return count;
    }
    case 'history-1000': {
      // The newest 1000 checkpoints: the same listing with LIMIT 1000.
      let count = 0;
      const config = { configurable: { thread_id: LANGGRAPH_THREAD_ID, checkpoint_ns: '' } };
      for await (const _tuple of saver.list(config, { limit: 1000 })) count++;
      return count;
    }
    case 'state-history': {
      let count = 0;
      for await (const _snapshot of graph.getStateHistory(thread)) count++;
      return count;
    }
    default:
      throw new Error(`unknown op ${op}`);
  }
}

const t0 = performance.now();
const count = await load();
const ms = performance.now() - t0;
console.log(JSON.stringify({ ms, count }));
