/**
 * @module codec/hash
 * SHA-256 helpers and the thread log's integrity chain:
 * `hash(position) = H(parent hash ‖ header ‖ body ‖ appended items)`.
 * The input is framed with lengths so that no two different records hash alike.
 */
import { createHash } from 'node:crypto';

/** Hash of the (virtual) parent of a thread's first position. */
export const GENESIS_HASH = '0'.repeat(64);

/** Lowercase hex SHA-256 of a string (UTF-8) or bytes. */
export function sha256Hex(data: string | Uint8Array): string {
  return createHash('sha256').update(data).digest('hex');
}

/** What the chain hashes for one position. */
export interface ChainInput {
  parentHash: string;
  /** Canonical text of the position's header columns. */
  header: string;
  /** Canonical text of the position's body. */
  body: string;
  /** Appended items of this position, in (field, index) order. */
  items: readonly { field: string; text: string }[];
}

/** Computes a position's chain hash. */
export function chainHash(input: ChainInput): string {
  const h = createHash('sha256');
  h.update(Buffer.from(input.parentHash, 'hex'));
  frame(h, input.header);
  frame(h, input.body);
  for (const item of input.items) {
    frame(h, item.field);
    frame(h, item.text);
  }
  return h.digest('hex');
}

function frame(h: ReturnType<typeof createHash>, text: string): void {
  h.update(`${Buffer.byteLength(text)}:`);
  h.update(text);
}
