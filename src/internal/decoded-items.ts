/**
 * @module internal/decoded-items
 * Where a checkpointer can hand a load a field's items already decoded, with their
 * checksum, rather than their texts: the encrypted engine, which reads them from its
 * sealed packs, each decoded in one parse (crypto/item-packs). The load uses it when it
 * is there and the answer is not null; it checks the checksum as it checks the texts'.
 */
import type { SeqRange } from '../contracts/checkpointer.js';
import type { ItemChecksum } from '../codec/hash.js';

export const DECODED_ITEMS: unique symbol = Symbol.for('cairn.decodedItems');

/** A field's items inside some ranges, decoded, in (seq, index) order, and the checksum of their texts. */
export interface DecodedItemList {
  values: unknown[];
  checksum: ItemChecksum;
}

/**
 * A checkpointer with {@link DECODED_ITEMS}: null when it has nothing better than
 * `getItems`. Given the checksum the items should have (`expected`, the snapshot's), a
 * copy that does not match it is passed over for the rows it copies.
 */
export interface DecodedItems {
  [DECODED_ITEMS](threadId: string, ns: string, field: string, ranges: SeqRange[], expected?: string): Promise<DecodedItemList | null>;
}
