/**
 * `cairn retention apply --policy <file.json> [--dry-run]` as a user runs it (the built
 * CLI on a SQLite file and an artifact folder): the dry run prints what goes per kind
 * with counts and bytes and removes nothing; the real run prints the same and removes
 * it; the thread it compacted still verifies; a malformed policy is a typed error.
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

const Ref = z.object({ id: z.string(), sha256: z.string(), media_type: z.string(), size_bytes: z.number() });
const State = defineState({ fields: { n: field.model(z.number(), { default: 0 }), latest: field.model(Ref.optional()), log: field.model(z.array(z.string()), { reduce: 'append', default: [] }) } });

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
  });
});
