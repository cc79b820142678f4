/**
 * @module cairn/s3
 * The S3 artifact store: big payloads in an S3-compatible bucket (AWS S3, MinIO,
 * Cloudflare R2, Ceph), referenced from state by an `ArtifactRef`. Streams in and
 * out without holding the payload in memory, stores identical content once,
 * verifies every read, and hands out presigned, expiring read URLs.
 * `@aws-sdk/client-s3` is loaded on first use (install it next to cairn);
 * presigned URLs also need `@aws-sdk/s3-request-presigner`.
 *
 * @example
 * ```ts
 * import { s3Artifacts } from 'cairn/s3';
 *
 * const artifacts = s3Artifacts({ bucket: 'agent-artifacts', prefix: 'prod/', client: { region: 'eu-west-1' } });
 * const ref = await artifacts.putNamed('invoice/2024-0042', pdfStream, { mediaType: 'application/pdf' });
 * const url = await artifacts.presignGet(ref, { expiresIn: 300 });
 * ```
 */
export { S3ArtifactStore, s3Artifacts } from './s3-artifact-store.js';
export type { S3ArtifactStoreOptions, S3ClientLike, PresignOptions } from './s3-artifact-store.js';
