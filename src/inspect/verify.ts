/**
 * @module inspect/verify
 * Recomputes a thread's hash chain from its stored rows: every position's hash
 * must equal H(parent hash ‖ header ‖ body ‖ items), every parent must exist, and
 * every body must decode. Works on any {@link Checkpointer}.
 */
import type { Checkpointer } from '../contracts/checkpointer.js';
import { GENESIS_HASH } from '../codec/hash.js';
import { decode } from '../codec/tagged-json.js';
import { recomputeHash, type PositionBody } from '../runtime/position.js';

export interface VerifyProblem {
  seq: number;
  code: 'ERR_CORRUPT_RECORD';
  message: string;
}

export interface VerifyReport {
  threadId: string;
  ok: boolean;
  positions: number;
  problems: VerifyProblem[];
}

/** Verifies every position of a thread's root namespace. */
export async function verifyThread(cp: Checkpointer, threadId: string): Promise<VerifyReport> {
  const thread = await cp.getThread(threadId);
  const problems: VerifyProblem[] = [];
  const hashes = new Map<number, string>();
  const last = thread?.head ?? -1;
  const batch = 500;
  let count = 0;
  for (let from = 0; from <= last; from += batch) {
    for (const position of await cp.getPositions(threadId, '', { from, to: Math.min(last, from + batch - 1) })) {
      count++;
      const problem = (message: string) => problems.push({ seq: position.seq, code: 'ERR_CORRUPT_RECORD', message });
      let body: PositionBody;
      try {
        body = decode<PositionBody>(position.body, `position ${position.seq}`);
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
  }
  if (thread && thread.head !== null && !hashes.has(thread.head)) {
    problems.push({ seq: thread.head, code: 'ERR_CORRUPT_RECORD', message: `the thread's head ${thread.head} is not a stored position.` });
  }
  return { threadId, ok: problems.length === 0, positions: count, problems };
}
