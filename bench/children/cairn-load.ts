/**
 * @module bench/children/cairn-load
 *
 * Child process of `benchCairn`: one load from a cairn SQLite file, in a fresh
 * process, timing only the load itself. Before the clock starts the app is
 * compiled and the engine has OPENED the database (connection, pragmas,
 * migration check), through a lookup of a thread that does not exist: opening
 * is start-up, the same for every contender, not load cost. Everything the load
 * itself does (its statements' first prepare included) is inside the clock.
 *
 * Usage: node --import tsx bench/children/cairn-load.ts DB OP [SEQ]
 *   OP = head | mid (state at position SEQ) | history (every position, paged
 *        newest-first 1000 at a time with beforeSeq) | history-1000 (the newest
 *        1000 positions, one call)
 * A DB with a key file beside it (`DB.keys.json`: the `cairn-encrypted` contender's) is
 * opened as `encrypted(sqlite(DB), { keys: keyFile(DB.keys.json) })`.
 * Prints `{"ms": ..., "count": ...}`: for head/mid the number of messages in
 * the loaded state, for history/history-1000 the number of positions listed.
 */
import { existsSync } from 'node:fs';
import { encrypted, keyFile } from '../../dist/crypto/index.js';
import { sqlite } from '../../dist/engines/sqlite/index.js';
import { CAIRN_THREAD_ID, buildCairnApp } from '../cairn-graph.js';
import { makeMessage, type BenchMessage } from '../workload.js';

const [file, op, seqArg] = process.argv.slice(2);
if (!file || !op) throw new Error('usage: cairn-load.ts DB head|mid|history|history-1000 [SEQ]');

/** Page size of the full history listing. */
const HISTORY_PAGE = 1000;

const keys = `${file}.keys.json`;
const engine = existsSync(keys) ? encrypted(sqlite(file), { keys: keyFile(keys) }) : sqlite(file);
const app = buildCairnApp({ engine, n: 0 });
// Open the database (pragmas, migrations) before the clock.
await engine.checkpointer.getThread('__bench_open__');

/** Messages a head/mid load returned, checked after the clock stops. */
let loaded: readonly BenchMessage[] | undefined;

async function load(): Promise<number> {
  switch (op) {
    case 'head':
      loaded = (await app.getState({ thread: CAIRN_THREAD_ID })).messages;
      return loaded.length;
    case 'mid': {
      if (seqArg === undefined) throw new Error('mid needs a SEQ');
      loaded = (await app.stateAt({ thread: CAIRN_THREAD_ID, seq: Number(seqArg) })).messages;
      return loaded.length;
    }
    case 'history': {
      let count = 0;
      let beforeSeq: number | undefined;
      for (;;) {
        const page = await app.history({ thread: CAIRN_THREAD_ID, limit: HISTORY_PAGE, ...(beforeSeq !== undefined ? { beforeSeq } : {}) });
        count += page.length;
        if (page.length < HISTORY_PAGE) return count;
        beforeSeq = page[page.length - 1]!.seq;
      }
    }
    case 'history-1000':
      return (await app.history({ thread: CAIRN_THREAD_ID, limit: 1000 })).length;
    default:
      throw new Error(`unknown op ${op}`);
  }
}

const t0 = performance.now();
const count = await load();
const ms = performance.now() - t0;
// A fast load of the wrong messages must not pass for a result.
loaded?.forEach((m, i) => {
  const want = makeMessage(i);
  if (m.index !== i || m.role !== want.role || m.content !== want.content) throw new Error(`message ${i} loaded wrong`);
});
await engine.close();
console.log(JSON.stringify({ ms, count }));
