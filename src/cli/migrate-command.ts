/**
 * @module cli/migrate-command
 * `cairn migrate --apply` (the database's own schema: create it, or apply the
 * migrations this cairn has and it lacks), `cairn migrate --row-level-security`
 * (PostgreSQL: the same, then tenant isolation turned on), `cairn migrate --check` and
 * `cairn migrate --rewrite-snapshots` (the application's state schema versions).
 * The last two can load the application's state schema from a module
 * (`--state ./dist/state.js#OrderState`) to know the current version and the
 * compatibility window.
 */
import type { Command } from 'commander';
import type { Engine } from '../contracts/engine.js';
import { DatabaseNotFoundError, DatabaseOutdatedError, InvalidOptionError } from '../errors.js';
import { POSTGRES_MIGRATIONS } from '../engines/postgres/migrations.js';
import { enableRowLevelSecurity, type RowLevelSecurityReport } from '../engines/postgres/row-level-security.js';
import { SQLITE_MIGRATIONS } from '../engines/sqlite/migrations.js';
import { migrateCheck, type SchemaWindow } from '../inspect/migrate-check.js';
import { rewriteSnapshots } from '../runtime/rewrite-snapshots.js';
import type { StateSchema } from '../state/schema.js';
import { importModule, parseModuleSpec } from './app-loader.js';
import { deprecatedFlag } from './deprecated-flags.js';
import { DB_OPTION, isPostgresUrl, openEngine, postgresTarget } from './engine-url.js';
import { positiveInteger } from './options.js';
import { plural } from './format.js';

interface MigrateOptions {
  db: string;
  apply?: boolean;
  rowLevelSecurity?: boolean;
  check?: boolean;
  rewriteSnapshots?: boolean;
  state?: string;
  oldestReadableVersion?: number;
  currentVersion?: number;
  json?: boolean;
}

function isStateSchema(value: unknown): value is StateSchema {
  return typeof value === 'object' && value !== null && 'fieldNames' in value && 'oldestReadableVersion' in value && typeof (value as StateSchema).upcast === 'function';
}

/** Loads `<file>[#export]` (a `.js` module, or `.ts` through tsx): the named export, or the module's only state schema. */
export async function loadStateSchema(spec: string): Promise<StateSchema> {
  const { file, name } = parseModuleSpec(spec);
  const module = await importModule(file);
  if (name !== undefined) {
    if (!isStateSchema(module[name])) throw new InvalidOptionError(`${file} has no state schema exported as "${name}".`);
    return module[name];
  }
  const schemas = Object.entries(module).filter(([, value]) => isStateSchema(value));
  if (schemas.length !== 1) {
    throw new InvalidOptionError(`${file} exports ${schemas.length} state schemas${schemas.length ? ` (${schemas.map(([n]) => n).join(', ')})` : ''}: name one with ${file}#<export>.`);
  }
  return schemas[0]![1] as StateSchema;
}

/** What `migrate --apply` did. */
export interface ApplyReport {
  db: string;
  /** `created`: there was no cairn database; `upgraded`: migrations were missing; `current`: nothing to do. */
  outcome: 'created' | 'upgraded' | 'current';
  /** Ids of the migrations applied. */
  applied: number[];
  /** The newest migration this cairn knows (the database's version now). */
  latest: number;
  /** With `--row-level-security`: the tables that now have the tenant policy, and the rows whose tenant was filled in. */
  rowLevelSecurity?: Omit<RowLevelSecurityReport, 'schema'>;
}

/** `migrate --apply`: what the database lacks, read without changing it, then a writable open (which migrates). */
async function applyMigrations(db: string): Promise<ApplyReport> {
  const known = (isPostgresUrl(db) ? POSTGRES_MIGRATIONS : SQLITE_MIGRATIONS).map((m) => m.id);
  const latest = Math.max(...known);
  const touch = async (engine: Engine) => {
    try {
      await engine.checkpointer.listThreads({ limit: 1 });
    } finally {
      await engine.close();
    }
  };
  let report: ApplyReport = { db, outcome: 'current', applied: [], latest };
  try {
    await touch(await openEngine(db, 'read'));
  } catch (error) {
    if (DatabaseOutdatedError.is(error)) report = { ...report, outcome: 'upgraded', applied: error.missing };
    else if (DatabaseNotFoundError.is(error)) report = { ...report, outcome: 'created', applied: known };
    else throw error;
  }
  if (report.outcome !== 'current') await touch(await openEngine(db, 'create'));
  return report;
}

