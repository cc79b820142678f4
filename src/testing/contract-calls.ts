/**
 * @module testing/contract-calls
 * One call of every method of the storage contracts (Checkpointer, Ledger, Store),
 * each with arguments that reach storage, for tests that must cover them all: a
 * closed engine refuses each one, a failing driver is reported by each one. The
 * tables are typed by the contracts: a method added to a contract and missing here
 * (or named here and not in the contract) does not compile. A method that reaches
 * no storage is marked `local`, with the reason: it must work whatever the driver does.
 *
 * @example
 * ```ts
 * const fixture = await callFixture(engine);
 * for (const [method, call] of contractCalls(engine)) await call(fixture);
 * ```
 */
import type { Checkpointer, CheckpointerCapabilities } from '../contracts/checkpointer.js';
import type { Engine } from '../contracts/engine.js';
import type { Ledger, NewLedgerEntry } from '../contracts/ledger.js';
import type { Store } from '../contracts/store.js';
import type { ThreadLease } from '../contracts/threads.js';
import { linearPosition } from './checkpointer/fixtures.js';

/** The names of an interface's methods, optional ones included. */
type MethodsOf<T> = { [K in keyof T]-?: NonNullable<T[K]> extends (...args: never[]) => unknown ? K : never }[keyof T];

/** What the calls run on: an engine whose thread `t1` is held by `lease`, with position 0, signal 1, ledger entry `k1` and store item `ns/k`. */
export interface CallFixture {
  engine: Engine;
  lease: ThreadLease;
}

export type ContractCall = (fixture: CallFixture) => Promise<unknown>;

/** One method's entry: a call, a call that works only where a capability is declared, or a call that reaches no storage (and why). */
export type CallEntry = ContractCall | { capability: keyof CheckpointerCapabilities; call: ContractCall } | { local: string; call: ContractCall };

const owner = { runId: 'contract-calls-2', pid: 4242, host: 'cairn-suite.remote.invalid' };
const position = (seq: number) => linearPosition(seq);
const entry = (key: string): NewLedgerEntry => ({ threadId: 't1', key, kind: 'effect', name: 'e', ns: '', seq: 0, node: 'n', task: 'n:0', call: 0, argsDigest: null, createdAt: 1 });
const range = { from: 0, to: 1 };
/** A call of an optional method: it works only where `capability` is declared. */
const where = (capability: keyof CheckpointerCapabilities, call: ContractCall) => ({ capability, call });
const local = (reason: string, call: ContractCall) => ({ local: reason, call });

export const CHECKPOINTER_CALLS = {
  getThread: ({ engine }) => engine.checkpointer.getThread('t1'),
  listThreads: ({ engine }) => engine.checkpointer.listThreads({ status: 'running' }),
  listFailures: ({ engine }) => engine.checkpointer.listFailures('t1'),
  acquireThread: ({ engine }) => engine.checkpointer.acquireThread('t2', { owner, leaseMs: 1000, create: { kind: 'task', tenant: null, metadata: {} } }),
  renewLease: ({ engine, lease }) => engine.checkpointer.renewLease(lease, 1000),
  releaseThread: ({ engine, lease }) => engine.checkpointer.releaseThread(lease),
  updateThread: ({ engine, lease }) => engine.checkpointer.updateThread(lease, { attempts: 1 }),
  commitStep: ({ engine, lease }) => engine.checkpointer.commitStep(lease, { position: position(1), items: [], status: 'running', expectedHead: 0 }),
  getHead: ({ engine }) => engine.checkpointer.getHead('t1', ''),
  putSnapshot: ({ engine, lease }) => engine.checkpointer.putSnapshot(lease, { ns: '', seq: 0, text: '{}' }),
  putPendingWrite: ({ engine, lease }) => engine.checkpointer.putPendingWrite(lease, { ns: '', baseSeq: 0, task: 'n:0', body: '{}' }),
  getPendingWrites: ({ engine }) => engine.checkpointer.getPendingWrites('t1', '', 0),
  getPendingWritesIn: ({ engine }) => engine.checkpointer.getPendingWritesIn!('t1', '', range),
  getPosition: ({ engine }) => engine.checkpointer.getPosition('t1', '', 0),
  getPositions: ({ engine }) => engine.checkpointer.getPositions('t1', '', range),
  listNamespaces: ({ engine }) => engine.checkpointer.listNamespaces('t1'),
  listPositions: ({ engine }) => engine.checkpointer.listPositions('t1', ''),
  getSnapshot: ({ engine }) => engine.checkpointer.getSnapshot('t1', '', [range]),
  getSnapshots: ({ engine }) => engine.checkpointer.getSnapshots('t1', '', range),
  getItems: ({ engine }) => engine.checkpointer.getItems('t1', '', 'm', [range]),
  getPositionItems: ({ engine }) => engine.checkpointer.getPositionItems('t1', '', 0, ['m']),
  getRangeItems: ({ engine }) => engine.checkpointer.getRangeItems('t1', '', range),
  getItemPacks: where('itemPacks', ({ engine }) => engine.checkpointer.getItemPacks!('t1', '', 'm', [range])),
  claimThreads: where('claims', ({ engine }) => engine.checkpointer.claimThreads!({ owner, leaseMs: 1000, limit: 1 })),
  subscribeRunnable: where('wakeUps', ({ engine }) => engine.checkpointer.subscribeRunnable!(() => undefined)),
  nextLeaseExpiry: where('leaseExpiry', ({ engine }) => engine.checkpointer.nextLeaseExpiry!()),
  leaseHolders: where('leaseHolders', ({ engine }) => engine.checkpointer.leaseHolders!({ host: 'cairn-calls.invalid' })),
  sendSignal: ({ engine }) => engine.checkpointer.sendSignal('t1', { name: 'go', payload: '2' }),
  listSignals: ({ engine }) => engine.checkpointer.listSignals('t1', { pending: true }),
  consumeSignal: ({ engine, lease }) => engine.checkpointer.consumeSignal(lease, { id: 1, by: 'wait-1' }),
  deleteThread: ({ engine }) => engine.checkpointer.deleteThread('t1'),
  compactThread: ({ engine, lease }) => engine.checkpointer.compactThread!(lease, { ns: '', base: { seq: 0, hash: position(0).hash }, snapshot: '{}' }),
  close: local('closes the engine; it reaches no table', ({ engine }) => engine.checkpointer.close()),
} satisfies Record<MethodsOf<Checkpointer>, CallEntry>;

