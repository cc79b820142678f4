/**
 * The commands that operate a thread, run as a user runs them (the BUILT CLI in a
 * child process): `resume`, `fork`, `replay` load the application from `--app
 * <module#export>` (a .js module, or a .ts one through tsx), `resolve-effect` needs
 * none, `diff` compares two positions' stored states. Each prints for people and,
 * with --json, a machine form; a missing thread or database exits 1, bad usage
 * (JSON that does not parse, flags that do not go together, an unknown flag) exits
 * 2. Also the human output of the reading commands: no codec tags, ISO times,
 * plurals, the verify total. On SQLite, and resume / resolve-effect / diff on
 * PostgreSQL.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqlite } from '../../dist/engines/sqlite/index.js';
import { postgres } from '../../dist/engines/postgres/index.js';
import { approval, build, payments, setChargeBroken } from '../fixtures/operate-app.mjs';
import { PG_URL, usePostgresSchema } from '../helpers/postgres.js';
import { cairn } from './run-cli.js';

const APP = fileURLToPath(new URL('../fixtures/operate-app.mjs', import.meta.url));
const ISO = /\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z/;

type Engine = ReturnType<typeof sqlite>;

/** Thread `post` interrupted at seq 1, thread `pay` in needs_attention with one effect intent; returns the intent's key. */
async function seed(engine: Engine): Promise<string> {
  const post = build(engine);
  await post.run({ thread: 'post', input: { topic: 'cairns' } });
  const pay = payments(engine);
  setChargeBroken(true);
  await pay.run({ thread: 'pay' }).catch(() => undefined);
  setChargeBroken(false);
  await pay.run({ thread: 'pay' }).catch(() => undefined);
  const [entry] = await engine.ledger.list('pay');
  return entry!.key;
}

