/**
 * The web inspector over PostgreSQL, in Chromium: `cairn inspect --db
 * postgres://…#schema` (the built CLI in a child process) lists the threads with
 * their status badges and opens a thread's timeline and pending interrupt. The
 * local server, a fresh schema (test/helpers/postgres); never skipped.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { fsArtifacts } from '../../src/artifacts/fs/index.js';
import type { Engine } from '../../src/contracts/engine.js';
import { usePostgresSchema } from '../helpers/postgres.js';
import { chromiumMissing, openPage, startInspectorCli, writeThreads, type InspectorProcess } from './browser.js';

const pg = usePostgresSchema();
const missing = chromiumMissing();

let dir: string;
let engine: Engine;
let inspector: InspectorProcess;
let browser: Browser;
let page: Page;

beforeAll(async () => {
  if (missing || !pg.schema) return;
  dir = mkdtempSync(join(tmpdir(), 'cairn-inspector-pg-'));
  engine = await pg.engine();
  await writeThreads(engine, fsArtifacts(join(dir, 'artifacts')));
  inspector = await startInspectorCli(`${pg.url}#${pg.schema}`);
  ({ browser, page } = await openPage(800));
}, 120_000);

beforeEach(() => {
  if (missing) throw missing;
});

afterAll(async () => {
  await browser?.close();
  await inspector?.stop();
  await engine?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const row = (id: string) => page.locator(`[data-testid=thread-row][data-thread="${id}"]`);

describe('cairn inspect on PostgreSQL, in Chromium', () => {
  it('lists the three threads with their status badges', async () => {
    await page.goto(inspector.url);
    await row('refund_7').waitFor();
    expect(await page.getByTestId('thread-row').count()).toBe(3);
    expect(await row('cust_42').getByTestId('status-badge').textContent()).toBe('completed');
    expect(await row('refund_7').getByTestId('status-badge').textContent()).toBe('interrupted');
    expect(await row('post').getByTestId('status-badge').textContent()).toBe((await engine.checkpointer.getThread('post'))!.status);
  });

  it("opens a thread: its positions newest first, the integrity badge, and a pending interrupt's payload", async () => {
    await page.goto(inspector.url);
    await row('cust_42').locator('a').click();
    await page.locator('[data-testid=position-row][data-seq="0"]').waitFor();
    const seqs = await page.getByTestId('position-row').evaluateAll((rows) => rows.map((r) => Number(r.getAttribute('data-seq'))));
    expect(seqs).toEqual([4, 3, 2, 1, 0]);
    await page.getByTestId('integrity-badge').waitFor();
    expect(await page.getByTestId('integrity-badge').textContent()).toContain('integrity ok');

    await page.goto(`${inspector.url}#/t/refund_7`);
    await page.getByTestId('pending-interrupt').waitFor();
    expect(await page.getByTestId('interrupt-payload').textContent()).toContain('"refund order A-17?"');
  });
});
