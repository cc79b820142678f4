/**
 * `cairn export`, `import` and `copy` at their edges, as a careful user meets them: a
 * truncated or empty export file is refused (exit 1, one line, nothing imported), a
 * copy into a target that holds one of the threads copies none of them, and an import
 * or copy refused for its flags or its input creates no target database.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { memoryArtifacts } from '../../src/engines/memory/index.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { workedExample } from '../../src/testing/worked-example.js';
import { cairn } from './run-cli.js';
import { useWorkedExampleDb } from './worked-db.js';

let dir: string;
let db: string;
useWorkedExampleDb('cairn-cli-transfer-edges-', (files) => ({ dir, db } = files));

/** The ids `cairn threads` lists in `database`. */
async function threadsIn(database: string): Promise<string[]> {
  const run = await cairn(['threads', '--db', database, '--json']);
  expect(run.code, run.stderr).toBe(0);
  return (JSON.parse(run.stdout) as { id: string }[]).map((t) => t.id);
}

describe('cairn import of a file that is not a whole export', () => {
  it('refuses a truncated export (cut inside the thread, or before its end line) and imports nothing of it', async () => {
    const file = join(dir, 'whole.jsonl');
    expect((await cairn(['export', 'cust_42', '--db', db, '--raw', '--out', file])).code).toBe(0);
    const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
    for (const keep of [3, 5, lines.length - 1]) {
      const cut = join(dir, `cut-${keep}.jsonl`);
      writeFileSync(cut, lines.slice(0, keep).join('\n') + '\n');
      const target = join(dir, `cut-${keep}.db`);
      const run = await cairn(['import', '--db', target, '--in', cut]);
      expect(run.code, `${keep} lines: ${run.stdout}`).toBe(1);
      expect(run.stdout).toBe('');
      expect(run.stderr).toMatch(/truncated/);
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
      expect(await threadsIn(target)).toEqual([]);
    }
  });

  it('refuses an empty file, and a file holding only the header', async () => {
    const empty = join(dir, 'empty.jsonl');
    writeFileSync(empty, '');
    const run = await cairn(['import', '--db', join(dir, 'empty.db'), '--in', empty]);
    expect(run.code).toBe(1);
    expect(run.stderr.trim()).toBe('[cairn] not a cairn export: the stream is empty (no header record). Nothing was imported.');
    const header = join(dir, 'header.jsonl');
    writeFileSync(header, readFileSync(join(dir, 'whole.jsonl'), 'utf8').split('\n')[0] + '\n');
    const only = await cairn(['import', '--db', join(dir, 'header.db'), '--in', header]);
    expect(only.code).toBe(1);
    expect(only.stderr).toMatch(/ends before its end record, after 0 threads and 0 positions: it is truncated/);
  });

  it('refuses a file that is not JSON (not an export) naming its line, as ERR_INVALID_EXPORT, and creates no database', async () => {
    const notes = join(dir, 'notes.txt');
    writeFileSync(notes, 'meeting notes\n');
    const target = join(dir, 'notes.db');
    const run = await cairn(['import', '--db', target, '--in', notes, '--json']);
    expect(run.code).toBe(1);
    const { error } = JSON.parse(run.stderr) as { error: { code: string; message: string } };
    expect(error.code).toBe('ERR_INVALID_EXPORT');
    expect(error.message).toMatch(/notes\.txt line 1 is not JSON \(.+\): it is not a cairn export, or a damaged one\. Nothing of it was imported\.$/);
    expect(error.message).not.toContain('cairn verify');
    expect(existsSync(target)).toBe(false);
    // A line past the end that is not JSON: the export before it is taken back whole.
    const trailing = join(dir, 'trailing.jsonl');
    writeFileSync(trailing, readFileSync(join(dir, 'whole.jsonl'), 'utf8') + 'garbage\n');
    const after = await cairn(['import', '--db', join(dir, 'trailing.db'), '--in', trailing]);
    expect(after.code).toBe(1);
    expect(after.stderr).toMatch(/trailing\.jsonl line \d+ is not JSON/);
    expect(await threadsIn(join(dir, 'trailing.db'))).toEqual([]);
  });
});

