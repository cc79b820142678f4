/**
 * @module ai-sdk/tools
 * AI SDK tools whose results are part of the run: {@link recordedTools} makes each
 * tool's result a recorded output (kind `tool`), served on re-execution instead of
 * calling the tool again; {@link effectTool} makes a tool with side effects a cairn
 * effect (an intent before it runs, an outcome after, a key, an optional probe), so a
 * crash between the two is recovered by the side-effect invariant, never by running
 * the tool twice blind. Outside a cairn node both call the tool as it is.
 *
 * A tool's result is keyed by its call's position among the node's calls, like every
 * record: the model call that asked for it is served, so it asks for the same tools
 * with the same input in the same order. Tools the model asks for in one step run
 * concurrently and take their indices in the order the model listed them.
 *
 * A recorded tool that throws has its error recorded (name and message) and thrown
 * again on re-execution: the AI SDK hands a tool's error to the model as a message,
 * and the served model call that follows answered that error, so calling the tool
 * again would give the loop a result the rest of the step never saw. A node that
 * throws discards its records as always, so its retry calls the tool again.
 *
 * Some errors are not the tool's answer, and must not reach the model: the AI SDK's
 * loop catches whatever a tool throws, so these stop the node instead (see
 * {@link stopsTheNode}): every later call the node makes through cairn (the loop's
 * next model call, with `cairnMiddleware`) rejects with the same error, and the
 * runtime ends the node with it as if the node had thrown it. Nothing of the step is
 * committed. They are:
 * - cairn's own stops, which the runtime keeps however the node treats them: an
 *   interrupt, a sleep or a wait, `resume`'s answer check, a replay that cannot serve
 *   a call, an `atMostOnce` effect found in doubt;
 * - anything a tool throws once the run's signal is aborted (its lease lost, the run
 *   cancelled or its caller's signal aborted): the runtime reports the stop itself
 *   (`LeaseLostError`, `RunCancelledError`), and the step is redone when the thread runs again;
 * - every {@link CairnError} (any cairn error class, by `instanceof`): `LeaseLostError`,
 *   `HeadMovedError`, `EffectConflictError`, `RecordMismatchError`, `StaleReadError`,
 *   `UnencodableValueError`, `EngineError`, `InvalidOptionError`... They say something
 *   about the run's own guarantees or a programming error, never about the world the
 *   tool asked; the default retry policy does not retry them, and a model can do
 *   nothing with them. Handed to the model, the step would commit past them. A tool
 *   that wants the model to see one (say, another app's `ThreadBusyError`) catches it
 *   and throws an error of its own;
 * - for an {@link effectTool}, any error its `execute` throws (see there).
 * Everything else a recorded tool throws (an `Error` of its own, a `TypeError`, a
 * Node.js error whose code starts with `ERR_`, an AI SDK error) is recorded and
 * handed to the model as before. Tools the set holds that are neither recorded nor
 * effect tools (passed to the AI SDK as they are) are outside cairn's reach: their
 * errors all go to the model, except that an interrupt, a wait or an answer check
 * inside one still stops the node.
 */
import type { Tool, ToolExecutionOptions, ToolSet } from 'ai';
import type { NodeContext } from '../runtime/node-context.js';
import { checkEffectCommit, checkEffectMode, type EffectCommit, type EffectMode } from '../runtime/effects.js';
import { currentNode } from '../runtime/current-node.js';
import { CairnError, InvalidOptionError } from '../errors.js';
import { AnswerChecked, AnswerUnchecked, NodeSuspended } from '../runtime/pauses.js';
import { ReplayDivergence, TaskScope } from '../runtime/task-scope.js';
import { checkOptionKeys } from '../internal/option-keys.js';

/**
 * Marks a tool {@link effectTool} made an effect: {@link recordedTools} does not record
 * it again, and names it after its key in the tool set when it was given no name.
 */
const EFFECT = Symbol.for('cairn.ai-sdk.effect-tool');

interface EffectMark {
  named: boolean;
  /** The same effect tool under another name. */
  rename(name: string): unknown;
}

type Execute = (input: unknown, options: ToolExecutionOptions<unknown>) => unknown;

