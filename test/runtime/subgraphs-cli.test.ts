/**
 * The CLI reads child runs: `cairn history` marks the steps that ran one, `--ns`
 * lists a child's own positions and `cairn show --ns` prints its state; `cairn
 * verify` checks every namespace. Runs the BUILT CLI (dist/) on a SQLite file.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { defineState } from '../../src/state/schema.js';
import { field } from '../../src/state/fields.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import { tempDir } from '../helpers/temp-dirs.js';

const root = new URL('../..', import.meta.url).pathname;

const Parent = defineState({ fields: { notes: field.model(z.array(z.string()), { reduce: 'append', default: [] }) } });
const Child = defineState({ fields: { q: field.model(z.string(), { default: '' }), a: field.model(z.string(), { default: '' }) } });

describe('cairn CLI on child runs', () => {
  it('history marks the child, --ns reads it, verify covers it', async () => {
    const path = join(tempDir('cairn-sub-cli-'), 'cairn.db');
    const engine = sqlite(path);
    const child = graph(Child).node('answer', (s) => ({ a: `answer to ${s.q}` })).edge(START, 'answer').edge('answer', END);
    const app = graph(Parent)
      .subgraph('ask', child, { input: () => ({ q: 'why' }), output: (r) => ({ notes: [r.a] }) })
      .edge(START, 'ask')
      .edge('ask', END)
      .compile({ engine });
    await app.run({ thread: 't' });
    await engine.close();

    const cli = (args: string[]) => execFileSync(process.execPath, [join(root, 'dist/cli/main.js'), ...args, '--db', path], { encoding: 'utf8' });
    const history = JSON.parse(cli(['history', 't', '--json'])) as { seq: number; nodes: string[]; children: string[] }[];
    expect(history.map((h) => h.children)).toEqual([['ask:0@0'], []]);
    // The child column names the child run's namespace.
    expect(cli(['history', 't'])).toMatch(/^seq\s+parent\s+.*\schild\s/m);
    expect(cli(['history', 't'])).toMatch(/\sask:0@0\s/);

    const childHistory = JSON.parse(cli(['history', 't', '--ns', 'ask:0@0', '--json'])) as { seq: number; kind: string; nodes: string[] }[];
    expect(childHistory.map((h) => [h.seq, h.kind, h.nodes])).toEqual([
      [1, 'step', ['answer']],
      [0, 'input', []],
    ]);
    const shown = JSON.parse(cli(['show', 't', '--ns', 'ask:0@0', '--json'])) as { ns: string; seq: number; state: Record<string, unknown> };
    expect(shown).toMatchObject({ ns: 'ask:0@0', seq: 1, state: { q: 'why', a: 'answer to why' } });
    expect(JSON.parse(cli(['show', 't', '--ns', 'ask:0@0', '--seq', '0', '--json'])).state).toEqual({ q: 'why' });

    const missing = spawnSync(process.execPath, [join(root, 'dist/cli/main.js'), 'history', 't', '--ns', 'nope:0@0', '--db', path], { encoding: 'utf8' });
    expect(missing.status).not.toBe(0);
    expect(missing.stderr).toContain(`has no namespace "nope:0@0". Its child runs' namespaces: ask:0@0.`);

    // Two root positions and two of the child's, all checked.
    expect(JSON.parse(cli(['verify', 't', '--json']))).toMatchObject([{ ok: true, positions: 4 }]);
  });
});
