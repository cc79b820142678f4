/**
 * The CLI on an encrypted SQLite database: without keys every command is refused at
 * once with KeysRequiredError (exit 1, one clear line, no CorruptRecordError noise);
 * with `--keys <key file>` (or CAIRN_KEY_FILE) it reads and verifies as usual; `keys
 * rotate` rotates each scope's KEK and re-wraps its data keys without touching a data row.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { memoryArtifacts } from '../../src/artifacts/memory/index.js';
import { encrypted, keyFile } from '../../src/crypto/index.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { workedExample } from '../../src/testing/worked-example.js';
import { cairn } from './run-cli.js';

let dir: string;
let db: string;
let keys: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-cli-enc-'));
  db = join(dir, 'cairn.db');
  keys = join(dir, 'keys.json');
  const engine = encrypted(sqlite(db), { keys: keyFile(keys) });
  await workedExample({ engine, artifacts: memoryArtifacts() }).run({ thread: 'cust_42' });
  await engine.close();
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the CLI on an encrypted database', () => {
  it('without keys, a command is KeysRequiredError naming the flag; with --keys or CAIRN_KEY_FILE it reads and verifies', async () => {
    const refused = await cairn(['show', 'cust_42', '--db', db]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/is encrypted \(it holds data keys\): pass --keys <key file>/);
    expect(refused.stderr).not.toMatch(/CorruptRecord|ERR_DECRYPTION/);
    const shown = await cairn(['show', 'cust_42', '--db', db, '--json', '--keys', keys]);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain('Customer 42');
    const verified = await cairn(['verify', 'cust_42', '--db', db], { env: { CAIRN_KEY_FILE: keys } });
    expect(verified.code).toBe(0);
  });

  it('with keys, a database written in the clear is refused at once, saying it is not encrypted and how to seal a copy', async () => {
    const plain = join(dir, 'plain.db');
    const engine = sqlite(plain);
    await workedExample({ engine, artifacts: memoryArtifacts() }).run({ thread: 'cust_42' });
    await engine.close();
    for (const run of [await cairn(['show', 'cust_42', '--db', plain, '--keys', keys, '--json']), await cairn(['threads', '--db', plain, '--json'], { env: { CAIRN_KEY_FILE: keys } })]) {
      expect(run.code).toBe(1);
      expect(run.stdout).toBe('');
      const { error } = JSON.parse(run.stderr) as { error: { code: string; message: string } };
      expect(error.code).toBe('ERR_PLAINTEXT_ROW');
      expect(error.message).toBe(
        `[cairn] ${plain} is not encrypted (it holds threads and no data keys), and with keys (--keys, CAIRN_KEY_FILE or CAIRN_MASTER_KEY) every row must be sealed: drop the keys to read it, or seal a copy of it with \`cairn copy --all --db ${plain} --to <new database> --to-keys <key file>\`.`,
      );
    }
    expect((await cairn(['show', 'cust_42', '--db', plain])).code).toBe(0);
  });

  it('keys rotate re-wraps every scope\'s data keys under a new KEK; no data row changes and the thread still verifies', async () => {
    const rows = () => {
      const handle = new Database(db, { readonly: true });
      try {
        return JSON.stringify(handle.prepare('SELECT body FROM cairn_positions ORDER BY seq').all());
      } finally {
        handle.close();
      }
    };
    const before = rows();
    const rotated = await cairn(['keys', 'rotate', '--db', db, '--keys', keys, '--json']);
    expect(rotated.code).toBe(0);
    const report = JSON.parse(rotated.stdout) as { rotated: { scope: string; rewrapped: number }[] };
    expect(report.rotated.map((r) => r.scope)).toEqual(['store', 'thread:cust_42']);
    expect(report.rotated.every((r) => r.rewrapped === 1)).toBe(true);
    expect(rows()).toBe(before);
    expect((await cairn(['verify', 'cust_42', '--db', db, '--keys', keys])).code).toBe(0);
    expect((await cairn(['keys', 'rotate', '--db', db])).code).toBe(1);
  });

  it('keys rotate --scope of a scope without data keys (a typo) rotates nothing and exits 1, naming the scopes that have keys', async () => {
    const keyFileText = () => readFileSync(keys, 'utf8');
    const before = keyFileText();
    const typo = await cairn(['keys', 'rotate', '--db', db, '--keys', keys, '--scope', 'thread:cust_24']);
    expect(typo.code).toBe(1);
    expect(typo.stderr).toMatch(/no scope "thread:cust_24" has data keys.*nothing rotated.*store, thread:cust_42/);
    // No KEK was made for the mistyped scope.
    expect(keyFileText()).toBe(before);
    const right = await cairn(['keys', 'rotate', '--db', db, '--keys', keys, '--scope', 'thread:cust_42', '--json']);
    expect(right.code).toBe(0);
    expect((JSON.parse(right.stdout) as { rotated: { scope: string; rewrapped: number }[] }).rotated).toMatchObject([{ scope: 'thread:cust_42', rewrapped: 1 }]);
  });
});
