/**
 * @module bench/children/contender
 *
 * Child process of `bench/run.ts`: one contender at one N, in a fresh process,
 * so that no contender runs on a heap, JIT state or page cache another one left
 * behind (LangGraph's `default` mode alone allocates hundreds of MB at N=1000).
 * The contender's own load measurements spawn their own fresh children, as
 * they do when called directly.
 *
 * Usage: node --import tsx bench/children/contender.ts CONTENDER N DIR
 *   CONTENDER = raw | floor | cairn | langgraph-default | langgraph-delta
 * Prints the contender's result (a `WorkloadResult`, `CairnResult` for cairn)
 * as one JSON line.
 */
import { benchCairn } from '../cairn.js';
import { benchLangGraph } from '../langgraph.js';
import { benchOneRowFloor, benchRawInsert } from '../raw-sqlite.js';
import type { WorkloadResult } from '../workload.js';

/** cairn's decoder for the floor (cairn stores canonical tagged JSON), imported by the floor's child before its clock. */
export const CAIRN_DECODE = { module: './dist/codec/tagged-json.js', exportName: 'decode' };

const [contender, nArg, dir] = process.argv.slice(2);
const n = Number(nArg);
if (!contender || !dir || !Number.isInteger(n) || n < 1) throw new Error('usage: contender.ts CONTENDER N DIR');

async function run(): Promise<WorkloadResult> {
  switch (contender) {
    case 'raw':
      return benchRawInsert({ n, dir: dir! });
    case 'floor':
      return benchOneRowFloor({ n, dir: dir!, decode: CAIRN_DECODE });
    case 'cairn':
      return benchCairn({ n, dir: dir! });
    case 'langgraph-default':
      return benchLangGraph({ n, mode: 'default', dir: dir! });
    case 'langgraph-delta':
      return benchLangGraph({ n, mode: 'delta', dir: dir! });
    default:
      throw new Error(`unknown contender ${contender}`);
  }
}

console.log(JSON.stringify(await run()));
