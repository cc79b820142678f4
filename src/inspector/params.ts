/**
 * @module inspector/params
 * Query parameters of the inspector's API, read strictly: what is malformed is an
 * InvalidOptionError (HTTP 400, `ERR_INVALID_OPTION`) naming the parameter, never a
 * guess.
 */
import { INSPECTOR_MAX_PAGE } from '../defaults.js';
import { InvalidOptionError } from '../errors.js';
import { checkThreadId } from '../internal/keys.js';

/**
 * The integer `name` (at least `min`), or undefined when absent or empty.
 *
 * @example `integer(new URLSearchParams('seq=4'), 'seq', 0) // 4`
 */
export function integer(params: URLSearchParams, name: string, min: number): number | undefined {
  const text = params.get(name);
  if (text === null || text === '') return undefined;
  if (!/^\d+$/.test(text) || Number(text) < min || !Number.isSafeInteger(Number(text))) throw new InvalidOptionError(`${name}=${JSON.stringify(text)}: expected an integer of ${min} or more.`);
  return Number(text);
}

/**
 * `limit`, 1 to {@link INSPECTOR_MAX_PAGE}, or `fallback` when absent.
 *
 * @example `pageSize(new URLSearchParams('limit=20'), 50) // 20`
 */
export function pageSize(params: URLSearchParams, fallback: number): number {
  const limit = integer(params, 'limit', 1) ?? fallback;
  if (limit > INSPECTOR_MAX_PAGE) throw new InvalidOptionError(`limit=${limit}: at most ${INSPECTOR_MAX_PAGE} per page.`);
  return limit;
}

/**
 * A segment of a route's path (a thread id), percent-decoded; InvalidOptionError for
 * one whose escapes are not UTF-8 (`%ff`), a bad request, never a 500.
 *
 * @example `pathSegment('q%3Fx%3D1') // 'q?x=1'`
 */
export function pathSegment(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    throw new InvalidOptionError(`the path segment ${JSON.stringify(text)} is not percent-encoded UTF-8: encode the thread id with encodeURIComponent.`);
  }
}

/**
 * A route's thread id: its path segment decoded, and refused as the CLI refuses it when
 * no thread can have it (over 512 characters, a control character): InvalidKeyError,
 * a 400, not a 404 that says there is no such thread.
 */
export function threadSegment(text: string): string {
  const id = pathSegment(text);
  checkThreadId(id);
  return id;
}
