/**
 * @module codec/hash
 * SHA-256 helpers and the thread log's integrity chain:
 * `hash(position) = H(parent hash ‖ header ‖ body ‖ appended items)`.
 * The input is framed with lengths so that no two different records hash alike.
 */
import * as nodeCrypto from 'node:crypto';
import zlib from 'node:zlib';

/**
 * Lowercase hex SHA-256 through `crypto.hash` (one call, no Hash object: a third of
 * the cost for the short texts a step hashes) where the runtime has it (Node.js
 * 20.12+), else through `createHash`. Same bytes either way: strings as UTF-8.
 */
const sha256: (data: string | Uint8Array) => string =
  typeof (nodeCrypto as { hash?: unknown }).hash === 'function'
    ? (data) => (nodeCrypto as unknown as { hash(algorithm: string, data: string | Uint8Array, encoding: 'hex'): string }).hash('sha256', data, 'hex')
    : (data) => nodeCrypto.createHash('sha256').update(data).digest('hex');

/** Hash of the (virtual) parent of a thread's first position. */
export const GENESIS_HASH = '0'.repeat(64);

/**
 * Lowercase hex SHA-256 of a string (UTF-8) or bytes.
 *
 * @example `sha256Hex('abc') // 'ba7816bf…'`
 */
export function sha256Hex(data: string | Uint8Array): string {
  return sha256(data);
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
  return sha256(framed);
}

function frame(text: string): string {
  return `${text.length}:${text}`;
}

/** A character outside Latin-1: a text that has one is checksummed as UTF-16. */
const WIDE = /[^\u0000-\u00ff]/;

/** Gathers short texts so that the checksum is fed in large pieces (one call per 64 KiB, not per item). */
const scratch = Buffer.allocUnsafe(64 * 1024);

/**
 * Copies a Latin-1 text into `buffer` at `offset`, returning the bytes written.
 * `latin1Write` is Buffer's own copy without `write()`'s argument handling, which
 * costs as much as the copy for 1 KB texts; `write()` where a runtime lacks it.
 */
type Latin1Writer = { latin1Write(text: string, offset: number): number };
const writeLatin1: (buffer: Buffer, text: string, offset: number) => number =
  typeof (scratch as unknown as Partial<Latin1Writer>).latin1Write === 'function'
    ? (buffer, text, offset) => (buffer as unknown as Latin1Writer).latin1Write(text, offset)
    : (buffer, text, offset) => buffer.write(text, offset, 'latin1');

let crcTable: Int32Array | undefined;

/**
 * CRC-32 (ISO-HDLC, zlib's) of `bytes` continuing from `crc`, in JavaScript: for
 * runtimes without `zlib.crc32` (Node.js before 20.15). Internal.
 */
export function crc32Js(bytes: Uint8Array, crc = 0): number {
  const table = (crcTable ??= Int32Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c;
  }));
  let c = ~crc;
  for (let i = 0; i < bytes.length; i++) c = table[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}

/** CRC-32 of `bytes` continuing from `crc`: zlib's native one, or the same function in JavaScript. */
const crc32: (bytes: Uint8Array, crc: number) => number =
  typeof (zlib as { crc32?: unknown }).crc32 === 'function' ? (bytes, crc) => zlib.crc32(bytes, crc) : crc32Js;

/** Gathers the items' lengths as 32-bit little-endian integers, checksummed beside the texts. */
const lengthScratch = Buffer.allocUnsafe(4 * 1024);
const lengthView = new DataView(lengthScratch.buffer, lengthScratch.byteOffset, lengthScratch.byteLength);