/** Options of {@link recordedTools}. */
export interface RecordedToolsOptions {
  /** The record name of tool `name`'s result (default `tool:<name>`). */
  name?: (tool: string) => string;
}

/**
 * The same tools, each one's `execute` recorded (kind `tool`). A tool without
 * `execute` (answered by the client, or a provider's own) and one made by
 * {@link effectTool} are kept as they are.
 *
 * A tool's own error is recorded and handed to the model; cairn's errors, and any
 * error once the run is stopping, stop the node instead (the rule is in the module
 * documentation).
 *
 * @example
 * ```ts
 * const tools = recordedTools({ weather: tool({ inputSchema: z.object({ city: z.string() }), execute: ({ city }) => lookUp(city) }) });
 * await generateText({ model, tools, stopWhen: stepCountIs(5), prompt: 'Weather in Paris?' });
 * ```
 */
export function recordedTools<T extends ToolSet>(tools: T, options: RecordedToolsOptions = {}): T {
  if (tools === null || typeof tools !== 'object' || Array.isArray(tools)) {
    throw new InvalidOptionError(`recordedTools takes a tool set (an object of tools by name, as generateText's tools), not ${Array.isArray(tools) ? 'an array' : String(tools)}.`, {
      place: { engine: 'ai-sdk' },
    });
  }
  checkOptionKeys('recordedTools', options, ['name'], { engine: 'ai-sdk' });
  if (options.name !== undefined && typeof options.name !== 'function') {
    throw new InvalidOptionError(`recordedTools: name is a function from a tool's name to its record name (e.g. (tool) => \`search:\${tool}\`), not ${JSON.stringify(options.name)}.`, {
      place: { engine: 'ai-sdk' },
    });
  }
  const out: Record<string, unknown> = {};
  for (const [toolName, definition] of Object.entries(tools)) {
    const execute = definition.execute as Execute | undefined;
    const mark = (definition as { [EFFECT]?: EffectMark })[EFFECT];
    if (mark) {
      out[toolName] = mark.named ? definition : mark.rename(options.name?.(toolName) ?? `tool:${toolName}`);
      continue;
    }
    if (!execute) {
      out[toolName] = definition;
      continue;
    }
    const recordName = options.name?.(toolName) ?? `tool:${toolName}`;
    const yields = isAsyncGenerator(execute);
    out[toolName] = {
      ...definition,
      execute: (input: unknown, callOptions: ToolExecutionOptions<unknown>) => {
        const ctx = currentNode();
        if (!ctx) return execute(input, callOptions);
        const recorded = stopping(ctx, ctx.record(recordName, () => settledOrFailed(() => execute(input, callOptions), ctx), { kind: 'tool', tool: toolName, args: input }), stopsTheNode);
        return yields ? replayed(recorded) : recorded.then(unsettled);
      },
    };
  }
  return out as T;
}

/** Options of {@link effectTool}: how the effect is keyed, named and recovered. */
export interface EffectToolOptions<INPUT, OUTPUT> {
  /** The effect's name in the ledger. Default: `tool:<its key in the tool set>` when passed through {@link recordedTools}, else `tool:effect`. */
  name?: string;
  /**
   * The idempotency key from the tool's input (`(i) => \`refund:${i.orderId}\``): the same
   * on every execution, and what the external system deduplicates by. Default: a key
   * derived from where the call is made (thread, step, node, call index).
   */
  key?: (input: INPUT) => string;
  /** Asked after a crash between the intent and the outcome: did it land? Its answer (not null) is the outcome. */
  probe?: (key: string, input: INPUT) => Promise<OUTPUT | null | undefined>;
  /** `atMostOnce`: with no probe, an intent without an outcome puts the thread in `needs_attention` instead of running again. */
  mode?: EffectMode;
  /** `with-step`: intent and outcome written by the step's commit (see `EffectSpec.commit`); not with a probe or `atMostOnce`. */
  commit?: EffectCommit;
}

