/**
 * @module crypto/bulk-open
 * Opening many sealed texts of one read at once (a field's items at a head load),
 * without their tags: a GCM context per row would cost more than the load itself
 * (about 12 µs each, 60 ms for a 5,000-item list).
 *
 * GCM encrypts with CTR from the block after the IV's first counter, so the keystream
 * of every row is AES over counter blocks: AES-ECB over all of them makes it. Rows opened
 * this way are still proven by what proves plaintext rows (the chain hash of each
 * position above the snapshot, the snapshot's item checksum below it); `verify` opens
 * every row with its tag.
 */
import { isAscii } from 'node:buffer';
import { createCipheriv, createDecipheriv } from 'node:crypto';
import { DecryptionError } from '../errors.js';
import { IV_BYTES, SEALED_PREFIX, TAG_BYTES, type DataKey } from './envelope.js';
import { sealedBytesHeader, sealedBytesHeaderFor, sealedBytesKeyId } from './sealed-bytes.js';

const BLOCK = 16;

/**
 * Decrypts many sealed rows under one key without checking their tags, and returns the
 * plaintexts in order, or null when some row names another key (the caller groups the
 * rows by key then). A row is the sealed text or the sealed bytes an engine stored it as
 * (crypto/sealed-bytes, as the SQLite engine does): bytes are copied in as they are, a
 * text's base64 decoded.
 *
 * Everything happens in one WebAssembly memory, with no per-row Buffer, cipher or copy
 * but the row's own: each row gets a slot of whole 16-byte blocks in the data region,
 * its ciphertext starting on a block (the body offset), its IV right before it and,
 * for sealed bytes, their header before that. The kernel checks every header names the
 * key. Then, a window of rows at a time (about 64 KiB of bodies), it writes the rows'
 * counter blocks (`iv ‖ n`, from 2) into a scratch region, AES-ECB turns them into the
 * keystream in place, and the kernel XORs it into the window's data; last it zeroes
 * what is not a body. The scratch stays in cache, and a fresh process does not fault in
 * a second region as large as the data (a counter block per data block cost about
 * 3 ms of a 5,000-item load that way).
 *
 * Then, when every body is ASCII (JSON mostly is), the whole data region is read as one
 * string and each plaintext is a slice of it: 5,000 strings of a kilobyte decoded one
 * by one cost more than the decryption, most of it in the garbage collector moving them.
 * Otherwise each body is decoded as UTF-8 on its own.
 */
