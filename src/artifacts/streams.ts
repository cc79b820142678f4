/**
 * @module artifacts/streams
 * Byte streams in and out of artifact stores: any accepted body as an async
 * iterable of chunks, a hashing tap, and an async iterator as a pull-based
 * `ReadableStream` that reads one chunk ahead at most (so memory stays bounded
 * by the chunk size, whatever the artifact's size).
 */
import { createHash, type Hash } from 'node:crypto';
import type { ArtifactBody } from '../contracts/artifact-store.js';
import { InvalidOptionError } from '../errors.js';

/** Chunk size used when reading blobs. */
export const READ_CHUNK = 256 * 1024;

function isReadableStream(value: unknown): value is ReadableStream<Uint8Array> {
  return typeof (value as ReadableStream | null)?.getReader === 'function';
}

function isAsyncIterable(value: unknown): value is AsyncIterable<unknown> {
  return typeof (value as AsyncIterable<unknown> | null)?.[Symbol.asyncIterator] === 'function';
}

/** True when `body` is a stream (read once) rather than bytes in memory. */
export function isStreamBody(body: unknown): boolean {
  return isReadableStream(body) || (isAsyncIterable(body) && typeof body !== 'string');
}

/** Releases a stream body that will not be read (putNamed of an existing key). */
export async function cancelBody(body: ArtifactBody): Promise<void> {
  try {
    if (isReadableStream(body)) await body.cancel();
    else if (isAsyncIterable(body) && typeof body !== 'string') await body[Symbol.asyncIterator]().return?.();
  } catch {
    // The caller's stream failing to cancel changes nothing about what was stored.
  }
}

function toChunk(value: unknown): Uint8Array {
  if (value instanceof Uint8Array) return value;
  if (typeof value === 'string') return new TextEncoder().encode(value);
  if (value instanceof ArrayBuffer) return new Uint8Array(value);
  throw new InvalidOptionError(`an artifact stream must yield Uint8Array (or string) chunks, got ${Object.prototype.toString.call(value)}.`);
}

/** Any accepted body as chunks, validated. Reading a `ReadableStream` releases its lock when done or abandoned. */
export async function* bodyChunks(body: ArtifactBody, signal?: AbortSignal): AsyncGenerator<Uint8Array> {
  if (typeof body === 'string' || body instanceof Uint8Array) {
    signal?.throwIfAborted();
    yield toChunk(body);
    return;
  }
  if (isReadableStream(body)) {
    const reader = body.getReader();
    try {
      for (;;) {
        signal?.throwIfAborted();
        const { done, value } = await reader.read();
        if (done) return;
        yield toChunk(value);
      }
    } finally {
      // Cancel when abandoned mid-way (a failed write), so the producer stops too.
      await reader.cancel().catch(() => undefined);
      reader.releaseLock();
    }
  }
  if (isAsyncIterable(body)) {
    for await (const value of body) {
      signal?.throwIfAborted();
      yield toChunk(value);
    }
    return;
  }
  throw new InvalidOptionError(`artifact data must be a Uint8Array, a string, a ReadableStream or an AsyncIterable of bytes, got ${Object.prototype.toString.call(body)}.`);
}

/** Counts and hashes the chunks passing through. */
export class HashingTap {
  private readonly hash: Hash = createHash('sha256');
  size = 0;
  chunks = 0;

  constructor(private readonly onChunk?: (index: number) => void) {}

  async *pipe(source: AsyncIterable<Uint8Array>): AsyncGenerator<Uint8Array> {
    for await (const chunk of source) {
      // Called before the chunk is handed on: at index n, chunks 0..n-1 are written.
      this.onChunk?.(this.chunks);
      this.hash.update(chunk);
      this.size += chunk.byteLength;
      this.chunks++;
      yield chunk;
    }
  }

  digest(): string {
    return this.hash.digest('hex');
  }
}

/**
 * A pull-based stream over `source`: one chunk is read per `pull`, so at most one
 * chunk waits in the stream's queue. `onClose` runs once, on end, error or cancel.
 */
export function iteratorStream(source: AsyncIterator<Uint8Array>, onClose: () => Promise<void>): ReadableStream<Uint8Array> {
  let closed = false;
  const close = async () => {
    if (closed) return;
    closed = true;
    await onClose().catch(() => undefined);
  };
  return new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          const next = await source.next();
          if (next.done) {
            await close();
            controller.close();
          } else controller.enqueue(next.value);
        } catch (error) {
          await close();
          controller.error(error);
        }
      },
      async cancel() {
        await source.return?.().catch(() => undefined);
        await close();
      },
    },
    { highWaterMark: 0 },
  );
}

/** Reads a whole stream into one buffer (tests and small artifacts). */
export async function readAll(stream: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>): Promise<Uint8Array> {
  const parts: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of bodyChunks(stream)) {
    parts.push(chunk);
    size += chunk.byteLength;
  }
  const out = new Uint8Array(size);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.byteLength;
  }
  return out;
}
