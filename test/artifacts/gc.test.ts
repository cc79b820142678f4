/**
 * Retention and garbage collection of artifacts over real runs (memory engine,
 * memory artifacts): every kind of root keeps what it refers to, grace keeps
 * what is young, retention rules release threads and expire artifacts, pins win,
 * dry runs change nothing; refs held only by child runs' namespaces count as much
 * as the root's; `verifyArtifacts` finds corruption and dangling refs by thread,
 * namespace and seq; `ctx.artifact` keeps a big tool output out of state in one call,
 * and a tenant's thread writes artifacts as its tenant.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { describe, expect, it } from 'vitest';
import { defineState, field, graph, START, END } from '../../src/index.js';
import { memory } from '../../src/engines/memory/index.js';
import { memoryArtifacts, type MemoryArtifactStore } from '../../src/artifacts/memory/index.js';
import { listArtifacts, loadValue, storeValue, VALUE_MEDIA_TYPE } from '../../src/artifacts/helpers.js';
import { collectArtifacts, parseRetentionRule, pinArtifact, PIN_NAMESPACE, unpinArtifact, type ArtifactRetentionRule } from '../../src/inspect/gc.js';
import { verifyArtifacts } from '../../src/inspect/artifact-verify.js';
import type { ArtifactRef } from '../../src/contracts/artifact-store.js';
import type { Engine } from '../../src/contracts/engine.js';
import { chain, storeThread } from '../helpers/positions.js';

const Ref = z.object({ id: z.string(), sha256: z.string(), media_type: z.string(), size_bytes: z.number() });

const State = defineState({
  fields: {
    doc: field.model(Ref.optional()),
    pages: field.model(z.array(Ref), { reduce: 'append', default: [] }),
    note: field.model(z.string().optional()),
  },
});

/** A graph whose nodes write artifacts into a set field, an append field, an effect outcome and the store. */
function app(engine: Engine, artifacts: MemoryArtifactStore, options: { snapshotEvery?: number } = {}) {
  return graph(State)
    .node('write', async (_s, ctx) => {
      const doc = await ctx.artifacts.put(`doc of ${ctx.threadId}`, { mediaType: 'text/plain' });
      const page = await ctx.artifacts.put(`page 1 of ${ctx.threadId}`, { mediaType: 'image/png' });
      return { doc, pages: [page] };
    })
    .node('effect', async (_s, ctx) => {
      const ref = await ctx.effect('upload', {
        idempotencyKey: `upload-${ctx.threadId}`,
        run: (key) => ctx.artifacts.putNamed(key, `uploaded by ${ctx.threadId}`, { mediaType: 'text/plain' }),
        probe: (key) => ctx.artifacts.head(key),
      });
      await ctx.store.put(['threads', ctx.threadId], 'last', { ref: await ctx.artifacts.put(`store value of ${ctx.threadId}`, { mediaType: 'application/json' }) });
      return { note: ref.id };
    })
    .edge(START, 'write')
    .edge('write', 'effect')
    .edge('effect', END)
    .compile({ engine, artifacts, ...(options.snapshotEvery ? { snapshotEvery: options.snapshotEvery } : {}) });
}

/** With grace 0, an artifact written in the same millisecond as the collector starts is still in grace: let a tick pass. */
const tick = () => new Promise((resolve) => setTimeout(resolve, 5));

async function ids(artifacts: MemoryArtifactStore): Promise<string[]> {
  const out: string[] = [];
  for await (const info of listArtifacts(artifacts, { allTenants: true })) out.push(info.ref.id);
  return out.sort();
}

const text = (s: string) => `sha256:${createHash('sha256').update(s).digest('hex')}`;

