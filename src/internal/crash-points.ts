/**
 * @module internal/crash-points
 * Named crash points at every durable boundary of the runtime and the engines.
 * They are inert unless the environment variable `CAIRN_CRASH_AT` names one;
 * then the process kills itself with SIGKILL at that point, exactly as a power
 * cut or an OOM kill would stop it. Crash tests and `cairn demo` use them.
 *
 * `CAIRN_CRASH_AT` = `<point>[:<node>][#<n>]`: crash at the n-th (default first)
 * time `<point>` is reached, counting only hits for `<node>` when one is given.
 *
 * @example `CAIRN_CRASH_AT=after-effect:put_object node app.js`
 */
import { writeSync } from 'node:fs';

/** Every crash point, in the order a step reaches them. */
export const CRASH_POINTS = [
  'after-record',
  'before-intent',
  'after-intent',
  'before-effect',
  // Inside an artifact write (often the effect itself): bytes half staged, staged
  // and synced, blob in place without a ref, ref written but not yet returned.
  'artifact-mid-stage',
  'artifact-after-stage',
  'artifact-after-blob',
  'artifact-after-ref',
  // Inside a collector's delete: the artifact set aside, not yet removed or restored.
  'artifact-gc-tomb',
  'after-effect',
  'before-outcome',
  'after-outcome',
  'after-pending-write',
  // A wait took its signal from the queue but has not recorded it; an interrupt's
  // answer, a wake-up or a received signal is recorded but the step not committed.
  'after-signal-taken',
  'after-wait-result',
  'before-commit',
  'inside-snapshot',
  'after-commit',
] as const;

export type CrashPoint = (typeof CRASH_POINTS)[number];

interface Armed {
  point: string;
  node: string | undefined;
  nth: number;
  hits: number;
}

let armed: Armed | null | undefined;

function parse(): Armed | null {
  const spec = process.env.CAIRN_CRASH_AT;
  if (!spec) return null;
  const match = /^([a-z-]+)(?::([^#]+))?(?:#(\d+))?$/.exec(spec.trim());
  if (!match || !(CRASH_POINTS as readonly string[]).includes(match[1]!)) {
    throw new Error(`[cairn] CAIRN_CRASH_AT="${spec}" is not <point>[:<node>][#<n>] with a point from: ${CRASH_POINTS.join(', ')}`);
  }
  return { point: match[1]!, node: match[2], nth: match[3] ? Number(match[3]) : 1, hits: 0 };
}

/** Kills the process here if `CAIRN_CRASH_AT` names this point (and node). Costs one comparison otherwise. */
export function crashPoint(point: CrashPoint, nodes?: string | readonly string[]): void {
  if (armed === undefined) armed = parse();
  if (armed === null || armed.point !== point) return;
  if (armed.node !== undefined) {
    const list = typeof nodes === 'string' ? [nodes] : (nodes ?? []);
    if (!list.includes(armed.node)) return;
  }
  armed.hits++;
  if (armed.hits !== armed.nth) return;
  writeSync(2, `[cairn] crash point ${point}${armed.node ? `:${armed.node}` : ''} reached: SIGKILL\n`);
  process.kill(process.pid, 'SIGKILL');
}
