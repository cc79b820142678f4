/**
 * Positions for tests that write a thread's log directly through the Checkpointer.
 *
 * - {@link linearPosition}: a stand-in for engine tests: root namespace, continuing
 *   the previous seq, with a body that names it and a 64-hex hash derived from the seq.
 * - {@link chain} / {@link storeThread}: positions as the runtime writes them, for the
 *   inspection tools (verify, export/import, GC, migrate checks): real bodies (tagged
 *   JSON), real items and real chain hashes, in any namespace, each namespace a chain
 *   of its own from the genesis hash. They let a test build a thread with child-run
 *   namespaces without running a graph.
 */
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import type { Checkpointer, PositionItem, StoredPosition } from '../../src/contracts/checkpointer.js';
import type { ThreadStatus } from '../../src/contracts/threads.js';
import { GENESIS_HASH } from '../../src/codec/hash.js';
import { linearPosition as standInPosition } from '../../src/testing/checkpointer.suite.js';
import { encode } from '../../src/codec/tagged-json.js';
import { appendedFields, hashPosition, sealSnapshot, type PositionBody } from '../../src/runtime/position.js';

export function linearPosition(seq: number, body = `{"kind":"step","seq":${seq}}`): StoredPosition {
  return standInPosition(seq, { body });
}

/** One position of a {@link chain}: what its body says beyond the defaults, and what it appends. */
export interface ChainStep {
  /** Merged over the defaults (`kind` input at seq 0, step after; no nodes, no changes). */
  body?: Partial<PositionBody>;
  /** Values appended per field: stored as items (tagged JSON) and noted as `{ append: n }` in the body's changes. */
  append?: Record<string, unknown[]>;
  /** Default 1. */
  schemaVersion?: number;
  /** A snapshot to commit with the position: this value, encoded and sealed as the runtime seals snapshots. */
  snapshot?: unknown;
}

/** A position ready for `commitStep`, with its items and (sealed) snapshot. */
export interface ChainedPosition {
  position: StoredPosition;
  items: PositionItem[];
  snapshot?: string;
}

/**
 * A linear chain of positions in `ns` (seq 0, 1, 2..., each the child of the previous)
 * with the hashes the runtime would compute: the first extends the genesis hash, the
 * others their parent's hash; items are hashed in the order verify reads them.
 * `options.parentHash` makes the first extend another hash instead (a broken chain).
 *
 * @example `chain('sub:0@1', [{}, { append: { log: ['a', 'b'] } }, { body: { changes: { n: { set: 2 } } } }])`
 */
export function chain(ns: string, steps: ChainStep[], options: { parentHash?: string } = {}): ChainedPosition[] {
  const positions: ChainedPosition[] = [];
  // Tests of broken chains pass another starting hash (e.g. the root head's).
  let parentHash = options.parentHash ?? GENESIS_HASH;
  steps.forEach((step, seq) => {
    const appends = Object.entries(step.append ?? {});
    const body: PositionBody = {
      kind: seq === 0 ? 'input' : 'step',
      nodes: [],
      attempt: 1,
      lease: 1,
      next: [],
      ...step.body,
      changes: { ...step.body?.changes, ...Object.fromEntries(appends.map(([field, values]) => [field, { append: values.length }])) },
    };
    const values = new Map(appends);
    const items = appendedFields(body).flatMap((field) => (values.get(field) ?? []).map((value, index) => ({ field, index, text: encode(value) })));
    const unhashed = {
      ns,
      seq,
      parent: seq === 0 ? null : seq - 1,
      segment: 0,
      step: seq,
      schemaVersion: step.schemaVersion ?? 1,
      createdAt: 1_700_000_000_000 + seq,
      body: encode(body),
    };
    const position = { ...unhashed, hash: hashPosition(unhashed, items, parentHash) };
    positions.push({ position, items, ...(step.snapshot !== undefined ? { snapshot: sealSnapshot(encode(step.snapshot)) } : {}) });
    parentHash = position.hash;
  });
  return positions;
}

/**
 * Creates `threadId` and commits each chain in order (each namespace from its own
 * empty head), then sets the thread's status and releases it. The thread must not exist.
 */
export async function storeThread(cp: Checkpointer, threadId: string, chains: ChainedPosition[][], options: { status?: ThreadStatus } = {}): Promise<void> {
  const lease = await cp.acquireThread(threadId, {
    owner: { runId: randomUUID(), pid: process.pid, host: hostname() },
    leaseMs: 60_000,
    create: { kind: 'task', tenant: null, metadata: {} },
  });
  for (const positions of chains) {
    for (const { position, items, snapshot } of positions) {
      await cp.commitStep(lease, {
        position,
        items,
        ...(snapshot !== undefined ? { snapshot } : {}),
        status: 'running',
        expectedHead: position.seq === 0 ? null : position.seq - 1,
      });
    }
  }
  if (options.status) await cp.updateThread(lease, { status: options.status });
  await cp.releaseThread(lease);
}

/** The child namespaces of {@link threadWithChildren}: a child run of the root's step 1, and one nested in it. */
export const CHILD_NS = 'sub:0@1';
export const GRANDCHILD_NS = 'sub:0@1|deep:0@2';

/**
 * A thread as a run with a subgraph would leave it: a root chain of 3 positions, a
 * child run `sub:0@1` of 3 (appending items, with a snapshot) and a grandchild
 * `sub:0@1|deep:0@2` of 2 (appending items). 8 positions; every chain verifies.
 */
export function threadWithChildren(): ChainedPosition[][] {
  return [
    chain('', [{ body: { next: ['plan'] } }, { body: { nodes: ['plan'], next: ['sub'] }, append: { log: ['planned'] } }, { body: { nodes: ['sub'] } }]),
    chain(CHILD_NS, [
      { body: { next: ['search'] } },
      { body: { nodes: ['search'], changes: { hits: { set: 2 } } }, append: { found: ['a', 'b'] }, snapshot: { hits: 2, found: ['a', 'b'] } },
      { body: { nodes: ['deep'] } },
    ]),
    chain(GRANDCHILD_NS, [{}, { body: { nodes: ['dig'] }, append: { notes: ['deep note'] } }]),
  ];
}
