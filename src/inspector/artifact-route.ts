/**
 * @module inspector/artifact-route
 * `GET /api/threads/:id/artifact?id=<ref id>&seq=&ns=[&download=1]`: the bytes of an
 * artifact the thread's state refers to at that position ({@link openThreadArtifact}),
 * verified against the ref's sha256 before the first byte is sent (a mismatch is a
 * JSON error, `ERR_ARTIFACT_INTEGRITY`, never bytes).
 *
 * The ref's media type is the application's data, so it is not trusted as a
 * content-type: only plain text, JSON and raster images are served inline (as
 * `text/plain; charset=utf-8`, `application/json; charset=utf-8`, or the image's
 * type); everything else, SVG and HTML included, goes out as
 * `application/octet-stream` with `content-disposition: attachment`. Every answer
 * carries a sandboxing content-security-policy of its own.
 *
 * Text is persisted data like the state: a text or JSON artifact (any `text/*`, JSON
 * and `+json` type, inline or downloaded) goes through the thread's redaction rules
 * (its patterns, and the values its path rules hide in the state) unless the inspector
 * shows stored values raw; a changed answer says so (`x-cairn-redacted: true`), and its
 * `x-cairn-sha256` still names the stored bytes. Text too long to read whole
 * (ArtifactTooLargeToRedactError) is refused (413) rather than served in the clear.
 * Images and other binary types are served as stored.
 */
import type { ArtifactRef, ArtifactStore } from '../contracts/artifact-store.js';
import type { Engine } from '../contracts/engine.js';
import { learnHead, redactArtifactText, redactsAsText, threadRedactor, type RedactionChoice } from '../inspect/redaction.js';
import { openThreadArtifact } from '../inspect/thread-artifact.js';
import { integer } from './params.js';

/** What serving an artifact needs: the engine, the artifact store `cairn inspect --artifacts` opened (or none), and how answers are redacted. */
export interface ArtifactRouteContext {
  engine: Engine;
  artifacts?: ArtifactStore;
  redaction?: RedactionChoice;
}

/** The inspector was started without an artifact store: there is nothing to read artifacts from. */
export class NoArtifactStore extends Error {}

/** A response to write: status, headers and the body's chunks (the first already read, so verification is behind us). */
export interface ArtifactResponse {
  status: number;
  headers: Record<string, string>;
  body: AsyncIterable<Uint8Array>;
  /** Lets go of the bytes without reading them (a HEAD request). */
  cancel(): Promise<void>;
}

/** The path of the route, with the thread id in group 1. */
export const ARTIFACT_ROUTE = /^\/api\/threads\/([^/]+)\/artifact$/;

const INLINE_IMAGES = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp', 'image/avif']);

/** How a media type is served: inline with a safe content-type, or as an attachment. */
export function servedType(mediaType: string): { inline: boolean; contentType: string } {
  const type = mediaType.split(';')[0]!.trim().toLowerCase();
  if (type === 'text/plain') return { inline: true, contentType: 'text/plain; charset=utf-8' };
  if (type === 'application/json' || /^application\/[a-z0-9.+-]+\+json$/.test(type)) return { inline: true, contentType: 'application/json; charset=utf-8' };
  if (INLINE_IMAGES.has(type)) return { inline: true, contentType: type };
  return { inline: false, contentType: 'application/octet-stream' };
}

/** A download name from the ref's id: the key's last path part, reduced to safe characters. */
export function downloadName(ref: ArtifactRef): string {
  const id = ref.id.replace(/^tenant:[^/]*\//, '');
  const name = id.startsWith('key:') ? id.slice(4).split('/').pop()! : `${ref.sha256.slice(0, 16)}`;
  return name.replace(/[^A-Za-z0-9._-]/g, '_').slice(0, 120) || 'artifact';
}

/** Opens the artifact a request names and reads its first chunk; throws what {@link openThreadArtifact} throws, or {@link NoArtifactStore}. */
export async function artifactResponse(context: ArtifactRouteContext, threadId: string, params: URLSearchParams): Promise<ArtifactResponse> {
  if (!context.artifacts) throw new NoArtifactStore('this inspector has no artifact store: start it with cairn inspect --db <url> --artifacts <dir|s3 url>.');
  const id = params.get('id') ?? '';
  const seq = integer(params, 'seq', 0);
  const ns = params.get('ns') ?? '';
  const { ref, stream } = await openThreadArtifact({ checkpointer: context.engine.checkpointer, artifacts: context.artifacts }, threadId, { id, ns, ...(seq !== undefined ? { seq } : {}) });
  const reader = stream.getReader();
  // Verification happens before the first chunk: an integrity error is thrown here, before any header is sent.
  const first = await reader.read();
  const { inline, contentType } = servedType(ref.media_type);
  const disposition = inline && params.get('download') !== '1' ? 'inline' : 'attachment';
  const name = downloadName(ref);
  const headers = {
    'content-type': contentType,
    'content-length': String(ref.size_bytes),
    'content-disposition': `${disposition}; filename="${name}"`,
    'content-security-policy': "default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; sandbox",
    'x-cairn-sha256': ref.sha256,
    'x-cairn-media-type': encodeURIComponent(ref.media_type),
  };
  if (redactsAsText(ref.media_type)) {
    const redactor = await threadRedactor(context.engine, threadId, context.redaction);
    if (redactor.active) {
      await learnHead(redactor, context.engine, threadId);
      const { bytes, changed } = await redactArtifactText(redactor, ref, rest(first, reader));
      return {
        status: 200,
        headers: { ...headers, 'content-length': String(bytes.length), ...(changed ? { 'x-cairn-redacted': 'true' } : {}) },
        body: (async function* () {
          yield bytes;
        })(),
        cancel: async () => undefined,
      };
    }
  }
  async function* body(): AsyncIterable<Uint8Array> {
    let done = first.done;
    try {
      if (!first.done) yield first.value;
      while (!done) {
        const next = await reader.read();
        done = next.done;
        if (!next.done) yield next.value;
      }
    } finally {
      // A client that went away (or a HEAD) leaves the rest unread: let the store close its file or request.
      if (!done) await reader.cancel().catch(() => undefined);
    }
  }
  return { status: 200, headers, body: body(), cancel: () => reader.cancel().catch(() => undefined) };
}

/** A verified stream from its first chunk on (a text that is redacted whole); the reader is let go of when a read fails. */
async function* rest(first: { done: boolean; value?: Uint8Array }, reader: { read(): Promise<{ done: boolean; value?: Uint8Array }>; cancel(): Promise<void> }): AsyncIterable<Uint8Array> {
  let next = first;
  let done = false;
  try {
    while (!next.done) {
      if (next.value) yield next.value;
      next = await reader.read();
    }
    done = true;
  } finally {
    if (!done) await reader.cancel().catch(() => undefined);
  }
}
