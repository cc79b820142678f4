/**
 * What is handed to an engine, a key provider or a LangGraph source and cannot work is
 * refused with a typed cairn error in one sentence, not the driver's own failure: a
 * PostgreSQL URL that does not parse, a key file that is not JSON or not there, a
 * LangGraph source that is not a SQLite database.
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { keyFile } from '../../src/crypto/key-provider.js';
import { encrypted, encryptedArtifacts } from '../../src/crypto/index.js';
import { fsArtifacts } from '../../src/artifacts/fs/index.js';
import { s3Artifacts } from '../../src/artifacts/s3/index.js';
import { memory, memoryArtifacts } from '../../src/engines/memory/index.js';
import { startInspector } from '../../src/inspector/index.js';
import { postgres } from '../../src/engines/postgres/index.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { InvalidOptionError, KeyUnavailableError, LangGraphSourceNotFoundError } from '../../src/errors.js';
import { openLangGraphSource } from '../../src/langgraph/index.js';
import { tempDir } from '../helpers/temp-dirs.js';

const dir = tempDir('cairn-open-errors-');

describe('refused with a typed error', () => {
  it('postgres(url) with a URL that does not parse: InvalidOptionError at once', async () => {
    for (const url of ['not a url', 'localhost:5432/test', 'mysql://u@h/db']) {
      expect(() => postgres(url), url).toThrow(InvalidOptionError);
      expect(() => postgres(url)).toThrow(/does not parse as a PostgreSQL URL: write postgres:\/\/user:password@host:port\/database/);
    }
    for (const url of ['postgres://u@127.0.0.1:1/db', 'postgresql://u:secret@127.0.0.1:1/db']) await postgres(url).close();
  });

  it('postgres(source) with something that is neither a URL nor a pool (pg\'s own { connectionString }): InvalidOptionError at once', () => {
    expect(() => postgres({ connectionString: 'postgres://u@127.0.0.1:1/db' } as never)).toThrow(/pass a postgres:\/\/ URL or a pg.Pool \(query, connect\), got an object that is not a pool: pass the connectionString itself/);
    for (const source of [null, undefined, 5, [], { query: () => undefined }]) expect(() => postgres(source as never), String(source)).toThrow(InvalidOptionError);
    // A wrapper of a pool with query and connect is one: a pool passed in is its owner's to end.
    expect(() => postgres({ query: async () => ({ rows: [] }), connect: async () => ({}) } as never)).not.toThrow();
  });

  it('sqlite(file, options) and postgres(url, options) refuse an option they do not take, or of the wrong kind, at once, and create nothing', async () => {
    const file = join(dir, 'never.db');
    const sqliteCases: unknown[] = [{ durabilty: 'normal' }, { durability: 'fast' }, { readonly: true }, { readOnly: 'yes' }, { busyTimeoutMs: -1 }, { mmapBytes: 1.5 }, null];
    for (const options of sqliteCases) expect(() => sqlite(file, options as never), JSON.stringify(options)).toThrow(InvalidOptionError);
    expect(existsSync(file)).toBe(false);
    const url = 'postgres://postgres@127.0.0.1:5432/test';
    const postgresCases: unknown[] = [{ tennant: 'acme' }, { readonly: true }, { max: 0 }, { applicationName: 5 }, { readOnly: 1 }];
    for (const options of postgresCases) expect(() => postgres(url, options as never), JSON.stringify(options)).toThrow(InvalidOptionError);
    expect(() => sqlite(file, { durabilty: 'normal' } as never)).toThrow(/sqlite: unknown option "durabilty" \(options: durability, /);
    await sqlite(join(dir, 'fine.db'), { durability: 'normal', busyTimeoutMs: 100, mmapBytes: 0, readOnly: false }).close();
  });

  it('encrypted(), the artifact stores and startInspector refuse an option they do not take, at once', async () => {
    const keys = keyFile(join(dir, 'keys.json'));
    const engine = memory();
    const cases: [string, () => unknown][] = [
      ['encrypted', () => encrypted(engine, { keys, requir: false } as never)],
      ['encrypted require', () => encrypted(engine, { keys, require: 'yes' } as never)],
      ['fsArtifacts', () => fsArtifacts(join(dir, 'artifacts'), { fsynk: false } as never)],
      ['s3Artifacts', () => s3Artifacts({ bucket: 'cairn-test', prefx: 'a/' } as never)],
      ['encryptedArtifacts', () => encryptedArtifacts(memoryArtifacts(), { engine: encrypted(memory(), { keys }), requried: true } as never)],
    ];
    for (const [label, make] of cases) expect(make, label).toThrow(InvalidOptionError);
    await expect(startInspector({ engine, prot: 0 } as never)).rejects.toThrow(/startInspector: unknown option "prot"/);
    expect(existsSync(join(dir, 'artifacts'))).toBe(false);
  });

  it('a key file that is not JSON is not a key file (InvalidOptionError); one that is not there says so', async () => {
    const notJson = join(dir, 'main.ts');
    writeFileSync(notJson, 'export const x = 1;\n');
    await expect(keyFile(notJson).unwrapKey('thread:t', { kekId: 'kek-1', wrapped: 'x' })).rejects.toThrow(InvalidOptionError);
    await expect(keyFile(notJson).unwrapKey('thread:t', { kekId: 'kek-1', wrapped: 'x' })).rejects.toThrow(`${notJson} is not a cairn key file: it is not JSON.`);
    const nullJson = join(dir, 'null.json');
    writeFileSync(nullJson, 'null');
    await expect(keyFile(nullJson).unwrapKey('thread:t', { kekId: 'kek-1', wrapped: 'x' })).rejects.toThrow(`${nullJson} is not a cairn key file.`);
    const missing = join(dir, 'nope.json');
    const error = await keyFile(missing).unwrapKey('thread:t', { kekId: 'kek-1', wrapped: 'x' }).catch((e: unknown) => e);
    expect(KeyUnavailableError.is(error)).toBe(true);
    expect((error as Error).message).toContain(`there is no key file at ${missing} (no such file)`);
  });

  it('a LangGraph source that is not a SQLite database: LangGraphSourceNotFoundError', async () => {
    const text = join(dir, 'app.ts');
    writeFileSync(text, 'export const app = 1;\n'.repeat(100));
    await expect(openLangGraphSource(text)).rejects.toThrow(LangGraphSourceNotFoundError);
    await expect(openLangGraphSource(text)).rejects.toThrow(/the file is not a SQLite database \(file is not a database\)/);
    await expect(openLangGraphSource(dir)).rejects.toThrow(LangGraphSourceNotFoundError);
  });
});
