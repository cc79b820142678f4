/**
 * @module testing/checkpointer/fixtures
 * What the Checkpointer conformance tests build their threads from: lease owners,
 * stand-in positions and commits, lease lengths, and the error check they share.
 */
import { spawnSync } from 'node:child_process';
import type { CommittedEffect, PositionItem, StepCommit, StoredPosition } from '../../contracts/checkpointer.js';
import type { LeaseOwner } from '../../contracts/threads.js';

export { expectError, sleep } from '../suite-kit.js';

/** A host no process of this machine runs on: its holders are judged by lease expiry alone. */
export const REMOTE_HOST = 'cairn-suite.remote.invalid';
export const LONG_LEASE = 60_000;
/** Short enough to wait out in a test, long enough to acquire and act within. */
export const SHORT_LEASE = 40;


let runCounter = 0;
/** A lease owner on a remote host (liveness by lease expiry only), with a fresh runId. */
export function remoteOwner(label = 'run'): LeaseOwner {
  return { runId: `${label}-${++runCounter}`, pid: 4242, host: REMOTE_HOST };
}

/** 64 lowercase hex characters derived from a number: a stand-in chain hash. */
export function fakeHash(n: number): string {
  return n.toString(16).padStart(64, '0');
}

/**
 * A stand-in position for engine tests: root namespace, continuing seq - 1 (or starting
 * the thread at 0), a body that names its seq and a 64-hex hash derived from it.
 *
 * @example `await cp.commitStep(lease, { position: linearPosition(0), items: [], status: 'running', expectedHead: null });`
 */
export function linearPosition(seq: number, extra: Partial<StoredPosition> = {}): StoredPosition {
  return {
    ns: '',
    seq,
    parent: seq === 0 ? null : seq - 1,
    segment: 0,
    step: seq,
    schemaVersion: 1,
    createdAt: 1_700_000_000_000 + seq,
    body: `{"kind":"step","seq":${seq}}`,
    hash: fakeHash(seq + 1),
    ...extra,
  };
}

/** A position that forks from an older `parent`: it starts a new segment at its own seq. */
export function forked(seq: number, parent: number, extra: Partial<StoredPosition> = {}): StoredPosition {
  return linearPosition(seq, { parent, segment: seq, step: parent + 1, body: `{"kind":"fork","seq":${seq}}`, ...extra });
}

export function item(field: string, index: number, text: string): PositionItem {
  return { field, index, text };
}

/** An effect a commit carries: a done `effect` entry of task `n:0` of step `seq`, with its outcome and time. */
export function committedEffect(threadId: string, key: string, extra: Partial<CommittedEffect> = {}): CommittedEffect {
  return { threadId, key, kind: 'effect', name: 'charge', ns: '', seq: 0, node: 'n', task: 'n:0', call: 0, argsDigest: null, createdAt: 1_000, outcome: '{"ok":true}', completedAt: 1_005, ...extra };
}

export function commitOf(position: StoredPosition, expectedHead: number | null, extra: Partial<StepCommit> = {}): StepCommit {
  return { position, items: [], status: 'running', expectedHead, ...extra };
}


/** Pid of a process of this host that has exited (and been reaped). */
export function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', ''], { stdio: 'ignore' });
  if (typeof child.pid !== 'number') throw new Error('could not spawn a short-lived process to get a dead pid');
  return child.pid;
}
