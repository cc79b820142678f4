/**
 * The web inspector's interrupt flow over PostgreSQL, in Chromium: `cairn inspect
 * --db postgres://…#schema --allow-actions --app …` (the built CLI in a child
 * process) answers an interrupt through the form built from its answer schema (a
 * refused answer shows its typed error and changes nothing), and the page then shows
 * the thread completed. The local server, a fresh schema; never skipped.
 * Screenshots land in a temp folder.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/contracts/engine.js';
import { usePostgresSchema } from '../helpers/postgres.js';
import { ACTIONS_APP, actionsFixture, answerThroughForm, writeActionThreads } from './actions-browser.js';
import { chromiumMissing, openPage, startInspectorCli, type InspectorProcess } from './browser.js';

const pg = usePostgresSchema();
const missing = chromiumMissing();

let shots: string;
let engine: Engine;
let inspector: InspectorProcess;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  if (missing || !pg.schema) return;
  shots = mkdtempSync(join(tmpdir(), 'cairn-inspector-actions-pg-shots-'));
  engine = await pg.engine();
  await writeActionThreads(engine, ['ask_1']);
  inspector = await startInspectorCli(`${pg.url}#${pg.schema}`, ['--allow-actions', '--app', ACTIONS_APP, '--actor', 'ana']);
  ({ browser, page } = await openPage(900));
}, 120_000);

beforeEach(() => {
  if (missing) throw missing;
});

afterAll(async () => {
  await browser?.close();
  const code = await inspector?.stop();
  await engine?.close();
  if (inspector) expect(code).toBe(0);
  if (shots) process.stdout.write(`inspector action screenshots (PostgreSQL): ${shots}\n`);
});

describe('cairn inspect --allow-actions on PostgreSQL, in Chromium', () => {
  it('answers an interrupt through the form built from its answer schema, and then shows the thread completed', async () => {
    await answerThroughForm(page, inspector.url, engine, join(shots, 'answer-form.png'));
    await page.screenshot({ path: join(shots, 'answered.png'), fullPage: true });
    const { createApp } = await actionsFixture();
    expect(((await createApp(engine).getState({ thread: 'ask_1' })) as { decision: string }).decision).toBe('refund 40 (price) to Lyon: damaged in transit');
    expect((await engine.checkpointer.getThread('ask_1'))!.status).toBe('completed');
  });
});
