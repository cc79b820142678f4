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
  // One string, one update: each part prefixed by its UTF-16 length (unambiguous framing).
  let framed = `${input.parentHash}${frame(input.header)}${frame(input.body)}`;
  for (const item of input.items) framed += frame(item.field) + frame(item.text);
  return createHash('sha256').update(framed).digest('hex');
}

function frame(text: string): string {
  return `${text.length}:${text}`;
}
