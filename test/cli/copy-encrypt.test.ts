/**
 * `cairn copy --to-keys <file>`: the way to encrypt a database written in the clear.
 * The copy reads the source as it is (plaintext rows, sealed ones with `--keys`) and
 * writes a target sealed with the new key file: threads with their whole history,
 * store rows (`--store`) and artifacts (`--artifacts`/`--to-artifacts`, sealed for the
 * target). Afterwards no byte of the target's database or artifact directory holds the
 * planted text, the target verifies and reads back with its keys, and it is refused
 * without them. A sealed source moves to new keys the same way.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fsArtifacts } from '../../src/artifacts/fs/index.js';
import { encrypted, keyFile } from '../../src/crypto/index.js';
import { textOfStored } from '../../src/crypto/sealed-bytes.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { workedExample } from '../../src/testing/worked-example.js';
import { cairn } from './run-cli.js';

/** Text of the worked example's state and of its artifact (the summary starts with it). */
const CANARY = 'Customer 42';
const STORE_CANARY = 'favourite-colour-canary';

let dir: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-cli-copy-enc-'));
  mkdirSync(join(dir, 'plain-artifacts'));
  const engine = sqlite(join(dir, 'plain.db'));
  await workedExample({ engine, artifacts: fsArtifacts(join(dir, 'plain-artifacts')) }).run({ thread: 'cust_42' });
  await engine.store.put(['prefs', 'cust_42'], 'colour', { value: STORE_CANARY });
  await engine.close();
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Every file under `path` (a file or a directory), read whole. */
function bytesUnder(path: string): Buffer[] {
  if (statSync(path).isFile()) return [readFileSync(path)];
  return readdirSync(path).flatMap((name) => bytesUnder(join(path, name)));
}

function holds(paths: string[], text: string): boolean {
  const needle = Buffer.from(text);
  return paths.flatMap((p) => bytesUnder(p)).some((bytes) => bytes.includes(needle));
}

/** The database file and whatever WAL is beside it. */
function dbFiles(db: string): string[] {
  return readdirSync(dir).filter((name) => name.startsWith(basename(db))).map((name) => join(dir, name));
}

describe('cairn copy --to-keys', () => {
  it('seals a database written in the clear: no planted text in the target or its artifacts, which verify and read back with the keys only', async () => {
    const plain = join(dir, 'plain.db');
    const sealed = join(dir, 'sealed.db');
    const keys = join(dir, 'sealed.keys.json');
    expect(holds(dbFiles(plain), CANARY)).toBe(true);
    expect(holds([join(dir, 'plain-artifacts')], CANARY)).toBe(true);

    const copied = await cairn(['copy', '--all', '--db', plain, '--to', sealed, '--to-keys', keys, '--store', '/', '--artifacts', join(dir, 'plain-artifacts'), '--to-artifacts', join(dir, 'sealed-artifacts'), '--json']);
    expect(copied.stderr).toBe('');
    expect(copied.code).toBe(0);
    const report = JSON.parse(copied.stdout) as { threads: string[]; verify: { thread: string; source: boolean; target: boolean }[] };
    expect(report.threads).toEqual(['cust_42']);
    expect(report.verify).toEqual([expect.objectContaining({ thread: 'cust_42', source: true, target: true })]);

    // Every byte the target wrote: the database (checkpointed) and the artifact directory.
    const handle = new Database(sealed);
    handle.pragma('wal_checkpoint(TRUNCATE)');
    const bodies = handle.prepare('SELECT body FROM cairn_positions').pluck().all() as (string | Buffer)[];
    handle.close();
    expect(bodies.length).toBeGreaterThan(0);
    // Sealed, and kept as the envelope's bytes (crypto/sealed-bytes).
    expect(bodies.every((body) => Buffer.isBuffer(body) && textOfStored(body).startsWith('~c1:'))).toBe(true);
    expect(holds(dbFiles(sealed), CANARY)).toBe(false);
    expect(holds(dbFiles(sealed), STORE_CANARY)).toBe(false);
    expect(holds([join(dir, 'sealed-artifacts')], CANARY)).toBe(false);

    // With the keys: the same thread, the store row and the artifact, opened.
    const shown = await cairn(['show', 'cust_42', '--db', sealed, '--keys', keys, '--json']);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(CANARY);
    const engine = encrypted(sqlite(sealed), { keys: keyFile(keys) });
    try {
      expect((await engine.store.get(['prefs', 'cust_42'], 'colour'))?.value).toEqual({ value: STORE_CANARY });
    } finally {
      await engine.close();
    }
    const verified = await cairn(['verify', 'cust_42', '--db', sealed, '--keys', keys, '--artifacts', join(dir, 'sealed-artifacts')]);
    expect(verified.code).toBe(0);
    // Without them: refused at once.
    const refused = await cairn(['show', 'cust_42', '--db', sealed]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/is encrypted/);
  });

  it('moves a sealed database to new keys: --keys opens the source, --to-keys seals the target', async () => {
    const sealed = join(dir, 'sealed.db');
    const moved = join(dir, 'moved.db');
    const oldKeys = join(dir, 'sealed.keys.json');
    const newKeys = join(dir, 'moved.keys.json');
    const copied = await cairn(['copy', '--all', '--db', sealed, '--keys', oldKeys, '--to', moved, '--to-keys', newKeys, '--store', '/']);
    expect(copied.code).toBe(0);
    expect(copied.stdout).toMatch(/ok +cust_42: verify source ok, target ok/);
    expect(holds(dbFiles(moved), CANARY)).toBe(false);
    const shown = await cairn(['show', 'cust_42', '--db', moved, '--keys', newKeys, '--json']);
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain(CANARY);
    // The old key file holds none of the new database's key-encryption keys.
    const withOld = await cairn(['show', 'cust_42', '--db', moved, '--keys', oldKeys]);
    expect(withOld.code).toBe(1);
  });
});
