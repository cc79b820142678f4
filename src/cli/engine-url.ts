/**
 * @module cli/engine-url
 * Picks an engine from what the user typed: `./cairn.db`, `sqlite:./cairn.db`
 * or `file:./cairn.db`. Other schemes are named in the error with what exists.
 */
import { existsSync } from 'node:fs';
import type { Engine } from '../contracts/engine.js';
import { CairnError } from '../errors.js';
import { sqlite } from '../engines/sqlite/index.js';

export function openEngine(target: string, options: { mustExist?: boolean } = {}): Engine {
  const match = /^([a-z][a-z0-9+.-]*):(?!\/\/)?(.*)$/i.exec(target);
  const scheme = match && match[1]!.length > 1 ? match[1]!.toLowerCase() : 'sqlite';
  const path = match && match[1]!.length > 1 ? match[2]! : target;
  if (scheme !== 'sqlite' && scheme !== 'file') {
    throw new CairnError(`unsupported engine "${scheme}:". Use a SQLite file path (./cairn.db or sqlite:./cairn.db).`);
  }
  if (options.mustExist !== false && !existsSync(path)) {
    throw new CairnError(`no database at ${path}. Pass --db <file> pointing at your cairn SQLite file.`);
  }
  return sqlite(path);
}