describe('collectArtifacts', () => {
  it('keeps what positions (set values and items), effect outcomes and store values refer to; collects the rest', async () => {
    const engine = memory();
    const artifacts = memoryArtifacts();
    await app(engine, artifacts).run({ thread: 't1' });
    const garbage = await artifacts.put('nobody refers to me', { mediaType: 'text/plain' });
    const before = await ids(artifacts);
    expect(before).toHaveLength(5);

    await tick();

    const report = await collectArtifacts({ checkpointer: engine.checkpointer, store: engine.store, ledger: engine.ledger, artifacts, graceMs: 0 });
    expect(report.victims.map((v) => [v.ref.id, v.reason])).toEqual([[garbage.id, 'unreferenced']]);
    expect(report.kept.referenced).toBe(4);
    expect(report.roots).toMatchObject({ threads: 1, releasedThreads: 0, storeItems: 1 });
    expect(await ids(artifacts)).toEqual(before.filter((id) => id !== garbage.id));
    // The blob went with its last ref.
    expect(report.sweep.blobs).toBe(1);
    await engine.close();
  });

  it('without the ledger and the store, what only they refer to is collected', async () => {
    const engine = memory();
    const artifacts = memoryArtifacts();
    await app(engine, artifacts).run({ thread: 't1' });
    await tick();
    const report = await collectArtifacts({ checkpointer: engine.checkpointer, artifacts, graceMs: 0, dryRun: true });
    // The effect's ref is also in state (note holds only its id): the ledger and the store keep two.
    expect(report.victims.map((v) => v.ref.id).sort()).toEqual(['key:upload-t1', text('store value of t1')].sort());
    await engine.close();
  });

  it('a dry run reports what would go and why, and deletes nothing', async () => {
    const engine = memory();
    const artifacts = memoryArtifacts();
    const a = await artifacts.put('a', { mediaType: 'text/plain' });
    const b = await artifacts.forTenant('acme').putNamed('b', 'b', { mediaType: 'text/plain' });
    await tick();
    const report = await collectArtifacts({ checkpointer: engine.checkpointer, artifacts, graceMs: 0, dryRun: true });
    expect(report.dryRun).toBe(true);
    expect(report.victims.map((v) => v.ref.id).sort()).toEqual([a.id, b.id].sort());
    expect(report.victims.find((v) => v.ref.id === b.id)?.tenant).toBe('acme');
    expect(await ids(artifacts)).toEqual([a.id, b.id].sort());
    await engine.close();
  });

  it('keeps artifacts younger than the grace period, whatever the roots say', async () => {
    const engine = memory();
    const artifacts = memoryArtifacts();
    const young = await artifacts.put('young', { mediaType: 'text/plain' });
    const old = await artifacts.put('old', { mediaType: 'text/plain' });
    artifacts.ageForTesting(old, Date.now() - 2 * 3_600_000);
    const report = await collectArtifacts({ checkpointer: engine.checkpointer, artifacts, graceMs: 3_600_000 });
    expect(report.victims.map((v) => v.ref.id)).toEqual([old.id]);
    expect(report.kept.inGrace).toBe(1);
    expect(await ids(artifacts)).toEqual([young.id]);
    await engine.close();
  });

  it('an old artifact handed out again (put of the same bytes, head) is young again', async () => {
    const engine = memory();
    const artifacts = memoryArtifacts();
    const reused = await artifacts.put('reused', { mediaType: 'text/plain' });
    const probed = await artifacts.putNamed('probed', 'probed', { mediaType: 'text/plain' });
    artifacts.ageForTesting(reused, Date.now() - 7_200_000);
    artifacts.ageForTesting(probed, Date.now() - 7_200_000);
    await artifacts.put('reused', { mediaType: 'text/plain' });
    await artifacts.head('probed');
    const report = await collectArtifacts({ checkpointer: engine.checkpointer, artifacts, graceMs: 3_600_000 });
    expect(report.victims).toEqual([]);
    await engine.close();
  });

  it('keeps refs held by snapshots and by every branch of a forked thread', async () => {
    const engine = memory();
    const artifacts = memoryArtifacts();
    const compiled = app(engine, artifacts, { snapshotEvery: 1 });
    await compiled.run({ thread: 'forked' });
    const other = await artifacts.put('only on the fork', { mediaType: 'text/plain' });
    await compiled.fork({ thread: 'forked', seq: 1, patch: { doc: other } });
    await tick();
    const report = await collectArtifacts({ checkpointer: engine.checkpointer, store: engine.store, ledger: engine.ledger, artifacts, graceMs: 0 });
    expect(report.victims).toEqual([]);
    expect(report.roots.snapshots).toBeGreaterThan(0);
    await engine.close();
  });

  it('pins in the store and pins passed in keep artifacts, over rules too; unpinning releases them', async () => {
    const engine = memory();
    const artifacts = memoryArtifacts();
    const held = await artifacts.put('legal hold', { mediaType: 'image/png' });
    const adHoc = await artifacts.put('ad hoc', { mediaType: 'text/plain' });
    await pinArtifact(engine.store, held, 'case 17');
    const rules = { artifacts: [{ mediaType: 'image/*', olderThanMs: 0 }] };
    await tick();
    const kept = await collectArtifacts({ checkpointer: engine.checkpointer, store: engine.store, artifacts, graceMs: 0, pins: [adHoc.id], retention: rules });
    expect(kept.victims).toEqual([]);
    expect(kept.kept.pinned).toBe(2);
    await unpinArtifact(engine.store, held);
    await tick();
    const gone = await collectArtifacts({ checkpointer: engine.checkpointer, store: engine.store, artifacts, graceMs: 0, retention: rules });
    expect(gone.victims.map((v) => v.ref.id).sort()).toEqual([held.id, adHoc.id].sort());
    await engine.close();
  });

  it('pin calls refuse what they cannot honour before writing: a misspelt thread option, options where the note goes, a ref that is not one', async () => {
    const engine = memory();
    const artifacts = memoryArtifacts();
    const held = await artifacts.put('legal hold', { mediaType: 'image/png' });
    await pinArtifact(engine.store, held, 'case 17');
    await pinArtifact(engine.store, held, 'while t1 lives', { thread: 't1' });
    const pins = async () => (await engine.store.list(PIN_NAMESPACE)).map((item) => item.key).sort();
    const before = await pins();
    expect(before).toHaveLength(2);
    const refused: [string, () => Promise<unknown>, string][] = [
      ['misspelt thread', () => pinArtifact(engine.store, held, 'n', { thred: 't2' } as never), 'ERR_INVALID_OPTION'],
      ['options as the note', () => pinArtifact(engine.store, held, { thread: 't2' } as never), 'ERR_INVALID_OPTION'],
      ['no ref', () => pinArtifact(engine.store, null as never), 'ERR_INVALID_OPTION'],
      ['an id where the ref goes', () => pinArtifact(engine.store, held.id as never), 'ERR_INVALID_OPTION'],
      ['a forged id', () => pinArtifact(engine.store, { ...held, id: 'sha256:../x' }), 'ERR_INVALID_KEY'],
      ['a thread id that is not one', () => pinArtifact(engine.store, held, 'n', { thread: 7 } as never), 'ERR_INVALID_KEY'],
      // Unpinning with a misspelt thread removed the global pin, the legal hold.
      ['unpin: misspelt thread', () => unpinArtifact(engine.store, held, { thred: 't1' } as never), 'ERR_INVALID_OPTION'],
      ['unpin: no ref', () => unpinArtifact(engine.store, undefined as never), 'ERR_INVALID_OPTION'],
      ['unpin: a forged id', () => unpinArtifact(engine.store, 'nope'), 'ERR_INVALID_KEY'],
    ];
    for (const [label, call, code] of refused) await expect(call(), label).rejects.toMatchObject({ code });
    expect(await pins()).toEqual(before);
    expect(await unpinArtifact(engine.store, held, { thread: 't1' })).toBe(true);
    expect(await unpinArtifact(engine.store, held.id)).toBe(true);
    expect(await pins()).toEqual([]);
    await engine.close();
  });

  it('thread rules release threads by status, tenant and age; artifact rules expire by media type even when referenced', async () => {
    const engine = memory();
    const artifacts = memoryArtifacts();
    await app(engine, artifacts).run({ thread: 'done-long-ago' });
    await app(engine, artifacts).run({ thread: 'acme-thread', tenant: 'acme' });
    const later = Date.now() + 40 * 86_400_000;

    // Completed threads not updated for 30 days are released: their artifacts go (tenant threads kept by the tenant filter).
    const released = await collectArtifacts({
      checkpointer: engine.checkpointer,
      artifacts,
      graceMs: 0,
      now: later,
      dryRun: true,
      retention: { threads: [{ status: 'completed', tenant: 'nobody', olderThanMs: 30 * 86_400_000 }] },
    });
    expect(released.roots.releasedThreads).toBe(0);
    await tick();
    const releasedAll = await collectArtifacts({ checkpointer: engine.checkpointer, artifacts, graceMs: 0, now: later, dryRun: true, retention: { threads: [{ status: 'completed', olderThanMs: 30 * 86_400_000 }] } });
    expect(releasedAll.roots.releasedThreads).toBe(2);
    expect(releasedAll.victims).toHaveLength(await ids(artifacts).then((l) => l.length));

    // Images expire after a day even though a position refers to them: the report says which position.
    for await (const info of listArtifacts(artifacts, { allTenants: true })) artifacts.ageForTesting(info.ref, Date.now() - 2 * 86_400_000);
    await tick();
    const expired = await collectArtifacts({ checkpointer: engine.checkpointer, store: engine.store, ledger: engine.ledger, artifacts, graceMs: 0, retention: { artifacts: [(parseRetentionRule('artifacts:mediaType=image/*,olderThan=1d') as { artifacts: ArtifactRetentionRule }).artifacts] } });
    expect(expired.victims.map((v) => [v.reason, v.ref.media_type, v.referencedBy?.thread]).sort()).toEqual([
      ['expired', 'image/png', 'acme-thread'],
      ['expired', 'image/png', 'done-long-ago'],
    ]);
    // Their refs now dangle, and verify names the thread and seq.
    const verify = await verifyArtifacts({ artifacts, checkpointer: engine.checkpointer, store: engine.store });
    expect(verify.ok).toBe(false);
    expect(verify.dangling.map((d) => [d.thread, d.seq, d.why]).sort()).toEqual([
      ['acme-thread', 1, 'missing'],
      ['done-long-ago', 1, 'missing'],
    ]);
    await engine.close();
  });

  it('keeps what only child runs refer to: a set value, a snapshot and an appended item in child namespaces', async () => {
    const engine = memory();
    const artifacts = memoryArtifacts();
    const inSet = await artifacts.put('set by a child run', { mediaType: 'text/plain' });
    const inSnapshot = await artifacts.put('in a child snapshot', { mediaType: 'text/plain' });
    const inItem = await artifacts.put('appended by a grandchild run', { mediaType: 'image/png' });
    const garbage = await artifacts.put('nobody refers to me', { mediaType: 'text/plain' });
    // The root refers to none of them; positions list no `artifacts`, so the grandchild's item is read as an item.
    await storeThread(engine.checkpointer, 't', [
      chain('', [{}, { body: { changes: { note: { set: 'root' } } } }]),
      chain('sub:0@1', [{}, { body: { changes: { doc: { set: inSet } } } }, { snapshot: { doc: inSnapshot } }]),
      chain('sub:0@1|deep:0@2', [{}, { append: { pages: [inItem] } }]),
    ]);
    await tick();

    const report = await collectArtifacts({ checkpointer: engine.checkpointer, artifacts, graceMs: 0 });
    expect(report.victims.map((v) => [v.ref.id, v.reason])).toEqual([[garbage.id, 'unreferenced']]);
    expect(report.kept.referenced).toBe(3);
    expect(report.roots).toMatchObject({ threads: 1, positions: 7, snapshots: 1, refs: 3 });
    expect(await ids(artifacts)).toEqual([inSet.id, inSnapshot.id, inItem.id].sort());
    await engine.close();
  });

  it('names the child namespace of a position still referring to an expired artifact, and of the ref left dangling', async () => {
    const engine = memory();
    const artifacts = memoryArtifacts();
    const image = await artifacts.put('a child run\'s image', { mediaType: 'image/png' });
    await storeThread(engine.checkpointer, 't', [chain('', [{}]), chain('sub:0@1', [{}, { body: { changes: { doc: { set: image } } } }])]);
    await tick();
    const report = await collectArtifacts({ checkpointer: engine.checkpointer, artifacts, graceMs: 0, retention: { artifacts: [{ mediaType: 'image/*', olderThanMs: 0 }] } });
    expect(report.victims).toMatchObject([{ ref: { id: image.id }, reason: 'expired', referencedBy: { thread: 't', ns: 'sub:0@1', seq: 1 } }]);
    const verify = await verifyArtifacts({ artifacts, checkpointer: engine.checkpointer });
    expect(verify.dangling).toEqual([{ ref: image, thread: 't', ns: 'sub:0@1', seq: 1, why: 'missing' }]);
    await engine.close();
  });

  it('refuses a tenant view and bad durations', async () => {
    const engine = memory();
    const artifacts = memoryArtifacts();
    await expect(collectArtifacts({ checkpointer: engine.checkpointer, artifacts: artifacts.forTenant('acme') })).rejects.toMatchObject({ code: 'ERR_INVALID_OPTION' });
    await expect(collectArtifacts({ checkpointer: engine.checkpointer, artifacts, grace: 'soon' })).rejects.toMatchObject({ code: 'ERR_INVALID_OPTION' });
    expect(() => parseRetentionRule('threads:status=done,olderThan=1d')).toThrow(/unknown status/);
    expect(() => parseRetentionRule('threads:status=completed')).toThrow(/olderThan/);
    expect(() => parseRetentionRule('blobs:olderThan=1d')).toThrow(/threads:/);
    expect(parseRetentionRule('threads:status=completed|failed,tenant=acme,olderThan=30d')).toEqual({ threads: { status: ['completed', 'failed'], tenant: 'acme', olderThanMs: 30 * 86_400_000 } });
    await expect(collectArtifacts({ checkpointer: engine.checkpointer, artifacts, graceMs: -1 })).rejects.toMatchObject({ code: 'ERR_INVALID_OPTION' });
    await expect(collectArtifacts({ checkpointer: engine.checkpointer, artifacts, graceMs: '1h' as unknown as number })).rejects.toMatchObject({ code: 'ERR_INVALID_OPTION' });
    await expect(collectArtifacts({ checkpointer: engine.checkpointer, artifacts, retention: { threads: [{ status: 'completed' }] } })).rejects.toThrow(/needs olderThanMs/);
    await engine.close();
  });

  it('still takes the deprecated grace and olderThan (ms or duration text)', async () => {
    const engine = memory();
    const artifacts = memoryArtifacts();
    const young = await artifacts.put('young', { mediaType: 'text/plain' });
    const kept = await collectArtifacts({ checkpointer: engine.checkpointer, artifacts, grace: '1h', dryRun: true });
    expect(kept.kept.inGrace).toBe(1);
    await tick();
    const expired = await collectArtifacts({ checkpointer: engine.checkpointer, artifacts, grace: 0, pins: [], retention: { artifacts: [{ olderThan: '0ms' }] }, dryRun: true });
    expect(expired.victims.map((v) => v.ref.id)).toEqual([young.id]);
    await engine.close();
  });
});

