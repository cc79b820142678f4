/**
 * @module cli/engine-url
 * Picks an engine from what the user typed: a SQLite file (`./cairn.db`,
 * `sqlite:./cairn.db`, `file:./cairn.db`) or a PostgreSQL URL
 * (`postgres://user@host/db`, with `#schema` to name the schema of cairn's tables).
 */
import { existsSync } from 'node:fs';
import type { Engine } from '../contracts/engine.js';
import { CairnError } from '../errors.js';
import { sqlite } from '../engines/sqlite/index.js';
// Loads no driver: the engine loads pg on its first query.
import { postgres } from '../engines/postgres/index.js';

export function isPostgresUrl(target: string): boolean {
  return /^postgres(ql)?:\/\//i.test(target);
}

/** Opens the engine `target` names. SQLite files must exist unless `mustExist` is false. */
export function openEngine(target: string, options: { mustExist?: boolean } = {}): Engine {
  if (isPostgresUrl(target)) {
    const hash = target.indexOf('#');
    const url = hash >= 0 ? target.slice(0, hash) : target;
    const schema = hash >= 0 ? target.slice(hash + 1) : 'public';
    return postgres(url, { schema, max: 4 });
  }
  const match = /^([a-z][a-z0-9+.-]*):(.*)$/i.exec(target);
  const scheme = match && match[1]!.length > 1 ? match[1]!.toLowerCase() : 'sqlite';
  const path = match && match[1]!.length > 1 ? match[2]! : target;
  if (scheme !== 'sqlite' && scheme !== 'file') {
    throw new CairnError(`unsupported engine "${scheme}:". Use a SQLite file path (./cairn.db) or a PostgreSQL URL (postgres://user@host/db#schema).`);
  }
  if (options.mustExist !== false && !existsSync(path)) {
    throw new CairnError(`no database at ${path}. Pass --db <file> pointing at your cairn SQLite file.`);
  }
  return sqlite(path);
}