export function openTextsUnchecked(key: DataKey, rows: readonly (string | Uint8Array)[], where: string): string[] | null {
  const count = rows.length;
  if (count === 0) return [];
  if (!wasm) return openEachRowUnchecked(key, rows, where);
  const textPrefix = `${SEALED_PREFIX}${key.id}:`;
  const expected = sealedBytesHeaderFor(key.id);
  // Per row: where its base64 starts (-1 for bytes), the length of iv ‖ ciphertext ‖ tag,
  // and the body offset.
  const from = new Array<number>(count);
  const packedBytes = new Array<number>(count);
  const bodies = new Array<number>(count);
  let size = 0;
  /** The scratch a window's counter blocks need: a window, or one row's body when larger. */
  let scratchBytes = WINDOW_BYTES;
  for (let p = 0; p < count; p++) {
    const row = rows[p]!;
    let bytes: number;
    let header = 0;
    if (typeof row === 'string') {
      if (!row.startsWith(textPrefix)) return anotherKey(row, where);
      bytes = base64Bytes(row, textPrefix.length);
      from[p] = textPrefix.length;
    } else {
      header = sealedBytesHeader(row);
      bytes = header < 0 ? -1 : row.length - header;
      from[p] = -1;
    }
    if (bytes < IV_BYTES + TAG_BYTES) throw new DecryptionError(`${where}: the sealed row is truncated or malformed.`);
    packedBytes[p] = bytes;
    const body = size + blocksOf(header + IV_BYTES);
    bodies[p] = body;
    // The tag stays in the slot, after the body.
    size = body + blocksOf(bytes - IV_BYTES);
    scratchBytes = Math.max(scratchBytes, blocksOf(bytes - IV_BYTES - TAG_BYTES));
  }
  // Data at [0, size), the scratch for counters then keystream after it, the row table
  // after that, then the header every sealed-bytes row must have.
  const scratchAt = size;
  const tableAt = scratchAt + scratchBytes;
  const expectedAt = tableAt + 16 * count;
  const memory = new wasm.Memory({ initial: Math.ceil((expectedAt + expected.length) / 65_536) });
  const data = Buffer.from(memory.buffer, 0, size);
  const table = new Int32Array(memory.buffer, tableAt, 4 * count);
  Buffer.from(memory.buffer, expectedAt, expected.length).set(expected);
  for (let p = 0; p < count; p++) {
    const row = rows[p]!;
    const ivAt = bodies[p]! - IV_BYTES;
    let headerAt = -1;
    if (typeof row !== 'string') {
      headerAt = ivAt - (row.length - packedBytes[p]!);
      data.set(row, headerAt);
    } else if (data.write(row.slice(from[p]), ivAt, packedBytes[p]!, 'base64') !== packedBytes[p]) {
      throw new DecryptionError(`${where}: the sealed row is truncated or malformed.`);
    }
    const length = packedBytes[p]! - IV_BYTES - TAG_BYTES;
    table[4 * p] = bodies[p]!;
    table[4 * p + 1] = Math.ceil(length / BLOCK);
    table[4 * p + 2] = length;
    table[4 * p + 3] = headerAt;
  }
  const kernel = kernelOver(memory);
  const stranger = kernel.k(tableAt, count, expectedAt, expected.length);
  if (stranger >= 0) return anotherKey(rows[stranger]!, where);
  const ecb = createCipheriv('aes-256-ecb', key.key, null);
  ecb.setAutoPadding(false);
  for (let first = 0; first < count; ) {
    // The window: rows from `first` while their bodies' blocks, from the first body on,
    // fit the scratch (always at least one row).
    const start = bodies[first]!;
    let end = start + 16 * table[4 * first + 1]!;
    let last = first + 1;
    while (last < count && bodies[last]! + 16 * table[4 * last + 1]! - start <= scratchBytes) {
      end = bodies[last]! + 16 * table[4 * last + 1]!;
      last++;
    }
    // `c` writes a row's counters at counters + body: this base puts the window's first
    // body at the scratch (i32 arithmetic wraps, as the kernel's does).
    kernel.c(tableAt + 16 * first, last - first, (scratchAt - start) | 0);
    const scratch = Buffer.from(memory.buffer, scratchAt, end - start);
    scratch.set(ecb.update(scratch));
    // XORs the gaps between the window's bodies too (IVs already read, tags, headers),
    // which `z` zeroes below.
    kernel.x(start, scratchAt, end - start);
    first = last;
  }
  kernel.z(tableAt, count, size);
  const out = new Array<string>(count);
  if (isAscii(data)) {
    const all = data.toString('latin1');
    for (let p = 0; p < count; p++) out[p] = all.slice(bodies[p], bodies[p]! + table[4 * p + 2]!);
  } else {
    for (let p = 0; p < count; p++) out[p] = data.toString('utf8', bodies[p], bodies[p]! + table[4 * p + 2]!);
  }
  return out;
}

/**
 * {@link openTextsUnchecked} without WebAssembly (`node --jitless` has none): each row
 * decrypted with an AES-CTR cipher of its own from GCM's first data counter, the same
 * plaintext without the tag, at about 5 µs a row.
 */
export function openEachRowUnchecked(key: DataKey, rows: readonly (string | Uint8Array)[], where: string): string[] | null {
  const textPrefix = `${SEALED_PREFIX}${key.id}:`;
  const expected = sealedBytesHeaderFor(key.id);
  const out = new Array<string>(rows.length);
  const counter = Buffer.alloc(BLOCK);
  for (let p = 0; p < rows.length; p++) {
    const row = rows[p]!;
    let packed: Buffer;
    if (typeof row === 'string') {
      if (!row.startsWith(textPrefix)) return anotherKey(row, where);
      packed = Buffer.from(row.slice(textPrefix.length), 'base64');
      if (packed.length !== base64Bytes(row, textPrefix.length)) packed = Buffer.alloc(0);
    } else {
      const all = Buffer.from(row.buffer, row.byteOffset, row.length);
      if (sealedBytesHeader(all) !== expected.length || !all.subarray(0, expected.length).equals(expected)) return anotherKey(row, where);
      packed = all.subarray(expected.length);
    }
    if (packed.length < IV_BYTES + TAG_BYTES) throw new DecryptionError(`${where}: the sealed row is truncated or malformed.`);
    packed.copy(counter, 0, 0, IV_BYTES);
    counter.writeUInt32BE(2, IV_BYTES);
    const ctr = createDecipheriv('aes-256-ctr', key.key, counter);
    out[p] = Buffer.concat([ctr.update(packed.subarray(IV_BYTES, packed.length - TAG_BYTES)), ctr.final()]).toString('utf8');
  }
  return out;
}

