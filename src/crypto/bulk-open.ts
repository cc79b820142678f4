/**
 * @module crypto/bulk-open
 * Opening many sealed texts of one read at once (a field's items at a head load),
 * without their tags: a GCM context per row would cost more than the load itself
 * (about 12 µs each, 60 ms for a 5,000-item list).
 *
 * GCM encrypts with CTR from the block after the IV's first counter, so the keystream
 * of every row is AES over counter blocks: one ECB call makes all of them. Rows opened
 * this way are still proven by what proves plaintext rows (the chain hash of each
 * position above the snapshot, the snapshot's item checksum below it); `verify` opens
 * every row with its tag.
 */
import { isAscii } from 'node:buffer';
import { createCipheriv } from 'node:crypto';
import { DecryptionError } from '../errors.js';
import { IV_BYTES, SEALED_PREFIX, TAG_BYTES, type DataKey } from './envelope.js';

const BLOCK = 16;

/**
 * Decrypts many sealed texts under one key without checking their tags. Returns the
 * plaintexts in order.
 *
 * Everything happens in one WebAssembly memory, with no per-row Buffer, cipher or copy:
 * each envelope is decoded into its slot of whole 16-byte blocks in the data region
 * (four spare bytes, the 12-byte IV, then the ciphertext, so that it starts on a
 * block, and the tag); the kernel writes each row's counter blocks (`iv ‖ n`, from 2)
 * at the same offset of the counter region, reading the slots from a table after it;
 * one ECB call turns the counters into the keystream, written back over them; the
 * kernel XORs it into the data and zeroes what is not a body.
 *
 * Then, when every body is ASCII (JSON mostly is), the whole data region is read as one
 * string and each plaintext is a slice of it: 5,000 strings of a kilobyte decoded one
 * by one cost more than the decryption, most of it in the garbage collector moving them.
 * Otherwise each body is decoded as UTF-8 on its own.
 */
export function openTextsUnchecked(key: DataKey, texts: readonly string[], where: string): string[] {
  const count = texts.length;
  if (count === 0) return [];
  const from = new Array<number>(count);
  const packedBytes = new Array<number>(count);
  const slots = new Array<number>(count);
  let size = 0;
  for (let p = 0; p < count; p++) {
    const text = texts[p]!;
    const start = text.startsWith(SEALED_PREFIX) ? text.indexOf(':', SEALED_PREFIX.length) + 1 : 0;
    const chars = text.length - start;
    const bytes = (chars >> 2) * 3 - (text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0);
    if (start === 0 || chars % 4 !== 0 || bytes < IV_BYTES + TAG_BYTES) throw new DecryptionError(`${where}: the sealed row is truncated or malformed.`);
    from[p] = start;
    packedBytes[p] = bytes;
    slots[p] = size;
    // The slot holds the tag too, after the body: whole blocks from the IV's end.
    size += BLOCK + Math.ceil((bytes - IV_BYTES) / BLOCK) * BLOCK;
  }
  // Data at [0, size), counters then keystream at [size, 2 size), the slot table after:
  // (slot, body blocks, body length) per row.
  const tableAt = 2 * size;
  const memory = new wasm.Memory({ initial: Math.ceil((tableAt + 12 * count) / 65_536) });
  const data = Buffer.from(memory.buffer, 0, size);
  const table = new Int32Array(memory.buffer, tableAt, 3 * count);
  for (let p = 0; p < count; p++) {
    const written = data.write(texts[p]!.slice(from[p]), slots[p]! + 4, packedBytes[p]!, 'base64');
    if (written !== packedBytes[p]) throw new DecryptionError(`${where}: the sealed row is truncated or malformed.`);
    const length = packedBytes[p]! - IV_BYTES - TAG_BYTES;
    table[3 * p] = slots[p]!;
    table[3 * p + 1] = Math.ceil(length / BLOCK);
    table[3 * p + 2] = length;
  }
  const kernel = kernelOver(memory);
  kernel.c(tableAt, count, size);
  const ecb = createCipheriv('aes-256-ecb', key.key, null);
  ecb.setAutoPadding(false);
  const counters = Buffer.from(memory.buffer, size, size);
  counters.set(ecb.update(counters));
  kernel.x(0, size, size);
  kernel.z(tableAt, count, size);
  const out = new Array<string>(count);
  if (isAscii(data)) {
    const all = data.toString('latin1');
    for (let p = 0; p < count; p++) out[p] = all.slice(slots[p]! + BLOCK, slots[p]! + BLOCK + table[3 * p + 2]!);
  } else {
    for (let p = 0; p < count; p++) out[p] = data.toString('utf8', slots[p]! + BLOCK, slots[p]! + BLOCK + table[3 * p + 2]!);
  }
  return out;
}

/**
 * bulk-open.wat compiled: `x(a, b, n)` XORs memory[b, b + n) into memory[a, a + n);
 * `c(table, rows, counters)` writes the counter blocks of the rows the table lists;
 * `z(table, rows, size)` zeroes [0, size) outside their bodies.
 */
const KERNEL_WASM = Buffer.from(
  'AGFzbQEAAAABBwFgA39/fwACCgEBbQNtZW0CAAEDBAMAAAAHDQMBeAAAAWMAAQF6AAIKtwIDMwEBfwJAA0AgAyACTw0BIAAgA2ogACADaikDACABIANqKQMAhTcDACADQQhqIQMMAAsLC68BAwR/AX4CfyAAIAFBDGxqIQMCQANAIAAgA08NASAAKAIAIQQgBEEEaikDACEHIARBDGooAgAhCCACIARqQRBqIQUgBSAAKAIEQQR0aiEGQQIhCQJAA0AgBSAGTw0BIAUgBzcDACAFIAg2AgggBSAJQRh0IAlBgP4DcUEIdHIgCUEIdkGA/gNxIAlBGHZycjYCDCAJQQFqIQkgBUEQaiEFDAALCyAAQQxqIQAMAAsLC1ABA38gACABQQxsaiEDAkADQCAAIANPDQEgACgCAEEQaiEFIARBACAFIARr/AsAIAUgACgCCGohBCAAQQxqIQAMAAsLIARBACACIARr/AsACw==',
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
  c(table: number, rows: number, counters: number): void;
  z(table: number, rows: number, size: number): void;
}
const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;
let kernelModule: object | undefined;

function kernelOver(memory: WasmMemory): Kernel {
  kernelModule ??= new wasm.Module(KERNEL_WASM);
  return new wasm.Instance(kernelModule, { m: { mem: memory } }).exports as unknown as Kernel;
}

/** The compiled kernel, for the test that checks it against bulk-open.wat. */
export const BULK_OPEN_KERNEL: Uint8Array = KERNEL_WASM;
