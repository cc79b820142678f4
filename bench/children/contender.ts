/**
 * @module bench/children/contender
 *
 * Child process of `bench/run.ts`: one contender at one N, in a fresh process,
 * so that no contender runs on a heap, JIT state or page cache another one left
 * behind (LangGraph's `default` mode alone allocates hundreds of MB at N=1000).
 * The contender's own load measurements spawn their own fresh children, as
 * they do when called directly.
 *
 * Usage: node --import tsx bench/children/contender.ts CONTENDER N DIR [steps-only]
 *   CONTENDER = raw | floor | cairn | cairn-encrypted | langgraph-default | langgraph-delta
 *   steps-only (raw, cairn, cairn-encrypted): run and time the steps, measure no load
 * Prints the contender's result (a `WorkloadResult`, `CairnResult` for cairn)
 * as one JSON line.
 */
import { CAIRN_FLOOR_DECODER, benchCairn } from '../cairn.js';
import { benchLangGraph } from '../langgraph.js';
import { benchOneRowFloor, benchRawInsert } from '../raw-sqlite.js';
import type { WorkloadResult } from '../workload.js';

const [contender, nArg, dir, mode] = process.argv.slice(2);
const n = Number(nArg);
if (!contender || !dir || !Number.isInteger(n) || n < 1 || (mode !== undefined && mode !== 'steps-only')) {
  throw new Error('usage: contender.ts CONTENDER N DIR [steps-only]');
}
const stepsOnly = mode === 'steps-only';

async function run(): Promise<WorkloadResult> {
  switch (contender) {
    case 'raw':
      return benchRawInsert({ n, dir: dir! });
    case 'floor':
      if (stepsOnly) throw new Error('the floor has no steps');
      return benchOneRowFloor({ n, dir: dir!, decode: CAIRN_FLOOR_DECODER });
    case 'cairn':
      return benchCairn({ n, dir: dir!, loads: !stepsOnly });
    case 'cairn-encrypted':
      return benchCairn({ n, dir: dir!, loads: !stepsOnly, encrypted: true });
    case 'langgraph-default':
    case 'langgraph-delta':
      if (stepsOnly) throw new Error('steps-only is for raw and cairn');
      return benchLangGraph({ n, mode: contender === 'langgraph-default' ? 'default' : 'delta', dir: dir! });
    default:
      throw new Error(`unknown contender ${contender}`);
  }
}

console.log(JSON.stringify(await run()));