/**
 * The tool, its `execute` run as a cairn effect: intent (with a digest of the input),
 * run with the key, outcome. A re-execution is served the outcome; an intent left
 * without one by a crash is probed, or run again with the same key (`atLeastOnce`).
 *
 * An `execute` that throws is what a `ctx.effect` whose `run` throws is in a node that
 * does not catch it: the effect is in doubt (its intent stays without an outcome: did
 * the refund go through before the connection dropped?), and the node stops with the
 * error, though the AI SDK's loop would hand it to the model: the loop's next model
 * call made through `cairnMiddleware` rejects with it (the provider never sees it),
 * nothing of the step is committed, and the node's retry, or the
 * next run of the thread, recovers the effect like any intent without an outcome: the
 * probe, else the tool runs again with the same key (`atLeastOnce`), or the thread
 * goes to `needs_attention` (`atMostOnce`), where `app.resolveEffect({ outcome })`
 * takes the tool's result as a person checked it. A failure the model should answer (a
 * declined card, an unknown order) is a result: return it from `execute`, and it is
 * the effect's outcome, recorded and served like any other.
 *
 * @example
 * ```ts
 * const refund = effectTool(tool({ inputSchema: z.object({ order: z.string() }), execute: ({ order }, { toolCallId }) => payments.refund(order) }), {
 *   name: 'refund', key: ({ order }) => `refund:${order}`, probe: (key) => payments.findByKey(key),
 * });
 * ```
 */
export function effectTool<INPUT, OUTPUT, T extends Tool<INPUT, OUTPUT>>(definition: T & Tool<INPUT, OUTPUT>, options: EffectToolOptions<INPUT, OUTPUT> = {}): T {
  const execute = definition?.execute as Execute | undefined;
  if (typeof execute !== 'function') throw new InvalidOptionError('effectTool needs a tool with execute: a tool the client answers has no side effect here to record.', { place: { engine: 'ai-sdk' } });
  // A misspelt `moed: 'atMostOnce'` would run the tool at least once.
  checkOptionKeys('effectTool', options, ['name', 'key', 'probe', 'mode', 'commit'], { engine: 'ai-sdk' });
  const name = options.name ?? 'tool:effect';
  // A mode or commit the effect cannot keep is refused here, where the tool is defined, not at its first call inside a model's loop.
  if (options.key !== undefined && typeof options.key !== 'function') {
    throw new InvalidOptionError(`effectTool "${name}": key is a function from the tool's input to its idempotency key, not ${JSON.stringify(options.key)}.`, { place: { engine: 'ai-sdk' } });
  }
  checkEffectMode(name, options.mode, { engine: 'ai-sdk' });
  checkEffectCommit(name, options, { engine: 'ai-sdk' });
  const yields = isAsyncGenerator(execute);
  const mark: EffectMark = { named: options.name !== undefined, rename: (renamed) => effectTool(definition, { ...options, name: renamed }) };
  return {
    ...definition,
    [EFFECT]: mark,
    execute: (input: INPUT, callOptions: ToolExecutionOptions<unknown>) => {
      const ctx = currentNode();
      if (!ctx) return execute(input, callOptions);
      const probe = options.probe;
      // Whatever the effect throws stops the node (see above): its own failure leaves it in doubt, the others are cairn's.
      const outcome = stopping(ctx, ctx.effect(name, {
          args: input,
          ...(options.key ? { idempotencyKey: options.key(input) } : {}),
          ...(options.mode ? { mode: options.mode } : {}),
          ...(options.commit ? { commit: options.commit } : {}),
          run: async () => settled(execute(input, callOptions)),
          ...(probe ? { probe: async (key: string) => wrapFound(await probe(key, input)) } : {}),
        }), () => true);
      const result = outcome.then(asSettled);
      return yields ? replayed(result) : result.then(unsettled);
    },
  } as T;
}

/**
 * A tool's result as recorded: its value, every value of a tool that yields
 * (preliminary results, then the last), or the error a recorded tool threw.
 */
type Settled = { value: unknown } | { yielded: unknown[] } | { failed: { name: string; message: string } };

async function settled(result: unknown): Promise<Settled> {
  if (result !== null && typeof result === 'object' && Symbol.asyncIterator in result) {
    const yielded: unknown[] = [];
    for await (const item of result as AsyncIterable<unknown>) yielded.push(item);
    return { yielded };
  }
  return { value: await result };
}

