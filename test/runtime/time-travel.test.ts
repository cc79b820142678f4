/**
 * Time travel: `history` lists positions newest first and
 * pages without gaps or overlaps; `stateAt` gives back every committed state;
 * `replay` re-executes from a position serving every recorded output and effect
 * outcome, calls nothing and writes nothing, and reports where changed code
 * diverges; `fork` starts a branch from any position (patch validated and merged
 * through the reducers as a write by an actor), leaves the old branch as it was,
 * and `run()` continues it; forks of forks make a tree that `history` shows and
 * `verify` accepts. Every test runs on memory and on SQLite.
 */
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import type { Engine } from '../../src/contracts/engine.js';
import { memoryArtifacts } from '../../src/artifacts/memory/index.js';
import { InvalidOptionError, PositionNotFoundError, StateValidationError } from '../../src/errors.js';
import { defineState } from '../../src/state/schema.js';
import { field } from '../../src/state/fields.js';
import { END, START, graph } from '../../src/runtime/builder.js';
import type { RunEvent } from '../../src/runtime/events.js';
import { caught, ENGINES, rawPositions, snapshots, useEngine } from './engines.js';

const Ref = z.object({ id: z.string(), sha256: z.string(), media_type: z.string(), size_bytes: z.number() });

const State = defineState({
  fields: {
    n: field.model(z.number().int().nonnegative(), { default: 0 }),
    limit: field.model(z.number().int(), { default: 6 }),
    note: field.model(z.string(), { default: 'A' }),
    trail: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
    doc: field.model(Ref.nullable(), { default: null }),
    at: field.runtime(z.number(), { compute: (rt) => rt.seq, default: -1 }),
  },
});
type S = { n: number; limit: number; note: string; trail: string[]; doc: z.infer<typeof Ref> | null; at: number };

interface LoopOptions {
  engine?: Engine;
  /** Name of the recorded call (changed code records another name). */
  recordName?: string;
  /** Changed code: the item the step appends. */
  item?: (s: S, word: string) => string;
  /** Changed code: stop after this n instead of `limit`. */
  stopAt?: number;
  /** Write an artifact ref into `doc` at this n. */
  artifactAt?: number;
  /** Call ctx.interrupt at this n. */
  interruptAt?: number;
  onEvent?: (event: RunEvent) => void;
}

/** The item a step appends in the original code. */
const ITEM = (s: S, word: string) => `${s.note}:${s.n}:${word}`;

