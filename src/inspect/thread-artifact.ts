/**
 * @module inspect/thread-artifact
 * Opens an artifact a thread's state refers to, for a viewer: the ref is looked up in
 * the stored state at a position (so a caller names an id, never a media type or a
 * digest of its own), and its bytes come from the artifact store verified against
 * the ref's sha256 before the first byte is handed over.
 *
 * @example
 * ```ts
 * const { ref, stream } = await openThreadArtifact({ checkpointer: engine.checkpointer, artifacts }, 'cust_42', { seq: 3, id: 'key:summary-42.txt' });
 * for await (const chunk of stream) process.stdout.write(chunk);
 * ```
 */
import type { ArtifactRef, ArtifactStore } from '../contracts/artifact-store.js';
import type { Checkpointer } from '../contracts/checkpointer.js';
import { findArtifactRefs } from '../artifacts/refs.js';
import { ArtifactNotFoundError } from '../errors.js';
import { storedState } from './stored-state.js';

/** Which artifact {@link openThreadArtifact} opens: a ref id in the state at a position. */
export interface ThreadArtifactOptions {
  /** The checkpoint namespace; default '' (the root graph). */
  ns?: string;
  /** The position whose state holds the ref; default the namespace's head. */
  seq?: number;
  /** The ref's `id` (`key:…`, `sha256:…`, behind `tenant:<t>/` for a tenant's). */
  id: string;
}

/** An opened artifact: the ref as the state holds it and its verified bytes. */
export interface OpenedArtifact {
  ref: ArtifactRef;
  stream: ReadableStream<Uint8Array>;
}

/**
 * The artifact with ref id `options.id` in the stored state of thread `threadId` at
 * position `seq` of `ns`, with its bytes as a stream verified before the first chunk.
 * The errors of {@link storedState}; ArtifactNotFoundError when the state holds no
 * such ref or the store has no such artifact; ArtifactIntegrityError when the bytes
 * do not match the ref.
 *
 * @example
 * ```ts
 * try {
 *   const { ref, stream } = await openThreadArtifact({ checkpointer, artifacts }, 't1', { id: ref.id });
 * } catch (error) {
 *   if (ArtifactIntegrityError.is(error)) console.log('corrupt');
 * }
 * ```
 */
export async function openThreadArtifact(
  source: { checkpointer: Checkpointer; artifacts: ArtifactStore },
  threadId: string,
  options: ThreadArtifactOptions,
): Promise<OpenedArtifact> {
  const { state, seq } = await storedState(source.checkpointer, threadId, { ...(options.ns ? { ns: options.ns } : {}), ...(options.seq !== undefined ? { seq: options.seq } : {}) });
  const ref = findArtifactRefs(state).find((r) => r.id === options.id);
  if (!ref) {
    throw new ArtifactNotFoundError(`its state holds no artifact ref ${JSON.stringify(options.id)}: open a ref from that position's state.`, {
      place: { engine: source.checkpointer.engine, thread: threadId, ...(options.ns ? { ns: options.ns } : {}), seq },
    });
  }
  return { ref, stream: await source.artifacts.stream(ref, { verify: 'before' }) };
}
