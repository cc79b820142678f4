/**
 * @module artifacts/artifact-ref-schema
 * A Standard Schema (v1) for {@link ArtifactRef}, so a state field can hold a ref
 * and have it checked like any other value, without a schema library: the same
 * rules the artifact stores apply (the id parses as `sha256:<digest>` or
 * `key:<key>`, optionally behind `tenant:<tenant>/`; a content id names the ref's
 * own digest; a `type/subtype` media type; a size in whole bytes).
 */
import type { StandardSchemaV1 } from '@standard-schema/spec';
import type { ArtifactRef } from '../contracts/artifact-store.js';
import { checkMediaType, describeValue, parseRefId } from './refs.js';

type Issue = StandardSchemaV1.Issue;

function problems(value: unknown): Issue[] {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    return [{ message: `an artifact ref must be an object { id, sha256, media_type, size_bytes }, got ${describeValue(value)}.` }];
  }
  const ref = value as Record<string, unknown>;
  const issues: Issue[] = [];
  const issue = (key: string, message: string) => issues.push({ message, path: [key] });
  try {
    const parsed = parseRefId(ref.id);
    if (parsed.kind === 'content' && parsed.digest !== ref.sha256) issue('id', `the content id ${describeValue(ref.id)} names another digest than sha256 ${describeValue(ref.sha256)}.`);
  } catch (error) {
    issue('id', (error as Error).message.replace(/^\[cairn\]\s*/, ''));
  }
  if (typeof ref.sha256 !== 'string' || !/^[0-9a-f]{64}$/.test(ref.sha256)) issue('sha256', `sha256 must be 64 lowercase hex characters, got ${describeValue(ref.sha256)}.`);
  try {
    checkMediaType(ref.media_type);
  } catch (error) {
    issue('media_type', (error as Error).message.replace(/^\[cairn\]\s*/, ''));
  }
  if (typeof ref.size_bytes !== 'number' || !Number.isSafeInteger(ref.size_bytes) || ref.size_bytes < 0) {
    issue('size_bytes', `size_bytes must be a non-negative safe integer, got ${describeValue(ref.size_bytes)}.`);
  }
  return issues;
}

/**
 * The Standard Schema of an {@link ArtifactRef} (what `artifacts.put` returns): use it
 * for a state field that holds a ref. Valid values pass through unchanged; an invalid
 * one fails the write with StateValidationError naming the field and what is wrong.
 *
 * @example
 * ```ts
 * import { artifactRefSchema, defineState, field } from 'cairn';
 * const State = defineState({ fields: { summary: field.model(artifactRefSchema) } });
 * // a node: return { summary: await ctx.artifacts.put(text, { mediaType: 'text/plain' }) };
 * ```
 */
export const artifactRefSchema: StandardSchemaV1<ArtifactRef, ArtifactRef> = {
  '~standard': {
    version: 1,
    vendor: 'cairn',
    validate(value: unknown): StandardSchemaV1.Result<ArtifactRef> {
      const issues = problems(value);
      return issues.length ? { issues } : { value: value as ArtifactRef };
    },
  },
};