describe('verifyArtifacts', () => {
  it('re-hashes every artifact and reports corrupted ones, and the positions whose refs they break', async () => {
    const engine = memory();
    const artifacts = memoryArtifacts();
    await app(engine, artifacts).run({ thread: 'v1' });
    const clean = await verifyArtifacts({ artifacts, checkpointer: engine.checkpointer, store: engine.store });
    expect(clean).toMatchObject({ ok: true, checked: 4, corrupt: [], dangling: [] });
    expect(clean.refs).toBeGreaterThanOrEqual(3);

    const state = await app(engine, artifacts).getState({ thread: 'v1' });
    artifacts.corruptForTesting(state.doc!, new TextEncoder().encode('doc of v2'));
    const report = await verifyArtifacts({ artifacts, checkpointer: engine.checkpointer, store: engine.store });
    expect(report.corrupt.map((c) => [c.ref.id, c.code])).toEqual([[state.doc!.id, 'ERR_ARTIFACT_INTEGRITY']]);
    expect(report.dangling).toEqual([{ ref: state.doc, thread: 'v1', ns: '', seq: 1, why: 'corrupt' }]);

    // A ref whose artifact was deleted outright is missing; the store value's ref too.
    const item = await engine.store.get<{ ref: ArtifactRef }>(['threads', 'v1'], 'last');
    await artifacts.delete(item!.value.ref);
    const again = await verifyArtifacts({ artifacts, checkpointer: engine.checkpointer, store: engine.store });
    expect(again.dangling).toContainEqual({ ref: item!.value.ref, store: { namespace: ['threads', 'v1'], key: 'last' }, why: 'missing' });
    await engine.close();
  });
});

