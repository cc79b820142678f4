/**
 * `cairn signal <thread> <name> [--payload <json>]` on SQLite: the signal is queued
 * (its payload in the tagged codec, as a wait decodes it), a waiting thread is made
 * due, and the output says so; a missing thread or database exits 1, a payload that is
 * not JSON, one that encodes over the size limit, or an empty name exits 2, queueing nothing.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decode } from '../../src/codec/tagged-json.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { cairn } from './run-cli.js';

let dir: string;
let db: string;

const owner = { runId: 'seed', pid: 4242, host: 'seed.invalid' };
const position = { ns: '', seq: 0, parent: null, segment: 0, step: 0, schemaVersion: 1, createdAt: 1_700_000_000_000, body: '{"kind":"input"}', hash: '0'.repeat(63) + '1' };

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-cli-signal-'));
  db = join(dir, 'cairn.db');
  const engine = sqlite(db);
  const cp = engine.checkpointer;
  for (const [id, status] of [['waiting-1', 'waiting'], ['running-1', 'running']] as const) {
    const lease = await cp.acquireThread(id, { owner, leaseMs: 60_000, create: { kind: 'task', tenant: null, metadata: {} } });
    await cp.commitStep(lease, { position, items: [], status, expectedHead: null, wakeAt: null });
    await cp.releaseThread(lease);
  }
  await engine.close();
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The thread's signals and record, read after the CLI exited. */
async function stored(threadId: string) {
  const engine = sqlite(db, { readOnly: true });
  try {
    return { thread: await engine.checkpointer.getThread(threadId), signals: await engine.checkpointer.listSignals(threadId) };
  } finally {
    await engine.close();
  }
}

describe('cairn signal', () => {
  it('queues a signal for a waiting thread and wakes it: exit 0, says so; the payload is codec text', async () => {
    const before = Date.now();
    const run = await cairn(['signal', 'waiting-1', 'approved', '--payload', '{"by":"ana","n":2}', '--db', db]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toBe('signal 1 "approved" queued for thread waiting-1 (thread is waiting: woken)\n');
    const { thread, signals } = await stored('waiting-1');
    expect(signals).toHaveLength(1);
    expect(signals[0]).toMatchObject({ threadId: 'waiting-1', id: 1, name: 'approved', consumedBy: null });
    expect(decode(signals[0]!.payload)).toEqual({ by: 'ana', n: 2 });
    expect(thread!.status).toBe('waiting');
    expect(thread!.wakeAt).toBeGreaterThanOrEqual(before - 1_000);
    expect(thread!.wakeAt).toBeLessThanOrEqual(Date.now());
  });

  it('a thread that is not waiting gets the signal queued and its wake time untouched; --json prints the stored signal', async () => {
    const run = await cairn(['signal', 'running-1', 'note', '--db', db, '--json']);
    expect(run.code, run.stderr).toBe(0);
    const printed = JSON.parse(run.stdout) as Record<string, unknown>;
    expect(printed).toMatchObject({ threadId: 'running-1', id: 1, name: 'note', payload: null, consumedBy: null, consumedAt: null, threadStatus: 'running' });
    expect((await cairn(['signal', 'running-1', 'note', '--payload', '"again"', '--db', db])).stdout).toBe('signal 2 "note" queued for thread running-1 (thread is running)\n');
    const { thread, signals } = await stored('running-1');
    expect(signals.map((s) => [s.id, decode(s.payload)])).toEqual([[1, null], [2, 'again']]);
    expect(thread).toMatchObject({ status: 'running', wakeAt: null });
  });

  it('a missing thread: exit 1, says so, nothing queued', async () => {
    const run = await cairn(['signal', 'nope', 'approved', '--db', db]);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain('[cairn] [sqlite] thread nope: no such thread.');
    expect((await stored('nope')).signals).toEqual([]);
  });

  it('a missing database: exit 1, nothing created', async () => {
    const missing = join(dir, 'missing.db');
    const run = await cairn(['signal', 'waiting-1', 'approved', '--db', missing]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/no such file/);
  });

  it('a payload that is not JSON, or an empty name: exit 2, nothing queued', async () => {
    const before = (await stored('running-1')).signals.length;
    const bad = await cairn(['signal', 'running-1', 'note', '--payload', '{oops', '--db', db]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/--payload "\{oops" is not JSON/);
    const empty = await cairn(['signal', 'running-1', '', '--db', db]);
    expect(empty.code).toBe(2);
    expect(empty.stderr).toMatch(/signal name must be a non-empty string/);
    expect((await stored('running-1')).signals).toHaveLength(before);
  });

  it('a payload whose codec text is over the size limit: exit 2, says so, nothing queued', async () => {
    const before = await stored('waiting-1');
    // Objects with a "$t" key are escaped by the codec, three times their JSON: an argument
    // short enough for the command line that encodes past the limit.
    const payload = JSON.stringify(Array.from({ length: 12_000 }, () => ({ $t: 1 })));
    expect(payload.length).toBeLessThan(128 * 1024);
    const run = await cairn(['signal', 'waiting-1', 'approved', '--payload', payload, '--db', db]);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(/the payload is \d+ bytes, over the 262144-byte limit/);
    expect(await stored('waiting-1')).toEqual(before);
  });

  it('--payload-file reads the payload from a file or stdin, past what one argument can hold; a bad file exits 2', async () => {
    // 200 KB of JSON: over Linux's 128 KiB limit for one argument, under the payload limit.
    const big = { notes: 'n'.repeat(200_000) };
    const file = join(dir, 'payload.json');
    writeFileSync(file, JSON.stringify(big));
    const fromFile = await cairn(['signal', 'running-1', 'big', '--payload-file', file, '--db', db]);
    expect(fromFile.code, fromFile.stderr).toBe(0);
    const fromStdin = await cairn(['signal', 'running-1', 'piped', '--payload-file', '-', '--db', db], { input: '{"by":"ana"}' });
    expect(fromStdin.code, fromStdin.stderr).toBe(0);
    const { signals } = await stored('running-1');
    expect(decode(signals.find((s) => s.name === 'big')!.payload)).toEqual(big);
    expect(decode(signals.find((s) => s.name === 'piped')!.payload)).toEqual({ by: 'ana' });

    const before = await stored('running-1');
    writeFileSync(join(dir, 'bad.json'), '{not json');
    for (const args of [['--payload-file', join(dir, 'bad.json')], ['--payload-file', join(dir, 'missing.json')], ['--payload', '1', '--payload-file', file]]) {
      const run = await cairn(['signal', 'running-1', 'bad', ...args, '--db', db]);
      expect(run.code, args.join(' ')).toBe(2);
    }
    expect(await stored('running-1')).toEqual(before);
  });
});