describe('cairn copy into a target that holds some of the threads', () => {
  it('copies none of them, names every clash, and a rerun after removing them copies all', async () => {
    const source = join(dir, 'three.db');
    const engine = sqlite(source);
    const app = workedExample({ engine, artifacts: memoryArtifacts() });
    for (const [n, id] of ['a', 'b', 'c'].entries()) await app.run({ thread: id, input: { customerId: `cust_${n + 1}` } });
    await engine.close();
    const target = join(dir, 'holds-b-c.db');
    for (const id of ['b', 'c']) expect((await cairn(['copy', id, '--db', source, '--to', target])).code).toBe(0);

    const run = await cairn(['copy', '--all', '--db', source, '--to', target]);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr.trim()).toBe('[cairn] threads b, c already exist in the sqlite engine: import refuses to merge histories. Nothing was imported. Delete them there, or import the others.');
    expect(await threadsIn(target)).toEqual(['b', 'c']);

    for (const id of ['b', 'c']) expect((await cairn(['delete-thread', id, '--db', target])).code).toBe(0);
    const again = await cairn(['copy', '--all', '--db', source, '--to', target]);
    expect(again.code, again.stderr).toBe(0);
    expect(again.stdout).toMatch(/^copied 3 threads/);
    expect(await threadsIn(target)).toEqual(['a', 'b', 'c']);
  });
});