describe.each(ENGINES)('time travel on %s', (name) => {
  const ctx = useEngine(name);

  /**
   * START -> step (loops while n < limit) -> END. Each step records a word and runs an
   * effect, counting every real call, and reports the state it saw (keyed by the seq it started from).
   */
  function loopApp(options: LoopOptions = {}) {
    const calls = { record: 0, effect: 0, node: 0 };
    const seen = new Map<number, S>();
    const app = graph(State)
      .node('step', async (s, c) => {
        calls.node++;
        seen.set(c.seq, structuredClone({ ...s }) as S);
        const word = await c.record(options.recordName ?? 'llm', () => {
          calls.record++;
          return `w${s.n}`;
        });
        await c.effect('send', {
          args: { n: s.n },
          run: (key) => {
            calls.effect++;
            return { key, n: s.n };
          },
        });
        if (s.n === options.interruptAt) c.interruptAfter({ atN: s.n });
        const doc = s.n === options.artifactAt ? { doc: await c.artifacts.put(`document ${s.n}`, { mediaType: 'text/plain' }) } : {};
        return { n: s.n + 1, trail: [(options.item ?? ITEM)(s as S, word)], ...doc };
      })
      .edge(START, 'step')
      .conditionalEdge('step', (s) => (s.n < (options.stopAt ?? s.limit) ? 'step' : END))
      .compile({
        engine: options.engine ?? ctx.engine,
        artifacts: memoryArtifacts(),
        snapshotEvery: 5,
        retry: { maxAttempts: 1 },
        ...(options.onEvent ? { onEvent: options.onEvent } : {}),
      });
    return { app, calls, seen };
  }

  /** What must not change: every row, the ledger, the thread record, the snapshots. */
  async function footprint(thread: string) {
    const engine = ctx.engine;
    return {
      positions: await rawPositions(engine, thread),
      ledger: await engine.ledger.list(thread),
      thread: await engine.checkpointer.getThread(thread),
      snapshots: await snapshots(engine, thread),
    };
  }

  /** The states of a linear run of the loop, by seq, as the original code computes them. */
  function linearModel(limit: number, initial: Partial<S> = {}): S[] {
    const states: S[] = [{ n: 0, limit, note: 'A', trail: [], doc: null, at: 0, ...initial }];
    while (states.at(-1)!.n < limit) {
      const s = states.at(-1)!;
      states.push({ ...s, n: s.n + 1, trail: [...s.trail, ITEM(s, `w${s.n}`)], at: states.length });
    }
    return states;
  }

  describe('history', () => {
    /**
     * A 30-position thread: input, 28 steps, one interrupt at n = 10 (answered by a
     * resume position), one artifact ref written at n = 2.
     */
    async function thirtyPositions(onEvent?: (event: RunEvent) => void) {
      const loop = loopApp({ interruptAt: 10, artifactAt: 2, ...(onEvent ? { onEvent } : {}) });
      const interrupted = await loop.app.run({ thread: 't', input: { limit: 28 } });
      expect(interrupted.status).toBe('interrupted');
      const result = await loop.app.resume({ thread: 't', input: { note: 'H', trail: ['human'] }, actor: 'alice' });
      expect(result.status).toBe('completed');
      expect(result.seq).toBe(29);
      return { ...loop, interrupted, result };
    }

    it('lists every position newest first with seq, parent, step, nodes, kind, changes, records, effects, artifacts, interrupts and actor', async () => {
      const { app, interrupted, result } = await thirtyPositions();
      const all = await app.history({ thread: 't' });
      expect(all.map((p) => p.seq)).toEqual(Array.from({ length: 30 }, (_, i) => 29 - i));
      for (const p of all) {
        expect(p.parent).toBe(p.seq === 0 ? null : p.seq - 1);
        expect(p.step).toBe(p.seq);
        expect(p.hash).toMatch(/^[0-9a-f]{64}$/);
        expect(p.schemaVersion).toBe(State.version);
        expect(typeof p.createdAt).toBe('number');
      }
      const bySeq = new Map(all.map((p) => [p.seq, p]));

      expect(bySeq.get(0)).toMatchObject({ kind: 'input', nodes: [], next: ['step'], records: [], effects: [], artifacts: [], interrupts: [] });
      expect(bySeq.get(0)!.changes).toMatchObject({ limit: 'set' });

      const plain = bySeq.get(5)!;
      expect(plain).toMatchObject({ kind: 'step', nodes: ['step'], next: ['step'], artifacts: [], interrupts: [] });
      expect(plain.changes).toEqual({ n: 'set', trail: 'append:1', at: 'set' });
      expect(plain.records.map((r) => r.name)).toEqual(['llm']);
      expect(plain.effects.map((r) => r.name)).toEqual(['send']);
      expect(plain.actor).toBeUndefined();

      // n = 2 ran from seq 2 and committed seq 3: it wrote the artifact ref.
      const withDoc = bySeq.get(3)!;
      expect(withDoc.changes).toMatchObject({ doc: 'set' });
      expect(withDoc.artifacts).toEqual([result.state.doc]);
      expect(result.state.doc).toMatchObject({ media_type: 'text/plain' });

      // n = 10 ran from seq 10 and committed seq 11 with the interrupt pending; seq 12 answered it.
      expect(bySeq.get(11)).toMatchObject({ kind: 'step', interrupts: interrupted.interrupts });
      expect(interrupted.interrupts).toHaveLength(1);
      expect(bySeq.get(12)).toMatchObject({ kind: 'resume', actor: 'alice', nodes: [], interrupts: [], records: [], effects: [] });
      expect(bySeq.get(12)!.changes).toMatchObject({ note: 'set', trail: 'append:1' });
      expect(bySeq.get(29)).toMatchObject({ kind: 'step', next: [] });
    });

    it('pages backwards with beforeSeq and limit: for any page size, the pages join to the full history with no gap and no overlap', async () => {
      const { app } = await thirtyPositions();
      const all = await app.history({ thread: 't' });
      for (const limit of [1, 2, 3, 7, 10, 29, 30, 31, 100]) {
        const pages: (typeof all)[] = [];
        let beforeSeq: number | undefined;
        for (let guard = 0; guard < 100; guard++) {
          const page = await app.history({ thread: 't', ...(beforeSeq !== undefined ? { beforeSeq } : {}), limit });
          if (page.length === 0) break;
          expect(page.length).toBeLessThanOrEqual(limit);
          pages.push(page);
          beforeSeq = page.at(-1)!.seq;
          if (page.length < limit) break;
        }
        const joined = pages.flat();
        expect(joined.map((p) => p.seq), `limit ${limit}`).toEqual(all.map((p) => p.seq));
        expect(joined).toEqual(all);
        expect(pages).toHaveLength(Math.ceil(30 / limit));
      }
      expect((await app.history({ thread: 't', beforeSeq: 10 })).map((p) => p.seq)).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
      expect((await app.history({ thread: 't', beforeSeq: 0 }))).toEqual([]);
      expect((await app.history({ thread: 't', beforeSeq: 1000, limit: 2 })).map((p) => p.seq)).toEqual([29, 28]);
    });

    it('stateAt of every seq equals the state committed there (step.commit events, the states nodes saw, the run results)', async () => {
      const commits: Extract<RunEvent, { type: 'step.commit' }>[] = [];
      const { app, seen, interrupted, result } = await thirtyPositions((e) => {
        if (e.type === 'step.commit') commits.push(e);
      });
      expect(commits.map((c) => c.seq)).toEqual(Array.from({ length: 30 }, (_, i) => i));

      // The model: the loop with the resume's answer merged at seq 12.
      const doc = result.state.doc;
      const model: S[] = [{ n: 0, limit: 28, note: 'A', trail: [], doc: null, at: 0 }];
      for (let seq = 1; seq < 30; seq++) {
        const s = model[seq - 1]!;
        if (seq === 12) model.push({ ...s, note: 'H', trail: [...s.trail, 'human'], at: seq });
        else model.push({ ...s, n: s.n + 1, trail: [...s.trail, ITEM(s, `w${s.n}`)], doc: s.n === 2 ? doc : s.doc, at: seq });
      }
      const history = new Map((await app.history({ thread: 't' })).map((p) => [p.seq, p]));
      for (const commit of commits) {
        const at = await app.stateAt({ thread: 't', seq: commit.seq });
        expect(at, `stateAt ${commit.seq}`).toEqual(model[commit.seq]);
        expect(history.get(commit.seq)).toMatchObject({ step: commit.step, nodes: commit.nodes, next: commit.next, hash: commit.hash });
        if (seen.has(commit.seq)) expect(seen.get(commit.seq), `state seen from ${commit.seq}`).toEqual(at);
      }
      expect(seen.size).toBe(28);
      expect(await app.stateAt({ thread: 't', seq: interrupted.seq })).toEqual(interrupted.state);
      expect(await app.stateAt({ thread: 't', seq: result.seq })).toEqual(result.state);
      expect(commits.filter((c) => c.status === 'interrupted').map((c) => c.seq)).toEqual([11]);
    });
  });

  describe('replay', () => {
    it('replays a 20-step thread from its first position: every step the same, byte for byte, calling no recorded function and no effect, writing nothing', async () => {
      const { app, calls } = loopApp();
      const result = await app.run({ thread: 't', input: { limit: 20 } });
      expect(result.seq).toBe(20);
      expect(calls).toEqual({ record: 20, effect: 20, node: 20 });
      const before = await footprint('t');

      const report = await app.replay({ thread: 't', from: 0 });
      expect(report).toMatchObject({ threadId: 't', from: 0, to: 20, sameStates: true });
      expect(report.steps.map((s) => s.seq)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
      for (const step of report.steps) {
        expect(step, `seq ${step.seq}`).toMatchObject({ parent: step.seq - 1, kind: 'step', nodes: ['step'], replayed: true, same: true, differences: [], divergences: [] });
      }
      // The node code ran again (that is the replay), but nothing it wraps was called.
      expect(calls).toEqual({ record: 20, effect: 20, node: 40 });
      expect(await footprint('t')).toEqual(before);
    });

    it('replays from a middle position, and a middle range with `to`', async () => {
      const { app, calls } = loopApp();
      await app.run({ thread: 't', input: { limit: 20 } });
      const before = await footprint('t');

      const tail = await app.replay({ thread: 't', from: 10 });
      expect(tail.sameStates).toBe(true);
      expect(tail.steps.map((s) => s.seq)).toEqual([11, 12, 13, 14, 15, 16, 17, 18, 19, 20]);
      expect(tail.steps.every((s) => s.same && s.replayed)).toBe(true);

      const middle = await app.replay({ thread: 't', from: 5, to: 12 });
      expect(middle).toMatchObject({ from: 5, to: 12, sameStates: true });
      expect(middle.steps.map((s) => s.seq)).toEqual([6, 7, 8, 9, 10, 11, 12]);

      const empty = await app.replay({ thread: 't', from: 20 });
      expect(empty).toMatchObject({ from: 20, to: 20, steps: [], sameStates: true });

      expect(calls).toMatchObject({ record: 20, effect: 20 });
      expect(await footprint('t')).toEqual(before);
    });

    it('replays across an interrupt and its resume: the stored answer is applied, the steps around it re-execute the same', async () => {
      const { app, calls } = loopApp({ interruptAt: 4 });
      await app.run({ thread: 't', input: { limit: 8 } });
      const done = await app.resume({ thread: 't', input: { trail: ['answer'], note: 'R' }, actor: 'r' });
      expect(done.status).toBe('completed');
      const before = await footprint('t');
      const report = await app.replay({ thread: 't', from: 0 });
      expect(report.sameStates).toBe(true);
      expect(report.steps.map((s) => [s.seq, s.kind, s.replayed])).toEqual([
        [1, 'step', true], [2, 'step', true], [3, 'step', true], [4, 'step', true], [5, 'step', true],
        [6, 'resume', false],
        [7, 'step', true], [8, 'step', true], [9, 'step', true],
      ]);
      expect(calls).toMatchObject({ record: 8, effect: 8 });
      expect(await footprint('t')).toEqual(before);
    });

    it('changed code recording another name: every re-executed step diverges at call 0, nothing is called, nothing written', async () => {
      const { app } = loopApp();
      await app.run({ thread: 't', input: { limit: 20 } });
      const before = await footprint('t');

      const changed = loopApp({ recordName: 'llm-v2' });
      const report = await changed.app.replay({ thread: 't', from: 0 });
      expect(report.sameStates).toBe(false);
      expect(report.steps).toHaveLength(20);
      const first = report.steps[0]!;
      expect(first).toMatchObject({ seq: 1, same: false });
      expect(first.divergences).toEqual([{ node: 'step', call: 0, name: 'llm-v2', kind: 'other-call', reason: expect.stringContaining('"llm"') }]);
      expect(report.steps.every((s) => !s.same && s.divergences.length === 1)).toBe(true);
      expect(changed.calls).toMatchObject({ record: 0, effect: 0 });
      expect(await footprint('t')).toEqual(before);
    });

    it('changed code writing something else from n = 12: the steps before are the same, the diverging step names the differing field', async () => {
      const { app } = loopApp();
      await app.run({ thread: 't', input: { limit: 20 } });
      const before = await footprint('t');

      const changed = loopApp({ item: (s, word) => (s.n >= 12 ? `${s.note}:${s.n}:${word}:v2` : ITEM(s, word)) });
      const report = await changed.app.replay({ thread: 't', from: 0 });
      expect(report.sameStates).toBe(false);
      const firstDiff = report.steps.find((s) => !s.same)!;
      // n = 12 is computed from seq 12 and stored at seq 13.
      expect(firstDiff).toMatchObject({ seq: 13, parent: 12, replayed: true, differences: ['trail'], divergences: [] });
      expect(report.steps.filter((s) => s.seq < 13).every((s) => s.same)).toBe(true);
      expect(report.steps.filter((s) => s.seq >= 13).every((s) => !s.same && s.differences.join() === 'trail')).toBe(true);
      expect(changed.calls).toMatchObject({ record: 0, effect: 0 });
      expect(await footprint('t')).toEqual(before);
    });

    it('changed control flow is reported as a divergence on "next"', async () => {
      const { app } = loopApp();
      await app.run({ thread: 't', input: { limit: 10 } });
      const changed = loopApp({ stopAt: 5 });
      const report = await changed.app.replay({ thread: 't', from: 0 });
      expect(report.sameStates).toBe(false);
      const diverged = report.steps.find((s) => !s.same)!;
      expect(diverged.seq).toBe(5);
      expect(diverged.divergences).toEqual([expect.objectContaining({ name: 'next' })]);
      expect(diverged.differences).toEqual([]);
      expect(changed.calls).toMatchObject({ record: 0, effect: 0 });
    });
  });

  describe('fork', () => {
    it('forks from a position: the new position\'s parent is that seq, it becomes the head, the patch is merged through the reducers; the old branch is unchanged', async () => {
      const { app } = loopApp();
      const original = await app.run({ thread: 't' });
      expect(original.seq).toBe(6);
      const model = linearModel(6);
      const oldStates = await Promise.all(model.map((_, seq) => app.stateAt({ thread: 't', seq })));
      expect(oldStates).toEqual(model);

      const fork = await app.fork({ thread: 't', seq: 3, patch: { trail: ['patched'], note: 'B' }, actor: 'bob' });
      expect(fork.seq).toBe(7);
      expect(fork.status).toBe('running');
      expect(fork.interrupts).toEqual([]);
      const atFork = { ...model[3]!, note: 'B', trail: [...model[3]!.trail, 'patched'], at: 7 };
      expect(fork.state).toEqual(atFork);
      expect(await app.stateAt({ thread: 't', seq: 7 })).toEqual(atFork);
      expect(await app.getThread({ thread: 't' })).toMatchObject({ head: 7, status: 'running' });
      expect(await app.getState({ thread: 't' })).toEqual(atFork);

      const [head] = await app.history({ thread: 't', limit: 1 });
      expect(head).toMatchObject({ seq: 7, parent: 3, kind: 'fork', actor: 'bob', nodes: [], next: ['step'] });
      expect(Object.keys(head!.changes).sort()).toEqual(['at', 'note', 'trail']);
      for (let seq = 0; seq <= 6; seq++) expect(await app.stateAt({ thread: 't', seq }), `old branch at ${seq}`).toEqual(model[seq]);
      expect((await app.verify({ thread: 't' })).ok).toBe(true);
    });

    it('run() continues a fork to END; the fork sees the origin\'s items + the patch, never the old branch\'s later items', async () => {
      const { app, calls } = loopApp();
      await app.run({ thread: 't' });
      await app.fork({ thread: 't', seq: 3, patch: { trail: ['patched'], note: 'B' }, actor: 'bob' });
      const done = await app.run({ thread: 't' });
      expect(done.status).toBe('completed');
      expect(done.seq).toBe(10);
      expect(done.state.trail).toEqual(['A:0:w0', 'A:1:w1', 'A:2:w2', 'patched', 'B:3:w3', 'B:4:w4', 'B:5:w5']);
      expect(done.state).toMatchObject({ n: 6, note: 'B', at: 10 });
      // The fork's steps are new steps (new positions): their calls are made, not served from the old branch.
      expect(calls).toMatchObject({ record: 9, effect: 9 });

      const history = await app.history({ thread: 't' });
      expect(history.map((p) => [p.seq, p.parent])).toEqual([
        [10, 9], [9, 8], [8, 7], [7, 3], [6, 5], [5, 4], [4, 3], [3, 2], [2, 1], [1, 0], [0, null],
      ]);
      expect((await app.stateAt({ thread: 't', seq: 6 })).trail).toEqual(['A:0:w0', 'A:1:w1', 'A:2:w2', 'A:3:w3', 'A:4:w4', 'A:5:w5']);
      expect((await app.stateAt({ thread: 't', seq: 8 })).trail).toEqual(['A:0:w0', 'A:1:w1', 'A:2:w2', 'patched', 'B:3:w3']);
      expect((await app.verify({ thread: 't' })).ok).toBe(true);
    });

    it('an invalid patch is StateValidationError and writes nothing; a fork from a missing seq is PositionNotFoundError', async () => {
      const { app } = loopApp();
      await app.run({ thread: 't' });
      const before = await footprint('t');
      const invalid = await caught(() => app.fork({ thread: 't', seq: 3, patch: { n: -1 }, actor: 'bob' }));
      expect(StateValidationError.is(invalid)).toBe(true);
      const wrongType = await caught(() => app.fork({ thread: 't', seq: 3, patch: { trail: [7 as unknown as string] } }));
      expect(StateValidationError.is(wrongType)).toBe(true);
      const missing = await caught(() => app.fork({ thread: 't', seq: 99 }));
      expect(PositionNotFoundError.is(missing)).toBe(true);
      const after = await footprint('t');
      expect(after.positions).toEqual(before.positions);
      expect(after.snapshots).toEqual(before.snapshots);
      expect(after.ledger).toEqual(before.ledger);
      expect(after.thread).toMatchObject({ head: before.thread!.head, status: before.thread!.status, attempts: before.thread!.attempts });
    });

    it('a fork without a patch, as actor "fork" by default; a fork of the end position is completed', async () => {
      const { app } = loopApp();
      await app.run({ thread: 't' });
      const copy = await app.fork({ thread: 't', seq: 2 });
      expect(copy.status).toBe('running');
      expect(copy.state).toEqual({ ...linearModel(6)[2]!, at: 7 });
      expect((await app.history({ thread: 't', limit: 1 }))[0]).toMatchObject({ parent: 2, kind: 'fork', actor: 'fork' });
      const end = await app.fork({ thread: 't', seq: 6, patch: { note: 'Z' } });
      expect(end.status).toBe('completed');
      expect(await app.getThread({ thread: 't' })).toMatchObject({ status: 'completed', head: 8 });
      const again = await app.run({ thread: 't' });
      expect(again).toMatchObject({ status: 'completed', seq: 8 });
      expect(again.state).toMatchObject({ n: 6, note: 'Z' });
    });

    it('a fork of an interrupted position inherits its pending interrupt; resume answers it on the fork', async () => {
      const { app } = loopApp({ interruptAt: 2 });
      const paused = await app.run({ thread: 't' });
      expect(paused.seq).toBe(3);
      await app.resume({ thread: 't', input: { trail: ['first answer'] } });
      expect((await app.getThread({ thread: 't' }))?.status).toBe('completed');

      const fork = await app.fork({ thread: 't', seq: 3, patch: { note: 'F' }, actor: 'eve' });
      expect(fork.status).toBe('interrupted');
      expect(fork.interrupts).toEqual(paused.interrupts);
      expect(await app.getThread({ thread: 't' })).toMatchObject({ status: 'interrupted', head: fork.seq });
      const done = await app.resume({ thread: 't', input: { trail: ['second answer'] }, actor: 'eve' });
      expect(done.status).toBe('completed');
      expect(done.state.trail).toEqual(['A:0:w0', 'A:1:w1', 'A:2:w2', 'second answer', 'F:3:w3', 'F:4:w4', 'F:5:w5']);
      expect((await app.verify({ thread: 't' })).ok).toBe(true);
    });

    it('a fork from before the interrupt leaves the pending interrupt behind on the old branch: the thread runs on from the fork', async () => {
      const { app } = loopApp({ interruptAt: 4 });
      const paused = await app.run({ thread: 't' });
      expect(paused.status).toBe('interrupted');
      const fork = await app.fork({ thread: 't', seq: 2, patch: { note: 'G' } });
      expect(fork.status).toBe('running');
      expect(fork.interrupts).toEqual([]);
      expect(await app.getThread({ thread: 't' })).toMatchObject({ status: 'running', head: fork.seq });
      const refused = await caught(() => app.resume({ thread: 't', input: { trail: ['late'] } }));
      expect(refused.code).toBe('ERR_NOT_INTERRUPTED');
      // The fork's own run reaches n = 4 again and interrupts there: a new interrupt, with a new id.
      const again = await app.run({ thread: 't' });
      expect(again.status).toBe('interrupted');
      expect(again.interrupts[0]!.id).not.toBe(paused.interrupts[0]!.id);
      const done = await app.resume({ thread: 't' });
      expect(done.state.trail).toEqual(['A:0:w0', 'A:1:w1', 'G:2:w2', 'G:3:w3', 'G:4:w4', 'G:5:w5']);
      expect((await app.stateAt({ thread: 't', seq: paused.seq })).trail).toEqual(['A:0:w0', 'A:1:w1', 'A:2:w2', 'A:3:w3', 'A:4:w4']);
    });

    it('a fork of a failed thread leaves the failure on the old branch: the thread is running with no lastError, and its attempts still tell the failure', async () => {
      const app = graph(State)
        .node('step', (s) => {
          if (s.note === 'A' && s.n === 2) throw new Error('model refused');
          return { n: s.n + 1, trail: [`${s.note}${s.n}`] };
        })
        .edge(START, 'step')
        .conditionalEdge('step', (s) => (s.n < 3 ? 'step' : END))
        .compile({ engine: ctx.engine, retry: { maxAttempts: 1 } });
      await expect(app.run({ thread: 't' })).rejects.toMatchObject({ code: 'ERR_NODE_FAILED' });
      expect(await app.getThread({ thread: 't' })).toMatchObject({ status: 'failed', lastError: { code: 'ERR_NODE_FAILED' } });

      const fork = await app.fork({ thread: 't', seq: 2, patch: { note: 'B' } });
      expect(fork.status).toBe('running');
      // What lastError says (the last failure, of a failed or needs_attention thread) no longer holds on the new branch.
      expect(await app.getThread({ thread: 't' })).toMatchObject({ status: 'running', head: fork.seq, lastError: null });
      expect((await app.attempts({ thread: 't' })).attempts[0]).toMatchObject({ outcome: 'failed', error: { message: 'model refused' } });
      const done = await app.run({ thread: 't' });
      expect(done.state.trail).toEqual(['A0', 'A1', 'B2']);
    });

    it('a fork from the position that answered an interruptBefore continues like the origin did: the node runs, no new pause', async () => {
      let gated = 0;
      const app = graph(State)
        .node('prepare', () => ({ trail: ['prepared'] }))
        .node('gated', () => (gated++, { trail: ['gated'] }), { interruptBefore: true })
        .edge(START, 'prepare')
        .edge('prepare', 'gated')
        .edge('gated', END)
        .compile({ engine: ctx.engine });
      await app.run({ thread: 't' });
      const answered = await app.resume({ thread: 't', input: { note: 'yes' } });
      expect(answered.status).toBe('completed');
      expect(gated).toBe(1);
      const resumeSeq = (await app.history({ thread: 't' })).find((p) => p.kind === 'resume')!.seq;

      const fork = await app.fork({ thread: 't', seq: resumeSeq, patch: { trail: ['forked'] } });
      expect(fork.status).toBe('running');
      const done = await app.run({ thread: 't' });
      expect({ status: done.status, gated, interrupts: done.interrupts }).toEqual({ status: 'completed', gated: 2, interrupts: [] });
      expect(done.state.trail).toEqual(['prepared', 'forked', 'gated']);
    });

    it('forks of forks and a fork from the old branch make a tree: history shows the parents, every branch reads right, replay follows each branch, verify is ok', async () => {
      const { app } = loopApp();
      await app.run({ thread: 't' }); // A: 0..6
      await app.fork({ thread: 't', seq: 3, patch: { note: 'B', trail: ['b'] }, actor: 'b' }); // 7
      await app.run({ thread: 't' }); // 8, 9, 10
      await app.fork({ thread: 't', seq: 8, patch: { note: 'C', trail: ['c'] }, actor: 'c' }); // 11: a fork of the fork
      await app.run({ thread: 't' }); // 12, 13
      await app.fork({ thread: 't', seq: 2, patch: { note: 'D', trail: ['d'] }, actor: 'd' }); // 14: from the old branch
      const last = await app.run({ thread: 't' }); // 15..18
      expect(last.seq).toBe(18);

      const history = await app.history({ thread: 't' });
      const parents = Object.fromEntries(history.map((p) => [p.seq, p.parent]));
      expect(parents).toEqual({
        0: null, 1: 0, 2: 1, 3: 2, 4: 3, 5: 4, 6: 5,
        7: 3, 8: 7, 9: 8, 10: 9,
        11: 8, 12: 11, 13: 12,
        14: 2, 15: 14, 16: 15, 17: 16, 18: 17,
      });
      const forks = history.filter((p) => p.kind === 'fork').map((p) => [p.seq, p.parent, p.actor]);
      expect(forks).toEqual([[14, 2, 'd'], [11, 8, 'c'], [7, 3, 'b']]);

      // The model, walked along the parents: a fork applies its patch, a step runs the loop.
      const patches: Record<number, { note: string; item: string }> = { 7: { note: 'B', item: 'b' }, 11: { note: 'C', item: 'c' }, 14: { note: 'D', item: 'd' } };
      const model = new Map<number, S>([[0, linearModel(6)[0]!]]);
      for (const p of [...history].reverse().slice(1)) {
        const s = model.get(p.parent!)!;
        const patch = patches[p.seq];
        model.set(p.seq, patch
          ? { ...s, note: patch.note, trail: [...s.trail, patch.item], at: p.seq }
          : { ...s, n: s.n + 1, trail: [...s.trail, ITEM(s, `w${s.n}`)], at: p.seq });
      }
      for (const [seq, expected] of model) expect(await app.stateAt({ thread: 't', seq }), `stateAt ${seq}`).toEqual(expected);
      expect((await app.stateAt({ thread: 't', seq: 6 })).trail).toEqual(['A:0:w0', 'A:1:w1', 'A:2:w2', 'A:3:w3', 'A:4:w4', 'A:5:w5']);
      expect((await app.stateAt({ thread: 't', seq: 10 })).trail).toEqual(['A:0:w0', 'A:1:w1', 'A:2:w2', 'b', 'B:3:w3', 'B:4:w4', 'B:5:w5']);
      expect((await app.stateAt({ thread: 't', seq: 13 })).trail).toEqual(['A:0:w0', 'A:1:w1', 'A:2:w2', 'b', 'B:3:w3', 'c', 'C:4:w4', 'C:5:w5']);
      expect((await app.stateAt({ thread: 't', seq: 18 })).trail).toEqual(['A:0:w0', 'A:1:w1', 'd', 'D:2:w2', 'D:3:w3', 'D:4:w4', 'D:5:w5']);

      const report = await app.verify({ thread: 't' });
      expect(report.ok, JSON.stringify(report.problems)).toBe(true);

      // Replay follows one branch back to the root, through the fork positions.
      for (const leaf of [6, 10, 13, 18]) {
        const replay = await app.replay({ thread: 't', from: 0, to: leaf });
        expect(replay.sameStates, `replay to ${leaf}`).toBe(true);
      }
      expect((await app.replay({ thread: 't', from: 0, to: 13 })).steps.map((s) => s.seq)).toEqual([1, 2, 3, 7, 8, 11, 12, 13]);
      const offBranch = await caught(() => app.replay({ thread: 't', from: 5, to: 13 }));
      expect(offBranch.message).toContain('not on the branch');
      // A from and a to that name no branch are the caller's options, refused as such.
      expect(InvalidOptionError.is(offBranch), offBranch.message).toBe(true);
      expect((await caught(() => app.replay({ thread: 't', from: 7 }))).code).toBe('ERR_INVALID_OPTION'); // the head, 18, is on the branch of 14
    });
  });
});
