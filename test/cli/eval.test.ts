/**
 * `cairn eval` on a SQLite file, with the built CLI in a child process: three threads
 * stored by one AI SDK agent are evaluated with another version of it (`--app
 * <module>#candidate`): one thread is the same, one's answer differs (the diff names
 * the field and its new value), one asks a tool the record does not hold (a
 * divergence; the tool never runs). `--json` gives the report; a diverged thread
 * exits 1; the database is unchanged; no selection is a usage error.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { sqlite } from '../../dist/engines/sqlite/index.js';
import { cairn } from './run-cli.js';
import { tempDir } from '../helpers/temp-dirs.js';

const APP = fileURLToPath(new URL('../fixtures/eval-app.mjs', import.meta.url));

describe('cairn eval', () => {
  it('evaluates stored threads with another version of the agent: same, an answer that differs, a tool the record does not hold', async () => {
    const db = join(tempDir('cairn-eval-'), 'cairn.db');
    const { stored } = (await import(APP)) as { stored: (engine: unknown) => { run(o: { thread: string; input: { city: string } }): Promise<unknown> } };
    const engine = sqlite(db);
    try {
      const app = stored(engine);
      for (const city of ['city-0', 'city-1', 'city-2']) await app.run({ thread: `t-${city}`, input: { city } });
    } finally {
      await engine.close();
    }
    const before = readFileSync(db);

    const json = await cairn(['eval', '--db', db, '--app', `${APP}#candidate`, '--threads', 't-city-0,t-city-1,t-city-2', '--json']);
    expect(json.stderr).toBe('');
    expect(json.code).toBe(1);
    const report = JSON.parse(json.stdout);
    expect(report.summary).toMatchObject({ threads: 3, same: 1, diverged: 2, failed: 0, recorded: { calls: 6 }, evaluated: { calls: 5 } });
    expect(report.threads.map((t: { threadId: string; outcome: string }) => [t.threadId, t.outcome])).toEqual([
      ['t-city-0', 'same'],
      ['t-city-1', 'diverged'],
      ['t-city-2', 'diverged'],
    ]);
    expect(report.threads[1].firstDivergence.diff.fields).toEqual([{ field: 'reply', kind: 'changed', before: 'Sunny in city-1.', after: 'Clear skies over city-1.' }]);
    expect(report.threads[2].firstDivergence.calls).toEqual([{ node: 'agent', call: 1, name: 'tool:forecast', kind: 'other-call', reason: 'recorded as "tool:weather"' }]);

    const human = await cairn(['eval', '--db', db, '--app', `${APP}#candidate`, '--status', 'completed']);
    expect(human.code).toBe(1);
    expect(human.stdout).toContain('evaluated 3 threads: 1 same, 2 diverged, 0 failed');
    expect(human.stdout).toMatch(/model calls: recorded 6 \(150 in \/ 36 out, \d+ ms\), evaluated 5 \(120 in \/ 28 out, \d+ ms\)/);
    expect(human.stdout).toMatch(/t-city-1\s+diverged\s+seq 1: reply → .Clear skies over city-1\../);
    expect(human.stdout).toMatch(/t-city-2\s+diverged\s+seq 1 agent call 1 "tool:forecast": recorded as "tool:weather"/);

    const same = await cairn(['eval', '--db', db, '--app', `${APP}#stored`, '--threads', 't-city-0,t-city-1,t-city-2']);
    expect(same.code).toBe(0);
    expect(same.stdout).toContain('evaluated 3 threads: 3 same, 0 diverged, 0 failed');
    expect(readFileSync(db).equals(before)).toBe(true);

    // What each record was, as `cairn effects` shows it.
    const effects = (await cairn(['effects', 't-city-0', '--db', db])).stdout;
    expect(effects).toMatch(/record\s+done\s+0\s+agent\s+ai\.generate\s+model model-a 20\+4 tokens \d+ ms\s+rec_/);
    expect(effects).toMatch(/record\s+done\s+0\s+agent\s+tool:weather\s+tool \d+ ms\s+rec_/);

    const none = await cairn(['eval', '--db', db, '--app', `${APP}#candidate`]);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/say which threads to evaluate/);
  });
});
