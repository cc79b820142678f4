/**
 * @module ai-sdk/middleware
 * A language-model middleware for the AI SDK (`ai` 7, `LanguageModelV4Middleware`)
 * that makes every model call inside a cairn node a recorded output: `doGenerate`'s
 * result, and a stream as the list of its parts. A re-execution of the step (a resume
 * after a crash, a retry of a sibling's failure, an interrupt answered) is served the
 * recorded result, and a served stream replays the same parts; nothing calls the
 * provider. Outside a node (and inside a recorded call or an effect, which record
 * their result as a whole) the model is called as if unwrapped.
 *
 * Why it is built this way:
 * - The node is found through {@link currentNode}, so the agent library's own loop
 *   (`generateText` with tools and `stopWhen`, `streamText`, `ToolLoopAgent`) needs no
 *   cairn argument: each model call it makes takes the next call index of the node,
 *   which is its key on every execution (the calls come in the same order, because
 *   the values that decide them are served).
 * - A stream is recorded once it finished: its parts are handed to the caller as they
 *   arrive and the record is written after the last one, before the caller gets the
 *   `finish` part (the AI SDK runs the tools the model asked for when it reads it, and
 *   a tool must not run for a model call that is not yet recorded). A process killed mid-stream
 *   left nothing recorded, so the call is made again; a stream that carried an `error`
 *   part, or failed, is not recorded either (the next execution asks again).
 * - What is kept of a result is what a caller reads: content, finish reason, usage,
 *   provider metadata, warnings, the response's id, time, model and headers. The raw
 *   request and response bodies are left out (large, and not always plain data).
 */
import type {
  LanguageModelV4,
  LanguageModelV4GenerateResult,
  LanguageModelV4Middleware,
  LanguageModelV4StreamPart,
  LanguageModelV4StreamResult,
} from '@ai-sdk/provider';
import type { RecordOptions } from '../runtime/node-context.js';
import { currentNode } from '../runtime/current-node.js';
import { tokenUsage } from './usage.js';
import { InvalidOptionError } from '../errors.js';
import { checkOptionKeys } from '../internal/option-keys.js';

/** Options of {@link cairnMiddleware}. */
export interface CairnMiddlewareOptions {
  /**
   * The record name of a generate call (default `ai.generate`); a stream's is this
   * name's stream counterpart (default `ai.stream`). A name is checked when a value is
   * served, so renaming breaks the resume of threads recorded under the old one.
   */
  name?: { generate?: string; stream?: string };
}

/** A misspelt `nam` or `name: 'chat'` would record under the default names, which a later rename then cannot serve. */
function checkMiddlewareOptions(options: unknown): void {
  const refuse = (message: string) => {
    throw new InvalidOptionError(message, { place: { engine: 'ai-sdk' } });
  };
  checkOptionKeys('cairnMiddleware', options, ['name'], { engine: 'ai-sdk' });
  const name = (options as { name?: unknown }).name;
  if (name === undefined) return;
  checkOptionKeys('cairnMiddleware name', name, ['generate', 'stream'], { engine: 'ai-sdk' });
  for (const [which, value] of Object.entries(name as object)) {
    if (value !== undefined && (typeof value !== 'string' || value === '')) refuse(`cairnMiddleware: name.${which} is a record name (a non-empty string), not ${JSON.stringify(value)}.`);
  }
}

/** A stream as recorded: its parts, in order. */
export interface RecordedStream {
  parts: LanguageModelV4StreamPart[];
}

/**
 * Thrown inside the record of a stream that carried an error part, or that its caller
 * cancelled: the stream was delivered, nothing is recorded. Its message is what the
 * record's span says, so a trace shows why the call has no record.
 */
class StreamNotRecorded extends Error {
  override readonly name = 'StreamNotRecorded';
}

/** The message of a stream's error part, as text. */
function partError(error: unknown): string {
  return error instanceof Error ? error.message : typeof error === 'string' ? error : JSON.stringify(error) ?? String(error);
}

/**
 * The middleware: records and serves each generate and stream call made inside a
 * cairn node. Apply it with `wrapLanguageModel` (or use {@link recordedModel}).
 *
 * @example
 * ```ts
 * import { wrapLanguageModel, generateText } from 'ai';
 * import { cairnMiddleware } from 'cairn/ai-sdk';
 * const model = wrapLanguageModel({ model: openai('gpt-5-mini'), middleware: cairnMiddleware() });
 * graph(State).node('answer', async (s) => ({ reply: (await generateText({ model, prompt: s.question })).text }));
 * ```
 */
export function cairnMiddleware(options: CairnMiddlewareOptions = {}): LanguageModelV4Middleware {
  checkMiddlewareOptions(options);
  const generateName = options.name?.generate ?? 'ai.generate';
  const streamName = options.name?.stream ?? 'ai.stream';
  return {
    specificationVersion: 'v4',
    // Inside a node the call also stops when the run does (its lease lost, or cancelled).
    transformParams: async ({ params }) => {
      const ctx = currentNode();
      if (!ctx) return params;
      return { ...params, abortSignal: params.abortSignal ? AbortSignal.any([params.abortSignal, ctx.signal]) : ctx.signal };
    },
    wrapGenerate: async ({ doGenerate, model }) => {
      const ctx = currentNode();
      if (!ctx) return doGenerate();
      return ctx.record(generateName, async () => kept(await doGenerate()), {
        ...modelMeta(model),
        describe: (result) => described(model, result.response?.modelId, tokenUsage(result.usage)),
      });
    },
    wrapStream: async ({ doStream, model }) => {
      const ctx = currentNode();
      if (!ctx) return doStream();
      return { stream: recordStream(ctx.record.bind(ctx), streamName, doStream, model) };
    },
  };
}

