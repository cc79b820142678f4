/**
 * `cairn retention apply --policy <file.json> [--dry-run]` as a user runs it (the built
 * CLI on a SQLite file and an artifact folder): the dry run prints what goes per kind
 * with counts and bytes and removes nothing; the real run prints the same and removes
 * it; the thread it compacted still verifies; a ledger rule and a child run's namespace
 * are compacted and reported alike (text and --json); a malformed policy is a typed error.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fsArtifacts } from '../../src/artifacts/fs/index.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { defineState, END, field, graph, START } from '../../src/index.js';
import { cairn } from './run-cli.js';
import type { Engine } from '../../src/contracts/engine.js';
import { PG_URL, usePostgresSchema } from '../helpers/postgres.js';

const Ref = z.object({ id: z.string(), sha256: z.string(), media_type: z.string(), size_bytes: z.number() });
const State = defineState({ fields: { n: field.model(z.number(), { default: 0 }), latest: field.model(Ref.optional()), log: field.model(z.array(z.string()), { reduce: 'append', default: [] }) } });

const pg = usePostgresSchema();
let dir: string;
let db: string;
let artifacts: string;
let policy: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-cli-retention-'));
  db = join(dir, 'cairn.db');
  artifacts = join(dir, 'artifacts');
  const engine = sqlite(db);
  const app = graph(State)
    .node('step', async (s, ctx) => ({ n: s.n + 1, latest: await ctx.artifacts.put(`${ctx.threadId} ${s.n + 1}`, { mediaType: 'text/plain' }), log: [`line ${s.n + 1}`] }))
    .edge(START, 'step')
    .conditionalEdge('step', (s) => (s.n >= 15 ? END : 'step'))
    .compile({ engine, artifacts: fsArtifacts(artifacts, { fsync: false }), snapshotEvery: 4 });
  await app.run({ thread: 'old', tenant: 'gone' });
  await app.run({ thread: 'long', tenant: 'acme' });
  await engine.store.put(['cache'], 'k', { v: 'x'.repeat(50) });
  await engine.close();
  policy = join(dir, 'policy.json');
  writeFileSync(policy, JSON.stringify({ threads: [{ tenant: 'gone', olderThan: '0s' }], positions: [{ tenant: 'acme', keepLast: 4 }], store: [{ namespace: ['cache'], olderThan: '0s' }], graceMs: 0 }));
  await new Promise((resolve) => setTimeout(resolve, 10));
}, 60_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('cairn retention apply', () => {
  it('--dry-run prints what goes with counts and bytes and removes nothing; the real run removes the same, and the compacted thread verifies', async () => {
    const dry = await cairn(['retention', 'apply', '--db', db, '--artifacts', artifacts, '--policy', policy, '--dry-run']);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain('cairn retention apply --dry-run: would remove');
    expect(dry.stdout).toMatch(/threads\s+1 thread\s+[\d.]+ (B|KiB)\s+16 positions, 15 items, 7 snapshots/);
    expect(dry.stdout).toMatch(/positions\s+1 thread compacted\s+[\d.]+ (B|KiB)\s+\d+ positions/);
    expect(dry.stdout).toMatch(/store\s+1 item\s+\d+ B/);
    expect(dry.stdout).toMatch(/artifacts\s+\d+ artifacts/);
    expect(dry.stdout).toContain('  - thread old');
    const listed = await cairn(['threads', '--db', db, '--json']);
    expect(listed.stdout).toContain('"old"');

    const real = await cairn(['retention', 'apply', '--db', db, '--artifacts', artifacts, '--policy', policy]);
    expect(real.code, real.stderr).toBe(0);
    expect(real.stdout.replace('cairn retention apply: removed', 'cairn retention apply --dry-run: would remove')).toBe(dry.stdout);

    const json = await cairn(['retention', 'apply', '--db', db, '--artifacts', artifacts, '--policy', policy, '--dry-run', '--json']);
    const report = JSON.parse(json.stdout);
    expect(report.threads.deleted).toEqual([]);
    expect(report.artifacts.count).toBe(0);

    const verify = await cairn(['verify', 'long', '--db', db]);
    expect(verify.code, verify.stdout + verify.stderr).toBe(0);
  });

  it('compacts a long child run and old ledger rows on SQLite: text and --json of the dry run match the real run, and the thread verifies', async () => {
    const childDb = join(dir, 'children.db');
    await childRunAndOldLedger(sqlite(childDb), childDb);
  });

  it('compacts a long child run and old ledger rows on PostgreSQL, alike', async () => {
    await childRunAndOldLedger(await pg.engine(), `${PG_URL}#${pg.schema}`);
  });

  it('refuses a policy file with an unknown key or a malformed rule, removing nothing', async () => {
    const bad = join(dir, 'bad.json');
    writeFileSync(bad, JSON.stringify({ thread: [] }));
    const unknown = await cairn(['retention', 'apply', '--db', db, '--policy', bad]);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toContain('unknown key "thread"');
    writeFileSync(bad, JSON.stringify({ positions: [{ tenant: 'acme' }] }));
    const rule = await cairn(['retention', 'apply', '--db', db, '--policy', bad]);
    expect(rule.code).not.toBe(0);
    expect(rule.stderr).toContain('needs olderThanMs or keepLast');
    writeFileSync(bad, JSON.stringify({ ledger: [{ tenant: 'acme' }] }));
    const ledgerRule = await cairn(['retention', 'apply', '--db', db, '--policy', bad]);
    expect(ledgerRule.code).not.toBe(0);
    expect(ledgerRule.stderr).toContain('needs olderThanMs');
  });

  it('refuses a typo in a rule (a status, a key, an age) before anything runs, dry run or not, with exit 2', async () => {
    const bad = join(dir, 'typo.json');
    const cases: [unknown, string][] = [
      [{ threads: [{ status: 'bogus', olderThanMs: 1 }] }, 'threads[0]: unknown status "bogus" (one of running, interrupted, completed, failed, needs_attention, waiting)'],
      [{ threads: [{ status: 'completed', olderThanMS: 1 }] }, 'threads[0]: unknown key "olderThanMS"'],
      [{ store: [{ namespace: ['cache'], olderThanMs: -5 }] }, 'store[0]: olderThanMs must be a number of milliseconds (0 or more), got -5'],
      [{ positions: [{ keepLast: '4' }] }, 'positions[0]: keepLast must be a whole number of positions (1 or more), got "4"'],
    ];
    for (const [policy, says] of cases) {
      writeFileSync(bad, JSON.stringify(policy));
      for (const dry of [['--dry-run'], []]) {
        const result = await cairn(['retention', 'apply', '--db', db, '--policy', bad, ...dry]);
        expect(result.code, result.stdout).toBe(2);
        expect(result.stderr).toContain(`--policy ${bad}: retention policy ${says}`);
        expect(result.stdout).toBe('');
      }
    }
  });
});

/**
 * A thread whose child run takes 20 recorded steps, every ledger row old: the dry run
 * (text, --json) reports what the real run removes; the thread verifies after.
 */
