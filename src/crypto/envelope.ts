/**
 * @module crypto/envelope
 * The sealed form of one stored text: AES-256-GCM under a data key, with the row's
 * identity as associated data, written where the plaintext would have been.
 *
 * `~c1:<key id>:<base64 of iv ‖ ciphertext ‖ tag>`. The `~` can never begin the
 * canonical JSON cairn stores, so a reader tells a sealed row from a plaintext one by
 * its first character, and an engine that requires encryption refuses the latter.
 * The key id travels with the row: data keys rotate for new writes while old rows
 * keep opening with the key they were sealed with.
 *
 * Two ways to open: {@link openText} checks the tag (and so the associated data) of
 * one row; {@link openTextsUnchecked} decrypts many rows at once without their tags,
 * for the read path's bulk item loads, where a GCM context per row would cost more
 * than the load itself (about 12 µs each, 60 ms for a 5,000-item list). GCM encrypts
 * with CTR from the block after the IV's first counter, so the keystream of every
 * row is AES over counter blocks: one ECB call makes all of them. Rows opened that
 * way are still proven by what proves plaintext rows (the chain hash of each position
 * above the snapshot, the snapshot's item checksum below it); `verify` opens every
 * row with its tag.
 */
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';
import { DecryptionError } from '../errors.js';

/** What marks a sealed text: JSON never starts with it. */
export const SEALED_PREFIX = '~c1:';
const IV_BYTES = 12;
const TAG_BYTES = 16;
const BLOCK = 16;

/** A data key in the clear, as the keyring hands it out. */
export interface DataKey {
  /** Stable id, written into every row sealed with the key (no `:`). */
  id: string;
  /** 32 bytes. */
  key: Buffer;
}

/** True when `text` is a sealed envelope rather than plaintext. */
export function isSealed(text: string): boolean {
  return text.startsWith(SEALED_PREFIX);
}

/** The key id a sealed text names, or null for plaintext / a malformed envelope. */
export function sealedKeyId(text: string): string | null {
  if (!isSealed(text)) return null;
  const end = text.indexOf(':', SEALED_PREFIX.length);
  return end < 0 ? null : text.slice(SEALED_PREFIX.length, end);
}

/** The longest sealed text a plaintext of `plainBytes` UTF-8 bytes can become (a key id of up to 64 characters). */
export function sealedLength(plainBytes: number): number {
  return SEALED_PREFIX.length + 65 + Math.ceil((IV_BYTES + plainBytes + TAG_BYTES) / 3) * 4;
}

/**
 * IVs are drawn from the CSPRNG 256 at a time: one `randomBytes` call costs about 18 µs
 * here whatever its size (twice per step commit), a slice of a drawn pool nothing. Each
 * IV is still used once: the pool is consumed, never reread.
 */
const IV_POOL_COUNT = 256;
let ivPool = Buffer.alloc(0);
let ivNext = 0;

function freshIv(): Buffer {
  if (ivNext + IV_BYTES > ivPool.length) {
    ivPool = randomBytes(IV_BYTES * IV_POOL_COUNT);
    ivNext = 0;
  }
  const iv = ivPool.subarray(ivNext, ivNext + IV_BYTES);
  ivNext += IV_BYTES;
  return iv;
}

/** Seals `plaintext` for the row `aad` names, under `key`. A fresh random IV every time. */
export function sealText(key: DataKey, plaintext: string, aad: string): string {
  const iv = freshIv();
  const cipher = createCipheriv('aes-256-gcm', key.key, iv);
  cipher.setAAD(Buffer.from(aad, 'utf8'));
  const body = cipher.update(plaintext, 'utf8');
  const tail = cipher.final();
  const packed = Buffer.concat([iv, body, tail, cipher.getAuthTag()]);
  return `${SEALED_PREFIX}${key.id}:${packed.toString('base64')}`;
}

