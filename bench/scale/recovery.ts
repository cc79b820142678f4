/**
 * @module bench/scale/recovery
 * Takeover times of cairn workers on PostgreSQL, with real processes and SIGKILL:
 * - one thread of N steps, its worker killed at step N/2 (the effect server kills it
 *   as the step's effect lands): a new `Worker` started in a fresh process
 *   (`restart`), or one already running idle beside it (`standby`), finishes the
 *   thread; reported kill → completed, and for the restart the process start-up part;
 * - a worker holding 100 threads killed halfway through: a standby worker process
 *   finishes all of them; reported kill → first effect after the kill (detection,
 *   claim, loads) and kill → all completed.
 * - a worker holding 20 threads SIGSTOPped halfway, past its (2 s) lease: a standby
 *   worker takes the threads once the leases expire (the stopped process still exists,
 *   so only expiry frees them) and completes them; then the stopped worker is
 *   continued, and its late commits must all be rejected by the lease fence: reported
 *   kill → all completed, the late writes rejected, and 0 stale commits (every thread
 *   holds exactly its S steps, one item each, and verifies).
 * The other leases are 30 s: every takeover there comes from seeing the holder's
 * process gone, never from a lease expiring.
 */
import { postgres } from '../../dist/engines/postgres/index.js';
import type { Engine } from '../../dist/contracts/engine.js';
import type { ChildConfig } from './child.js';
import type { EffectServer } from './effect-server.js';
import { allDone, ContenderProcess } from './processes.js';
import { buildScaleApp } from './workflow.js';

export interface RecoveryFigures {
  /** Steps of the one-thread run, and where the kill landed. */
  steps: number;
  killedAtStep: number;
  /** A new Worker process started after the kill: kill → thread completed, and kill → that process ready (start-up, imports, connection). */
  restartKillToCompletedMs: number;
  restartKillToReadyMs: number;
  /** A Worker already running idle: kill → thread completed. */
  standbyKillToCompletedMs: number;
  /** 100 threads held by the killed worker. */
  held: number;
  heldStepsLeft: number;
  heldKillToFirstEffectMs: number;
  heldKillToCompletedMs: number;
  /** 20 threads held by a SIGSTOPped worker, past its lease. */
  stopped: number;
  stoppedLeaseMs: number;
  /** Stop → all completed by the standby (lease expiry + claim + the steps left). */
  stoppedStopToCompletedMs: number;
  /** Writes of the continued worker refused by the fence (its runs that ended in LeaseLostError or another refusal). */
  stoppedLateWritesRejected: number;
  /** Positions or items beyond each thread's S steps (a late commit that got through): must be 0. */
  stoppedStaleCommits: number;
  /** Requests for a key that already landed, over every run here (absorbed by the keys). */
  duplicateRequests: number;
}

export interface RecoveryShape {
  url: string;
  effectUrl: string;
  poolSize: number;
  steps: number;
}

const LEASE_MS = 30_000;
const now = () => performance.timeOrigin + performance.now();

async function submit(url: string, schema: string, steps: number, effectUrl: string, ids: string[]): Promise<void> {
  const engine = postgres(url, { schema, max: 2 }) as unknown as Engine;
  try {
    const app = buildScaleApp({ engine, steps, effectUrl });
    for (const id of ids) await app.submit({ thread: id, input: {} });
  } finally {
    await engine.close();
  }
}

/** Sends `victim` `signal` once the server has applied `atApplied` keys; resolves with the time. */
function signalAt(server: EffectServer, victim: ContenderProcess, atApplied: number, signal: NodeJS.Signals): Promise<number> {
  return new Promise((resolve) => {
    server.onApply = (applied) => {
      if (applied < atApplied) return;
      server.onApply = undefined;
      victim.child.kill(signal);
      resolve(now());
    };
  });
}

async function oneThread(shape: RecoveryShape, server: EffectServer, mode: 'restart' | 'standby', n: number): Promise<{ killToCompleted: number; killToReady: number }> {
  const schema = `recovery_${mode}`;
  const config: ChildConfig = { mode: 'cairn', url: shape.url, schema, steps: n, concurrency: 1, poolSize: shape.poolSize, effectUrl: shape.effectUrl, leaseMs: LEASE_MS };
  await submit(shape.url, schema, n, shape.effectUrl, ['long']);
  server.reset();
  const victim = new ContenderProcess(config);
  const standby = mode === 'standby' ? new ContenderProcess(config) : undefined;
  const processes = [victim, ...(standby ? [standby] : [])];
  try {
    await Promise.all(processes.map((p) => p.ready));
    const killed = signalAt(server, victim, n / 2, 'SIGKILL');
    victim.send({ type: 'go' });
    // The standby starts once the victim holds the thread, so it cannot take it first.
    if (standby) {
      while (server.applied() === 0) await new Promise((r) => setTimeout(r, 1));
      standby.send({ type: 'go' });
    }
    const killedAt = await killed;
    let rescuer = standby;
    let readyAt = killedAt;
    if (!rescuer) {
      rescuer = new ContenderProcess(config);
      processes.push(rescuer);
      await rescuer.ready;
      readyAt = now();
      rescuer.send({ type: 'go' });
    }
    const completedAt = await allDone([rescuer], 1, 60_000);
    if (server.applied() !== n) throw new Error(`recovery: ${server.applied()} of ${n} effects landed`);
    return { killToCompleted: completedAt - killedAt, killToReady: readyAt - killedAt };
  } finally {
    await Promise.all(processes.map((p) => p.exit()));
  }
}

/**
 * `count` threads (`<prefix>000`…) held by one worker process and a second one started
 * once the first holds them: `signal` goes to the first when half of all the steps'
 * effects have landed. Resolves once it was sent, with both processes (the caller exits them).
 */
