/**
 * Evaluation replay in the web inspector, in Chromium, over a real SQLite file and
 * the built CLI: three threads stored by one AI SDK agent (test/fixtures/eval-app.mjs,
 * `stored`, a mock model from `ai/test`), then `cairn inspect --allow-actions --app
 * eval-app.mjs#candidate` (another model, which answers one city otherwise and asks
 * another tool for a third). From the thread list, "Evaluate these threads" shows the
 * summary (1 same, 2 diverged), a row per thread, the answer that differs as a state
 * diff row, and the tool the record lacks as the reason; model calls recorded beside
 * evaluated. From a thread's page, "Evaluate this thread" evaluates that one; a
 * thread that does not exist counts as failed, with its typed error. A
 * second inspector, read-only, shows the report `cairn eval --json` saved
 * (`--eval-report`) without running anything. Nothing is written. Screenshots land in
 * a temp folder.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { cairn } from '../cli/run-cli.js';
import { chromiumMissing, ensureInspectorBuilt, openPage, startInspectorCli, type InspectorProcess } from './browser.js';

const missing = chromiumMissing();
const APP = fileURLToPath(new URL('../fixtures/eval-app.mjs', import.meta.url));

let dir: string;
let db: string;
let shots: string;
let before: Buffer;
let inspector: InspectorProcess;
let saved: InspectorProcess;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  if (missing) return;
  ensureInspectorBuilt();
  dir = mkdtempSync(join(tmpdir(), 'cairn-inspector-eval-'));
  shots = mkdtempSync(join(tmpdir(), 'cairn-inspector-eval-shots-'));
  db = join(dir, 'cairn.db');
  const { stored } = (await import(APP)) as { stored: (engine: unknown) => { run(o: { thread: string; input: { city: string } }): Promise<unknown> } };
  const engine = sqlite(db);
  try {
    const app = stored(engine);
    for (const city of ['city-0', 'city-1', 'city-2']) await app.run({ thread: `t-${city}`, input: { city } });
  } finally {
    await engine.close();
  }
  // The report a CI job would keep as an artifact.
  const json = await cairn(['eval', '--db', db, '--app', `${APP}#candidate`, '--status', 'completed', '--json']);
  expect(json.code).toBe(1);
  writeFileSync(join(dir, 'eval.json'), json.stdout);
  before = readFileSync(db);
  [inspector, saved] = await Promise.all([
    startInspectorCli(db, ['--allow-actions', '--app', `${APP}#candidate`, '--actor', 'ana']),
    startInspectorCli(db, ['--eval-report', join(dir, 'eval.json')]),
  ]);
  ({ browser, page } = await openPage(1000, 15_000));
}, 180_000);

beforeEach(() => {
  if (missing) throw missing;
});

afterAll(async () => {
  await browser?.close();
  const codes = await Promise.all([inspector?.stop(), saved?.stop()]);
  if (dir) rmSync(dir, { recursive: true, force: true });
  if (inspector) expect(codes).toEqual([0, 0]);
  if (shots) process.stdout.write(`inspector evaluation screenshots: ${shots}\n`);
});

/** The summary's counts as the page shows them. */
async function counts(p: Page) {
  const report = p.getByTestId('eval-report');
  return {
    same: await report.getByTestId('eval-same').textContent(),
    diverged: await report.getByTestId('eval-diverged').textContent(),
    failed: await report.getByTestId('eval-failed').textContent(),
  };
}