function unpack(text: string, where: string): { iv: Buffer; body: Buffer; tag: Buffer } {
  const start = text.indexOf(':', SEALED_PREFIX.length);
  const packed = start < 0 ? Buffer.alloc(0) : Buffer.from(text.slice(start + 1), 'base64');
  if (packed.length < IV_BYTES + TAG_BYTES) throw new DecryptionError(`${where}: the sealed row is truncated or malformed.`);
  return {
    iv: packed.subarray(0, IV_BYTES),
    body: packed.subarray(IV_BYTES, packed.length - TAG_BYTES),
    tag: packed.subarray(packed.length - TAG_BYTES),
  };
}

/**
 * Opens one sealed text, checking its tag against `aad`: DecryptionError when the row
 * was changed, sealed for another row, or sealed under another key. `where` names the
 * row in the error.
 */
export function openText(key: DataKey, text: string, aad: string, where: string): string {
  const { iv, body, tag } = unpack(text, where);
  try {
    const decipher = createDecipheriv('aes-256-gcm', key.key, iv);
    decipher.setAAD(Buffer.from(aad, 'utf8'));
    decipher.setAuthTag(tag);
    const head = decipher.update(body);
    const tail = decipher.final();
    return tail.length === 0 ? head.toString('utf8') : Buffer.concat([head, tail]).toString('utf8');
  } catch (err) {
    throw new DecryptionError(`${where}: the sealed row does not open (changed, moved from another row, or sealed under another key).`, { cause: err });
  }
}

/**
 * Decrypts many sealed texts under one key without checking their tags (see the
 * module note for why this is sound where it is used): one AES call for the keystream
 * of all of them. Returns the plaintexts in order.
 *
 * Every envelope is decoded straight into one buffer, in a slot of whole 16-byte
 * blocks: four spare bytes, the 12-byte IV, then the ciphertext (so it starts on a
 * block) and the tag. The counter blocks are written in a second buffer at the same
 * offsets (a native fill of `iv ‖ 2`, then each block's counter word); one ECB call
 * turns them into the keystream, and one XOR over the whole buffer, in WebAssembly
 * (a load runs once in a fresh process, where a JavaScript loop over a million words
 * would not be compiled yet), decrypts every body. No per-row Buffer, cipher or copy.
 */
export function openTextsUnchecked(key: DataKey, texts: readonly string[], where: string): string[] {
  const count = texts.length;
  if (count === 0) return [];
  const from = new Array<number>(count);
  const packedBytes = new Array<number>(count);
  const slots = new Array<number>(count);
  let size = 0;
  let maxBlocks = 0;
  for (let p = 0; p < count; p++) {
    const text = texts[p]!;
    const start = text.startsWith(SEALED_PREFIX) ? text.indexOf(':', SEALED_PREFIX.length) + 1 : 0;
    const chars = text.length - start;
    const bytes = (chars >> 2) * 3 - (text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0);
    if (start === 0 || chars % 4 !== 0 || bytes < IV_BYTES + TAG_BYTES) throw new DecryptionError(`${where}: the sealed row is truncated or malformed.`);
    from[p] = start;
    packedBytes[p] = bytes;
    slots[p] = size;
    const blocks = Math.ceil((bytes - IV_BYTES) / BLOCK);
    if (blocks > maxBlocks) maxBlocks = blocks;
    size += BLOCK + blocks * BLOCK;
  }
  // Data at [0, size), the keystream at [size, 2 size) of one WebAssembly memory.
  const memory = new wasm.Memory({ initial: Math.ceil((2 * size) / 65_536) });
  const data = Buffer.from(memory.buffer, 0, size);
  const counters = Buffer.alloc(size);
  const counterWords = new Uint32Array(counters.buffer, counters.byteOffset, size / 4);
  const order = counterTable(maxBlocks + 2);
  for (let p = 0; p < count; p++) {
    const slot = slots[p]!;
    const written = data.write(texts[p]!.slice(from[p]), slot + 4, packedBytes[p]!, 'base64');
    if (written !== packedBytes[p]) throw new DecryptionError(`${where}: the sealed row is truncated or malformed.`);
    const blocks = Math.ceil((packedBytes[p]! - IV_BYTES - TAG_BYTES) / BLOCK);
    if (blocks === 0) continue;
    // Counter blocks: iv ‖ 32-bit big-endian counter from 2 (GCM's first data block).
    const body = slot + BLOCK;
    data.copy(counters, body, slot + 4, slot + BLOCK);
    counters.fill(counters.subarray(body, body + IV_BYTES + 4), body, body + blocks * BLOCK);
    for (let b = 0, w = body / 4 + 3; b < blocks; b++, w += 4) counterWords[w] = order[b + 2]!;
  }
  const ecb = createCipheriv('aes-256-ecb', key.key, null);
  ecb.setAutoPadding(false);
  const keystream = Buffer.from(memory.buffer, size, size);
  keystream.set(ecb.update(counters));
  xorInPlace(memory, 0, size, size);
  const out = new Array<string>(count);
  for (let p = 0; p < count; p++) {
    const body = slots[p]! + BLOCK;
    out[p] = data.toString('utf8', body, body + packedBytes[p]! - IV_BYTES - TAG_BYTES);
  }
  return out;
}