async function childRunAndOldLedger(engine: Engine, childDb: string): Promise<void> {
  const Inner = defineState({ fields: { n: field.model(z.number(), { default: 0 }), log: field.model(z.array(z.string()), { reduce: 'append', default: [] }) } });
  const Outer = defineState({ fields: { notes: field.model(z.array(z.string()), { reduce: 'append', default: [] }) } });
  const inner = graph(Inner)
    .node('search', async (s, ctx) => ({ n: s.n + 1, log: [await ctx.record('search', async () => `hit ${s.n + 1}`)] }))
    .edge(START, 'search')
    .conditionalEdge('search', (s) => (s.n >= 20 ? END : 'search'));
  const outer = graph(Outer)
    .node('ask', async (_s, ctx) => ({ notes: [await ctx.record('ask', async () => 'question')] }))
    .subgraph('research', inner, { output: (r) => ({ notes: [`${r.log.length} hits`] }) })
    .edge(START, 'ask')
    .edge('ask', 'research')
    .edge('research', END)
    .compile({ engine, snapshotEvery: 4, recursionLimit: 50 });
  await outer.run({ thread: 'chat', tenant: 'acme' });
  await engine.close();
  const file = join(dir, 'children-policy.json');
  writeFileSync(file, JSON.stringify({ positions: [{ keepLast: 6 }], ledger: [{ tenant: 'acme', olderThan: '0s' }] }));
  await new Promise((resolve) => setTimeout(resolve, 10));

  const dry = await cairn(['retention', 'apply', '--db', childDb, '--policy', file, '--dry-run']);
  expect(dry.code, dry.stderr).toBe(0);
  // Every row is old: the ledger rule cuts the child past its last search (keepLast alone
  // would keep 6); the root has no snapshot to cut at, so its recorded question stays.
  expect(dry.stdout).toMatch(/positions\s+0 threads compacted\s+0 B/);
  expect(dry.stdout).toMatch(/ledger\s+1 thread \(1 namespace\) compacted\s+[\d.]+ (B|KiB)\s+20 positions, \d+ items, \d+ snapshots, 20 ledger entries; 1 old ledger entry kept/);
  expect(dry.stdout).toContain('  - thread chat [research:0@1]: old ledger entries, with the steps below 20 (20 ledger entries, 20 positions)');
  expect(dry.stdout).toContain('skipped: chat (no-snapshot)');
  const dryJson = JSON.parse((await cairn(['retention', 'apply', '--db', childDb, '--policy', file, '--dry-run', '--json'])).stdout);
  expect(dryJson.ledger.compacted.map((c: { ns: string }) => c.ns)).toEqual(['research:0@1']);
  expect(dryJson.ledger.kept).toBe(1);

  const real = await cairn(['retention', 'apply', '--db', childDb, '--policy', file, '--json']);
  expect(real.code, real.stderr).toBe(0);
  expect({ ...JSON.parse(real.stdout), dryRun: true }).toEqual(dryJson);
  // Applied again, the kept row is still kept, and nothing more goes.
  const again = await cairn(['retention', 'apply', '--db', childDb, '--policy', file]);
  expect(again.stdout).toMatch(/ledger\s+0 threads compacted\s+0 B\s+0 positions, 0 items, 0 snapshots, 0 ledger entries; 1 old ledger entry kept/);
  const verify = await cairn(['verify', 'chat', '--db', childDb]);
  expect(verify.code, verify.stdout + verify.stderr).toBe(0);
  const history = await cairn(['history', 'chat', '--db', childDb, '--ns', 'research:0@1', '--json']);
  expect(history.code, history.stderr).toBe(0);
  expect(JSON.parse(history.stdout).map((p: { seq: number }) => p.seq)).toEqual([20]);
}
