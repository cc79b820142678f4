/**
 * `cairn inspect` as a command: on a mistyped SQLite path it creates nothing, says
 * so and exits 1 before listening; bound to an address other than this machine's it
 * warns that the token is all that guards it; it opens the database read-only (a
 * write through its server is refused); SIGINT closes it with exit code 0. With
 * --allow-actions it says so and acts (a cancellation lands in the database); --app
 * and --actor without it are bad usage; and a read-only one refuses every action 403.
 */
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fsArtifacts } from '../../src/artifacts/fs/index.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { workedExample } from '../../src/testing/worked-example.js';
import { cairn } from './run-cli.js';
import { startInspectorCli } from '../inspector/browser.js';

let dir: string;
let db: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-cli-inspect-'));
  db = join(dir, 'cairn.db');
  const engine = sqlite(db);
  await workedExample({ engine, artifacts: fsArtifacts(join(dir, 'artifacts')) }).run({ thread: 'cust_42', input: { customerId: 'cust_42' } });
  await engine.close();
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('cairn inspect', () => {
  it('refuses a database that is not there: exit 1, a message, and no file created', async () => {
    const missing = join(dir, 'typo.db');
    const result = await cairn(['inspect', '--db', missing]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/typo\.db/);
    expect(result.stdout).not.toContain('http://');
    expect(existsSync(missing)).toBe(false);
  });

  it('warns when bound to an address other than this machine, and serves with its token only', async () => {
    const inspector = await startInspectorCli(db, ['--host', '0.0.0.0']);
    try {
      expect(inspector.url).toMatch(/^http:\/\/0\.0\.0\.0:\d+\/\?token=[0-9a-f]{64}$/);
      const local = inspector.base.replace('0.0.0.0', '127.0.0.1');
      expect((await fetch(`${local}/api/threads`)).status).toBe(401);
      expect((await fetch(`${local}/api/threads?token=${inspector.token}`)).status).toBe(200);
      // Read-only: a write is refused.
      expect((await fetch(`${local}/api/threads/cust_42?token=${inspector.token}`, { method: 'DELETE' })).status).toBe(405);
    } finally {
      const code = await inspector.stop('SIGINT');
      expect(code).toBe(0);
    }
    expect(inspector.stderr()).toMatch(/warning: cairn inspect listens on 0\.0\.0\.0/);
  });

  it('--json prints its URL line as one JSON object, and its failure as a JSON error', async () => {
    const inspector = await startInspectorCli(db, ['--json']);
    try {
      const line = JSON.parse(inspector.stdout().trim()) as Record<string, unknown>;
      expect(line).toEqual({ url: inspector.url, readOnly: true, actor: null, engine: 'sqlite' });
      expect((await fetch(`${inspector.base}/api/threads?token=${inspector.token}`)).status).toBe(200);
    } finally {
      expect(await inspector.stop('SIGINT')).toBe(0);
    }
    const missing = await cairn(['inspect', '--db', join(dir, 'typo.db'), '--json']);
    expect(missing.code).toBe(1);
    expect((JSON.parse(missing.stderr) as { error: { code: string } }).error.code).toBe('ERR_DATABASE_NOT_FOUND');
  });

  it('is read-only by default: an action is 403 and says how to allow it; its line says read-only', async () => {
    const inspector = await startInspectorCli(db);
    try {
      const response = await fetch(`${inspector.base}/api/threads/cust_42/cancel?token=${inspector.token}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-cairn-token': inspector.token },
        body: '{}',
      });
      expect(response.status).toBe(403);
      expect(((await response.json()) as { error: { code: string; message: string } }).error).toMatchObject({ code: 'ERR_ACTIONS_DISABLED', message: expect.stringContaining('--allow-actions') });
    } finally {
      await inspector.stop();
    }
  });

  it('with --allow-actions opens the database for writing and acts as --actor; --app or --actor without it is bad usage', async () => {
    const engine = sqlite(db);
    await workedExample({ engine, artifacts: fsArtifacts(join(dir, 'artifacts')) }).submit({ thread: 'queued', input: { customerId: 'queued' } });
    await engine.close();
    const inspector = await startInspectorCli(db, ['--allow-actions', '--actor', 'ops']);
    try {
      const response = await fetch(`${inspector.base}/api/threads/queued/cancel?token=${inspector.token}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-cairn-token': inspector.token },
        body: JSON.stringify({ reason: 'not needed' }),
      });
      expect(response.status).toBe(200);
    } finally {
      await inspector.stop();
    }
    const check = sqlite(db, { readOnly: true });
    try {
      expect((await check.checkpointer.getThread('queued'))!.lastError!.message).toContain('cancelled by ops: not needed');
    } finally {
      await check.close();
    }
    for (const args of [['--app', './app.js'], ['--actor', 'ops']]) {
      const result = await cairn(['inspect', '--db', db, ...args]);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stderr).toContain('--allow-actions');
    }
  });

  it('an --eval-report that is not JSON: exit 2, says so, and advises nothing about the database', async () => {
    const file = join(dir, 'cut.json');
    writeFileSync(file, '{"threads": [');
    const refused = await cairn(['inspect', '--db', db, '--eval-report', file]);
    expect(refused.code).toBe(2);
    expect(refused.stderr.trim()).toMatch(new RegExp(`^\\[cairn\\] ${file.replace(/[.]/g, '\\.')}: not a report of cairn eval --json: it is not JSON \\(.+\\)\\.$`));
    expect(refused.stderr).not.toContain('cairn verify');
  });

  it('listens on the port asked for', async () => {
    const probe = await startInspectorCli(db);
    const port = Number(new URL(probe.url).port);
    await probe.stop();
    const inspector = await startInspectorCli(db, ['--port', String(port)]);
    try {
      expect(new URL(inspector.url).port).toBe(String(port));
      expect(inspector.stderr()).toBe('');
    } finally {
      await inspector.stop();
    }
  });

  it('on a port in use, or a host that is not this machine: exit 1, one line naming it, no stack trace', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const port = (taken.address() as AddressInfo).port;
    try {
      const busy = await cairn(['inspect', '--db', db, '--port', String(port)]);
      expect(busy.code).toBe(1);
      expect(busy.stdout).toBe('');
      expect(busy.stderr.trim()).toBe(`[cairn] cairn inspect: 127.0.0.1:${port} is in use: pick another --port, or --port 0 for a free one (EADDRINUSE).`);
      const json = await cairn(['inspect', '--db', db, '--port', String(port), '--json']);
      expect(json.code).toBe(1);
      expect(JSON.parse(json.stderr)).toMatchObject({ error: { message: busy.stderr.trim() } });
    } finally {
      await new Promise((resolve) => taken.close(resolve));
    }
    // TEST-NET-1 (RFC 5737): an address no machine here has.
    const elsewhere = await cairn(['inspect', '--db', db, '--host', '192.0.2.1']);
    expect(elsewhere.code).toBe(1);
    expect(elsewhere.stderr.trim()).toMatch(/^\[cairn\] cairn inspect: 192\.0\.2\.1 is not an address of this machine: .* \(EADDRNOTAVAIL\)\.$/);
  });
});
