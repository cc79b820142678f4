/**
 * The inspector's richer views as a person sees them, in Chromium, over a real SQLite
 * file and a real PostgreSQL schema, through the built CLI (`cairn inspect --db …
 * --artifacts <dir>`): the timeline tree (a fork's branch hung under the position it
 * forks from, a retried step and its failed attempt, the pending interrupt, a child
 * run opened in place), the graph with the interrupted node highlighted and the node
 * that needs attention, artifact refs of a state as links whose preview shows the
 * text and the image with a verified badge (and a corrupt badge once the bytes are
 * damaged), and a position's recorded outputs and effects, an effect in doubt first.
 * Screenshots land in a temp folder.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Locator, Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { fsArtifacts } from '../../src/artifacts/fs/index.js';
import { decode } from '../../src/codec/tagged-json.js';
import type { Engine } from '../../src/contracts/engine.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { usePostgresSchema } from '../helpers/postgres.js';
import { chromiumMissing, launchChromium, startInspectorCli, type InspectorProcess } from './browser.js';
import { corruptFsBlob, writeViewThreads } from './views-fixture.js';

const pg = usePostgresSchema();
const missing = chromiumMissing();

let browser: Browser;

beforeAll(async () => {
  if (!missing) browser = await launchChromium();
}, 60_000);

afterAll(async () => {
  await browser?.close();
});

beforeEach(() => {
  if (missing) throw missing;
});

/** The computed stroke colour of an SVG shape (the test's tsconfig has no DOM types). */
const stroke = (shape: Locator) => shape.evaluate((el) => (globalThis as unknown as { getComputedStyle(e: unknown): { stroke: string } }).getComputedStyle(el).stroke);

const engines = [
  { name: 'SQLite', open: async (dir: string) => ({ engine: sqlite(join(dir, 'cairn.db')) as Engine, db: join(dir, 'cairn.db') }) },
  { name: 'PostgreSQL', open: async () => ({ engine: await pg.engine(), db: `${pg.url}#${pg.schema}` }) },
];