/**
 * A row under another key, or a plaintext text (an engine that does not require encryption
 * reads those), means null: the caller sorts the rows out one by one. Bytes that are not
 * sealed bytes are malformed.
 */
function anotherKey(row: string | Uint8Array, where: string): null {
  if (typeof row !== 'string' && sealedBytesKeyId(row) === null) throw new DecryptionError(`${where}: the sealed row is truncated or malformed.`);
  return null;
}

/** The bytes the base64 of `text` from `from` encodes, or -1 when its length is not whole groups of four. */
function base64Bytes(text: string, from: number): number {
  const chars = text.length - from;
  return chars % 4 !== 0 ? -1 : (chars >> 2) * 3 - (text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0);
}

/** Bytes of row bodies whose keystream is made per AES call: a multiple of the block. */
const WINDOW_BYTES = 64 * 1024;

/** `n` bytes rounded up to whole blocks. */
function blocksOf(n: number): number {
  return Math.ceil(n / BLOCK) * BLOCK;
}

/**
 * bulk-open.wat compiled (with SIMD, which Node has had since 16): `x(a, b, n)` XORs
 * memory[b, b + n) into memory[a, a + n);
 * `k(table, rows, expected, length)` finds a row whose header is not the expected one;
 * `c(table, rows, counters)` writes the counter blocks of the rows the table lists;
 * `z(table, rows, size)` zeroes [0, size) outside their bodies.
 */
const KERNEL_WASM = Buffer.from(
  'AGFzbQEAAAABDwJgA39/fwBgBH9/f38BfwIKAQFtA21lbQIAAQMFBAABAAAHEQQBeAAAAWsAAQFjAAIBegADCogDBDcBAX8CQANAIAMgAk8NASAAIANqIAAgA2r9AAQAIAEgA2r9AAQA/VH9CwQAIANBEGohAwwACwsLYwEDfwJAA0AgBCABTw0BIAAoAgwhBSAFQQBOBEBBACEGAkADQCAGIANPDQEgBSAGai0AACACIAZqLQAARwRAIAQPCyAGQQFqIQYMAAsLCyAAQRBqIQAgBEEBaiEEDAALC0F/C5sBAwR/AXsBfyAAIAFBBHRqIQMCQANAIAAgA08NASAAKAIAIQQgBEEMa/0ABAAhByACIARqIQUgBSAAKAIEQQR0aiEGQQIhCAJAA0AgBSAGTw0BIAUgByAIQRh0IAhBgP4DcUEIdHIgCEEIdkGA/gNxIAhBGHZycv0cA/0LBAAgCEEBaiEIIAVBEGohBQwACwsgAEEQaiEADAALCwtNAQN/IAAgAUEEdGohAwJAA0AgACADTw0BIAAoAgAhBSAEQQAgBSAEa/wLACAFIAAoAghqIQQgAEEQaiEADAALCyAEQQAgAiAEa/wLAAs=',
  'base64',
);

/** The part of the WebAssembly API used here (Node's global; its types are not in this project's lib). */
interface WasmMemory {
  readonly buffer: ArrayBuffer;
}
interface WasmApi {
  Memory: new (descriptor: { initial: number }) => WasmMemory;
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: Record<string, unknown> };
}
interface Kernel {
  x(a: number, b: number, n: number): void;
  k(table: number, rows: number, expected: number, length: number): number;
  c(table: number, rows: number, counters: number): void;
  z(table: number, rows: number, size: number): void;
}
/** Absent under `node --jitless`: then rows are opened one by one ({@link openEachRowUnchecked}). */
const wasm = (globalThis as unknown as { WebAssembly?: WasmApi }).WebAssembly;
let kernelModule: object | undefined;

function kernelOver(memory: WasmMemory): Kernel {
  kernelModule ??= new wasm!.Module(KERNEL_WASM);
  return new wasm!.Instance(kernelModule, { m: { mem: memory } }).exports as unknown as Kernel;
}

/** The compiled kernel, for the test that checks it against bulk-open.wat. */
export const BULK_OPEN_KERNEL: Uint8Array = KERNEL_WASM;