export function registerMigrateCommand(program: Command): void {
  program
    .command('migrate')
    .description(
      "create or upgrade the database's own tables (--apply), report stored state schema versions (--check) or write snapshots at the current version for active threads (--rewrite-snapshots)",
    )
    .option(...DB_OPTION)
    .option('--apply', "create the database's tables, or apply the migrations this cairn has and the database lacks")
    .option(
      '--row-level-security',
      "PostgreSQL: apply the migrations, then isolate tenants: a forced row-level security policy on every table, keyed by the connection's cairn.tenant (run as the tables' owner)",
    )
    .option('--check', 'count threads and positions per schema version and list threads outside the window')
    .option('--rewrite-snapshots', 'store a snapshot at the current version for every active thread whose head is older (needs --state)')
    .option('--state <module>', "the application's state schema: <file>[#<export>] (an ES module: .js, or .ts through tsx)")
    .option('--oldest-readable-version <n>', "the state schema's oldestReadableVersion (without --state; default: --current-version)", positiveInteger)
    .addOption(deprecatedFlag('--oldest <n>', '--oldest-readable-version'))
    .option('--current-version <n>', "the state schema's current version (without --state)", positiveInteger)
    .addOption(deprecatedFlag('--current <n>', '--current-version'))
    .option('--json', 'print JSON')
    .action(async (options: MigrateOptions) => {
      if (!options.apply && !options.rowLevelSecurity && !options.check && !options.rewriteSnapshots) {
        throw new InvalidOptionError('say what to do: --apply, --check or --rewrite-snapshots (on PostgreSQL also --row-level-security).');
      }
      // --check reports the database as it is, read-only; with --apply it would report one it had just changed.
      if (options.check && (options.apply || options.rowLevelSecurity)) {
        throw new InvalidOptionError(`--check only reads the database and ${options.apply ? '--apply' : '--row-level-security'} changes it: they do not go together. Run ${options.apply ? '--apply' : '--row-level-security'} first, then --check.`);
      }
      if (options.rowLevelSecurity && !isPostgresUrl(options.db)) {
        throw new InvalidOptionError('--row-level-security is for PostgreSQL (postgres://user@host/db#schema): a SQLite file has one tenant per file.');
      }
      if (options.rewriteSnapshots && !options.state) throw new InvalidOptionError('--rewrite-snapshots needs --state <module>[#export]: the upcasters live in your code.');
      const schema = options.state ? await loadStateSchema(options.state) : undefined;
      if (options.apply || options.rowLevelSecurity) {
        const report = await applyMigrations(options.db);
        if (options.rowLevelSecurity) {
          const { url, schema } = postgresTarget(options.db);
          const { tables, backfilled } = await enableRowLevelSecurity(url, { schema });
          report.rowLevelSecurity = { tables, backfilled };
        }
        if (options.json && !options.rewriteSnapshots) process.stdout.write(JSON.stringify(report, null, 2) + '\n');
        else if (!options.json) {
          const ids = report.applied.length ? `${report.applied[0]}${report.applied.length > 1 ? `–${report.applied.at(-1)}` : ''}` : '';
          process.stdout.write(
            (report.outcome === 'created'
              ? `created a cairn database at ${options.db} (migrations ${ids})`
              : report.outcome === 'upgraded'
                ? `upgraded ${options.db}: applied migration${report.applied.length === 1 ? '' : 's'} ${report.applied.join(', ')} (now at ${report.latest})`
                : `${options.db} is up to date (migration ${report.latest})`) + '\n',
          );
          const isolated = report.rowLevelSecurity;
          if (isolated) {
            process.stdout.write(
              `row-level security on: ${plural(isolated.tables.length, 'table')} keyed by cairn.tenant (${isolated.tables.join(', ')})` +
                `${isolated.backfilled ? `; filled in the tenant of ${plural(isolated.backfilled, 'row')}` : ''}\n`,
            );
          }
        }
        if (!options.rewriteSnapshots) return;
      }
      const engine = await openEngine(options.db, options.rewriteSnapshots ? 'write' : 'read');
      try {
        if (options.check) {
          const window: SchemaWindow | null = schema
            ? { currentVersion: schema.version, oldestReadableVersion: schema.oldestReadableVersion }
            : options.currentVersion !== undefined
              ? { currentVersion: options.currentVersion, oldestReadableVersion: options.oldestReadableVersion ?? options.currentVersion }
              : null;
          const report = await migrateCheck(engine.checkpointer, window);
          if (options.json) process.stdout.write(JSON.stringify(report, null, 2) + '\n');
          else {
            const lines = [
              window ? `current version ${window.currentVersion}, readable from ${window.oldestReadableVersion}` : 'no window given (--state, or --current-version/--oldest-readable-version): counts only',
              `${plural(report.threads, 'thread')}, ${plural(report.positions, 'position')}${report.childPositions ? ` (${report.childPositions} of them in child runs' namespaces, counted by their own schema versions)` : ''}`,
              ...report.versions.map(
                (v) => `  v${v.version}: ${plural(v.threads, 'thread head')}, ${plural(v.positions, 'position')}${v.readable === null ? '' : v.readable ? '' : '  OUTSIDE THE WINDOW'}`,
              ),
              ...(report.outside.length ? ['threads that cannot be read:', ...report.outside.map((o) => `  ${o.threadId} (${o.status}) head at v${o.headVersion}: ${o.reason}`)] : []),
            ];
            process.stdout.write(lines.join('\n') + '\n');
          }
          if (report.outside.length) process.exitCode = 1;
        }
        if (options.rewriteSnapshots) {
          if (!schema) throw new InvalidOptionError('--rewrite-snapshots needs --state <module>[#export]: the upcasters live in your code.');
          const report = await rewriteSnapshots(engine, schema);
          if (options.json) process.stdout.write(JSON.stringify(report, null, 2) + '\n');
          else {
            const lines = [
              `rewrote ${plural(report.rewritten.length, 'snapshot')} at version ${schema.version}`,
              ...report.rewritten.map((r) => `  ${r.threadId} seq ${r.seq}: v${r.fromVersion} → v${r.toVersion}`),
              ...(report.skipped.length ? [`skipped ${report.skipped.length}:`, ...report.skipped.map((s) => `  ${s.threadId}: ${s.reason}`)] : []),
            ];
            process.stdout.write(lines.join('\n') + '\n');
          }
        }
      } finally {
        await engine.close();
      }
    });
}
