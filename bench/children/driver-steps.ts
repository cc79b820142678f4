/**
 * @module bench/children/driver-steps
 *
 * Child process of `bench/run.ts`'s driver comparison: the cairn append loop
 * (steps only, timed as the cairn contender's) on one SQLite driver, on whatever
 * Node runs it (node:sqlite needs Node 22.13+, so the parent may start this with
 * a Node 22 binary). Imports nothing of better-sqlite3's that needs its native module.
 *
 * Usage: node --import tsx bench/children/driver-steps.ts better-sqlite3|node:sqlite N DIR
 * Prints `{ driver, node, n, firstMsPerStep, lastMsPerStep }` as one JSON line.
 */
import { sqlite } from '../../dist/engines/sqlite/index.js';
import { runTimed } from '../cairn.js';
import { CAIRN_THREAD_ID } from '../cairn-graph.js';
import { firstLastMeans } from '../measure.js';
import { freshDbPath } from '../sqlite-util.js';

const [driver, nArg, dir] = process.argv.slice(2);
const n = Number(nArg);
if ((driver !== 'better-sqlite3' && driver !== 'node:sqlite') || !dir || !Number.isInteger(n) || n < 1) {
  throw new Error('usage: driver-steps.ts better-sqlite3|node:sqlite N DIR');
}

const engine = sqlite(freshDbPath(dir, driver.replace(':', '-')), { driver });
let stepMs: number[];
try {
  // Opened (pragmas, migrations) outside the timed steps, as in the cairn contender.
  await engine.checkpointer.getThread(CAIRN_THREAD_ID);
  stepMs = await runTimed(engine, n);
} finally {
  await engine.close();
}
console.log(JSON.stringify({ driver, node: process.version, n, ...firstLastMeans(stepMs) }));