let dir: string;
let db: string;
let key: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-cli-operate-'));
  db = join(dir, 'cairn.db');
  const engine = sqlite(db);
  try {
    key = await seed(engine);
  } finally {
    await engine.close();
  }
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('cairn resume', () => {
  it('exits 2 for --answer and --input together or neither, JSON that does not parse, an unknown flag; 1 for a missing thread or database', async () => {
    const usage = [
      ['resume', 'post', '--app', APP, '--db', db],
      ['resume', 'post', '--app', APP, '--db', db, '--answer', '1', '--input', '{}'],
      ['resume', 'post', '--app', APP, '--db', db, '--input', '{bad'],
      ['resume', 'post', '--app', APP, '--db', db, '--input', '[1]'],
      ['resume', 'post', '--app', APP, '--db', db, '--answer', '1', '--bogus'],
      ['resume', 'post', '--app', join(dir, 'no-such-app.mjs'), '--db', db, '--answer', '1'],
      ['resume', 'post', '--app', `${APP}#nope`, '--db', db, '--answer', '1'],
    ];
    for (const args of usage) {
      const run = await cairn(args);
      expect(run.code, `${args.join(' ')}: ${run.stderr}`).toBe(2);
      expect(run.stdout).toBe('');
    }
    const missing = await cairn(['resume', 'nope', '--app', APP, '--db', db, '--answer', '1']);
    expect([missing.code, missing.stderr.trim()]).toEqual([1, '[cairn] [sqlite] thread nope: no such thread.']);
    const noDb = await cairn(['resume', 'post', '--app', APP, '--db', join(dir, 'typo.db'), '--answer', '1']);
    expect(noDb.code).toBe(1);
    expect(noDb.stderr).toContain('no cairn database at');
  });

  it('answers with --input and runs on, printing status, seq and interrupts (--json: status, seq, interrupts, state)', async () => {
    const run = await cairn(['resume', 'post', '--app', APP, '--db', db, '--input', '{"approved":true}', '--actor', 'alice', '--json']);
    expect(run.code, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout) as { thread: string; status: string; seq: number; interrupts: unknown[]; state: { notes: string[] } };
    expect(result).toMatchObject({ thread: 'post', status: 'completed', seq: 3, interrupts: [] });
    expect(result.state.notes).toEqual(['a post about cairns', 'published']);
    const history = JSON.parse((await cairn(['history', 'post', '--db', db, '--json'])).stdout) as { seq: number; actor?: string; answered?: string }[];
    expect(history.find((p) => p.seq === 2)).toMatchObject({ actor: 'alice', answered: '0:draft:0:0' });
  });

  it('loads a .ts app module through tsx, and --answer resumes with the value the interrupt resolves to', async () => {
    const engine = sqlite(db);
    const asked = await approval(engine).run({ thread: 'ship' });
    await engine.close();
    expect(asked.status).toBe('interrupted');
    const ts = join(dir, 'app.ts');
    writeFileSync(ts, `import { approval } from ${JSON.stringify(pathToFileURL(APP).href)};\nconst app: (engine: unknown) => unknown = (engine) => approval(engine);\nexport default app;\n`);
    // An answer the interrupt's schema refuses changes nothing (exit 1, the thread still asks).
    const refused = await cairn(['resume', 'ship', '--app', ts, '--db', db, '--answer', '"maybe"']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('field "answer" failed validation');
    const run = await cairn(['resume', 'ship', '--app', ts, '--db', db, '--answer', '"yes"', '--json']);
    expect(run.code, run.stderr).toBe(0);
    const result = JSON.parse(run.stdout) as { status: string; state: { verdict: string } };
    expect(result.status).toBe('completed');
    expect(result.state.verdict).toBe('answered yes');
  });
});

describe('cairn fork and replay', () => {
  it('fork starts a branch from a seq with a patch and prints the new head and its pending interrupt', async () => {
    const run = await cairn(['fork', 'post', '1', '--app', APP, '--db', db, '--patch', '{"topic":"stones"}', '--actor', 'bob']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain('forked thread post from seq 1: interrupted at seq 4');
    expect(run.stdout).toContain('new head: seq 4');
    expect(run.stdout).toMatch(/^id\s+node\s+when\s+payload$/m);
    expect(run.stdout).toContain('{"question":"publish this?","text":"a post about cairns"}');
    const missingSeq = await cairn(['fork', 'post', '99', '--app', APP, '--db', db, '--json']);
    expect(missingSeq.code).toBe(1);
    expect(missingSeq.stdout).toBe('');
    expect((await cairn(['fork', 'post', 'x', '--app', APP, '--db', db])).code).toBe(2);
    expect((await cairn(['fork', 'post', '1', '--app', APP, '--db', db, '--patch', 'nope'])).code).toBe(2);
    expect((await cairn(['fork', 'nope', '1', '--app', APP, '--db', db])).code).toBe(1);
  });

  it('replay prints each step and whether it matched; a changed graph names the first divergence and exits 1', async () => {
    const same = await cairn(['replay', 'post', '--app', APP, '--db', db, '--to', '3']);
    expect(same.code, same.stderr).toBe(0);
    expect(same.stdout).toContain('replayed thread post from seq 0 to seq 3: 3 steps, 3 matched');
    expect(same.stdout).toMatch(/^seq\s+parent\s+kind\s+nodes\s+re-executed\s+match\s+fields that differ$/m);
    expect(same.stdout).toMatch(/^1\s+0\s+step\s+draft\s+yes\s+same\s+-$/m);

    const changed = await cairn(['replay', 'post', '--app', `${APP}#changed`, '--db', db, '--to', '3', '--json']);
    expect(changed.code, changed.stderr).toBe(1);
    const report = JSON.parse(changed.stdout) as { sameStates: boolean; firstDivergence: { seq: number; divergences: { name: string }[] } };
    expect(report.sameStates).toBe(false);
    expect(report.firstDivergence).toMatchObject({ seq: 1, divergences: [{ name: 'other-model' }] });
    const human = await cairn(['replay', 'post', '--app', `${APP}#changed`, '--db', db, '--to', '3']);
    expect(human.stdout).toContain('first divergence: seq 1 (draft): node draft call 0 "other-model": recorded as "model"');
    expect((await cairn(['replay', 'post', '--app', APP, '--db', db, '--from', 'x'])).code).toBe(2);
    expect((await cairn(['replay', 'nope', '--app', APP, '--db', db])).code).toBe(1);
  });
});

describe('cairn diff', () => {
  it('prints appended items, changed and added fields; --json gives { fields }', async () => {
    const run = await cairn(['diff', 'post', '1', '3', '--db', db]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trim().split('\n')).toEqual([
      'thread post: seq 1 → seq 3 (schema v1), 3 fields differ',
      '+ notes[1] "published"',
      '+ approved: true',
      '+ publishedAt: "2026-01-01"',
    ]);
    const json = JSON.parse((await cairn(['diff', 'post', '1', '3', '--db', db, '--json'])).stdout) as { fields: unknown[] };
    expect(json.fields).toEqual([
      { field: 'notes', kind: 'appended', from: 1, items: ['published'] },
      { field: 'approved', kind: 'added', after: true },
      { field: 'publishedAt', kind: 'added', after: '2026-01-01' },
    ]);
    const fork = await cairn(['diff', 'post', '3', '4', '--db', db]);
    expect(fork.code, fork.stderr).toBe(0);
    expect(fork.stdout).toContain('~ topic: "cairns" → "stones"');
    expect(fork.stdout).toContain('- notes[1] "published"');
    expect(fork.stdout).toContain('- approved: true');
    expect((await cairn(['diff', 'post', '1', '1', '--db', db])).stdout).toContain('no differences');
    expect((await cairn(['diff', 'post', '1', 'z', '--db', db])).code).toBe(2);
    expect((await cairn(['diff', 'nope', '0', '1', '--db', db])).code).toBe(1);
    expect((await cairn(['diff', 'post', '0', '99', '--db', db])).code).toBe(1);
  });
});

describe('cairn resolve-effect', () => {
  it('exits 2 without --outcome or --failed, with both, for --message without --failed, for JSON that does not parse', async () => {
    for (const extra of [[], ['--outcome', '1', '--failed'], ['--outcome', '1', '--message', 'x'], ['--outcome', '{nope']]) {
      const run = await cairn(['resolve-effect', 'pay', key, '--db', db, ...extra]);
      expect(run.code, `${extra.join(' ')}: ${run.stderr}`).toBe(2);
    }
  });

  it('exits 1 for a missing thread or an effect the thread does not have', async () => {
    expect((await cairn(['resolve-effect', 'nope', key, '--db', db, '--outcome', '1'])).code).toBe(1);
    const run = await cairn(['resolve-effect', 'pay', 'eff_nope', '--db', db, '--outcome', '1']);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('has no effect with key eff_nope');
  });

  it('records an outcome with no --app; effects prints it as a JSON value, and the next run is served it', async () => {
    const run = await cairn(['resolve-effect', 'pay', key, '--db', db, '--outcome', '{"by":"hand"}', '--json']);
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toEqual({ thread: 'pay', key, resolution: 'outcome', name: 'charge', outcome: { by: 'hand' } });
    const effects = JSON.parse((await cairn(['effects', 'pay', '--db', db, '--json'])).stdout) as { outcome: unknown }[];
    expect(effects[0]!.outcome).toEqual({ by: 'hand' });
    const table = (await cairn(['effects', 'pay', '--db', db])).stdout;
    expect(table).toMatch(/^kind\s+status\s+seq\s+node\s+name\s+call\s+key\s+outcome\s+at$/m);
    expect(table).toContain('{"by":"hand"}');
    const again = await cairn(['resolve-effect', 'pay', key, '--db', db, '--outcome', '1']);
    expect(again.code).toBe(1);
    expect(again.stderr).toContain('already has an outcome');
    const engine = sqlite(db);
    try {
      expect((await payments(engine).run({ thread: 'pay' })).state.charged).toEqual({ by: 'hand' });
    } finally {
      await engine.close();
    }
  });

  it('--failed makes the thread failed with the message and the actor, kept in its attempt history', async () => {
    const engine = sqlite(db);
    const pay = payments(engine);
    setChargeBroken(true);
    await pay.run({ thread: 'pay2' }).catch(() => undefined);
    setChargeBroken(false);
    await pay.run({ thread: 'pay2' }).catch(() => undefined);
    const [entry] = await engine.ledger.list('pay2');
    await engine.close();
    const run = await cairn(['resolve-effect', 'pay2', entry!.key, '--db', db, '--failed', '--message', 'card declined', '--actor', 'carol']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).toContain(`recorded effect ${entry!.key} of thread pay2 as failed; the thread is now failed`);
    expect(run.stdout).toContain('failed, as carol recorded: card declined');
    const threads = JSON.parse((await cairn(['threads', '--db', db, '--json'])).stdout) as { id: string; status: string; lastError: { code: string } }[];
    expect(threads.find((t) => t.id === 'pay2')).toMatchObject({ status: 'failed', lastError: { code: 'ERR_EFFECT_FAILED' } });
  });
});

describe('human output', () => {
  it('show prints the decoded state (undefined as such, never a codec tag) and the pending interrupts with their payloads', async () => {
    const seeded = sqlite(db);
    await build(seeded).run({ thread: 'shown', input: { topic: 'typescript' } });
    await seeded.close();
    const run = await cairn(['show', 'shown', '--db', db, '--seq', '1']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout).not.toContain('$t');
    expect(run.stdout).toContain('1 pending interrupt:');
    expect(run.stdout).toContain('{"question":"publish this?","text":"a post about typescript"}');
    const head = await cairn(['show', 'post', '--db', db, '--seq', '3']);
    expect(head.stdout).toMatch(/^1 answered interrupt:$/m);
    expect(head.stdout).toMatch(/0:draft:0:0\s+draft\s+inside\s+\{"question":"publish this\?","text":"a post about cairns"\}\s+alice \(seq 2\)/);
    const engine = sqlite(db);
    await build(engine).run({ thread: 'undef', input: { topic: 'u', publishedAt: undefined } });
    await engine.close();
    const undef = await cairn(['show', 'undef', '--db', db, '--seq', '0']);
    expect(undef.stdout).not.toContain('$t');
    expect(undef.stdout).toContain('"publishedAt": undefined');
  });

  it('tables have headers and ISO 8601 times with their zone; counts have the right plural', async () => {
    const threads = (await cairn(['threads', '--db', db])).stdout;
    expect(threads.split('\n')[0]).toMatch(/^thread\s+status\s+kind\s+tenant\s+head\s+attempts\s+updated$/);
    expect(threads).toMatch(new RegExp(`post\\s+interrupted\\s+task\\s+-\\s+4\\s+\\d+\\s+${ISO.source}`));
    const history = (await cairn(['history', 'post', '--db', db])).stdout;
    expect(history.split('\n')[0]).toMatch(/^seq\s+parent\s+kind\s+nodes\s+next\s+changed\s+effects\s+interrupts \/ waits\s+actor\s+child\s+at\s+hash$/);
    expect(history).toMatch(ISO);
    const verify = (await cairn(['verify', 'pay', '--db', db])).stdout;
    expect(verify).toMatch(/^ok {3}pay: 2 positions, 0 snapshots, 1 ledger entry$/m);
    expect((await cairn(['verify', 'pay2', '--db', db])).stdout).toMatch(/^ok {3}pay2: 1 position, 0 snapshots, 0 ledger entries$/m);
    expect(verify).toMatch(/^1 thread verified: 1 ok, 0 with problems$/m);
    expect(verify).not.toMatch(/\(s\)|\(ies\)/);
  });

  it('verify ends with the total, also over many threads', async () => {
    const engine = sqlite(db);
    for (let i = 0; i < 30; i++) await build(engine).run({ thread: `many_${String(i).padStart(2, '0')}`, input: { topic: String(i) } });
    const count = (await engine.checkpointer.listThreads({ limit: 1000 })).length;
    await engine.close();
    const run = await cairn(['verify', '--db', db]);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout.trim().split('\n').at(-1)).toBe(`${count} threads verified: ${count} ok, 0 with problems`);
    const json = JSON.parse((await cairn(['verify', '--db', db, '--json'])).stdout) as unknown[];
    expect(json).toHaveLength(count);
  });

  it('never colours with --json, NO_COLOR or when stdout is not a terminal', async () => {
    const run = await cairn(['threads', '--db', db], { env: { FORCE_COLOR: '1' } });
    expect(run.stdout).not.toContain('\u001b[');
  });
});

describe('on PostgreSQL', () => {
  const pg = usePostgresSchema();

  it('resume, resolve-effect and diff work on a postgres:// database', async () => {
    const engine = await pg.engine();
    let pgKey: string;
    try {
      pgKey = await seed(engine as unknown as Engine);
    } finally {
      await engine.close();
    }
    const url = `${PG_URL}#${pg.schema}`;
    const resumed = await cairn(['resume', 'post', '--app', APP, '--db', url, '--input', '{"approved":true}']);
    expect(resumed.code, resumed.stderr).toBe(0);
    expect(resumed.stdout.trim()).toBe('resumed thread post: completed at seq 3');
    const resolved = await cairn(['resolve-effect', 'pay', pgKey, '--db', url, '--outcome', '"ok"']);
    expect(resolved.code, resolved.stderr).toBe(0);
    expect(resolved.stdout).toContain('with outcome "ok"');
    const diff = JSON.parse((await cairn(['diff', 'post', '1', '3', '--db', url, '--json'])).stdout) as { fields: { field: string }[] };
    expect(diff.fields.map((f) => f.field)).toEqual(['notes', 'approved', 'publishedAt']);
    expect((await cairn(['resume', 'nope', '--app', APP, '--db', url, '--answer', '1'])).code).toBe(1);
    void postgres;
  });
});
