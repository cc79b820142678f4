/**
 * `cairn worker --db sqlite:<file> --app <module>` runs waiting threads on the embedded
 * default: one worker process polling its SQLite file takes a sleeping thread again
 * when it is due, and a thread waiting for a signal once `cairn signal` queued it.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { sqlite } from '../../dist/engines/sqlite/index.js';
import { createApp } from '../fixtures/waiting-app.mjs';
import { cairn } from './run-cli.js';

const APP = fileURLToPath(new URL('../fixtures/waiting-app.mjs', import.meta.url));
const MAIN = fileURLToPath(new URL('../../dist/cli/main.js', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'cairn-cli-worker-waits-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('cairn worker on SQLite', () => {
  it('wakes a sleeping thread when it is due and a waiting one once a signal is queued, then stops on SIGTERM', async () => {
    const db = join(dir, 'cairn.db');
    const engine = sqlite(db);
    const started = await createApp(engine).run({ thread: 'w1', input: {} });
    expect(started.status).toBe('waiting');
    const worker = spawn(process.execPath, [MAIN, 'worker', '--db', `sqlite:${db}`, '--app', `${APP}#createApp`, '--poll-ms', '50'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    worker.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const exited = new Promise<number | null>((resolve) => worker.on('close', resolve));
    try {
      const until = Date.now() + 15_000;
      const thread = async () => (await engine.checkpointer.getThread('w1'))!;
      // The sleep is over and the worker ran the node on to its signal wait.
      while (!((await thread()).status === 'waiting' && (await thread()).wakeAt === null) && Date.now() < until) await pause(25);
      expect((await thread()).wakeAt).toBeNull();
      const sent = await cairn(['signal', 'w1', 'go', '--payload', '"now"', '--db', db]);
      expect(sent.code, sent.stderr).toBe(0);
      while ((await thread()).status !== 'completed' && Date.now() < until) await pause(25);
      expect((await thread()).status).toBe('completed');
      expect((await createApp(engine).getState({ thread: 'w1' })).got).toBe('now');
    } finally {
      worker.kill('SIGTERM');
      await engine.close();
    }
    expect(await exited, stderr).toBe(0);
  });
});
