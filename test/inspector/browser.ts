/**
 * What the inspector's browser tests share: the three threads a person would look
 * at (the worked example; a post with a child run, an answered interrupt and a
 * fork; an approval waiting for its answer), the built inspector started as a user
 * starts it (`cairn inspect` in a child process, its URL read from its output), and
 * Debian's Chromium driven by playwright-core. A missing Chromium FAILS the tests
 * with a message saying how to install it: they never skip.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { postApp } from '../helpers/post-app.js';
import { z } from 'zod';
import type { ArtifactStore } from '../../src/contracts/artifact-store.js';
import type { Engine } from '../../src/contracts/engine.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import { field } from '../../src/state/fields.js';
import { defineState } from '../../src/state/schema.js';
import { workedExample } from '../../src/testing/worked-example.js';
import { ensureBuilt } from '../artifacts/build.js';

const repoRoot = fileURLToPath(new URL('../../', import.meta.url));
const cli = join(repoRoot, 'dist', 'cli', 'main.js');

/** Debian's Chromium (`apt-get install -y chromium`; .ci/run installs it). */
export const CHROMIUM = '/usr/bin/chromium';

/** Why the browser tests cannot run, or undefined when they can: thrown by every test, so they fail, never skip. */
export function chromiumMissing(): Error | undefined {
  if (existsSync(CHROMIUM)) return undefined;
  return new Error(`Chromium is not installed at ${CHROMIUM}: the inspector's browser tests need it and must run, never skip. Install it: apt-get update && apt-get install -y chromium (.ci/run does).`);
}

function newest(dir: string): number {
  let time = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    time = Math.max(time, entry.isDirectory() ? newest(path) : statSync(path).mtimeMs);
  }
  return time;
}

/** Builds the CLI (as ensureBuilt does) and the inspector's page, when either is older than its sources. */
export function ensureInspectorBuilt(): void {
  ensureBuilt();
  const index = join(repoRoot, 'dist', 'inspector-ui', 'index.html');
  if (existsSync(index) && statSync(index).mtimeMs >= newest(join(repoRoot, 'inspector-ui'))) return;
  const vite = join(createRequire(import.meta.url).resolve('vite/package.json'), '..', 'bin', 'vite.js');
  execFileSync(process.execPath, [vite, 'build', '--config', 'inspector-ui/vite.config.ts', '--logLevel', 'warn'], { cwd: repoRoot, stdio: 'pipe' });
}

/** Chromium headless, with no network chatter of its own (playwright gives it a fresh user-data-dir). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
  });
}

/** Chromium ({@link launchChromium}) and one page of it, 1280 px wide, `height` tall, waiting at most `timeoutMs` for what a test looks for. */
export async function openPage(height: number, timeoutMs = 10_000): Promise<{ browser: Browser; page: Page }> {
  const browser = await launchChromium();
  const page = await browser.newPage({ viewport: { width: 1280, height } });
  page.setDefaultTimeout(timeoutMs);
  return { browser, page };
}

/** A running `cairn inspect`: its printed URL, the URL's base and token, and a stop that waits for it to exit. */
export interface InspectorProcess {
  url: string;
  base: string;
  token: string;
  child: ChildProcess;
  /** What it wrote to stdout so far. */
  stdout(): string;
  /** What it wrote to stderr so far. */
  stderr(): string;
  /** Sends `signal` (default SIGTERM) and resolves with the exit code. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** Starts `cairn inspect --db <db> ...args` and resolves with the URL it prints. */
export function startInspectorCli(db: string, args: string[] = []): Promise<InspectorProcess> {
  ensureInspectorBuilt();
  const child = spawn(process.execPath, ['--no-warnings', cli, 'inspect', '--db', db, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`cairn inspect printed no URL in 20s. stdout: ${out} stderr: ${err}`)), 20_000);
    child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.once('exit', (code) => reject(new Error(`cairn inspect exited with ${code} before printing its URL: ${err}`)));
    child.stdout!.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /(http:\/\/\S+\/\?token=([0-9a-f]+))/.exec(out);
      if (!match) return;
      clearTimeout(timer);
      const url = match[1]!;
      resolve({
        url,
        base: url.slice(0, url.indexOf('/?token=')),
        token: match[2]!,
        child,
        stdout: () => out,
        stderr: () => err,
        stop: (signal = 'SIGTERM') =>
          new Promise((done) => {
            if (child.exitCode !== null) return done(child.exitCode);
            child.removeAllListeners('exit');
            child.once('exit', (code) => done(code));
            child.kill(signal);
          }),
      });
    });
  });
}


const Refund = defineState({
  fields: {
    order: field.model(z.string(), { default: '' }),
    letter: field.model(z.string(), { default: '' }),
    decision: field.model(z.string(), { default: '' }),
    log: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
  },
});

/** A node that asks a person (`await ctx.interrupt`) before it decides a refund. */
export function refundApp(engine: Engine) {
  return graph(Refund)
    .node('approve', async (s, ctx) => {
      const ok = await ctx.interrupt({ question: `refund order ${s.order}?`, amount: '40 EUR' }, { answer: z.boolean() });
      return { decision: ok ? 'refund' : 'deny', log: [`decided:${ok}`] };
    })
    .edge(START, 'approve')
    .edge('approve', END)
    .compile({ engine });
}

/** A customer's letter long enough for the page to cut it. */
export const LONG_LETTER = `Dear support, ${'my parcel arrived broken and I would like my money back. '.repeat(8)}Regards, Ann`;

/** Writes the three threads: `cust_42` (completed), `post` (a child run, an answered interrupt, a fork; completed), `refund_7` (interrupted). */
export async function writeThreads(engine: Engine, artifacts: ArtifactStore): Promise<void> {
  await workedExample({ engine, artifacts }).run({ thread: 'cust_42', input: { customerId: 'cust_42' } });
  const post = postApp(engine);
  await post.run({ thread: 'post', input: { topic: 'cairns' } });
  await post.resume({ thread: 'post', input: { approved: true }, actor: 'alice' });
  await post.fork({ thread: 'post', seq: 0, patch: { topic: 'stones' }, actor: 'bob' });
  await refundApp(engine).run({ thread: 'refund_7', input: { order: 'A-17', letter: LONG_LETTER } });
}
