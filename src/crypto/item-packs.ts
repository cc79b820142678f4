/**
 * @module crypto/item-packs
 * An encrypted engine's sealed item packs: a second copy of each field's items, every
 * {@link PACK_SPAN} positions of a namespace in one envelope. A head load of a long
 * thread then opens a few packs with AES-GCM (tags checked) instead of thousands of
 * sealed rows, which cost more to open one by one than the plaintext load itself.
 *
 * Packs are aligned: seqs 0–63, 64–127…, each written by the commit of its last
 * position (in that commit's transaction; on PostgreSQL right after it), from the span's
 * items: those its lease committed, kept by {@link PackSpans}, the others read back and
 * opened with their tags checked, and the commit's own. A pack holds every item of its
 * field appended by every position of the span, whatever the branch, so it serves any
 * read whose ranges hold the whole span. The item rows stay the record: every
 * per-position read uses them, `verify` compares each pack with them, a pack goes with
 * any position it spans (deleteThread, compaction), and a pack that does not open
 * (damaged, moved, or under a key that is gone) or does not give the snapshot's checksum
 * is passed over for the rows it copies, which a load checks as it always does.
 *
 * The cost is the items' bytes a second time, sealed, in the database.
 */
import { isAscii } from 'node:buffer';
import type { ItemChecksum } from '../codec/hash.js';
import { decode } from '../codec/tagged-json.js';
import { comparePositionItems, type PositionItem, type SeqRange } from '../contracts/checkpointer.js';
import { isSealed, openPacked, packedOf, sealedKeyId, type DataKey } from './envelope.js';
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

/**
 * The plaintext of a pack: the texts' lengths (UTF-16 code units), comma-separated, a
 * newline, then the texts as one JSON array (`[t0,t1,…]`), so that a load decodes a pack
 * in one parse and slices each text out where it needs them.
 */
export function packText(texts: readonly string[]): string {
  return `${texts.map((text) => text.length).join(',')}\n[${texts.join(',')}]`;
}

/** A pack opened: its texts' lengths and the bytes of the JSON array of them (UTF-8). */
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
    packed = packedOf(stored);
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

/** Where each text of a pack starts in its array's text: after the bracket, then after each comma. */
function startsOf(lengths: readonly number[]): number[] {
  const starts = new Array<number>(lengths.length);
  let at = 1;
  for (let i = 0; i < lengths.length; i++) {
    starts[i] = at;
    at += lengths[i]! + 1;
  }
  return starts;
}

/** True when the pack's array holds exactly its texts at their starts: the bracket, commas and the closing bracket where the lengths put them. */
function framed(array: string | Buffer, lengths: readonly number[], starts: readonly number[]): boolean {
  const total = lengths.length === 0 ? 2 : starts[starts.length - 1]! + lengths[lengths.length - 1]! + 1;
  const at = (i: number) => (typeof array === 'string' ? array.charCodeAt(i) : array[i]);
  if (array.length !== total || at(0) !== 0x5b || at(total - 1) !== 0x5d) return false;
  for (let i = 1; i < starts.length; i++) if (at(starts[i]! - 1) !== 0x2c) return false;
  return true;
}

/**
 * The texts of an opened pack, sliced out of its array's text (at 64 kilobyte items a
 * large string, allocated where the young generation's collector does not copy it), or
 * null when the lengths do not frame it.
 */
export function packTexts(pack: OpenedPack): string[] | null {
  const text = isAscii(pack.bytes) ? pack.bytes.toString('latin1') : pack.bytes.toString('utf8');
  const starts = startsOf(pack.lengths);
  if (!framed(text, pack.lengths, starts)) return null;
  return pack.lengths.map((length, i) => text.slice(starts[i], starts[i]! + length));
}

/**
 * An ASCII pack's items decoded in one parse of its array, with the checksum of its texts
 * added to `checksum` from their bytes; null when the pack is not ASCII, not framed by its
 * lengths, or does not decode to as many items (the caller then decodes its texts one by one).
 */
export function packValues(pack: OpenedPack, checksum: ItemChecksum): { values: unknown[]; checksum: ItemChecksum } | null {
  if (!isAscii(pack.bytes)) return null;
  const starts = startsOf(pack.lengths);
  if (!framed(pack.bytes, pack.lengths, starts)) return null;
  let values: unknown;
  try {
    values = decode(pack.bytes.toString('latin1'));
  } catch {
    return null;
  }
  if (!Array.isArray(values) || values.length !== pack.lengths.length) return null;
  return { values, checksum: checksum.extendBytes(pack.bytes, starts, pack.lengths) };
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

/** Characters of item texts {@link PackSpans} keeps at most, over every thread (about 16 MB): past it, the oldest spans are dropped and read back when their packs are sealed. */
const MAX_BUFFERED_CHARS = 8 * 1024 * 1024;

/** The items of a span's positions committed under one lease, from `fromSeq` to `nextSeq - 1`, per field in (seq, index) order. */
export interface BufferedSpan {
  holder: string;
  fromSeq: number;
  nextSeq: number;
  texts: Map<string, string[]>;
  chars: number;
}

/**
 * The plaintext items each lease committed since the start of the current pack span, per
 * thread and namespace, so that the commit that ends the span seals its packs without
 * reading those items back and opening them (a read and a tag check per item, once every
 * PACK_SPAN steps). A span is kept only while one lease commits it position after position;
 * what it does not hold (a run that started inside the span, a span dropped for memory) is
 * read back from the engine.
 */
export class PackSpans {
  private readonly spans = new Map<string, BufferedSpan>();
  private chars = 0;

  /** The span buffered for (thread, ns) when the lease `holder` committed every position of it up to `seq - 1`. */
  take(threadId: string, ns: string, holder: string, seq: number): BufferedSpan | null {
    const span = this.spans.get(spanKey(threadId, ns));
    return span && span.holder === holder && span.nextSeq === seq && span.fromSeq > seq - PACK_SPAN ? span : null;
  }

  /** After a commit of `seq` under `holder` landed: its items added to the span, or a span started with them. */
  record(threadId: string, ns: string, holder: string, seq: number, items: readonly PositionItem[]): void {
    const key = spanKey(threadId, ns);
    let span = this.spans.get(key);
    if (span) this.drop(key);
    if (endsPackSpan(seq)) return;
    if (!span || span.holder !== holder || span.nextSeq !== seq) span = { holder, fromSeq: seq, nextSeq: seq, texts: new Map(), chars: 0 };
    for (const item of [...items].sort(comparePositionItems)) {
      const list = span.texts.get(item.field);
      if (list) list.push(item.text);
      else span.texts.set(item.field, [item.text]);
      span.chars += item.text.length;
    }
    span.nextSeq = seq + 1;
    // Re-inserted last: the Map's order is the order spans were last written.
    this.spans.set(key, span);
    this.chars += span.chars;
    for (const [oldest, old] of this.spans) {
      if (this.chars <= MAX_BUFFERED_CHARS) break;
      this.spans.delete(oldest);
      this.chars -= old.chars;
    }
  }

  /** Drops every span of the thread (its lease released, the thread deleted or compacted). */
  forget(threadId: string): void {
    for (const key of [...this.spans.keys()]) if (key.startsWith(`${threadId}\u0000`)) this.drop(key);
  }

  private drop(key: string): void {
    const span = this.spans.get(key);
    if (!span) return;
    this.spans.delete(key);
    this.chars -= span.chars;
  }
}

function spanKey(threadId: string, ns: string): string {
  return `${threadId}\u0000${ns}`;
}
