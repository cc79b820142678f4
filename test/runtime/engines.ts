/**
 * Shared by the runtime, state and codec tests: the engines every behavioural test
 * runs on (memory, SQLite on a fresh temp file, PostgreSQL on the local server in a
 * schema of the test file's own, emptied before each test), with cleanup, plus a few
 * small helpers for reading what a thread stored.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach } from 'vitest';
import Database from 'better-sqlite3';
import type { Engine } from '../../src/contracts/engine.js';
import { memory } from '../../src/engines/memory/index.js';
import { sqlite } from '../../src/engines/sqlite/index.js';
import { postgres } from '../../src/engines/postgres/index.js';
import { usePostgresSchema, type PostgresTestSchema } from '../helpers/postgres.js';
import type { PositionBody } from '../../src/runtime/position.js';
import { decode } from '../../src/codec/tagged-json.js';

const dirs: string[] = [];

/** A path to a not-yet-existing SQLite file in a fresh temp directory. */
export function tmpFile(): string {
  const dir = mkdtempSync(join(tmpdir(), 'cairn-'));
  dirs.push(dir);
  return join(dir, 'cairn.db');
}

/** One engine under test: `engine` is fresh per test; `reopen()` gives a new engine on the same storage. */
export interface EngineCase {
  readonly engine: Engine;
  /** SQLite file path (undefined for memory). */
  readonly path: string | undefined;
  /** The PostgreSQL schema the engine lives in (undefined for the other engines): for direct reads and tampering. */
  readonly pg: PostgresTestSchema | undefined;
  /** A second engine over the same data: a new connection on the same SQLite file; the same memory engine. */
  reopen(): Engine;
}

export type EngineName = 'memory' | 'sqlite' | 'postgres';
export const ENGINES: [EngineName][] = [['memory'], ['sqlite'], ['postgres']];

/**
 * Registers beforeEach/afterEach hooks that create a fresh engine of `name` for each
 * test and close every engine it opened afterwards.
 */
export function useEngine(name: EngineName): EngineCase {
  let engine: Engine | undefined;
  let path: string | undefined;
  const opened: Engine[] = [];
  const pg = name === 'postgres' ? usePostgresSchema() : undefined;
  beforeEach(async () => {
    path = name === 'sqlite' ? tmpFile() : undefined;
    engine = name === 'sqlite' ? sqlite(path!) : name === 'postgres' ? await pg!.engine() : memory();
    opened.push(engine);
  });
  afterEach(async () => {
    for (const e of opened.splice(0)) await e.close().catch(() => undefined);
  });
  return {
    get engine() {
      return engine!;
    },
    get path() {
      return path;
    },
    pg,
    reopen() {
      if (name === 'memory') return engine!;
      const again = name === 'postgres' ? postgres(pg!.url, { schema: pg!.schema }) : sqlite(path!);
      opened.push(again);
      return again;
    },
  };
}

afterAll(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** Every stored position body of a thread's root namespace, oldest first, decoded. */
export async function bodies(engine: Engine, thread: string): Promise<PositionBody[]> {
  const positions = await engine.checkpointer.getPositions(thread, '', { from: 0, to: Number.MAX_SAFE_INTEGER });
  return positions.map((p) => decode<PositionBody>(p.body));
}

/** Raw stored position rows (body text and hash) of a thread, oldest first. */
export async function rawPositions(engine: Engine, thread: string): Promise<{ seq: number; body: string; hash: string; schemaVersion: number }[]> {
  const positions = await engine.checkpointer.getPositions(thread, '', { from: 0, to: Number.MAX_SAFE_INTEGER });
  return positions.map((p) => ({ seq: p.seq, body: p.body, hash: p.hash, schemaVersion: p.schemaVersion }));
}

/** Seqs and texts of every stored snapshot of a thread (found through the Checkpointer contract, so on any engine). */
export async function snapshots(engine: Engine, thread: string): Promise<{ seq: number; text: string }[]> {
  const head = (await engine.checkpointer.getThread(thread))?.head ?? -1;
  const found: { seq: number; text: string }[] = [];
  for (let seq = 0; seq <= head; seq++) {
    const snap = await engine.checkpointer.getSnapshot(thread, '', [{ from: seq, to: seq }]);
    if (snap) found.push(snap);
  }
  return found;
}

/** Opens the SQLite file directly (better-sqlite3), for counting and tampering with rows. */
export function openRaw(path: string): Database.Database {
  return new Database(path);
}

/** The internal tid of a thread in a SQLite file. */
export function tidOf(db: Database.Database, thread: string): number {
  return db.prepare('SELECT tid FROM cairn_threads WHERE id = ?').pluck().get(thread) as number;
}

/** A promise with its resolver, for gating nodes. */
export function gate<T = void>(): { promise: Promise<T>; open: (value: T) => void } {
  let open!: (value: T) => void;
  const promise = new Promise<T>((resolve) => (open = resolve));
  return { promise, open };
}

/** Rejects after `ms` with `message`: a safety net so a broken expectation fails instead of hanging. */
export function within<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<T>((_, reject) => {
      timer = setTimeout(() => reject(new Error(message)), ms);
    }),
  ]);
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Runs `fn` and returns what it threw (fails the test if it did not throw). */
export async function caught(fn: () => unknown): Promise<Error & { code?: string }> {
  try {
    await fn();
  } catch (error) {
    return error as Error & { code?: string };
  }
  throw new Error('expected the call to throw, it returned');
}