export const LEDGER_CALLS = {
  get: ({ engine }) => engine.ledger.get('t1', 'k1'),
  listForTask: ({ engine }) => engine.ledger.listForTask('t1', '', 0, 'n:0'),
  list: ({ engine }) => engine.ledger.list('t1'),
  writeIntent: ({ engine }) => engine.ledger.writeIntent(entry('k2')),
  writeOutcome: ({ engine }) => engine.ledger.writeOutcome('t1', 'k1', '1', 2),
  writeRecord: ({ engine }) => engine.ledger.writeRecord({ ...entry('k3'), kind: 'record', outcome: '1' }),
  discardRecords: ({ engine, lease }) => engine.ledger.discardRecords(lease, ['k3']),
} satisfies Record<MethodsOf<Ledger>, CallEntry>;

export const STORE_CALLS = {
  get: ({ engine }) => engine.store.get(['ns'], 'k'),
  put: ({ engine }) => engine.store.put(['ns'], 'k', { a: 2 }),
  update: ({ engine }) => engine.store.update<number>(['ns'], 'n', (n = 0) => n + 1),
  delete: ({ engine }) => engine.store.delete(['ns'], 'k'),
  search: ({ engine }) => engine.store.search(['ns'], engine.store.capabilities.filters ? { filter: { a: 1 } } : {}),
  list: ({ engine }) => engine.store.list(['ns']),
  listNamespaces: ({ engine }) => engine.store.listNamespaces(),
  batch: ({ engine }) => engine.store.batch([{ op: 'put', namespace: ['ns'], key: 'b', value: 1 }]),
  sweepExpired: ({ engine }) => engine.store.sweepExpired(),
  listOverwrites: ({ engine }) => engine.store.listOverwrites(['ns']),
  purgeOverwrites: ({ engine }) => engine.store.purgeOverwrites!(['ns']),
  purgeNamespaces: ({ engine }) => engine.store.purgeNamespaces!((ns) => ns[0] === 'ns'),
  as: ({ engine }) => engine.store.as('someone').get(['ns'], 'k'),
  declare: local('declarations live in the process; it reaches no table', async ({ engine }) => engine.store.declare(['declared'], { merge: 'lastWins' })),
  mergeRuleOf: local('reads the declarations in the process; it reaches no table', async ({ engine }) => engine.store.mergeRuleOf(['declared'])),
  setPolicy: local('the policy lives in the process; it reaches no table', async ({ engine }) => engine.store.setPolicy(null)),
} satisfies Record<MethodsOf<Store>, CallEntry>;

/** Every entry of the three tables, named `method`, `ledger.method` and `store.method`. */
export function contractCalls(): [string, CallEntry][] {
  return [
    ...Object.entries(CHECKPOINTER_CALLS),
    ...Object.entries(LEDGER_CALLS).map(([method, call]) => [`ledger.${method}`, call] as [string, CallEntry]),
    ...Object.entries(STORE_CALLS).map(([method, call]) => [`store.${method}`, call] as [string, CallEntry]),
  ];
}

/** The call an entry makes on `engine`, or why it makes none there (left out, or an optional method whose capability is not declared). */
export function callFor(entry: CallEntry, engine: Engine): ContractCall | string {
  if (typeof entry === 'function') return entry;
  if ('local' in entry) return entry.local;
  return engine.checkpointer.capabilities[entry.capability] ? entry.call : `capabilities.${entry.capability} is not declared`;
}

/**
 * Gives `engine` what the calls expect: thread `t1` held (with position 0 and an item,
 * and a pending signal 1), ledger entry `k1`, store item `ns/k`. Returns the fixture.
 */
export async function callFixture(engine: Engine): Promise<CallFixture> {
  const lease = await engine.checkpointer.acquireThread('t1', { owner: { ...owner, runId: 'contract-calls-1' }, leaseMs: 60_000, create: { kind: 'task', tenant: null, metadata: {} } });
  await engine.checkpointer.commitStep(lease, { position: position(0), items: [{ field: 'm', index: 0, text: '"a"' }], status: 'running', expectedHead: null });
  await engine.checkpointer.sendSignal('t1', { name: 'go', payload: '1' });
  await engine.ledger.writeIntent(entry('k1'));
  await engine.store.put(['ns'], 'k', { a: 1 });
  return { engine, lease };
}
