/**
 * @module codec/hash
 * SHA-256 helpers and the thread log's integrity chain:
 * `hash(position) = H(parent hash ‖ header ‖ body ‖ appended items)`.
 * The input is framed with lengths so that no two different records hash alike.
 */
import { createHash, type Hash } from 'node:crypto';

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

/** A character outside Latin-1: a text that has one is hashed as UTF-16. */
const WIDE = /[^\u0000-\u00ff]/;

/** Gathers short texts so that the hash is fed in large pieces (one call per 64 KiB, not per item). */
const scratch = Buffer.allocUnsafe(64 * 1024);

/**
 * A running digest over an ordered list of item texts (one append field's items, as
 * a snapshot points at them): SHA-256 over the texts, then over their lengths, so
 * that moving a boundary between two items changes it too. `extend` returns a new
 * digest and leaves this one as it was: a cursor moves its digests only once a
 * commit lands.
 *
 * Each text is hashed as its Latin-1 bytes when every character is below U+0100 (a
 * plain copy of the string, the common case) and as UTF-16LE otherwise, the lengths
 * list telling which: both are exact, and this is the part of a long thread's load
 * that touches every byte, so it is kept to a copy and the hash itself.
 *
 * @example
 * ```ts
 * const d = ItemDigest.of(['"a"', '"b"']);
 * d.extend(['"c"']).value();   // the digest of ["a","b","c"]
 * ```
 */
export class ItemDigest {
  private constructor(
    private readonly hash: Hash,
    /** Lengths of the items (negative: hashed as UTF-16), shared by the digests extended from one another: this one covers `count` of them. */
    private readonly lengths: number[],
    readonly count: number,
  ) {}

  /** The digest of `texts`. */
  static of(texts: readonly string[]): ItemDigest {
    return new ItemDigest(createHash('sha256'), [], 0).extend(texts);
  }

  /** This digest with `texts` added after its items. */
  extend(texts: readonly string[]): ItemDigest {
    if (texts.length === 0) return this;
    const hash = this.hash.copy();
    // The shared array grows only past this digest's own items; a sibling that already
    // grew it past `count` gets a copy of the prefix instead.
    const lengths = this.lengths.length === this.count ? this.lengths : this.lengths.slice(0, this.count);
    let filled = 0;
    const flush = () => {
      if (filled) hash.update(scratch.subarray(0, filled));
      filled = 0;
    };
    for (let i = 0; i < texts.length; i++) {
      const text = texts[i]!;
      if (WIDE.test(text)) {
        flush();
        hash.update(text, 'utf16le');
        lengths.push(-text.length);
        continue;
      }
      if (filled + text.length > scratch.length) flush();
      if (text.length > scratch.length) hash.update(text, 'latin1');
      else filled += scratch.write(text, filled, 'latin1');
      lengths.push(text.length);
    }
    flush();
    return new ItemDigest(hash, lengths, this.count + texts.length);
  }

  /** Lowercase hex digest of the items so far. */
  value(): string {
    const hash = this.hash.copy();
    hash.update(`|${this.lengths.slice(0, this.count).join(',')}`);
    return hash.digest('hex');
  }
}