/**
 * What a recorded tool gave, or the error it threw as a result to record. An error
 * that stops the node ({@link stopsTheNode}) is not the tool's answer: it is thrown,
 * nothing is recorded, and {@link stopping} stops the node with it.
 */
async function settledOrFailed(call: () => unknown, ctx: NodeContext): Promise<Settled> {
  try {
    return await settled(call());
  } catch (error) {
    if (stopsTheNode(error, ctx)) throw error;
    return { failed: error instanceof Error ? { name: error.name, message: error.message } : { name: 'Error', message: String(error) } };
  }
}

/**
 * Whether an error a tool threw stops the node rather than answering the model (the
 * rule, and why, is in the module documentation): cairn's own stops and errors, and
 * anything once the run is stopping. A cairn error is known by its brand
 * (`CairnError.is`), not by a code prefix: Node.js's own errors have `ERR_` codes
 * too, and those are a tool's failure.
 */
function stopsTheNode(error: unknown, ctx: NodeContext): boolean {
  if (ctx.signal.aborted) return true;
  return (
    CairnError.is(error) ||
    error instanceof NodeSuspended ||
    error instanceof AnswerChecked ||
    error instanceof AnswerUnchecked ||
    error instanceof ReplayDivergence
  );
}

/**
 * `call`, a tool's record or effect, with the error it rejects with handed to the
 * node's scope when `stops` says it must stop the node: the AI SDK's loop catches what
 * the tool throws, so the scope stops the node in its stead (`TaskScope.halt`).
 */
function stopping<T>(ctx: NodeContext, call: Promise<T>, stops: (error: unknown, ctx: NodeContext) => boolean): Promise<T> {
  return call.catch((error: unknown) => {
    if (ctx instanceof TaskScope && stops(error, ctx)) ctx.halt(error);
    throw error;
  });
}

/** The error a recorded tool threw, made again from its record. */
function failure(failed: { name: string; message: string }): Error {
  const error = new Error(failed.message);
  error.name = failed.name;
  return error;
}

/** The recorded result as the tool gave it: a value, an iterable yielding the same values again, or its error thrown. */
function unsettled(recorded: Settled): unknown {
  if ('failed' in recorded) throw failure(recorded.failed);
  if ('value' in recorded) return recorded.value;
  return (async function* () {
    yield* recorded.yielded;
  })();
}

/**
 * Whether a tool's execute yields (`async *execute`): the AI SDK takes an iterable from
 * it synchronously, so the wrapper must return one, not a promise of one.
 */
function isAsyncGenerator(fn: Execute): boolean {
  return Object.prototype.toString.call(fn) === '[object AsyncGeneratorFunction]';
}

/** The values of a recorded yielding tool, as an iterable returned at once. */
async function* replayed(recorded: Promise<Settled>): AsyncGenerator<unknown> {
  const result = await recorded;
  if ('failed' in result) throw failure(result.failed);
  if ('yielded' in result) yield* result.yielded;
  else yield result.value;
}

/**
 * An effect tool's outcome as a {@link Settled}. What the tool and its probe give is
 * recorded wrapped (`{ value }`, `{ yielded }`); an outcome a person gave
 * (`app.resolveEffect` on an effect in doubt) is the tool's result as they checked it,
 * `{ refunded: true }`, and is that value. Served as it is, it would reach the model
 * as neither (an object without `value` reads as a tool that yielded nothing).
 * An outcome of exactly the wrapped shape is taken as wrapped: a result that is
 * itself `{ value: x }` is resolved as `{ value: { value: x } }`.
 */
function asSettled(outcome: unknown): Settled {
  if (outcome !== null && typeof outcome === 'object' && !Array.isArray(outcome)) {
    const keys = Object.keys(outcome);
    if (keys.length === 1 && (keys[0] === 'value' || (keys[0] === 'yielded' && Array.isArray((outcome as { yielded: unknown }).yielded)))) return outcome as Settled;
  }
  return { value: outcome };
}

/** A probe's find as an outcome (null: not found). */
function wrapFound(found: unknown): Settled | null {
  return found === null || found === undefined ? null : { value: found };
}
