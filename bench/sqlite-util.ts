/**
 * @module bench/sqlite-util
 *
 * SQLite plumbing shared by every SQLite-backed contender, so that they all run
 * with the same durability settings and have their size measured the same way.
 *
 * Why a shared size function: in WAL mode, freshly committed pages live in the
 * `-wal` file until a checkpoint copies them into the main file, and the WAL is
 * not shrunk afterwards. "main + wal" right after a run therefore depends on
 * when SQLite last auto-checkpointed, not on how much the contender stored.
 * `PRAGMA wal_checkpoint(TRUNCATE)` moves everything into the main file and
 * truncates the WAL to zero bytes, which makes the figure comparable. Every
 * contender (cairn included) must measure through {@link checkpointedDbBytes}.
 */
import { mkdtempSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type Database from 'better-sqlite3';

/**
 * The durability settings every SQLite contender runs with. `FULL` fsyncs the
 * WAL on every commit, so one committed step survives power loss: the
 * guarantee a durable run log has to give. (better-sqlite3 12 already defaults
 * to `synchronous=FULL`; it is set explicitly so nothing depends on that.)
 */
export const SQLITE_SETTINGS = {
  journal_mode: 'WAL',
  synchronous: 'FULL',
} as const;

/** Apply {@link SQLITE_SETTINGS} to an open connection. */
export function applySqliteSettings(db: Database.Database): void {
  db.pragma(`journal_mode = ${SQLITE_SETTINGS.journal_mode}`);
  db.pragma(`synchronous = ${SQLITE_SETTINGS.synchronous}`);
}

/**
 * Checkpoint the WAL into the main file (TRUNCATE), then return the size of
 * main file + WAL file in bytes. `db` must be an open connection on `file`.
 */
export function checkpointedDbBytes(db: Database.Database, file: string): number {
  db.pragma('wal_checkpoint(TRUNCATE)');
  return fileBytes(file) + fileBytes(`${file}-wal`);
}

function fileBytes(file: string): number {
  try {
    return statSync(file).size;
  } catch {
    return 0; // no WAL file at all counts as an empty one
  }
}

/**
 * A database path in a brand-new directory under `dir`, so a run never reuses a
 * file (or a stale WAL) left behind by an earlier one.
 */
export function freshDbPath(dir: string, name: string): string {
  return join(mkdtempSync(join(dir, `${name}-`)), `${name}.sqlite`);
}
