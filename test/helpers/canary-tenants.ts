/**
 * Tenants whose data carries canaries, for the erasure tests: a graph whose state
 * fields, list items, snapshots, recorded outputs, effect outcomes, store values,
 * signals and artifact bytes each hold a unique string, and a scan of files for them.
 */
import { randomBytes } from 'node:crypto';
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { defineState, END, field, graph, START } from '../../src/index.js';
import type { ArtifactStore } from '../../src/contracts/artifact-store.js';
import type { Engine } from '../../src/contracts/engine.js';

export const KINDS = ['state', 'item', 'record', 'effect', 'store', 'artifact', 'signal'] as const;

/** One tenant's canaries, by kind: unique strings nothing else contains. */
export function canaries(tenant: string): Record<(typeof KINDS)[number], string> {
  const salt = randomBytes(6).toString('hex');
  return Object.fromEntries(KINDS.map((kind) => [kind, `CANARY-${tenant}-${kind}-${salt}`])) as Record<(typeof KINDS)[number], string>;
}

const State = defineState({
  fields: {
    note: field.model(z.string(), { default: '' }),
    items: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
    out: field.model(z.string(), { default: '' }),
    file: field.model(z.any().optional()),
  },
});

/** The canary graph on `engine` and `artifacts`: snapshots every 2 positions. */
export function canaryApp(engine: Engine, artifacts: ArtifactStore) {
  return graph(State)
    .node('gather', async (s, ctx) => {
      const c = JSON.parse(s.note) as Record<string, string>;
      return { items: [c.item!], out: await ctx.record('model', async () => c.record!) };
    })
    .node('act', async (s, ctx) => {
      const c = JSON.parse(s.note) as Record<string, string>;
      const tenant = c.tenant!;
      const sent = await ctx.effect('send', { idempotencyKey: `send-${tenant}`, run: async () => ({ receipt: c.effect }) });
      await ctx.store.put(['tenants', tenant, 'prefs'], 'p', { v: c.store });
      const file = await ctx.recordArtifact('doc', async () => `${c.artifact} `.repeat(3000), { mediaType: 'text/plain' });
      return { items: [JSON.stringify(sent)], file };
    })
    .node('wait', async (_s, ctx) => {
      const got = await ctx.waitFor('go', { timeoutMs: 600_000 });
      return { items: [JSON.stringify(got.status === 'received' ? got.payload : null)] };
    })
    .edge(START, 'gather')
    .edge('gather', 'act')
    .edge('act', 'wait')
    .edge('wait', END)
    .compile({ engine, artifacts, snapshotEvery: 2 });
}

/** Runs `threads` threads of `tenant` through the canary graph to the end (a signal in between). */
export async function runTenant(app: ReturnType<typeof canaryApp>, tenant: string, c: ReturnType<typeof canaries>, threads = 2): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < threads; i++) {
    const thread = `${tenant}-t${i}`;
    const first = await app.run({ thread, tenant, input: { note: JSON.stringify({ ...c, tenant }) } });
    if (first.status !== 'waiting') throw new Error(`expected waiting, got ${first.status}`);
    await app.signal({ thread, name: 'go', payload: { c: c.signal } });
    const done = await app.run({ thread });
    if (done.status !== 'completed') throw new Error(`expected completed, got ${done.status}`);
    ids.push(thread);
  }
  return ids;
}

/** Every file under `path` (a file or a directory), recursively. */
export async function filesUnder(path: string): Promise<string[]> {
  const info = await stat(path).catch(() => null);
  if (!info) return [];
  if (info.isFile()) return [path];
  const out: string[] = [];
  for (const entry of await readdir(path, { withFileTypes: true })) out.push(...(await filesUnder(join(path, entry.name))));
  return out;
}

/** The canaries (as UTF-8) found in the bytes of the files under `paths`: `kind @ file` for each hit. */
export async function scan(paths: string[], c: Record<string, string>): Promise<string[]> {
  const hits: string[] = [];
  for (const path of paths) {
    for (const file of await filesUnder(path)) {
      const bytes = await readFile(file);
      for (const [kind, canary] of Object.entries(c)) if (bytes.includes(Buffer.from(canary, 'utf8'))) hits.push(`${kind} @ ${file}`);
    }
  }
  return hits;
}
