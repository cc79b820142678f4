/**
 * @module cairn/ai-sdk
 * The Vercel AI SDK (`ai` 7) inside cairn nodes: every model call and tool result of
 * an agent is part of the run, so a killed agent resumes mid-loop without repeating a
 * finished call. {@link cairnMiddleware} (a `LanguageModelV4Middleware`, applied with
 * `wrapLanguageModel`, or {@link recordedModel}) records each generate and stream call
 * as a `model` record with its model, tokens and latency, and serves it on
 * re-execution; {@link recordedTools} records tool results (kind `tool`);
 * {@link effectTool} runs a tool with side effects as a keyed `ctx.effect` with an
 * optional probe. Outside a node everything passes through.
 *
 * What a recorded or effect tool throws inside the AI SDK's tool loop goes to the
 * model as the tool's error, as the AI SDK does, unless it must stop the node:
 * cairn's own errors (`LeaseLostError`, `EffectConflictError`, an interrupt or a
 * wait...), anything once the run is stopping, and an effect tool's failure (the
 * effect is then in doubt, as with a throwing `ctx.effect`). Those end the node as if
 * it had thrown them, with nothing of the step committed; see `ai-sdk/tools` for the rule.
 *
 * `ai` and `@ai-sdk/provider` are optional peer dependencies: only this entry point
 * needs them, `import 'cairn'` never loads them.
 *
 * @example
 * ```ts
 * import { generateText, stepCountIs, tool } from 'ai';
 * import { recordedModel, recordedTools } from 'cairn/ai-sdk';
 *
 * const model = recordedModel(openai('gpt-5-mini'));
 * const tools = recordedTools({ weather: tool({ inputSchema: z.object({ city: z.string() }), execute: ({ city }) => lookUp(city) }) });
 * const app = graph(State)
 *   .node('agent', async (s) => ({ reply: (await generateText({ model, tools, stopWhen: stepCountIs(5), prompt: s.question })).text }))
 *   .edge(START, 'agent').edge('agent', END)
 *   .compile({ engine: sqlite('./cairn.db') });
 * ```
 */
import { wrapLanguageModel } from 'ai';
import type { LanguageModelV4 } from '@ai-sdk/provider';
import { cairnMiddleware, type CairnMiddlewareOptions } from './middleware.js';

export { cairnMiddleware, type CairnMiddlewareOptions, type RecordedStream } from './middleware.js';
export { recordedTools, effectTool, type RecordedToolsOptions, type EffectToolOptions } from './tools.js';
export { tokenUsage } from './usage.js';

/**
 * `model` with {@link cairnMiddleware} applied (`wrapLanguageModel`): the same model,
 * its calls recorded inside cairn nodes.
 *
 * @example `const model = recordedModel(anthropic('claude-sonnet-4-5'));`
 */
export function recordedModel(model: LanguageModelV4, options: CairnMiddlewareOptions = {}): LanguageModelV4 {
  return wrapLanguageModel({ model, middleware: cairnMiddleware(options) });
}
