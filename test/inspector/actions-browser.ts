/**
 * What the browser tests of the inspector's actions share: the threads they act on,
 * written by the actions fixture app (test/fixtures/actions-app.mjs, the same module
 * `cairn inspect --app` loads), and the steps of answering an interrupt through the
 * page's form.
 */
import type { Page } from 'playwright-core';
import type { Engine } from '../../src/contracts/engine.js';
import { ensureBuilt } from '../artifacts/build.js';

/** The fixture app's module, as `--app` names it. */
export const ACTIONS_APP = `${new URL('../fixtures/actions-app.mjs', import.meta.url).pathname}#createApp`;

/** The fixture module, imported once dist/ is current (it imports the built package). */
export async function actionsFixture(): Promise<typeof import('../fixtures/actions-app.mjs')> {
  ensureBuilt();
  return import('../fixtures/actions-app.mjs');
}

/** Writes `ask_1` (interrupted), `wait_1` (waiting for `payment`), `pay_1` (needs_attention), `post_1` and `trash_1` (completed). */
export async function writeActionThreads(engine: Engine, only?: string[]): Promise<void> {
  const { createApp, setChargeBroken } = await actionsFixture();
  const app = createApp(engine);
  const want = (id: string) => !only || only.includes(id);
  if (want('ask_1')) await app.run({ thread: 'ask_1', input: { mode: 'ask' } });
  if (want('wait_1')) await app.run({ thread: 'wait_1', input: { mode: 'wait' } });
  if (want('pay_1')) {
    setChargeBroken(true);
    await app.run({ thread: 'pay_1', input: { mode: 'pay' } }).catch(() => undefined);
    setChargeBroken(false);
    await app.run({ thread: 'pay_1' }).catch(() => undefined);
  }
  if (want('post_1')) await app.run({ thread: 'post_1', input: { mode: 'post', topic: 'cairns' } });
  if (want('trash_1')) await app.run({ thread: 'trash_1', input: { mode: 'post', topic: 'junk' } });
}

/** Resolves once `check` holds, polled every 50 ms; throws after `timeoutMs`. */
export async function until(what: string, check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The thread's status as its page's title shows it. */
export function titleStatus(page: Page): Promise<string | null> {
  return page.getByTestId('thread-title').getByTestId('status-badge').textContent();
}

/**
 * Answers `ask_1`'s interrupt through the form built from its answer schema: first
 * with a refused answer (the typed error shows, the thread stays interrupted), then
 * with a good one (screenshot to `shot` before it is sent), after which the page
 * shows the thread completed.
 */
export async function answerThroughForm(page: Page, url: string, engine: Engine, shot?: string): Promise<void> {
  await page.goto(`${url}#/t/ask_1`);
  const form = page.getByTestId('answer-form');
  await form.waitFor();
  // The form has an input per field of the schema, nested ones by path.
  for (const name of ['approve', 'amount', 'reason', 'note', 'shipTo.city']) await form.locator(`[name="${name}"]`).waitFor();
  await form.locator('[name="amount"]').fill('-3');
  await form.getByTestId('answer-submit').click();
  const error = form.getByTestId('action-error');
  await error.waitFor();
  if (!(await error.textContent())!.includes('ERR_STATE_VALIDATION')) throw new Error(`expected ERR_STATE_VALIDATION, the page shows: ${await error.textContent()}`);
  if ((await engine.checkpointer.getThread('ask_1'))!.status !== 'interrupted') throw new Error('a refused answer changed the thread');
  await form.locator('[name="approve"]').check();
  await form.locator('[name="amount"]').fill('40');
  await form.locator('[name="reason"]').selectOption('price');
  await form.locator('[name="note"]').fill('damaged in transit');
  await form.locator('[name="shipTo.city"]').fill('Lyon');
  if (shot) await page.screenshot({ path: shot, fullPage: true });
  await form.getByTestId('answer-submit').click();
  await until('the page shows ask_1 completed', async () => (await titleStatus(page)) === 'completed');
}