async function victimAndRescuer(shape: RecoveryShape, server: EffectServer, options: { prefix: string; count: number; leaseMs: number; signal: NodeJS.Signals }) {
  const schema = `recovery_${options.prefix}`;
  const config: ChildConfig = { mode: 'cairn', url: shape.url, schema, steps: shape.steps, concurrency: options.count, poolSize: shape.poolSize, effectUrl: shape.effectUrl, leaseMs: options.leaseMs };
  const ids = Array.from({ length: options.count }, (_, i) => `${options.prefix}${String(i).padStart(3, '0')}`);
  await submit(shape.url, schema, shape.steps, shape.effectUrl, ids);
  server.reset();
  const victim = new ContenderProcess(config);
  const rescuer = new ContenderProcess(config);
  const total = options.count * shape.steps;
  try {
    await Promise.all([victim.ready, rescuer.ready]);
    const signalled = signalAt(server, victim, Math.floor(total / 2), options.signal);
    victim.send({ type: 'go' });
    while (server.applied() === 0) await new Promise((r) => setTimeout(r, 1));
    rescuer.send({ type: 'go' });
    return { schema, ids, total, victim, rescuer, signalledAt: await signalled };
  } catch (error) {
    server.onApply = undefined;
    await Promise.all([victim.exit(), rescuer.exit()]);
    throw error;
  }
}

async function heldThreads(shape: RecoveryShape, server: EffectServer, count: number): Promise<{ left: number; firstEffect: number; completed: number }> {
  const pair = await victimAndRescuer(shape, server, { prefix: 'held', count, leaseMs: LEASE_MS, signal: 'SIGKILL' });
  const { total, victim, rescuer, signalledAt: killedAt } = pair;
  try {
    const appliedAtKill = server.applied();
    // The rescuer's first effect: requests the victim had in flight arrive on its older connections.
    const firstEffect = new Promise<number>((resolve) => (server.onApply = (_applied, _key, connectedAt) => connectedAt > killedAt && resolve(now())));
    const completedAt = await allDone([rescuer], count - victim.done.length, 60_000);
    if (server.applied() !== total) throw new Error(`held threads: ${server.applied()} of ${total} effects landed`);
    return { left: total - appliedAtKill, firstEffect: (await firstEffect) - killedAt, completed: completedAt - killedAt };
  } finally {
    server.onApply = undefined;
    await Promise.all([victim.exit(), rescuer.exit()]);
  }
}

const STOP_LEASE_MS = 2_000;

async function stoppedPastLease(shape: RecoveryShape, server: EffectServer, count: number): Promise<{ completed: number; rejected: number; stale: number }> {
  const pair = await victimAndRescuer(shape, server, { prefix: 'stopped', count, leaseMs: STOP_LEASE_MS, signal: 'SIGSTOP' });
  const { schema, ids, total, victim, rescuer, signalledAt: stopped } = pair;
  try {
    const completedAt = await allDone([rescuer], count - victim.done.length, 60_000);
    const errorsBefore = victim.errors.length;
    victim.child.kill('SIGCONT');
    // The continued worker finds its leases gone at its next fenced write; give it a lease's time to try.
    await new Promise((r) => setTimeout(r, STOP_LEASE_MS));
    if (server.applied() !== total) throw new Error(`stopped worker: ${server.applied()} of ${total} effects landed`);
    const stale = await staleCommits(shape.url, schema, shape, ids);
    return { completed: completedAt - stopped, rejected: victim.errors.length - errorsBefore, stale };
  } finally {
    server.onApply = undefined;
    await Promise.all([victim.exit(), rescuer.exit()]);
  }
}

/** Positions and items beyond what S steps once each leave (input + S steps, S items), summed over `ids`. */
async function staleCommits(url: string, schema: string, shape: RecoveryShape, ids: string[]): Promise<number> {
  const engine = postgres(url, { schema, max: 2 }) as unknown as Engine;
  try {
    const app = buildScaleApp({ engine, steps: shape.steps, effectUrl: shape.effectUrl });
    let extra = 0;
    for (const id of ids) {
      const positions = await engine.checkpointer.listPositions(id, '', { limit: 10 * shape.steps });
      const state = await app.getState({ thread: id });
      extra += Math.max(0, positions.length - (shape.steps + 1)) + Math.abs(state.items.length - shape.steps);
    }
    return extra;
  } finally {
    await engine.close();
  }
}

/** Every recovery figure, on fresh schemas of the bench database. */
export async function measureRecovery(shape: RecoveryShape, server: EffectServer, n: number): Promise<RecoveryFigures> {
  let duplicates = 0;
  const restart = await oneThread(shape, server, 'restart', n);
  duplicates += server.duplicates();
  const standby = await oneThread(shape, server, 'standby', n);
  duplicates += server.duplicates();
  const held = await heldThreads(shape, server, 100);
  duplicates += server.duplicates();
  const stopped = await stoppedPastLease(shape, server, 20);
  duplicates += server.duplicates();
  return {
    steps: n,
    killedAtStep: n / 2,
    restartKillToCompletedMs: restart.killToCompleted,
    restartKillToReadyMs: restart.killToReady,
    standbyKillToCompletedMs: standby.killToCompleted,
    held: 100,
    heldStepsLeft: held.left,
    heldKillToFirstEffectMs: held.firstEffect,
    heldKillToCompletedMs: held.completed,
    stopped: 20,
    stoppedLeaseMs: STOP_LEASE_MS,
    stoppedStopToCompletedMs: stopped.completed,
    stoppedLateWritesRejected: stopped.rejected,
    stoppedStaleCommits: stopped.stale,
    duplicateRequests: duplicates,
  };
}