describe('one line, not a stack trace', () => {
  const oneLine = (run: { stderr: string }) => {
    expect(run.stderr.trim().split('\n'), run.stderr).toHaveLength(1);
    expect(run.stderr).not.toMatch(/\n\s+at /);
  };

  it('export --out into a folder that does not exist, or onto a folder: exit 2, no file', async () => {
    const run = await cairn(['export', 'cust_42', '--db', db, '--out', join(dir, 'nope', 'x.jsonl')]);
    expect(run.code).toBe(2);
    expect(run.stderr.trim()).toBe(`[cairn] --out ${join(dir, 'nope', 'x.jsonl')}: cannot write it (its folder does not exist).`);
    const onto = await cairn(['export', 'cust_42', '--db', db, '--out', dir]);
    expect(onto.code).toBe(2);
    expect(onto.stderr).toMatch(/cannot write it \(it is a folder\)/);
  });

  // /dev/full (Linux, where CI runs) takes the open and refuses every write (ENOSPC), as a full disk does.
  it('export --out onto a disk that refuses the writes: exit 1, one line naming the error, never "exported"', async () => {
    const run = await cairn(['export', 'cust_42', '--db', db, '--raw', '--out', '/dev/full']);
    expect(run.code).toBe(1);
    expect(run.stdout).not.toContain('exported');
    oneLine(run);
    expect(run.stderr.trim()).toBe('[cairn] --out /dev/full: writing the export failed (ENOSPC).');
    const json = await cairn(['export', 'cust_42', '--db', db, '--raw', '--out', '/dev/full', '--json']);
    expect(json.code).toBe(1);
    expect(json.stdout).toBe('');
    expect(JSON.parse(json.stderr)).toMatchObject({ error: { message: '[cairn] --out /dev/full: writing the export failed (ENOSPC).' } });
  });

  it('import --in a file that does not exist: exit 2, and no database is created', async () => {
    const target = join(dir, 'never.db');
    const run = await cairn(['import', '--db', target, '--in', join(dir, 'missing.jsonl')]);
    expect(run.code).toBe(2);
    expect(run.stderr.trim()).toBe(`[cairn] --in ${join(dir, 'missing.jsonl')}: cannot read it (there is no such file).`);
    expect(existsSync(target)).toBe(false);
  });

  it('--keys naming a file that is not JSON (exit 2), or no file (exit 1, says there is none)', async () => {
    const sealed = join(dir, 'sealed.db');
    expect((await cairn(['copy', 'cust_42', '--db', db, '--to', sealed, '--to-keys', join(dir, 'keys.json')])).code).toBe(0);
    const notJson = join(dir, 'main.ts');
    writeFileSync(notJson, 'export const x = 1;\n');
    const bad = await cairn(['show', 'cust_42', '--db', sealed, '--keys', notJson]);
    expect(bad.code).toBe(2);
    expect(bad.stderr.trim()).toBe(`[cairn] ${notJson} is not a cairn key file: it is not JSON.`);
    const none = await cairn(['show', 'cust_42', '--db', sealed, '--keys', join(dir, 'nope.json')]);
    expect(none.code).toBe(1);
    oneLine(none);
    expect(none.stderr).toContain(`there is no key file at ${join(dir, 'nope.json')} (no such file)`);
    expect(existsSync(join(dir, 'nope.json'))).toBe(false);
  });

  it('import-langgraph --from a file that is not a database: exit 1, says so', async () => {
    const app = join(dir, 'app.ts');
    writeFileSync(app, 'export const app = 1;\n'.repeat(100));
    const run = await cairn(['import-langgraph', '--from', app, '--db', join(dir, 'lg.db')]);
    expect(run.code).toBe(1);
    oneLine(run);
    expect(run.stderr).toContain(`no LangGraph checkpoint database at ${app}: the file is not a SQLite database`);
  });

  it('under --json a failure is {"error": {"code", "message"}} on stderr', async () => {
    const run = await cairn(['import', '--db', join(dir, 'j.db'), '--in', join(dir, 'missing.jsonl'), '--json']);
    expect(run.code).toBe(2);
    expect(JSON.parse(run.stderr)).toEqual({ error: { code: 'ERR_INVALID_OPTION', message: `[cairn] --in ${join(dir, 'missing.jsonl')}: cannot read it (there is no such file).` } });
    const nope = await cairn(['verify', 'nope', '--db', db, '--json']);
    expect(nope.code).toBe(1);
    expect(JSON.parse(nope.stderr)).toEqual({ error: { code: 'ERR_THREAD_NOT_FOUND', message: '[cairn] [sqlite] thread nope: no such thread.' } });
  });
});

