/**
 * Mock language models for the AI SDK tests (`MockLanguageModelV4` from `ai/test`,
 * streams by `simulateReadableStream` from `ai`), each counting its calls: a model
 * that answers text, and an agent model that asks for tools until the prompt holds
 * their results, then answers.
 */
import type { LanguageModelV4CallOptions, LanguageModelV4GenerateResult, LanguageModelV4StreamPart, LanguageModelV4Usage } from '@ai-sdk/provider';
import { simulateReadableStream } from 'ai';
import { MockLanguageModelV4 } from 'ai/test';

export function usage(input: number, output: number): LanguageModelV4Usage {
  return { inputTokens: { total: input, noCache: input, cacheRead: 0, cacheWrite: 0 }, outputTokens: { total: output, text: output, reasoning: 0 } };
}

const STOP = { unified: 'stop', raw: 'stop' } as const;
const TOOL_CALLS = { unified: 'tool-calls', raw: 'tool_calls' } as const;

/** The parts of a streamed text answer, split into words. */
export function textParts(text: string, tokens = usage(10, 5)): LanguageModelV4StreamPart[] {
  const words = text.split(/(?<= )/);
  return [
    { type: 'stream-start', warnings: [] },
    { type: 'response-metadata', id: 'resp-1', modelId: 'mock-model-2026-01', timestamp: new Date(1_767_000_000_000) },
    { type: 'text-start', id: 't1' },
    ...words.map((delta) => ({ type: 'text-delta' as const, id: 't1', delta })),
    { type: 'text-end', id: 't1' },
    { type: 'finish', finishReason: STOP, usage: tokens },
  ];
}

/** A generate result answering `text`. */
export function textResult(text: string, tokens = usage(10, 5)): LanguageModelV4GenerateResult {
  return {
    content: [{ type: 'text', text }],
    finishReason: STOP,
    usage: tokens,
    warnings: [],
    response: { id: 'resp-1', modelId: 'mock-model-2026-01', timestamp: new Date(1_767_000_000_000), body: { raw: 'not kept' } },
    request: { body: '{"not":"kept"}' },
  };
}

/** The tool results the prompt already holds, by tool name. */
function answeredTools(options: LanguageModelV4CallOptions): Set<string> {
  const done = new Set<string>();
  for (const message of options.prompt) {
    if (message.role !== 'tool') continue;
    for (const part of message.content) if (part.type === 'tool-result') done.add(part.toolName);
  }
  return done;
}

/**
 * An agent model: asks for each tool of `plan` in turn (one per step, input
 * `inputs[tool]`), then answers `answer`. Decides from the prompt, not from a count,
 * so a served step and a fresh one see the same model.
 */
export function agentModel(plan: string[], inputs: Record<string, unknown>, answer: string) {
  const next = (options: LanguageModelV4CallOptions) => plan.find((tool) => !answeredTools(options).has(tool));
  const model = new MockLanguageModelV4({
    provider: 'mock-provider',
    modelId: 'mock-agent',
    doGenerate: async (options) => {
      const tool = next(options);
      if (!tool) return textResult(answer, usage(30, 8));
      return {
        content: [{ type: 'tool-call', toolCallId: `call-${tool}`, toolName: tool, input: JSON.stringify(inputs[tool] ?? {}) }],
        finishReason: TOOL_CALLS,
        usage: usage(20, 4),
        warnings: [],
      };
    },
    doStream: async (options) => {
      const tool = next(options);
      const parts: LanguageModelV4StreamPart[] = tool
        ? [
            { type: 'stream-start', warnings: [] },
            { type: 'tool-call', toolCallId: `call-${tool}`, toolName: tool, input: JSON.stringify(inputs[tool] ?? {}) },
            { type: 'finish', finishReason: TOOL_CALLS, usage: usage(20, 4) },
          ]
        : textParts(answer, usage(30, 8));
      return { stream: simulateReadableStream({ chunks: parts, chunkDelayInMs: null, initialDelayInMs: null }) };
    },
  });
  return model;
}

/** A model that answers `text` to every generate and stream call. */
export function textModel(text: string) {
  return new MockLanguageModelV4({
    provider: 'mock-provider',
    modelId: 'mock-model',
    doGenerate: async () => textResult(text),
    doStream: async () => ({ stream: simulateReadableStream({ chunks: textParts(text), chunkDelayInMs: null, initialDelayInMs: null }) }),
  });
}
