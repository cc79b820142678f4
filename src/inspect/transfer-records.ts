/**
 * @module inspect/transfer-records
 * The records of an export stream (`cairn export` writes them as JSON lines, `cairn
 * import` reads them): the shapes only, shared by inspect/transfer and the redaction
 * of an export (inspect/transfer-redaction).
 */
import type { PositionItem, StoredPosition, AttemptFailure, PendingWrite } from '../contracts/checkpointer.js';
import type { ArtifactRef } from '../contracts/artifact-store.js';
import type { LedgerEntry } from '../contracts/ledger.js';
import type { StoredSignal, ThreadRecord } from '../contracts/threads.js';

/** One line of an export (`cairn-threads`): the header, then threads with their positions, pending writes, failures and ledger entries, store items, artifacts in chunks, and the end line. */
export type TransferRecord =
  | {
      type: 'header';
      /** `cairn-threads-redacted` for a redacted export: for reading, never imported. */
      format: 'cairn-threads' | 'cairn-threads-redacted';
      version: 1 | 2 | 3 | 4 | 5 | 6;
      exportedAt: number;
      engine: string;
      /** Version 3: the store namespace prefixes whose items follow the threads. */
      store?: string[][];
      /** Version 3: whether the artifacts the threads and items refer to follow them. */
      artifacts?: boolean;
      /** Set on a redacted export (then `format` is `cairn-threads-redacted`, which no importer reads). */
      redacted?: true;
      /** Version 6: every record between the header and the end is sealed. */
      sealed?: boolean;
    }
  /** Version 6: a data key the sealed records after it name, wrapped by the key provider's key-encryption key of `scope`. */
  | { type: 'data-key'; scope: string; id: string; kekId: string; wrapped: string }
  /** Version 6: one record, sealed (`data`: an envelope of its tagged JSON) under the data key `key` of `scope`. */
  | { type: 'sealed'; scope: string; key: string; data: string }
  | { type: 'thread'; thread: ThreadRecord }
  | { type: 'position'; threadId: string; position: StoredPosition; items: PositionItem[]; snapshot: string | null }
  | { type: 'pending'; threadId: string; write: PendingWrite }
  | { type: 'failure'; threadId: string; failure: AttemptFailure }
  /** Version 5: the entry's `meta`, when it has one. */
  | { type: 'ledger'; threadId: string; entry: LedgerEntry }
  /** Version 4: one of the thread's signals, in id order, pending or consumed. */
  | { type: 'signal'; threadId: string; signal: StoredSignal }
  | { type: 'store'; namespace: string[]; key: string; value: unknown; expiresAt: number | null }
  /**
   * An artifact's ref and metadata; its bytes follow in `chunks` `artifact-chunk` records.
   * `redacted`: a redacted export's text artifact whose bytes its rules changed (they no
   * longer match the ref's sha256; such an export is never imported).
   */
  | { type: 'artifact'; ref: ArtifactRef; metadata: Record<string, string>; chunks: number; redacted?: true }
  | { type: 'artifact-chunk'; id: string; data: string }
  | { type: 'end'; threads: number; positions: number; signals?: number; storeItems?: number; artifacts?: number };
