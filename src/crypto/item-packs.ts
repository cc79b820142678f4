/**
 * @module crypto/item-packs
 * An encrypted engine's sealed item packs: a second copy of each field's items, every
 * {@link PACK_SPAN} positions of a namespace in one envelope. A head load of a long
 * thread then opens a few packs with AES-GCM (tags checked) instead of thousands of
 * sealed rows, which cost more to open one by one than the plaintext load itself.
 *
 * Packs are aligned: seqs 0–63, 64–127…, each written by the commit of its last
 * position (in that commit's transaction), from the span's earlier items read back and
 * opened with their tags checked, and the commit's own. A pack holds every item of its
 * field appended by every position of the span, whatever the branch, so it serves any
 * read whose ranges hold the whole span. The item rows stay the record: `verify` and
 * every per-position read use them, a pack goes with any position it spans (deleteThread,
 * compaction), and a pack that does not open (damaged, moved, or under a key that is
 * gone) is passed over for the rows it copies, which a load checks as it always does.
 *
 * The cost is the items' bytes a second time, sealed, in the database.
 */
import type { SeqRange } from '../contracts/checkpointer.js';
import { isAscii } from 'node:buffer';
import { SEALED_PREFIX, isSealed, openPacked, sealedKeyId, type DataKey } from './envelope.js';
import { sealedBytesHeader, sealedBytesKeyId } from './sealed-bytes.js';
import { rowAad } from './sealer.js';

/** Positions one pack spans. */
export const PACK_SPAN = 64;

/** What a pack's tag binds it to: its thread, namespace, field, span and count. */
export function packAad(threadId: string, ns: string, field: string, fromSeq: number, toSeq: number, count: number): string {
  return rowAad('pack', threadId, ns, field, fromSeq, toSeq, count);
}

/** True when the commit of `seq` completes a pack's span. */
export function endsPackSpan(seq: number): boolean {
  return (seq + 1) % PACK_SPAN === 0;
}

/** The plaintext of a pack: the texts' lengths (UTF-16 code units), comma-separated, a newline, then the texts one after another. */
export function packText(texts: readonly string[]): string {
  return `${texts.map((text) => text.length).join(',')}\n${texts.join('')}`;
}

/** A pack opened: its texts' lengths and their bytes (UTF-8, one after another). */
export interface OpenedPack {
  lengths: number[];
  bytes: Buffer;
}

/**
 * A pack's stored text (a sealed text, or the sealed bytes an engine kept it as) opened
 * with its tag checked, or null when it is not sealed, does not open, or does not hold
 * `count` lengths: the caller reads the rows instead. `keyById` finds the key it names.
 */
export async function openPack(stored: string | Uint8Array, aad: string, count: number, keyById: (id: string) => Promise<DataKey>): Promise<OpenedPack | null> {
  let keyId: string | null;
  let packed: Uint8Array;
  if (typeof stored === 'string') {
    if (!isSealed(stored)) return null;
    keyId = sealedKeyId(stored);
    packed = Buffer.from(stored.slice(stored.indexOf(':', SEALED_PREFIX.length) + 1), 'base64');
  } else {
    const header = sealedBytesHeader(stored);
    if (header < 0) return null;
    keyId = sealedBytesKeyId(stored);
    packed = stored.subarray(header);
  }
  if (keyId === null) return null;
  let plain: Buffer;
  try {
    plain = openPacked(await keyById(keyId), packed, aad, 'an item pack');
  } catch {
    return null;
  }
  const newline = plain.indexOf(10);
  if (newline < 0) return null;
  const lengths = plain.toString('latin1', 0, newline).split(',').map(Number);
  if (lengths.length !== count || !lengths.every((n) => Number.isSafeInteger(n) && n >= 0)) return null;
  return { lengths, bytes: plain.subarray(newline + 1) };
}

/**
 * The texts of each opened pack, or null for one whose lengths do not add up to its
 * bytes: slices of the pack's text, which at PACK_SPAN kilobyte items is large enough
 * to be allocated where the young generation's collector does not copy it (a flat string
 * per item, or per small pack, costs more in that collector than the decryption).
 */
export function packTexts(packs: readonly OpenedPack[]): (string[] | null)[] {
  return packs.map((pack) => {
    const text = isAscii(pack.bytes) ? pack.bytes.toString('latin1') : pack.bytes.toString('utf8');
    return slices(text, 0, text.length, pack.lengths);
  });
}

/** `all[from, to)` cut into texts of `lengths`, or null when they do not fill it exactly. */
function slices(all: string, from: number, to: number, lengths: readonly number[]): string[] | null {
  const out = new Array<string>(lengths.length);
  let at = from;
  for (let i = 0; i < lengths.length; i++) {
    const end = at + lengths[i]!;
    if (end > to) return null;
    out[i] = all.slice(at, end);
    at = end;
  }
  return at === to ? out : null;
}

/** `ranges` in seq order, overlapping and adjacent ones merged: what a read of them covers. */
export function mergeRanges(ranges: readonly SeqRange[]): SeqRange[] {
  const sorted = [...ranges].filter((r) => r.from <= r.to).sort((a, b) => a.from - b.from);
  const merged: SeqRange[] = [];
  for (const range of sorted) {
    const last = merged[merged.length - 1];
    if (last && range.from <= last.to + 1) last.to = Math.max(last.to, range.to);
    else merged.push({ from: range.from, to: range.to });
  }
  return merged;
}
