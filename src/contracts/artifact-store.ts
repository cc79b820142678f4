/**
 * @module contracts/artifact-store
 * Big payloads kept out of state, referenced by an {@link ArtifactRef}.
 *
 * Contract:
 * - `put` without a key is content-addressed: identical bytes are stored once and
 *   get the same ref (`id` = `sha256:<hex>`).
 * - `putNamed(key, …)` is idempotent by key: when the key exists its ref is returned
 *   and nothing is written (`id` = `key:<key>`). `head(key)` answers whether it exists:
 *   it is the recovery probe after a crash.
 * - A write is all or nothing: a crash leaves no artifact or a whole one.
 * - `get(ref)` verifies size and sha256 and throws {@link ArtifactIntegrityError}
 *   before handing over bytes that do not match.
 * - Keys are validated before any path or object key is built ({@link InvalidKeyError}).
 */

/** A reference to a stored artifact: small enough to keep in state. */
export interface ArtifactRef {
  id: string;
  sha256: string;
  media_type: string;
  size_bytes: number;
}

export type ArtifactData = Uint8Array | string;

export interface ArtifactPutOptions {
  mediaType: string;
  /** Store under this idempotency key instead of by content. */
  key?: string;
}

export interface ArtifactStore {
  readonly backend: string;
  put(data: ArtifactData, options: ArtifactPutOptions): Promise<ArtifactRef>;
  putNamed(key: string, data: ArtifactData, options: { mediaType: string }): Promise<ArtifactRef>;
  head(key: string): Promise<ArtifactRef | null>;
  get(ref: ArtifactRef): Promise<Uint8Array>;
  delete(ref: ArtifactRef): Promise<void>;
  list(): Promise<ArtifactRef[]>;
  close?(): Promise<void>;
}