describe('evaluation replay in the inspector, on SQLite, in Chromium', () => {
  it('evaluates the listed threads from "Evaluate these threads": the counts, each outcome, the diverging answer as a diff row, the tool the record lacks as the reason', async () => {
    await page.goto(inspector.url);
    await page.getByTestId('thread-row').first().waitFor();
    await page.getByTestId('status-filter').selectOption('completed');
    await page.getByTestId('evaluate-threads').click();
    expect(await page.getByTestId('eval-selection').textContent()).toContain('status=completed');
    await page.getByTestId('eval-run').click();
    await page.getByTestId('eval-report').waitFor();
    expect(await counts(page)).toEqual({ same: '1', diverged: '2', failed: '0' });

    const rows = page.getByTestId('eval-row');
    expect(await rows.evaluateAll((trs) => trs.map((tr) => [tr.getAttribute('data-thread'), tr.getAttribute('data-outcome')]))).toEqual([
      ['t-city-0', 'same'],
      ['t-city-1', 'diverged'],
      ['t-city-2', 'diverged'],
    ]);
    expect(await page.locator('[data-testid="eval-row"][data-thread="t-city-2"] [data-testid="eval-first"]').textContent()).toBe('seq 1: a tool the record lacks (tool:forecast)');

    const answer = page.locator('[data-testid="eval-detail"][data-thread="t-city-1"]');
    const diffRows = answer.getByTestId('eval-diff').getByTestId('diff-row');
    expect(await diffRows.count()).toBe(1);
    expect(await diffRows.first().getAttribute('data-kind')).toBe('changed');
    const diffText = (await diffRows.first().textContent())!;
    expect(diffText).toContain('reply');
    expect(diffText).toMatch(/Sunny in city-1\..*→.*Clear skies over city-1\./);
    const models = answer.getByTestId('eval-model');
    expect(await models.count()).toBe(2);
    expect(await models.first().textContent()).toMatch(/model-a → model-b.*20 in \/ 4 out → 20 in \/ 4 out/);

    const tool = page.locator('[data-testid="eval-detail"][data-thread="t-city-2"]');
    expect(await tool.getByTestId('eval-diff').count()).toBe(0);
    const reason = (await tool.getByTestId('eval-reason').textContent())!;
    expect(reason).toContain('a tool the record lacks');
    expect(reason).toContain('“tool:forecast”, recorded as "tool:weather"');

    expect(await page.getByTestId('eval-cost-recorded').textContent()).toMatch(/recorded6150 in \/ 36 out\d+ ms/);
    expect(await page.getByTestId('eval-cost-evaluated').textContent()).toMatch(/evaluated5120 in \/ 28 out\d+ ms/);
    await page.screenshot({ path: join(shots, 'evaluation.png'), fullPage: true });
  });

  it('evaluates one thread from its page ("Evaluate this thread")', async () => {
    await page.goto(`${inspector.url}#/t/t-city-0`);
    await page.getByTestId('evaluate-thread').click();
    expect(await page.getByTestId('eval-selection').textContent()).toContain('threads t-city-0');
    await page.getByTestId('eval-run').click();
    await page.getByTestId('eval-report').waitFor();
    expect(await counts(page)).toEqual({ same: '1', diverged: '0', failed: '0' });
    expect(await page.getByTestId('eval-detail').count()).toBe(0);
  });

  it('counts a thread that cannot be evaluated as failed, with its typed error', async () => {
    await page.goto(`${inspector.url}#/evaluate?threads=t-city-1,t-gone`);
    await page.getByTestId('eval-run').click();
    await page.getByTestId('eval-report').waitFor();
    expect(await counts(page)).toEqual({ same: '0', diverged: '1', failed: '1' });
    expect(await page.locator('[data-testid="eval-row"][data-thread="t-gone"]').getAttribute('data-outcome')).toBe('failed');
    expect(await page.locator('[data-testid="eval-detail"][data-thread="t-gone"] [data-testid="eval-error"]').textContent()).toMatch(/^ERR_THREAD_NOT_FOUND: /);
  });

  it('shows the report cairn eval --json saved on a read-only inspector, which runs nothing', async () => {
    await page.goto(saved.url);
    await page.getByTestId('saved-report').click();
    await page.getByTestId('eval-report').waitFor();
    expect(await counts(page)).toEqual({ same: '1', diverged: '2', failed: '0' });
    expect(await page.locator('[data-testid="eval-detail"][data-thread="t-city-1"] [data-testid="diff-row"]').count()).toBe(1);
    expect(await page.getByTestId('eval-run').count()).toBe(0);
    expect(await page.getByTestId('evaluate-threads').count()).toBe(0);
    await page.screenshot({ path: join(shots, 'saved-report.png'), fullPage: true });
    // A read-only evaluation page says what it would need.
    await page.goto(`${saved.url}#/evaluate?threads=t-city-0`);
    await page.getByTestId('eval-disabled').waitFor();
    expect(readFileSync(db).equals(before)).toBe(true);
  });

  it('refuses to start with an --eval-report that is not a report, as a usage error', async () => {
    writeFileSync(join(dir, 'not-a-report.json'), '{"threads": 3}');
    for (const file of [join(dir, 'not-a-report.json'), join(dir, 'absent.json')]) {
      const refused = await cairn(['inspect', '--db', db, '--eval-report', file]);
      expect(refused.code, file).toBe(2);
      expect(refused.stderr).toMatch(file.endsWith('absent.json') ? /--eval-report .*absent\.json: cannot read it/ : /not a report of cairn eval --json/);
    }
  });
});
