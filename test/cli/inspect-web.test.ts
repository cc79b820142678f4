/**
 * `cairn inspect` as a command: on a mistyped SQLite path it creates nothing, says
 * so and exits 1 before listening; bound to an address other than this machine's it
 * warns that the token is all that guards it; it opens the database read-only (a
 * write through its server is refused); SIGINT closes it with exit code 0.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
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
});
