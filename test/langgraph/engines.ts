/**
 * The engines every LangGraph test runs on: memory, SQLite on a fresh file, PostgreSQL
 * on the file's own schema. Call at the top level of a test file (it registers the
 * PostgreSQL schema's hooks).
 */
import type { Engine } from '../../src/contracts/engine.js';
import { memory } from '../../src/engines/memory/index.js';
import { sqliteOnFreshFiles } from '../conformance/sqlite-files.js';
import { usePostgresSchema } from '../helpers/postgres.js';

export interface EngineKit {
  name: string;
  create: () => Engine | Promise<Engine>;
  destroy: (engine: Engine) => Promise<void>;
}

export function langGraphEngines(): EngineKit[] {
  const pg = usePostgresSchema();
  return [
    { name: 'memory', create: () => memory(), destroy: (engine) => engine.close() },
    sqliteOnFreshFiles,
    { name: 'postgres', create: () => pg.engine(), destroy: (engine) => engine.close() },
  ];
}
