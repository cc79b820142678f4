/**
 * @module cli/options
 * Parsers for the CLI's flag values. Each checks its value when the command line is
 * read and refuses a bad one with commander's InvalidArgumentError, so the command
 * exits 2 (bad usage) with `error: option '--limit <n>' argument 'abc' is invalid.
 * …` before anything is opened. The exit codes are set in `cli/main`.
 */
import { InvalidArgumentError } from 'commander';
import type { ThreadKind, ThreadStatus } from '../contracts/threads.js';
import { CairnError } from '../errors.js';
import { parseDuration } from '../artifacts/helpers.js';
import { THREAD_KINDS, THREAD_STATUSES } from '../internal/thread-query.js';
import { deprecationNotice } from './deprecated-flags.js';
import { compilePattern } from '../internal/redaction.js';
import { checkThreadId } from '../internal/keys.js';

/** Runs a cairn validator inside a flag parser: its error becomes the flag's InvalidArgumentError (its message without the `[cairn]` prefix). */
function checked<T>(parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    if (CairnError.is(error)) throw new InvalidArgumentError(error.message.replace(/^\[cairn\](?: \[[^\]]*\])? /, ''));
    throw error;
  }
}

/** An integer of at least `min`, written in decimal digits. */
export function integer(min: number): (value: string) => number {
  return (value) => {
    const n = /^\s*[+-]?\d+\s*$/.test(value) ? Number(value) : NaN;
    if (!Number.isSafeInteger(n) || n < min) throw new InvalidArgumentError(`Write a whole number${min === 0 ? ' (0 or more)' : min === 1 ? ' (1 or more)' : ` of at least ${min}`}.`);
    return n;
  };
}

/** `1`, `2`, …: counts and limits. */
export const positiveInteger = integer(1);

/** `0`, `1`, …: seqs. */
export const nonNegativeInteger = integer(0);

/** A TCP port, 0 (any free one) to 65535: past it, the server's listen throws a RangeError with a stack trace. */
export function port(value: string): number {
  const n = nonNegativeInteger(value);
  if (n > 65_535) throw new InvalidArgumentError('Write a port from 0 (a free one) to 65535.');
  return n;
}

/** A duration: a number of ms or `500ms`, `10s`, `15m`, `12h`, `30d`, `2w`. Kept as typed (the commands print it). */
export function duration(value: string): string {
  checked(() => parseDuration(value));
  return value;
}

/** A duration of at least 1 ms (`500ms`, `30s`, `2m`, or a whole number of ms), as a whole number of ms: for the `…Ms` options. */
export function durationMs(value: string): number {
  const ms = checked(() => parseDuration(value));
  if (!Number.isSafeInteger(ms) || ms < 1) throw new InvalidArgumentError('Write a duration of at least 1ms: 500ms, 30s, 2m, or a whole number of ms.');
  return ms;
}

/**
 * `--tenant`: 1 to 256 characters, as a thread's tenant is. An empty one (an unset
 * `--tenant "$TENANT"`) matches no thread: `threads` printed "no threads" with exit 0.
 */
export function tenantName(value: string): string {
  if (value.length === 0 || value.length > 256) throw new InvalidArgumentError('Write a tenant of 1 to 256 characters.');
  return value;
}

/**
 * A thread id given on the command line (`<thread>`, `--thread`, `--threads`), checked
 * before any database is opened by the rule every engine stores ids by: one no thread
 * can have (empty, as an unset "$THREAD" gives; over 512 characters; a control
 * character) is InvalidKeyError, bad usage (exit 2), on every command alike. Unchecked,
 * the reading commands answered "no such thread" (exit 1, `thread : no such thread.`
 * for an empty one) and `signal` ERR_INVALID_KEY, after opening the database.
 */
export function threadIdArgument(id: string): string {
  checkThreadId(id);
  return id;
}

/** `--order`: the API's `order`, `id` or `updatedAt`; `updated`, its old spelling, is `updatedAt` with a deprecation notice. */
export function threadOrder(value: string): 'id' | 'updatedAt' {
  if (value === 'id' || value === 'updatedAt') return value;
  if (value === 'updated') {
    deprecationNotice('--order updated', '--order updatedAt');
    return 'updatedAt';
  }
  throw new InvalidArgumentError('Allowed choices are id, updatedAt.');
}

/** A comma-separated (or repeated) list of values from `allowed`. */
function listOf<T extends string>(what: string, allowed: readonly T[]): (value: string, previous?: T[]) => T[] {
  return (value, previous = []) => {
    const values = value.split(',').map((v) => v.trim()).filter(Boolean);
    if (values.length === 0) throw new InvalidArgumentError(`Name at least one ${what}: ${allowed.join(', ')}.`);
    for (const v of values) if (!(allowed as readonly string[]).includes(v)) throw new InvalidArgumentError(`Unknown ${what} "${v}": use ${allowed.join(', ')}.`);
    return [...previous, ...(values as T[])];
  };
}

/** Thread statuses, comma-separated or repeated. */
export const statusList = listOf<ThreadStatus>('status', THREAD_STATUSES);

/** Thread kinds, comma-separated or repeated. */
export const kindList = listOf<ThreadKind>('kind', THREAD_KINDS);

/** A repeatable flag whose values are checked by `parse` (a cairn validator) and collected. */
export function repeatable<T>(parse: (value: string) => T): (value: string, previous: T[]) => T[] {
  return (value, previous) => [...previous, checked(() => parse(value))];
}

/** A single value checked by `parse` (a cairn validator). */
export function validated<T>(parse: (value: string) => T): (value: string) => T {
  return (value) => checked(() => parse(value));
}

/** A JSON value (`--answer '{"approved":true}'`, `--outcome 42`); text that does not parse is bad usage. */
export function jsonValue(value: string): unknown {
  try {
    return JSON.parse(value);
  } catch (error) {
    throw new InvalidArgumentError(`Write a JSON value, e.g. '{"approved":true}', '"text"' or 42 (${(error as Error).message}).`);
  }
}

/** A JSON object (`--input`, `--patch`: writes to state fields). */
export function jsonObject(value: string): Record<string, unknown> {
  const parsed = jsonValue(value);
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new InvalidArgumentError(`Write a JSON object of field writes, e.g. '{"approved":true}'.`);
  return parsed as Record<string, unknown>;
}

/** `--redact-pattern <regex>`, repeatable: a regular expression (JavaScript syntax, no slashes) that must compile and not match the empty string. */
function redactPattern(value: string, previous: string[] = []): string[] {
  checked(() => compilePattern(value));
  return [...previous, value];
}

/** The flag every command that shows stored data takes to show it intact. */
export const RAW_OPTION = ['--raw', 'show stored values intact, without the redaction rules (default: redacted)'] as const;

/** The flag that adds patterns to hide, beside the rules stored with the graph. */
export const REDACT_PATTERN_OPTION = ['--redact-pattern <regex>', 'also hide text matching this regular expression (repeatable)', redactPattern, [] as string[]] as const;