/**
 * A running checksum over an ordered list of item texts: what a snapshot keeps of the
 * items it points at below it, so that a load can check them as it reads them
 * without walking the positions that appended them. Two CRC-32s: one over the texts,
 * one over their lengths (so that moving a boundary between two items changes it
 * too), with the count beside them. It detects every change of up to 32 consecutive
 * bits (any one byte) with certainty and other damage but for one chance in 2^32:
 * the class of check storage engines keep on their pages. It lives inside the
 * snapshot, which is sealed with SHA-256, and `verify` checks the items against the
 * SHA-256 chain.
 *
 * A checksum rather than SHA-256 because this is the one part of a long thread's load
 * that touches every byte: on 5,000 1 KB items it costs about 2 ms where SHA-256
 * costs 5 ms, a sixth of the whole load. Each text counts as its Latin-1 bytes when
 * every character is below U+0100 (a plain copy of the string, the common case) and
 * as UTF-16LE otherwise, the lengths telling which (a negative length).
 *
 * Immutable: `extend` returns a new checksum (a cursor moves its checksums only once
 * a commit lands), and extending and reading it cost what the new items cost, never
 * what the list already holds.
 *
 * @example
 * ```ts
 * const c = ItemChecksum.of(['"a"', '"b"']);
 * c.extend(['"c"']).value();   // 'crc32:…', the checksum of ["a","b","c"]
 * ```
 */
export class ItemChecksum {
  private constructor(
    private readonly texts: number,
    private readonly lengths: number,
    readonly count: number,
  ) {}

  /** The checksum of `texts`. */
  static of(texts: readonly string[]): ItemChecksum {
    return new ItemChecksum(0, 0, 0).extend(texts);
  }

  /** This checksum with `texts` added after its items. */
  extend(texts: readonly string[]): ItemChecksum {
    if (texts.length === 0) return this;
    let crc = this.texts;
    let lengthCrc = this.lengths;
    let filled = 0;
    let lengthsFilled = 0;
    const flush = () => {
      if (filled) crc = crc32(scratch.subarray(0, filled), crc);
      filled = 0;
    };
    const addLength = (length: number) => {
      if (lengthsFilled === lengthScratch.length) {
        lengthCrc = crc32(lengthScratch, lengthCrc);
        lengthsFilled = 0;
      }
      lengthView.setInt32(lengthsFilled, length, true);
      lengthsFilled += 4;
    };
    for (let i = 0; i < texts.length; i++) {
      const text = texts[i]!;
      if (WIDE.test(text)) {
        flush();
        crc = crc32(Buffer.from(text, 'utf16le'), crc);
        addLength(-text.length);
        continue;
      }
      if (filled + text.length > scratch.length) flush();
      if (text.length > scratch.length) crc = crc32(Buffer.from(text, 'latin1'), crc);
      else filled += writeLatin1(scratch, text, filled);
      addLength(text.length);
    }
    flush();
    if (lengthsFilled) lengthCrc = crc32(lengthScratch.subarray(0, lengthsFilled), lengthCrc);
    return new ItemChecksum(crc, lengthCrc, this.count + texts.length);
  }

  /**
   * This checksum with texts added that are given as their ASCII bytes: `lengths[i]`
   * bytes of `bytes` from `starts[i]` (a text below U+0080 counts as its Latin-1 bytes,
   * which are these). The same value as {@link extend} of those texts, without making them.
   */
  extendBytes(bytes: Uint8Array, starts: readonly number[], lengths: readonly number[]): ItemChecksum {
    if (starts.length === 0) return this;
    let crc = this.texts;
    let lengthCrc = this.lengths;
    let lengthsFilled = 0;
    // Runs of adjacent texts are checksummed in one call.
    let runStart = starts[0]!;
    let runEnd = runStart;
    for (let i = 0; i < starts.length; i++) {
      if (starts[i] !== runEnd) {
        crc = crc32(bytes.subarray(runStart, runEnd), crc);
        runStart = starts[i]!;
      }
      runEnd = starts[i]! + lengths[i]!;
      if (lengthsFilled === lengthScratch.length) {
        lengthCrc = crc32(lengthScratch, lengthCrc);
        lengthsFilled = 0;
      }
      lengthView.setInt32(lengthsFilled, lengths[i]!, true);
      lengthsFilled += 4;
    }
    crc = crc32(bytes.subarray(runStart, runEnd), crc);
    if (lengthsFilled) lengthCrc = crc32(lengthScratch.subarray(0, lengthsFilled), lengthCrc);
    return new ItemChecksum(crc, lengthCrc, this.count + starts.length);
  }

  /** `crc32:<16 hex>` (the texts' CRC, then the lengths'), the algorithm named so that another can follow. */
  value(): string {
    return `crc32:${this.texts.toString(16).padStart(8, '0')}${this.lengths.toString(16).padStart(8, '0')}`;
  }
}
