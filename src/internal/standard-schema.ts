/**
 * @module internal/standard-schema
 * Whether a value is a Standard Schema (zod, valibot, arktype…): what cairn validates
 * state fields, interrupt answers and signal payloads with.
 */
export function isStandardSchema(value: unknown): boolean {
  return typeof (value as { '~standard'?: { validate?: unknown } } | null | undefined)?.['~standard']?.validate === 'function';
}