describe('an import or copy that is refused leaves nothing behind', () => {
  /** Runs `args` (TARGET: a new database in `dir`), expects `code` and `message`, and that neither the database nor `others` were created. */
  async function refused(name: string, args: string[], code: number, message: string | RegExp, options: { input?: string; others?: string[] } = {}) {
    const target = join(dir, `${name}.db`);
    const run = await cairn(args.map((a) => (a === 'TARGET' ? target : a)), options.input !== undefined ? { input: options.input } : {});
    expect(run.code, run.stderr).toBe(code);
    expect(run.stdout).toBe('');
    expect(run.stderr.trim().split('\n'), run.stderr).toHaveLength(1);
    if (typeof message === 'string') expect(run.stderr.trim()).toBe(message);
    else expect(run.stderr).toMatch(message);
    expect(existsSync(target), `${target} was created`).toBe(false);
    for (const other of options.others ?? []) expect(existsSync(other), `${other} was created`).toBe(false);
  }

  it('copy --to-keys in a folder that does not exist, or naming a file that is not a key file', async () => {
    const keys = join(dir, 'nodir', 'k.json');
    await refused('to-keys-nodir', ['copy', '--all', '--db', db, '--to', 'TARGET', '--to-keys', keys], 2, `[cairn] the key file ${keys} cannot be written (ENOENT).`, { others: [keys] });
    const notKeys = join(dir, 'not-keys.json');
    writeFileSync(notKeys, '{"hello":1}\n');
    await refused('to-keys-not-keys', ['copy', '--all', '--db', db, '--to', 'TARGET', '--to-keys', notKeys], 2, `[cairn] ${notKeys} is not a cairn key file.`);
    // --keys names the target's keys when --to-keys does not.
    await refused('keys-nodir', ['--keys', keys, 'copy', '--all', '--db', db, '--to', 'TARGET'], 2, `[cairn] the key file ${keys} cannot be written (ENOENT).`, { others: [keys] });
  });

  it('copy --artifacts a folder that is not there, or --to-artifacts a file', async () => {
    const file = join(dir, 'a-file');
    writeFileSync(file, 'not a folder\n');
    const missing = join(dir, 'no-artifacts');
    await refused('from-missing', ['copy', '--all', '--db', db, '--to', 'TARGET', '--artifacts', missing, '--to-artifacts', join(dir, 'to-artifacts')], 1, /no artifact directory at .*no-artifacts/, { others: [join(dir, 'to-artifacts')] });
    mkdirSync(join(dir, 'from-artifacts'), { recursive: true });
    await refused('to-file', ['copy', '--all', '--db', db, '--to', 'TARGET', '--artifacts', join(dir, 'from-artifacts'), '--to-artifacts', file], 1, `[cairn] ${file} is a file, not an artifact directory. Pass --artifacts <dir> (the folder given to fsArtifacts) or s3://bucket/prefix.`);
  });

  it('copy of a thread the source does not have', async () => {
    await refused('copy-nope', ['copy', 'cust_42', 'nope', '--db', db, '--to', 'TARGET'], 1, '[cairn] [sqlite] thread nope: no such thread.');
  });

  it('import --artifacts a file, or --keys in a folder that does not exist', async () => {
    const whole = join(dir, 'refused-whole.jsonl');
    expect((await cairn(['export', 'cust_42', '--db', db, '--raw', '--out', whole])).code).toBe(0);
    const file = join(dir, 'b-file');
    writeFileSync(file, 'not a folder\n');
    await refused('import-artifacts-file', ['import', '--db', 'TARGET', '--in', whole, '--artifacts', file], 1, /b-file is a file, not an artifact directory/);
    const keys = join(dir, 'nodir', 'k.json');
    await refused('import-keys-nodir', ['--keys', keys, 'import', '--db', 'TARGET', '--in', whole], 2, `[cairn] the key file ${keys} cannot be written (ENOENT).`);
  });

  it('import of an input that is not an export: empty, {}, null, a redacted export', async () => {
    await refused('stdin-empty', ['import', '--db', 'TARGET'], 1, '[cairn] not a cairn export: the stream is empty (no header record). Nothing was imported.', { input: '' });
    await refused('stdin-object', ['import', '--db', 'TARGET'], 1, '[cairn] not a cairn export: it starts with a JSON object without a type, not a header. Nothing was imported.', { input: '{}\n' });
    await refused('stdin-null', ['import', '--db', 'TARGET'], 1, '[cairn] not a cairn export: it starts with a JSON null, not a header. Nothing was imported.', { input: 'null\n' });
    await refused('stdin-thread', ['import', '--db', 'TARGET'], 1, '[cairn] not a cairn export: it starts with a "thread" record, not a header. Nothing was imported.', { input: '{"type":"thread"}\n' });
    const redacted = JSON.stringify({ type: 'header', format: 'cairn-threads-redacted', version: 6, redacted: true, exportedAt: 0, engine: 'sqlite', artifacts: false });
    await refused('stdin-redacted', ['import', '--db', 'TARGET'], 1, /redacted/, { input: redacted + '\n' });
    const future = JSON.stringify({ type: 'header', format: 'cairn-threads', version: 99, exportedAt: 0, engine: 'sqlite', artifacts: false });
    await refused('stdin-future', ['import', '--db', 'TARGET'], 1, /not a cairn thread export this version reads \(format cairn-threads v99/, { input: future + '\n' });
  });
});