describe('keeping state small', () => {
  it('ctx.artifact turns a big tool output into an artifact and a ref, recorded once', async () => {
    const engine = memory();
    const artifacts = memoryArtifacts();
    const Big = defineState({ fields: { result: field.model(Ref.optional()), text: field.model(Ref.optional()) } });
    let calls = 0;
    const big = { rows: Array.from({ length: 20_000 }, (_, i) => ({ i, at: new Date(0), name: `row ${i}` })) };
    const compiled = graph(Big)
      .node('tool', async (_s, ctx) => ({
        result: await ctx.recordArtifact('search', () => (calls++, big)),
        text: await ctx.recordArtifact('page', () => 'x'.repeat(400_000), { mediaType: 'text/html' }),
      }))
      .edge(START, 'tool')
      .edge('tool', END)
      .compile({ engine, artifacts });
    const out = await compiled.run({ thread: 'big' });
    expect(calls).toBe(1);
    expect(out.state.result!.media_type).toBe(VALUE_MEDIA_TYPE);
    expect(out.state.text!.media_type).toBe('text/html');
    // Dates and structure survive the round trip.
    expect(await loadValue(artifacts, out.state.result!)).toEqual(big);
    expect(await loadValue(artifacts, out.state.text!)).toHaveLength(400_000);
    await engine.close();
  });

  it('a field over the limit is rejected with StateTooLargeError pointing to ctx.artifacts.put', async () => {
    const engine = memory();
    const Loose = defineState({ fields: { blob: field.model(z.string().optional()) } });
    const compiled = graph(Loose)
      .node('big', () => ({ blob: 'x'.repeat(300_000) }))
      .edge(START, 'big')
      .edge('big', END)
      .compile({ engine });
    await expect(compiled.run({ thread: 'too-big' })).rejects.toMatchObject({ code: 'ERR_STATE_TOO_LARGE', message: expect.stringContaining('ctx.artifacts.put') });
    await engine.close();
  });

  it('storeValue and loadValue round-trip strings, bytes and values', async () => {
    const artifacts = memoryArtifacts();
    expect(await loadValue(artifacts, await storeValue(artifacts, 'plain'))).toBe('plain');
    expect(await loadValue(artifacts, await storeValue(artifacts, new Uint8Array([1, 2])))).toEqual(new Uint8Array([1, 2]));
    expect(await loadValue(artifacts, await storeValue(artifacts, new Map([[1n, new Set(['a'])]])))).toEqual(new Map([[1n, new Set(['a'])]]));
    const named = await storeValue(artifacts, { a: 1 }, { key: 'results/1' });
    expect(named.id).toBe('key:results/1');
  });
});

describe('tenants in runs', () => {
  it("a tenant's thread writes artifacts as its tenant, and cannot read another tenant's", async () => {
    const engine = memory();
    const artifacts = memoryArtifacts();
    const foreign = await artifacts.forTenant('beta').put('beta secret', { mediaType: 'text/plain' });
    const S = defineState({ fields: { mine: field.model(Ref.optional()), peek: field.model(z.string().optional()) } });
    const compiled = graph(S)
      .node('write', async (_s, ctx) => ({ mine: await ctx.artifacts.put('acme data', { mediaType: 'text/plain' }) }))
      .node('peek', async (_s, ctx) => ({ peek: await ctx.artifacts.get(foreign).then(() => 'read it', (e: { code: string }) => e.code) }))
      .edge(START, 'write')
      .edge('write', 'peek')
      .edge('peek', END)
      .compile({ engine, artifacts });
    const out = await compiled.run({ thread: 'acme-run', tenant: 'acme' });
    expect(out.state.mine!.id).toMatch(/^tenant:acme\/sha256:/);
    expect(out.state.peek).toBe('ERR_ACCESS_DENIED');
    await engine.close();
  });
});
