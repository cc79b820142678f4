/**
 * @module testing/parallel-example
 * A 21-superstep run with parallel nodes, for crash tests: each round `tick`
 * fans out to `left` and `right` (same superstep, each with a recorded output and
 * an effect), which join in `join`; seven rounds. Writes of the two parallel nodes
 * merge through an append field each and a custom reducer (`total`).
 */
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { z } from 'zod';
import type { Engine } from '../contracts/engine.js';
import type { App } from '../runtime/app.js';
import type { EventSink } from '../runtime/events.js';
import { END, START, graph } from '../runtime/builder.js';
import { field } from '../state/fields.js';
import { defineState } from '../state/schema.js';

/** State of the parallel example: a round counter and what each side appended. */
export const ParallelState = defineState({
  fields: {
    round: field.model(z.number(), { default: 0 }),
    left: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
    right: field.model(z.array(z.string()), { reduce: 'append', default: [] }),
    total: field.model(z.number(), { reduce: (current: number, add: number) => current + add, default: 0 }),
  },
});

/** Rounds the parallel example runs: each has two tasks in one superstep. */
export const PARALLEL_ROUNDS = 7;

/** The engine the parallel example runs on, and the file its effects append to. */
export interface ParallelExampleOptions {
  engine: Engine;
  /** File the effects append to: the "external system". Each effect key must appear once. */
  auditFile: string;
  onEvent?: EventSink;
  snapshotEvery?: number;
}

function auditHas(file: string, key: string): boolean {
  return existsSync(file) && readFileSync(file, 'utf8').split('\n').includes(key);
}

/**
 * A graph whose every superstep runs two tasks in parallel, each recording a value and
 * appending to a file through an effect: crash tests kill it and check every effect
 * key appears in the file exactly once.
 */
export function parallelExample(options: ParallelExampleOptions): App<typeof ParallelState> {
  const sideEffect = (side: string) => async (s: { round: number }, ctx: import('../runtime/task-scope.js').NodeContext) => {
    const value = await ctx.record(`${side}.compute`, () => `${side}${s.round}`);
    await ctx.effect(`${side}.write`, {
      run: (key) => {
        appendFileSync(options.auditFile, `${key}\n`);
        return key;
      },
      probe: (key) => (auditHas(options.auditFile, key) ? key : null),
    });
    return { [side]: [value], total: 1 } as { left?: string[]; right?: string[]; total: number };
  };
  return graph(ParallelState)
    .node('tick', (s) => ({ round: s.round + 1 }))
    .node('left', sideEffect('left'))
    .node('right', sideEffect('right'))
    .node('join', () => undefined)
    .edge(START, 'tick')
    .edge('tick', 'left')
    .edge('tick', 'right')
    .edge('left', 'join')
    .edge('right', 'join')
    .conditionalEdge('join', (s) => (s.round < PARALLEL_ROUNDS ? 'tick' : END))
    .compile({
      engine: options.engine,
      retry: { maxAttempts: 1 },
      ...(options.onEvent ? { onEvent: options.onEvent } : {}),
      ...(options.snapshotEvery ? { snapshotEvery: options.snapshotEvery } : {}),
    });
}
