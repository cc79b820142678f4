/**
 * @module ai-sdk/usage
 * The AI SDK's token counts (`LanguageModelV4Usage`: input and output, each with its
 * parts) as a record's {@link TokenUsage}.
 */
import type { LanguageModelV4Usage } from '@ai-sdk/provider';
import type { TokenUsage } from '../contracts/ledger.js';

/** The totals of a model call's usage; undefined when the provider reported none. */
export function tokenUsage(usage: LanguageModelV4Usage | undefined): TokenUsage | undefined {
  if (!usage) return undefined;
  const inputTokens = usage.inputTokens?.total;
  const outputTokens = usage.outputTokens?.total;
  const out: TokenUsage = {};
  if (inputTokens !== undefined) out.inputTokens = inputTokens;
  if (outputTokens !== undefined) out.outputTokens = outputTokens;
  if (inputTokens !== undefined || outputTokens !== undefined) out.totalTokens = (inputTokens ?? 0) + (outputTokens ?? 0);
  return Object.keys(out).length ? out : undefined;
}
