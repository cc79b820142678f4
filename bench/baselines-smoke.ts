/**
 * @module bench/baselines-smoke
 *
 * Proof that every baseline contender runs end to end: each one at a small N
 * (default 100), results printed as a table and as JSON. Not the benchmark
 * itself (that is `npm run bench`). Up to N = 1000 the LangGraph contenders
 * also time `graph.getStateHistory` (shown in their notes).
 *
 * Usage: npx tsx bench/baselines-smoke.ts [N] [contender,...]
 *   contenders: raw, floor, langgraph-default, langgraph-delta (default: all)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { WorkloadResult } from './workload.js';
import { RAW_SQLITE_SETTINGS, benchOneRowFloor, benchRawInsert } from './raw-sqlite.js';
import { benchLangGraph } from './langgraph.js';

const n = Number(process.argv[2] ?? 100);
const wanted = (process.argv[3] ?? 'raw,floor,langgraph-default,langgraph-delta').split(',');
// getStateHistory rebuilds every position's state (from writes, in delta mode):
// informative at small N, minutes at N = 5000, so only up to N = 1000.
const stateHistory = n <= 1000;
const dir = mkdtempSync(join(tmpdir(), 'cairn-bench-'));

const contenders: Record<string, () => Promise<WorkloadResult>> = {
  raw: () => benchRawInsert({ n, dir }),
  floor: () => benchOneRowFloor({ n, dir }),
  'langgraph-default': () => benchLangGraph({ n, mode: 'default', dir, stateHistory }),
  'langgraph-delta': () => benchLangGraph({ n, mode: 'delta', dir, stateHistory }),
};

const fmt = (x: number | undefined, digits = 3) => (x === undefined || Number.isNaN(x) ? '-' : x.toFixed(digits));

console.log(`N=${n}, SQLite settings ${JSON.stringify(RAW_SQLITE_SETTINGS)}, dir ${dir}`);
try {
  for (const name of wanted) {
    const run = contenders[name];
    if (!run) throw new Error(`unknown contender ${name}`);
    const t0 = performance.now();
    const r = await run();
    const wall = (performance.now() - t0) / 1000;
    console.log(
      [
        r.contender.padEnd(18),
        `first ${fmt(r.firstMsPerStep)} ms/step`,
        `last ${fmt(r.lastMsPerStep)} ms/step`,
        `db ${(r.dbBytes / 1e6).toFixed(2)} MB (payload ${(r.payloadBytes / 1e6).toFixed(2)} MB)`,
        `head ${fmt(r.headLoadMs, 1)} ms`,
        `mid ${fmt(r.midLoadMs, 1)} ms`,
        `history ${fmt(r.historyMs, 1)} ms / ${r.historyCount ?? '-'}`,
        `[${wall.toFixed(1)} s]`,
      ].join(' | '),
    );
    console.log(`  ${JSON.stringify(r)}`);
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}
