/**
 * The web inspector's actions as a person uses them, in Chromium, over a real SQLite
 * file and the built CLI (`cairn inspect --allow-actions --app … --actor ana` in a
 * child process): an interrupt answered through the form built from its answer
 * schema (a refused answer shows its typed error first) and the thread then seen
 * completed; a signal sent to a waiting thread; an effect in doubt resolved; a replay
 * and a fork with an edited state; a run in another process cancelled; a thread
 * deleted after typing its id. A read-only inspector shows none of it, and one
 * without --app shows the code-running actions disabled with the reason.
 * Screenshots land in a temp folder.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import type { Engine } from '../../src/contracts/engine.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { ACTIONS_APP, actionsFixture, answerThroughForm, titleStatus, until, writeActionThreads } from './actions-browser.js';
import { chromiumMissing, openPage, startInspectorCli, type InspectorProcess } from './browser.js';

const missing = chromiumMissing();

let dir: string;
let db: string;
let shots: string;
let engine: Engine;
let inspector: InspectorProcess;
let readOnly: InspectorProcess;
let noApp: InspectorProcess;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  if (missing) return;
  dir = mkdtempSync(join(tmpdir(), 'cairn-inspector-actions-'));
  shots = mkdtempSync(join(tmpdir(), 'cairn-inspector-actions-shots-'));
  db = join(dir, 'cairn.db');
  engine = sqlite(db);
  await writeActionThreads(engine);
  [inspector, readOnly, noApp] = await Promise.all([
    startInspectorCli(db, ['--allow-actions', '--app', ACTIONS_APP, '--actor', 'ana']),
    startInspectorCli(db),
    startInspectorCli(db, ['--allow-actions']),
  ]);
  ({ browser, page } = await openPage(900));
  page.on('dialog', (dialog) => void dialog.accept());
}, 120_000);

beforeEach(() => {
  if (missing) throw missing;
});

afterAll(async () => {
  await browser?.close();
  const codes = await Promise.all([inspector?.stop(), readOnly?.stop(), noApp?.stop()]);
  await engine?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  if (inspector) expect(codes).toEqual([0, 0, 0]);
  if (shots) process.stdout.write(`inspector action screenshots: ${shots}\n`);
});

describe('cairn inspect --allow-actions on SQLite, in Chromium', () => {
  it('prints that actions are allowed and as whom; the page says so in its header', async () => {
    await page.goto(inspector.url);
    expect(await page.getByTestId('actions-allowed').textContent()).toContain('as ana');
  });

  it('answers an interrupt through the form built from its answer schema; a refused answer shows ERR_STATE_VALIDATION; then the page shows it completed', async () => {
    await answerThroughForm(page, inspector.url, engine, join(shots, 'answer-form.png'));
    await page.screenshot({ path: join(shots, 'answered.png'), fullPage: true });
    const { createApp } = await actionsFixture();
    const state = (await createApp(engine).getState({ thread: 'ask_1' })) as { decision: string };
    expect(state.decision).toBe('refund 40 (price) to Lyon: damaged in transit');
    const history = await createApp(engine).history({ thread: 'ask_1' });
    expect(history.some((p) => p.actor === 'ana')).toBe(true);
  });

  it('answers an interrupt as JSON instead of through the form: the same answer, written whole', async () => {
    const { createApp } = await actionsFixture();
    await createApp(engine).run({ thread: 'ask_json', input: { mode: 'ask' } });
    await page.goto(`${inspector.url}#/t/ask_json`);
    const form = page.getByTestId('answer-form');
    await form.locator('[name="amount"]').fill('7');
    await form.getByTestId('answer-as-json').click();
    // The JSON box starts from what the form held.
    const box = form.locator('[name="answer-json"]');
    expect(JSON.parse(await box.inputValue())).toEqual({ approve: false, amount: 7, shipTo: {} });
    await box.fill('{ "approve": false, "amount": 7, "reason": "stock", "shipTo": { "city": "Oslo" } ');
    expect(await form.getByTestId('json-problem').textContent()).toContain('not JSON');
    await box.fill('{ "approve": false, "amount": 7, "reason": "stock", "shipTo": { "city": "Oslo" } }');
    expect(await form.getByTestId('json-problem').count()).toBe(0);
    await form.getByTestId('answer-submit').click();
    await until('the page shows ask_json completed', async () => (await titleStatus(page)) === 'completed');
    expect(((await createApp(engine).getState({ thread: 'ask_json' })) as { decision: string }).decision).toBe('deny 7 (stock) to Oslo');
  });

  it('sends a signal to a waiting thread; run on, the page shows what it received', async () => {
    await page.goto(`${inspector.url}#/t/wait_1`);
    const form = page.getByTestId('signal-form');
    await form.locator('[name="signal-name"]').fill('payment');
    await form.locator('[name="signal-payload"]').fill('{"amount": 42}');
    await page.screenshot({ path: join(shots, 'signal.png'), fullPage: true });
    await form.getByTestId('signal-submit').click();
    expect(await form.getByTestId('action-done').textContent()).toContain('queued');
    expect(await engine.checkpointer.listSignals('wait_1')).toMatchObject([{ name: 'payment', payload: '{"amount":42}', consumedBy: null }]);
    const { createApp } = await actionsFixture();
    await createApp(engine).run({ thread: 'wait_1' });
    await until('the page shows wait_1 completed', async () => (await titleStatus(page)) === 'completed');
    expect((await createApp(engine).getState({ thread: 'wait_1' })) as { got: string }).toMatchObject({ got: 'paid 42' });
  });

  it('resolves a needs_attention effect with an outcome', async () => {
    await page.goto(`${inspector.url}#/t/pay_1`);
    const actions = page.getByTestId('effect-actions');
    await actions.locator('[name="effect-outcome"]').fill('"charged by hand"');
    await actions.getByTestId('effect-resolve').click();
    await page.getByTestId('effect-row').filter({ hasText: 'charged by hand' }).waitFor();
    await page.screenshot({ path: join(shots, 'effect.png'), fullPage: true });
    const [entry] = await engine.ledger.list('pay_1');
    expect(entry).toMatchObject({ status: 'done', outcome: '"charged by hand"' });
  });

  it('replays from a position, then forks from it with an edited state and runs the branch on, as ana', async () => {
    await page.goto(`${inspector.url}#/t/post_1/seq/0`);
    await page.getByTestId('replay-submit').click();
    expect(await page.getByTestId('replay-result').textContent()).toContain('every state matched');
    const editor = page.getByTestId('fork-form').locator('[name="fork-state"]');
    const shown = JSON.parse(await editor.inputValue()) as Record<string, unknown>;
    // The model fields stored at that position (the others read as their defaults, and may be added).
    expect(shown).toEqual({ mode: 'post', topic: 'cairns' });
    expect(await page.getByTestId('fork-form').textContent()).toContain('decision, got, charged, notes');
    await editor.fill(JSON.stringify({ ...shown, topic: 'stones' }, null, 2));
    await page.screenshot({ path: join(shots, 'fork.png'), fullPage: true });
    await page.getByTestId('fork-submit').click();
    await page.getByTestId('timeline').waitFor();
    await until('the page shows the fork on the timeline, by ana', async () => (await page.locator('[data-testid=position-row]', { hasText: 'fork' }).filter({ hasText: 'ana' }).count()) === 1);
    const { createApp } = await actionsFixture();
    const state = (await createApp(engine).getState({ thread: 'post_1' })) as { topic: string; notes: string[] };
    expect(state).toMatchObject({ topic: 'stones', notes: ['a post about stones'] });
    await until('the page shows post_1 completed', async () => (await titleStatus(page)) === 'completed');
  });

  it('cancels a run held by another process: it stops at its next step, the page shows the thread failed with ERR_THREAD_CANCELLED', async () => {
    const fixture = new URL('../fixtures/cancel-run.mjs', import.meta.url).pathname;
    const child = spawn(process.execPath, ['--no-warnings', fixture, 'sqlite', db, 'slow_1', '500', '200'], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
    await until('the slow run committed two steps', async () => (out.match(/"commit"/g) ?? []).length >= 2, 20_000);
    await page.goto(`${inspector.url}#/t/slow_1`);
    await until('the page shows slow_1 running', async () => (await titleStatus(page)) === 'running');
    await page.getByTestId('cancel-form').locator('[name="cancel-reason"]').fill('wrong customer');
    await page.getByTestId('cancel-submit').click();
    await until('the page shows slow_1 failed', async () => (await titleStatus(page)) === 'failed');
    expect(await page.locator('p.error', { hasText: 'ERR_THREAD_CANCELLED' }).textContent()).toContain('cancelled by ana: wrong customer');
    await page.screenshot({ path: join(shots, 'cancelled.png'), fullPage: true });
    expect(await exited).toBe(0);
    expect(out.trim().split('\n').at(-1)).toContain('ERR_LEASE_LOST');
    const head = (await engine.checkpointer.getThread('slow_1'))!.head;
    await new Promise((r) => setTimeout(r, 500));
    expect((await engine.checkpointer.getThread('slow_1'))!).toMatchObject({ head, status: 'failed', lastError: { code: 'ERR_THREAD_CANCELLED' } });
  });

  it('deletes a thread only once its id is typed again, and goes back to the list', async () => {
    await page.goto(`${inspector.url}#/t/trash_1`);
    const form = page.getByTestId('delete-form');
    expect(await form.getByTestId('delete-submit').isDisabled()).toBe(true);
    await form.locator('[name="delete-confirm"]').fill('trash_1');
    await page.screenshot({ path: join(shots, 'delete.png'), fullPage: true });
    await form.getByTestId('delete-submit').click();
    await page.locator('[data-testid=thread-row][data-thread="post_1"]').waitFor();
    expect(await page.locator('[data-testid=thread-row][data-thread="trash_1"]').count()).toBe(0);
    expect(await engine.checkpointer.getThread('trash_1')).toBeNull();
  });

  it('a read-only inspector shows no action; one without --app shows answering and forking disabled, saying why', async () => {
    await page.goto(`${readOnly.url}#/t/pay_1`);
    await page.getByTestId('thread-title').waitFor();
    await page.getByTestId('effects').waitFor();
    expect(await page.locator('header .readonly').textContent()).toBe('read-only');
    expect(await page.getByTestId('thread-actions').count()).toBe(0);
    expect(await page.getByTestId('effect-actions').count()).toBe(0);
    const { createApp } = await actionsFixture();
    await createApp(engine).run({ thread: 'ask_2', input: { mode: 'ask' } });
    await page.goto(`${noApp.url}#/t/ask_2`);
    const disabled = page.getByTestId('pending-interrupt').getByTestId('disabled-action');
    await disabled.waitFor();
    expect(await disabled.textContent()).toContain('--app');
    expect(await page.getByTestId('thread-actions').count()).toBe(1);
    await page.goto(`${noApp.url}#/t/ask_2/seq/0`);
    expect(await page.getByTestId('position-actions').getByTestId('disabled-action').textContent()).toContain('--app');
    await page.screenshot({ path: join(shots, 'no-app.png'), fullPage: true });
  });
});
