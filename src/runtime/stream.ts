/**
 * @module runtime/stream
 * A run as an async iterable of its events: what `onEvent` receives (task start and
 * end, records, effects, commits, interrupts, waits) and what nodes emit with
 * `ctx.emit(data)` (model tokens, progress), each named by its thread, namespace and
 * the seq of the position it belongs to. Leaving the loop early cancels the run
 * between steps and releases the thread before the loop's exit completes.
 *
 * @example
 * ```ts
 * for await (const event of app.stream({ thread: 't1', input: { question } })) {
 *   if (event.type === 'custom') process.stdout.write(String(event.data));
 * }
 * ```
 */
import { RunCancelledError } from '../errors.js';
import type { EventSink, RunEvent } from './events.js';

/**
 * One event of a streamed run: a {@link RunEvent} with its namespace (`''` for the
 * root graph) and the seq of the position it belongs to: the position a step's
 * tasks started from, or the one a commit wrote; null before the thread's first.
 */
export type StreamEvent = Placed<RunEvent>;

/** Each event kind of the union, with its namespace and seq always present. */
type Placed<E> = E extends RunEvent ? Omit<E, 'ns' | 'seq'> & { ns: string; seq: number | null } : never;

/** A streamed run: iterate it for the events; `result` is how the run ended. */
export interface RunStream<R> extends AsyncIterable<StreamEvent> {
  /** The run's result, as `run()` would return it; rejects as `run()` would throw (RunCancelledError when the loop was left early). */
  readonly result: Promise<R>;
  /** Cancels the run between steps; resolves once it stopped and the thread is released. */
  cancel(): Promise<void>;
}

/** Why a stream's run was cancelled: its consumer left the loop or called `cancel()`. */
class StreamClosed extends Error {
  constructor() {
    super('the stream was closed by its consumer');
  }
}

/** Runs `start` with a sink and a signal, and hands its events to one consumer, in order. */
export function streamRun<R>(start: (sink: EventSink, signal: AbortSignal) => Promise<R>): RunStream<R> {
  const queue: StreamEvent[] = [];
  let wake: (() => void) | undefined;
  let finished = false;
  let failure: { error: unknown } | undefined;
  const controller = new AbortController();
  const seqs = new Map<string, number | null>();

  const sink: EventSink = (event) => {
    const ns = event.ns ?? '';
    queue.push({ ...event, ns, seq: seqOf(event, seqs, ns) } as StreamEvent);
    wake?.();
  };
  const result = start(sink, controller.signal);
  const settled = result.then(
    () => undefined,
    (error: unknown) => {
      // A cancellation the consumer asked for is how the stream ends, not an error of the loop.
      if (!(controller.signal.aborted && RunCancelledError.is(error))) failure = { error };
    },
  );
  settled.finally(() => {
    finished = true;
    wake?.();
  });
  result.catch(() => undefined);

  const cancel = async () => {
    if (!finished) controller.abort(new StreamClosed());
    await settled;
  };

  return {
    result,
    cancel,
    [Symbol.asyncIterator](): AsyncIterator<StreamEvent> {
      return {
        async next(): Promise<IteratorResult<StreamEvent>> {
          for (;;) {
            const event = queue.shift();
            if (event) return { value: event, done: false };
            if (finished) {
              if (failure) {
                const { error } = failure;
                failure = undefined;
                throw error;
              }
              return { value: undefined, done: true };
            }
            await new Promise<void>((resolve) => (wake = resolve));
            wake = undefined;
          }
        },
        async return(): Promise<IteratorResult<StreamEvent>> {
          await cancel();
          queue.length = 0;
          return { value: undefined, done: true };
        },
      };
    },
  };
}

/**
 * The seq an event belongs to: its own when it has one (a task's start, a commit), else
 * the one the namespace's latest such event named (records, effects and waits happen
 * inside the step that started there).
 */
function seqOf(event: RunEvent, seqs: Map<string, number | null>, ns: string): number | null {
  const own = 'seq' in event && typeof event.seq === 'number' ? event.seq : event.type === 'run.start' ? event.head : undefined;
  if (own !== undefined) {
    seqs.set(ns, own);
    return own;
  }
  return seqs.get(ns) ?? null;
}
