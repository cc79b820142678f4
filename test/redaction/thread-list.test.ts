/**
 * A failed thread's error message quotes a redacted path (`customer.email`) and a
 * field declared `redact: true` (`apiKey`): every face that lists thread records
 * hides both, as the thread's own views do (they learn the head state first). The
 * CLI's `threads` (human and --json), `cancel --json` of the already failed thread,
 * the inspector's thread list and its cancel action; `--raw` still shows them.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { TOKEN_HEADER } from '../../src/inspector/actions.js';
import { startInspector } from '../../src/inspector/index.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import { field } from '../../src/state/fields.js';
import { defineState } from '../../src/state/schema.js';
import { cairn } from '../cli/run-cli.js';

const EMAIL = 'ana.perez@example.org';
const KEY = 'k-93f0a2c4d1e8';

const State = defineState({
  fields: {
    apiKey: field.model(z.string(), { redact: true, default: '' }),
    customer: field.model(z.object({ name: z.string(), email: z.string() }).optional()),
  },
});

const dir = mkdtempSync(join(tmpdir(), 'cairn-redact-list-'));
const db = join(dir, 'r.db');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

beforeAll(async () => {
  const engine = sqlite(db);
  try {
    const app = graph(State)
      .node('call', (s) => {
        throw new Error(`cannot reach ${s.customer!.email} with ${s.apiKey}`);
      }, { retry: { maxAttempts: 1 } })
      .edge(START, 'call')
      .edge('call', END)
      .compile({ engine, redact: { paths: ['customer.email'] } });
    await expect(app.run({ thread: 'cust-1', input: { apiKey: KEY, customer: { name: 'Ana', email: EMAIL } } })).rejects.toThrow();
    const thread = await app.getThread({ thread: 'cust-1' });
    expect(thread!.status).toBe('failed');
    // Stored as thrown: the faces hide it, storage keeps it.
    expect(thread!.lastError!.message).toContain(EMAIL);
  } finally {
    await engine.close();
  }
});

function expectHidden(face: string, text: string) {
  expect(text, face).not.toContain(EMAIL);
  expect(text, face).not.toContain(KEY);
}

describe('thread listings hide what a failed thread\'s error quotes of its redacted state', () => {
  it('cairn threads (--json and human), cancel --json; --raw shows it', { timeout: 60_000 }, async () => {
    const [json, human, cancel, raw] = await Promise.all([
      cairn(['threads', '--db', db, '--json']),
      cairn(['threads', '--db', db]),
      cairn(['cancel', 'cust-1', '--db', db, '--json']),
      cairn(['threads', '--db', db, '--json', '--raw']),
    ]);
    expect(json.code, json.stderr).toBe(0);
    const [listed] = JSON.parse(json.stdout) as { lastError: { message: string } }[];
    expect(listed!.lastError.message).toContain('cannot reach [redacted] with [redacted]');
    expectHidden('threads --json', json.stdout + json.stderr);
    expect(human.code, human.stderr).toBe(0);
    expectHidden('threads', human.stdout + human.stderr);
    // The thread had already failed: cancel answers with its error (exit 1, nothing cancelled).
    expect(cancel.code, cancel.stderr).toBe(1);
    expect(JSON.parse(cancel.stdout).error.message).toContain('cannot reach [redacted] with [redacted]');
    expectHidden('cancel --json', cancel.stdout + cancel.stderr);
    expect(raw.stdout).toContain(EMAIL);
    expect(raw.stdout).toContain(KEY);
  });

  it('the inspector: GET /api/threads and the cancel action', async () => {
    const engine = sqlite(db);
    const inspector = await startInspector({ engine, allowActions: true });
    try {
      const base = inspector.url.slice(0, inspector.url.indexOf('/?token='));
      const list = await fetch(`${base}/api/threads?token=${inspector.token}`);
      expect(list.status).toBe(200);
      const page = (await list.json()) as { threads: { lastError: { message: string } }[] };
      expect(page.threads[0]!.lastError.message).toContain('cannot reach [redacted] with [redacted]');
      expectHidden('/api/threads', JSON.stringify(page));
      const cancel = await fetch(`${base}/api/threads/cust-1/cancel?token=${inspector.token}`, { method: 'POST', headers: { 'content-type': 'application/json', [TOKEN_HEADER]: inspector.token }, body: '{}' });
      const text = await cancel.text();
      expect(cancel.status, text).toBe(200);
      expect(JSON.parse(text).cancelled).toBe(false);
      expectHidden('POST cancel', text);
    } finally {
      await inspector.close();
      await engine.close();
    }
  });
});
