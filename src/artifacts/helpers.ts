/**
 * @module artifacts/helpers
 * Conveniences over any {@link ArtifactStore}: walking every page of a listing,
 * and keeping a large value (a tool's output, a page of text, a JSON document)
 * out of state by storing it as an artifact and keeping only its ref.
 */
import type { ArtifactInfo, ArtifactListOptions, ArtifactRef, ArtifactStore } from '../contracts/artifact-store.js';
import { decode, encode } from '../codec/tagged-json.js';
import { InvalidOptionError } from '../errors.js';

/**
 * Every artifact of a store, page by page.
 *
 * @example
 * ```ts
 * for await (const { ref, freshAt } of listArtifacts(artifacts)) console.log(ref.id, new Date(freshAt));
 * ```
 */
export async function* listArtifacts(store: ArtifactStore, options: Omit<ArtifactListOptions, 'cursor'> = {}): AsyncGenerator<ArtifactInfo> {
  let cursor: string | undefined;
  do {
    const page = await store.list({ ...options, ...(cursor !== undefined ? { cursor } : {}) });
    yield* page.items;
    cursor = page.cursor ?? undefined;
  } while (cursor !== undefined);
}

/** Media type of values stored by {@link storeValue} that are not strings or bytes: cairn's tagged JSON. */
export const VALUE_MEDIA_TYPE = 'application/vnd.cairn.value+json';

/** Options of {@link storeValue}. */
export interface StoreValueOptions {
  /** Defaults: `text/plain; charset=utf-8` for strings, `application/octet-stream` for bytes, {@link VALUE_MEDIA_TYPE} otherwise. */
  mediaType?: string;
  /** Store under this idempotency key instead of by content. */
  key?: string;
  metadata?: Record<string, string>;
}

/**
 * Turns a large value into an artifact and returns its ref: strings as UTF-8 text,
 * bytes as they are, anything else as tagged JSON (Dates, BigInts, Maps... survive).
 * Content-addressed unless a key is given, so storing the same output twice (a
 * re-executed step) stores it once. Read it back with {@link loadValue}.
 *
 * Inside a node, prefer `ctx.recordArtifact(name, fn)`, which also records the ref so a
 * re-executed step is served it without calling `fn` again.
 *
 * @example
 * ```ts
 * const ref = await storeValue(artifacts, hugeToolResult); // { id: 'sha256:…', … }
 * return { result: ref };                                  // state keeps ~150 bytes
 * ```
 */
export function storeValue(store: ArtifactStore, value: unknown, options: StoreValueOptions = {}): Promise<ArtifactRef> {
  let body: string | Uint8Array;
  let mediaType: string;
  if (typeof value === 'string') [body, mediaType] = [value, 'text/plain; charset=utf-8'];
  else if (value instanceof Uint8Array) [body, mediaType] = [value, 'application/octet-stream'];
  else [body, mediaType] = [encode(value, 'artifact value'), VALUE_MEDIA_TYPE];
  return store.put(body, { mediaType: options.mediaType ?? mediaType, ...(options.key !== undefined ? { key: options.key } : {}), ...(options.metadata ? { metadata: options.metadata } : {}) });
}

/**
 * Reads back (verified) what {@link storeValue} stored: the decoded value for
 * tagged JSON, a string for `text/*`, bytes otherwise.
 *
 * @example
 * ```ts
 * const result = await loadValue<SearchResults>(artifacts, state.result);
 * ```
 */
export async function loadValue<T = unknown>(store: ArtifactStore, ref: ArtifactRef): Promise<T> {
  const bytes = await store.get(ref);
  if (ref.media_type === VALUE_MEDIA_TYPE) return decode<T>(new TextDecoder().decode(bytes), `artifact ${ref.id}`);
  if (ref.media_type.startsWith('text/')) return new TextDecoder().decode(bytes) as T;
  return bytes as T;
}

/** Parses `30d`, `12h`, `15m`, `10s`, `500ms` or a number of ms. */
export function parseDuration(text: string | number): number {
  if (typeof text === 'number') {
    if (Number.isFinite(text) && text >= 0) return text;
  } else {
    const match = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d|w)?\s*$/.exec(text);
    if (match) {
      const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 }[(match[2] ?? 'ms') as 'ms'];
      return Number(match[1]) * unit;
    }
  }
  throw new InvalidOptionError(`${JSON.stringify(text)} is not a duration: use a number of ms or e.g. 500ms, 10s, 15m, 12h, 30d, 2w.`);
}