/** The RecordOptions every model call starts from: its kind and the model asked for. */
function modelMeta(model: LanguageModelV4): RecordOptions<unknown> {
  return { kind: 'model', model: model.modelId, provider: model.provider };
}

function described(model: LanguageModelV4, answeredBy: string | undefined, usage: ReturnType<typeof tokenUsage>) {
  return { model: answeredBy ?? model.modelId, ...(usage ? { usage } : {}) };
}

/** What a generate result keeps in the record (see the module documentation). */
function kept(result: LanguageModelV4GenerateResult): LanguageModelV4GenerateResult {
  const { request: _request, response, ...rest } = result;
  if (!response) return rest;
  const { body: _body, ...meta } = response;
  return { ...rest, response: meta };
}

type Record = <T>(name: string, fn: () => Promise<T>, options?: RecordOptions<T>) => Promise<T>;

/**
 * The parts of a stream on their way to the caller, and how it ends, in that order. The
 * provider's stream is read as fast as it delivers (the record wants all of it), which
 * is ahead of the caller; a ReadableStream's `error()` drops the parts it queued, so a
 * provider that fails mid-stream would take the text it had already sent with it. Here
 * the caller pulls: every part queued before the failure reaches it, then the error,
 * as the provider's own stream would have delivered them.
 */
class Delivery {
  private readonly parts: LanguageModelV4StreamPart[] = [];
  private end: { error: unknown } | 'closed' | undefined;
  private wake: (() => void) | undefined;

  push(part: LanguageModelV4StreamPart): void {
    if (this.end) return;
    this.parts.push(part);
    this.wake?.();
  }

  close(): void {
    this.end ??= 'closed';
    this.wake?.();
  }

  fail(error: unknown): void {
    this.end ??= { error };
    this.wake?.();
  }

  /** The caller's next part, or the stream's end once every part before it was taken. */
  async pull(out: ReadableStreamDefaultController<LanguageModelV4StreamPart>): Promise<void> {
    while (!this.parts.length && !this.end) await new Promise<void>((resolve) => (this.wake = resolve));
    this.wake = undefined;
    const part = this.parts.shift();
    if (part) out.enqueue(part);
    else if (this.end === 'closed') out.close();
    else out.error(this.end!.error);
  }
}

/**
 * The stream the caller reads: the live parts as they arrive (recorded once the last
 * one did), or the recorded parts when the record serves them.
 *
 * A live stream's `finish` part (and anything after it) reaches the caller only once
 * the record is written: the AI SDK runs the tools the model asked for when it reads
 * `finish`, and a provider may close its stream a while after sending it. A tool (an
 * effect: a refund) that ran before the stream was recorded would, after a crash, meet
 * a stream made again, whose model may ask for another refund, and both would be made.
 */
function recordStream(
  record: Record,
  name: string,
  doStream: () => PromiseLike<LanguageModelV4StreamResult>,
  model: LanguageModelV4,
): ReadableStream<LanguageModelV4StreamPart> {
  let reader: ReadableStreamDefaultReader<LanguageModelV4StreamPart> | undefined;
  let cancelled = false;
  const delivery = new Delivery();
  return new ReadableStream<LanguageModelV4StreamPart>({
    // A caller that stops reading stops the provider's stream too; what it left unread is
    // not a whole answer, so nothing is recorded and a re-execution asks again.
    cancel(reason) {
      cancelled = true;
      return reader?.cancel(reason);
    },
    pull(out) {
      return delivery.pull(out);
    },
    start() {
      let live = false;
      let usage: ReturnType<typeof tokenUsage>;
      let answeredBy: string | undefined;
      /** The live parts from `finish` on, held until the record is written. */
      const held: LanguageModelV4StreamPart[] = [];
      const recording = record<RecordedStream>(
        name,
        async () => {
          live = true;
          const { stream } = await doStream();
          const parts: LanguageModelV4StreamPart[] = [];
          let failed: { error: unknown } | undefined;
          reader = stream.getReader();
          if (cancelled) await reader.cancel();
          for (;;) {
            const { done, value } = await reader.read();
            if (done) break;
            parts.push(value);
            if (value.type === 'error') failed ??= { error: value.error };
            if (value.type === 'finish' || held.length) held.push(value);
            else if (!cancelled) delivery.push(value);
          }
          if (cancelled) throw new StreamNotRecorded('the caller cancelled the stream before its end: not recorded, a re-execution asks again');
          if (failed) throw new StreamNotRecorded(`the stream carried an error part (${partError(failed.error)}): not recorded, a re-execution asks again`);
          return { parts };
        },
        {
          ...(modelMeta(model) as RecordOptions<RecordedStream>),
          describe: (recorded) => {
            for (const part of recorded.parts) {
              if (part.type === 'finish') usage = tokenUsage(part.usage);
              if (part.type === 'response-metadata' && part.modelId) answeredBy = part.modelId;
            }
            return described(model, answeredBy, usage);
          },
        },
      );
      // The caller reads the stream: how the record ended reaches it as the stream's end.
      recording.then(
        (recorded) => {
          if (cancelled) return;
          for (const part of live ? held : recorded.parts) delivery.push(part);
          delivery.close();
        },
        (error: unknown) => {
          if (cancelled) return;
          if (!(error instanceof StreamNotRecorded)) return delivery.fail(error);
          // Delivered, not recorded (it carried an error part): the caller gets all of it.
          for (const part of held) delivery.push(part);
          delivery.close();
        },
      );
    },
  });
}