/** `n` as GCM writes a counter word: big-endian, read back as a native 32-bit word. */
let counterWordsCache = new Uint32Array(0);
function counterTable(length: number): Uint32Array {
  if (counterWordsCache.length >= length) return counterWordsCache;
  const table = new Uint32Array(Math.max(length, 2 * counterWordsCache.length, 256));
  for (let n = 0; n < table.length; n++) table[n] = BIG_ENDIAN ? n : ((n & 0xff) << 24) | ((n & 0xff00) << 8) | ((n >>> 8) & 0xff00) | (n >>> 24);
  return (counterWordsCache = table);
}

/**
 * `x(a, b, n)`: memory[a, a + n) ^= memory[b, b + n), eight bytes at a time (n a
 * multiple of 16), as a WebAssembly function of 51 bytes: native speed from its first
 * call, where a JavaScript loop would run interpreted.
 */
const XOR_WASM = new Uint8Array([
  0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00,
  // type 0: (i32, i32, i32) -> ()
  0x01, 0x07, 0x01, 0x60, 0x03, 0x7f, 0x7f, 0x7f, 0x00,
  // import m.mem: a memory
  0x02, 0x0a, 0x01, 0x01, 0x6d, 0x03, 0x6d, 0x65, 0x6d, 0x02, 0x00, 0x01,
  // function 0 of type 0, exported as x
  0x03, 0x02, 0x01, 0x00,
  0x07, 0x05, 0x01, 0x01, 0x78, 0x00, 0x00,
  // code: local i; loop { if i >= n break; i64.store(a + i, i64.load(a + i) ^ i64.load(b + i)); i += 8 }
  0x0a, 0x35, 0x01, 0x33, 0x01, 0x01, 0x7f,
  0x02, 0x40, 0x03, 0x40,
  0x20, 0x03, 0x20, 0x02, 0x4f, 0x0d, 0x01,
  0x20, 0x00, 0x20, 0x03, 0x6a,
  0x20, 0x00, 0x20, 0x03, 0x6a, 0x29, 0x03, 0x00,
  0x20, 0x01, 0x20, 0x03, 0x6a, 0x29, 0x03, 0x00,
  0x85, 0x37, 0x03, 0x00,
  0x20, 0x03, 0x41, 0x08, 0x6a, 0x21, 0x03,
  0x0c, 0x00, 0x0b, 0x0b, 0x0b,
]);
/** The part of the WebAssembly API used here (Node's global; its types are not in this project's lib). */
interface WasmMemory {
  readonly buffer: ArrayBuffer;
}
interface WasmApi {
  Memory: new (descriptor: { initial: number }) => WasmMemory;
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object, imports: object) => { exports: Record<string, unknown> };
}
const wasm = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;
let xorModule: object | undefined;

function xorInPlace(memory: WasmMemory, a: number, b: number, n: number): void {
  xorModule ??= new wasm.Module(XOR_WASM);
  const instance = new wasm.Instance(xorModule, { m: { mem: memory } });
  (instance.exports.x as (a: number, b: number, n: number) => void)(a, b, n);
}

const BIG_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 0;
