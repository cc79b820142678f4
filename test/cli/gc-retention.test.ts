/**
 * Artifact retention follows thread retention. A thread rule retires the threads
 * it matches (they are deleted, with their positions, ledger and pins) and only
 * then are their artifacts unreferenced; a thread that stays, because it does not
 * match or because a run holds it, keeps every artifact it refers to. So after
 * `cairn gc --rule threads:status=completed,olderThan=0s` no thread the database
 * still has refers to a collected artifact, and `cairn verify --artifacts` passes.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { fsArtifacts } from '../../src/artifacts/fs/index.js';
import { listArtifacts } from '../../src/artifacts/helpers.js';
import type { ArtifactStore } from '../../src/contracts/artifact-store.js';
import type { Engine } from '../../src/contracts/engine.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { verifyArtifacts } from '../../src/inspect/artifact-verify.js';
import { collectArtifacts } from '../../src/inspect/gc.js';
import { defineState, END, field, graph, START } from '../../src/index.js';
import { cairn } from './run-cli.js';

const Ref = z.object({ id: z.string(), sha256: z.string(), media_type: z.string(), size_bytes: z.number() });
const State = defineState({ fields: { pause: field.model(z.boolean().default(false)), doc: field.model(Ref.optional()) } });

/** Writes an artifact of its own per thread; pauses for a person when asked to. */
function app(engine: Engine, artifacts: ArtifactStore) {
  return graph(State)
    .node('write', async (s, ctx) => {
      const doc = await ctx.artifacts.put(`the document of ${ctx.threadId}`, { mediaType: 'text/plain' });
      if (s.pause) ctx.interruptAfter({ question: 'publish?' });
      return { doc };
    })
    .edge(START, 'write')
    .edge('write', END)
    .compile({ engine, artifacts });
}

const tick = () => new Promise((resolve) => setTimeout(resolve, 5));

let dir: string;
let db: string;
let store: string;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'cairn-gc-retention-'));
  db = join(dir, 'cairn.db');
  store = join(dir, 'artifacts');
  const engine = sqlite(db);
  const compiled = app(engine, fsArtifacts(store));
  await compiled.run({ thread: 'done', input: { pause: false } });
  await compiled.run({ thread: 'held', input: { pause: false } });
  await compiled.run({ thread: 'paused', input: { pause: true } });
  await engine.close();
  await tick();
});

afterEach(() => rmSync(dir, { recursive: true, force: true }));

async function storedIds(artifacts: ArtifactStore): Promise<string[]> {
  const out: string[] = [];
  for await (const info of listArtifacts(artifacts, { allTenants: true })) out.push(info.ref.id);
  return out;
}

describe('gc thread rules', () => {
  it('delete the threads they match and collect what only those referred to; a thread a run holds stays with its artifacts', async () => {
    const engine = sqlite(db);
    const artifacts = fsArtifacts(store);
    try {
      // A live run holds 'held' (completed, so the rule matches it): it must stay whole.
      await engine.checkpointer.acquireThread('held', { owner: { runId: 'live', pid: process.pid, host: hostname() }, leaseMs: 60_000 });
      const retention = { threads: [{ status: 'completed' as const, olderThanMs: 0 }] };
      const before = await storedIds(artifacts);
      expect(before).toHaveLength(3);

      const dry = await collectArtifacts({ checkpointer: engine.checkpointer, store: engine.store, ledger: engine.ledger, artifacts, graceMs: 0, retention, dryRun: true });
      expect(dry.deletedThreads).toEqual(['done', 'held']);
      expect(dry.victims).toHaveLength(2);
      expect((await engine.checkpointer.listThreads()).map((t) => t.id)).toEqual(['done', 'held', 'paused']);
      expect(await storedIds(artifacts)).toEqual(before);

      const report = await collectArtifacts({ checkpointer: engine.checkpointer, store: engine.store, ledger: engine.ledger, artifacts, graceMs: 0, retention });
      expect(report.deletedThreads).toEqual(['done']);
      expect(report.roots).toMatchObject({ threads: 2, releasedThreads: 1 });
      expect(report.victims).toHaveLength(1);
      expect((await engine.checkpointer.listThreads()).map((t) => t.id)).toEqual(['held', 'paused']);

      const verified = await verifyArtifacts({ artifacts, checkpointer: engine.checkpointer, store: engine.store });
      expect(verified.dangling).toEqual([]);
      expect(verified.ok).toBe(true);
      expect(await storedIds(artifacts)).toHaveLength(2);
    } finally {
      await artifacts.close();
      await engine.close();
    }
  });

  it('cairn gc --rule threads:status=completed,olderThan=0s leaves verify passing; --dry-run lists the threads it would delete', async () => {
    const dry = await cairn(['gc', '--db', db, '--artifacts', store, '--grace', '0', '--rule', 'threads:status=completed,olderThan=0s', '--dry-run']);
    expect(dry.code, dry.stderr).toBe(0);
    expect(dry.stdout).toContain('threads: would delete 2 threads by retention rules (with their positions, ledger and pins): done, held');
    expect((await cairn(['threads', '--db', db])).stdout).toContain('done');

    const gc = await cairn(['gc', '--db', db, '--artifacts', store, '--grace', '0', '--rule', 'threads:status=completed,olderThan=0s', '--json']);
    expect(gc.code, gc.stderr).toBe(0);
    const report = JSON.parse(gc.stdout) as { deletedThreads: string[]; victims: unknown[] };
    expect(report.deletedThreads).toEqual(['done', 'held']);
    expect(report.victims).toHaveLength(2);

    const threads = await cairn(['threads', '--db', db, '--json']);
    expect((JSON.parse(threads.stdout) as { id: string }[]).map((t) => t.id)).toEqual(['paused']);
    const verify = await cairn(['verify', '--db', db, '--artifacts', store]);
    expect(verify.code, verify.stdout + verify.stderr).toBe(0);
    expect(verify.stdout).toContain('ok   artifacts: 1 re-hashed');
    expect(verify.stdout).toContain('0 dangling');
  });
});
