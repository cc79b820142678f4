/**
 * @module runtime/events
 * What a run reports as it goes: every load, task, recorded output, effect
 * decision and commit. Pass `onEvent` to `compile()` or `run()` to observe them
 * (the demo prints them; `--json` prints them as JSON lines).
 */

import type { EffectMode } from './effects.js';

export type { EffectMode };

interface Base {
  threadId: string;
  /** Checkpoint namespace of a child run's events; absent for the thread's root graph. */
  ns?: string;
  /** ms since epoch. */
  at: number;
}

/** One thing a run did (loaded, started a step, recorded an output, committed, paused, failed…), as `compile({ onEvent })` and `run({ onEvent })` receive it. */
export type RunEvent = Base &
  (
    | { type: 'run.start'; runId: string; attempt: number; head: number | null; resumed: boolean }
    | { type: 'run.loaded'; seq: number; next: string[]; storedVersion: number }
    | { type: 'task.start'; node: string; task: string; seq: number; attempt: number }
    | { type: 'task.reused'; node: string; task: string; seq: number }
    | { type: 'task.failed'; node: string; task: string; attempt: number; error: string; willRetry: boolean }
    | { type: 'pending.saved'; node: string; task: string; seq: number }
    | { type: 'record.served' | 'record.stored'; node: string; key: string; name: string }
    | { type: 'effect.hit'; node: string; key: string; name: string }
    | { type: 'effect.intent'; node: string; key: string; name: string }
    | { type: 'effect.recover'; node: string; key: string; name: string; hasProbe: boolean; mode: EffectMode }
    | { type: 'effect.probe'; node: string; key: string; name: string; found: boolean }
    | { type: 'effect.run'; node: string; key: string; name: string; rerun: boolean }
    | { type: 'effect.outcome'; node: string; key: string; name: string; source: 'run' | 'probe' }
    /** A node stopped at `await ctx.interrupt(payload)`: the thread will be interrupted once the superstep stops. */
    | { type: 'interrupt'; node: string; task: string; key: string; payload: unknown }
    /** A node stopped at `ctx.sleep` / `ctx.waitFor`: the thread will be waiting (until `until`, or a signal `name`). */
    | { type: 'wait'; node: string; task: string; key: string; kind: 'sleep' | 'signal'; until: number | null; name?: string }
    /** A sleep woke, a wait received its signal or timed out. */
    | { type: 'wait.resolved'; node: string; task: string; key: string; kind: 'sleep' | 'signal'; result: 'woke' | 'received' | 'timedOut' }
    /** A queued signal a wait passed over: its payload failed the wait's schema. It stays queued. */
    | { type: 'signal.skipped'; node: string; name: string; id: number; reason: string }
    /** What a node emitted with `ctx.emit(data)` (model tokens, progress): not persisted. */
    | { type: 'custom'; node: string; task: string; seq: number; data: unknown }
    | { type: 'step.commit'; seq: number; step: number; nodes: string[]; next: string[]; hash: string; snapshot: boolean; status: string }
    | { type: 'run.end'; status: string; seq: number | null; error?: string }
  );


/** Receives every {@link RunEvent} of a run, synchronously, in order; what it throws is ignored. */
export type EventSink = (event: RunEvent) => void;
