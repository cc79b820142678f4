/**
 * @module runtime/ctx-options
 * The checks the node context's calls (`ctx.record`, `ctx.recordArtifact`,
 * `ctx.interrupt`, `ctx.waitFor`) make of their name and options when they are
 * called, before a key is taken. A key a call does not take is refused rather than
 * ignored: a misspelt `answr` would let any answer through unchecked, `timeoutMss`
 * would wait forever, and a schema passed where `{ answer: schema }` belongs would
 * check nothing. Each returns the InvalidOptionError to reject with, or undefined.
 */
import type { RecordKind } from '../contracts/ledger.js';
import { InvalidOptionError, type ErrorPlace } from '../errors.js';
import { isStandardSchema } from '../internal/standard-schema.js';
import { unknownOption } from '../internal/option-keys.js';

export const RECORD_KINDS: readonly RecordKind[] = ['model', 'tool', 'other'];

const RECORD_KEYS = ['kind', 'model', 'provider', 'tool', 'describe', 'args'];
const ARTIFACT_KEYS = ['mediaType', 'key', 'metadata'];
const INTERRUPT_KEYS = ['answer'];
const WAIT_FOR_KEYS = ['timeoutMs', 'schema', 'filter'];

/** The options object of `call`, with only the keys it takes; a Standard Schema in its place is named as such. */
function checkKeys(call: string, options: unknown, known: readonly string[], place: ErrorPlace): InvalidOptionError | undefined {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    return new InvalidOptionError(`${call} takes an options object ({ ${known.join(', ')} }) or none, not ${String(options)}.`, { place });
  }
  if (isStandardSchema(options)) {
    const where = call === 'ctx.waitFor' ? 'schema' : 'answer';
    return new InvalidOptionError(`${call} was given a schema where its options go: pass it as { ${where}: schema }.`, { place });
  }
  const unknown = unknownOption(call, options, known);
  return unknown ? new InvalidOptionError(unknown, { place }) : undefined;
}

/** A record's or an artifact's name: what the ledger, the CLI and redaction rules call it. */
export function checkCallName(call: string, name: unknown, place: ErrorPlace | undefined): InvalidOptionError | undefined {
  if (typeof name !== 'string' || name === '') return new InvalidOptionError(`${call} takes a name (a non-empty string) first, not ${JSON.stringify(name) ?? String(name)}.`, { place });
  return undefined;
}

/** `ctx.record(name, fn, options)`. */
export function checkRecordCall(name: unknown, fn: unknown, options: unknown, place: ErrorPlace): InvalidOptionError | undefined {
  const refused = checkCallName('ctx.record', name, place);
  if (refused) return refused;
  // Refused at the call, before a key is taken: a TypeError from inside the call would be retried as if the call had failed.
  if (typeof fn !== 'function') return new InvalidOptionError(`ctx.record("${String(name)}") takes the function whose value it records, not ${String(fn)}.`, { place });
  const keys = checkKeys(`ctx.record("${String(name)}")`, options, RECORD_KEYS, place);
  if (keys) return keys;
  const { kind, model, provider, tool, describe } = options as Record<string, unknown>;
  if (kind !== undefined && !RECORD_KINDS.includes(kind as RecordKind)) {
    return new InvalidOptionError(`ctx.record("${String(name)}"): kind must be ${RECORD_KINDS.map((k) => `'${k}'`).join(', ')}, not ${JSON.stringify(kind)}.`, { place });
  }
  for (const [option, value] of [['model', model], ['provider', provider], ['tool', tool]] as const) {
    if (value !== undefined && typeof value !== 'string') return new InvalidOptionError(`ctx.record("${String(name)}"): ${option} must be a string, not ${JSON.stringify(value) ?? String(value)}.`, { place });
  }
  if (describe !== undefined && typeof describe !== 'function') return new InvalidOptionError(`ctx.record("${String(name)}"): describe must be a function of the value, not ${String(describe)}.`, { place });
  return undefined;
}

/** `ctx.recordArtifact(name, fn, options)` (the options' values are the artifact store's to check). */
export function checkRecordArtifactCall(name: unknown, fn: unknown, options: unknown, place: ErrorPlace): InvalidOptionError | undefined {
  const refused = checkCallName('ctx.recordArtifact', name, place);
  if (refused) return refused;
  if (typeof fn !== 'function') return new InvalidOptionError(`ctx.recordArtifact("${String(name)}") takes the function whose value it stores, not ${String(fn)}.`, { place });
  return checkKeys(`ctx.recordArtifact("${String(name)}")`, options, ARTIFACT_KEYS, place);
}

/** `ctx.interrupt(payload, options)`. */
export function checkInterruptOptions(options: unknown, place: ErrorPlace): InvalidOptionError | undefined {
  const keys = checkKeys('ctx.interrupt', options, INTERRUPT_KEYS, place);
  if (keys) return keys;
  const { answer } = options as { answer?: unknown };
  if (answer !== undefined && !isStandardSchema(answer)) return new InvalidOptionError(`ctx.interrupt's answer is a Standard Schema (a zod schema, for one), not ${String(answer)}.`, { place });
  return undefined;
}

/** `ctx.waitFor(name, options)`, checked when the call is made rather than when a signal meets them. */
export function checkWaitForOptions(options: unknown, place: ErrorPlace): InvalidOptionError | undefined {
  const keys = checkKeys('ctx.waitFor', options, WAIT_FOR_KEYS, place);
  if (keys) return keys;
  const { timeoutMs, schema, filter } = options as Record<string, unknown>;
  if (timeoutMs !== undefined && (typeof timeoutMs !== 'number' || !Number.isFinite(timeoutMs) || timeoutMs < 0)) {
    return new InvalidOptionError(`ctx.waitFor's timeoutMs is a finite number of ms >= 0, not ${String(timeoutMs)}.`, { place });
  }
  if (schema !== undefined && !isStandardSchema(schema)) return new InvalidOptionError(`ctx.waitFor's schema is a Standard Schema (a zod schema, for one), not ${String(schema)}.`, { place });
  if (filter !== undefined && typeof filter !== 'function') return new InvalidOptionError(`ctx.waitFor's filter is a function of the payload, not ${String(filter)}.`, { place });
  return undefined;
}
