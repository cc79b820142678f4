/**
 * @module internal/pack-checks
 * Where a checkpointer that keeps item packs (the encrypted engine's, crypto/item-packs)
 * lets `verify` check them: each pack opened with its tag and compared with the rows of
 * its span, so that what a load reads from packs is what `verify` proved of the rows.
 */
export const CHECK_PACKS: unique symbol = Symbol.for('cairn.checkPacks');

/** A pack that does not open, or does not hold its rows' texts. */
export interface PackProblem {
  /** The last seq of its span. */
  seq: number;
  field: string;
  message: string;
}

/** A checkpointer with {@link CHECK_PACKS}: the packs of one namespace checked, and what was wrong. */
export interface PackChecks {
  [CHECK_PACKS](threadId: string, ns: string): Promise<{ checked: number; problems: PackProblem[] }>;
}
