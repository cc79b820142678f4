/**
 * @module inspect/verify
 * Recomputes a thread's hash chains from its stored rows: every position's hash
 * must equal H(parent hash ‖ header ‖ body ‖ items), every parent must exist, and
 * every body must decode. Each namespace (the root graph '' and every child run's)
 * is a chain of its own, starting from the genesis hash, so each is checked on its
 * own. Works on any {@link Checkpointer}.
 */
import type { Checkpointer } from '../contracts/checkpointer.js';
import { GENESIS_HASH } from '../codec/hash.js';
import { decode } from '../codec/tagged-json.js';
import { recomputeHash, type PositionBody } from '../runtime/position.js';
import { describePosition, namespacePositions } from './walk.js';

export interface VerifyProblem {
  /** Namespace of the damaged position: '' for the root graph, e.g. `research:0@4` for a child run. */
  ns: string;
  seq: number;
  code: 'ERR_CORRUPT_RECORD';
  message: string;
}

export interface VerifyReport {
  threadId: string;
  ok: boolean;
  /** Positions checked, over every namespace. */
  positions: number;
  /** Root problems first, then each child namespace's, in `listNamespaces` order; by seq within one. */
  problems: VerifyProblem[];
}

/** Verifies every position of every namespace of a thread. */
export async function verifyThread(cp: Checkpointer, threadId: string): Promise<VerifyReport> {
  const thread = await cp.getThread(threadId);
  const problems: VerifyProblem[] = [];
  let positions = 0;
  let rootHashes = new Map<number, string>();
  for (const ns of await cp.listNamespaces(threadId)) {
    const chain = await verifyNamespace(cp, threadId, ns, problems);
    positions += chain.positions;
    if (ns === '') rootHashes = chain.hashes;
  }
  if (thread && thread.head !== null && !rootHashes.has(thread.head)) {
    problems.push({ ns: '', seq: thread.head, code: 'ERR_CORRUPT_RECORD', message: `the thread's head ${thread.head} is not a stored position.` });
  }
  return { threadId, ok: problems.length === 0, positions, problems };
}

/**
 * Checks one namespace's chain, appending what is wrong to `problems`. Returns how
 * many positions it read and the stored hash of each one whose body decoded (by seq).
 */
async function verifyNamespace(
  cp: Checkpointer,
  threadId: string,
  ns: string,
  problems: VerifyProblem[],
): Promise<{ positions: number; hashes: Map<number, string> }> {
  // This namespace's hashes only: a parent seq names a position of the same chain, and
  // a first position (parent null) extends the genesis hash, in a child run as at the root.
  const hashes = new Map<number, string>();
  let positions = 0;
  for await (const position of namespacePositions(cp, threadId, ns)) {
    positions++;
    const problem = (message: string) => problems.push({ ns, seq: position.seq, code: 'ERR_CORRUPT_RECORD', message });
    let body: PositionBody;
    try {
      body = decode<PositionBody>(position.body, describePosition(ns, position.seq));
    } catch (error) {
      problem((error as Error).message);
      continue;
    }
    let parentHash = GENESIS_HASH;
    if (position.parent !== null) {
      const known = hashes.get(position.parent);
      if (known === undefined) {
        problem(`parent ${position.parent} is missing or comes after its child.`);
        continue;
      }
      parentHash = known;
    }
    const expected = await recomputeHash(cp, threadId, position, body, parentHash);
    if (expected !== position.hash) problem(`hash mismatch: stored ${position.hash.slice(0, 16)}…, recomputed ${expected.slice(0, 16)}….`);
    hashes.set(position.seq, position.hash);
  }
  return { positions, hashes };
}