describe.each(engines)('the richer views on $name, in Chromium', ({ name, open }) => {
  let dir: string;
  let shots: string;
  let engine: Engine;
  let inspector: InspectorProcess;
  let page: Page;

  beforeAll(async () => {
    if (missing) return;
    dir = mkdtempSync(join(tmpdir(), 'cairn-views-browser-'));
    shots = mkdtempSync(join(tmpdir(), `cairn-views-shots-${name.toLowerCase()}-`));
    const opened = await open(dir);
    engine = opened.engine;
    await writeViewThreads(engine, fsArtifacts(join(dir, 'artifacts')));
    inspector = await startInspectorCli(opened.db, ['--artifacts', join(dir, 'artifacts')]);
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.setDefaultTimeout(10_000);
  }, 120_000);

  afterAll(async () => {
    await page?.close();
    const code = await inspector?.stop();
    await engine?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
    if (inspector) expect(code).toBe(0);
    if (shots) process.stdout.write(`inspector views screenshots (${name}): ${shots}\n`);
  });

  const treeRow = (seq: number, ns = '') => page.locator(`[data-testid=timeline-tree][data-ns="${ns}"] [data-testid=tree-position][data-seq="${seq}"][data-ns="${ns}"]`);

  it('draws the timeline as a tree: the fork hangs under seq 1, the retry and its failed attempt are marked, the head is pending', async () => {
    await page.goto(`${inspector.url}#/t/story`);
    await treeRow(8).waitFor();
    const tree = page.locator('[data-testid=timeline-tree][data-ns=""]');
    // Bob's branch (from seq 1) is drawn inside the first branch, right under seq 1's row.
    const fork = tree.locator('[data-testid=tree-branch][data-branch="5"]');
    expect(await fork.getAttribute('data-fork-of')).toBe('1');
    expect(await fork.getAttribute('data-head-path')).toBe('true');
    expect(await tree.locator('[data-testid=tree-branch][data-branch="0"] [data-testid=tree-branch][data-branch="5"]').count()).toBe(1);
    expect(await fork.locator('.branch-label').textContent()).toContain('branch forked from seq 1');
    const forkSeqs = await fork.locator('[data-testid=tree-position]').evaluateAll((rows) => rows.map((r) => Number(r.getAttribute('data-seq'))));
    expect(forkSeqs).toEqual([8, 7, 6, 5]);
    expect(await treeRow(5).textContent()).toContain('from seq 1 by bob');
    // draft failed once from seq 1 and its retry committed seq 2.
    expect(await tree.locator('[data-testid=tree-failure][data-seq="1"]').textContent()).toContain('model overloaded');
    expect(await treeRow(2).getByTestId('retry-marker').textContent()).toContain('retried after 1 failed attempt');
    expect(await treeRow(6).getByTestId('retry-marker').count()).toBe(0);
    // The head's interrupt is pending, the old branch's is not.
    expect(await treeRow(8).getByTestId('pending-marker').textContent()).toContain('interrupt 7:review:0:call:0 at review');
    expect(await treeRow(4).getByTestId('pending-marker').count()).toBe(0);
    await page.screenshot({ path: join(shots, 'timeline-tree.png'), fullPage: true });
  });

  it("opens a step's child run in place, nested under the step that ran it", async () => {
    await page.goto(`${inspector.url}#/t/story`);
    await treeRow(3).waitFor();
    await treeRow(3).locator('[data-testid=child-toggle][data-ns="research:0@2"]').click();
    const nested = treeRow(3).locator('[data-testid=timeline-tree][data-ns="research:0@2"]');
    await nested.locator('[data-testid=tree-position][data-seq="1"]').waitFor();
    expect(await nested.locator('[data-testid=tree-position][data-seq="1"]').textContent()).toContain('answer');
    expect(await nested.locator('[data-testid=tree-position]').count()).toBe(2);
  });

  it('draws the graph with the interrupted node highlighted, its child graph, and the conditional edges dashed', async () => {
    await page.goto(`${inspector.url}#/t/story`);
    const svg = page.getByTestId('graph-svg');
    await svg.waitFor();
    const nodes = await svg.getByTestId('graph-node').evaluateAll((els) => els.map((e) => [e.getAttribute('data-node'), e.getAttribute('data-state')]));
    expect(nodes).toEqual(
      expect.arrayContaining([
        ['gather', ''],
        ['draft', ''],
        ['research', ''],
        ['review', 'interrupted'],
      ]),
    );
    const review = svg.locator('[data-testid=graph-node][data-node=review]');
    expect(await review.textContent()).toContain('interrupted');
    expect(await stroke(review.locator('rect'))).toBe('rgb(224, 168, 0)');
    expect(await svg.locator('[data-testid=graph-edge][data-from=review][data-to=draft]').getAttribute('class')).toContain('conditional');
    expect(await page.locator('[data-testid=child-graph][data-node=research] [data-testid=graph-node][data-node=answer]').count()).toBe(1);
    expect(await page.getByTestId('graph-current').textContent()).toContain('review (interrupted)');
    await page.locator('.graph-view').screenshot({ path: join(shots, 'graph.png') });

    await page.goto(`${inspector.url}#/t/charge`);
    const charge = page.locator('[data-testid=graph-svg] [data-testid=graph-node][data-node=charge]');
    await charge.waitFor();
    expect(await charge.getAttribute('data-state')).toBe('needs_attention');
    expect(await stroke(charge.locator('rect'))).toBe('rgb(155, 28, 28)');
  });

  it("shows a state's artifact refs as links whose preview shows the text and the image, verified", async () => {
    await page.goto(`${inspector.url}#/t/story/seq/1`);
    const doc = page.locator('[data-testid=state-field][data-field=doc] [data-testid=artifact-link]');
    await doc.waitFor();
    expect(await doc.getAttribute('data-artifact')).toBe('key:notes-cairns.txt');
    await doc.getByTestId('artifact-open').click();
    await doc.locator('[data-testid=artifact-status][data-status=ok]').waitFor();
    expect(await doc.getByTestId('artifact-status').textContent()).toBe('sha256 ok');
    expect(await doc.getByTestId('artifact-text').textContent()).toBe('notes on cairns: cairns mark trails');

    const chart = page.locator('[data-testid=state-field][data-field=chart] [data-testid=artifact-link]');
    await chart.getByTestId('artifact-open').click();
    await chart.locator('[data-testid=artifact-status][data-status=ok]').waitFor();
    const image = chart.getByTestId('artifact-image');
    await image.waitFor();
    expect(
      await image.evaluate((img) => {
        const loaded = img as unknown as { complete: boolean; naturalWidth: number };
        return loaded.complete ? loaded.naturalWidth : 0;
      }),
    ).toBe(2);
    await page.screenshot({ path: join(shots, 'artifacts.png'), fullPage: true });

    // The route serves the text inline with its safe type, and a download as an attachment.
    const url = (download: boolean) => `${inspector.base}/api/threads/story/artifact?id=key%3Anotes-cairns.txt&seq=1${download ? '&download=1' : ''}&token=${inspector.token}`;
    const inline = await fetch(url(false));
    expect(inline.headers.get('content-type')).toBe('text/plain; charset=utf-8');
    expect(inline.headers.get('content-disposition')).toBe('inline; filename="notes-cairns.txt"');
    expect(await inline.text()).toBe('notes on cairns: cairns mark trails');
    expect((await fetch(url(true))).headers.get('content-disposition')).toBe('attachment; filename="notes-cairns.txt"');
  });

  it("shows a position's recorded outputs and effects, and an effect in doubt loud", async () => {
    await page.goto(`${inspector.url}#/t/story/seq/1`);
    const records = page.getByTestId('position-records');
    await records.waitFor();
    expect(await records.locator('[data-testid=record-row][data-name=model] [data-testid=record-output]').textContent()).toContain('"notes on cairns: cairns mark trails"');
    const meta = await records.locator('[data-testid=record-row][data-name=model] [data-testid=record-meta]').textContent();
    expect(meta).toContain('model');
    expect(meta).toContain('mock-writer');
    expect(meta).toContain('inputTokens 12');
    const effects = page.getByTestId('position-effects');
    expect(await effects.locator('[data-testid=effect-entry]').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-name')))).toEqual(['put_notes', 'put_chart']);
    expect(await effects.locator('[data-testid=effect-entry][data-name=put_notes]').textContent()).toContain('outcome recorded');
    // An effect's outcome that is an artifact ref is a link too.
    expect(await effects.locator('[data-testid=artifact-link][data-artifact="key:notes-cairns.txt"]').count()).toBe(1);

    await page.goto(`${inspector.url}#/t/charge/seq/0`);
    await page.getByTestId('attention-box').waitFor();
    expect(await page.getByTestId('attention-box').textContent()).toContain('charge_card');
    const inDoubt = page.locator('[data-testid=progress-effects] [data-testid=effect-entry][data-name=charge_card]');
    expect(await inDoubt.getByTestId('needs-attention').textContent()).toBe('needs attention');
    expect(await inDoubt.getByTestId('effect-recovery').textContent()).toContain('in doubt');
    expect(await inDoubt.textContent()).toContain('intent');
    await page.screenshot({ path: join(shots, 'needs-attention.png'), fullPage: true });
  });

  it('marks an artifact whose bytes were damaged as corrupt and sends none of them', async () => {
    const ref = (await engine.ledger.list('story')).find((e) => e.name === 'put_chart' && e.status === 'done')!;
    const sha256 = decode<{ sha256: string }>(ref.outcome!).sha256;
    corruptFsBlob(join(dir, 'artifacts'), sha256);
    await page.goto(`${inspector.url}#/t/story/seq/1`);
    const chart = page.locator('[data-testid=state-field][data-field=chart] [data-testid=artifact-link]');
    await chart.getByTestId('artifact-open').click();
    await chart.locator('[data-testid=artifact-status][data-status=corrupt]').waitFor();
    expect(await chart.getByTestId('artifact-image').count()).toBe(0);
    const response = await fetch(`${inspector.base}/api/threads/story/artifact?id=key%3Achart-cairns.png&seq=1&token=${inspector.token}`);
    expect(response.status).toBe(409);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe('ERR_ARTIFACT_INTEGRITY');
  });
});
