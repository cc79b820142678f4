/**
 * The web inspector as a person uses it, in a real browser (Debian's Chromium,
 * driven by playwright-core), over a real SQLite file and the built CLI
 * (`cairn inspect` in a child process): the threads list with its status badges,
 * a thread's timeline, a position's state, a diff, the integrity badge, a pending
 * interrupt's payload, the token that guards every request, and a page that follows
 * a thread as it runs on, without a reload. Screenshots land in a temp folder, and
 * with CAIRN_UPDATE_DOCS_SCREENSHOT=1, the thread page's in docs/inspector.png for
 * the README.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { fsArtifacts } from '../../src/artifacts/fs/index.js';
import type { Engine } from '../../src/contracts/engine.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { chromiumMissing, openPage, LONG_LETTER, refundApp, startInspectorCli, writeThreads, type InspectorProcess } from './browser.js';

const docsShot = fileURLToPath(new URL('../../docs/inspector.png', import.meta.url));
const missing = chromiumMissing();

let dir: string;
let shots: string;
let engine: Engine;
let inspector: InspectorProcess;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  if (missing) return;
  dir = mkdtempSync(join(tmpdir(), 'cairn-inspector-'));
  shots = mkdtempSync(join(tmpdir(), 'cairn-inspector-shots-'));
  engine = sqlite(join(dir, 'cairn.db'));
  await writeThreads(engine, fsArtifacts(join(dir, 'artifacts')));
  inspector = await startInspectorCli(join(dir, 'cairn.db'));
  ({ browser, page } = await openPage(800));
}, 120_000);

beforeEach(() => {
  if (missing) throw missing;
});

afterAll(async () => {
  await browser?.close();
  const code = await inspector?.stop();
  await engine?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
  // SIGTERM closes the server and the engine, and the command exits cleanly.
  if (inspector) expect(code).toBe(0);
  if (shots) process.stdout.write(`inspector screenshots: ${shots}\n`);
});

/** Resolves once `check` holds, polled every 50 ms; throws after `timeoutMs`. */
async function until(what: string, check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting until ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const rowCount = () => page.getByTestId('thread-row').count();

const row = (id: string) => page.locator(`[data-testid=thread-row][data-thread="${id}"]`);
const positionRow = (seq: number) => page.locator(`[data-testid=position-row][data-seq="${seq}"]`);

describe('cairn inspect on SQLite, in Chromium', () => {
  it('answers 401 to a request without the token: the page, an asset path and the API', async () => {
    for (const path of ['/', '/assets/index.js', '/api/threads', '/api/threads/cust_42']) {
      const response = await fetch(`${inspector.base}${path}`);
      expect(response.status, path).toBe(401);
    }
    const wrong = await fetch(`${inspector.base}/api/threads?token=${'0'.repeat(64)}`);
    expect(wrong.status).toBe(401);
    const right = await fetch(`${inspector.base}/api/threads?token=${inspector.token}`);
    expect(right.status).toBe(200);
    expect(inspector.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?token=[0-9a-f]{64}$/);
  });

  it('lists the three threads with their status badges', async () => {
    await page.goto(inspector.url);
    await row('refund_7').waitFor();
    expect(await page.getByTestId('thread-row').count()).toBe(3);
    for (const id of ['cust_42', 'post', 'refund_7']) {
      const status = (await engine.checkpointer.getThread(id))!.status;
      expect(await row(id).getByTestId('status-badge').textContent(), id).toBe(status);
    }
    expect(await row('cust_42').getByTestId('status-badge').textContent()).toBe('completed');
    expect(await row('refund_7').getByTestId('status-badge').textContent()).toBe('interrupted');
    await page.screenshot({ path: join(shots, 'threads.png'), fullPage: true });
  });

  it('filters by status and searches by id prefix', async () => {
    await page.goto(inspector.url);
    await row('cust_42').waitFor();
    await page.getByTestId('status-filter').selectOption('interrupted');
    await until('one thread is listed', async () => (await rowCount()) === 1);
    expect(await page.getByTestId('thread-row').getAttribute('data-thread')).toBe('refund_7');
    await page.getByTestId('status-filter').selectOption('');
    await page.getByTestId('thread-search').fill('cu');
    // Until the search's answer is shown: the status filter's one row (refund_7) may still be listed a moment.
    const only = async () => ((await rowCount()) === 1 ? page.getByTestId('thread-row').getAttribute('data-thread') : null);
    await until('only cust_42 is listed', async () => (await only()) === 'cust_42');
    expect(await page.getByTestId('thread-row').getAttribute('data-thread')).toBe('cust_42');
  });

  it('filters by kind, tenant, metadata pairs and update time, orders by most recent update, and shows a malformed filter\'s error', async () => {
    const all = await engine.checkpointer.listThreads();
    const listed = () => page.getByTestId('thread-row').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-thread')));
    const showing = async (what: string, ids: string[]) => {
      await until(`${what}: ${ids.join(', ') || 'no threads'}`, async () =>
        ids.length ? JSON.stringify(await listed()) === JSON.stringify(ids) : (await page.getByTestId('no-threads').count()) === 1,
      );
    };
    await page.goto(inspector.url);
    await row('cust_42').waitFor();

    const refund = all.find((t) => t.id === 'refund_7')!;
    await page.getByTestId('kind-filter').selectOption(refund.kind);
    await showing(`kind ${refund.kind}`, all.filter((t) => t.kind === refund.kind).map((t) => t.id));
    await page.getByTestId('kind-filter').selectOption(refund.kind === 'task' ? 'session' : 'task');
    await showing('the other kind', all.filter((t) => t.kind === (refund.kind === 'task' ? 'session' : 'task')).map((t) => t.id));
    await page.getByTestId('kind-filter').selectOption('');

    await page.getByTestId('tenant-filter').fill('nobody');
    await showing('tenant nobody', []);
    await page.getByTestId('tenant-filter').fill('');

    // A metadata pair one thread has, and one none has.
    const [key, value] = Object.entries(refund.metadata).find(([, v]) => typeof v === 'string')!;
    await page.getByTestId('meta-filter').fill(`${key}=${value as string}`);
    await showing(`${key}=${value as string}`, all.filter((t) => t.metadata[key] === value).map((t) => t.id));
    await page.getByTestId('meta-filter').fill(`${key}=${value as string}, missing=1`);
    await showing('and missing=1', []);
    await page.getByTestId('meta-filter').fill('');

    await page.getByTestId('order-filter').selectOption('updatedAt');
    const byUpdate = [...all].sort((a, b) => b.updatedAt - a.updatedAt || (a.id < b.id ? -1 : 1)).map((t) => t.id);
    await showing('most recently updated first', byUpdate);
    // Written by this run of the suite: every thread was updated within the day.
    await page.getByTestId('updated-filter').selectOption(String(86_400_000));
    await showing('updated within a day', byUpdate);
    await page.getByTestId('thread-search').fill('re');
    await showing('and id starts with re', ['refund_7']);
    await page.screenshot({ path: join(shots, 'threads-filtered.png'), fullPage: true });

    await page.getByTestId('clear-filters').click();
    await showing('no filters', all.map((t) => t.id));
    expect(await page.getByTestId('thread-search').inputValue()).toBe('');

    // A pair without "=" is refused by the server; the page shows why.
    await page.getByTestId('meta-filter').fill('queue');
    await page.getByTestId('threads-error').waitFor();
    expect(await page.getByTestId('threads-error').textContent()).toContain('key=value');
    await page.getByTestId('meta-filter').fill('');
    await showing('no filters again', all.map((t) => t.id));
  });

  it("shows a thread's positions newest first, its effects, and an integrity badge that says ok", async () => {
    await page.goto(inspector.url);
    await row('cust_42').locator('a').click();
    await positionRow(0).waitFor();
    const seqs = await page.getByTestId('position-row').evaluateAll((rows) => rows.map((r) => Number(r.getAttribute('data-seq'))));
    expect(seqs).toEqual([4, 3, 2, 1, 0]);
    expect(await positionRow(3).textContent()).toContain('put_object');
    expect(await page.getByTestId('effects').textContent()).toContain('crm.get');
    await page.getByTestId('integrity-badge').waitFor();
    expect(await page.getByTestId('integrity-badge').textContent()).toContain('integrity ok');
    await page.screenshot({ path: join(shots, 'thread.png'), fullPage: true });
    // The README's picture is rewritten only when asked, so a test run leaves the worktree clean.
    if (process.env.CAIRN_UPDATE_DOCS_SCREENSHOT === '1') await page.screenshot({ path: docsShot });
  });

  it("shows a position's state as a tree", async () => {
    await page.goto(`${inspector.url}#/t/cust_42`);
    await positionRow(1).locator('a').first().click();
    await page.getByTestId('state-tree').waitFor();
    const customer = page.locator('[data-testid=state-field][data-field=customer]');
    expect(await customer.textContent()).toContain('"Customer 42"');
    expect(await page.locator('[data-testid=state-field][data-field=log]').textContent()).toContain('"loaded customer"');
    // Seq 1 ran load_customer only: no summary yet.
    expect(await page.locator('[data-testid=state-field][data-field=summary]').count()).toBe(0);
    await page.screenshot({ path: join(shots, 'position.png'), fullPage: true });
  });

  it('diffs two picked positions: the appended log line is a + row', async () => {
    await page.goto(`${inspector.url}#/t/cust_42`);
    await positionRow(3).waitFor();
    await positionRow(3).getByTestId('pick').check();
    await positionRow(4).getByTestId('pick').check();
    await page.getByTestId('diff-link').click();
    await page.getByTestId('diff').waitFor();
    const appended = page.locator('[data-testid=diff-row][data-kind=appended]');
    expect(await appended.count()).toBe(1);
    expect(await appended.textContent()).toBe('+log[3]"saved prefs"');
    // save_prefs wrote a field the state did not have before.
    expect(await page.locator('[data-testid=diff-row][data-kind=added]').textContent()).toBe('+prefsVersion1');
    await page.screenshot({ path: join(shots, 'diff.png'), fullPage: true });
  });

  it("shows a fork's branch, the answered interrupt's actor and the child run's own timeline", async () => {
    await page.goto(`${inspector.url}#/t/post`);
    await positionRow(0).waitFor();
    const head = (await engine.checkpointer.getThread('post'))!.head!;
    const fork = positionRow(head);
    expect(await fork.textContent()).toContain('bob');
    // The fork branches from the input position.
    expect(await fork.locator('td').nth(2).textContent()).toBe('0');
    expect(await page.getByTestId('timeline').textContent()).toContain('alice');
    const child = page.getByTestId('timeline').locator('a', { hasText: 'research' }).first();
    await child.click();
    await page.locator('h2', { hasText: 'child run' }).waitFor();
    await positionRow(0).waitFor();
    expect(await page.getByTestId('timeline').textContent()).toContain('answer');
  });

  it("shows a pending interrupt's payload, cuts a long string until expanded, and follows the thread as it runs on, without a reload", async () => {
    await page.goto(`${inspector.url}#/t/refund_7`);
    await page.getByTestId('pending-interrupt').waitFor();
    const payload = await page.getByTestId('interrupt-payload').textContent();
    expect(payload).toContain('"refund order A-17?"');
    expect(payload).toContain('"40 EUR"');
    expect(await page.getByTestId('thread-title').getByTestId('status-badge').textContent()).toBe('interrupted');
    await page.screenshot({ path: join(shots, 'interrupt.png'), fullPage: true });

    // The state's long letter is cut, and shown whole on request.
    const head = (await engine.checkpointer.getThread('refund_7'))!.head!;
    await positionRow(head).locator('a').first().click();
    const letter = page.locator('[data-testid=state-field][data-field=letter]');
    await letter.waitFor();
    expect(await letter.textContent()).not.toContain('Regards, Ann');
    await letter.getByTestId('expand-string').click();
    expect(await letter.textContent()).toContain(JSON.stringify(LONG_LETTER));

    await page.goto(`${inspector.url}#/t/refund_7`);
    await positionRow(head).waitFor();
    const before = await page.getByTestId('position-row').count();
    // A mark on the window: a reload would lose it.
    await page.evaluate('window.stayed = true');
    // One more step, in this process: the page polls the head and shows it.
    await refundApp(engine).resume({ thread: 'refund_7', answer: true, actor: 'ana' });
    const badge = page.getByTestId('thread-title').getByTestId('status-badge');
    await until('the page shows the thread completed', async () => (await badge.textContent()) === 'completed');
    await until('the page shows the new positions', async () => (await page.getByTestId('position-row').count()) > before);
    expect(await page.evaluate('window.stayed')).toBe(true);
    expect(await page.getByTestId('pending-interrupt').count()).toBe(0);
    expect(await page.getByTestId('timeline').textContent()).toContain('ana');
    await page.screenshot({ path: join(shots, 'live.png'), fullPage: true });
  });

  it('answers the API with JSON errors: 404 for a missing thread or position, 400 for a bad option', async () => {
    const get = (path: string) => fetch(`${inspector.base}${path}${path.includes('?') ? '&' : '?'}token=${inspector.token}`);
    const noThread = await get('/api/threads/nobody');
    expect(noThread.status).toBe(404);
    expect(((await noThread.json()) as { error: { code: string } }).error.code).toBe('ERR_THREAD_NOT_FOUND');
    const noSeq = await get('/api/threads/cust_42/state?seq=99');
    expect(noSeq.status).toBe(404);
    expect(((await noSeq.json()) as { error: { code: string } }).error.code).toBe('ERR_POSITION_NOT_FOUND');
    const bad = await get('/api/threads/cust_42/history?limit=zero');
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { code: string } }).error.code).toBe('ERR_INVALID_OPTION');
  });
});
