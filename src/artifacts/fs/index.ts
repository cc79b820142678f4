/**
 * @module cairn/fs
 * The filesystem artifact store: big payloads (PDFs, model outputs, datasets) kept
 * as files under one directory and referenced from state by an `ArtifactRef`.
 * Content is addressed by sha256 and every read is verified against the ref; writes
 * are atomic and durable (temp file, fsync, rename), so a crash leaves no artifact or
 * a whole one, and several processes may share the directory.
 *
 * @example
 * ```ts
 * import { fsArtifacts } from 'cairn/fs';
 *
 * const artifacts = fsArtifacts('./.cairn/artifacts');
 * const ref = await artifacts.putNamed('invoice/2024-0042', pdfBytes, { mediaType: 'application/pdf' });
 * // after a crash, the recovery probe: was it stored?
 * const stored = await artifacts.head('invoice/2024-0042'); // the same ref, or null
 * const bytes = await artifacts.get(ref); // throws ArtifactIntegrityError if the file was damaged
 * ```
 */
export { FsArtifactStore, fsArtifacts } from './fs-artifact-store.js';
export type { FsArtifactStoreOptions, SweepTempOptions } from './fs-artifact-store.js';
